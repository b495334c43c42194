"""The TpuGraphs npz contract, one :class:`Collection` record per collection kind.

Every array a file of each kind holds — key, dtype, shape with named dims, whether required,
and what it means — lives here once; export, import, validate, baseline and collect ask these
records instead of spelling keys, widths or the kind string themselves. Facts come from the
reference tables (``tpugraphs_npz_keys.csv``): dtypes are what the tpu_graphs extractors
emit, not the README's int32s.

Dims: ``n`` nodes, ``m`` edges, ``nc`` configurable nodes, ``c`` configs, ``s`` node splits;
integers are fixed widths.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

import numpy as np

NODE_FEATURE_WIDTH = 140   # float features per node (tpugraphs_node_features.csv)
LAYOUT_CONFIG_WIDTH = 18   # layout features per configurable node and config
TILE_CONFIG_WIDTH = 24     # tile features per config

Dim = str | int


class Kind(StrEnum):
    """A collection kind; its value is the folder name and the ``collection`` column."""

    LAYOUT = "layout"
    TILE = "tile"


@dataclass(frozen=True)
class ArraySpec:
    """One npz array of a collection."""

    key: str
    dtype: str
    dims: tuple[Dim, ...]
    doc: str
    required: bool = True
    official: bool = True            # written to / read from official files
    per_config: bool = False         # first axis is the config axis
    # The other shape a file may carry: official files store node_splits as (1, s).
    written_dims: tuple[Dim, ...] | None = None

    @property
    def np_dtype(self) -> np.dtype:
        return np.dtype(self.dtype)

    @property
    def official_dims(self) -> tuple[Dim, ...]:
        return self.written_dims or self.dims

    def official_shape(self) -> tuple[int | None, ...]:
        """Shape of an official file's array, None for a free dim."""
        return tuple(None if isinstance(d, str) else d for d in self.official_dims)


def _graph_arrays(kind: str) -> tuple[ArraySpec, ...]:
    return (
        ArraySpec("node_feat", "float32", ("n", NODE_FEATURE_WIDTH),
                  "TpuGraphs node features, in the module's node order"),
        ArraySpec("node_opcode", "uint8", ("n",), "HLO opcode id per node"),
        ArraySpec("edge_index", "int64", ("m", 2),
                  f"edge [u, v]: u consumes v or v roots a computation u calls ({kind})"),
    )


@dataclass(frozen=True)
class Collection:
    """What files of one kind hold and how they are laid out (model: jraph's GraphsTuple
    docstring: every array's meaning and shape in one place)."""

    kind: Kind
    arrays: tuple[ArraySpec, ...]
    config_feat_key: str          # the array holding each config's features
    config_width: int             # features per config (per configurable node for layout)
    per_node_configs: bool        # configs set per configurable node (layout) or per graph
    default_feature: float        # a compiler-default config's feature value (every entry)
    normalizer_key: str | None    # per-config default runtimes stored in the file (tile)
    sources: tuple[str, ...]      # official source folders
    has_search: bool              # a {search} folder sits between source and split
    hlo_stage: str                # HLO stage the official files were extracted from

    def specs(self) -> dict[str, ArraySpec]:
        return {a.key: a for a in self.arrays}

    def official(self) -> tuple[ArraySpec, ...]:
        """Arrays of an official file, in the order they are written."""
        return tuple(a for a in self.arrays if a.official)

    @property
    def official_keys(self) -> tuple[str, ...]:
        return tuple(a.key for a in self.official())

    @property
    def config_keys(self) -> tuple[str, ...]:
        """Official arrays indexed by config (first axis)."""
        return tuple(a.key for a in self.official() if a.per_config)

    def empty_configs(self, num_configurable: int = 0) -> dict[str, np.ndarray]:
        """The per-config arrays with zero configs, so a graph-only npz still has every key."""
        sizes = {"c": 0, "nc": num_configurable}
        return {a.key: np.zeros(tuple(sizes[d] if isinstance(d, str) else d for d in a.dims),
                                a.np_dtype)
                for a in self.official() if a.per_config}

    @property
    def has_node_configs(self) -> bool:
        """Whether ``node_config_ids`` is an official array of this kind."""
        return "node_config_ids" in self.official_keys


LAYOUT = Collection(
    kind=Kind.LAYOUT,
    arrays=(
        *_graph_arrays("layout"),
        ArraySpec("node_config_ids", "int64", ("nc",),
                  "node ids of the configurable nodes"),
        ArraySpec("node_config_feat", "float32", ("c", "nc", LAYOUT_CONFIG_WIDTH),
                  "layout features per config and configurable node; -1: compiler's choice",
                  per_config=True),
        ArraySpec("config_runtime", "int64", ("c",), "whole-program runtime in ns per config",
                  per_config=True),
        ArraySpec("node_splits", "int64", ("s",),
                  "node index boundaries of major computations (official files: (1, s))",
                  written_dims=(1, "s")),
    ),
    config_feat_key="node_config_feat", config_width=LAYOUT_CONFIG_WIDTH,
    per_node_configs=True, default_feature=-1.0, normalizer_key=None,
    sources=("xla", "nlp"), has_search=True, hlo_stage="unoptimized",
)

TILE = Collection(
    kind=Kind.TILE,
    arrays=(
        *_graph_arrays("tile"),
        ArraySpec("config_feat", "float32", ("c", TILE_CONFIG_WIDTH),
                  "tile features per config; all zeros: the compiler's default (tgt)",
                  per_config=True),
        ArraySpec("config_runtime", "int64", ("c",), "kernel runtime in ns per config",
                  per_config=True),
        ArraySpec("config_runtime_normalizers", "int64", ("c",),
                  "runtime in ns of the kernel's default config, per config", per_config=True),
        # tgt's tile graphs carry the shared graph keys too; official tile files do not.
        ArraySpec("node_splits", "int64", ("s",), "as layout (tgt files only)",
                  required=False, official=False, written_dims=(1, "s")),
        ArraySpec("node_config_ids", "int64", ("nc",), "as layout (tgt files only)",
                  required=False, official=False),
    ),
    config_feat_key="config_feat", config_width=TILE_CONFIG_WIDTH,
    per_node_configs=False, default_feature=0.0, normalizer_key="config_runtime_normalizers",
    sources=("xla",), has_search=False, hlo_stage="optimized",
)

COLLECTIONS: dict[Kind, Collection] = {LAYOUT.kind: LAYOUT, TILE.kind: TILE}
KINDS: tuple[Kind, ...] = tuple(COLLECTIONS)
LAYOUT_SOURCES = LAYOUT.sources


def collection_of(kind: str) -> Collection:
    """The record of ``kind`` (a :class:`Kind` or its string); ValueError if unknown."""
    try:
        return COLLECTIONS[Kind(kind)]
    except ValueError:
        raise ValueError(f"collection {kind!r}: expected one of "
                         f"{', '.join(KINDS)}") from None


def detect_kind(keys: set[str]) -> Kind | None:
    """The kind whose config array is among ``keys`` (for bare directories of npz files)."""
    for spec in COLLECTIONS.values():
        if spec.config_feat_key in keys or (spec.normalizer_key or "") in keys:
            return spec.kind
    return None


def official_keys_table() -> dict[str, dict[str, tuple[str, tuple[int | None, ...]]]]:
    """kind → key → (dtype, shape with None for a free dim), in file order."""
    return {kind: {a.key: (a.dtype, a.official_shape()) for a in spec.official()}
            for kind, spec in COLLECTIONS.items()}
