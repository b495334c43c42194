"""Train/valid/test for the baseline: the one split policy of ``tgt export`` (``format``).

Graphs are split **by program** (seeded, 80/10/10 of the distinct programs, like TpuGraphs'
published folders), so held-out numbers measure generalisation to unseen programs. Splits
stored in the dataset win, and the other graphs of their program follow them.
"""

from __future__ import annotations

import dataclasses

import polars as pl

from tpugraphs_tools.baseline.data import GraphInfo
from tpugraphs_tools.format import DEFAULT_RATIOS, assign_splits


def ratio_text(ratios: tuple[float, float, float]) -> str:
    return "/".join(f"{r:g}" for r in ratios)


def split_graph_infos(infos: list[GraphInfo], seed: int,
                  ratios: tuple[float, float, float] = DEFAULT_RATIOS
                  ) -> tuple[list[GraphInfo], str, list[str]]:
    """Infos with a split each, how it was decided, and conflicts (a program whose stored
    splits disagree) for the report's notes."""
    # positions as ids: tree file names may repeat across split folders
    frame = pl.DataFrame({"graph_id": [str(n) for n in range(len(infos))],
                          "program": [i.program for i in infos],
                          "split": [i.split for i in infos]},
                         schema={"graph_id": pl.String, "program": pl.String,
                                 "split": pl.String})
    plan = assign_splits(frame, by="program", seed=seed, ratios=ratios)
    stored = sum(i.split is not None for i in infos)
    by_program = f"by-program(seed={seed}, {ratio_text(ratios)})"
    method = ("dataset" if stored == len(infos) else by_program if stored == 0
              else f"dataset + {by_program}")
    return ([dataclasses.replace(i, split=plan.splits[str(n)]) for n, i in enumerate(infos)],
            method, plan.conflicts)
