"""One writer per dataset: the write lock (refusal, staleness, take-over, heartbeat) and commits
that build on another writer's commit instead of overwriting it."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time
from pathlib import Path

import numpy as np
import pytest

from tests.lock_helpers import held_by_another_process, kill_hard
from tests.store import test_store_dataset as base
from tests.store.test_store_dataset import assert_consistent, config_rows, graph_row
from tpugraphs_tools.errors import DatasetLockedError
from tpugraphs_tools.store import LEASE_S, LOCK_FILE, Dataset, Holder, atomic, dataset_lock
from tpugraphs_tools.store import lock as lock_module

arrays = base.arrays  # the fixture: one tiny graph's arrays


def add_graph(ds: Dataset, graph_id: str, arrays: dict[str, np.ndarray]) -> None:
    with ds.transaction() as tx:
        tx.put_graph(graph_row(graph_id, arrays), arrays)
        tx.put_configs(graph_id, config_rows([1200, 900]))


def write_holder(root: Path, **fields: object) -> Holder:
    """A lock file as another run would have left it (fields override this process's)."""
    mine = Holder.this_process()
    holder = Holder(**{**mine.__dict__, "token": "other", **fields})
    root.mkdir(parents=True, exist_ok=True)
    (root / LOCK_FILE).write_bytes(holder.to_bytes())
    return holder


def test_a_commit_builds_on_another_writers_commit(tmp_path: Path, arrays) -> None:
    """Two collections into one folder: each picked part-00000 and the last manifest won, so
    a graph was lost and validate failed. A commit now starts from the manifest on disk."""
    root = tmp_path / "ds"
    first = Dataset.open(root, create=True)
    add_graph(first, "a.000000000001", arrays)
    second = Dataset.open(root)          # both writers read the same manifest ...
    add_graph(first, "b.000000000002", arrays)
    add_graph(second, "c.000000000003", arrays)   # ... the second commits last
    graphs = set(Dataset.open(root).graphs()["graph_id"])
    assert graphs == {"a.000000000001", "b.000000000002", "c.000000000003"}
    assert_consistent(root)  # the manifest lists every file on disk, with its checksum


def test_a_new_part_never_takes_the_name_of_a_file_already_there(tmp_path: Path,
                                                                   arrays) -> None:
    root = tmp_path / "ds"
    ds = Dataset.open(root, create=True)
    add_graph(ds, "a.000000000001", arrays)
    stray = root / "tables" / "configs" / "part-00001.parquet"
    stray.write_bytes(b"another writer's part")
    add_graph(ds, "b.000000000002", arrays)
    assert stray.read_bytes() == b"another writer's part"
    files = [p.file for p in ds.table_info("configs").parts]
    assert files == ["tables/configs/part-00000.parquet", "tables/configs/part-00002.parquet"]


def test_a_second_writer_is_refused_at_once_naming_the_first(tmp_path: Path, arrays) -> None:
    root = tmp_path / "ds"
    add_graph(Dataset.open(root, create=True), "a.000000000001", arrays)
    with held_by_another_process(root) as proc:
        started = time.monotonic()
        with pytest.raises(DatasetLockedError) as info:
            add_graph(Dataset.open(root), "b.000000000002", arrays)
        assert time.monotonic() - started < 30  # refused, not waiting for the holder
    message = str(info.value)
    assert "\n" not in message
    assert f"pid {proc.pid} on {socket.gethostname()} since " in message
    assert "UTC" in message and str(root / LOCK_FILE) in message
    assert set(Dataset.open(root).graphs()["graph_id"]) == {"a.000000000001"}
    assert not list(root.rglob(f"*{atomic.TEMP_MARK}*"))  # the refused commit left nothing


def test_a_lock_left_by_a_killed_run_is_taken_over(tmp_path: Path, arrays) -> None:
    root = tmp_path / "ds"
    with held_by_another_process(root) as proc:
        kill_hard(proc)          # kill -9: its lock file stays behind
        assert json.loads((root / LOCK_FILE).read_bytes())["pid"] == proc.pid
        add_graph(Dataset.open(root, create=True), "a.000000000001", arrays)
    assert_consistent(root)  # the lock file is gone too


def test_a_killed_run_not_yet_reaped_by_its_parent_is_gone(tmp_path: Path) -> None:
    if Holder.this_process().start is None:
        pytest.skip("no /proc: process states unknown")
    with held_by_another_process(tmp_path) as proc:
        os.kill(proc.pid, 9)
        while Path(f"/proc/{proc.pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z":
            time.sleep(0.01)             # a zombie until the test's wait() reaps it
        with dataset_lock(tmp_path) as holder:
            assert holder.pid == os.getpid()


def test_a_pid_reused_by_a_later_process_is_stale(tmp_path: Path) -> None:
    if Holder.this_process().start is None:
        pytest.skip("no /proc: process start times unknown")
    sleeper = subprocess.Popen(["sleep", "60"])
    try:
        write_holder(tmp_path, pid=sleeper.pid, start=1)   # alive, but started later
        with dataset_lock(tmp_path) as holder:
            assert holder.pid == os.getpid()
    finally:
        kill_hard(sleeper)  # type: ignore[arg-type]


def test_a_lock_from_before_a_reboot_is_stale(tmp_path: Path) -> None:
    write_holder(tmp_path, pid=os.getpid(), boot="another-boot")
    with dataset_lock(tmp_path) as holder:
        assert holder.boot != "another-boot"


def test_a_lock_of_another_host_lives_while_its_heartbeat_does(tmp_path: Path) -> None:
    """A pid on another host (a Ray driver's node) cannot be asked: its lock is live while
    the file's mtime is fresh, stale once it is older than the lease."""
    write_holder(tmp_path, host="node-7", pid=4242)
    expected = r"pid 4242 on node-7 since .*last heartbeat \d+ s ago, taken over once it is 180 s"
    with pytest.raises(DatasetLockedError, match=expected), dataset_lock(tmp_path):
        pass
    old = time.time() - LEASE_S - 30
    os.utime(tmp_path / LOCK_FILE, (old, old))
    with dataset_lock(tmp_path) as holder:
        assert holder.host == socket.gethostname()
    assert not (tmp_path / LOCK_FILE).exists()


def test_an_unreadable_lock_is_judged_by_its_age(tmp_path: Path) -> None:
    (tmp_path / LOCK_FILE).write_bytes(b"\x00 not a holder")
    with pytest.raises(DatasetLockedError, match=r"an unreadable .*last heartbeat"), \
            dataset_lock(tmp_path):
        pass
    old = time.time() - LEASE_S - 30
    os.utime(tmp_path / LOCK_FILE, (old, old))
    with dataset_lock(tmp_path) as holder:
        assert Holder.parse((tmp_path / LOCK_FILE).read_bytes()) == holder


def test_the_holder_refreshes_its_heartbeat(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(lock_module, "HEARTBEAT_S", 0.05)
    with dataset_lock(tmp_path):
        old = time.time() - 1000
        os.utime(tmp_path / LOCK_FILE, (old, old))
        deadline = time.monotonic() + 10
        while (tmp_path / LOCK_FILE).stat().st_mtime < old + 500:
            assert time.monotonic() < deadline, "no heartbeat"
            time.sleep(0.05)


def test_the_lock_is_reentrant_and_a_take_over_stops_the_next_commit(tmp_path: Path,
                                                                      arrays) -> None:
    root = tmp_path / "ds"
    ds = Dataset.open(root, create=True)
    with dataset_lock(root):
        add_graph(ds, "a.000000000001", arrays)       # the commit re-enters the held lock
        assert (root / LOCK_FILE).exists()
        write_holder(root, host="node-7", pid=4242)   # judged gone and taken over
        with pytest.raises(DatasetLockedError, match="now held by pid 4242 on node-7"):
            add_graph(ds, "b.000000000002", arrays)
    assert (root / LOCK_FILE).exists()                # the new holder's lock is left alone
    assert set(Dataset.open(root).graphs()["graph_id"]) == {"a.000000000001"}


def test_opening_leaves_a_live_writers_commit_to_it(tmp_path: Path, arrays) -> None:
    """Opening a dataset mid-commit used to finish that commit and sweep every temp file,
    the live writer's staged files included."""
    root = tmp_path / "ds"
    add_graph(Dataset.open(root, create=True), "a.000000000001", arrays)
    staged = root / "graphs" / f"b.000000000002.npz{atomic.TEMP_MARK}0badcafe"
    with held_by_another_process(root):
        staged.write_bytes(b"staged by the writer")
        (root / atomic.JOURNAL).write_text(json.dumps({"renames": [], "deletes": []}))
        Dataset.open(root)
        assert staged.exists() and (root / atomic.JOURNAL).exists()
    Dataset.open(root)               # the writer is gone: its commit is finished now
    assert not staged.exists() and not (root / atomic.JOURNAL).exists()
