"""Measure how big each zoo program's un-optimised HLO is (the table in docs/programs.md).

Run: ``python -m tpugraphs_tools.programs.sizes [--presets tiny,base] [--programs a,b]``.
The count is deliberately simple and parser-free: lines of ``lowered.as_text(dialect="hlo")``
that contain `` = `` inside a computation body, summed over *all* computations (fusions don't
exist yet before optimisation; ``call``/``reduce`` bodies count too).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import jax

from tpugraphs_tools.programs.registry import ProgramArgs, list_programs, lower


def count_instructions(hlo_text: str) -> int:
    """Instructions in HLO text: ``name = ...`` lines between a computation's braces."""
    count, depth = 0, 0
    for line in hlo_text.splitlines():
        stripped = line.strip()
        if stripped.endswith("{") and " = " not in line:  # computation header
            depth += 1
        elif stripped == "}":
            depth = max(depth - 1, 0)
        elif depth and " = " in line:
            count += 1
    return count


def instruction_count(lowered: jax.stages.Lowered) -> int:
    """Instructions across all computations of the un-optimised HLO module of ``lowered``."""
    return count_instructions(lowered.as_text(dialect="hlo"))


def measure(name: str, preset: str, mode: str, dtype: str = "float32", batch: int = 1) -> int:
    """Lower one program configuration and count its instructions."""
    from tpugraphs_tools.programs.registry import get_program

    args = ProgramArgs(batch=batch, dtype=dtype, preset=preset, mode=mode)
    return instruction_count(lower(get_program(name), args))


def table(
    names: Sequence[str], presets: Sequence[str], dtype: str = "float32", batch: int = 1
) -> str:
    """Markdown table: one row per (program, preset) with infer and train counts."""
    rows = ["| program | preset | infer | train | lower s (train) |", "|---|---|---:|---:|---:|"]
    programs = {p.name: p for p in list_programs()}
    for name in names:
        for preset in presets:
            if preset not in programs[name].presets:
                continue
            infer = measure(name, preset, "infer", dtype, batch)
            start = time.perf_counter()
            train = measure(name, preset, "train", dtype, batch)
            secs = time.perf_counter() - start
            rows.append(f"| {name} | {preset} | {infer:,} | {train:,} | {secs:.1f} |")
            print(rows[-1], file=sys.stderr, flush=True)
    return "\n".join(rows)


SIZES_FILE = Path(__file__).with_name("sizes.json")


def recorded_sizes() -> dict[str, Any]:
    """Sizes recorded by ``--json`` (shown by ``tgt programs``): {jax, sizes: {prog: {preset:
    [infer, train]}}}; empty when never recorded."""
    try:
        return json.loads(SIZES_FILE.read_text())
    except (OSError, ValueError):
        return {}


def write_json(names: Sequence[str], presets: Sequence[str]) -> None:
    programs = {p.name: p for p in list_programs()}
    sizes: dict[str, dict[str, list[int]]] = {}
    for name in names:
        for preset in programs[name].presets:
            if preset in presets:
                sizes.setdefault(name, {})[preset] = [measure(name, preset, mode)
                                                      for mode in ("infer", "train")]
                print(name, preset, sizes[name][preset], file=sys.stderr, flush=True)
    SIZES_FILE.write_text(json.dumps({"jax": jax.__version__, "batch": 1, "dtype": "float32",
                                      "sizes": sizes}, indent=1, sort_keys=True) + "\n")


def main(argv: Sequence[str] | None = None) -> int:
    """Print the size table for the requested programs and presets."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true",
                        help=f"record sizes in {SIZES_FILE.name} for `tgt programs`")
    parser.add_argument("--presets", default="tiny,small,base,medium,large",
                        help="comma-separated presets (a program without one skips it)")
    parser.add_argument("--programs", default="", help="comma-separated names (default: all)")
    parser.add_argument("--dtype", default="float32")
    parser.add_argument("--batch", type=int, default=1)
    ns = parser.parse_args(argv)
    names = [n for n in ns.programs.split(",") if n] or [p.name for p in list_programs("zoo")]
    presets = [p for p in ns.presets.split(",") if p]
    if ns.json:
        write_json(names, presets)
        return 0
    print(f"jax {jax.__version__}, dtype {ns.dtype}, batch {ns.batch}\n")
    print(table(names, presets, ns.dtype, ns.batch))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
