"""Collect plans: a whole dataset as one reproducible file (YAML or JSON).

    out: data/
    defaults: {configs: 20, strategy: default, seed: 0, fixed_rounds: 10}
    items:
      - {program: resnet50, batch_size: 1, image_size: 112, configs: 100}
      - {program: transformer, preset: small}
      - {hlo: dumps/module_0001.jit_f.before_optimizations.txt}

Every item takes program arguments (batch_size, image_size, seq_len, dtype, preset, mode),
``collection`` (layout | tile) and the measurement options of
:class:`~tpugraphs_tools.measure.options.MeasureOptions` under their field names (the same
names as the ``tgt collect`` flags). Old spellings of renamed flags (``batch``, ``repeats``,
``copies``, ``timing``) are still read, each with a deprecation line (:func:`plan_warnings`);
errors list the current keys. ``defaults`` applies to all items, an item's own keys win.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tpugraphs_tools.collect.request import CollectItem, CollectRequest
from tpugraphs_tools.errors import PlanError as PlanError
from tpugraphs_tools.format import KINDS
from tpugraphs_tools.measure import OPTION_KEY_ALIASES, MeasureOptions
from tpugraphs_tools.measure import OPTION_KEYS as MEASURE_KEYS

PROGRAM_KEYS = ("batch", "image_size", "seq_len", "dtype", "preset", "mode")
ITEM_KEYS = {"program", "hlo", "collection", *PROGRAM_KEYS, *MEASURE_KEYS}
# The one key named unlike its field: the program's input batch is ``--batch-size`` /
# ``batch_size``, its field ``ProgramArgs.batch`` (stored in program_args JSON, not renamed).
SHOWN = {"batch": "batch_size"}
# Old spellings, still read for one more release with a deprecation line: old key -> the
# field it sets (the measurement options' table is measure's own, from their old flags).
OLD_KEYS = {"batch": "batch", **OPTION_KEY_ALIASES}


def make_item(values: Mapping[str, Any], *, program: str | None = None, hlo: str | None = None,
              where: str | None = None) -> CollectItem:
    """The one builder of a collect item from option values named like plan keys (a merged plan
    item, or the CLI's parameters: the same names). Bad values raise :class:`PlanError`
    naming ``where`` (the plan item; None: the command line) and the key."""
    from tpugraphs_tools.programs import ProgramArgs

    shown = where or "command line"
    collection = values.get("collection", "layout")
    if collection not in KINDS:
        raise PlanError(f"{shown}: collection must be 'layout' or 'tile'")
    try:
        options = MeasureOptions.from_keys(values)
    except (TypeError, ValueError) as exc:
        raise PlanError(f"{shown}: {exc}") from None
    args = ProgramArgs.from_dict({k: values[k] for k in PROGRAM_KEYS if k in values})
    return CollectItem(program=program, hlo=hlo, program_args=args, options=options,
                       collection=collection, where=where)


def load_plan_file(path: str | Path) -> dict[str, Any]:
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as exc:
        raise PlanError(f"{path}: cannot read plan: {exc}") from None
    try:
        if path.suffix == ".json":
            return json.loads(text)
        import yaml

        return yaml.safe_load(text) or {}
    except Exception as exc:
        raise PlanError(f"{path}: not valid {'JSON' if path.suffix == '.json' else 'YAML'}: "
                        f"{exc}") from None


def plan_warnings(plan: Any, source: str = "plan") -> list[str]:
    """One line per old key spelling a plan uses (its ``defaults`` and items), for the
    terminal: each is still read, for one more release."""
    if not isinstance(plan, dict):
        return []
    parts = [("defaults", plan.get("defaults"))]
    parts += [(f"items[{i}]", item) for i, item in enumerate(plan.get("items") or [])]
    return [f"{source}: {where}: plan key {key!r} is deprecated and will be removed in the "
            f"next release; use {SHOWN.get(OLD_KEYS[key], OLD_KEYS[key])!r}"
            for where, mapping in parts if isinstance(mapping, dict)
            for key in mapping if key in OLD_KEYS]


def request_from_plan(plan: dict[str, Any], source: str = "plan",
                      out: str | None = None) -> CollectRequest:
    """Turn a parsed plan into a :class:`CollectRequest` (``out`` overrides the plan's)."""
    if not isinstance(plan, dict) or not isinstance(plan.get("items"), list):
        raise PlanError(f"{source}: a plan needs an 'items' list")
    unknown = set(plan) - {"out", "backend", "defaults", "items"}
    if unknown:
        raise PlanError(f"{source}: unknown top-level keys {sorted(unknown)}")
    defaults = _canonical(plan.get("defaults") or {}, f"{source}: defaults")
    _check_keys(defaults, f"{source}: defaults", allow_source=False)
    items = []
    for i, raw in enumerate(plan["items"]):
        where = f"{source}: items[{i}]"
        if not isinstance(raw, dict):
            raise PlanError(f"{where}: expected a mapping")
        raw = _canonical(raw, where)
        _check_keys(raw, where, allow_source=True)
        merged = {**defaults, **raw}
        if ("program" in raw) == ("hlo" in raw):
            raise PlanError(f"{where}: give exactly one of 'program' or 'hlo'")
        items.append(make_item(merged, program=raw.get("program"), hlo=raw.get("hlo"),
                               where=where))
    return CollectRequest(items=items, out=out or plan.get("out") or "data/",
                          backend=plan.get("backend"))


def _canonical(mapping: Any, where: str) -> Any:
    """``mapping`` with every key under the field it sets (``batch_size`` -> ``batch``, an
    old spelling -> the field it was renamed to); a field given two ways is an error."""
    if not isinstance(mapping, dict):
        return mapping
    fields: dict[str, str] = {"batch_size": "batch", **OLD_KEYS}
    out: dict[str, Any] = {}
    given: dict[str, str] = {}   # field -> the key that set it
    entries: dict[str, Any] = mapping
    for key, value in entries.items():
        name = fields.get(key, key)
        if name in out:
            old, new = (key, given[name]) if key in OLD_KEYS else (given[name], key)
            raise PlanError(f"{where}: {new!r} is given twice (as {new!r} and as its old "
                            f"spelling {old!r})")
        out[name], given[name] = value, key
    return out


def _check_keys(mapping: dict[str, Any], where: str, allow_source: bool) -> None:
    allowed = ITEM_KEYS if allow_source else ITEM_KEYS - {"program", "hlo"}
    unknown = set(mapping) - allowed
    if unknown:
        shown = sorted(SHOWN.get(k, k) for k in allowed)
        near = [m for k in sorted(unknown) for m in difflib.get_close_matches(k, shown, 1)]
        hint = f"; did you mean {', '.join(near)}?" if near else ""
        raise PlanError(f"{where}: unknown keys {sorted(unknown)}{hint} "
                        f"(allowed: {', '.join(shown)})")
