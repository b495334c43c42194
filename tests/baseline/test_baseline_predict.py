"""Saved baseline models: `tgt baseline` writes them, `--predict` re-ranks with them, and a
corrupt or mismatched model file is refused with a ModelFileError naming the file and key."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from tpugraphs_tools.baseline import (
    BaselineOptions,
    PreparedGraph,
    PrepareOptions,
    TrainConfig,
    Trainer,
    graph_metrics,
    load_model,
    predict_dataset,
    run_baseline,
    save_report,
)
from tpugraphs_tools.baseline.holdout import split_configs
from tpugraphs_tools.baseline.synthetic import layout_graph, write_synthetic_dataset
from tpugraphs_tools.cli import main
from tpugraphs_tools.errors import ModelFileError
from tpugraphs_tools.store import Dataset
from tpugraphs_tools.validate import validate_path

COMPARED = ("opa", "kendall_tau", "slowdown@1", "slowdown@5")


EvaluationScores = list[dict[str, np.ndarray]]   # per evaluation (run order): graph → scores


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> tuple[Path, EvaluationScores]:
    """A tiny dataset with its report and the two saved models (by program, within graph),
    and the scores each evaluation's model gave the graphs it scored."""
    root = tmp_path_factory.mktemp("predict") / "ds"
    write_synthetic_dataset(root, programs=4, graphs_per_program=2, nodes=(30, 40), configs=6,
                            label_ci=0.01)
    scored = _train_recording(root, BaselineOptions(hidden=8, layers=1, train=TrainConfig(
        epochs=3, lr=0.03, configs_per_graph=4, batch_graphs=2)))
    assert len(scored) == 2
    return root, scored


def _train_recording(root: Path, opts: BaselineOptions) -> EvaluationScores:
    """Train and save as ``tgt baseline`` does, recording each evaluation's model scores."""
    scored: dict[Trainer, dict[str, np.ndarray]] = {}
    original = Trainer.predict

    def recording(self: Trainer, g: PreparedGraph) -> np.ndarray:
        out = original(self, g)
        scored.setdefault(self, {})[g.info.graph_id] = out
        return out

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(Trainer, "predict", recording)
        report = run_baseline(root, opts)
    save_report(report, root)
    return list(scored.values())


@pytest.fixture(scope="module")
def trained(run: tuple[Path, EvaluationScores]) -> Path:
    return run[0]


def _report(root: Path) -> dict:
    return json.loads((root / "baseline" / "report.json").read_text())


def _read_csv(path: Path) -> dict[str, dict[int, tuple[float, int]]]:
    out: dict[str, dict[int, tuple[float, int]]] = {}
    with path.open() as f:
        for row in csv.DictReader(f):
            out.setdefault(row["graph_id"], {})[int(row["config_index"])] = (
                float(row["predicted_score"]), int(row["predicted_rank"]))
    return out


def _assert_same_metrics(ours: dict, report_row: dict) -> None:
    for key in COMPARED:
        want = report_row["model"][key]
        if want is None:          # NaN in the report (undefined for this graph)
            assert np.isnan(ours[key]), key
        else:
            assert ours[key] == pytest.approx(want, rel=1e-6, abs=1e-9), key


def test_models_are_saved_beside_the_report_and_listed(trained: Path) -> None:
    report = _report(trained)
    files = Dataset.open(trained).manifest["files"]
    for name in ("by-program", "within-graph"):
        model_file = report["collections"]["layout"]["evaluations"][name]["model_file"]
        assert model_file == f"model-layout-{name}.msgpack"
        assert f"baseline/{model_file}" in files
        sidecar = json.loads((trained / "baseline" / model_file).with_suffix(".json").read_text())
        assert sidecar["kind"] == "layout" and sidecar["widths"]["node_features"] == 140
        assert sidecar["model"]["hidden"] == 8 and sidecar["versions"]["flax"]
        assert sidecar["options"]["train"]["configs_per_graph"] == 4
    assert not validate_path(trained).errors


def test_predict_reproduces_the_by_program_evaluation(run: tuple[Path, EvaluationScores]
                                                      ) -> None:
    trained, (scores, _) = run
    model = trained / "baseline" / "model-layout-by-program.msgpack"
    result = CliRunner().invoke(main, ["baseline", "--predict", str(trained),
                                       "--model", str(model)])
    assert result.exit_code == 0, result.output
    assert "48 configs of 8 graphs ranked" in result.output
    out = trained / "baseline" / "predictions-model-layout-by-program.csv"
    ranked = _read_csv(out)
    metrics = json.loads(out.with_suffix(".json").read_text())
    assert metrics["labelled"] == 8 and metrics["kind"] == "layout"
    per_graph = _report(trained)["collections"]["layout"]["evaluations"]["by-program"][
        "per_graph"]
    assert per_graph
    for row in per_graph:          # the held-out graphs: same ranking, same metrics
        _assert_same_metrics(metrics["per_graph"][row["graph_id"]], row)
        configs = ranked[row["graph_id"]]
        assert sorted(configs) == list(range(6))
        assert sorted(r for _, r in configs.values()) == list(range(1, 7))
        ours = np.array([configs[i][0] for i in range(6)])
        assert ours == pytest.approx(scores[row["graph_id"]], rel=1e-5, abs=1e-6)
        assert [configs[i][1] for i in range(6)] == list(
            np.argsort(np.argsort(scores[row["graph_id"]], kind="stable")) + 1)
    assert not validate_path(trained).errors      # the predictions went in via a transaction


def test_predict_reproduces_held_out_configs_of_the_within_graph_model(
        run: tuple[Path, EvaluationScores]) -> None:
    trained, (_, scores) = run
    prediction = predict_dataset(trained, trained / "baseline" / "model-layout-within-graph.json")
    report = _report(trained)["collections"]["layout"]["evaluations"]["within-graph"]
    by_id = {g.graph_id: g for g in prediction.graphs}
    for row in report["per_graph"]:
        g = by_id[row["graph_id"]]
        parts = split_configs(g.graph_id, g.score.size, 0, report["share"])
        assert parts is not None
        held = parts[1]
        assert np.array_equal(g.config_index, np.arange(g.score.size))
        assert g.runtime is not None
        assert g.score[held] == pytest.approx(scores[g.graph_id], rel=1e-5, abs=1e-6)
        _assert_same_metrics(graph_metrics(g.runtime[held], g.score[held]), row)


@pytest.mark.parametrize("case", ["tile", "layout-gst", "layout-mismatch",
                                  "layout-default-slots"])
def test_predict_reproduces_tile_and_gst_models(tmp_path: Path, case: str) -> None:
    """Tile models normalise config features with saved statistics; GST models embed a graph
    as the mean of its segments; mismatch models recompute their extra config slots: each
    must come back as the evaluation had it."""
    root = tmp_path / case
    tile = case == "tile"
    write_synthetic_dataset(root, programs=1, graphs_per_program=2, nodes=(30, 40), configs=8,
                            collection="tile" if tile else "layout")
    gst = case == "layout-gst"
    train = TrainConfig(epochs=2, lr=0.03, configs_per_graph=4, batch_graphs=2, gst=gst)
    (scores,) = _train_recording(root, BaselineOptions(
        hidden=8, layers=1, holdout="configs", segment_method="contiguous", segment_nodes=12,
        train=train, prepare=PrepareOptions(mismatch_features=case == "layout-mismatch",
                                             default_slots=case == "layout-default-slots")))
    kind = "tile" if tile else "layout"
    stem = root / "baseline" / f"model-{kind}-within-graph"
    sidecar = json.loads(stem.with_suffix(".json").read_text())
    assert sidecar["options"]["train"]["gst"] is gst
    prediction = predict_dataset(root, stem.with_suffix(".msgpack"))
    assert prediction.kind == kind and len(prediction.graphs) == 2
    for g in prediction.graphs:
        parts = split_configs(g.graph_id, g.score.size, 0, 0.3)
        assert parts is not None
        assert g.score[parts[1]] == pytest.approx(scores[g.graph_id], rel=1e-5, abs=1e-6)


def test_an_unlabelled_npz_tree_gets_rankings_without_metrics(trained: Path,
                                                              tmp_path: Path) -> None:
    tree = tmp_path / "npz" / "layout" / "xla" / "random"
    (tree / "test").mkdir(parents=True)
    for i, labelled in enumerate((False, True)):   # g0: runtimes zeroed, as a test split
        arrays, _ = layout_graph(100 + i, 30, 5)
        if not labelled:
            arrays["config_runtime"] = np.zeros_like(arrays["config_runtime"])
        np.savez(tree / "test" / f"g{i}.npz", **arrays)
    model = trained / "baseline" / "model-layout-by-program.msgpack"
    out = tmp_path / "out" / "p.csv"
    result = CliRunner().invoke(main, ["baseline", "--predict", str(tree), "--model", str(model),
                                       "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "1 graph(s) without labels" in result.output
    rows = list(csv.DictReader(out.open()))
    assert len(rows) == 10 and {r["predicted_rank"] for r in rows} == {"1", "2", "3", "4", "5"}
    unlabelled = [r for r in rows if r["runtime"] == ""]
    assert len(unlabelled) == 5 and len({r["graph_id"] for r in unlabelled}) == 1
    metrics = json.loads(out.with_suffix(".json").read_text())
    assert metrics["graphs"] == 2 and metrics["labelled"] == 1 and len(metrics["per_graph"]) == 1
    assert not (tree / "baseline").exists()


@pytest.fixture
def model_copy(trained: Path, tmp_path: Path) -> Path:
    for suffix in (".msgpack", ".json"):
        shutil.copy(trained / "baseline" / f"model-layout-by-program{suffix}",
                    tmp_path / f"m{suffix}")
    return tmp_path / "m.msgpack"


def _edit_sidecar(model: Path, edit) -> None:
    path = model.with_suffix(".json")
    doc = json.loads(path.read_text())
    edit(doc)
    path.write_text(json.dumps(doc))


def test_corrupt_parameters_are_refused_naming_the_file(trained: Path, model_copy: Path
                                                        ) -> None:
    data = bytearray(model_copy.read_bytes())
    data[len(data) // 2] ^= 0xFF
    model_copy.write_bytes(bytes(data))
    with pytest.raises(ModelFileError, match="params_sha256") as err:
        load_model(model_copy)
    assert err.value.path == str(model_copy)
    result = CliRunner().invoke(main, ["baseline", "--predict", str(trained),
                                       "--model", str(model_copy)])
    assert result.exit_code == 1 and str(model_copy) in result.output
    assert "Traceback" not in result.output


def test_garbage_parameters_with_a_matching_digest_are_refused(model_copy: Path) -> None:
    import hashlib

    model_copy.write_bytes(b"\xc1 not msgpack")
    _edit_sidecar(model_copy, lambda d: d.update(
        params_sha256=hashlib.sha256(b"\xc1 not msgpack").hexdigest()))
    with pytest.raises(ModelFileError, match="not flax msgpack"):
        load_model(model_copy)


@pytest.mark.parametrize(("edit", "key"), [
    (lambda d: d["widths"].update(node_features=141), "widths.node_features"),
    (lambda d: d["widths"].update(config_features=24), "widths.config_features"),
    (lambda d: d.update(kind="pixels"), "kind"),
    (lambda d: d["options"]["train"].update(warp=1), "options.train.warp"),
    (lambda d: d["model"].update(hidden="8"), "model.hidden"),
    (lambda d: d["options"].pop("prepare"), "options.prepare"),
    (lambda d: d.pop("normalisation"), "normalisation"),
    (lambda d: d.update(format_version=99), "format_version"),
    (lambda d: d["model"].update(model="gcn"), "model.layer"),    # old and new name at once
    (lambda d: d["options"]["train"].update(loss="l2"), "options.train"),  # not a choice
    (lambda d: d["model"].update(layer="gat"), "model"),  # once built a GCN without a word
])
def test_mismatched_sidecar_names_the_key(model_copy: Path, edit, key: str) -> None:
    _edit_sidecar(model_copy, edit)
    with pytest.raises(ModelFileError) as err:
        load_model(model_copy)
    assert err.value.key == key and err.value.path == str(model_copy.with_suffix(".json"))


def test_an_option_the_records_refuse_names_the_options(trained: Path, model_copy: Path
                                                      ) -> None:
    _edit_sidecar(model_copy, lambda d: d["options"].update(segment_method="spectral"))
    with pytest.raises(ModelFileError, match="segment_method must be one of") as err:
        predict_dataset(trained, model_copy)
    assert err.value.key == "options"


def test_a_model_saved_before_the_layer_rename_still_loads(trained: Path, model_copy: Path
                                                         ) -> None:
    """Sidecars written before ``ModelConfig.model`` / ``BaselineOptions.model`` became
    ``layer`` (the graph layer, now that ``--model`` means only the saved model)."""
    def old_keys(doc: dict) -> None:
        doc["model"]["model"] = doc["model"].pop("layer")
        doc["options"]["model"] = doc["options"].pop("layer")

    _edit_sidecar(model_copy, lambda d: d["model"].update(layer="gcn"))
    _edit_sidecar(model_copy, old_keys)
    assert "layer" not in json.loads(model_copy.with_suffix(".json").read_text())["model"]
    assert load_model(model_copy).model.layer == "gcn"
    _edit_sidecar(model_copy, lambda d: d["model"].update(model="sage"))
    new = predict_dataset(trained, trained / "baseline" / "model-layout-by-program.msgpack")
    old = predict_dataset(trained, model_copy)
    for a, b in zip(new.graphs, old.graphs, strict=True):
        assert np.array_equal(a.score, b.score)


def test_parameters_of_another_architecture_name_the_parameter(trained: Path,
                                                               model_copy: Path) -> None:
    _edit_sidecar(model_copy, lambda d: d["model"].update(hidden=12))
    with pytest.raises(ModelFileError, match="parameter shape") as err:
        predict_dataset(trained, model_copy)
    assert err.value.path == str(model_copy) and err.value.key and "params/" in err.value.key


def test_a_layout_model_refuses_a_tile_dataset(model_copy: Path, tmp_path: Path) -> None:
    tiles = tmp_path / "tiles"
    write_synthetic_dataset(tiles, programs=1, graphs_per_program=1, nodes=(20, 20), configs=4,
                            collection="tile")
    with pytest.raises(ModelFileError, match="ranks 'layout' configs") as err:
        predict_dataset(tiles, model_copy)
    assert err.value.key == "kind"


def test_predict_needs_a_model_path(trained: Path) -> None:
    result = CliRunner().invoke(main, ["baseline", "--predict", str(trained)])
    assert result.exit_code == 2 and "--model PATH" in result.output
    result = CliRunner().invoke(main, ["baseline", str(trained), "--model", "gat"])
    assert result.exit_code == 2 and "sage" in result.output
