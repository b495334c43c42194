"""The HLO corpus (tests/hlo/corpus): modules in the styles XLA prints — multi-line
instructions, one-line modules, execution threads, async shorthand, collectives, control flow,
send/recv, bf16/f8/dynamic/sparse shapes — read exactly as XLA's own parser reads them, and
the invalid ones refused on one line (library and CLI)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from tpugraphs_tools.cli import main
from tpugraphs_tools.errors import HloParseError
from tpugraphs_tools.features import featurize
from tpugraphs_tools.format import OPCODE_IDS
from tpugraphs_tools.hlo import Module, from_file, parse_hlo_text
from tpugraphs_tools.hlo.opcodes import NEWER_OPCODES, XLA_OPCODES

CORPUS = Path(__file__).parent / "corpus"
VALID = sorted(CORPUS.glob("*.hlo"))
INVALID = sorted((CORPUS / "invalid").glob("*.hlo"))
# enum names (kFoo) whose printed opcode is not their kebab-case spelling
_ALIASES = {"clz": "count-leading-zeros", "cos": "cosine", "sin": "sine", "exp": "exponential",
            "expm1": "exponential-minus-one", "log1p": "log-plus-one",
            "population-count": "popcnt", "optimization-barrier": "opt-barrier",
            "top-k": "topk"}


def hlo():
    from tpugraphs_tools._xla_compat import hlo_bindings

    return hlo_bindings()


def _introspects() -> bool:
    """jaxlib >= 0.10 lets Python walk a parsed module (computations, opcodes); 0.9 does not."""
    ns = hlo()
    return hasattr(ns, "HloOpcode") and hasattr(ns.HloModule, "computations")


needs_introspection = pytest.mark.skipif(
    not _introspects(), reason="this jaxlib binds no HLO introspection to compare against")


def opcode_text(opcode: object) -> str:
    """``HloOpcode.kReduceScatter`` → ``reduce-scatter``."""
    name = str(opcode).rsplit(".", 1)[-1][1:]
    kebab = re.sub(r"(?<!^)(?=[A-Z])", "-", name).lower()
    return _ALIASES.get(kebab, kebab)


def structure(module: Module) -> dict[str, list[tuple]]:
    return {c.name: sorted((i.name, i.opcode, tuple(i.operands)) for i in c.instructions)
            for c in module.computations}


def xla_structure(xla_module: object) -> dict[str, list[tuple]]:
    return {c.name: sorted((i.name, opcode_text(i.opcode), tuple(o.name for o in i.operands()))
                           for i in c.instructions())
            for c in xla_module.computations()}  # type: ignore[attr-defined]


def keyed_features(module: Module) -> tuple[dict, list]:
    """Features and edges keyed by (computation, instruction): independent of node order."""
    graph = featurize(module)
    names = [(c.name, i.name) for c, i in module.instructions()]
    rows = {n: (int(graph.node_opcode[k]), graph.node_feat[k].tolist())
            for k, n in enumerate(names)}
    edges = sorted((names[u], names[v]) for u, v in graph.edge_index.tolist())
    return rows, edges


@needs_introspection
def test_opcode_table_is_the_installed_xla_one() -> None:
    members = [getattr(hlo().HloOpcode, m) for m in dir(hlo().HloOpcode) if m.startswith("k")]
    installed = {opcode_text(m) for m in members}
    assert installed <= XLA_OPCODES  # every opcode this XLA parses is known to tgt
    assert XLA_OPCODES - installed <= NEWER_OPCODES  # the rest: from newer supported jaxlibs


@needs_introspection
@pytest.mark.parametrize("path", VALID, ids=lambda p: p.name)
def test_corpus_module_reads_as_xla_reads_it(path: Path, tmp_path: Path) -> None:
    src = from_file(path)
    xla = hlo().hlo_module_from_text(path.read_text())
    # the computations, instructions, opcodes (async ones expanded) and operands XLA holds
    assert structure(src.module) == xla_structure(xla)
    expected = keyed_features(src.module)
    # the same features from XLA's re-print and from its proto
    assert keyed_features(parse_hlo_text(xla.to_string())) == expected
    pb = tmp_path / "module.pb"
    pb.write_bytes(xla.as_serialized_hlo_module_proto())
    from_pb = from_file(pb)
    assert structure(from_pb.module) == structure(src.module)
    assert keyed_features(from_pb.module) == expected
    # no opcode lost: id 0 only for XLA opcodes TpuGraphs' table does not have
    graph = featurize(src.module)
    for (_, inst), op in zip(src.module.instructions(), graph.node_opcode, strict=True):
        assert (op == 0) == (inst.opcode not in OPCODE_IDS), inst.name


def test_async_shorthand_is_expanded_as_xla_means_it() -> None:
    module = from_file(CORPUS / "async_collectives.hlo").module
    graph = featurize(module)
    index = {i.name: k for k, (_, i) in enumerate(module.instructions())}
    insts = {i.name: i for _, i in module.instructions()}
    # ids from tpugraphs_opcodes.csv: async-start 115, async-update 116, async-done 117;
    # all-gather-start 112, all-reduce-start 109, collective-permute-start 105, copy-start 29
    expected = {"rs-start": 115, "rs-done": 117, "cc-update": 116, "ag-start": 112,
                "ar-start": 109, "cp-start": 105, "copy-start": 29, "reduce-scatter": 111}
    assert {n: int(graph.node_opcode[index[n]]) for n in expected} == expected
    start, wrapped = insts["rs-start"], insts["reduce-scatter"]
    assert start.attrs == {} and start.called_computations == ["async_wrapped"]
    assert wrapped.attrs["dimensions"] == "{0}" and wrapped.called_computations == ["add"]
    edges = {tuple(e) for e in graph.edge_index.tolist()}
    assert (index["rs-start"], index["reduce-scatter"]) in edges  # start → wrapped root
    assert graph.node_feat[index["rs-start"], 31] == 0  # dimensions live on the wrapped op


def test_execution_threads_are_kept() -> None:
    module = from_file(CORPUS / "host_offload.hlo").module
    threads = {c.name: c.execution_thread for c in module.computations}
    assert threads == {"host_fn": "host", "host_wrapped": "host", "async_wrapped": "host",
                       "main": "main"}


def test_layouts_do_not_change_the_reading() -> None:
    one_line = parse_hlo_text((CORPUS / "one_line_module.hlo").read_text())
    lines = parse_hlo_text((CORPUS / "jax_control_flow.hlo").read_text())
    wrapped = parse_hlo_text((CORPUS / "multiline_instructions.hlo").read_text())
    optimized = parse_hlo_text((CORPUS / "jax_control_flow_optimized.hlo").read_text())
    for a, b in ((one_line, lines), (wrapped, optimized)):
        fa, fb = featurize(a).arrays(), featurize(b).arrays()
        assert all(np.array_equal(fa[k], fb[k]) for k in fa)


@pytest.mark.parametrize("path", INVALID, ids=lambda p: p.name)
def test_invalid_module_is_refused_on_one_line(path: Path) -> None:
    with pytest.raises(HloParseError) as info:
        from_file(path)
    message = str(info.value)
    assert message.startswith(str(path)) and "\n" not in message
    assert "XLA" in message


RUNNER = CliRunner(env={"COLUMNS": "300"})


@pytest.mark.parametrize("name", ["unknown_opcode", "dangling_operand", "two_modules",
                                  "xla_aborts"])
def test_cli_refuses_invalid_modules_and_writes_nothing(name: str, tmp_path: Path) -> None:
    out = tmp_path / "d"
    path = CORPUS / "invalid" / f"{name}.hlo"
    result = RUNNER.invoke(main, ["collect", "--hlo", str(path), "--out", str(out),
                                  "--configs", "0"], catch_exceptions=False)
    assert result.exit_code == 1
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith(f"error: {path}")
    assert "Traceback" not in result.output
    assert not list(out.glob("graphs/*"))


@pytest.mark.parametrize("name", ["one_line_module", "host_offload"])
def test_cli_collects_corpus_modules_and_stores_their_text(name: str, tmp_path: Path) -> None:
    out = tmp_path / "d"
    path = CORPUS / f"{name}.hlo"
    result = RUNNER.invoke(main, ["collect", "--hlo", str(path), "--out", str(out),
                                  "--configs", "0"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    [stored] = out.glob("graphs/*.hlo.txt")
    assert stored.read_bytes() == path.read_bytes()
    [npz] = out.glob("graphs/*.npz")
    with np.load(npz) as arrays:
        expected = featurize(from_file(path).module).arrays()
        assert all(np.array_equal(arrays[k], expected[k]) for k in expected)
