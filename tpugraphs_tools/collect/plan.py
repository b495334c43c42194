"""Collect plans: a whole dataset as one reproducible file (YAML or JSON).

    out: data/
    defaults: {configs: 20, strategy: default, seed: 0, repeats: 10}
    items:
      - {program: resnet50, batch: 1, image_size: 112, configs: 100}
      - {program: transformer, preset: small}
      - {hlo: dumps/module_0001.jit_f.before_optimizations.txt}

Every item takes program arguments (batch, image_size, seq_len, dtype, preset, mode) and
layout options (configs, strategy, seed, warmup, repeats, timeout, workers, timing_batch,
isolation, timing, min_sample_ms, target_precision, max_rounds, max_seconds_per_config,
copies),
``collection`` (layout | tile) and ``max_kernels`` (tile);
``defaults`` applies to all items, an item's own keys win.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tpugraphs_tools.collect.layout import LayoutOptions
from tpugraphs_tools.collect.run import CollectItem, CollectRequest
from tpugraphs_tools.collect.tile import TileOptions
from tpugraphs_tools.errors import PlanError as PlanError

PROGRAM_KEYS = ("batch", "image_size", "seq_len", "dtype", "preset", "mode")
LAYOUT_KEYS = {"configs": "configs", "strategy": "strategy", "seed": "seed",
               "warmup": "warmup", "repeats": "repeats", "timeout": "timeout_s",
               "workers": "workers", "timing_batch": "batch", "isolation": "isolation",
               "timing": "timing", "min_sample_ms": "min_sample_ms",
               "target_precision": "target_precision", "max_rounds": "max_rounds",
               "max_seconds_per_config": "max_seconds_per_config", "copies": "copies"}
TILE_KEYS = {"max_kernels": "max_kernels"}
ITEM_KEYS = {"program", "hlo", "collection", *PROGRAM_KEYS, *LAYOUT_KEYS, *TILE_KEYS}


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


def request_from_plan(plan: dict[str, Any], source: str = "plan",
                      out: str | None = None) -> CollectRequest:
    """Turn a parsed plan into a :class:`CollectRequest` (``out`` overrides the plan's)."""
    from tpugraphs_tools.programs import ProgramArgs

    if not isinstance(plan, dict) or not isinstance(plan.get("items"), list):
        raise PlanError(f"{source}: a plan needs an 'items' list")
    unknown = set(plan) - {"out", "backend", "defaults", "items"}
    if unknown:
        raise PlanError(f"{source}: unknown top-level keys {sorted(unknown)}")
    defaults = plan.get("defaults") or {}
    _check_keys(defaults, f"{source}: defaults", allow_source=False)
    items = []
    for i, raw in enumerate(plan["items"]):
        where = f"{source}: items[{i}]"
        if not isinstance(raw, dict):
            raise PlanError(f"{where}: expected a mapping")
        _check_keys(raw, where, allow_source=True)
        merged = {**defaults, **raw}
        if ("program" in raw) == ("hlo" in raw):
            raise PlanError(f"{where}: give exactly one of 'program' or 'hlo'")
        args = ProgramArgs.from_dict({k: merged[k] for k in PROGRAM_KEYS if k in merged})
        layout = LayoutOptions(**{LAYOUT_KEYS[k]: merged[k] for k in LAYOUT_KEYS if k in merged})
        collection = merged.get("collection", "layout")
        if collection not in ("layout", "tile"):
            raise PlanError(f"{where}: collection must be 'layout' or 'tile'")
        tile = TileOptions(configs_per_kernel=max(2, layout.configs), seed=layout.seed,
                           warmup=layout.warmup, repeats=layout.repeats,
                           timeout_s=layout.timeout_s, max_kernels=merged.get("max_kernels"))
        items.append(CollectItem(program=raw.get("program"), hlo=raw.get("hlo"),
                                 program_args=args, layout=layout, collection=collection,
                                 tile=tile))
    return CollectRequest(items=items, out=out or plan.get("out") or "data/",
                          backend=plan.get("backend"))


def _check_keys(mapping: dict[str, Any], where: str, allow_source: bool) -> None:
    allowed = ITEM_KEYS if allow_source else ITEM_KEYS - {"program", "hlo"}
    unknown = set(mapping) - allowed
    if unknown:
        raise PlanError(f"{where}: unknown keys {sorted(unknown)} (allowed: {sorted(allowed)})")
