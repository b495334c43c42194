"""The ``tgt`` command line through click's CliRunner: help texts, collect → validate, and
validate catching a damaged npz or a tampered manifest."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from tpugraphs_tools.cli import main

# rich reads COLUMNS from the live environment: wide enough that paths are never folded
RUNNER = CliRunner(env={"COLUMNS": "300"})


def run(*args: str) -> Result:
    return RUNNER.invoke(main, list(args), catch_exceptions=False)


def flat(text: str) -> str:
    return "".join(text.split())


@pytest.fixture(scope="module")
def collected(tmp_path_factory: pytest.TempPathFactory, tiny_hlo: str) -> Path:
    """A dataset made by ``tgt collect --hlo tiny.hlo --out d/`` (copied per test).

    ``--configs 0``: graphs only. Measuring layout configs spawns timing workers (seconds per
    graph) and is tested with the measurement code.
    """
    root = tmp_path_factory.mktemp("cli")
    hlo = root / "tiny.hlo"
    hlo.write_text(tiny_hlo)
    out = root / "d"
    result = run("collect", "--hlo", str(hlo), "--out", str(out), "--configs", "0")
    assert result.exit_code == 0, result.output
    return out


@pytest.fixture
def dataset(collected: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "d"
    shutil.copytree(collected, copy)
    return copy


def npz_rel(root: Path) -> str:
    [npz] = root.glob("graphs/*.npz")
    return npz.relative_to(root).as_posix()


def findings(root: Path) -> tuple[int, list[dict]]:
    result = run("validate", str(root), "--json")
    return result.exit_code, json.loads(result.stdout)["findings"]


def test_top_level_help_has_an_example() -> None:
    result = run("--help")
    assert result.exit_code == 0
    assert "Example" in result.output


@pytest.mark.parametrize("command", sorted(main.commands))
def test_every_command_help_has_an_example(command: str) -> None:
    result = run(command, "--help")
    assert result.exit_code == 0, result.output
    assert "Example" in result.output, command


def test_collect_hlo_then_validate_is_clean(collected: Path) -> None:
    [npz] = collected.glob("graphs/*.npz")
    assert npz.name.startswith("tiny.") and len(npz.stem.split(".")[1]) == 12
    assert (collected / "manifest.json").is_file()
    result = run("validate", str(collected))
    assert result.exit_code == 0, result.output
    assert "clean" in result.output
    code, found = findings(collected)
    assert code == 0 and [f for f in found if f["severity"] == "error"] == []


def test_collect_prints_the_graph_it_stored(tmp_path: Path, write_file, tiny_hlo: str) -> None:
    hlo = write_file("tiny.hlo", tiny_hlo)
    result = run("collect", "--hlo", str(hlo), "--out", str(tmp_path / "out"),
                 "--configs", "0")
    assert result.exit_code == 0, result.output
    [npz] = (tmp_path / "out").glob("graphs/*.npz")
    assert npz.stem in flat(result.output)


def test_validate_fails_on_a_flipped_npz_byte_and_names_the_file(dataset: Path) -> None:
    rel = npz_rel(dataset)
    data = bytearray((dataset / rel).read_bytes())
    data[len(data) // 2] ^= 0x01
    (dataset / rel).write_bytes(bytes(data))
    result = run("validate", str(dataset))
    assert result.exit_code == 1
    assert rel in flat(result.output)
    code, found = findings(dataset)
    assert code == 1
    assert any(f["file"] == rel and f["check"] == "dataset.checksum_mismatch" for f in found)


def test_validate_fails_on_an_edited_manifest_sha_and_names_the_file(dataset: Path) -> None:
    rel = npz_rel(dataset)
    manifest = json.loads((dataset / "manifest.json").read_text())
    manifest["files"][rel]["sha256"] = "0" * 64
    (dataset / "manifest.json").write_text(json.dumps(manifest, indent=2))
    result = run("validate", str(dataset))
    assert result.exit_code == 1
    assert rel in flat(result.output)
    code, found = findings(dataset)
    assert code == 1
    assert [f["file"] for f in found if f["severity"] == "error"] == [rel]


def test_collect_missing_file_fails_with_the_path(tmp_path: Path) -> None:
    missing = tmp_path / "no_such_dir" / "missing.hlo"
    result = run("collect", "--hlo", str(missing), "--out", str(tmp_path / "d"))
    assert result.exit_code != 0
    assert str(missing) in flat(result.output)
    assert not list((tmp_path / "d").glob("graphs/*.npz"))


def test_collect_without_inputs_is_a_usage_error(tmp_path: Path) -> None:
    result = run("collect", "--out", str(tmp_path / "d"))
    assert result.exit_code == 2
    assert "--program or --hlo" in result.output


def test_collect_summary_shows_the_noise_floor() -> None:
    from tpugraphs_tools.cli._collect_summary import print_config_summary
    from tpugraphs_tools.cli._common import terminal

    summary = {"configs": 5, "labels": 5, "control_rows": 5,
               "status": {"ok": 5, "control": 3, "repeat": 2},
               "best_speedup": 1.1, "worst_slowdown": 1.2, "ci_half_width_median": 0.021,
               "controls": 3, "controls_holding_1": 2, "noise_floor": 0.015,
               "control_range": (0.97, 1.01)}
    with terminal.console.capture() as captured:
        print_config_summary({"g": summary})
    text = flat(captured.get())
    assert "noisefloor" in text and "±1.50%" in text and "2/3batches" in text
    assert "±2.10%" in text


SUMMARY = {"configs": 120, "labels": 100, "control_rows": 8,
           "status": {"ok": 100, "noop": 10, "duplicate": 3, "compile_error": 5,
                      "runtime_error": 2, "control": 8},
           "best_speedup": 1.25, "worst_slowdown": 3.5, "ci_half_width_median": 0.0123,
           "controls": 8, "controls_holding_1": 7, "noise_floor": 0.007,
           "control_range": (0.991, 1.012), "pairs": 5050, "pairs_separated": 4000}


def _layout_summary(width: int, *, unbounded: bool = False) -> str:
    import io

    from rich.console import Console

    from tpugraphs_tools.cli import _collect_summary, _common
    from tpugraphs_tools.cli._common import Terminal

    out = io.StringIO()
    term = Terminal(Console(file=out, width=width), Console(file=io.StringIO()))
    term.unbounded = unbounded
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_collect_summary, "terminal", term)
        patch.setattr(_common, "terminal", term)
        _collect_summary.print_config_summary({"keras_hub/bert.972965f45543": SUMMARY,
                                                 "mlp.0123456789ab": SUMMARY})
    return out.getvalue()


def test_layout_summary_fits_80_columns_and_keeps_the_label_figures() -> None:
    text = _layout_summary(80)
    assert max(len(line) for line in text.splitlines()) <= 80
    row = next(line for line in text.splitlines() if line.startswith("mlp.0123456789ab"))
    # configs, ok, errors, fastest, CI, pairs apart, A/A holding 1: whole, on the graph's row
    assert row.split()[1:] == ["120", "100", "7", "0.800×", "±1.23%", "4000/5050", "7/8"]
    for word in ("configs", "errors", "default", "CI", "pairs", "apart", "A/A", "holds"):
        assert re.search(rf"(^|\s){re.escape(word)}(\s|$)", text), word  # no header broken
    assert "piped output has every column" in text


def test_layout_summary_piped_holds_every_column() -> None:
    """Piped with no COLUMNS: nothing to fit, the whole table at its natural width."""
    text = _layout_summary(132, unbounded=True)
    row = next(line for line in text.splitlines() if line.startswith("mlp.0123456789ab"))
    assert "(compile_error 5, runtime_error 2)" in row and "3.500×" in row
    assert "7/8 hold 1 (0.991–1.012)" in row and "4000/5050" in row and "±1.23%" in row
    assert "too narrow" not in text
    wide = _layout_summary(300)  # a wide terminal: the whole table too
    assert "7/8 hold 1 (0.991–1.012)" in wide and "too narrow" not in wide


def test_every_flag_of_every_command_has_help():
    """A flag without help leaves the user guessing (--batch, --warmup and --dtype had none)."""
    import click

    from tpugraphs_tools.cli import main

    missing = [f"{name} {'/'.join(p.opts)}" for name, command in main.commands.items()
               for p in command.params
               if isinstance(p, click.Option) and not p.hidden and not p.help]
    assert missing == []


def test_no_usage_line_shows_a_flag_as_an_argument() -> None:
    """`tgt import`'s usage once read `TREE | --tuning-data FILE...`, as if the flag took
    the files."""
    import click

    ctx = click.Context(main)
    pieces = {name: " ".join(command.collect_usage_pieces(click.Context(command, parent=ctx)))
              for name, command in main.commands.items()}
    assert {n: p for n, p in pieces.items() if "--" in p} == {}


def test_programs_says_why_a_size_is_missing_and_what_is_not_an_entry() -> None:
    """Every keras_hub entry showed `tiny: -`, and 18 keras-hub classes followed as lines
    "not an entry yet" with no word on what an entry is."""
    from tpugraphs_tools.programs import list_programs

    result = run("programs")
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert not re.search(r"\b(tiny|small|base|medium|large): -", result.output)
    assert "tiny, small, base: not recorded (see below)" in text  # a catalog entry's cell
    assert ("no size: keras_hub/* entries: the recorded sizes cover the zoo only (a catalog "
            "entry needs the optional keras-hub") in text
    assert "`tgt programs --measure tiny` lowers every program now" in text
    assert ("keras-hub classes that are not entries (18): `--program keras_hub/<name>` cannot "
            "build them. An entry is a class with a published configuration that tgt builds at "
            "every preset; why each has none:") in text
    assert "Backbone, FeaturePyramidBackbone: base classes, not models" in text
    assert "BLIP2Backbone: built from sub-models" in text and "not an entry yet" not in text
    assert len(list_programs("keras_hub")) >= 40


def test_tile_summary_names_the_kernels_not_stored_and_why() -> None:
    """"kernels stored / skipped: 2 / 3" said neither which kernels nor why."""
    import io

    from rich.console import Console

    from tpugraphs_tools.cli import _collect_summary, _common
    from tpugraphs_tools.cli._common import Terminal
    from tpugraphs_tools.collect.summary import CollectSummary, TileSummary

    skipped = {f"fusion.{i}": f"no cpu-kernel-options choice changed it: 1 distinct config(s) "
               f"after {4 + i} tried {{'ok': 1, 'noop': {3 + i}}}" for i in range(8)}
    skipped["dot.3"] = "default config failed: WorkerError: crashed"
    tile = TileSummary("cpu-kernel-options", 2, len(skipped), skipped, 12, 10, {"ok": 10}, 0,
                       0, None, None, None, left_out=["copy.1", "reduce.2"])
    summary = CollectSummary("d", tiles={"mlp": tile})
    out = io.StringIO()
    term = Terminal(Console(file=out, width=300), Console(file=io.StringIO()))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_collect_summary, "terminal", term)
        patch.setattr(_common, "terminal", term)
        _collect_summary.print_summary(summary)
    lines = out.getvalue().splitlines()
    assert ("skipped 8 kernels, no cpu-kernel-options choice changed it: fusion.0, fusion.1, "
            "fusion.2, fusion.3, fusion.4, fusion.5 and 2 more (e.g. fusion.0: 1 distinct "
            "config(s) after 4 tried {'ok': 1, 'noop': 3})") in lines
    assert "skipped 1 kernel, default config failed: dot.3 (WorkerError: crashed)" in lines
    assert any(line.startswith("left out 2 kernels by --max-kernels (the cheapest") and
               line.endswith(": copy.1, reduce.2") for line in lines)
