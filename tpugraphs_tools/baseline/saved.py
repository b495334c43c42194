"""A trained baseline model on disk: flax-serialized parameters plus a JSON sidecar.

The parameters alone cannot rank anything: the model's input widths follow from the feature
normalisation fitted on the train graphs, and the predictions from the options that shaped the
inputs (pruning, −1 padding, HLO extras, GST segments, configs scored per step). The sidecar
holds all of that, with the format widths and package versions it was trained under, so
:func:`load_model` can refuse a file that would silently rank with the wrong inputs.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import flax.serialization
import numpy as np
from flax.traverse_util import flatten_dict

from tpugraphs_tools import __version__
from tpugraphs_tools.baseline.features import Normalizer
from tpugraphs_tools.baseline.model import ModelConfig
from tpugraphs_tools.baseline.options import PrepareOptions, TrainConfig
from tpugraphs_tools.baseline.prepare import FeatureStats
from tpugraphs_tools.baseline.versions import versions
from tpugraphs_tools.errors import ModelFileError
from tpugraphs_tools.features import NUM_NODE_FEATURES
from tpugraphs_tools.format import KINDS, OPCODE_NAMES, collection_of

FORMAT = "tgt-baseline-model"
FORMAT_VERSION = 1
PARAMS_SUFFIX = ".msgpack"
SIDECAR_SUFFIX = ".json"
# Sidecar keys renamed since: old key -> the field, per section ("model": the graph layer,
# before `model` came to mean only the saved model)
RENAMED = {"model": {"model": "layer"}}


def model_stem(collection: str, evaluation: str) -> str:
    """File stem of one evaluation's model, e.g. ``model-layout-xla-default-by-program``."""
    return "model-" + re.sub(r"[^A-Za-z0-9_.]+", "-", f"{collection}-{evaluation}")


def format_widths(kind: str, extra: int) -> dict[str, int]:
    """The input widths a model of ``kind`` is built for (this tgt's format, HLO extras)."""
    return {"node_features": NUM_NODE_FEATURES,
            "config_features": collection_of(kind).config_width,
            "opcodes": len(OPCODE_NAMES), "extra_features": extra}


def _normalizer_json(n: Normalizer) -> dict[str, Any]:
    """Only the kept columns' bounds (the rest are ±inf, which JSON cannot hold)."""
    keep = np.nonzero(n.keep)[0]
    return {"width": int(n.lo.size), "keep": keep.tolist(),
            "lo": n.lo[keep].astype(float).tolist(), "hi": n.hi[keep].astype(float).tolist()}


def _normalizer_of(d: dict[str, Any]) -> Normalizer:
    n = Normalizer.empty(int(d["width"]))
    keep = np.asarray(d["keep"], np.int64)
    n.lo[keep] = np.asarray(d["lo"], np.float32)
    n.hi[keep] = np.asarray(d["hi"], np.float32)
    return n


@dataclass(frozen=True)
class SavedModel:
    """Parameters (flax msgpack bytes) and the sidecar document that rebuilds their model."""

    stem: str
    params: bytes
    sidecar: dict[str, Any]

    @classmethod
    def build(cls, params: Any, model_cfg: ModelConfig, stats: FeatureStats,
              options: dict[str, Any], collection: str, evaluation: str) -> SavedModel:
        """``options``: the run's ``BaselineOptions.to_json()``."""
        data = flax.serialization.to_bytes(params)
        stem = model_stem(collection, evaluation)
        sidecar = {
            "format": FORMAT, "format_version": FORMAT_VERSION,
            "params_file": stem + PARAMS_SUFFIX,
            "params_sha256": hashlib.sha256(data).hexdigest(),
            "collection": collection, "kind": model_cfg.kind, "evaluation": evaluation,
            "tgt_version": __version__, "versions": versions(),
            "model": dataclasses.asdict(model_cfg), "options": options,
            "widths": format_widths(model_cfg.kind, int(stats.extra.lo.size)),
            "normalisation": {"pad_minus_one": stats.pad_minus_one,
                              "mismatch_features": stats.mismatch_features,
                              "default_slots": stats.default_slots,
                              "node": _normalizer_json(stats.node),
                              "extra": _normalizer_json(stats.extra),
                              "tile_config": _normalizer_json(stats.tile_config)}}
        return cls(stem, data, sidecar)

    @property
    def params_file(self) -> str:
        """The parameters' file name (report.json names it)."""
        return self.stem + PARAMS_SUFFIX

    def files(self) -> dict[str, bytes]:
        """File name → bytes of the parameters and the sidecar."""
        doc = json.dumps(self.sidecar, indent=2, sort_keys=True) + "\n"
        return {self.params_file: self.params, self.stem + SIDECAR_SUFFIX: doc.encode()}


@dataclass(frozen=True)
class LoadedModel:
    """A checked model file: what rebuilds the model and its inputs, and the raw state."""

    path: Path                       # the parameters file
    sidecar_path: Path
    sidecar: dict[str, Any]
    model: ModelConfig
    train: TrainConfig
    prepare: PrepareOptions
    options: dict[str, Any]          # the run's BaselineOptions.to_json()
    stats: FeatureStats
    state: dict[str, Any]            # flax state dict of the parameters

    @property
    def kind(self) -> str:
        return self.model.kind

    def error(self, message: str, key: str | None = None) -> ModelFileError:
        """A ModelFileError naming the sidecar (and ``key`` in it)."""
        return ModelFileError(message, path=str(self.sidecar_path), key=key)

    def restore(self, template: Any) -> Any:
        """Parameters in ``template``'s structure (a fresh init of the model); a missing,
        extra or differently shaped parameter is a ModelFileError naming its path."""
        want = {"/".join(k): np.shape(v) for k, v in flatten_dict(
            flax.serialization.to_state_dict(template)).items()}
        have = {"/".join(k): np.shape(v) for k, v in flatten_dict(self.state).items()}
        for key in sorted(want.keys() | have.keys()):
            if key not in have or key not in want:
                where = "missing from the file" if key not in have else "not in this model"
                raise ModelFileError(f"parameter {where}", path=str(self.path), key=key)
            if want[key] != have[key]:
                raise ModelFileError(f"parameter shape {have[key]}, the model built from the "
                                     f"sidecar needs {want[key]}", path=str(self.path), key=key)
        return flax.serialization.from_state_dict(template, self.state)


def paths_of(path: str | Path) -> tuple[Path, Path]:
    """(parameters, sidecar) for either file's path."""
    path = Path(path)
    if path.suffix == SIDECAR_SUFFIX:
        return path.with_suffix(PARAMS_SUFFIX), path
    return path, path.with_suffix(SIDECAR_SUFFIX)


def _require(doc: dict[str, Any], key: str, kind: type, sidecar: Path,
             parent: str | None = None) -> Any:
    where = f"{parent}.{key}" if parent else key
    if key not in doc:
        raise ModelFileError("missing", path=str(sidecar), key=where)
    if not isinstance(doc[key], kind):
        raise ModelFileError(f"expected {kind.__name__}, found {type(doc[key]).__name__}",
                             path=str(sidecar), key=where)
    return doc[key]


def _dataclass_of(cls: type, doc: dict[str, Any], key: str, sidecar: Path) -> Any:
    """``cls(**doc)`` when every field is known, has its default's type and passes the
    record's own checks; a key renamed since (:data:`RENAMED`) is read as its field."""
    renamed = RENAMED.get(key, {})
    for old, new in renamed.items():
        if old in doc and new in doc:
            raise ModelFileError(f"both {old!r} (the old name) and {new!r}", path=str(sidecar),
                                 key=f"{key}.{new}")
    doc = {renamed.get(name, name): value for name, value in doc.items()}
    fields = {f.name: f for f in dataclasses.fields(cls)}
    for name, value in doc.items():
        if name not in fields:
            raise ModelFileError(f"unknown field {name!r} (written by a newer tgt?)",
                                 path=str(sidecar), key=f"{key}.{name}")
        default = fields[name].default
        expected = float if isinstance(default, float) else type(default)
        fits = isinstance(value, expected) and (expected is bool or not isinstance(value, bool))
        if default is not None and default is not dataclasses.MISSING and not (
                fits or (expected is float and isinstance(value, int))):
            raise ModelFileError(f"expected {expected.__name__}, found {value!r}",
                                 path=str(sidecar), key=f"{key}.{name}")
    try:
        return cls(**doc)
    except ValueError as exc:   # out of range or not a choice (option_info.check_values)
        raise ModelFileError(str(exc), path=str(sidecar), key=key) from None


def _read_sidecar(sidecar: Path) -> dict[str, Any]:
    try:
        doc = json.loads(sidecar.read_text())
    except FileNotFoundError:
        raise ModelFileError("no model sidecar (the .json written beside the .msgpack "
                             "parameters by `tgt baseline`)", path=str(sidecar)) from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ModelFileError(f"unreadable sidecar: {exc}", path=str(sidecar)) from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise ModelFileError(f"not a tgt baseline model sidecar (expected {FORMAT!r})",
                             path=str(sidecar), key="format")
    version = doc.get("format_version")
    if not isinstance(version, int) or version > FORMAT_VERSION:
        raise ModelFileError(f"format version {version!r}; this tgt reads up to "
                             f"{FORMAT_VERSION}", path=str(sidecar), key="format_version")
    return doc


def _check_widths(doc: dict[str, Any], kind: str, sidecar: Path) -> None:
    widths = _require(doc, "widths", dict, sidecar)
    expected = format_widths(kind, int(widths.get("extra_features", 0)))
    for name, value in expected.items():
        if widths.get(name) != value:
            raise ModelFileError(f"{widths.get(name)!r}, this tgt's {kind} format has {value}",
                                 path=str(sidecar), key=f"widths.{name}")


def _read_params(params: Path, digest: str) -> dict[str, Any]:
    try:
        data = params.read_bytes()
    except OSError as exc:
        raise ModelFileError(f"cannot read the parameters: {exc.strerror or exc}",
                             path=str(params)) from None
    if hashlib.sha256(data).hexdigest() != digest:
        raise ModelFileError("sha256 differs from the sidecar's params_sha256: the file is "
                             "corrupt or belongs to another sidecar", path=str(params))
    try:
        state = flax.serialization.msgpack_restore(data)
    except Exception as exc:  # msgpack raises several unrelated types on bad bytes
        raise ModelFileError(f"not flax msgpack parameters: {exc}", path=str(params)) from None
    if not isinstance(state, dict):
        raise ModelFileError("not a parameter tree", path=str(params))
    return state


def load_model(path: str | Path) -> LoadedModel:
    """Read and check a saved model (either file's path); ModelFileError names what is wrong."""
    params, sidecar = paths_of(path)
    doc = _read_sidecar(sidecar)
    kind = _require(doc, "kind", str, sidecar)
    if kind not in KINDS:
        raise ModelFileError(f"unknown collection kind {kind!r} (have {', '.join(KINDS)})",
                             path=str(sidecar), key="kind")
    _check_widths(doc, kind, sidecar)
    model_doc = _require(doc, "model", dict, sidecar)
    model = _dataclass_of(ModelConfig, model_doc, "model", sidecar)
    if model.kind != kind:
        raise ModelFileError(f"{model.kind!r} differs from kind {kind!r}", path=str(sidecar),
                             key="model.kind")
    options = _require(doc, "options", dict, sidecar)
    train = _dataclass_of(TrainConfig, _require(options, "train", dict, sidecar, "options"),
                          "options.train", sidecar)
    prepare = _dataclass_of(PrepareOptions,
                            _require(options, "prepare", dict, sidecar, "options"),
                            "options.prepare", sidecar)
    norm = _require(doc, "normalisation", dict, sidecar)
    try:
        stats = FeatureStats(_normalizer_of(norm["node"]), _normalizer_of(norm["extra"]),
                             _normalizer_of(norm["tile_config"]), bool(norm["pad_minus_one"]),
                             bool(norm.get("mismatch_features", False)),
                             bool(norm.get("default_slots", False)))
    except (KeyError, TypeError, ValueError, IndexError) as exc:
        raise ModelFileError(f"unreadable statistics ({type(exc).__name__}: {exc})",
                             path=str(sidecar), key="normalisation") from None
    if stats.node.lo.size != NUM_NODE_FEATURES:
        raise ModelFileError(f"{stats.node.lo.size} node feature columns, this tgt's format "
                             f"has {NUM_NODE_FEATURES}", path=str(sidecar),
                             key="normalisation.node.width")
    state = _read_params(params, _require(doc, "params_sha256", str, sidecar))
    return LoadedModel(params, sidecar, doc, model, train, prepare, options, stats, state)
