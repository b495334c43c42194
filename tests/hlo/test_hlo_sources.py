"""HLO sources: jax Lowered/Compiled objects, serialized HloModuleProtos and text files all give
the same module (compared through the featurized arrays)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tpugraphs_tools._xla_compat import lowered_hlo_proto
from tpugraphs_tools.errors import HloParseError
from tpugraphs_tools.features import featurize
from tpugraphs_tools.hlo import HloSource, fingerprint, from_compiled, from_file, from_lowered
from tpugraphs_tools.hlo.sources import stored_hlo


@pytest.fixture(scope="module")
def lowered():
    import jax
    import jax.numpy as jnp
    from jax import lax

    def net(x, k, w):
        y = lax.conv_general_dilated(x, k, (2, 2), "SAME",
                                     dimension_numbers=("NHWC", "HWIO", "NHWC"))
        y = jax.nn.relu(y).reshape(x.shape[0], -1)
        return jnp.sum(y @ w, axis=1)

    args = [jax.ShapeDtypeStruct(s, jnp.float32)
            for s in [(2, 8, 8, 3), (3, 3, 3, 4), (64, 5)]]
    return jax.jit(net).lower(*args)


def assert_same_arrays(a: HloSource, b: HloSource) -> None:
    fa, fb = featurize(a.module).arrays(), featurize(b.module).arrays()
    assert fa.keys() == fb.keys()
    for key in fa:
        assert fa[key].dtype == fb[key].dtype, key
        assert np.array_equal(fa[key], fb[key]), key


def test_proto_file_from_lowered_matches_from_lowered(lowered, tmp_path: Path) -> None:
    path = tmp_path / "net.pb"
    path.write_bytes(lowered_hlo_proto(lowered))
    direct = from_lowered(lowered, origin="net")
    via_proto = from_file(path)
    assert via_proto.kind == "hlo-proto" and via_proto.stage == "unoptimized"
    assert via_proto.proto == path.read_bytes()
    assert direct.kind == "jax" and direct.origin == "net"
    assert via_proto.module.instruction_count == direct.module.instruction_count > 10
    assert_same_arrays(direct, via_proto)
    assert fingerprint(direct.module) == fingerprint(via_proto.module)


def test_compiled_proto_matches_from_compiled(lowered, tmp_path: Path) -> None:
    compiled = lowered.compile()
    direct = from_compiled(compiled, origin="net")
    assert direct.stage == "optimized"
    assert any(i.opcode == "fusion" for _, i in direct.module.instructions())
    path = tmp_path / "net_opt.hlo.pb"
    path.write_bytes(direct.proto)
    via_proto = from_file(path, stage="optimized")
    assert via_proto.stage == "optimized"
    assert_same_arrays(direct, via_proto)


def test_text_file_matches_from_lowered_and_is_stored_as_its_own_text(lowered,
                                                                       tmp_path: Path) -> None:
    path = tmp_path / "net.hlo"
    path.write_text(lowered.as_text(dialect="hlo"))
    src = from_file(path)
    assert src.kind == "hlo-text" and src.text == path.read_text()
    assert src.proto is None  # no proto re-serialized from text: it would fill constants
    assert stored_hlo(src) == (path.read_bytes(), ".hlo.txt")
    assert_same_arrays(from_lowered(lowered, origin="net"), src)
    from tpugraphs_tools._xla_compat import hlo_bindings

    again = tmp_path / "again.pb"
    again.write_bytes(hlo_bindings().hlo_module_from_text(src.text)
                      .as_serialized_hlo_module_proto())
    assert_same_arrays(src, from_file(again))


def test_proto_file_is_stored_as_given(lowered, tmp_path: Path) -> None:
    path = tmp_path / "net.pb"
    path.write_bytes(lowered.compiler_ir("hlo").as_serialized_hlo_module_proto())
    assert stored_hlo(from_file(path)) == (path.read_bytes(), ".hlo.pb")


def test_text_xla_cannot_parse_is_refused_with_xla_message(write_file) -> None:
    path = write_file("new_op.txt", "HloModule m\n\nENTRY main {\n  x = f32[4]{0} parameter(0)\n"
                                    "  ROOT y = f32[4]{0} brand-new-op(x)\n}\n")
    with pytest.raises(HloParseError) as info:
        from_file(path)
    message = str(info.value)
    assert message.startswith(f"{path}:5: XLA refuses the module: ")
    assert "Unknown opcode: brand-new-op" in message and "\n" not in message


def test_missing_file_names_the_path(tmp_path: Path) -> None:
    path = tmp_path / "nope" / "missing.hlo"
    with pytest.raises(HloParseError, match="no such file") as info:
        from_file(path)
    assert str(path) in str(info.value)


def test_unknown_suffix_is_refused(write_file) -> None:
    path = write_file("module.json", "{}")
    with pytest.raises(HloParseError, match="unknown HLO file type"):
        from_file(path)


def test_garbage_proto_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "junk.pb"
    path.write_bytes(b"\xff\x00not a proto at all\x13\x37")
    with pytest.raises(HloParseError) as info:
        from_file(path)
    assert str(path) in str(info.value)


def test_binary_file_with_text_suffix_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "bin.hlo"
    path.write_bytes(b"\xff\xfe\x00\x81binary")
    with pytest.raises(HloParseError, match="not UTF-8"):
        from_file(path)
