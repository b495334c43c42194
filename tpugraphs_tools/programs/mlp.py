"""A plain multi-layer perceptron: the smallest realistic program, handy as a smoke test."""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import jax

from tpugraphs_tools.programs import layers as L
from tpugraphs_tools.programs.registry import Program, ProgramArgs, register
from tpugraphs_tools.programs.train import build_program, resolve


@dataclass(frozen=True)
class MlpPreset:
    """Input features, hidden widths, classes."""

    features: int
    hidden: tuple[int, ...]
    classes: int


PRESETS = {
    "tiny": MlpPreset(features=16, hidden=(32, 32), classes=4),
    "small": MlpPreset(features=784, hidden=(256, 256), classes=10),
    "base": MlpPreset(features=784, hidden=(1024, 1024, 1024), classes=10),
}


def build(args: ProgramArgs):
    """Dense+ReLU stack on flat features [B, F] -> logits; train adds int labels."""
    cfg = resolve(PRESETS, args, "mlp")
    dtype = L.dtype_of(args.dtype)
    widths = (cfg.features, *cfg.hidden, cfg.classes)
    params = [L.dense_spec(a, b, dtype) for a, b in itertools.pairwise(widths)]

    def forward(p, x):
        for lp in p[:-1]:
            x = jax.nn.relu(L.dense(x, lp))
        return L.dense(x, p[-1])

    x = L.spec((args.batch, cfg.features), dtype)
    labels = L.ids_spec((args.batch,))
    return build_program(args, params, [x], forward, [labels], optimizer="sgd")


register(
    Program(
        name="mlp",
        description="Multi-layer perceptron classifier (dense + ReLU)",
        presets=tuple(PRESETS),
        build=build,
    )
)
