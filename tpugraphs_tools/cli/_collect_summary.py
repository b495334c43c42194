"""What ``tgt collect`` prints after a run and for ``--status``: the graphs stored, the layout
and tile label summaries, the rate, failures by reason and an interrupted collection's state.

Apart from ``collect_cmd`` so the command module only parses options and runs the collection;
every line goes through the one terminal (``_common.terminal``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rich import box
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from tpugraphs_tools.cli._common import plural, print_pairs_apart, terminal


def print_summary(summary: Any) -> None:
    table = Table(title=f"collected into {summary.dataset}")
    # num_configs counts the graph's npz configs: its labels (store/counts.py)
    for col in ("graph_id", "program", "nodes", "edges", "configurable", "labels"):
        table.add_column(col, justify="right" if col not in ("graph_id", "program") else "left",
                         overflow="fold")
    for row in summary.graphs:
        table.add_row(row["graph_id"], row["program"], str(row["num_nodes"]),
                      str(row["num_edges"]), str(row["num_configurable"]), str(row["num_configs"]))
    terminal.print(table)
    for what, line in summary.resumed.items():
        terminal.print(f"resumed {what}: {line}", highlight=False)
    for program, line in summary.names.items():
        terminal.print(f"program {program}: {line}", highlight=False)
    if summary.skipped:
        terminal.print(f"already complete, not measured again: {', '.join(summary.skipped)}")
    if summary.configs:
        print_config_summary({g: s.to_json() for g, s in summary.configs.items()})
    for label, tiles in summary.tiles.items():
        _print_tile_summary(label, tiles.to_json(), tiles.ratio_labels)
    if summary.configs or summary.tiles:
        graphs = len(summary.configs) + sum(t.kernels for t in summary.tiles.values())
        terminal.print(f"stored for {graphs} graph{'' if graphs == 1 else 's'}: "
                       f"{summary.counts.describe()}", highlight=False)
    if summary.failures:
        failures = Table(title="failures by reason (whole output: <out>/.tgt-logs/collect.log)")
        failures.add_column("configs", justify="right")
        failures.add_column("reason", overflow="fold")
        for reason, n in summary.failures.most_common():
            failures.add_row(str(n), reason)
        terminal.print(failures)
    _print_rate(summary)


def _print_rate(summary: Any) -> None:
    """Labels per minute: this run's ok labels over its wall time (resumed rows not counted)."""
    if summary.labels_per_minute is None:
        return  # no wall time (a summary built without running)
    minutes = summary.wall_seconds / 60
    if not summary.labels:  # e.g. every graph already complete
        terminal.print(f"labels per minute: - (no ok labels measured in this run; {minutes:.1f} "
                       f"min of wall time)", highlight=False)
        return
    terminal.print(f"labels per minute: {summary.labels_per_minute:.1f} ({summary.labels} ok "
                   f"labels measured in {minutes:.1f} min of wall time)", highlight=False)


def _print_tile_summary(label: str, s: dict, ratio_labels: bool) -> None:
    table = Table(title=f"kernel configs of {label} ({s['config_space']})")
    table.add_column("measure")
    table.add_column("value", overflow="fold")
    table.add_row("kernels stored / skipped", f"{s['kernels']} / {s['kernels_skipped']}")
    from tpugraphs_tools.store import ConfigCounts

    stored = ConfigCounts(s["configs_stored"], s["labels"], s["control_rows"])
    table.add_row("stored", stored.describe())
    unstored = s["configs"] - s["configs_stored"]
    table.add_row("configs tried", f"{s['configs']} ("
                  + ", ".join(f"{k} {v}" for k, v in sorted(s["status"].items())
                              if k != "infeasible") + ")"
                  + (f", {unstored} of them in kernels not stored" if unstored else ""))
    if s.get("infeasible"):
        table.add_row("infeasible tiles (over the device's registers or shared memory; "
                      "never compiled)", str(s["infeasible"]))
    if s.get("not_as_requested"):
        table.add_row("ok configs compiled to another tile than asked",
                      f"{s['not_as_requested']} (labelled by the tile that ran)")
    if ratio_labels:
        table.add_row("configs whose 95% CI excludes the default",
                      str(s["apart_from_default"]))
    else:
        table.add_row("configs differing from default by > 3× CV", str(s["effects_over_3cv"]))
    top = s.get("largest_effect")
    if top:
        how = "CI apart from 1" if ratio_labels else f"{top['effect_cv']:.1f} CV"
        table.add_row("largest effect", f"{top['relative_to_default']:.3f}× default "
                      f"({how}) on {top['parent_instruction']} with {top['config']}")
    if s.get("best_speedup"):
        table.add_row("fastest / slowest config ÷ default",
                      f"{1 / s['best_speedup']:.3f}× / {s['worst_slowdown']:.3f}×")
    if ratio_labels:
        table.add_row("median CI ±", _pct(s.get("ci_half_width_median")))
        table.add_row("pairs apart (95% CIs disjoint, within a kernel)", _apart(s))
        table.add_row("A/A control", _control(s))
        if s.get("noise_floor") is not None:
            table.add_row("noise floor (A/A CI half-width, median)",
                          f"±{100 * s['noise_floor']:.2f}%")
    terminal.print(table)
    for line in kernels_not_stored(s["skipped"], s.get("left_out", [])):
        terminal.print(line, highlight=False)


def kernels_not_stored(skipped: dict[str, str], left_out: list[str], names: int = 6
                       ) -> list[str]:
    """Which kernels a tile collection did not store, and why: one line per reason (the
    text before its first ": "), naming up to ``names`` kernels and one example's detail."""
    groups: dict[str, list[tuple[str, str]]] = {}
    for kernel, why in skipped.items():
        head, _, detail = why.partition(": ")
        groups.setdefault(head, []).append((kernel, detail))
    lines = []
    for head, kernels in groups.items():
        shown = ", ".join(k for k, _ in kernels[:names])
        more = f" and {len(kernels) - names} more" if len(kernels) > names else ""
        detail = kernels[0][1]
        example = ("" if not detail else f" ({detail})" if len(kernels) == 1
                   else f" (e.g. {kernels[0][0]}: {detail})")
        lines.append(f"skipped {plural(len(kernels), 'kernel')}, {head}: {shown}{more}"
                     f"{example}")
    if left_out:
        more = f" and {len(left_out) - names} more" if len(left_out) > names else ""
        lines.append(f"left out {plural(len(left_out), 'kernel')} by --max-kernels (the "
                     f"cheapest; a larger --max-kernels measures them): "
                     f"{', '.join(left_out[:names])}{more}")
    return lines


# (header, cell) of the layout table; a "\n" in a header breaks it between words
_Cell = Callable[[dict], str]
_LAYOUT_COLUMNS: dict[str, tuple[str, _Cell]] = {
    "graph_id": ("graph_id", lambda s: s["graph_id"]),
    "configs": ("configs", lambda s: str(s["configs"])),
    "labels": ("labels", lambda s: str(s["labels"])),
    "control rows": ("control\nrows", lambda s: str(s["control_rows"])),
    "no-op": ("no-op", lambda s: str(s["status"].get("noop", 0))),
    "duplicate": ("duplicate", lambda s: str(s["status"].get("duplicate", 0))),
    "errors": ("errors", lambda s: _errors(s, detail=True)),
    "errors, narrow": ("errors", lambda s: _errors(s, detail=False)),
    "fastest": ("fastest\n÷ default", lambda s: _ratio(s["best_speedup"], invert=True)),
    "slowest": ("slowest\n÷ default", lambda s: _ratio(s["worst_slowdown"])),
    "ci": ("median\nCI ±", lambda s: _pct(s.get("ci_half_width_median"))),
    "pairs": ("pairs\napart", lambda s: _apart(s)),
    "control": ("A/A control", lambda s: _control(s)),
    "control, narrow": ("A/A\nholds 1", lambda s: _control(s, ranges=False)),
}
FULL = ("graph_id", "configs", "labels", "no-op", "duplicate", "errors", "control rows",
        "fastest", "slowest", "ci", "pairs", "control")
NARROW = ("graph_id", "configs", "labels", "errors, narrow", "fastest", "ci", "pairs",
          "control, narrow")


def _layout_table(rows: list[dict], columns: tuple[str, ...]) -> Table:
    """Cells never wrap (a figure stays whole); only the graph id may fold to fit."""
    table = Table(title="layout configs", box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False,
                  collapse_padding=True)
    for key in columns:
        header = _LAYOUT_COLUMNS[key][0]
        if key == "graph_id":
            table.add_column(header, overflow="fold")
        else:
            table.add_column(header, justify="right", no_wrap=True)
    for s in rows:
        table.add_row(*(_LAYOUT_COLUMNS[key][1](s) for key in columns))
    return table


def print_config_summary(summaries: dict[str, dict]) -> None:
    rows = [{**s, "graph_id": graph_id} for graph_id, s in summaries.items()]
    terminal.fitted(_layout_table(rows, FULL), _layout_table(rows, NARROW),
                    left_out="(too narrow for no-op, duplicate, error kinds, control rows, "
                             "slowest ÷ default and per-graph A/A ranges: piped output has every "
                             "column)")
    floors = [s["noise_floor"] for s in summaries.values() if s.get("noise_floor") is not None]
    if floors:
        held = sum(s.get("controls_holding_1", 0) for s in summaries.values())
        total = sum(s.get("controls", 0) for s in summaries.values())
        ranges = [s["control_range"] for s in summaries.values() if s.get("control_range")]
        spread = (f" (ratios {min(r[0] for r in ranges):.3f}–{max(r[1] for r in ranges):.3f})"
                  if ranges else "")
        terminal.print(f"noise floor (A/A control CI half-width, median over graphs): "
                       f"±{100 * sorted(floors)[len(floors) // 2]:.2f}%; control CI holds 1.0 "
                       f"in {held}/{total} batches{spread}")
    spreads = [s["process_sd"] for s in summaries.values() if s.get("process_sd") is not None]
    if spreads:
        terminal.print(f"spread between measurement processes (SD, median over graphs): "
                       f"{100 * sorted(spreads)[len(spreads) // 2]:.2f}%, in every label's CI")
    print_pairs_apart(sum(s.get("pairs_separated") or 0 for s in summaries.values()),
                      sum(s.get("pairs") or 0 for s in summaries.values()))


def _errors(s: dict, *, detail: bool) -> str:
    """Failed configs (every status but ok, no-op, duplicate and the control rows)."""
    errors = {k: v for k, v in s["status"].items()
              if k not in ("ok", "noop", "duplicate", "control", "repeat")}
    kinds = ", ".join(f"{k} {v}" for k, v in errors.items())
    return f"{sum(errors.values())}" + (f" ({kinds})" if detail and kinds else "")


def _ratio(value: float | None, *, invert: bool = False) -> str:
    if not value:
        return "-"
    return f"{1 / value if invert else value:.3f}×"


def _pct(value: float | None) -> str:
    return f"±{100 * value:.2f}%" if value is not None else "-"


def _apart(s: dict) -> str:
    """Config pairs whose label CIs are disjoint: the orders the labels claim."""
    pairs = s.get("pairs") or 0
    return f"{s.get('pairs_separated', 0)}/{pairs}" if pairs else "-"


def _control(s: dict, *, ranges: bool = True) -> str:
    """The A/A control of a graph: batches whose CI holds 1.0 (and its ratio range)."""
    if not s.get("controls"):
        return "-"
    held = f"{s['controls_holding_1']}/{s['controls']}"
    if not ranges:
        return held
    low, high = s["control_range"]
    return f"{held} hold 1 ({low:.3f}–{high:.3f})"


def print_status(root: str) -> None:
    from tpugraphs_tools.collect import collection_status
    from tpugraphs_tools.store import ConfigCounts

    status = collection_status(root)
    table = Table(title=f"collection status of {status['dataset']}")
    for col in ("graph_id", "state", "rows", "statuses"):
        table.add_column(col, overflow="fold")
    for row in status["committed"]:
        table.add_row(row["graph_id"], "committed",
                      ConfigCounts.of_statuses(row["statuses"]).describe(),
                      ", ".join(f"{k} {v}" for k, v in sorted(row["statuses"].items())))
    for graph_id, info in status["partial"].items():
        table.add_row(graph_id, Text("in progress", style="yellow"),
                      f"{ConfigCounts.of_statuses(info['statuses']).describe()} journaled",
                      ", ".join(f"{k} {v}" for k, v in info["statuses"].items()))
    terminal.print(table)
    if status["writer"]:  # "in progress" rows are being measured now, not interrupted
        terminal.note("being written", escape(f"by {status['writer']}"))
    for parent, tile in status["tile_programs"].items():
        terminal.print(
            f"tile program {tile['program']} ({parent}): {tile['kernels']} kernels: "
            f"{len(tile['committed'])} committed, {len(tile['in_progress'])} in progress "
            f"({sum(tile['in_progress'].values())} rows journaled), {len(tile['skipped'])} "
            f"not stored, {len(tile['left'])} left", highlight=False)
        for name, why in tile["skipped"].items():
            terminal.print(f"  not stored: {name}: {why}", highlight=False)
