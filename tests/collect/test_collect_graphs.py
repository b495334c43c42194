"""Graph collection from HLO files (graphs only, no measured configs): what lands in the
dataset is exactly the featurized file, under a stable id, and re-collecting is idempotent."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tpugraphs_tools.collect.graphs import collect_hlo_file, collect_source, write_graphs
from tpugraphs_tools.collect.run import CollectItem, CollectRequest, collect
from tpugraphs_tools.errors import HloParseError
from tpugraphs_tools.features import featurize
from tpugraphs_tools.hlo import fingerprint, from_file, parse_hlo_text
from tpugraphs_tools.store import Dataset


def collect_files(out: Path, *paths: Path) -> Dataset:
    collect(CollectRequest(items=[CollectItem(hlo=str(p)) for p in paths], out=str(out)))
    return Dataset.open(out)


def test_collected_hlo_file_stores_its_featurized_arrays(tmp_path: Path, write_file,
                                                         tiny_hlo: str) -> None:
    path = write_file("tiny.hlo", tiny_hlo)
    ds = collect_files(tmp_path / "d", path)
    [row] = ds.graphs().to_dicts()
    src = from_file(path)
    fp = fingerprint(src.module)
    assert row["graph_id"] == f"tiny.{fp[:12]}"
    assert row["fingerprint"] == fp
    assert (row["program"], row["source"], row["hlo_stage"]) == ("tiny", "hlo-text",
                                                                 "unoptimized")
    assert row["source_path"] == path.name  # not this machine's folders (hlo/paths.py)
    assert (row["num_nodes"], row["num_edges"], row["num_configurable"]) == (10, 9, 2)
    stored = ds.load_arrays(row["graph_id"])
    expected = featurize(src.module).arrays()
    for key, value in expected.items():
        assert stored[key].dtype == value.dtype and np.array_equal(stored[key], value), key
    # graph-only npz still carries the layout config keys, with zero configs
    assert stored["node_config_feat"].shape == (0, 2, 18)
    assert stored["node_config_feat"].dtype == np.float32
    assert stored["config_runtime"].shape == (0,) and stored["config_runtime"].dtype == np.int64
    # the raw HLO is kept beside the npz as the file's own text (never a proto XLA would
    # re-serialize with elided constants filled in)
    assert row["hlo_file"] == f"graphs/{row['graph_id']}.hlo.txt"
    assert (ds.root / row["hlo_file"]).read_text() == tiny_hlo
    kept = featurize(from_file(ds.root / row["hlo_file"]).module).arrays()
    assert all(np.array_equal(kept[k], expected[k]) for k in expected)


def test_elided_constants_are_stored_as_the_text_not_a_filled_proto(tmp_path: Path,
                                                                  write_file) -> None:
    text = ("HloModule big\n\nENTRY main {\n  c = f32[512,512]{1,0} constant({...})\n"
            "  x = f32[512,512]{1,0} parameter(0)\n"
            "  ROOT y = f32[512,512]{1,0} add(x, c)\n}\n")
    path = write_file("big.hlo", text)
    ds = collect_files(tmp_path / "d", path)
    [row] = ds.graphs().to_dicts()
    stored = ds.root / row["hlo_file"]
    assert stored.name.endswith(".hlo.txt") and stored.read_text() == text
    assert stored.stat().st_size < 1000  # a filled 512x512 f32 proto would be > 1 MB
    assert ds.hlo_text(row["graph_id"]) == text


def test_datasets_with_a_stored_proto_still_read_back(tmp_path: Path, tiny_hlo: str) -> None:
    """Older collections stored ``.hlo.pb``: Dataset.hlo_text prints it through XLA."""
    from tpugraphs_tools._xla_compat import hlo_bindings

    proto = hlo_bindings().hlo_module_from_text(tiny_hlo).as_serialized_hlo_module_proto()
    src = from_file(write_pb(tmp_path / "tiny.pb", proto))
    ds = Dataset.open(tmp_path / "d", create=True)
    write_graphs(ds, [collect_source(src, program="tiny", program_args={})])
    [row] = Dataset.open(tmp_path / "d").graphs().to_dicts()
    assert row["hlo_file"].endswith(".hlo.pb")
    assert (ds.root / row["hlo_file"]).read_bytes() == proto
    again = featurize(parse_hlo_text(ds.hlo_text(row["graph_id"]))).arrays()
    expected = featurize(src.module).arrays()
    assert all(np.array_equal(again[k], expected[k]) for k in expected)


def write_pb(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def test_recollecting_the_same_file_keeps_one_row(tmp_path: Path, write_file,
                                                  tiny_hlo: str) -> None:
    path = write_file("tiny.hlo", tiny_hlo)
    collect_files(tmp_path / "d", path)
    ds = collect_files(tmp_path / "d", path)
    assert ds.graphs().height == 1
    assert len(list((tmp_path / "d" / "graphs").glob("*.npz"))) == 1


def test_hlo_xla_cannot_parse_is_refused_and_nothing_is_stored(tmp_path: Path,
                                                               write_file) -> None:
    text = ("HloModule future_op\n\nENTRY main {\n  x = f32[4]{0} parameter(0)\n"
            "  ROOT y = f32[4]{0} op-from-the-future(x)\n}\n")
    path = write_file("future.hlo", text)
    with pytest.raises(HloParseError, match="Unknown opcode: op-from-the-future"):
        collect_files(tmp_path / "d", path)
    assert not list((tmp_path / "d").glob("graphs/*"))


def test_two_files_in_one_dataset(tmp_path: Path, write_file, tiny_hlo: str) -> None:
    a = write_file("a.hlo", tiny_hlo)
    b = write_file("b.hlo", tiny_hlo.replace("HloModule tiny", "HloModule other")
                   .replace("f32[8]{0} reshape", "f32[8]{0} copy"))
    ds = Dataset.open(tmp_path / "d", create=True)
    write_graphs(ds, [collect_hlo_file(str(a)), collect_hlo_file(str(b))])
    ids = sorted(Dataset.open(tmp_path / "d").graphs()["graph_id"].to_list())
    assert [i.split(".")[0] for i in ids] == ["other", "tiny"]
    assert ids[0].split(".")[1] != ids[1].split(".")[1]
