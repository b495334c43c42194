"""End to end: `tgt baseline` on synthetic and real-HLO datasets, tile collections, npz trees."""

from __future__ import annotations

import json
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from click.testing import CliRunner

from tpugraphs_tools.baseline import BaselineOptions, PrepareOptions, TrainConfig, run_baseline
from tpugraphs_tools.baseline.report import BaselineReport, CollectionReport, Evaluation
from tpugraphs_tools.baseline.synthetic import tile_graph, write_synthetic_dataset
from tpugraphs_tools.cli import baseline_cmd, main
from tpugraphs_tools.errors import DatasetError
from tpugraphs_tools.features import featurize
from tpugraphs_tools.hlo import fingerprint, from_lowered
from tpugraphs_tools.option_info import options_of
from tpugraphs_tools.store import Dataset, make_graph_id
from tpugraphs_tools.validate import validate_path

SMALL = ["--epochs", "2", "--hidden", "16", "--layers", "1", "--configs-per-graph", "4",
         "--batch-graphs", "2"]


@pytest.fixture(scope="module")
def layout_ds(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("layout") / "ds"
    write_synthetic_dataset(root, programs=4, graphs_per_program=2, nodes=(30, 50), configs=6,
                            label_ci=0.01)
    return root


def test_cli_full_graph_report(layout_ds: Path, tmp_path: Path) -> None:
    report_path = tmp_path / "r.json"
    result = CliRunner().invoke(main, ["baseline", str(layout_ds), *SMALL,
                                       "--report", str(report_path)])
    assert result.exit_code == 0, result.output
    assert "random" in result.output and "fewer-copies" in result.output
    assert "held-out programs" in result.output and "held-out configs" in result.output
    report = json.loads(report_path.read_text())
    assert (tmp_path / "r.md").read_text().startswith("# tgt baseline report")
    assert report["split"]["ratios"] == [0.8, 0.1, 0.1] and report["versions"]["jax"]
    section = report["collections"]["layout"]["evaluations"]["by-program"]
    assert section["split_method"] == "by-program(seed=0, 0.8/0.1/0.1)"
    assert set(section["results"]) == {"valid", "test"}
    test = section["results"]["test"]
    assert set(test) == {"model", "noise-ceiling", "random", "fewer-copies", "non-default-slots",
                         "gbdt"}
    assert 0 < test["noise-ceiling"]["kendall_tau"] <= 1
    assert test["model"]["kendall_tau_of_ceiling"] == pytest.approx(
        np.mean([r["model"]["kendall_tau"] for r in section["per_graph"] if r["split"] == "test"])
        / test["noise-ceiling"]["kendall_tau"])
    assert "optimized HLO" in section["methods"]["fewer-copies"]
    headroom = report["collections"]["layout"]["headroom"]
    assert len(headroom) == 8 and all(h["configs"] == 5 for h in headroom.values())
    assert all(h["fastest_low"] < h["fastest"] < h["fastest_high"] for h in headroom.values())
    surely = sum(1 for h in headroom.values() if h["surely_faster_share"])  # CI below 1
    assert (f"headroom: layout: a config beats the default (95% CI below 1) in {surely}/8 "
            "graphs") in " ".join(result.output.split())  # as `tgt report` counts them
    markdown = (tmp_path / "r.md").read_text()
    assert "*noise-ceiling*" in markdown and "headroom over the default" in markdown
    assert len(section["train"]["loss"]) == 2
    splits_of = {}
    for row in section["per_graph"]:
        splits_of.setdefault(row["program"], set()).add(row["split"])
    assert all(len(s) == 1 for s in splits_of.values())
    within = report["collections"]["layout"]["evaluations"]["within-graph"]
    assert within["graphs"]["test"] == 8 and within["configs"] == {"train": 32, "held_out": 16}
    assert within["results"]["test"]["model"]["kendall_tau_n"] == 8


def test_baseline_split_is_the_export_split(layout_ds: Path, tmp_path: Path) -> None:
    from tpugraphs_tools.publish import export_tpugraphs, parse_tree_path

    report = run_baseline(layout_ds, BaselineOptions(hidden=16, layers=1, holdout="programs",
                                                     train=TrainConfig(epochs=1)))
    rows = report.collections["layout"].evaluations["by-program"].per_graph
    baseline_split = {r.graph_id: r.split for r in rows}
    export_tpugraphs(layout_ds, tmp_path / "tree", seed=0)
    exported = {e.stem: e.split for e in (parse_tree_path(p.relative_to(tmp_path / "tree")
                                                          .as_posix())
                                          for p in (tmp_path / "tree").rglob("*.npz"))}
    assert baseline_split and all(exported[g] == s for g, s in baseline_split.items())


def test_one_program_is_scored_on_held_out_configs_with_the_report_in_data(
        tmp_path: Path) -> None:
    root = tmp_path / "one"
    write_synthetic_dataset(root, programs=1, graphs_per_program=1, nodes=(30, 30), configs=10)
    result = CliRunner().invoke(main, ["baseline", str(root), *SMALL])
    assert result.exit_code == 0, result.output
    assert "held-out configs within each graph" in result.output and "τ" in result.output
    assert "by-program split skipped" in result.output
    report = json.loads((root / "baseline" / "report.json").read_text())
    section = report["collections"]["layout"]
    assert list(section["evaluations"]) == ["within-graph"]
    within = section["evaluations"]["within-graph"]
    assert within["configs"] == {"train": 7, "held_out": 3}
    assert within["results"]["test"]["model"]["kendall_tau_n"] == 1
    assert (root / "baseline" / "report.md").exists()
    assert "baseline/report.json" in Dataset.open(root).manifest["files"]
    assert not validate_path(root).errors


def test_nothing_to_score_exits_1_with_what_to_collect(tmp_path: Path) -> None:
    root = tmp_path / "few"
    write_synthetic_dataset(root, programs=1, graphs_per_program=2, nodes=(30, 30), configs=3)
    result = CliRunner().invoke(main, ["baseline", str(root), *SMALL])
    assert result.exit_code == 1, result.output
    assert "nothing to score" in result.output and "≥ 4 ok configs" in result.output
    assert "tgt collect" in result.output and "Traceback" not in result.output
    assert not (root / "baseline").exists()


def test_cli_gst_with_stored_partition_and_kaggle_options(layout_ds: Path,
                                                          tmp_path: Path) -> None:
    runner = CliRunner()
    assert runner.invoke(main, ["partition", str(layout_ds), "--segments", "3"]).exit_code == 0
    report_path = tmp_path / "gst.json"
    result = runner.invoke(main, [
        "baseline", str(layout_ds), *SMALL, "--gst", "--partition", "metis-3", "--prune",
        "--pad-minus-one", "--cross-config-attention", "--loss", "hinge", "--layer", "gcn",
        "--finetune-epochs", "1", "--report", str(report_path)])
    assert result.exit_code == 0, result.output
    section = json.loads(report_path.read_text())["collections"]["layout"]
    section = section["evaluations"]["by-program"]
    assert section["train"]["segments"] > section["graphs"]["train"]
    assert len(section["train"]["finetune_loss"]) == 1
    assert section["results"]["test"]["model"]["graphs"] >= 1
    missing = runner.invoke(main, ["baseline", str(layout_ds), *SMALL, "--gst",
                                   "--partition", "metis-99"])
    assert missing.exit_code == 1 and "metis-99" in missing.output


def test_tile_collection_from_npz_tree(tmp_path: Path) -> None:
    root = tmp_path / "npz" / "tile" / "xla"
    for split, count in (("train", 4), ("valid", 2), ("test", 2)):
        (root / split).mkdir(parents=True)
        for i in range(count):
            np.savez(root / split / f"k{i}.npz", **tile_graph(hash((split, i)) % 1000, 20, 8))
    opts = BaselineOptions(hidden=16, layers=1, train=TrainConfig(
        epochs=2, configs_per_graph=4, batch_graphs=2))
    report = run_baseline(tmp_path / "npz", opts)
    section = report.collections["tile/xla"]
    assert section.kind == "tile" and section.split_method == "dataset"
    test = section.evaluations["by-program"].results["test"]
    assert set(test) == {"model", "random", "gbdt"}    # a tree marks no default tile
    assert all(-1.0 <= m["kaggle_tile_score"] <= 1.0 for m in test.values())
    assert any("ceiling unknown" in n for n in section.all_notes())
    # tile runtimes are ratios to the default (the stems k0..k3 repeat across splits)
    assert set(section.headroom) == {f"tile/xla/k{i}" for i in range(4)}
    with pytest.raises(DatasetError):
        run_baseline(tmp_path / "npz", BaselineOptions(collection="layout"))


def _programs():
    x = jax.ShapeDtypeStruct((4, 8), jnp.float32)
    w = jax.ShapeDtypeStruct((8, 8), jnp.float32)
    return {
        "mlp": (lambda a, b: jnp.tanh(a @ b) @ b, (x, w)),
        "gram": (lambda a, b: (a @ b).T @ (a @ b), (x, w)),
        "resh": (lambda a, b: (a @ b).reshape(8, 4) @ a, (x, w)),
        "sq": (lambda a, b: jnp.exp(a @ b @ b @ b), (x, w)),
    }


def test_real_hlo_graphs_with_hlo_features(tmp_path: Path) -> None:
    ds = Dataset.open(tmp_path / "real", create=True)
    rng = np.random.default_rng(0)
    with ds.transaction() as tx:
        for name, (fn, args) in _programs().items():
            src = from_lowered(jax.jit(fn).lower(*args), name)
            graph = featurize(src.module)
            nc, c = graph.node_config_ids.size, 6
            cfg = rng.integers(-1, 2, (c, nc, 18)).astype(np.float32)
            runtime = (1000 + 100 * (cfg[:, :, 0] == 0).sum(1) + rng.integers(0, 5, c))
            fp = fingerprint(src.module)
            row = {"graph_id": make_graph_id(name, fp), "collection": "layout",
                   "program": name, "program_args": "{}", "source": "jax",
                   "hlo_stage": "unoptimized", "fingerprint": fp, "backend": "cpu",
                   "num_nodes": graph.num_nodes, "num_edges": int(graph.edge_index.shape[0]),
                   "num_configurable": nc, "num_configs": c}
            arrays = {**graph.arrays(), "node_config_feat": cfg,
                      "config_runtime": runtime.astype(np.int64)}
            tx.put_graph(row, arrays, hlo=src.proto)
            tx.put_configs(row["graph_id"], [
                {"config_index": j, "strategy": "test", "is_default": j == 0, "status": "ok",
                 "config": json.dumps({"j": j}), "npz_row": j,
                 "runtime_min_ns": int(runtime[j])} for j in range(c)])
    opts = BaselineOptions(hidden=16, layers=1, train=TrainConfig(
        epochs=2, configs_per_graph=4, batch_graphs=2),
        prepare=PrepareOptions(hlo_features=True))
    report = run_baseline(tmp_path / "real", opts)
    section = report.collections["layout"]
    assert not [n for n in section.notes if "extra features" in n or "no stored" in n]
    by_program = section.evaluations["by-program"]
    assert by_program.graphs == {"train": 2, "valid": 1, "test": 1}
    assert any(n.startswith("no fewer-copies ranker: num_copies is unknown")
               for n in by_program.notes)
    assert "fewer-copies" not in by_program.results["test"]


@pytest.mark.parametrize("args, says", [
    (["--out", "p.csv"], "--predict"),            # --out is the predictions CSV of --predict
    (["--model", "some/model.msgpack"], "--layer"),  # a saved model is read by --predict
    (["--predict", "x", "--model", "m.msgpack", "--layer", "gcn"], "--layer"),
])
def test_predict_only_flags_are_usage_errors_without_predict(tmp_path: Path, args: list[str],
                                                             says: str) -> None:
    result = CliRunner().invoke(main, ["baseline", str(tmp_path), *args])
    assert result.exit_code == 2, result.output
    assert says in result.output


def test_the_flags_are_the_records_fields(monkeypatch: pytest.MonkeyPatch,
                                         tmp_path: Path) -> None:
    """Every option field of the three records is a flag, with the record's default; the CLI
    builds the records a Python caller would (one --seed for training and the subsample)."""
    seen: list[BaselineOptions] = []
    monkeypatch.setattr(baseline_cmd, "_train", lambda _data, opts, _report: seen.append(opts))
    params = {p.name for p in baseline_cmd.baseline.params}
    for record in (BaselineOptions, TrainConfig, PrepareOptions):
        assert set(options_of(record)) <= params, record
    runner = CliRunner()
    assert runner.invoke(main, ["baseline", str(tmp_path)]).exit_code == 0
    assert seen.pop() == BaselineOptions()
    result = runner.invoke(main, [
        "baseline", str(tmp_path), "--seed", "3", "--layer", "gcn", "--gst",
        "--in-memory-configs", "--prune", "--keep-prob", "0.2", "--train-strategy", "random",
        "--holdout-share", "0.5", "--partition", "metis-8"])
    assert result.exit_code == 0, result.output
    assert seen.pop() == BaselineOptions(
        layer="gcn", holdout_share=0.5, train_strategy="random", partition="metis-8",
        train=TrainConfig(seed=3, gst=True, keep_prob=0.2),
        prepare=PrepareOptions(seed=3, prune=True, lazy_configs=False))
    result = runner.invoke(main, ["baseline", str(tmp_path), "--model", "gcn"])
    assert result.exit_code == 0 and "deprecated" in result.output
    assert seen.pop() == BaselineOptions(layer="gcn")


def test_a_python_caller_is_held_to_the_flags_ranges() -> None:
    with pytest.raises(ValueError, match=r"holdout_share must be < 1.0, got 1.0"):
        BaselineOptions(holdout_share=1.0)
    with pytest.raises(ValueError, match=r"layer must be one of \['sage', 'gcn'\]"):
        BaselineOptions(layer="gat")
    with pytest.raises(ValueError, match=r"configs_per_graph must be >= 2, got 1"):
        TrainConfig(configs_per_graph=1)


def test_model_sage_still_means_the_layer_with_a_warning(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["baseline", str(tmp_path / "none"), "--model", "gcn"])
    assert "--layer gcn" in result.output and "deprecated" in result.output


def test_a_dash_in_the_results_table_is_explained() -> None:
    """gbdt showed τ "–" beside OPA 0.000 with no word why."""
    from types import SimpleNamespace

    from tpugraphs_tools.cli.baseline_cmd import undefined_notes

    nan = float("nan")
    evaluation = SimpleNamespace(results={"test": {
        "gbdt": {"kendall_tau": nan, "opa": 0.0, "kendall_tau_of_ceiling": nan},
        "model": {"kendall_tau": 0.4, "opa": 0.7, "kendall_tau_of_ceiling": nan}}})
    notes = undefined_notes(evaluation)  # type: ignore[arg-type]
    assert len(notes) == 2
    assert notes[0].startswith("τ of gbdt:") and "alike" in notes[0]
    assert notes[1].startswith("τ÷ceil:")
    clean = SimpleNamespace(results={"test": {"model": {"kendall_tau": 0.4, "opa": 0.7,
                                                        "kendall_tau_of_ceiling": 0.8}}})
    assert undefined_notes(clean) == []  # type: ignore[arg-type]


def test_results_at_80_columns_keep_the_split_apart() -> None:
    """At COLUMNS=80 the split column collapsed to "…": valid and test rows looked the same."""
    import io

    from rich.console import Console

    from tpugraphs_tools.cli import _common, baseline_cmd
    from tpugraphs_tools.cli._common import Terminal

    methods = ("model", "noise-ceiling", "random", "fewer-copies", "non-default-slots", "gbdt")
    values = {"graphs": 3.0, "kendall_tau": -0.512, "kendall_tau_sure": 0.6, "opa": 0.75,
              "kendall_tau_of_ceiling": 0.7, "slowdown@1": 1.234, "slowdown@5": 1.01}
    report = BaselineReport("0.0", {}, "ds", {}, None, {"layout": CollectionReport(  # type: ignore[arg-type]
        "layout", 8, 4, "by-program", {"by-program": Evaluation(
            "programs", "by-program(seed=0, 0.8/0.1/0.1)", {"train": 5, "valid": 1, "test": 2},
            {}, None, "layout", {s: dict.fromkeys(methods, values) for s in ("valid", "test")},  # type: ignore[arg-type]
            [], [])}, [])}, {})
    out = io.StringIO()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_common, "terminal", Terminal(Console(file=out, width=80),
                                                    Console(file=io.StringIO())))
        patch.setattr(baseline_cmd, "terminal", _common.terminal)
        baseline_cmd.print_report(report)
    lines = out.getvalue().splitlines()
    assert max(len(line) for line in lines) <= 80
    rows = [line.split() for line in lines if line.split()[1:2] and line.split()[1] in methods]
    assert [r[0] for r in rows] == ["valid"] * 6 + ["test"] * 6
    assert all(r[2:] == ["3", "-0.512", "0.600", "0.700", "0.750", "1.234", "1.010"]
               for r in rows)
