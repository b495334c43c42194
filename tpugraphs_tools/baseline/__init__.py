"""Reference learned cost model (JAX/flax + optax) with GST, ranking losses and metrics.

The face is lazy (PEP 562): the option records and errors are imported at once, because
``tgt`` builds the ``tgt baseline`` flags from them and they need neither jax nor flax; every
other name is imported on first use, so ``tgt --help`` does not pay seconds for jax and flax.
The ``TYPE_CHECKING`` block names the same things for type checkers and the import graph.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from tpugraphs_tools.baseline.options import (
    LAYERS,
    BaselineOptions,
    PrepareOptions,
    TrainConfig,
)
from tpugraphs_tools.errors import NothingToScore

if TYPE_CHECKING:
    from tpugraphs_tools.baseline.batching import Batch, Item, Stale, bucket, pack
    from tpugraphs_tools.baseline.ceiling import MIN_PAIRS as CEILING_MIN_PAIRS
    from tpugraphs_tools.baseline.data import (
        GraphInfo,
        GraphRecord,
        GraphSource,
        TgtSource,
        TpuGraphsTreeSource,
        iter_graphs,
        open_source,
    )
    from tpugraphs_tools.baseline.losses import LOSSES, RankingLoss, listmle, pairwise_hinge
    from tpugraphs_tools.baseline.markdown import evaluation_title
    from tpugraphs_tools.baseline.metrics import (
        graph_metrics,
        kaggle_tile_score,
        kendall_tau,
        mean_metrics,
        opa,
        slowdown,
        top_k_error,
    )
    from tpugraphs_tools.baseline.model import CostModel, ModelConfig
    from tpugraphs_tools.baseline.predict import Prediction, predict_dataset, save_predictions
    from tpugraphs_tools.baseline.prepare import PreparedGraph
    from tpugraphs_tools.baseline.report import BaselineReport, Evaluation
    from tpugraphs_tools.baseline.report_files import save_report, write_report
    from tpugraphs_tools.baseline.run import run_baseline
    from tpugraphs_tools.baseline.saved import LoadedModel, SavedModel, load_model
    from tpugraphs_tools.baseline.train import Trainer

# module → the names it gives the face (name or (face name, its name there))
_LAZY: dict[str, tuple[str | tuple[str, str], ...]] = {
    "batching": ("Batch", "Item", "Stale", "bucket", "pack"),
    "ceiling": (("CEILING_MIN_PAIRS", "MIN_PAIRS"),),
    "data": ("GraphInfo", "GraphRecord", "GraphSource", "TgtSource", "TpuGraphsTreeSource",
             "iter_graphs", "open_source"),
    "losses": ("LOSSES", "RankingLoss", "listmle", "pairwise_hinge"),
    "markdown": ("evaluation_title",),
    "metrics": ("graph_metrics", "kaggle_tile_score", "kendall_tau", "mean_metrics", "opa",
                "slowdown", "top_k_error"),
    "model": ("CostModel", "ModelConfig"),
    "predict": ("Prediction", "predict_dataset", "save_predictions"),
    "prepare": ("PreparedGraph",),
    "report": ("BaselineReport", "Evaluation"),
    "report_files": ("save_report", "write_report"),
    "run": ("run_baseline",),
    "saved": ("LoadedModel", "SavedModel", "load_model"),
    "train": ("Trainer",),
}
_WHERE = {(n if isinstance(n, str) else n[0]): (module, n if isinstance(n, str) else n[1])
          for module, names in _LAZY.items() for n in names}


def __getattr__(name: str) -> Any:
    """A lazy name: imported from its module on first use, then kept in the face."""
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module, attr = _WHERE[name]
    value = getattr(importlib.import_module(f"{__name__}.{module}"), attr)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_WHERE})


__all__ = [
    "CEILING_MIN_PAIRS", "LAYERS", "LOSSES", "BaselineOptions", "BaselineReport", "Batch",
    "CostModel", "Evaluation", "GraphInfo", "GraphRecord",
    "GraphSource", "Item", "LoadedModel", "ModelConfig", "NothingToScore", "Prediction",
    "PrepareOptions", "PreparedGraph", "RankingLoss", "SavedModel", "Stale", "TgtSource",
    "TpuGraphsTreeSource", "TrainConfig", "Trainer", "bucket", "evaluation_title",
    "graph_metrics", "iter_graphs", "kaggle_tile_score", "kendall_tau", "listmle", "load_model",
    "mean_metrics", "opa", "open_source", "pack", "pairwise_hinge", "predict_dataset",
    "run_baseline", "save_predictions", "save_report", "slowdown", "top_k_error", "write_report",
]
