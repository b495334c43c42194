"""A collected dataset carries none of the collecting machine's directories (stack frames in
the stored HLO protos, source_path, an HLO file's program_args) unless asked to."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from tpugraphs_tools.cli import main
from tpugraphs_tools.collect.graphs import portable_row
from tpugraphs_tools.hlo import portable_path, stored_source_files
from tpugraphs_tools.store import Dataset
from tpugraphs_tools.validate import validate_path

REPO = Path(__file__).resolve().parents[2]


def _private(tmp_path: Path) -> list[bytes]:
    folders = {str(REPO), str(tmp_path), str(tmp_path.resolve())}
    if len(str(Path.home())) > 1:
        folders.add(str(Path.home()))
    return [f.encode() for f in folders]


def _collect(tmp_path: Path, tiny_hlo: str, *extra: str) -> Path:
    hlo = tmp_path / "tiny.hlo"
    hlo.write_text(tiny_hlo)
    out = tmp_path / "d"
    result = CliRunner().invoke(main, ["collect", "--program", "mlp", "--preset", "tiny",
                                       "--hlo", str(hlo), "--configs", "0", "--out", str(out),
                                       *extra])
    assert result.exit_code == 0, result.output
    return out


def test_no_file_of_a_new_dataset_holds_a_path_of_this_machine(tmp_path: Path,
                                                                tiny_hlo: str) -> None:
    out = _collect(tmp_path, tiny_hlo)
    files = [p for p in out.rglob("*") if p.is_file()]
    assert any(p.name.endswith(".hlo.pb") for p in files)
    for path in files:
        data = path.read_bytes()
        for private in _private(tmp_path):
            assert private not in data, f"{path.relative_to(out)} holds {private.decode()}"
    ds = Dataset.open(out)
    [pb] = [p for p in files if p.name.endswith(".hlo.pb")]
    names = stored_source_files(pb.read_bytes(), ".hlo.pb")
    assert names and not any(n.startswith("/") for n in names)
    assert "tpugraphs_tools/programs/mlp.py" in names  # relative to the checkout, not dropped
    rows = ds.graphs().to_dicts()
    assert {json.loads(r["program_args"]).get("file") for r in rows} >= {"tiny.hlo"}
    assert not [f for f in validate_path(out).findings if f.check == "dataset.absolute_path"]


def test_keep_source_paths_keeps_them_and_validate_warns(tmp_path: Path, tiny_hlo: str) -> None:
    out = _collect(tmp_path, tiny_hlo, "--keep-source-paths")
    [pb] = out.glob("graphs/*.hlo.pb")
    assert str(REPO).encode() in pb.read_bytes()
    report = validate_path(out)
    found = [f for f in report.findings if f.check == "dataset.absolute_path"]
    assert found and all(f.severity == "warning" for f in found)
    assert not report.errors
    published = tmp_path / "pub"  # publish never ships them
    result = CliRunner().invoke(main, ["publish", str(out), "--out", str(published)])
    assert result.exit_code == 0, result.output
    for path in (p for p in published.rglob("*") if p.is_file()):
        for private in _private(tmp_path):
            assert private not in path.read_bytes(), f"{path.name} holds {private.decode()}"


def test_portable_names() -> None:
    assert portable_path("/x/lib/python3.11/site-packages/jax/_src/api.py") == "jax/_src/api.py"
    assert portable_path(str(REPO / "tests" / "a.py")) in ("tests/a.py", "a.py")
    assert portable_path("/somewhere/else/model.py") == "model.py"
    assert portable_path("relative/model.py") == "relative/model.py"
    row = portable_row({"graph_id": "g", "source_path": "/home/u/m.hlo",  # type: ignore[typeddict-item]
                        "program_args": json.dumps({"file": "/home/u/m.hlo"}),
                        "xla_flags": "--xla_dump_to=/home/u/dump --xla_foo=1"})
    assert row["source_path"] == "m.hlo" and json.loads(row["program_args"]) == {"file": "m.hlo"}
    assert row["xla_flags"] == "--xla_dump_to=dump --xla_foo=1"


def _user_program(root: Path) -> Path:
    """examples/my_program.py copied to ``root/proj/examples/`` (a folder of this test)."""
    target = root / "proj" / "examples" / "my_program.py"
    target.parent.mkdir(parents=True)
    shutil.copy(REPO / "examples" / "my_program.py", target)
    return target


def _graphs(out: Path) -> list[dict]:
    return Dataset.open(out).graphs().sort("graph_id").to_dicts()


def test_a_user_program_is_named_by_its_module_wherever_the_command_runs(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """It was stored as the path given (`../../proj/examples/my_program.py:make_fn`), which
    then named it in splits and plots; the path is provenance (`program_args` `file`)."""
    program = _user_program(tmp_path)
    elsewhere = tmp_path / "other" / "deep"
    elsewhere.mkdir(parents=True)
    for cwd, spec, out in ((program.parents[1], "examples/my_program.py:make_fn", "d1"),
                           (elsewhere, "../../proj/examples/my_program.py:make_fn", "d2")):
        monkeypatch.chdir(cwd)
        result = CliRunner().invoke(main, ["collect", "--program", spec, "--preset", "tiny",
                                           "--configs", "0", "--out", str(tmp_path / out)])
        assert result.exit_code == 0, result.output
    [one], [two] = _graphs(tmp_path / "d1"), _graphs(tmp_path / "d2")
    assert one["program"] == two["program"] == "my_program:make_fn"
    assert one["graph_id"] == two["graph_id"] and one["graph_id"].startswith("my_program-make_fn.")
    assert json.loads(one["program_args"])["file"] == "examples/my_program.py"  # under the cwd
    assert json.loads(two["program_args"])["file"] == "my_program.py"  # no directory of ours
    assert json.loads(two["program_args"])["preset"] == "tiny"
    package = tmp_path / "proj" / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    shutil.copy(program, package / "model.py")
    result = CliRunner().invoke(main, ["collect", "--program", "../../proj/pkg/model.py:make_fn",
                                       "--preset", "tiny", "--configs", "0", "--keep-source-paths",
                                       "--out", str(tmp_path / "d3")])
    assert result.exit_code == 0, result.output
    [three] = _graphs(tmp_path / "d3")
    assert three["program"] == "pkg.model:make_fn"  # named as Python imports it
    assert json.loads(three["program_args"])["file"] == str((package / "model.py").resolve())


def test_a_dataset_naming_a_user_program_by_path_keeps_that_name(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A dataset written before keeps one name per program: a rerun resumes its graphs and
    new graphs of the program join them under the name it already has."""
    from tpugraphs_tools.collect.graphs import collect_source, lower_program, write_graphs
    from tpugraphs_tools.programs import default_args, get_program

    program = _user_program(tmp_path)
    monkeypatch.chdir(program.parents[1])
    old = "../proj/examples/my_program.py:make_fn"  # what tgt stored until now
    args = default_args(get_program("examples/my_program.py:make_fn"), "tiny")
    _, src = lower_program("examples/my_program.py:make_fn", args)
    out = tmp_path / "d"
    write_graphs(Dataset.open(out, create=True),
                 [collect_source(src, program=old, program_args=args.as_dict())])
    [before] = _graphs(out)
    for batch in ("1", "2"):
        result = CliRunner().invoke(main, ["collect", "--program",
                                           "examples/my_program.py:make_fn", "--preset", "tiny",
                                           "--batch-size", batch, "--configs", "0", "--out",
                                           str(out)])
        assert result.exit_code == 0, result.output
        assert f"stored as '{old}', the name this dataset already gives it" in \
            " ".join(result.output.split())
    rows = _graphs(out)
    assert {r["program"] for r in rows} == {old} and len(rows) == 2
    assert before["graph_id"] in {r["graph_id"] for r in rows}  # the same graph, not a copy
    assert not validate_path(out).errors
