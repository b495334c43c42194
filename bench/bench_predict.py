"""Save a trained baseline model and rank other data with it (``tgt baseline --predict``).

    python bench/bench_predict.py /tmp/bench-predict [--epochs 5] [--hidden 64] [--layers 3]

Writes two synthetic layout datasets under the folder (``train``: 12 programs x 4 graphs x 32
configs; ``other``: the same sizes, another seed, so other graphs), trains the by-program model
on ``train`` and saves it beside the report, then times ``--predict`` on both. Prints the model
files' sizes, the prediction times, how far the re-ranked held-out graphs are from the
report's own metrics (0 when the saved model reproduces the evaluation), and the metrics on
``other``. Figures go into docs/baseline.md ("Save and predict") by hand, with this command.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from tpugraphs_tools.baseline import (
    BaselineOptions,
    TrainConfig,
    predict_dataset,
    run_baseline,
    save_predictions,
    save_report,
)
from tpugraphs_tools.baseline.synthetic import write_synthetic_dataset

SHOWN = ("kendall_tau", "opa", "slowdown@1")


def _dataset(path: Path, seed: int) -> Path:
    if not path.exists():
        write_synthetic_dataset(path, programs=12, graphs_per_program=4, nodes=(40, 120),
                                configs=32, seed=seed, label_ci=0.01)
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder")
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--hidden", type=int, default=64)
    parser.add_argument("--layers", type=int, default=3)
    args = parser.parse_args()
    folder = Path(args.folder)
    train = _dataset(folder / "train", seed=0)
    other = _dataset(folder / "other", seed=1)
    opts = BaselineOptions(hidden=args.hidden, layers=args.layers, holdout="programs",
                           train=TrainConfig(epochs=args.epochs))
    start = time.perf_counter()
    report = run_baseline(train, opts)
    print(f"trained in {time.perf_counter() - start:.1f} s")
    paths = save_report(report, train)
    for path in paths[2:]:
        print(f"{path.name}: {path.stat().st_size / 1024:.1f} KiB")
    model = train / "baseline" / "model-layout-by-program.msgpack"
    evaluation = report.collections["layout"].evaluations["by-program"]
    for name, data in (("train", train), ("other", other)):
        start = time.perf_counter()
        prediction = predict_dataset(data, model)
        seconds = time.perf_counter() - start
        save_predictions(prediction, data)
        configs = sum(g.score.size for g in prediction.graphs)
        print(f"{name}: {configs} configs of {len(prediction.graphs)} graphs ranked in "
              f"{seconds:.1f} s (load, prepare, compile, predict)")
        print("  mean " + ", ".join(f"{k} {prediction.summary[k]:.3f}" for k in SHOWN))
        if name == "train":
            by_id = {g.graph_id: g.metrics or {} for g in prediction.graphs}
            gap = max(abs(by_id[r.graph_id][k] - r.methods["model"][k])
                      for r in evaluation.per_graph for k in SHOWN
                      if not np.isnan(r.methods["model"][k]))
            print(f"  held-out graphs: largest metric difference from the report {gap:.2e}")
            test = evaluation.results["test"]["model"]
            print("  report, test split: " + ", ".join(f"{k} {test[k]:.3f}" for k in SHOWN))


if __name__ == "__main__":
    main()
