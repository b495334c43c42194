"""``tgt report``: an offline HTML page with PNG plots describing a dataset."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import polars as pl

from tpugraphs_tools.publish.report.html import report_html
from tpugraphs_tools.publish.report.plots import write_plots
from tpugraphs_tools.publish.report.stats import COLUMNS as STATS_COLUMNS
from tpugraphs_tools.publish.report.stats import ReportStats, compute_stats
from tpugraphs_tools.publish.staging import check_separate, staged_dir
from tpugraphs_tools.publish.tally import value_counts
from tpugraphs_tools.store import Dataset

PAGE = "index.html"


@dataclass
class ReportResult:
    out: Path
    page: Path
    plots: list[str]
    stats: ReportStats


def _facts(manifest: dict, configs: pl.LazyFrame) -> dict[str, str]:
    """Provenance lines; the CPUs timed rows could use, since one-core and all-core labels
    are different measurements."""
    cpus = ", ".join(f"{n} CPUs: {rows} rows" for n, rows in value_counts(configs, "timing_cpus")
                     .items()) or "not recorded"
    devices = ", ".join(f"{d.get('platform')} {d.get('device_kind')}".strip()
                        for d in manifest.get("devices") or []) or "none recorded"
    return {"tgt": str(manifest.get("tgt_version")),
            "jax": f"{manifest.get('jax_version')} (jaxlib {manifest.get('jaxlib_version')})",
            "devices": devices,
            "timed on": cpus,
            "updated": str(manifest.get("updated_at"))}


def _is_old_report(out: Path) -> bool:
    """A folder holding only a previous report's files may be replaced without --overwrite."""
    files = [p for p in out.iterdir()] if out.is_dir() else []
    return bool(files) and (out / PAGE).is_file() and all(
        p.is_file() and (p.name == PAGE or p.suffix == ".png") for p in files)


def write_report(data: str | Path, out: str | Path, *, overwrite: bool = False) -> ReportResult:
    """Compute the stats of ``data`` and write ``out/index.html`` + PNGs (replaced whole)."""
    check_separate(data, out)
    dataset = Dataset.open(data)
    # the report reads tables and never commits: the manifest's checksums, an entry per file
    # (per graph), would only stay in memory through every pass
    dataset.manifest.pop("files", None)
    stats = compute_stats(dataset.graphs(),
                          lambda: dataset.key_batches("configs", list(STATS_COLUMNS)))
    title = f"Dataset report: {Path(data).resolve().name}"
    overwrite = overwrite or _is_old_report(Path(out))
    with staged_dir(out, overwrite) as stage:
        plots = write_plots(stats, stage)
        facts = _facts(dataset.manifest, dataset.scan("configs"))
        (stage / PAGE).write_text(report_html(title, stats, plots, facts))
    out = Path(out)
    return ReportResult(out, out / PAGE, [name for name, _, _ in plots], stats)
