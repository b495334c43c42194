"""Reference learned cost model (JAX/flax + optax) with GST, ranking losses and metrics."""

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
from tpugraphs_tools.baseline.prepare import PreparedGraph, PrepareOptions
from tpugraphs_tools.baseline.report import BaselineReport, Evaluation, save_report, write_report
from tpugraphs_tools.baseline.run import BaselineOptions, NothingToScore, run_baseline
from tpugraphs_tools.baseline.saved import LoadedModel, SavedModel, load_model
from tpugraphs_tools.baseline.train import TrainConfig, Trainer

__all__ = [
    "CEILING_MIN_PAIRS", "LOSSES", "BaselineOptions", "BaselineReport", "Batch", "CostModel",
    "Evaluation", "GraphInfo", "GraphRecord",
    "GraphSource", "Item", "LoadedModel", "ModelConfig", "NothingToScore", "Prediction",
    "PrepareOptions", "PreparedGraph", "RankingLoss", "SavedModel", "Stale", "TgtSource",
    "TpuGraphsTreeSource", "TrainConfig", "Trainer", "bucket", "evaluation_title",
    "graph_metrics", "iter_graphs", "kaggle_tile_score", "kendall_tau", "listmle", "load_model",
    "mean_metrics", "opa", "open_source", "pack", "pairwise_hinge", "predict_dataset",
    "run_baseline", "save_predictions", "save_report", "slowdown", "top_k_error", "write_report",
]
