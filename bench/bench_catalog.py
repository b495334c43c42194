"""Breadth of the keras-hub catalog: every backbone class, what lowers, compiles and collects.

Two modes, both resumable (results accumulate in a JSON file, one record per entry):

    # lower + compile every entry (infer and train) at a preset: instructions, configurable
    # nodes, seconds, and the TpuGraphs opcodes the catalog and the zoo reach
    .venv/bin/python bench/bench_catalog.py lower --preset tiny --json catalog-lower.json
    # `tgt collect --program E --preset tiny --configs 4` (layout and tile) + `tgt validate`
    .venv/bin/python bench/bench_catalog.py collect --json catalog-collect.json
    # coverage into docs/benchmarks.md, every backbone class into docs/benchmarks/catalog-breadth.md
    .venv/bin/python bench/bench_catalog.py report --lower catalog-lower.json \
        --collect catalog-collect.json --write
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

TGT = str(Path(sys.executable).with_name("tgt"))
TITLE = "keras-hub catalog: breadth"  # its section of docs/benchmarks.md
MODES = ("infer", "train")


def _load(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text()) if path.exists() else {}


def _save(path: Path, results: dict[str, Any]) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(results, indent=1, sort_keys=True) + "\n")
    tmp.replace(path)


def _opcodes(module: Any) -> set[str]:
    return {inst.opcode for comp in module.computations for inst in comp.instructions}


def lower_one(name: str, preset: str, mode: str) -> dict[str, Any]:
    """Lower, featurize and compile one program; sizes, seconds and the opcodes it uses."""

    from tpugraphs_tools.features import featurize
    from tpugraphs_tools.hlo import from_lowered
    from tpugraphs_tools.programs import default_args, get_program, lower
    from tpugraphs_tools.programs.sizes import count_instructions

    program = get_program(name)
    start = time.perf_counter()
    lowered = lower(program, default_args(program, preset, mode=mode))
    lower_s = time.perf_counter() - start
    src = from_lowered(lowered, origin=name)
    graph = featurize(src.module)
    start = time.perf_counter()
    lowered.compile()
    compile_s = time.perf_counter() - start
    return {"instructions": count_instructions(src.text), "nodes": graph.num_nodes,
            "configurable": int(graph.node_config_ids.shape[0]),
            "lower_s": round(lower_s, 2), "compile_s": round(compile_s, 2),
            "opcodes": sorted(_opcodes(src.module))}


def _accumulate(path: Path, jobs: Iterable[tuple[str, Callable[[], dict[str, Any]]]]) -> None:
    """Run each ``(key, job)`` not yet in the JSON file at ``path``, saving after each one."""
    results = _load(path)
    for key, job in jobs:
        if key not in results:
            results[key] = job()
            print(key, {k: v for k, v in results[key].items() if k != "opcodes"},
                  file=sys.stderr, flush=True)
            _save(path, results)


def _lowered(name: str, preset: str, mode: str) -> dict[str, Any]:
    try:
        return {"ok": True, **lower_one(name, preset, mode)}
    except Exception as exc:  # the table lists every failure with its reason
        return {"ok": False, "error": f"{type(exc).__name__}: {exc}"[:300]}


def run_lower(names: Iterable[str], preset: str, path: Path) -> None:
    _accumulate(path, ((f"{n}|{preset}|{m}", functools.partial(_lowered, n, preset, m))
                       for n in names for m in MODES))


def _tgt(*args: str, timeout: float) -> tuple[int, float, str]:
    start = time.perf_counter()
    try:
        proc = subprocess.run([TGT, *args], capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return 124, time.perf_counter() - start, f"timed out after {timeout:.0f} s"
    tail = (proc.stdout + proc.stderr).strip().splitlines()[-1:] or [""]
    return proc.returncode, time.perf_counter() - start, tail[0][:200]


def collect_one(name: str, collection: str, configs: int, max_kernels: int,
                timing: list[str], timeout: float) -> dict[str, Any]:
    """``tgt collect`` then ``tgt validate`` on a fresh directory; clean = both exit 0.

    Tile collections keep ``max_kernels`` kernels per program (every kernel of a tiny
    transformer is dozens, each timed against its default)."""
    kernels = ["--max-kernels", str(max_kernels)] if collection == "tile" else []
    with tempfile.TemporaryDirectory(prefix="catalog-") as tmp:
        out = os.path.join(tmp, "data")
        rc, secs, tail = _tgt("collect", "--program", name, "--preset", "tiny",
                              "--collection", collection, "--configs", str(configs),
                              *kernels, *timing, "--out", out, timeout=timeout)
        record: dict[str, Any] = {"collect_rc": rc, "collect_s": round(secs, 1),
                                  "timing": " ".join(timing) or "default"}
        if rc != 0:
            return {**record, "clean": False, "error": tail}
        rc, _secs, tail = _tgt("validate", out, timeout=timeout)
        return {**record, "validate_rc": rc, "clean": rc == 0,
                **({} if rc == 0 else {"error": tail})}


def run_collect(names: Iterable[str], collections: list[str], configs: int,
                max_kernels: int, timing: list[str], timeout: float, path: Path) -> None:
    _accumulate(path, ((f"{n}|{c}", functools.partial(collect_one, n, c, configs, max_kernels,
                                                       timing, timeout))
                       for n in names for c in collections))


def _reference_opcodes() -> set[str]:
    """TpuGraphs' opcode names (ids 1-120; the tests hold them equal to the reference table)."""
    from tpugraphs_tools.format import OPCODE_NAMES

    return {name for name in OPCODE_NAMES if name != "unknown"}


def _classes() -> list[str]:
    """Every ``*Backbone`` name keras-hub exports (the base classes included)."""
    from tpugraphs_tools.programs.catalog._backend import keras_hub

    _keras, hub = keras_hub()
    return sorted(n for n in dir(hub.models) if n.endswith("Backbone"))


def _state(entry_names: list[str], lowered: dict, collected: dict, preset: str) -> str:
    """One cell: per entry, lowered (infer/train) and clean collections."""
    cells = []
    for name in entry_names:
        modes = [m for m in MODES if lowered.get(f"{name}|{preset}|{m}", {}).get("ok")]
        clean = [c for c in ("layout", "tile") if collected.get(f"{name}|{c}", {}).get("clean")]
        failed = [c for c in ("layout", "tile")
                  if f"{name}|{c}" in collected and c not in clean]
        cell = f"`{name}`: lowers {'+'.join(modes) or 'no'}"
        cell += f"; clean {'+'.join(clean)}" if clean else ""
        cell += f"; fails {'+'.join(failed)}" if failed else ""
        cells.append(cell)
    return "<br>".join(cells)


def report(lower_path: Path, collect_path: Path, preset: str) -> tuple[str, str]:
    """Markdown: coverage counts and opcode reach (docs/benchmarks.md); the 79-class table and
    per-entry sizes (the full tables' page)."""
    from tpugraphs_tools.programs import list_programs
    from tpugraphs_tools.programs.catalog import catalog_entries
    from tpugraphs_tools.programs.catalog._status import class_notes

    lowered, collected = _load(lower_path), _load(collect_path)
    entries = catalog_entries()
    by_class: dict[str, list[str]] = {}
    for e in entries:
        by_class.setdefault(e.backbone, []).append(e.program_name)
    notes = class_notes()
    rows = ["| keras-hub class | entries and state |", "|---|---|"]
    for cls in _classes():
        names = by_class.get(cls) or by_class.get(notes.get(cls, ("", ""))[0], [])
        note = notes.get(cls, ("", ""))[1]
        state = _state(names, lowered, collected, preset) if names else ""
        rows.append(f"| {cls} | {'; '.join(x for x in (state, note) if x) or '-'} |")
    clean = {n for n in (e.program_name for e in entries)
             if collected.get(f"{n}|layout", {}).get("clean")}
    both = {n for n in clean if collected.get(f"{n}|tile", {}).get("clean")}
    lows = {k.split("|")[0] for k, v in lowered.items() if v.get("ok") and k.endswith("train")}
    summary = [f"- entries: {len(entries)} over {len(by_class)} backbone classes "
               f"({len(_classes())} `*Backbone` names exported, base classes and aliases "
               "included)",
               f"- lower and compile in infer and train mode at `{preset}`: {len(lows)}",
               f"- `tgt collect --preset tiny --configs 4` + `tgt validate` clean: layout "
               f"{len(clean)}, layout and tile {len(both)}"]
    sizes = ["| entry | family | mode | instructions | nodes | configurable | lower s | "
             "compile s |", "|---|---|---|---:|---:|---:|---:|---:|"]
    for e in entries:
        for mode in MODES:
            r = lowered.get(f"{e.program_name}|{preset}|{mode}", {})
            if r.get("ok"):
                sizes.append(f"| {e.program_name} | {e.family} | {mode} | "
                             f"{r['instructions']:,} | {r['nodes']:,} | {r['configurable']:,} | "
                             f"{r['lower_s']:.1f} | {r['compile_s']:.1f} |")
    reference = _reference_opcodes()
    zoo = {n.name for n in list_programs("zoo")}
    reach: dict[str, set[str]] = {"zoo": set(), "catalog": set()}
    for key, r in lowered.items():
        if r.get("ok"):
            reach["zoo" if key.split("|")[0] in zoo else "catalog"].update(r["opcodes"])
    zoo_ops, cat_ops = reach["zoo"] & reference, reach["catalog"] & reference
    opcodes = [f"TpuGraphs opcode vocabulary: {len(reference)} names "
               f"(`format.OPCODE_NAMES` without `unknown`). Un-optimised HLO at `{preset}`, "
               f"infer + train, reaches {len(zoo_ops)} from the zoo, {len(cat_ops)} from the "
               f"catalog, {len(zoo_ops | cat_ops)} together; only the catalog: "
               f"{', '.join(sorted(cat_ops - zoo_ops)) or '-'}; only the zoo: "
               f"{', '.join(sorted(zoo_ops - cat_ops)) or '-'}."]
    return "\n".join([*summary, "", *opcodes]), "\n".join([*rows, "", *sizes])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    low = sub.add_parser("lower", help="lower + compile every entry (and the zoo)")
    low.add_argument("--preset", default="tiny")
    low.add_argument("--json", type=Path, default=Path("catalog-lower.json"))
    low.add_argument("--programs", default="", help="comma-separated (default: all + zoo)")
    col = sub.add_parser("collect", help="tgt collect + tgt validate every entry")
    col.add_argument("--json", type=Path, default=Path("catalog-collect.json"))
    col.add_argument("--collections", default="layout,tile")
    col.add_argument("--configs", type=int, default=4)
    col.add_argument("--max-kernels", type=int, default=2, help="tile: kernels per program")
    col.add_argument("--timeout", type=float, default=900.0, help="seconds per command")
    col.add_argument("--timing-flags", default="",
                     help="extra timing flags, e.g. '--engine fixed --fixed-rounds 3' (the "
                          "check is that each entry collects and validates, not its labels)")
    col.add_argument("--programs", default="", help="comma-separated (default: all)")
    rep = sub.add_parser("report", help="the docs table from both JSON files")
    rep.add_argument("--lower", type=Path, default=Path("catalog-lower.json"))
    rep.add_argument("--collect", type=Path, default=Path("catalog-collect.json"))
    rep.add_argument("--preset", default="tiny")
    rep.add_argument("--write", action="store_true", help="update docs/benchmarks.md")
    ns = parser.parse_args(argv)

    from tpugraphs_tools.programs import list_programs

    catalog = [p.name for p in list_programs("keras_hub") if not p.unavailable]
    if ns.cmd == "lower":
        names = [n for n in ns.programs.split(",") if n] or [
            *catalog, *(p.name for p in list_programs("zoo"))]
        run_lower(names, ns.preset, ns.json)
    elif ns.cmd == "collect":
        names = [n for n in ns.programs.split(",") if n] or catalog
        run_collect(names, ns.collections.split(","), ns.configs, ns.max_kernels,
                    ns.timing_flags.split(), ns.timeout, ns.json)
    else:
        body, tables = report(ns.lower, ns.collect, ns.preset)
        print(body, tables, sep="\n\n")
        if ns.write:
            sys.path.insert(0, str(ROOT / "bench"))
            from _doc import DETAILS, heading_id, record

            page = DETAILS / "catalog-breadth.md"
            record(TITLE, f"{body}\n\nEvery keras-hub class with its entries and state, and "
                   f"each entry's size: [{page.name}]({DETAILS.name}/{page.name}"
                   f"#{heading_id(TITLE)}).")
            record(TITLE, tables, doc=page)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
