"""When nothing of a graph can be measured: keep the graph, record why, exit "partial".

A module whose default config cannot be compiled or run on the backend (collectives, host
transfers, send/recv, custom-calls the backend lacks) still featurizes: its graph and HLO are
stored with one ``default_failed`` config row per requested config, each carrying the reason,
so nothing already computed is lost and the dataset says what happened. ``tgt collect`` then
exits with :data:`EXIT_PARTIAL`.

A rerun skips such a graph (its next failure would be the same), unless the failure came from
a limit the user set (``--timeout``: the reason starts with :data:`OPTION_LIMIT`) or the rerun
asks with ``--retry-unmeasured``; then the graph is measured again and its rows replaced.
"""

from __future__ import annotations

import contextlib
import json
import shutil
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tpugraphs_tools.collect.rows import ConfigRow, config_row
from tpugraphs_tools.errors import DefaultTimeoutError
from tpugraphs_tools.hlo import Module
from tpugraphs_tools.measure import Status
from tpugraphs_tools.store import LOG_DIR

if TYPE_CHECKING:
    from tpugraphs_tools.collect.graphs import CollectedGraph
    from tpugraphs_tools.collect.journal import ConfigJournal
    from tpugraphs_tools.collect.summary import CollectSummary
    from tpugraphs_tools.measure import MeasureOptions
    from tpugraphs_tools.store import Dataset

DEFAULT_FAILED = Status.DEFAULT_FAILED
EXIT_PARTIAL = 3  # documented in README.md and docs/collect.md
RETRY_FLAG = "--retry-unmeasured"
# how a stored reason starts when a user's option (not the backend) stopped the default
OPTION_LIMIT = "stopped by an option: "

# Opcodes a single-device CPU run commonly cannot execute; named in the one-line reason.
_TRANSFER_OPCODES = ("send", "recv", "send-done", "recv-done", "infeed", "outfeed")
_COLLECTIVE_PREFIXES = ("all-reduce", "all-gather", "reduce-scatter", "all-to-all",
                        "collective-permute", "collective-broadcast", "ragged-all-to-all")


def suspects(module: Module) -> list[str]:
    """What in ``module`` a backend may lack: transfers, collectives, custom-call targets,
    host execution threads (deduplicated, in module order)."""
    found: dict[str, None] = {}
    for _comp, inst in module.instructions():
        op = inst.opcode
        if op in _TRANSFER_OPCODES or op.startswith(_COLLECTIVE_PREFIXES):
            found[op] = None
        elif op == "custom-call":
            target = inst.attrs.get("custom_call_target", "?").strip('"')
            found[f"custom-call {target}"] = None
        if any("execution_thread" in k and "host" in v for k, v in inst.attrs.items()):
            found["host execution thread"] = None
    return list(found)


def failure_reason(error: BaseException | str, module: Module, backend: str,
                   what: str = "default config") -> str:
    """One line: the backend, XLA's first line of the error, and what in the module may be
    the cause; or, for the default running past ``--timeout``, that limit and what to do."""
    if isinstance(error, DefaultTimeoutError):
        return (f"{OPTION_LIMIT}{error}; give a larger --timeout (a rerun measures this "
                "graph again)")
    text = str(error).strip()
    for prefix in ("default config failed: ",):
        text = text.removeprefix(prefix)
    first = next((line.strip() for line in text.splitlines() if line.strip()), "unknown error")
    if len(first) > 300:
        first = first[:300] + "…"
    found = suspects(module)
    hint = f" (module uses {', '.join(found[:6])})" if found else ""
    return f"{what} cannot be compiled or run on {backend}: {first}{hint}"


def unmeasured_rows(configs: list[dict[str, Any]], strategy: str, seed: int, reason: str,
                    indices: list[int] | None = None) -> list[ConfigRow]:
    """One ``default_failed`` row per requested config (``configs``: JSON-ready dicts, at
    config indices ``indices``, default 0, 1, ...; index 0 is the default), so the dataset
    holds the request and its outcome."""
    indices = list(range(len(configs))) if indices is None else indices
    return [config_row({"config_index": i, "strategy": strategy, "seed": seed,
                        "is_default": i == 0, "status": DEFAULT_FAILED,
                        "config": json.dumps(config, sort_keys=True), "error_message": reason})
            for i, config in zip(indices, configs, strict=True)]


def retried(reason: str, retry_unmeasured: bool) -> bool:
    """Whether a rerun measures again a graph stored unmeasured for ``reason``."""
    return retry_unmeasured or reason.startswith(OPTION_LIMIT)


def unmeasured_reason(rows: Iterable[Mapping[str, Any]]) -> str | None:
    """The stored reason when every committed row of a graph is ``default_failed``."""
    rows = list(rows)
    if rows and all(r.get("status") == DEFAULT_FAILED for r in rows):
        return rows[0].get("error_message") or "default config failed"
    return None


def layout_config_json(module: Module, count: int, strategy: str, seed: int
                       ) -> list[dict[str, Any]]:
    """The layout configs a collection of ``module`` would have measured, as JSON dicts."""
    from tpugraphs_tools.configs import generate_configs, layout_space

    space = layout_space(module)
    return [c.to_json(space) for c in generate_configs(space, count, strategy, seed)]


def _holds_files(root: Path) -> bool:
    """Data or journals (a run's own log alone does not keep a folder it created)."""
    return any((p.is_file() or p.is_symlink()) and LOG_DIR not in p.relative_to(root).parts
               for p in root.rglob("*"))


@contextlib.contextmanager
def no_empty_out(out: str | Path) -> Iterator[None]:
    """Remove ``out`` again if this run created it and a failure left no file in it."""
    root = Path(out).absolute()
    top = None  # the outermost folder this run will create (parents included)
    for folder in (root, *root.parents):
        if folder.exists():
            break
        top = folder
    try:
        yield
    except BaseException:
        if top is not None and top.is_dir() and not _holds_files(top):
            shutil.rmtree(top, ignore_errors=True)
        raise


def store_unmeasured(dataset: Dataset, collected: CollectedGraph, layout: MeasureOptions,
                     journal: ConfigJournal, summary: CollectSummary,
                     error: BaseException) -> None:
    """Commit a graph whose default config failed, with a ``default_failed`` row per config
    (the graph then counts as complete: a rerun retries it only as :func:`retried` says)."""
    from tpugraphs_tools.collect.graphs import write_graphs

    module = collected.source.module
    reason = failure_reason(error, module, collected.row.get("backend") or "this backend")
    try:
        configs = layout_config_json(module, layout.configs, layout.strategy, layout.seed)
    except Exception:  # the default alone still records the request
        configs = [{}]
    rows = unmeasured_rows(configs, layout.strategy, layout.seed, reason)
    collected = replace(collected, row={**collected.row, "num_configs": 0})
    write_graphs(dataset, [collected], configs={collected.graph_id: rows},
                 journal=journal.path)
    journal.remove()  # its folder, when no other graph's journal is left
    summary.unmeasured[collected.graph_id] = reason
    summary.failures[f"{DEFAULT_FAILED}: {reason}"] += len(rows)
    summary.graphs.append(collected.row)
