"""A collection interrupted by an earlier tgt resumes after the upgrade.

The measurement options took their flags' names (``fixed_rounds`` was ``repeats``, ``engine``
was ``timing``), but a journal's header keeps the keys it was written with: a resumed
collection compares its header with the interrupted one's, and a renamed key would refuse
every journal written before the rename.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.hlo_samples import DOT_RESHAPE_HLO
from tpugraphs_tools.collect import journal as journal_module
from tpugraphs_tools.collect.run import CollectItem, CollectRequest, collect
from tpugraphs_tools.measure import MeasureOptions
from tpugraphs_tools.store import WORK_DIR, Dataset

# The header of a fixed-engine journal as tgt wrote it before the rename (key for key).
OLD_HEADER = {"strategy": "default", "seed": 0, "warmup": 0, "repeats": 2, "rtol": None,
              "timing": "fixed"}


class Interrupted(Exception):
    """Stands in for the kill that stopped the earlier run after its first rows."""


def test_a_journal_written_before_the_rename_resumes(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    hlo = tmp_path / "small.hlo"
    hlo.write_text(DOT_RESHAPE_HLO)
    options = MeasureOptions(configs=3, warmup=0, fixed_rounds=2, engine="fixed",
                             isolation="none", timeout=60)
    request = CollectRequest(items=[CollectItem(hlo=str(hlo), options=options)],
                             out=str(tmp_path / "data"))
    original = journal_module.ConfigJournal.append

    def append_then_stop(self: journal_module.ConfigJournal, row: object) -> None:
        original(self, row)  # type: ignore[arg-type]
        raise Interrupted

    with monkeypatch.context() as patch:
        patch.setattr(journal_module.ConfigJournal, "append", append_then_stop)
        with pytest.raises(Interrupted):
            collect(request)
    [journal] = (tmp_path / "data" / WORK_DIR).glob("*.jsonl")
    header, *rows = journal.read_text().splitlines()
    assert json.loads(header) == {"header": OLD_HEADER} and len(rows) == 1  # the same keys

    summary = collect(request)
    assert [line.startswith("1 config row(s) measured by an earlier run kept")
            for line in summary.resumed.values()] == [True]
    stored = Dataset.open(tmp_path / "data").configs()
    assert stored.height == 3 and not journal.exists()
