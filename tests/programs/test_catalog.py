"""The keras-hub catalog as tgt programs: every entry lowers, a few collect, nothing downloads.

Skipped (with the reason) only when keras-hub is not installed; `make test` installs it.
The default run lowers one entry per family and collects a few at `tiny`; every entry in
both modes, and collections of more, run under ``-m slow``.
"""

from __future__ import annotations

import importlib.util
import os
import socket
import subprocess
import sys
from pathlib import Path

import jax
import numpy as np
import pytest

from tpugraphs_tools.errors import InstallError, KerasBackendError, ProgramError
from tpugraphs_tools.programs import ProgramArgs, default_args, get_program, list_programs, lower
from tpugraphs_tools.programs.catalog import (
    FAMILIES,
    INSTALL_HINT,
    KERAS_HUB,
    PREFIX,
    catalog_entries,
)

ROOT = Path(__file__).resolve().parents[2]
HAVE_KERAS_HUB = importlib.util.find_spec("keras_hub") is not None
needs_keras_hub = pytest.mark.skipif(not HAVE_KERAS_HUB, reason="keras-hub is not installed "
                                     "(pip install 'tpugraphs-tools[catalog]')")
ENTRIES = [e for e in catalog_entries() if not e.broken]
# One per kind of model a cost model must see: decoder LLM, text encoder, convnet, vision
# transformer, audio, diffusion.
FAST = ["keras_hub/llama3", "keras_hub/bert", "keras_hub/resnet", "keras_hub/vit",
        "keras_hub/whisper", "keras_hub/flux"]


def _lower(name: str, mode: str) -> jax.stages.Lowered:
    program = get_program(name)
    return lower(program, default_args(program, "tiny", mode=mode))


def test_entries_are_listed_beside_the_zoo_without_keras():
    """Listing needs no keras: entries are data, and each names its source and presets."""
    catalog = list_programs("keras_hub")
    assert len(catalog) >= 40 and all(p.name.startswith(PREFIX) for p in catalog)
    assert {p.name for p in list_programs("zoo")}.isdisjoint(p.name for p in catalog)
    assert len(list_programs()) == len(catalog) + len(list_programs("zoo"))
    for entry in catalog_entries():
        assert set(entry.sizes) == {"tiny", "small", "base"} and entry.source
        assert entry.family in FAMILIES and entry.target in ("tokens", "classes", "features")
    assert len({e.family for e in ENTRIES}) >= 6
    assert set(FAST) <= {e.program_name for e in ENTRIES}


def test_without_keras_hub_a_catalog_program_names_the_extra(tmp_path: Path):
    """A Python that cannot import keras_hub gets one InstallError naming the extra."""
    blocker = tmp_path / "keras_hub.py"
    blocker.write_text("raise ImportError('blocked for the test', name='keras_hub')\n")
    code = ("from tpugraphs_tools.programs import get_program, default_args, lower\n"
            "from tpugraphs_tools.errors import InstallError\n"
            "p = get_program('keras_hub/bert')\n"
            "try:\n    lower(p, default_args(p, 'tiny'))\n"
            "except InstallError as e:\n    print('INSTALL', e)\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)])}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    line = next(x for x in out.stdout.splitlines() if x.startswith("INSTALL"))
    assert line.endswith(INSTALL_HINT) and "keras_hub/bert" in line
    assert f"pip install 'tpugraphs-tools[catalog]' && pip install --no-deps '{KERAS_HUB}'" in line
    assert issubclass(InstallError, Exception)


def test_another_keras_backend_is_refused_not_silently_used():
    code = ("import os\nos.environ['KERAS_BACKEND'] = 'torch'\n"
            "from tpugraphs_tools.programs import get_program, default_args, lower\n"
            "from tpugraphs_tools.errors import KerasBackendError\n"
            "p = get_program('keras_hub/bert')\n"
            "try:\n    lower(p, default_args(p, 'tiny'))\n"
            "except KerasBackendError as e:\n    print('BACKEND', e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert out.returncode == 0, out.stderr
    assert "BACKEND KERAS_BACKEND=torch is set" in out.stdout
    assert issubclass(KerasBackendError, ProgramError)


@needs_keras_hub
@pytest.mark.parametrize("name", FAST)
def test_one_entry_per_family_lowers_in_both_modes(name: str):
    infer = _lower(name, "infer").as_text(dialect="hlo")
    train = _lower(name, "train").as_text(dialect="hlo")
    # the training step holds the backward pass and the optimiser: a much bigger module
    assert len(train.splitlines()) > 1.5 * len(infer.splitlines()) > 100


@needs_keras_hub
def test_weights_are_arguments_and_outputs_stay_finite_on_random_inputs():
    """Every variable is a parameter (nothing materialised as a constant) and the random
    arguments measurement feeds give finite outputs, so the numerics check can pass."""
    program = get_program("keras_hub/resnet")
    fn, example = program.build(default_args(program, "tiny", mode="infer"))
    trainable, non_trainable, inputs = example
    assert len(trainable) > 10 and len(non_trainable) > 4  # batch-norm moving statistics
    rng = np.random.default_rng(0)

    def fill(spec):
        if np.issubdtype(spec.dtype, np.integer):
            return rng.integers(0, 2, spec.shape).astype(spec.dtype)
        return rng.standard_normal(spec.shape).astype(spec.dtype)

    out = jax.jit(fn)(*jax.tree.map(fill, example))
    assert out.shape == (1, 1000) and np.isfinite(np.asarray(out)).all()
    lowered = jax.jit(fn).lower(*example).as_text(dialect="hlo")
    params = sum(1 for line in lowered.splitlines()
                 if "parameter(" in line and "ENTRY" not in line)
    assert params >= len(trainable) + len(non_trainable) + len(inputs)


@needs_keras_hub
def test_sizes_follow_the_presets_and_args():
    program = get_program("keras_hub/bert")
    args = default_args(program, "tiny", seq_len=24, batch=3)
    *_, inputs = program.build(args)[1]
    assert {k: v.shape for k, v in inputs.items()} == {
        "token_ids": (3, 24), "segment_ids": (3, 24), "padding_mask": (3, 24)}
    vit = get_program("keras_hub/vit")
    *_, images = vit.build(default_args(vit, "tiny", image_size=48))[1]
    assert images["images"].shape == (1, 48, 48, 3)
    with pytest.raises(ProgramError, match="no preset 'huge'"):
        lower(program, ProgramArgs(preset="huge"))


def _no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*_args, **_kwargs):
        raise AssertionError("a catalog program tried to open a network connection")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)


@needs_keras_hub
@pytest.mark.parametrize("name", ["keras_hub/bert", "keras_hub/clip"])
def test_no_catalog_program_touches_the_network(monkeypatch, name: str):
    """Building and lowering with sockets unable to connect (every entry: -m slow)."""
    _no_network(monkeypatch)
    _lower(name, "infer")


@pytest.mark.slow
@needs_keras_hub
@pytest.mark.parametrize("name", [e.program_name for e in ENTRIES])
def test_no_entry_touches_the_network(monkeypatch, name: str):
    _no_network(monkeypatch)
    _lower(name, "train")


@needs_keras_hub
@pytest.mark.parametrize("collection", ["layout", "tile"])
def test_a_catalog_entry_collects_and_validates(tmp_path: Path, collection: str):
    from click.testing import CliRunner

    from tpugraphs_tools.cli import main
    from tpugraphs_tools.store import Dataset
    from tpugraphs_tools.validate import validate_path

    kernels = ["--max-kernels", "2"] if collection == "tile" else []
    out = CliRunner().invoke(main, [
        "collect", "--program", "keras_hub/bert", "--preset", "tiny", "--collection",
        collection, "--configs", "2", *kernels, "--engine", "fixed", "--fixed-rounds", "2",
        "--warmup", "0", "--out", str(tmp_path / "ds")])
    assert out.exit_code == 0, out.output
    rows = Dataset.open(tmp_path / "ds").graphs().to_dicts()
    assert rows and {r["program"] for r in rows} == {"keras_hub/bert"}
    assert collection == "tile" or rows[0]["num_configurable"] > 0
    assert validate_path(tmp_path / "ds").findings == []


@needs_keras_hub
def test_the_fast_families_collect_their_graphs(tmp_path: Path):
    from tpugraphs_tools.collect import CollectItem, CollectRequest, collect
    from tpugraphs_tools.store import Dataset

    others = [n for n in FAST if n != "keras_hub/bert"]
    collect(CollectRequest(items=[CollectItem(program=n, program_args=ProgramArgs(
        preset="tiny")) for n in others], out=str(tmp_path / "ds")))
    rows = Dataset.open(tmp_path / "ds").graphs().to_dicts()
    assert sorted(r["program"] for r in rows) == sorted(others)
    assert all(r["num_nodes"] > 50 and r["num_configurable"] > 0 for r in rows)


@pytest.mark.slow
@needs_keras_hub
@pytest.mark.parametrize("mode", ["infer", "train"])
@pytest.mark.parametrize("name", [e.program_name for e in ENTRIES])
def test_every_entry_lowers_and_compiles(name: str, mode: str):
    _lower(name, mode).compile()


@pytest.mark.slow
@needs_keras_hub
@pytest.mark.parametrize("name", [e.program_name for e in ENTRIES])
def test_every_entry_lowers_at_small(name: str):
    program = get_program(name)
    text = lower(program, default_args(program, "small")).as_text(dialect="hlo")
    assert text.startswith("HloModule")
