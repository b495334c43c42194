"""A minimal YAML writer for dataset-card front matter (dicts, lists, scalars only).

The card's YAML is small and fixed in shape; writing it by hand keeps PyYAML out of the
runtime dependencies. Strings are always double-quoted JSON strings, which YAML reads as-is.
"""

from __future__ import annotations

import json
from typing import Any


def _scalar(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    return json.dumps(str(value), ensure_ascii=False)


def _lines(value: Any, indent: int) -> list[str]:
    pad = " " * indent
    if isinstance(value, dict):
        out = []
        for key, item in value.items():
            if isinstance(item, dict | list) and item:
                out.append(f"{pad}{key}:")
                out.extend(_lines(item, indent + 2))
            else:
                out.append(f"{pad}{key}: {_flow(item)}")
        return out
    if isinstance(value, list):
        out = []
        for item in value:
            if isinstance(item, dict | list) and item:
                sub = _lines(item, indent + 2)
                out.append(f"{pad}- {sub[0][indent + 2:]}")
                out.extend(sub[1:])
            else:
                out.append(f"{pad}- {_flow(item)}")
        return out
    return [pad + _scalar(value)]


def _flow(value: Any) -> str:
    if isinstance(value, dict):
        return "{}"
    if isinstance(value, list):
        return "[]"
    return _scalar(value)


def dump(value: dict[str, Any]) -> str:
    """Block-style YAML text for ``value``."""
    return "\n".join(_lines(value, 0)) + "\n"
