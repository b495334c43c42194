"""Tests of the program zoo: every program lowers, and the HLO has the ops each model promises.

Opcodes are counted with a small regex here on purpose: the real HLO parser lives elsewhere and
this file must not depend on it.
"""

from __future__ import annotations

import collections
import json
import re
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from tpugraphs_tools.errors import UnknownProgramError
from tpugraphs_tools.programs import (
    Program,
    ProgramArgs,
    UnknownPresetError,
    default_args,
    get_program,
    list_programs,
    lower,
    register,
)
from tpugraphs_tools.programs.sizes import count_instructions, instruction_count

ROOT = Path(__file__).resolve().parents[2]
INSTR = re.compile(r"^\s*(?:ROOT\s+)?%?[\w.\-]+ = .*? ([a-z][\w\-]*)\(")
NAMES = [p.name for p in list_programs("zoo")]  # the catalog: test_catalog.py
_CACHE: dict[tuple[str, str], str] = {}


def hlo(name: str, mode: str = "infer", **kw) -> str:
    """Un-optimised HLO text, cached per (program, mode) at the tiny preset unless kw given."""
    args = ProgramArgs(**{"preset": "tiny", "mode": mode, **kw})
    key = (name, repr(args))
    if key not in _CACHE:
        _CACHE[key] = lower(get_program(name), args).as_text(dialect="hlo")
    return _CACHE[key]


def opcodes(text: str, entry_only: bool = False) -> collections.Counter:
    """Opcode histogram of HLO text (optionally only the ENTRY computation)."""
    counts: collections.Counter = collections.Counter()
    in_entry = False
    for line in text.splitlines():
        if line.startswith("ENTRY"):
            in_entry = True
        elif line.startswith("}"):
            in_entry = False
        m = INSTR.match(line)
        if m and (in_entry or not entry_only):
            counts[m.group(1)] += 1
    return counts


def lines_with(text: str, opcode: str) -> list[str]:
    return [ln for ln in text.splitlines() if f" {opcode}(" in ln]


# --------------------------------------------------------------------------- registry


def test_required_programs_registered():
    required = {"resnet50", "resnet18", "transformer", "mlp", "efficientnet_b0", "detector"}
    required |= {"unet", "unet3d", "bert", "gpt", "gpt_decode", "vit", "mlp_mixer"}
    assert required <= set(NAMES)
    for p in list_programs():
        assert {"tiny", "base"} <= set(p.presets), p.name
        assert p.description


def test_unknown_program_names_the_nearest_ones_in_one_short_line():
    with pytest.raises(UnknownProgramError) as err:
        get_program("ResNt50")
    assert isinstance(err.value, KeyError)
    message = str(err.value)
    assert message.startswith("unknown program 'ResNt50'; did you mean resnet50")
    assert len(message) < 200 and "`tgt programs` lists all" in message  # not every name
    with pytest.raises(UnknownProgramError, match=r"'no_such_net' \(`tgt programs`"):
        get_program("no_such_net")  # nothing near: no suggestion
    with pytest.raises(UnknownProgramError):
        get_program("no_such_module_xyz:make_fn")
    with pytest.raises(UnknownProgramError, match="did you mean make_fn"):
        get_program("examples.my_program:make_fun")


def test_unknown_preset_rejected():
    with pytest.raises(UnknownPresetError, match="did you mean tiny"):
        lower(get_program("mlp"), ProgramArgs(preset="tine"))
    with pytest.raises(UnknownPresetError, match="tiny"):
        lower(get_program("mlp"), ProgramArgs(preset="huge"))
    with pytest.raises(UnknownPresetError):
        lower(get_program("mlp"), ProgramArgs(preset="tiny", mode="eval"))


def test_program_args_round_trip():
    args = ProgramArgs(batch=4, image_size=64, seq_len=None, dtype="bfloat16", mode="train")
    d = args.as_dict()
    assert ProgramArgs(**json.loads(json.dumps(d))) == args
    assert ProgramArgs.from_dict({**d, "added_later": 1}) == args


def test_default_args_resolves_preset_sizes():
    assert default_args("resnet50", "base").image_size == 224
    assert default_args("resnet50", "tiny").image_size == 32
    assert default_args("gpt", "base").seq_len == 1024
    assert default_args("bert", "tiny", batch=3).batch == 3


def test_register_replaces_and_lists():
    prog = get_program("mlp")
    clone = register(Program("zz_test_mlp", "copy", prog.presets, prog.build))
    try:
        assert get_program("zz_test_mlp") is clone
        assert "zz_test_mlp" in [p.name for p in list_programs()]
    finally:
        from tpugraphs_tools.programs import registry

        registry._REGISTRY.pop("zz_test_mlp")


# --------------------------------------------------------------------------- lowering


@pytest.mark.parametrize("mode", ["infer", "train"])
@pytest.mark.parametrize("name", NAMES)
def test_lowers_at_tiny(name: str, mode: str):
    text = hlo(name, mode)
    ops = opcodes(text)
    assert sum(ops.values()) == count_instructions(text) > 10
    if mode == "train":  # a full step: the backward pass doubles the dots/convs at least
        fwd = opcodes(hlo(name, "infer"))
        assert ops["dot"] + ops["convolution"] >= 2 * (fwd["dot"] + fwd["convolution"])


def test_bfloat16_lowers():
    text = hlo("vit", "train", dtype="bfloat16")
    assert "bf16[" in text


def test_resnet50_exact_opcodes():
    text = hlo("resnet50", preset="base", batch=1, image_size=224)
    ops = opcodes(text)
    assert ops["convolution"] == 53
    assert ops["dot"] == 1
    assert opcodes(text, entry_only=True)["parameter"] == 162
    assert ops["reduce-window"] == 1  # max-pool after the stem
    assert ops["reduce"] >= 1  # global average pool
    assert ops["multiply"] >= 53 and ops["add"] >= 53  # BN as scale & shift
    assert "f32[1,224,224,3]" in text


def test_efficientnet_depthwise():
    groups = re.findall(r"feature_group_count=(\d+)", hlo("efficientnet_b0"))
    assert groups and all(int(g) > 1 for g in groups)


def test_detector_gathers():
    assert opcodes(hlo("detector"))["gather"] >= 8  # 4 bilinear taps x (box, mask) RoI-align


@pytest.mark.parametrize("name", ["gpt", "bert", "gpt_decode", "transformer"])
def test_attention_batched_dots(name: str):
    assert any("lhs_batch_dims" in ln for ln in lines_with(hlo(name), "dot"))


def test_token_inputs_are_int32():
    _, example = get_program("bert").build(ProgramArgs(preset="tiny"))
    tokens = example[1]
    assert tokens.dtype == jnp.int32


def test_unet3d_volumetric_convs():
    convs = lines_with(hlo("unet3d"), "convolution")
    assert any("b012f_012io->b012f" in ln for ln in convs)


def test_gpt_decode_updates_cache():
    ops = opcodes(hlo("gpt_decode"))
    assert ops["dynamic-update-slice"] >= 2


# --------------------------------------------------------------------------- user programs


@pytest.mark.parametrize("spec,name", [
    ("examples.my_program:make_fn", "examples.my_program:make_fn"),   # a module keeps its name
    (str(ROOT / "examples" / "my_program.py") + ":make_fn", "my_program:make_fn"),  # no path
])
def test_user_program(spec: str, name: str):
    prog = get_program(spec)
    assert prog.name == name and prog.presets == ("tiny", "base")
    assert prog.source_file == str(ROOT / "examples" / "my_program.py")
    for mode in ("infer", "train"):
        lowered = lower(prog, ProgramArgs(preset="tiny", mode=mode))
        assert instruction_count(lowered) > 5


def test_user_program_relative_file(monkeypatch):
    monkeypatch.chdir(ROOT)
    prog = get_program("examples/my_program.py:make_fn")
    assert opcodes(lower(prog, ProgramArgs(preset="tiny")).as_text(dialect="hlo"))["dot"] == 3


# --------------------------------------------------------------------------- numerics


def random_like(tree, seed: int = 0):
    """What measurement does: N(0,1) floats, int32 in [0, 2)."""
    rng = np.random.default_rng(seed)

    def make(s):
        if jnp.issubdtype(s.dtype, jnp.integer):
            return jnp.asarray(rng.integers(0, 2, s.shape), s.dtype)
        return jnp.asarray(rng.standard_normal(s.shape), s.dtype)

    return jax.tree.map(make, tree)


def assert_finite(name: str, mode: str, **kw) -> None:
    fn, example = get_program(name).build(ProgramArgs(preset="tiny", mode=mode, batch=2, **kw))
    for leaf in jax.tree.leaves(jax.jit(fn)(*random_like(example))):
        if jnp.issubdtype(leaf.dtype, jnp.floating):
            assert bool(jnp.all(jnp.isfinite(leaf.astype(jnp.float32)))), name


@pytest.mark.parametrize(
    "name,mode", [("mlp", "train"), ("transformer", "train"), ("gpt_decode", "infer")]
)
def test_finite_on_random_inputs(name: str, mode: str):
    assert_finite(name, mode)


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["infer", "train"])
@pytest.mark.parametrize("name", NAMES)
def test_finite_on_random_inputs_all(name: str, mode: str):
    assert_finite(name, mode)


# --------------------------------------------------------------------------- size


@pytest.mark.slow
def test_base_train_module_is_large():
    """The deepest base-preset training step must exceed 100k un-optimised instructions."""
    lowered = lower(get_program("preact_resnet"), ProgramArgs(preset="base", mode="train"))
    assert instruction_count(lowered) >= 100_000
