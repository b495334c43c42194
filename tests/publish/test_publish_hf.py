"""``tgt publish`` output read back by HF datasets, polars, duckdb and mlcroissant, offline."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from tpugraphs_tools.cli import main
from tpugraphs_tools.publish import publish_dataset
from tpugraphs_tools.store import Dataset

SHARD = re.compile(r"^(graphs|configs)/tiny-graphs-(train|valid|test)-(\d{5})-of-(\d{5})\.parquet$")


@pytest.fixture(scope="module")
def published(source_dataset: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("publish") / "pub"
    publish_dataset(source_dataset, out, name="Tiny Graphs", license="cc-by-4.0")
    return out


@pytest.fixture
def hf_datasets(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_network: None):
    """``datasets`` with offline mode on and a fresh cache, so nothing can be fetched."""
    for key, value in (("HF_DATASETS_OFFLINE", "1"), ("HF_HUB_OFFLINE", "1"),
                       ("HF_HOME", str(tmp_path / "hf")),
                       ("HF_DATASETS_CACHE", str(tmp_path / "hf-cache"))):
        monkeypatch.setenv(key, value)
    datasets = pytest.importorskip("datasets")
    monkeypatch.setattr(datasets.config, "HF_DATASETS_OFFLINE", True, raising=False)
    monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", True, raising=False)
    datasets.disable_progress_bars()
    return datasets


def test_network_guard_blocks_outside_hosts(no_network: None):
    import socket

    with socket.socket() as sock, pytest.raises(OSError, match="must stay offline"):
        sock.connect(("198.51.100.7", 443))


def test_card_yaml_writer_quotes_anything():
    yaml = pytest.importorskip("yaml")
    from tpugraphs_tools.publish.hub.yaml import dump

    value = {"license": 'a: "b" # c\n', "n": 3, "ok": True, "none": None, "empty": [],
             "items": [{"name": "x", "list": {"list": "float32", "length": 140}}, "ünï"]}
    assert yaml.safe_load(dump(value)) == value


def _front_matter(card: str) -> dict:
    yaml = pytest.importorskip("yaml")
    head = card.split("---\n")[1]
    return yaml.safe_load(head)


def _shards(pub: Path) -> list[str]:
    return sorted(p.relative_to(pub).as_posix() for p in pub.rglob("*.parquet"))


def test_layout_names_and_checksums(published: Path):
    names = sorted(p.relative_to(published).as_posix() for p in published.rglob("*")
                   if p.is_file())
    shards = _shards(published)
    assert set(names) - set(shards) == {"README.md", "croissant.json", "SHA256SUMS"}
    for rel in shards:
        match = SHARD.match(rel)
        assert match, rel
        assert int(match[3]) < int(match[4])
    sums = dict(reversed(line.split("  ", 1)) for line in
                (published / "SHA256SUMS").read_text().splitlines())
    assert sorted(sums) == sorted(set(names) - {"SHA256SUMS"})
    for rel, digest in sums.items():
        assert hashlib.sha256((published / rel).read_bytes()).hexdigest() == digest
    if shutil.which("sha256sum"):
        subprocess.run(["sha256sum", "--quiet", "-c", "SHA256SUMS"], cwd=published, check=True)


def test_hf_datasets_loads_shards_and_card(published: Path, source_dataset: Path,
                                           hf_datasets, tmp_path: Path):
    ds = Dataset.open(source_dataset)
    graphs = hf_datasets.load_dataset("parquet", data_dir=str(published / "graphs"),
                                      cache_dir=str(tmp_path / "c1"))
    assert sorted(graphs) == ["test", "train", "validation"]
    assert sum(graphs[s].num_rows for s in graphs) == ds.graphs().height
    feature = graphs["train"].features["node_feat"]
    assert "float32" in repr(feature) and "140" in repr(feature)
    for row in graphs["train"]:
        arrays = ds.load_arrays(row["graph_id"])
        assert np.array_equal(np.asarray(row["node_feat"], np.float32), arrays["node_feat"])
        assert np.array_equal(np.asarray(row["edge_index"], np.int64), arrays["edge_index"])
        assert np.array_equal(np.asarray(row["node_opcode"], np.uint8), arrays["node_opcode"])
    configs = hf_datasets.load_dataset(str(published), "configs", cache_dir=str(tmp_path / "c2"))
    assert sum(configs[s].num_rows for s in configs) == ds.configs().height
    by_card = hf_datasets.load_dataset(str(published), "graphs", cache_dir=str(tmp_path / "c3"))
    assert {s: by_card[s].num_rows for s in by_card} == {s: graphs[s].num_rows for s in graphs}
    # The card's YAML features are exactly what datasets infers from the Parquet schema.
    info = _front_matter((published / "README.md").read_text())["dataset_info"]
    for entry in info:
        shard = next((published / entry["config_name"]).glob("*.parquet"))
        inferred = hf_datasets.Features.from_arrow_schema(pq.read_schema(shard))
        assert hf_datasets.Features._from_yaml_list(entry["features"]) == inferred


def test_polars_and_duckdb_read_arrays_without_npz(published: Path, source_dataset: Path):
    ds = Dataset.open(source_dataset)
    configs = pl.read_parquet(published / "configs" / "*.parquet")
    assert configs.height == ds.configs().height
    for row in configs.filter(pl.col("status") == "ok").iter_rows(named=True):
        arrays = ds.load_arrays(row["graph_id"])
        assert row["config_runtime"] == arrays["config_runtime"][row["npz_row"]]
        if row["collection"] == "layout":
            got = np.asarray(row["node_config_feat"], np.float32)
            assert np.array_equal(got, arrays["node_config_feat"][row["npz_row"]])
            assert row["config_feat"] is None
        else:
            assert np.array_equal(np.asarray(row["config_feat"], np.float32),
                                  arrays["config_feat"][row["npz_row"]])
    failed = configs.filter(pl.col("status") != "ok")
    assert failed.height and failed["node_config_feat"].null_count() == failed.height
    duckdb = pytest.importorskip("duckdb")
    con = duckdb.connect()
    sizes = con.sql(f"SELECT graph_id, len(node_feat), num_nodes, len(edge_index), num_edges "
                    f"FROM '{published}/graphs/*.parquet'").fetchall()
    assert len(sizes) == ds.graphs().height
    assert all(r[1] == r[2] and r[3] == r[4] for r in sizes)
    status = dict(con.sql(f"SELECT status, count(*) FROM '{published}/configs/*.parquet' "
                          "GROUP BY status").fetchall())
    assert status == dict(ds.configs().group_by("status").len().iter_rows())


def test_card_yaml_and_collection_facts(published: Path, source_dataset: Path):
    card = (published / "README.md").read_text()
    meta = _front_matter(card)
    assert meta["license"] == "cc-by-4.0"
    configs = {c["config_name"]: c for c in meta["configs"]}
    assert configs["graphs"]["default"] is True
    assert {f["split"] for f in configs["graphs"]["data_files"]} == {"train", "validation",
                                                                      "test"}
    info = {e["config_name"]: e for e in meta["dataset_info"]}
    ds = Dataset.open(source_dataset)
    assert sum(s["num_examples"] for s in info["graphs"]["splits"]) == ds.graphs().height
    assert sum(s["num_examples"] for s in info["configs"]["splits"]) == ds.configs().height
    assert info["graphs"]["download_size"] == sum(
        p.stat().st_size for p in (published / "graphs").glob("*.parquet"))
    node_feat = next(f for f in info["graphs"]["features"] if f["name"] == "node_feat")
    assert node_feat == {"name": "node_feat", "list": {"list": "float32", "length": 140}}
    text = " ".join(card.split())
    assert f"JAX** {ds.manifest['jax_version']}" in text
    assert "cpu / cpu" in text and "Timing method" in text and "compile_error" in text


@pytest.mark.filterwarnings("ignore::DeprecationWarning",  # rdflib / pandas inside mlcroissant
                            "ignore:The inplace keyword")
def test_croissant_validates_and_iterates_offline(published: Path, source_dataset: Path,
                                                  no_network: None):
    mlc = pytest.importorskip("mlcroissant")
    doc = json.loads((published / "croissant.json").read_text())
    assert doc["conformsTo"] == "http://mlcommons.org/croissant/1.1"
    for item in doc["distribution"]:
        if item["@type"] == "cr:FileObject":
            data = (published / item["contentUrl"]).read_bytes()
            assert item["sha256"] == hashlib.sha256(data).hexdigest()
            assert item["contentSize"] == f"{len(data)} B"
    dataset = mlc.Dataset(jsonld=published / "croissant.json")
    ds = Dataset.open(source_dataset)
    graphs = list(dataset.records(record_set="graphs"))
    assert len(graphs) == ds.graphs().height
    for record in graphs:
        gid = record["graphs/graph_id"]
        gid = gid.decode() if isinstance(gid, bytes) else gid
        arrays = ds.load_arrays(gid)
        assert np.array_equal(np.asarray(record["graphs/node_feat"], np.float32),
                              arrays["node_feat"])
    assert sum(1 for _ in dataset.records(record_set="configs")) == ds.configs().height


def test_shards_split_at_the_size_cap(source_dataset: Path, tmp_path: Path):
    out = tmp_path / "pub"
    result = publish_dataset(source_dataset, out, name="tiny-graphs", max_shard_bytes=8_000)
    train = [s for s in result.shards if s.table == "configs" and s.split == "train"]
    assert len(train) > 1
    assert [s.rel.rsplit("-", 3)[-3:] for s in train] == [
        [f"{i:05d}", "of", f"{len(train):05d}.parquet"] for i in range(len(train))]
    assert pl.read_parquet(out / "configs" / "*.parquet").height == \
        Dataset.open(source_dataset).configs().height


def test_cli_publish(source_dataset: Path, tmp_path: Path):
    runner = CliRunner()
    args = ["publish", str(source_dataset), "--out", str(tmp_path / "pub"), "--name", "cli",
            "--license", "apache-2.0", "--split-by", "fingerprint", "--seed", "2"]
    res = runner.invoke(main, args)
    assert res.exit_code == 0, res.output
    assert (tmp_path / "pub" / "croissant.json").exists() and "shards" in res.output
    res = runner.invoke(main, args)
    assert res.exit_code == 1 and "not empty" in " ".join(res.output.split())
    assert runner.invoke(main, [*args, "--overwrite"]).exit_code == 0


def test_publish_without_license_warns_once_saying_how_to_set_it(source_dataset: Path,
                                                                 tmp_path: Path):
    """A dataset with no license cannot be reused safely: "unknown" is never written silently."""
    res = CliRunner().invoke(main, ["publish", str(source_dataset), "--out",
                                    str(tmp_path / "pub")])
    assert res.exit_code == 0, res.output
    text = " ".join(res.output.split())  # the terminal may wrap the line
    assert text.count("warning: no --license given") == 1, res.output
    assert text.count("warning:") == 1 and "e.g. --license cc-by-4.0" in text
    assert "license: \"unknown\"" in (tmp_path / "pub" / "README.md").read_text()
    given = publish_dataset(source_dataset, tmp_path / "pub2", license="mit")
    assert not [w for w in given.warnings if "license" in w]


def test_card_says_how_many_cpus_the_timed_rows_could_use(source_dataset: Path):
    """One-core and all-core labels are different measurements: the card counts each."""
    from tpugraphs_tools.publish.hub.card import _collection
    from tpugraphs_tools.publish.hub.info import provenance

    ds = Dataset.open(source_dataset)
    plain = provenance(ds.manifest, ds.graphs(), ds.configs())
    assert plain.timing_cpus == {}
    assert "CPUs the timed runs" not in "\n".join(_collection(plain))
    ok = pl.col("status") == "ok"
    configs = ds.configs().with_columns(
        pl.when(ok & pl.col("is_default")).then(None).when(ok).then(1).otherwise(None)
        .cast(pl.Int64).alias("timing_cpus"))
    timed = configs.filter(pl.col("timing_cpus").is_not_null()).height
    assert timed
    p = provenance(ds.manifest, ds.graphs(), configs)
    assert p.timing_cpus == {"1": timed}
    assert f"all-core labels are different measurements): 1: {timed}." in \
        "\n".join(_collection(p))
