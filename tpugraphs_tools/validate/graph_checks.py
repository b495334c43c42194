"""Graph checks: edges, configurable node ids, node splits and opcodes, all vectorised.

TpuGraphs edges ``[u, v]`` mean u consumes v and nodes are in topological order, so every edge
must have ``u > v``; that single comparison also rules out cycles. Each check reports the first
offending row and how many rows offend, never one finding per row.
"""

from __future__ import annotations

import numpy as np

from tpugraphs_tools.format import CONFIGURABLE_IDS, OPCODE_NAMES, TOMBSTONE_IDS
from tpugraphs_tools.validate.report import Report

MAX_OPCODE = len(OPCODE_NAMES) - 1
# Lookup tables over opcode ids (cheaper than np.isin on many small files).
_CONFIGURABLE = np.zeros(MAX_OPCODE + 1, dtype=bool)
_CONFIGURABLE[sorted(CONFIGURABLE_IDS)] = True
_TOMBSTONE = np.zeros(MAX_OPCODE + 1, dtype=bool)
_TOMBSTONE[sorted(TOMBSTONE_IDS)] = True


def _more(count: int, what: str) -> str:
    return f" ({count} {what} in all)" if count > 1 else ""


def _opname(op: int) -> str:
    return OPCODE_NAMES[op] if 0 <= op <= MAX_OPCODE else "?"


def check_opcodes(opcodes: np.ndarray, rel: str, report: Report) -> None:
    out = (opcodes < 0) | (opcodes > MAX_OPCODE)
    bad = np.flatnonzero(out)
    if bad.size:
        i = int(bad[0])
        report.emit("graph.opcode_out_of_range", f"node {i} has opcode {int(opcodes[i])}, "
                    f"outside 0..{MAX_OPCODE}{_more(bad.size, 'nodes')}", rel,
                    key="node_opcode", index=i)
    dead = np.flatnonzero(_TOMBSTONE[np.where(out, 0, opcodes)])
    if dead.size:
        i = int(dead[0])
        report.emit("graph.opcode_tombstone", f"node {i} has tombstone opcode "
                    f"{int(opcodes[i])} ({_opname(int(opcodes[i]))})"
                    f"{_more(dead.size, 'nodes')}", rel, key="node_opcode", index=i)


def _first_duplicate(keys: np.ndarray) -> tuple[int, int, int] | None:
    """(row, earlier row it repeats, number of repeats) of the first repeated key, or None."""
    if keys.size < 2 or bool(np.all(keys[1:] > keys[:-1])):  # sorted input: no sort needed
        return None
    order = np.argsort(keys, kind="stable")
    sk = keys[order]
    dup = np.flatnonzero(sk[1:] == sk[:-1]) + 1
    if not dup.size:
        return None
    rows = order[dup]
    j = int(np.argmin(rows))
    return int(rows[j]), int(order[dup[j] - 1]), int(dup.size)


def check_edges(edges: np.ndarray, n: int, rel: str, report: Report) -> None:
    """Range, self-loops, topological order (u > v) and duplicates of ``edge_index``."""
    key = "edge_index"
    if edges.shape[0] == 0:
        return
    u, v = edges[:, 0], edges[:, 1]
    out = (u < 0) | (u >= n) | (v < 0) | (v >= n)
    bad = np.flatnonzero(out)
    if bad.size:
        i = int(bad[0])
        report.emit("graph.edge_out_of_range", f"edge row {i} = [{int(u[i])}, {int(v[i])}] "
                    f"has a node id outside [0, {n}){_more(bad.size, 'rows')}", rel,
                    key=key, index=i)
    loops = np.flatnonzero((u == v) & ~out)
    if loops.size:
        i = int(loops[0])
        report.emit("graph.self_loop", f"edge row {i} = [{int(u[i])}, {int(v[i])}] is a "
                    f"self-loop{_more(loops.size, 'rows')}", rel, key=key, index=i)
    back = np.flatnonzero((u < v) & ~out)
    if back.size:
        i = int(back[0])
        report.emit("graph.not_topological",
                    f"edge row {i} = [{int(u[i])}, {int(v[i])}]: consumer {int(u[i])} comes "
                    f"before its operand {int(v[i])} (nodes not in topological order, or a "
                    f"cycle){_more(back.size, 'rows')}", rel, key=key, index=i)
    inside = ~out
    rows = np.flatnonzero(inside) if bad.size else None
    pair = u * np.int64(n) + v
    if rows is not None:
        pair = pair[rows]
    dup = _first_duplicate(pair)
    if dup is not None:
        i, j, count = dup
        if rows is not None:
            i, j = int(rows[i]), int(rows[j])
        report.emit("graph.duplicate_edge", f"edge row {i} = [{int(u[i])}, {int(v[i])}] "
                    f"repeats row {j}{_more(count, 'repeats')}", rel, key=key, index=i)


def check_config_ids(ids: np.ndarray, opcodes: np.ndarray | None, n: int, rel: str,
                     report: Report) -> None:
    """node_config_ids: in range, unique, and only configurable opcodes."""
    key = "node_config_ids"
    out = (ids < 0) | (ids >= n)
    bad = np.flatnonzero(out)
    if bad.size:
        i = int(bad[0])
        report.emit("graph.config_id_out_of_range", f"entry {i} = node {int(ids[i])}, outside "
                    f"[0, {n}){_more(bad.size, 'entries')}", rel, key=key, index=i)
    dup = _first_duplicate(ids)
    if dup is not None:
        i, j, count = dup
        report.emit("graph.config_id_duplicate", f"entry {i} = node {int(ids[i])} repeats "
                    f"entry {j}{_more(count, 'repeats')}", rel, key=key, index=i)
    if opcodes is None:
        return
    ok = ~out & (ids < opcodes.shape[0])
    pos = np.flatnonzero(ok)
    ops = opcodes[ids[pos]]
    known = (ops >= 0) & (ops <= MAX_OPCODE)
    wrong = pos[~_CONFIGURABLE[np.where(known, ops, 0)]]
    if wrong.size:
        i = int(wrong[0])
        op = int(opcodes[ids[i]])
        report.emit("graph.config_id_not_configurable",
                    f"entry {i} = node {int(ids[i])} has opcode {op} ({_opname(op)}); only "
                    f"convolution/dot/reshape are configurable{_more(wrong.size, 'entries')}",
                    rel, key=key, index=i)


def check_splits(splits: np.ndarray, n: int, rel: str, report: Report) -> None:
    """node_splits (flattened): starts at 0, ends at n, strictly increasing, inside [0, n]."""
    key = "node_splits"
    flat = splits.reshape(-1)
    if flat.size == 0:
        report.emit("graph.splits_bounds", f"empty; expected boundaries from 0 to {n}", rel,
                    key=key)
        return
    if int(flat[0]) != 0:
        report.emit("graph.splits_bounds", f"starts at {int(flat[0])}, expected 0", rel,
                    key=key, index=0)
    elif int(flat[-1]) != n:
        report.emit("graph.splits_bounds", f"ends at {int(flat[-1])}, expected n = {n}", rel,
                    key=key, index=flat.size - 1)
    else:
        out = np.flatnonzero((flat < 0) | (flat > n))
        if out.size:
            i = int(out[0])
            report.emit("graph.splits_bounds", f"entry {i} = {int(flat[i])} outside [0, {n}]",
                        rel, key=key, index=i)
    down = np.flatnonzero(flat[1:] <= flat[:-1]) + 1
    if down.size:
        i = int(down[0])
        report.emit("graph.splits_not_increasing", f"entry {i} = {int(flat[i])} is not above "
                    f"entry {i - 1} = {int(flat[i - 1])}{_more(down.size, 'entries')}", rel,
                    key=key, index=i)
