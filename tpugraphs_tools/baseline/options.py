"""What a baseline run is told: the model's options, its training and its input preparation.

Why a module of its own: ``tgt baseline`` generates its flags from these records' field
metadata (``option_info``), so they import neither jax nor flax and the CLI can build its
``--help`` without them; and the loader, the run, the trainer, the saved-model reader and the
predictor all read them from here, which keeps those modules free of import cycles. A field
whose flag the CLI should not offer (``TrainConfig.forward_nodes``) has no metadata.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from tpugraphs_tools.configs import STRATEGIES
from tpugraphs_tools.option_info import check_values, from_keys, option

LAYERS = ("sage", "gcn")
LOSS_NAMES = ("listmle", "hinge", "sure-pairs")    # losses.LOSSES, in this order
# partition.METHODS' names: importing partition here would load pymetis with every
# `tgt` start (the CLI builds baseline's flags from this module); a test keeps them equal.
SEGMENT_METHODS = ("metis", "contiguous")
HOLDOUTS = ("auto", "programs", "configs")
DEFAULT_SHARE = 0.3   # within-graph: held-out share of each graph's configs (holdout.py)


def _seed() -> Any:
    """Training and the config subsample share one seed (one ``--seed`` flag sets both)."""
    return option(0, "Seed for initialisation, sampling and the split.", minimum=0)


@dataclass(frozen=True)
class TrainConfig:
    """How one model is fitted."""

    epochs: int = option(20, "Training epochs.", minimum=0)
    lr: float = option(1e-3, "Learning rate.", minimum=0.0, above=True)
    loss: str = option(
        "listmle", "ListMLE, pairwise hinge (margin 0.1), or logistic over the pairs whose "
        "label CIs are disjoint (sure-pairs).", choices=LOSS_NAMES)
    configs_per_graph: int = option(
        16, "Configs of a graph ranked together in one training step.", minimum=2)
    batch_graphs: int = option(4, "Graphs per training batch.", minimum=1)
    seed: int = _seed()
    gst: bool = option(False, "Graph Segment Training or whole graphs per step.",
                       flag="--gst/--full-graph")
    backprop_segments: int = option(
        1, "GST: segments of a graph sampled for backpropagation per step.", minimum=1)
    keep_prob: float = option(
        0.5, "GST stale-embedding dropout: probability to keep a historical embedding.",
        minimum=0.0, maximum=1.0)
    finetune_epochs: int = option(
        0, "Head-only epochs on fresh embeddings after training (GST).", minimum=0)
    forward_nodes: int = 1 << 16     # node budget of one gradient-free forward pass

    def __post_init__(self) -> None:
        check_values(self)


@dataclass(frozen=True)
class PrepareOptions:
    """How a graph's arrays become model inputs (the same for training and ``--predict``)."""

    prune: bool = option(False, "Keep configurable nodes + direct neighbours.")
    # node layout columns → categories with −1 padding
    pad_minus_one: bool = option(
        False, "Node layout columns as −1-padded categories sharing the config embedding.")
    mismatch_features: bool = option(   # mismatch.py
        False, "Layout: count, per configurable node and config, the operands whose layout "
        "differs from the one it asks for (where copies appear).")
    default_slots: bool = option(
        False, "Layout: per configurable node and config, how many of its slots differ from "
        "the default config's (what the non-default-slots ranker counts).")
    hlo_features: bool = option(
        False, "Extra node features recomputed from the stored HLO (separate array).")
    max_configs: int = option(
        1000, "Seeded subsample of configs per graph beyond this.", minimum=2)
    seed: int = _seed()
    lazy_configs: bool = option(   # per-config arrays from the repacked cache (configstore)
        True, "Read graph structure and config features per batch from a cache "
        "(DATA/.tgt-cache/; a few graphs open at a time) or hold them all in memory.",
        flag="--lazy-configs/--in-memory-configs")

    def __post_init__(self) -> None:
        check_values(self)


@dataclass(frozen=True)
class BaselineOptions:
    """One ``tgt baseline`` run: the model, how it is trained and scored, what it reads."""

    layer: str = option("sage", "Training: the graph layer, sage (GraphSAGE) or gcn",
                        choices=LAYERS)
    hidden: int = option(64, "Hidden width of every layer.", minimum=4)
    layers: int = option(3, "Graph layers.", minimum=1)
    cross_config_attention: bool = option(
        False, "Let the configs of a graph attend to each other before scoring.")
    train: TrainConfig = field(default_factory=TrainConfig)
    prepare: PrepareOptions = field(default_factory=PrepareOptions)
    collection: str | None = option(None, "Only this collection (default: each).", kind=str)
    segment_method: str = option("metis", "GST segments when no --partition is given.",
                                 choices=SEGMENT_METHODS)
    segment_nodes: int = option(1000, "GST segment size when no --partition is given.",
                                minimum=1)
    partition: str | None = option(   # stored partition name (tgt datasets)
        None, "Use a stored partition (e.g. metis-64 from `tgt partition`) for GST.", kind=str)
    holdout: str = option(
        "auto", "What is held out: unseen programs, unseen configs of every graph, or (auto) "
        "each that the data allows.", choices=HOLDOUTS)
    holdout_share: float = option(
        DEFAULT_SHARE, "Within-graph score: share of each graph's configs held out.",
        minimum=0.0, above=True, maximum=1.0, below=True)
    train_strategy: str | None = option(
        None, "By-program score: train only on graphs of this config strategy (held-out "
        "graphs keep every strategy).", choices=STRATEGIES, kind=str)

    def __post_init__(self) -> None:
        check_values(self)

    @classmethod
    def from_keys(cls, values: Mapping[str, Any]) -> BaselineOptions:
        """The three records from one mapping of field names (``tgt baseline``'s parameters;
        other keys are ignored); ``seed`` sets both training's and the subsample's."""
        return dataclasses.replace(from_keys(cls, values), train=from_keys(TrainConfig, values),
                                   prepare=from_keys(PrepareOptions, values))

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)
