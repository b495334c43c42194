"""``tgt report``: the numbers, the files, and the page as headless Chromium renders it."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from click.testing import CliRunner
from report_helpers import label_cis

from tpugraphs_tools.cli import main
from tpugraphs_tools.errors import DatasetError, TgtError
from tpugraphs_tools.publish import compute_stats, write_report
from tpugraphs_tools.store import BeatsDefault, Dataset

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
PLOTS = ["fastest_per_graph.png", "labels_per_graph.png", "relative_runtime.png",
         "status_counts.png", "graph_sizes.png", "configs_per_graph.png"]
# Appended to a copy of the page: after load, write each image's natural size and its place on
# the page (CSS pixels, page coordinates) into the DOM, and the page's height.
PROBE = """<script>
window.addEventListener("load", () => {
  const sizes = Array.from(document.images).map((img) => {
    const box = img.getBoundingClientRect();
    return [img.getAttribute("src"), img.complete, img.naturalWidth, img.naturalHeight,
            box.left + window.scrollX, box.top + window.scrollY, box.width, box.height];
  });
  document.body.setAttribute("data-images", JSON.stringify(sizes));
  document.body.setAttribute("data-height", document.documentElement.scrollHeight);
});
</script>"""


@pytest.fixture(scope="module")
def ci_dataset(source_dataset: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The test dataset with paired-engine labels near 1, CIs and A/A controls (conftest)."""
    root = tmp_path_factory.mktemp("ci") / "data"
    shutil.copytree(source_dataset, root)
    label_cis(root)
    return root


@pytest.fixture(scope="module")
def report_dir(ci_dataset: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("matplotlib")
    return write_report(ci_dataset, tmp_path_factory.mktemp("report") / "report").out


def _chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        if path := shutil.which(name):
            return path
    return None


def test_stats_per_program_and_status(source_dataset: Path):
    ds = Dataset.open(source_dataset)
    configs = ds.configs()
    stats = compute_stats(ds.graphs(), configs)
    assert stats.graphs == 7 and stats.configs == configs.height
    assert list(stats.statuses)[:3] == ["ok", "noop", "duplicate"]
    assert {"compile_error", "runtime_error"} <= set(stats.statuses)
    mlp = next(p for p in stats.programs if p.program == "mlp")
    program_ids = ds.graphs().filter(pl.col("program") == "mlp")["graph_id"]
    rows = configs.filter(pl.col("graph_id").is_in(program_ids.to_list()))
    measured = rows.filter((pl.col("status") == "ok") & ~pl.col("is_default"))
    assert mlp.graphs == 2 and mlp.configs == rows.height
    values = measured["relative_to_default"].to_numpy()
    box = mlp.relative_box
    assert box is not None and box.count == values.size
    assert (box.q1, box.median, box.q3) == pytest.approx(np.percentile(values, [25, 50, 75]))
    assert mlp.median_relative == pytest.approx(np.median(values))
    assert mlp.best_speedup == pytest.approx(1 / values.min())
    assert mlp.errors == rows.filter(pl.col("status").str.ends_with("error")).height
    assert sum(stats.configs_per_graph) == configs.height


def test_stats_show_the_control_noise_floor_and_keep_controls_out_of_configs(
        source_dataset: Path):
    ds = Dataset.open(source_dataset)
    configs = ds.configs()
    gid = ds.graphs().filter(pl.col("program") == "mlp")["graph_id"][0]
    base = configs.filter(pl.col("graph_id") == gid).row(0, named=True)
    extra = [{**base, "config_index": 900 + i, "status": "control", "is_default": False,
              "npz_row": None, "relative_to_default": r, "relative_ci_low": lo,
              "relative_ci_high": hi} for i, (r, lo, hi) in
             enumerate([(1.0, 0.98, 1.02), (1.05, 1.01, 1.09), (0.99, 0.96, 1.02)])]
    labelled = configs.with_columns(
        pl.when(pl.col("status") == "ok").then(pl.col("relative_to_default") * 0.99)
        .alias("relative_ci_low"),
        pl.when(pl.col("status") == "ok").then(pl.col("relative_to_default") * 1.01)
        .alias("relative_ci_high"))
    with_controls = pl.concat([labelled, pl.DataFrame(extra, schema=labelled.schema)])
    stats = compute_stats(ds.graphs(), with_controls)
    assert stats.configs == configs.height and stats.statuses["control"] == 3
    assert (stats.controls, stats.controls_held) == (3, 2)
    assert stats.noise_floor == pytest.approx(0.03)
    mlp = next(p for p in stats.programs if p.program == "mlp")
    assert (mlp.controls, mlp.controls_held) == (3, 2)
    assert mlp.ci_half_width == pytest.approx(0.01)
    # pairs told apart: every pair of ok labels within one graph, checked one by one
    ok = labelled.filter((pl.col("status") == "ok") & pl.col("relative_ci_low").is_not_null())
    ok = ok.join(ds.graphs().select("graph_id", "program"), on="graph_id")
    expected = {}
    for (program, _), graph in ok.group_by("program", "graph_id"):
        cis = list(zip(graph["relative_ci_low"], graph["relative_ci_high"], strict=True))
        pairs = [(a, b) for i, a in enumerate(cis) for b in cis[i + 1:]]
        apart = sum(1 for a, b in pairs if a[1] < b[0] or b[1] < a[0])
        total, sep = expected.get(program, (0, 0))
        expected[program] = (total + len(pairs), sep + apart)
    assert {p.program: (p.pairs, p.pairs_separated) for p in stats.programs
            if p.pairs} == expected
    assert 0 < stats.pairs_separated < stats.pairs
    from tpugraphs_tools.publish.report.html import report_html

    page = report_html("t", stats, [], {})
    assert "held 1.0 in 2/3 batches" in page and "±3.00%" in page
    assert f"{stats.pairs_separated}/{stats.pairs}" in page


def test_report_files_are_offline_pngs(report_dir: Path):
    assert sorted(p.name for p in report_dir.iterdir()) == sorted([*PLOTS, "index.html"])
    for name in PLOTS:
        assert (report_dir / name).read_bytes()[:8] == PNG_MAGIC
    html = (report_dir / "index.html").read_text()
    assert re.findall(r'<img src="([^"]+)"', html) == PLOTS
    assert "http://" not in html and "https://" not in html  # nothing fetched from outside
    assert "mlp" in html and "compile_error" in html


def test_rerun_replaces_a_report_but_not_other_folders(source_dataset: Path, report_dir: Path,
                                                      tmp_path: Path):
    out = tmp_path / "report"
    shutil.copytree(report_dir, out)
    (out / "old.png").write_bytes(PNG_MAGIC)
    write_report(source_dataset, out)  # an old report is replaced without --overwrite
    assert not (out / "old.png").exists() and (out / "index.html").exists()
    (out / "notes.txt").write_text("mine")
    with pytest.raises(DatasetError, match="not empty"):
        write_report(source_dataset, out)
    assert (out / "notes.txt").exists()


def test_missing_matplotlib_is_a_clear_error(source_dataset: Path, tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)
    with pytest.raises(TgtError, match=r"tpugraphs-tools\[publish\]"):
        write_report(source_dataset, tmp_path / "report")
    assert not (tmp_path / "report").exists()


def test_report_renders_in_headless_chromium(report_dir: Path, tmp_path: Path):
    browser = _chromium()
    if browser is None:
        pytest.skip("chromium not installed (apt-get install -y chromium) — cannot render")
    page = tmp_path / "page"
    shutil.copytree(report_dir, page)
    probe = page / "probe.html"
    probe.write_text((page / "index.html").read_text().replace("</body>", PROBE + "</body>"))
    flags = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
             "--no-first-run", f"--user-data-dir={tmp_path / 'profile'}",
             "--virtual-time-budget=10000"]
    dom = subprocess.run([*flags, "--dump-dom", probe.as_uri()], capture_output=True,
                         text=True, timeout=120, check=True).stdout
    found = re.search(r'data-images="([^"]*)"', dom)
    assert found, dom[:500]
    images = json.loads(found[1].replace("&quot;", '"'))
    assert [src for src, *_ in images] == PLOTS
    assert all(complete and width > 0 and height > 0 for _, complete, width, height, *_ in images)
    height = int(re.search(r'data-height="(\d+)"', dom)[1])
    shot = tmp_path / "shot.png"
    # the whole page in one screenshot, so every plot is drawn in it
    subprocess.run([*flags, f"--window-size=1100,{height + 50}", f"--screenshot={shot}",
                    probe.as_uri()], capture_output=True, timeout=120, check=True)
    from matplotlib.image import imread

    pixels = imread(shot)[..., :3]
    assert pixels.shape[0] >= height and pixels.shape[1] >= 1000
    assert pixels.std() > 0.05  # not a blank page
    for src, _, width, tall, left, top, shown_w, shown_h in images:
        # drawn large and not distorted
        assert shown_w > 500 and shown_h / shown_w == pytest.approx(tall / width, rel=0.02), src
        region = pixels[int(top) + 2:int(top + shown_h) - 2, int(left) + 2:int(left + shown_w) - 2]
        assert region.shape[0] > 100 and region.shape[1] > 500, src  # inside the screenshot
        drawn = (region < 0.9).any(axis=2).mean()  # share of pixels that are not white
        assert 0.01 < drawn < 0.6, (src, drawn)     # axes, marks and text, not blank or solid


def test_cli_report(source_dataset: Path, tmp_path: Path):
    pytest.importorskip("matplotlib")
    res = CliRunner().invoke(main, ["report", str(source_dataset), "--out",
                                    str(tmp_path / "r")])
    assert res.exit_code == 0, res.output
    assert (tmp_path / "r" / "index.html").exists() and "6 plots" in res.output
    assert "headroom: a config beats the default (95% CI below 1) in" in res.output


def test_stats_show_headroom_and_the_noise_ceiling_per_graph(source_dataset: Path):
    ds = Dataset.open(source_dataset)
    configs = ds.configs()
    ok = configs.filter((pl.col("status") == "ok") & pl.col("relative_to_default").is_not_null())
    gid = ok.filter(~pl.col("is_default"))["graph_id"][0]
    # CIs ±1% on one graph only: it gets a ceiling, the others say it is unknown
    labelled = configs.with_columns(
        pl.when(pl.col("graph_id") == gid).then(pl.col("relative_to_default") * 0.99)
        .alias("relative_ci_low"),
        pl.when(pl.col("graph_id") == gid).then(pl.col("relative_to_default") * 1.01)
        .alias("relative_ci_high"))
    stats = compute_stats(ds.graphs(), labelled)
    by_id = {g.graph_id: g for g in stats.labels}
    assert set(by_id) == set(ok["graph_id"].unique())
    mine = by_id[gid]
    rows = ok.filter((pl.col("graph_id") == gid) & ~pl.col("is_default"))
    ratios = rows["relative_to_default"].to_numpy()
    assert mine.headroom is not None and mine.headroom.configs == rows.height
    assert mine.headroom.fastest == pytest.approx(ratios.min())
    assert mine.headroom.fastest_low == pytest.approx(ratios.min() * 0.99)
    assert mine.headroom.faster_share == pytest.approx((ratios < 1).mean())
    assert mine.ceiling is not None and mine.ceiling.pairs == ok.filter(
        pl.col("graph_id") == gid).height * (ok.filter(pl.col("graph_id") == gid).height - 1) // 2
    assert 0 < mine.ceiling.kendall_tau <= 1
    assert all(g.ceiling is None for g in stats.labels if g.graph_id != gid)
    from tpugraphs_tools.publish.report.html import report_html

    page = report_html("t", stats, [], {})
    assert "Per graph: headroom and noise ceiling" in page
    assert "no CI: ceiling unknown" in page and f"{mine.ceiling.kendall_tau:.3f}" in page
    assert "over 1 graphs" in stats.label_summary()
    plain = compute_stats(ds.graphs(), configs.drop("relative_ci_low", "relative_ci_high"))
    assert plain.label_summary().endswith("noise ceiling: no CI: ceiling unknown")


def test_report_facts_count_the_cpus_timed_rows_could_use(source_dataset: Path):
    from tpugraphs_tools.publish.report.page import _facts

    ds = Dataset.open(source_dataset)
    assert _facts(ds.manifest, ds.scan("configs"))["timed on"] == "not recorded"
    configs = ds.configs().with_columns(
        pl.when(pl.col("status") == "ok").then(2).otherwise(None).cast(pl.Int64)
        .alias("timing_cpus"))
    ok = configs.filter(pl.col("status") == "ok").height
    assert _facts(ds.manifest, configs.lazy())["timed on"] == f"2 CPUs: {ok} rows"


def test_headline_counts_only_configs_whose_ci_is_below_1(ci_dataset: Path, tmp_path: Path):
    """Like the tile report of the issue: one graph's fastest label is 0.995 [0.988, 1.002],
    below 1 as a point but not surely faster: it is not counted, in words or in colour."""
    ds = Dataset.open(ci_dataset)
    stats = compute_stats(ds.graphs(), ds.configs())
    rooms = {g.graph_id: g.headroom for g in stats.labels if g.headroom is not None}
    assert len(rooms) == 7 and all(r.fastest < 1 for r in rooms.values())  # 7/7 as points
    [unsure] = [g for g, r in rooms.items() if r.fastest_high >= 1]
    assert rooms[unsure].fastest == pytest.approx(0.995)
    assert stats.beats_default() == BeatsDefault(beaten=6, graphs=7, unknown=0)
    assert "beats the default (95% CI below 1) in 6/7 graphs" in stats.label_summary()
    from tpugraphs_tools.publish.report.html import report_html

    assert "in <b>6/7</b> graphs" in report_html("t", stats, [], {})
    from tpugraphs_tools.publish.report.ci_plots import FASTER, UNRESOLVED, certainty

    assert certainty(rooms[unsure].fastest_low, rooms[unsure].fastest_high) == UNRESOLVED
    assert {certainty(r.fastest_low, r.fastest_high) for g, r in rooms.items()
            if g != unsure} == {FASTER}
    res = CliRunner().invoke(main, ["report", str(ci_dataset), "--out", str(tmp_path / "r")])
    assert res.exit_code == 0, res.output
    assert "(95% CI below 1) in 6/7 graphs" in " ".join(res.output.split())
    from tpugraphs_tools.baseline.report import CollectionReport

    baseline = CollectionReport("layout", 7, 3, "", {}, [], headroom={  # as baseline stores it
        g.graph_id: {"program": "p", **g.headroom.to_json()} for g in stats.labels
        if g.headroom is not None})
    assert baseline.beats_default() == stats.beats_default()  # one definition for both
    # without CIs nothing is claimed: the graphs are named as not known
    plain = compute_stats(ds.graphs(), ds.configs().drop("relative_ci_low", "relative_ci_high"))
    assert plain.beats_default() == BeatsDefault(beaten=0, graphs=7, unknown=7)
    assert "(7 without CIs: not known)" in plain.label_summary()


def test_label_plots_show_a_1_percent_difference_and_keep_legends_off_the_data(
        ci_dataset: Path):
    pytest.importorskip("matplotlib")
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    from tpugraphs_tools.publish.report.plots import PLOTS

    ds = Dataset.open(ci_dataset)
    stats = compute_stats(ds.graphs(), ds.configs())
    for name, _title, _caption, draw in PLOTS:
        fig = Figure(figsize=(9, 5), layout="constrained")
        canvas = FigureCanvasAgg(fig)
        ax = fig.add_subplot()
        draw(stats, ax)
        canvas.draw()
        legend = ax.get_legend()
        if legend is not None:  # beside the axes: it covers no mark
            assert legend.get_window_extent().x0 >= ax.get_window_extent().x1, name
        if name in ("fastest_per_graph.png", "labels_per_graph.png", "relative_runtime.png"):
            low, high = ax.get_xlim()
            assert ax.get_xscale() == "linear" and 0.9 < low < 0.995 and 1.005 < high < 1.1
            ticks = [t for t in ax.get_xticks() if low <= t <= high]
            steps = np.diff(ticks)
            assert len(ticks) >= 4 and steps.max() <= 0.0100001, (name, ticks)
            # 0.997 and 1.005 land far apart: more than 5% of the axis
            assert (1.005 - 0.997) / (high - low) > 0.05, name


def test_programs_beyond_the_box_plot_keep_exact_medians_without_quartiles(monkeypatch):
    """Only the programs the box plot draws get quartiles; every program still gets its exact
    median and fastest label (a dataset can have a program per graph)."""
    from tpugraphs_tools.publish.report import stats as report_stats

    monkeypatch.setattr(report_stats, "MAX_BOXES", 2)
    rng = np.random.default_rng(0)
    sizes = {"p0": 9, "p1": 30, "p2": 17, "p3": 30}  # p1 and p3 have the most: boxed
    graphs = pl.DataFrame({"graph_id": [f"g{p}" for p in sizes], "program": list(sizes),
                           "num_nodes": [5] * 4, "collection": ["layout"] * 4})
    rows = []
    for program, n in sizes.items():
        values = 0.9 + rng.random(n) * 0.3
        rows += [{"graph_id": f"g{program}", "status": "ok", "is_default": False,
                  "relative_to_default": float(v)} for v in values]
    configs = pl.DataFrame(rows)
    stats = compute_stats(graphs, configs)
    for p in stats.programs:
        values = configs.filter(pl.col("graph_id") == f"g{p.program}")["relative_to_default"]
        assert p.median_relative == pytest.approx(float(np.median(values.to_numpy())))
        assert p.best_speedup == pytest.approx(1 / values.min())
        assert (p.relative_box is not None) == (p.program in {"p1", "p3"})


def test_program_medians_are_the_same_however_the_batches_split_the_graphs():
    """A program whose graphs all come in one batch hands its values over whole; one whose
    graphs are spread over batches, or a graph split between two (as in two table parts), is
    counted in buckets: the same exact figures either way."""
    rng = np.random.default_rng(3)
    programs = {"ga": "p0", "gb": "p1", "gc": "p1", "gd": "p2", "ge": "p3"}
    graphs = pl.DataFrame({"graph_id": list(programs), "program": list(programs.values()),
                           "num_nodes": [5] * 5, "collection": ["layout"] * 5})
    rows = []
    for gid in programs:
        values = 0.9 + rng.random(int(rng.integers(5, 40))) * 0.3
        rows += [{"graph_id": gid, "status": "ok", "is_default": False,
                  "relative_to_default": float(v), "relative_ci_low": float(v) * 0.98,
                  "relative_ci_high": float(v) * (1.01 + 0.01 * i)}
                 for i, v in enumerate(values)]
    configs = pl.DataFrame(rows)
    by = {gid: configs.filter(pl.col("graph_id") == gid) for gid in programs}
    half = by["gd"].height // 2
    batches = [pl.concat([by["ga"], by["gb"], by["gd"].head(half)]),   # p1 split, gd too
               pl.concat([by["gc"], by["gd"].tail(-half), by["ge"]])]
    whole = compute_stats(graphs, configs)
    split = compute_stats(graphs, lambda: iter(batches))

    def figures(stats):  # pairs are per batch: a split graph is not one graph to them
        return [(p.program, p.relative_box, p.best_speedup, p.median_relative,
                 p.ci_half_width) for p in stats.programs]

    assert figures(split) == figures(whole)
    assert all(p.relative_box is not None for p in whole.programs)
