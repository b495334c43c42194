"""The counts of a dataset's config rows, defined once for every command that shows one.

``configs.parquet`` holds two kinds of row per graph:

- **configs**: one row per config tried (the compiler default included), whatever its status:
  ``ok``, a ``noop``/``duplicate`` of an earlier config, or a failure. With enough distinct
  configs in the space, a layout graph has as many as ``--configs`` asked for.
- **infeasible rows**: tiles the device cannot run (registers or shared memory over its
  limits): recorded with the reason, never compiled, not configs either.
- **control rows**: timing checks, not configs: the paired engine's A/A controls (a copy of the
  default timed in each batch) and repeats (a config re-timed in another window). Never in the
  npz.

Of the configs, the **labels** are the ``ok`` ones: each has a measured runtime and an npz row
(the default's label is 1). ``num_configs`` in graphs.parquet counts them too.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from typing import Any

import polars as pl

CONTROL_STATUSES = ("control", "repeat")   # measure.CONTROL, measure.REPEAT
INFEASIBLE_STATUS = "infeasible"           # measure.INFEASIBLE
LABEL_STATUS = "ok"                        # measure.OK


def _plural(count: int, word: str) -> str:
    return f"{count} {word}" + ("" if count == 1 else "s")


@dataclass(frozen=True)
class ConfigCounts:
    """Configs, labels and control rows of some graphs (module docstring: the definitions)."""

    configs: int = 0       # config rows, default included, any status (control rows not)
    labels: int = 0        # ok configs: a measured runtime and an npz row each
    control_rows: int = 0  # A/A control and repeat rows: timing checks, not configs
    infeasible: int = 0    # tiles over the device's limits: never compiled, not configs

    @property
    def rows(self) -> int:
        """configs.parquet rows: configs + control rows + infeasible rows."""
        return self.configs + self.control_rows + self.infeasible

    @classmethod
    def of_statuses(cls, statuses: Mapping[Any, int]) -> ConfigCounts:
        """From rows counted by status (names, or measure.Status: a str enum)."""
        controls = sum(statuses.get(s, 0) for s in CONTROL_STATUSES)
        infeasible = statuses.get(INFEASIBLE_STATUS, 0)
        return cls(configs=sum(statuses.values()) - controls - infeasible,
                   labels=statuses.get(LABEL_STATUS, 0), control_rows=controls,
                   infeasible=infeasible)

    @classmethod
    def of_rows(cls, statuses: Iterable[str]) -> ConfigCounts:
        """From the rows' statuses."""
        found: dict[str, int] = {}
        for status in statuses:
            found[str(status)] = found.get(str(status), 0) + 1
        return cls.of_statuses(found)

    def __add__(self, other: ConfigCounts) -> ConfigCounts:
        return ConfigCounts(self.configs + other.configs, self.labels + other.labels,
                            self.control_rows + other.control_rows,
                            self.infeasible + other.infeasible)

    def describe(self) -> str:
        """``6 configs (6 labels) + 1 control row``: the words every command uses (``+ 2
        infeasible`` where tiles over the device's limits were left out)."""
        text = f"{_plural(self.configs, 'config')} ({_plural(self.labels, 'label')})"
        text += (f" + {_plural(self.control_rows, 'control row')}"
                 if self.control_rows else "")
        return text + (f" + {self.infeasible} infeasible" if self.infeasible else "")

    def to_json(self) -> dict[str, int]:
        return {**asdict(self), "rows": self.rows}


def config_counts(configs: pl.DataFrame | pl.LazyFrame) -> dict[str, ConfigCounts]:
    """Per graph id, from a configs table (only its ``graph_id`` and ``status`` are read)."""
    statuses: dict[str, dict[str, int]] = {}
    for graph_id, status, n in configs.lazy().group_by("graph_id", "status").len() \
            .collect(engine="streaming").iter_rows():
        statuses.setdefault(str(graph_id), {})[str(status)] = int(n)
    return {graph_id: ConfigCounts.of_statuses(found) for graph_id, found in statuses.items()}


def total_counts(counts: Iterable[ConfigCounts]) -> ConfigCounts:
    """The sum of per-graph counts."""
    total = ConfigCounts()
    for part in counts:
        total += part
    return total
