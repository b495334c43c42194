"""A collected dataset carries none of the collecting machine's directories (stack frames in
the stored HLO protos, source_path, an HLO file's program_args) unless asked to."""

from __future__ import annotations

import json
from pathlib import Path

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
