"""Every input of a run or a plan is resolved before the first lowering or compile: a typo costs
seconds, names the plan item, and suggests the nearest names (collect/check.py)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from tpugraphs_tools.cli import collect_cmd, main
from tpugraphs_tools.collect import CollectItem, CollectRequest, collect, request_from_plan
from tpugraphs_tools.collect.summary import CollectSummary
from tpugraphs_tools.errors import CollectError

EXAMPLE = str(Path(__file__).parents[2] / "examples" / "my_program.py")


@pytest.fixture
def nothing_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail the test if any item is lowered, read or compiled."""

    def never(*_args: Any, **_kwargs: Any) -> Any:
        raise AssertionError("an item was lowered or compiled before every input was checked")

    monkeypatch.setattr("tpugraphs_tools.collect.run.build_graph", never)
    monkeypatch.setattr("tpugraphs_tools.collect.run.tile_sources", never)


def _one_line(output: str) -> str:
    lines = [line for line in output.splitlines() if line.strip()]
    assert len(lines) == 1, output
    return lines[0]


def test_a_missing_hlo_file_fails_before_any_compile(tmp_path: Path, nothing_runs: None) -> None:
    # Seen: `--program mlp --hlo ../garbage.txt` measured mlp for 170 s, then "no such file".
    out = tmp_path / "d"
    result = CliRunner().invoke(main, ["collect", "--program", "mlp", "--preset", "tiny",
                                       "--hlo", str(tmp_path / "garbage.txt"), "--out",
                                       str(out)])
    assert result.exit_code == 1
    assert _one_line(result.output) == f"error: {tmp_path / 'garbage.txt'}: no such file"
    assert not out.exists()  # nothing written either


def test_a_missing_file_names_the_nearest_files_beside_it(write_file: Callable[[str, str], Path],
                                                          tiny_hlo: str) -> None:
    real = write_file("module_0001.jit_f.before_optimizations.txt", tiny_hlo)
    typo = real.with_name("module_0001.jit_f.before_optimisations.txt")
    with pytest.raises(CollectError, match=r"no such file; did you mean "
                                           r"module_0001\.jit_f\.before_optimizations\.txt\?"):
        collect(CollectRequest(items=[CollectItem(hlo=str(typo))], out=str(real.parent / "d")))


def test_a_typo_in_plan_item_3_fails_in_seconds_naming_the_item(
        write_file: Callable[[str, str], Path], tiny_hlo: str, tmp_path: Path,
        nothing_runs: None) -> None:
    hlo = write_file("a.hlo", tiny_hlo)
    plan = {"out": str(tmp_path / "d"),
            "items": [{"hlo": str(hlo)}, {"program": "mlp", "preset": "tiny"},
                      {"program": "resnt50", "preset": "tiny"}]}
    with pytest.raises(CollectError) as err:
        collect(request_from_plan(plan, source="plan.yaml"))
    message = str(err.value)
    assert message.startswith("plan.yaml: items[2]: unknown program 'resnt50'; did you mean "
                              "resnet50")
    assert "\n" not in message and len(message) < 200
    assert not (tmp_path / "d").exists()


@pytest.mark.parametrize(("item", "expected"), [
    ({"program": "mlp", "preset": "tnyi"},
     "items[0]: program 'mlp' has no preset 'tnyi'; did you mean tiny?"),
    ({"program": f"{EXAMPLE}:make_fnn"}, "has no callable 'make_fnn'; did you mean make_fn?"),
    ({"program": "no_such_module_xyz:make_fn"}, "items[0]: cannot import user program"),
    ({"hlo": "folder"}, "items[0]: folder: a folder, not an HLO file"),
    ({"hlo": "garbage.hlo"}, "items[0]: garbage.hlo:1:"),  # tgt's parser, no XLA child
    ({"hlo": "module.bin"}, "items[0]: module.bin: unknown HLO file type"),
])
def test_every_kind_of_input_is_resolved_first(item: dict[str, str], expected: str,
                                               tmp_path: Path, nothing_runs: None,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "folder").mkdir()
    (tmp_path / "garbage.hlo").write_text("this is not HLO\n")
    (tmp_path / "module.bin").write_bytes(b"\0")
    with pytest.raises(CollectError) as err:
        collect(request_from_plan({"items": [item]}, source="p"))
    assert str(err.value).startswith("p: items[0]: ") and expected in str(err.value)


def test_several_bad_items_are_counted_in_the_one_line(tmp_path: Path,
                                                       nothing_runs: None) -> None:
    request = request_from_plan({"items": [{"hlo": "x.hlo"}, {"program": "mlpp"},
                                           {"program": "gtp"}]}, source="p")
    with pytest.raises(CollectError, match=r"^p: items\[0\]: x\.hlo: no such file "
                                           r"\(and 2 more items that cannot be read\)$"):
        collect(request)


def test_an_unknown_backend_fails_before_any_item(write_file: Callable[[str, str], Path],
                                                  tiny_hlo: str, nothing_runs: None) -> None:
    hlo = write_file("a.hlo", tiny_hlo)
    with pytest.raises(CollectError, match="backend 'no_such_backend' is not available here"):
        collect(CollectRequest(items=[CollectItem(hlo=str(hlo))], out=str(hlo.parent / "d"),
                               backend="no_such_backend"))


def test_an_unknown_program_on_the_command_line_is_one_short_line(tmp_path: Path) -> None:
    # Seen: one 1,800-character line listing 78 names, without "did you mean resnet50".
    result = CliRunner().invoke(main, ["collect", "--program", "resnet5", "--out",
                                       str(tmp_path / "d")])
    assert result.exit_code == 1
    line = _one_line(result.output)
    assert line.startswith("error: unknown program 'resnet5'; did you mean resnet50")
    assert len(line) < 200 and "`tgt programs` lists all" in line


@pytest.mark.parametrize(("args", "expected"), [
    (["--configs", "5"], "--configs cannot be combined with --plan"),
    (["--preset", "tiny", "--seed", "2"], "--preset, --seed cannot be combined with --plan"),
])
def test_flags_a_plan_would_ignore_are_refused(args: list[str], expected: str,
                                               tmp_path: Path) -> None:
    plan = tmp_path / "plan.yaml"
    plan.write_text("items:\n  - {program: mlp, preset: tiny}\n")
    result = CliRunner().invoke(main, ["collect", "--plan", str(plan), *args])
    assert result.exit_code == 2 and expected in result.output


def test_status_and_address_refuse_what_they_would_ignore(tmp_path: Path) -> None:
    status = CliRunner().invoke(main, ["collect", "--status", str(tmp_path), "--configs", "5"])
    assert status.exit_code == 2
    assert "--configs cannot be combined with --status" in status.output
    address = CliRunner().invoke(main, ["collect", "--program", "mlp", "--address", "h:6379"])
    assert address.exit_code == 2 and "give it with --executor ray" in address.output


def test_the_command_lines_backend_wins_over_the_plans(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    plan = tmp_path / "plan.yaml"
    plan.write_text("backend: gpu\nitems:\n  - {program: mlp, preset: tiny}\n")
    seen: list[CollectRequest] = []
    monkeypatch.setattr(collect_cmd, "_run", lambda request, *_: (
        seen.append(request), CollectSummary(dataset=request.out))[1])
    result = CliRunner().invoke(main, ["collect", "--plan", str(plan), "--backend", "cpu",
                                       "--out", str(tmp_path / "d")])
    assert result.exit_code == 0, result.output
    assert seen[0].backend == "cpu"


def test_a_program_that_cannot_be_built_here_fails_first(monkeypatch: pytest.MonkeyPatch,
                                                         nothing_runs: None) -> None:
    from tpugraphs_tools.programs import list_programs

    catalog = next(p.name for p in list_programs("keras_hub") if not p.unavailable)
    monkeypatch.setattr("tpugraphs_tools.programs.catalog._backend.keras_hub_version",
                        lambda: None)
    request = request_from_plan({"items": [{"program": catalog, "preset": "tiny"}]}, source="p")
    with pytest.raises(CollectError, match=rf"^p: items\[0\]: {catalog} needs keras-hub, not "
                                           r"installed: pip install"):
        collect(request)
