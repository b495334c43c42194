"""Train/valid/test assignment: the dataset's own splits, else a seeded split by program.

Splitting by program (not by graph) keeps every graph of a program in one split, so held-out
numbers measure generalisation to unseen programs rather than to re-lowerings of seen ones.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from tpugraphs_tools.baseline.data import GraphInfo


def program_splits(programs: list[str], seed: int,
                   fractions: tuple[float, float, float] = (0.7, 0.15, 0.15)) -> dict[str, str]:
    """program → split; with ≥ 3 programs valid and test each get at least one."""
    unique = sorted(set(programs))
    order = np.random.default_rng(seed).permutation(len(unique))
    shuffled = [unique[i] for i in order]
    n = len(shuffled)
    n_valid = int(fractions[1] * n)
    n_test = int(fractions[2] * n)
    if n >= 3:
        n_valid, n_test = max(1, n_valid), max(1, n_test)
    n_train = max(n - n_valid - n_test, 1 if n else 0)
    n_valid = min(n_valid, n - n_train)
    out = {}
    for i, program in enumerate(shuffled):
        out[program] = "train" if i < n_train else "valid" if i < n_train + n_valid else "test"
    return out


def assign_splits(infos: list[GraphInfo], seed: int) -> tuple[list[GraphInfo], str]:
    """Infos with a split each, and how it was decided ("dataset" or "by-program(seed=...)").

    When any graph carries a split, the dataset's splits are used and graphs without one are
    left out (mixing would let a program straddle splits).
    """
    if any(i.split for i in infos):
        return [i for i in infos if i.split], "dataset"
    mapping = program_splits([i.program for i in infos], seed)
    return ([dataclasses.replace(i, split=mapping[i.program]) for i in infos],
            f"by-program(seed={seed})")
