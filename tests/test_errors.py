"""The error tree: every exception class tgt defines lives in errors.py under TgtError, old
import locations still name the same classes, and an escaped WorkerError is one CLI line."""

from __future__ import annotations

import ast
import builtins
import inspect
from pathlib import Path

import pytest
from click.testing import CliRunner

import tpugraphs_tools
from tpugraphs_tools import errors

PACKAGE = Path(tpugraphs_tools.__file__).parent


def _exception_names() -> set[str]:
    return {name for name, obj in vars(errors).items()
            if inspect.isclass(obj) and issubclass(obj, BaseException)}


def test_no_exception_class_is_defined_outside_errors_py() -> None:
    builtin = {name for name, obj in vars(builtins).items()
               if inspect.isclass(obj) and issubclass(obj, BaseException)}
    known = _exception_names() | builtin
    outside = []
    for path in PACKAGE.rglob("*.py"):
        if path.name == "errors.py" and path.parent == PACKAGE:
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not isinstance(node, ast.ClassDef):
                continue
            bases = {b.id if isinstance(b, ast.Name) else getattr(b, "attr", "")
                     for b in node.bases}
            if bases & known:
                outside.append(f"{path.relative_to(PACKAGE)}:{node.lineno} {node.name}")
    assert outside == []


def test_every_error_is_a_documented_tgt_error() -> None:
    for name in _exception_names():
        cls = getattr(errors, name)
        assert issubclass(cls, errors.TgtError), name
        doc = (cls.__doc__ or "").strip()
        assert len(doc.splitlines()) == 1 and doc.endswith("."), name
        assert name in (errors.__doc__ or ""), f"{name} missing from the tree in the docstring"


@pytest.mark.parametrize(("module", "name"), [
    ("tpugraphs_tools.programs", "ProgramArgsError"),
    ("tpugraphs_tools.programs", "UnknownPresetError"),
    ("tpugraphs_tools.hlo.text", "StatementError"),
    ("tpugraphs_tools.baseline", "NothingToScore"),
    ("tpugraphs_tools.collect.ray_executor", "RayUnavailableError"),
    ("tpugraphs_tools.collect.plan", "PlanError"),
    ("tpugraphs_tools.validate.npz_reader", "NpzError"),
    ("tpugraphs_tools._xla_compat", "XlaCompatError"),
    ("tpugraphs_tools.measure", "WorkerError"),
])
def test_old_import_locations_name_the_same_class(module: str, name: str) -> None:
    mod = pytest.importorskip(module)
    assert getattr(mod, name) is getattr(errors, name)


@pytest.mark.parametrize(("cls", "builtin"), [
    (errors.UnknownProgramError, KeyError),
    (errors.ProgramArgsError, ValueError),
    (errors.UnknownPresetError, ValueError),
    (errors.StatementError, ValueError),  # hlo/build.py re-raises ValueErrors of its parsers
    (errors.WorkerError, RuntimeError),
    (errors.NothingToScore, errors.DatasetError),
])
def test_callers_catching_the_old_base_still_catch(cls: type, builtin: type) -> None:
    assert issubclass(cls, builtin)


def test_stage_groups() -> None:
    assert issubclass(errors.WorkerError, errors.MeasureError)
    assert issubclass(errors.PlanError, errors.CollectError)
    assert issubclass(errors.NpzError, errors.ValidateError)
    assert issubclass(errors.HloParseError, errors.HloError)
    assert issubclass(errors.StatementError, errors.HloError)
    assert issubclass(errors.XlaCompatError, errors.InstallError)
    assert issubclass(errors.RayUnavailableError, errors.InstallError)
    assert issubclass(errors.NothingToScore, errors.BaselineError)
    assert errors.NpzError("bad", key="node_feat").key == "node_feat"
    assert str(errors.UnknownProgramError("no such program")) == "no such program"


def test_a_worker_error_reaching_the_cli_is_one_line_not_a_traceback(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, write_file, tiny_hlo: str) -> None:
    import tpugraphs_tools.collect as collect_face
    from tpugraphs_tools.cli import main

    def fail(*_args: object, **_kwargs: object) -> None:
        raise errors.WorkerError("default config failed: boom")

    monkeypatch.setattr(collect_face, "collect", fail)  # the CLI calls the package's face
    hlo = write_file("tiny.hlo", tiny_hlo)
    result = CliRunner().invoke(main, ["collect", "--hlo", str(hlo), "--out",
                                       str(tmp_path / "d"), "--configs", "0"])
    assert result.exit_code == 1
    assert "error: default config failed: boom" in result.output
    assert "Traceback" not in result.output and isinstance(result.exception, SystemExit)
