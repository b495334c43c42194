"""``tgt import --tuning-data``: the official raw tuning protos (tuning.proto) → a dataset.

The hand-made files are written with a descriptor built here from tuning.proto's field numbers
(independently of the importer's own), with real HloModuleProtos of tiny jax programs and
fields the importer does not declare (ExecutionProfile.compile_time_ms, ...), so the decoder is
tested without the official files too. The official test files (``data/tpu_tuning``, gzipped
as the README there says) give the counts an independent reading found.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner
from google.protobuf import (  # type: ignore[import-untyped]
    descriptor_pb2,
    descriptor_pool,
    message_factory,
)

from tpugraphs_tools.cli import main
from tpugraphs_tools.configs import bounds_features
from tpugraphs_tools.errors import TuningDataError
from tpugraphs_tools.publish import decode_tuning_file, export_tpugraphs, import_tuning_data
from tpugraphs_tools.store import Dataset
from tpugraphs_tools.validate import validate_path

OFFICIAL = Path(__file__).resolve().parent / "data" / "tpu_tuning"  # the upstream files, gzipped

# tuning.proto as written upstream (package tpu_graphs), plus xla's ExecutionProfile and a
# stand-in HloModuleProto message holding just its name: (name, number, type, label, type_name)
_T = descriptor_pb2.FieldDescriptorProto
_OPT, _REP = _T.LABEL_OPTIONAL, _T.LABEL_REPEATED
_PROTO = {
    "TuningData": [("modules", 1, _T.TYPE_MESSAGE, _REP, "ModuleTuningData")],
    "ModuleTuningData": [("module", 1, _T.TYPE_BYTES, _OPT, None),
                         ("fingerprint", 2, _T.TYPE_UINT64, _OPT, None),
                         ("runs", 3, _T.TYPE_MESSAGE, _REP, "ConfigProfile"),
                         ("config_index_to_node", 4, _T.TYPE_UINT64, _REP, None)],
    "ConfigProfile": [("op_config", 1, _T.TYPE_MESSAGE, _OPT, "HloOpConfig"),
                      ("module_config", 2, _T.TYPE_MESSAGE, _OPT, "HloModuleConfig"),
                      ("error", 3, _T.TYPE_BOOL, _OPT, None),
                      ("profile", 4, _T.TYPE_MESSAGE, _OPT, "ExecutionProfile"),
                      ("is_default", 5, _T.TYPE_BOOL, _OPT, None)],
    "HloOpConfig": [("tile_size_config", 1, _T.TYPE_MESSAGE, _OPT, "TileSizeConfig")],
    "TileSizeConfig": [("kernel_bounds", 1, _T.TYPE_INT64, _REP, None),
                       ("output_bounds", 2, _T.TYPE_INT64, _REP, None),
                       ("input_bounds", 3, _T.TYPE_INT64, _REP, None),
                       ("iteration_bounds", 4, _T.TYPE_INT64, _REP, None)],
    "HloModuleConfig": [("layout_config", 1, _T.TYPE_MESSAGE, _OPT, "LayoutConfig")],
    "LayoutConfig": [("nodes", 1, _T.TYPE_MESSAGE, _REP, "Node")],
    "Node": [("tensors", 1, _T.TYPE_MESSAGE, _REP, "Tensor")],
    "Tensor": [("dims", 1, _T.TYPE_INT32, _REP, None)],
    "ExecutionProfile": [("compilation_cache_hit", 1, _T.TYPE_BOOL, _OPT, None),
                         ("compile_time_ms", 2, _T.TYPE_INT64, _OPT, None),
                         ("compute_time_ns", 4, _T.TYPE_INT64, _OPT, None),
                         ("compute_and_transfer_time_ns", 5, _T.TYPE_INT64, _OPT, None)],
}


def _classes() -> dict[str, Any]:
    fd = descriptor_pb2.FileDescriptorProto(name="test_tuning.proto", package="tpu_graphs",
                                            syntax="proto3")
    for name, fields in _PROTO.items():
        msg = fd.message_type.add(name=name)
        for fname, number, ftype, label, tname in fields:
            f = msg.field.add(name=fname, number=number, type=ftype, label=label)
            if tname:
                f.type_name = f".tpu_graphs.{tname}"
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fd)
    return {n: message_factory.GetMessageClass(pool.FindMessageTypeByName(f"tpu_graphs.{n}"))
            for n in _PROTO}


P = _classes()


def _lowered(fn: Any, *shapes: tuple[int, ...]) -> tuple[bytes, list[int]]:
    """(HloModuleProto bytes, tgt's configurable node ids) of a tiny jax program."""
    import jax
    import jax.numpy as jnp

    from tpugraphs_tools._xla_compat import lowered_hlo_proto
    from tpugraphs_tools.features import featurize
    from tpugraphs_tools.hlo import from_lowered

    lowered = jax.jit(fn).lower(*(jnp.zeros(s, jnp.float32) for s in shapes))
    graph = featurize(from_lowered(lowered, "t").module)
    return lowered_hlo_proto(lowered), graph.node_config_ids.tolist()


def _run(ns: int | None, *, default: bool = False, error: bool = False) -> Any:
    run = P["ConfigProfile"](is_default=default, error=error)
    run.profile.compile_time_ms = 7  # a field the importer does not declare
    if ns is not None:
        run.profile.compute_time_ns = ns
    return run


def _layout_run(ns: int | None, dims: list[list[list[int]]], **kw: Any) -> Any:
    run = _run(ns, **kw)
    for node in dims:
        n = run.module_config.layout_config.nodes.add()
        for tensor in node:
            n.tensors.add().dims.extend(tensor)
    return run


def _tile_run(ns: int | None, kernel: list[int], output: list[int], **kw: Any) -> Any:
    run = _run(ns, **kw)
    run.op_config.tile_size_config.kernel_bounds.extend(kernel)
    run.op_config.tile_size_config.output_bounds.extend(output)
    run.op_config.tile_size_config.iteration_bounds.extend([9])
    return run


@pytest.fixture(scope="module")
def layout_pb(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[int]]:
    """A ModuleTuningData: a dot + reshape program, 2 timed runs (one default), 1 error run."""
    proto, ids = _lowered(lambda a, b: (a @ b).reshape(-1), (4, 8), (8, 2))
    assert len(ids) >= 1
    msg = P["ModuleTuningData"](module=proto, fingerprint=2**63 + 5,
                                config_index_to_node=ids)
    pick = [[[1, 0], [0, 1]] if i == 0 else [[0]] for i in range(len(ids))]
    other = [[[0, 1], [1, 0], [1, 0]] if i == 0 else [] for i in range(len(ids))]
    msg.runs.extend([_layout_run(1000, pick, default=True), _layout_run(None, other, error=True),
                     _layout_run(800, other)])
    path = tmp_path_factory.mktemp("tuning") / "layout.pb"
    path.write_bytes(msg.SerializeToString())
    return path, ids


@pytest.fixture(scope="module")
def tile_pb(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A TuningData: one kernel with 2 timed runs and 2 untimed ones, one without a default,
    one without runs, one whose run has no tile_size_config."""
    import jax.numpy as jnp

    proto_a, _ = _lowered(lambda a, b: jnp.tanh(a * b), (8, 4), (8, 4))
    proto_b, _ = _lowered(lambda a: a.sum(axis=0), (16, 4))
    good = P["ModuleTuningData"](module=proto_a, fingerprint=11)
    good.runs.extend([_tile_run(500, [], [2, 26, 4, 2], default=True),
                      _tile_run(400, [3, 1, 24, 3, 2, 2, 5], [12, 4]),
                      _tile_run(0, [1], [1], error=True),
                      _tile_run(1, [1], [1, 1])])   # 1 ns: not timed (official tile reader)
    no_default = P["ModuleTuningData"](module=proto_b, fingerprint=12)
    no_default.runs.extend([_tile_run(300, [], [4]), _tile_run(200, [], [2])])
    empty = P["ModuleTuningData"](module=proto_b, fingerprint=13)
    bare = P["ModuleTuningData"](module=proto_b, fingerprint=14)
    bare.runs.extend([_run(300, default=True), _tile_run(200, [], [2])])
    bare.runs[0].op_config.SetInParent()  # an op_config without its tile_size_config
    path = tmp_path_factory.mktemp("tuning") / "tiles.pb"
    path.write_bytes(P["TuningData"](modules=[good, no_default, empty, bare])
                     .SerializeToString())
    return path


def test_tile_features_follow_the_official_encoder() -> None:
    feat = bounds_features([3, 1, 24, 3, 2, 2, 5], [2, 26, 4, 2], [])
    assert feat.dtype == np.float32 and feat.shape == (24,)
    # six leading values, then sum and product of all seven
    assert feat[:8].tolist() == [3, 1, 24, 3, 2, 2, 40, 3 * 24 * 3 * 2 * 2 * 5]
    assert feat[8:16].tolist() == [2, 26, 4, 2, 0, 0, 34, 416]
    assert feat[16:].tolist() == [0] * 8  # an empty group: product 0, not 1


def test_decoder_tells_the_two_messages_apart(layout_pb: tuple[Path, list[int]],
                                              tile_pb: Path) -> None:
    layout = decode_tuning_file(layout_pb[0])
    assert layout.message == "ModuleTuningData" and len(layout.modules) == 1
    module = layout.modules[0]
    assert module.fingerprint == 2**63 + 5 and list(module.config_index_to_node) == layout_pb[1]
    assert [r.profile.compute_time_ns for r in module.runs] == [1000, 0, 800]
    assert [r.error for r in module.runs] == [False, True, False]
    tiles = decode_tuning_file(tile_pb)
    assert tiles.message == "TuningData" and len(tiles.modules) == 4
    bounds = tiles.modules[0].runs[1].op_config.tile_size_config
    assert list(bounds.kernel_bounds) == [3, 1, 24, 3, 2, 2, 5]


def test_layout_file_imports(layout_pb: tuple[Path, list[int]], tmp_path: Path) -> None:
    path, ids = layout_pb
    result = import_tuning_data([path], tmp_path / "ds")
    assert (result.graphs, result.configs, result.timed, result.failed) == (1, 3, 2, 1)
    assert list(result.config_nodes.values()) == [(len(ids), len(ids))]
    ds = Dataset.open(tmp_path / "ds")
    row = ds.graphs().row(0, named=True)
    assert (row["collection"], row["backend"], row["source"]) == ("layout", "tpu", "tpugraphs")
    args = json.loads(row["program_args"])
    assert args["module_fingerprint"] == str(2**63 + 5) and args["tuning_file"] == "layout.pb"
    assert (ds.root / row["hlo_file"]).read_bytes() == decode_tuning_file(path).modules[0].module
    arrays = ds.load_arrays(row["graph_id"])
    assert arrays["node_config_ids"].tolist() == ids
    assert arrays["config_runtime"].dtype == np.int64
    assert arrays["config_runtime"].tolist() == [1000, 800]
    feat = arrays["node_config_feat"]
    assert feat.shape == (2, len(ids), 18)
    assert feat[0, 0].tolist() == [1, 0, -1, -1, -1, -1, 0, 1] + [-1] * 10
    assert feat[1, 0].tolist() == [0, 1, -1, -1, -1, -1, 1, 0, -1, -1, -1, -1, 1, 0] + [-1] * 4
    configs = ds.configs().sort("config_index").to_dicts()
    assert [c["status"] for c in configs] == ["ok", "runtime_error", "ok"]
    assert [c["npz_row"] for c in configs] == [0, None, 1]
    assert [c["is_default"] for c in configs] == [True, False, False]
    assert [c["default_runtime_ns"] for c in configs] == [1000] * 3
    assert configs[2]["relative_to_default"] == pytest.approx(0.8)
    assert "error" in configs[1]["error_message"]
    assert not [f for f in validate_path(tmp_path / "ds").findings if f.severity == "error"]


def test_tile_file_imports(tile_pb: Path, tmp_path: Path) -> None:
    result = import_tuning_data([tile_pb], tmp_path / "ds")
    assert (result.graphs, result.configs, result.timed, result.failed) == (1, 4, 2, 2)
    assert any("modules[1]" in w and "is_default" in w for w in result.warnings)
    assert any("modules[2]" in w and "no runs" in w for w in result.warnings)
    assert any("modules[3]" in w and "no tile_size_config" in w for w in result.warnings)
    ds = Dataset.open(tmp_path / "ds")
    row = ds.graphs().row(0, named=True)
    assert (row["collection"], row["hlo_stage"], row["num_configurable"]) == (
        "tile", "optimized", 0)
    arrays = ds.load_arrays(row["graph_id"])
    assert "node_config_ids" not in arrays
    assert arrays["config_runtime"].tolist() == [500, 400]
    assert arrays["config_runtime_normalizers"].tolist() == [500, 500]
    assert arrays["config_feat"][0].tolist() == bounds_features([], [2, 26, 4, 2], []).tolist()
    configs = ds.configs().sort("config_index").to_dicts()
    assert [c["status"] for c in configs] == ["ok", "ok", "runtime_error", "runtime_error"]
    assert json.loads(configs[1]["config"])["iteration_bounds"] == [9]
    assert not [f for f in validate_path(tmp_path / "ds").findings if f.severity == "error"]


def _damaged(layout: bytes, tiles: bytes) -> dict[str, tuple[bytes, str]]:
    """name → (bytes, what the one-line error must say)."""
    bad_run = layout + b"\x1a\x03\xff\xff\xff"  # a runs entry that is no ConfigProfile
    return {
        "layout_truncated": (layout[: len(layout) // 2], "truncated"),
        "tiles_truncated": (tiles[:-7], "truncated"),
        "bad_run": (bad_run, "runs[3] (tpu_graphs.ConfigProfile) does not parse"),
        # a TuningData whose second entry is a length-delimited blob of noise
        "bad_module": (tiles + b"\x0a\x04\xff\xff\xff\xff",
                       "TuningData.modules[4] (tpu_graphs.ModuleTuningData) is damaged"),
        "garbage": (bytes(np.random.default_rng(0).integers(0, 256, 4000, dtype=np.uint8)),
                    "tpu_graphs.ModuleTuningData or tpu_graphs.TuningData"),
        "text": (b"runs { error: true }\n", "not a tpu_graphs.ModuleTuningData"),
        "empty": (b"", "empty file"),
    }


def test_damaged_files_are_refused_and_nothing_is_written(
        layout_pb: tuple[Path, list[int]], tile_pb: Path, tmp_path: Path) -> None:
    cases = _damaged(layout_pb[0].read_bytes(), tile_pb.read_bytes())
    out = tmp_path / "out"
    for name, (data, says) in cases.items():
        bad = tmp_path / f"{name}.pb"
        bad.write_bytes(data)
        res = CliRunner().invoke(main, ["import", "--tuning-data", str(layout_pb[0]), str(bad),
                                        "--out", str(out)])
        assert res.exit_code == 1, (name, res.output)
        message = res.output.strip()
        assert len(message.splitlines()) == 1 and str(bad) in message and says in message, \
            (name, message)
        assert sorted(p.name for p in tmp_path.iterdir() if not p.name.endswith(".pb")) == []
    with pytest.raises(TuningDataError, match="truncated"):
        decode_tuning_file(tmp_path / "tiles_truncated.pb")
    (tmp_path / "nothing").mkdir()
    with pytest.raises(TuningDataError, match=r"holds no \*\.pb"):
        import_tuning_data([tmp_path / "nothing"], out)
    with pytest.raises(TuningDataError, match="no such file"):
        import_tuning_data([tmp_path / "missing.pb"], out)
    assert not out.exists()


def test_modules_that_do_not_fit_are_refused(layout_pb: tuple[Path, list[int]],
                                                tmp_path: Path) -> None:
    msg = P["ModuleTuningData"]()
    msg.ParseFromString(layout_pb[0].read_bytes())
    del msg.config_index_to_node[:]
    msg.config_index_to_node.extend([i + 1 for i in layout_pb[1]])
    bad = tmp_path / "shifted.pb"
    bad.write_bytes(msg.SerializeToString())
    with pytest.raises(TuningDataError, match=r"config_index_to_node .* differs"):
        import_tuning_data([bad], tmp_path / "out")
    assert not (tmp_path / "out").exists()
    msg.ParseFromString(layout_pb[0].read_bytes())
    msg.runs.append(_layout_run(None, [[]] * (len(layout_pb[1]) + 1), error=True))
    bad = tmp_path / "extra_node.pb"
    bad.write_bytes(msg.SerializeToString())
    with pytest.raises(TuningDataError, match=r"runs\[3\]: layout_config has \d+ nodes"):
        import_tuning_data([bad], tmp_path / "out")
    msg.ParseFromString(layout_pb[0].read_bytes())
    msg.module = b"\x0a\x03abc\x1a\x02\xff\xff"  # a name, then a computation of noise
    bad = tmp_path / "bad_module.pb"
    bad.write_bytes(msg.SerializeToString())
    with pytest.raises(TuningDataError, match=r"module \(xla.HloModuleProto\) cannot be read"):
        import_tuning_data([bad], tmp_path / "out")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad_module.pb", "extra_node.pb",
                                                          "shifted.pb"]


def official_files(folder: Path) -> Path:
    """The official test files unpacked into ``folder``, under their upstream names."""
    folder.mkdir()
    for packed in sorted(OFFICIAL.glob("*.pb.gz")):
        (folder / packed.name.removesuffix(".gz")).write_bytes(gzip.decompress(packed.read_bytes()))
    return folder


def test_official_test_files_import_export_and_load(tmp_path: Path) -> None:
    official = official_files(tmp_path / "official")
    result = import_tuning_data([official], tmp_path / "ds", jobs=2)  # a folder: its *.pb
    assert result.warnings == []
    assert list(result.config_nodes.values()) == [(62, 62)]
    assert {Path(f).name: (s.message, s.modules, s.graphs, s.timed, s.failed)
            for f, s in result.files.items()} == {
        "module_tuning_data_layout.pb": ("tpu_graphs.ModuleTuningData", 1, 1, 112, 10),
        "op_tuning_data.pb": ("tpu_graphs.TuningData", 15, 15, 752, 2)}
    ds = Dataset.open(tmp_path / "ds")
    graphs = ds.graphs()
    configs = ds.configs()
    by_kind = {}
    for kind in ("layout", "tile"):
        ids = graphs.filter(graphs["collection"] == kind)["graph_id"]
        rows = configs.filter(configs["graph_id"].is_in(ids.implode()))
        by_kind[kind] = (ids.len(), int((rows["status"] == "ok").sum()),
                         int((rows["status"] != "ok").sum()))
    assert by_kind == {"layout": (1, 112, 10), "tile": (15, 752, 2)}
    layout_id = graphs.filter(graphs["collection"] == "layout")["graph_id"][0]
    assert ds.graph_row(layout_id)["num_nodes"] == 3163
    assert int(configs.filter(configs["is_default"])["graph_id"].n_unique()) == 16
    # The TPU autotuner's layouts list only the minor-most dims (e.g. [4, 0] on a rank-5
    # tensor): valid TpuGraphs data. One warning is in the data (reshape.37: equal empty
    # bounds timed differently).
    findings = validate_path(tmp_path / "ds").findings
    assert [f.check for f in findings] == ["values.duplicate_config_conflict"], findings
    export_tpugraphs(tmp_path / "ds", tmp_path / "tree")
    assert [f.check for f in validate_path(tmp_path / "tree").findings] == [
        "values.duplicate_config_conflict"]
    _read_like_the_official_loaders(tmp_path / "tree")


def _read_like_the_official_loaders(tree: Path) -> None:
    """What tpu_graphs' baselines (layout/data.py, tiles/data.py) and the Kaggle notebooks
    assume of each file: its keys, widths and per-config lengths."""
    layout_keys = {"node_feat", "node_opcode", "edge_index", "node_config_feat",
                   "node_config_ids", "node_splits", "config_runtime"}
    tile_keys = {"node_feat", "node_opcode", "edge_index", "config_feat", "config_runtime",
                 "config_runtime_normalizers"}
    files = sorted(tree.glob("npz/*/xla/**/*.npz"))
    assert len(files) == 16
    for path in files:
        with np.load(path, allow_pickle=False) as npz:
            data = dict(npz.items())
        n = data["node_opcode"].shape[0]
        assert data["node_feat"].shape == (n, 140) and data["edge_index"].max() < n
        if "/layout/" in path.as_posix():
            assert set(data) == layout_keys
            c, nc, width = data["node_config_feat"].shape
            assert (width, c, nc) == (18, data["config_runtime"].shape[0],
                                      data["node_config_ids"].shape[0])
            assert data["node_splits"].reshape(-1)[0] == 0
        else:
            assert set(data) == tile_keys
            c = data["config_feat"].shape[0]
            assert data["config_feat"].shape[1] == 24
            assert c == data["config_runtime"].shape[0] == data["config_runtime_normalizers"].shape[0]
            assert (data["config_runtime"] / data["config_runtime_normalizers"]).min() > 0
