"""Config search strategies, seeded and reproducible.

``default``: the compiler's choice plus small perturbations of it (1–3 tensors changed), like
TpuGraphs' default collection. ``random``: every configurable tensor gets a random layout, like
TpuGraphs' random collection. Both always start with the all-default config (index 0), which
is the reference every other config is timed against.

Layouts are drawn over memory orders, not over permutations: a random order of the dims larger
than 1, stored as its canonical ``minor_to_major`` (configs/layout.py). So two emitted configs
are never the same program, a perturbation never restates the default's order, and a tensor
with k dims larger than 1 gets each of its k! orders with equal chance.
"""

from __future__ import annotations

import numpy as np

from tpugraphs_tools.configs.layout import Layout, LayoutConfig, LayoutSpace, LayoutTensor

STRATEGIES = ("default", "random")


def _random_layout(rng: np.random.Generator, tensor: LayoutTensor, avoid_default: bool) -> Layout:
    """A canonical layout of a uniformly drawn memory order (not the default's if asked)."""
    big = [d for d in tensor.default if tensor.dims[d] > 1]
    for _ in range(16):
        layout = tensor.canonical(tuple(big[int(i)] for i in rng.permutation(len(big))))
        if not avoid_default or not tensor.is_default_order(layout):
            return layout
    # Tensors in the space have ≥ 2 dims > 1: reversing their order always differs.
    return tensor.canonical(tuple(reversed(big)))


def _perturbation(rng: np.random.Generator, space: LayoutSpace) -> LayoutConfig:
    k = int(rng.integers(1, min(3, len(space.tensors)) + 1))
    picks = rng.choice(len(space.tensors), size=k, replace=False)
    chosen = {}
    for i in picks:
        t = space.tensors[int(i)]
        chosen[(t.config_index, t.slot)] = _random_layout(rng, t, avoid_default=True)
    return LayoutConfig.of(chosen)


def _fully_random(rng: np.random.Generator, space: LayoutSpace) -> LayoutConfig:
    return LayoutConfig.of({(t.config_index, t.slot): _random_layout(rng, t, avoid_default=False)
                            for t in space.tensors})


def generate_configs(space: LayoutSpace, count: int, strategy: str = "default",
                     seed: int = 0) -> list[LayoutConfig]:
    """``count`` physically distinct configs (fewer if the space is smaller), default first.

    Configs are deduplicated on their canonical form; for ``random`` a config stating every
    tensor's default order is still distinct from the all-default one (explicit layouts vs
    "the compiler picks"), as in TpuGraphs.
    """
    if strategy not in STRATEGIES:
        raise ValueError(f"unknown strategy {strategy!r}; choose one of {STRATEGIES}")
    rng = np.random.default_rng(seed)
    configs = [LayoutConfig()]
    if not space.tensors:
        return configs
    make = _perturbation if strategy == "default" else _fully_random
    seen = {configs[0]}
    attempts = 0
    while len(configs) < count and attempts < 20 * count:
        attempts += 1
        config = space.canonical(make(rng, space))
        if config not in seen:
            seen.add(config)
            configs.append(config)
    return configs
