"""Featurizer benchmark: parse + featurize a synthetic ≥100k-instruction HLO module.

The module is generated as HLO text shaped like XLA's optimized output for a conv net: per
block a weight/bias/dense parameter, a windowed convolution (every 4th one strided), a loop
fusion whose called computation does bias-add + relu (broadcasts, constant, add, maximum), a
reshape, a dot and a reshape back; every 8th block also has a slice, a pad, a dynamic-slice
and a reduce whose ``to_apply`` is a shared adder. Instructions carry metadata like jax's.

    .venv/bin/python bench/bench_featurize.py            # print the table, check the target
    .venv/bin/python bench/bench_featurize.py --write    # ... and update docs/benchmarks.md

Two more rows, one run each: the same module written on one line (read by the token scanner,
the reader's fallback for text not laid out one statement per line) and XLA's own parser run
on it in a child process (what ``from_file`` adds before reading).

Exit status 1 when featurize (best of ``--repeat``) is over ``--target`` seconds.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tpugraphs_tools.features import featurize  # noqa: E402
from tpugraphs_tools.hlo import parse_hlo_text  # noqa: E402
from tpugraphs_tools.hlo.xla import xla_verdict  # noqa: E402

DOC = ROOT / "docs" / "benchmarks.md"
SECTION = "## Featurizer"
ACT = "f32[8,16,16,32]{3,2,1,0}"
FLAT = "f32[2048,32]{1,0}"


def _meta(op: str, line: int) -> str:
    return (f'metadata={{op_name="jit(model)/block/{op}" source_file="/src/model.py" '
            f"source_line={line}}}")


def synth_hlo(min_instructions: int) -> str:
    """HLO text of a module with at least ``min_instructions`` instructions."""
    comps: list[str] = [
        "%add_f32 (lhs: f32[], rhs: f32[]) -> f32[] {\n"
        "  %lhs = f32[] parameter(0)\n"
        "  %rhs = f32[] parameter(1)\n"
        "  ROOT %sum = f32[] add(f32[] %lhs, f32[] %rhs)\n"
        "}\n"
    ]
    entry: list[str] = [f"  %x = {ACT} parameter(0), metadata={{op_name=\"x\"}}"]
    count = 4
    param = 1
    prev = "%x"
    i = 0
    while count < min_instructions - 1:
        fused = f"fused_computation.{i}"
        comps.append(
            f"%{fused} (param_0.{i}: f32[8,16,16,32], param_1.{i}: f32[32]) -> "
            f"f32[8,16,16,32] {{\n"
            f"  %param_0.{i} = {ACT} parameter(0)\n"
            f"  %param_1.{i} = f32[32]{{0}} parameter(1)\n"
            f"  %bias.{i} = {ACT} broadcast(%param_1.{i}), dimensions={{3}}, {_meta('add', 20)}\n"
            f"  %add.{i} = {ACT} add(%param_0.{i}, %bias.{i}), {_meta('add', 20)}\n"
            f"  %zero.{i} = f32[] constant(0)\n"
            f"  %zeros.{i} = {ACT} broadcast(%zero.{i}), dimensions={{}}, {_meta('max', 21)}\n"
            f"  ROOT %relu.{i} = {ACT} maximum(%add.{i}, %zeros.{i}), {_meta('max', 21)}\n"
            f"}}\n"
        )
        count += 7
        stride = "stride=2x2 " if i % 4 == 3 else ""
        conv_out = "f32[8,8,8,32]{3,2,1,0}" if stride else ACT
        lines = [
            f"  %w.{i} = f32[3,3,32,32]{{3,2,1,0}} parameter({param}), "
            f"metadata={{op_name=\"w{i}\"}}",
            f"  %b.{i} = f32[32]{{0}} parameter({param + 1}), metadata={{op_name=\"b{i}\"}}",
            f"  %wd.{i} = f32[32,32]{{1,0}} parameter({param + 2}), "
            f"metadata={{op_name=\"wd{i}\"}}",
            f"  %conv.{i} = {conv_out} convolution({ACT} {prev}, f32[3,3,32,32]{{3,2,1,0}} "
            f"%w.{i}), window={{size=3x3 {stride}pad=1_1x1_1}}, dim_labels=b01f_01io->b01f, "
            f"{_meta('conv_general_dilated', 12)}",
        ]
        param += 3
        if stride:  # back to full size so every block has the same activation shape
            lines.append(f"  %up.{i} = {ACT} pad({conv_out} %conv.{i}, f32[] %zero_e), "
                         f"padding=0_0x0_1_1x0_1_1x0_0, {_meta('pad', 13)}")
            conv = f"%up.{i}"
        else:
            conv = f"%conv.{i}"
        lines += [
            f"  %fusion.{i} = {ACT} fusion({conv}, %b.{i}), kind=kLoop, calls=%{fused}, "
            f"{_meta('relu', 14)}",
            f"  %flat.{i} = {FLAT} reshape(%fusion.{i}), {_meta('reshape', 15)}",
            f"  %dot.{i} = {FLAT} dot(%flat.{i}, %wd.{i}), lhs_contracting_dims={{1}}, "
            f"rhs_contracting_dims={{0}}, {_meta('dot_general', 16)}",
            f"  %h.{i} = {ACT} reshape(%dot.{i}), {_meta('reshape', 17)}",
        ]
        prev = f"%h.{i}"
        if i % 8 == 7:
            lines += [
                f"  %sl.{i} = f32[4,8,8,32]{{3,2,1,0}} slice(%h.{i}), "
                f"slice={{[0:8:2], [0:16:2], [0:16:2], [0:32]}}",
                f"  %pd.{i} = f32[4,10,10,32]{{3,2,1,0}} pad(%sl.{i}, %zero_e), "
                f"padding=0_0x1_1x1_1x0_0",
                f"  %ds.{i} = f32[4,8,8,32]{{3,2,1,0}} dynamic-slice(%pd.{i}, %i0, %i0, %i0, "
                f"%i0), dynamic_slice_sizes={{4,8,8,32}}",
                f"  %red.{i} = f32[4,32]{{1,0}} reduce(%ds.{i}, %zero_e), dimensions={{1,2}}, "
                f"to_apply=%add_f32",
            ]
        entry += lines
        count += len(lines)
        i += 1
    head = ["  %zero_e = f32[] constant(0)", "  %i0 = s32[] constant(0)"]
    entry = entry[:1] + head + entry[1:]
    body = "\n".join(entry)
    return (f"HloModule bench_{min_instructions}, is_scheduled=true\n\n" + "\n".join(comps)
            + f"\nENTRY %main (x: f32[8,16,16,32]) -> f32[8,16,16,32] {{\n{body}\n"
            f"  ROOT %out = {ACT} copy({prev})\n}}\n")


def best_of(fn: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    best = float("inf")
    result = None
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - start)
    return best, result


def write_section(doc: Path, section: str) -> None:
    """Replace (or append) the ``## Featurizer`` section; other sections are left untouched."""
    text = doc.read_text() if doc.exists() else "# Benchmarks\n"
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.strip() == SECTION), None)
    if start is None:
        new = text.rstrip("\n") + "\n\n" + section
    else:
        end = next((j for j in range(start + 1, len(lines)) if lines[j].startswith("## ")),
                   len(lines))
        before = "\n".join(lines[:start]).rstrip("\n")
        after = "\n".join(lines[end:])
        new = (before + "\n\n" if before else "") + section + ("\n" + after if after else "")
    doc.write_text(new.rstrip("\n") + "\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--instructions", type=int, default=100_000,
                        help="minimum instructions in the synthetic module")
    parser.add_argument("--repeat", type=int, default=3, help="timed runs; the best is kept")
    parser.add_argument("--target", type=float, default=1.0, help="featurize budget, seconds")
    parser.add_argument("--write", action="store_true",
                        help=f"update the '{SECTION}' section of docs/benchmarks.md")
    args = parser.parse_args(argv)

    load = os.getloadavg()[0]
    text = synth_hlo(args.instructions)
    parse_s, module = best_of(lambda: parse_hlo_text(text, source="synthetic"), args.repeat)
    feat_s, graph = best_of(lambda: featurize(module), args.repeat)
    one_line = " ".join(line.strip() for line in text.splitlines())
    scan_s, _ = best_of(lambda: parse_hlo_text(one_line, source="synthetic"), 1)
    xla_s, _ = best_of(lambda: xla_verdict(text.encode(), "text", "synthetic"), 1)
    n = module.instruction_count
    ok = feat_s <= args.target
    rows = [
        ("parse (HLO text → Module)", parse_s, "—"),
        ("featurize (Module → arrays)", feat_s, f"≤ {args.target:g} s: {'OK' if ok else 'OVER'}"),
        ("total", parse_s + feat_s, "—"),
        ("parse, same module on one line (token scanner), 1 run", scan_s, "—"),
        ("XLA's verdict (`from_file` only; child process), 1 run", xla_s, "—"),
    ]
    table = [f"| stage | best of {args.repeat} (s) | µs / instruction | target |",
             "|---|---:|---:|---|"]
    table += [f"| {name} | {sec:.3f} | {sec / n * 1e6:.2f} | {target} |"
              for name, sec, target in rows]
    summary = (f"{n:,} instructions in {len(module.computations):,} computations, "
               f"{len(text) / 1e6:.1f} MB of text; {graph.edge_index.shape[0]:,} edges, "
               f"{graph.node_config_ids.shape[0]:,} configurable nodes.")
    print(summary)
    print()
    print("\n".join(table))
    if args.write:
        command = "python bench/bench_featurize.py --write"
        if args.instructions != 100_000 or args.repeat != 3:
            command += f" --instructions {args.instructions} --repeat {args.repeat}"
        section = "\n".join([
            SECTION, "",
            f"Command: `{command}` — run {dt.date.today().isoformat()} on "
            f"{platform.machine()} ({platform.processor() or 'cpu'}, {os.cpu_count()} CPUs, "
            f"load average {load:.1f} at start), Python {platform.python_version()}.",
            "",
            "Synthetic module generated as HLO text (conv/fusion/reshape/dot blocks with "
            "metadata, see the script's docstring). " + summary,
            "",
            *table,
        ])
        write_section(DOC, section + "\n")
        print(f"\nwrote the '{SECTION}' section of {DOC.relative_to(ROOT)}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
