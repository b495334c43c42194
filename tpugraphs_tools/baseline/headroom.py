"""Headroom of a collection's graphs in the baseline report (the figures of ``tgt report``).

Per graph, over its measured non-default configs: fastest ÷ default with its 95% CI, the share
of configs faster than the default (and the share whose whole CI is below 1), and the spread
of the labels, so a reader sees whether the data is about speed-ups or slow-downs. A tgt
dataset reads them from configs.parquet (``store.graph_label_stats``); tile graphs without
such labels (official trees) from their normalised runtimes (runtime ÷ the default's, no CIs,
the sampled configs); an official layout tree marks no default, so its headroom is unknown.
"""

from __future__ import annotations

from typing import Any

from tpugraphs_tools.baseline.data import GraphSource, TgtSource
from tpugraphs_tools.baseline.prepare import RawGraph
from tpugraphs_tools.store import Headroom, graph_label_stats, headroom


def graph_headroom(source: GraphSource, raw: RawGraph) -> Headroom | None:
    """One graph's headroom; None when the source cannot say."""
    if isinstance(source, TgtSource):
        room = graph_label_stats(source.dataset.configs_of(raw.info.graph_id))[1]
        if room is not None:
            return room
    if raw.info.spec.normalizer_key:       # tile: runtime already ÷ the default's
        return headroom(raw.runtime.read())
    return None


def collection_headroom(source: GraphSource, raws: list[RawGraph]
                        ) -> tuple[dict[str, dict[str, Any]], list[str]]:
    """graph_id → headroom figures (``Headroom.to_json`` plus the program), and a note on
    the graphs left out."""
    out: dict[str, dict[str, Any]] = {}
    for raw in raws:
        room = graph_headroom(source, raw)
        if room is not None:
            out[raw.info.graph_id] = {"program": raw.info.program, **room.to_json()}
    missing = len(raws) - len(out)
    notes = [f"headroom unknown for {missing} of {len(raws)} graphs: no label relative to a "
             "default config (official layout trees mark no default)"] if missing else []
    return out, notes
