"""Tile collection on real programs: which per-kernel choices change anything, and by how much.

For each program: the optimized module's costliest kernels (``--kernels``) are measured with
``--configs`` distinct configs each; reports statuses, per-knob outcomes (how often a one-knob
change was a no-op, its median relative runtime) and the effects beyond 3× CV.

    python bench/bench_tile.py --programs resnet18,resnet50 --preset small --write
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections import defaultdict


def compiled(name: str, preset: str):
    from tpugraphs_tools.hlo import from_compiled
    from tpugraphs_tools.programs import default_args, get_program, lower

    program = get_program(name)
    args = default_args(program, preset)
    return from_compiled(lower(program, args).compile(), program.name), args


def knob_table(graphs: list) -> list[str]:
    """Per one-knob config: kernels where it was tried, no-op/duplicate count, relative runtimes."""
    by_knob: dict[str, dict[str, list]] = defaultdict(lambda: defaultdict(list))
    for _, rows in graphs:
        for r in rows:
            config = json.loads(r["config"])
            if len(config) != 1:
                continue
            key = json.dumps(config, sort_keys=True)
            by_knob[key]["status"].append(r["status"])
            if r["status"] == "ok":
                by_knob[key]["rel"].append(r["relative_to_default"])
                by_knob[key]["eff"].append(json.loads(r["realized"])["effect_cv"])
    lines = ["| one-knob config | tried | ok | no-op / dup | median rel. runtime | min–max | "
             "> 3 CV |", "|---|---|---|---|---|---|---|"]
    for key in sorted(by_knob):
        d = by_knob[key]
        st, rel = d["status"], d["rel"]
        span = f"{min(rel):.2f}–{max(rel):.2f}" if rel else "-"
        med = f"{statistics.median(rel):.2f}×" if rel else "-"
        lines.append(f"| `{key}` | {len(st)} | {st.count('ok')} | "
                     f"{st.count('noop')} / {st.count('duplicate')} | {med} | {span} | "
                     f"{sum(1 for e in d['eff'] if e > 3)} |")
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--programs", default="resnet18,resnet50")
    parser.add_argument("--preset", default="small")
    parser.add_argument("--kernels", type=int, default=0, help="costliest N kernels (0 = all)")
    parser.add_argument("--configs", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--write", action="store_true", help="update docs/benchmarks.md")
    a = parser.parse_args()

    from tpugraphs_tools.collect import TileOptions, collect_tile
    from tpugraphs_tools.measure.options import MeasureOptions

    body: list[str] = []
    for name in a.programs.split(","):
        src, args = compiled(name, a.preset)
        # The fixed engine: this benchmark's figures are effects in units of CV (the paired
        # engine's CIs are measured by bench_label_cost.py).
        opts = TileOptions(MeasureOptions(configs=a.configs, max_kernels=a.kernels or None,
                                          seed=a.seed, warmup=a.warmup,
                                          fixed_rounds=a.repeats, engine="fixed"))
        start = time.perf_counter()
        result = collect_tile(src, program=name, program_args=args.as_dict(),
                              parent_graph_id=None, opts=opts,
                              progress=lambda m: print("  ", m, file=sys.stderr, flush=True))
        seconds = time.perf_counter() - start
        s = result.summary.to_json()
        top = s["largest_effect"] or {}
        print(json.dumps({k: v for k, v in s.items() if k != "skipped"}, default=str, indent=1))
        body += [
            f"### {name} ({a.preset}: {json.dumps(args.as_dict(), sort_keys=True)})", "",
            f"{s['kernels']} kernels stored, {s['kernels_skipped']} skipped (of "
            f"{f'the {a.kernels} costliest' if a.kernels else 'all distinct'} kernels); "
            f"{s['configs']} configs tried in {seconds:.0f} s: "
            + ", ".join(f"{k} {v}" for k, v in sorted(s["status"].items())) + ". "
            f"{s['effects_over_3cv']} configs differ from default by more than 3× CV. "
            f"Largest effect: `{top.get('parent_instruction')}` with "
            f"`{json.dumps(top.get('config'))}` at {top.get('relative_to_default', 0):.2f}× "
            f"the default ({top.get('effect_cv', 0):.1f} CV; CV config "
            f"{top.get('runtime_cv', 0):.3f}, default {top.get('default_cv', 0):.3f}). "
            f"Best speed-up {s['best_speedup'] or 0:.2f}×, worst slowdown "
            f"{s['worst_slowdown'] or 0:.2f}×.", "", *knob_table(result.graphs), "",
        ]
        for kernel, why in s["skipped"].items():
            body.append(f"- skipped `{kernel}`: {why}")
        body.append("")
    note = (
        "Each kernel is compiled standalone in a worker process; every config is timed "
        "interleaved with the default in the same process (min of the rounds). CV is the "
        "per-sample CV (pstdev/mean) of the noisier side, so `effect_cv = |rel − 1| / CV` is "
        "conservative: it is the spread of single runs, not of the minimum. A one-knob config "
        "is a no-op when the kernel's optimized HLO and its generated machine code are both "
        "identical to the default's. Shared 2-core machine (other jobs running): CVs are "
        "larger than on an idle one."
    )
    text = note + "\n\n" + "\n".join(body)
    print(text)
    if a.write:
        from _doc import record  # bench/ is on sys.path when run as a script

        record("Tile collection", text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
