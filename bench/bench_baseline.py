"""Held-out comparison of the reference model with trivial rankers on a dataset.

    python bench/bench_baseline.py DATA [--epochs 30] [--gst] [--write]
    python bench/bench_baseline.py /tmp/syn --make-synthetic --write   # synthetic dataset

DATA is a tgt dataset or an official TpuGraphs npz tree. ``--write`` puts the table into
docs/benchmarks.md (section "tgt baseline", subsection "Held-out comparison (<mode>)"); the JSON
report goes to bench/out/baseline_report.json.
"""

from __future__ import annotations

import argparse
import datetime as dt
import platform
import sys
from pathlib import Path

from tpugraphs_tools.baseline import (
    BaselineOptions,
    PrepareOptions,
    TrainConfig,
    run_baseline,
    write_report,
)
from tpugraphs_tools.baseline.markdown import replace_subsection, results_markdown
from tpugraphs_tools.baseline.synthetic import write_synthetic_dataset

REPO = Path(__file__).resolve().parent.parent
DOC = REPO / "docs" / "benchmarks.md"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data")
    parser.add_argument("--make-synthetic", action="store_true",
                        help="create a synthetic layout dataset at DATA first (if absent)")
    parser.add_argument("--epochs", type=int, default=30)
    parser.add_argument("--hidden", type=int, default=64)
    parser.add_argument("--layers", type=int, default=3)
    parser.add_argument("--lr", type=float, default=2e-3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--gst", action="store_true")
    parser.add_argument("--segment-nodes", type=int, default=1000, help="GST segment size")
    parser.add_argument("--finetune-epochs", type=int, default=0)
    parser.add_argument("--prune", action="store_true")
    parser.add_argument("--pad-minus-one", action="store_true")
    parser.add_argument("--label", default="",
                        help="qualifies the docs subsection, e.g. 'collected data'")
    parser.add_argument("--write", action="store_true", help="update docs/benchmarks.md")
    args = parser.parse_args()
    data = Path(args.data)
    if args.make_synthetic and not data.exists():
        write_synthetic_dataset(data, programs=12, graphs_per_program=4, nodes=(40, 120),
                                configs=32, seed=args.seed)
    opts = BaselineOptions(
        hidden=args.hidden, layers=args.layers, segment_nodes=args.segment_nodes,
        holdout="programs",
        train=TrainConfig(epochs=args.epochs, lr=args.lr, seed=args.seed, gst=args.gst,
                          finetune_epochs=args.finetune_epochs),
        prepare=PrepareOptions(prune=args.prune, pad_minus_one=args.pad_minus_one,
                               seed=args.seed))
    report = run_baseline(data, opts, progress=lambda m: print(m, file=sys.stderr, end="\r"))
    out = REPO / "bench" / "out"
    out.mkdir(parents=True, exist_ok=True)
    write_report(report, out / "baseline_report.json")
    command = "python " + " ".join(["bench/bench_baseline.py", *sys.argv[1:]])
    body = (f"Measured {dt.date.today().isoformat()} with `{command}` on {platform.machine()} "
            f"(CPU, Python {platform.python_version()}). Model: `{opts.layer}`, hidden "
            f"{opts.hidden}, {opts.layers} layers, {opts.train.loss}, {opts.train.epochs} "
            f"epochs, " + (f"GST (METIS segments of ≤ {opts.segment_nodes} nodes, "
                           f"{opts.train.finetune_epochs} head fine-tuning epochs)"
                           if opts.train.gst else "full-graph") + ". Held-out graphs only; "
            "random = mean over 10 random orders. On `--make-synthetic` data the default config "
            "is always fastest (see baseline/synthetic.py), so compare τ and OPA there.\n\n"
            + results_markdown(report))
    print(body)
    if args.write:
        text = DOC.read_text() if DOC.exists() else "# Benchmarks\n"
        mode = ("GST" if args.gst else "full-graph") + (f", {args.label}" if args.label else "")
        DOC.write_text(replace_subsection(text, "tgt baseline", f"Held-out comparison ({mode})",
                                          body))


if __name__ == "__main__":
    main()
