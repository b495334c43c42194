"""One writer per dataset: ``<root>/.tgt-lock`` names the run writing it, and is taken over
once that run is gone.

Every command that writes into a dataset (collect, partition, baseline's report, import's
target) holds the lock for its whole run, and every commit takes it too (reentrant within a
process), so two writers never interleave: a second one is refused at once with one line
naming the first (pid, host, since when, its command line), before it does any work.

When is a lock stale? A holder on this host (same kernel boot and pid namespace) is asked
directly: its pid gone, or reused by a process started later, means the run is gone (a
``kill -9`` included). A holder elsewhere (a Ray driver on a lost node, a shared filesystem)
cannot be asked, so it refreshes the file's mtime every :data:`HEARTBEAT_S` seconds; once the
mtime is :data:`LEASE_S` seconds old by the filesystem's own clock (a probe file's mtime, so
the hosts' clocks need not agree), the lock is stale. A stale lock is moved aside and replaced
in one rename race that only one contender wins; nothing ever waits for a lock.

Hand-written rather than ``filelock``: its lease markers carry no start time or command for
the refusal line, and it measures a foreign lease's expiry by watching it for the lease's
length, so a second run could not be answered at once.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import socket
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

from tpugraphs_tools.errors import DatasetError, DatasetLockedError
from tpugraphs_tools.store.manifest import MANIFEST

LOCK_FILE = ".tgt-lock"
HEARTBEAT_S = 15.0
# A foreign holder is stale after this long without a heartbeat: well past NFS attribute
# caching (up to 60 s) plus a missed beat or two.
LEASE_S = 180.0
_ATTEMPTS = 5  # create/take-over rounds before giving up (only contenders racing need >1)


def _read(path: str) -> str | None:
    try:
        return Path(path).read_text().strip()
    except OSError:
        return None


def _start_ticks(pid: int) -> int | None:
    """When ``pid`` started (clock ticks since boot, Linux); None where unknown."""
    stat = _read(f"/proc/{pid}/stat")
    try:
        return int(stat.rsplit(")", 1)[1].split()[19]) if stat else None
    except (IndexError, ValueError):
        return None


def _pid_namespace() -> str | None:
    try:
        return os.readlink("/proc/self/ns/pid")
    except OSError:
        return None


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie, killed but not yet reaped by its parent, does not)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process: it exists
        pass
    stat = _read(f"/proc/{pid}/stat")
    return not (stat and stat.rsplit(")", 1)[-1].split()[:1] == ["Z"])


def _command_line() -> str:
    argv = sys.argv or ["?"]
    prog = ("tgt" if "tpugraphs_tools" in argv[0] or Path(argv[0]).name == "tgt"
            else "python -c" if argv[0] == "-c" else Path(argv[0]).name)
    line = shlex.join([prog, *argv[1:]])
    return line if len(line) <= 120 else line[:119] + "…"


@dataclass(frozen=True)
class Holder:
    """Who holds a lock: what the refusal line names and what staleness is judged on."""

    pid: int
    host: str
    since: str               # UTC, when the lock was taken
    command: str             # the holder's command line
    token: str               # tells this holder's file from a later one's
    boot: str | None = None  # kernel boot id: a rebooted host ended every run on it
    pid_ns: str | None = None
    start: int | None = None  # the pid's start time, telling it from a later reuse

    @classmethod
    def this_process(cls) -> Holder:
        return cls(os.getpid(), socket.gethostname(),
                   time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()), _command_line(),
                   uuid.uuid4().hex, _read("/proc/sys/kernel/random/boot_id"),
                   _pid_namespace(), _start_ticks(os.getpid()))

    @classmethod
    def parse(cls, data: bytes) -> Holder | None:
        try:
            raw = json.loads(data)
            holder = cls(**{k: raw.get(k) for k in cls.__dataclass_fields__})
        except (ValueError, TypeError, AttributeError):
            return None
        return holder if isinstance(holder.pid, int) and isinstance(holder.host, str) else None

    def to_bytes(self) -> bytes:
        return json.dumps(asdict(self), sort_keys=True).encode() + b"\n"

    def describe(self) -> str:
        return f"pid {self.pid} on {self.host} since {self.since}: {self.command}"

    def checkable(self) -> bool:
        """Can this process ask the holder's pid directly (same host, boot, pid namespace)?"""
        me = Holder.this_process()
        return (self.host, self.boot, self.pid_ns) == (me.host, me.boot, me.pid_ns)


def _fs_now(folder: Path) -> float:
    """Now by the clock that stamps mtimes in ``folder`` (a network filesystem's server)."""
    probe = folder / f"{LOCK_FILE}.probe-{uuid.uuid4().hex[:8]}"
    try:
        probe.touch()
        return probe.stat().st_mtime
    except OSError:
        return time.time()
    finally:
        probe.unlink(missing_ok=True)


def stale_reason(root: Path, holder: Holder | None, mtime: float,
                 fs_clock: bool = True) -> str | None:
    """Why the lock of ``holder`` (file mtime ``mtime``) is stale; None while it is live.
    ``fs_clock=False``: judge a heartbeat by this host's clock (a reader writes no probe)."""
    if holder is not None and holder.checkable():
        if not _alive(holder.pid):
            return f"pid {holder.pid} is gone"
        started = _start_ticks(holder.pid)
        if holder.start is not None and started is not None and started != holder.start:
            return f"pid {holder.pid} is now another process"
        return None
    if holder is not None and holder.host == socket.gethostname() and holder.boot \
            and holder.boot != Holder.this_process().boot:
        return "its host has restarted since"
    age = (_fs_now(root) if fs_clock else time.time()) - mtime
    return f"no heartbeat for {age:.0f} s" if age > LEASE_S else None


def _refusal(root: Path, holder: Holder | None, mtime: float) -> str:
    path = root / LOCK_FILE
    who = holder.describe() if holder is not None else f"an unreadable {path}"
    beat = ""
    if holder is None or not holder.checkable():
        beat = (f"; last heartbeat {max(0.0, _fs_now(root) - mtime):.0f} s ago, taken over "
                f"once it is {LEASE_S:.0f} s old")
    return (f"{root}: being written by another tgt run ({who}{beat}); wait for it to end, "
            f"or if it is gone remove {path}")


def _create(path: Path, record: bytes) -> bool:
    """Make ``path`` holding ``record`` unless it exists: whole at once (a hard link of a
    written file), so a contender never reads a half-written holder."""
    tmp = path.with_name(f"{LOCK_FILE}.new-{uuid.uuid4().hex[:8]}")
    try:
        tmp.write_bytes(record)
        try:
            os.link(tmp, path)
        except FileExistsError:
            return False
        except OSError:  # a filesystem without hard links: exclusive create, then write
            try:
                fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
            except FileExistsError:
                return False
            with os.fdopen(fd, "wb") as f:
                f.write(record)
        return True
    finally:
        tmp.unlink(missing_ok=True)


def _take_over(path: Path, seen: bytes) -> None:
    """Remove the stale lock whose bytes were ``seen``: renamed aside first, so of several
    contenders exactly one removes it; a fresh lock moved aside by mistake is put back."""
    aside = path.with_name(f"{LOCK_FILE}.stale-{uuid.uuid4().hex[:8]}")
    try:
        os.rename(path, aside)
    except FileNotFoundError:
        return
    try:
        if aside.read_bytes() != seen:
            with contextlib.suppress(OSError):
                os.link(aside, path)
    finally:
        aside.unlink(missing_ok=True)


class _Held:
    """A lock this process holds: its record, a heartbeat thread and a reentry count."""

    def __init__(self, root: Path, holder: Holder) -> None:
        self.root, self.path, self.holder = root, root / LOCK_FILE, holder
        self.record = holder.to_bytes()
        self.count = 1
        self._stop = threading.Event()
        self._beat = threading.Thread(target=self._heartbeat, daemon=True,
                                      name=f"tgt-lock-heartbeat {root}")
        self._beat.start()

    def owned(self) -> bool:
        try:
            return self.path.read_bytes() == self.record
        except OSError:
            return False

    def _heartbeat(self) -> None:
        while not self._stop.wait(HEARTBEAT_S):
            if self.owned():
                with contextlib.suppress(OSError):
                    os.utime(self.path)

    def check(self) -> None:
        """Raise if another run took this lock over (it judged this run gone)."""
        if self.owned():
            return
        try:
            current = Holder.parse(self.path.read_bytes())
            who = current.describe() if current is not None else "an unreadable lock"
        except OSError:
            who = "nobody (the lock file was removed)"
        raise DatasetLockedError(f"{self.root}: this run's write lock is now held by {who}; "
                                 "nothing more is written by this run")

    def release(self) -> None:
        self._stop.set()
        if self._beat is not threading.current_thread():
            self._beat.join(timeout=1.0)
        if self.owned():
            self.path.unlink(missing_ok=True)


_HELD: dict[tuple[int, Path], _Held] = {}  # (pid, resolved root): a forked child holds none
_GUARD = threading.Lock()


def _acquire(root: Path) -> _Held:
    path = root / LOCK_FILE
    holder = Holder.this_process()
    for _ in range(_ATTEMPTS):
        if _create(path, holder.to_bytes()):
            return _Held(root, holder)
        try:
            seen, mtime = path.read_bytes(), path.stat().st_mtime
        except FileNotFoundError:
            continue  # released meanwhile
        current = Holder.parse(seen)
        if stale_reason(root, current, mtime) is None:
            raise DatasetLockedError(_refusal(root, current, mtime))
        _take_over(path, seen)
    raise DatasetLockedError(f"{root}: could not take {path} in {_ATTEMPTS} tries (other tgt "
                             "runs starting at the same moment?); try again")


@contextlib.contextmanager
def dataset_lock(root: str | Path) -> Iterator[Holder]:
    """Hold the write lock of the dataset folder ``root`` (made if missing) for the block.

    Reentrant within a process (a command's lock covers its commits); raises
    :class:`DatasetLockedError` at once, naming the holder, while another live run holds it.
    """
    root = Path(root)
    key = (os.getpid(), root.resolve())
    with _GUARD:
        held = _HELD.get(key)
        if held is not None:
            held.check()
            held.count += 1
        else:
            try:
                root.mkdir(parents=True, exist_ok=True)
                held = _HELD[key] = _acquire(root)
            except OSError as exc:
                raise DatasetError(f"{root}: cannot take the write lock {root / LOCK_FILE}: "
                                   f"{exc.strerror or exc}") from None
    try:
        yield held.holder
    finally:
        with _GUARD:
            held.count -= 1
            if held.count == 0:
                del _HELD[key]
                held.release()


def lock_if_dataset(root: str | Path | None) -> contextlib.AbstractContextManager[object]:
    """:func:`dataset_lock` when ``root`` is a tgt dataset (holds manifest.json), else nothing:
    for a command whose output may go into DATA, which can also be an official npz tree."""
    if root is not None and (Path(root) / MANIFEST).is_file():
        return dataset_lock(root)
    return contextlib.nullcontext()


def live_holder(root: str | Path) -> Holder | None:
    """The live run holding ``root``'s lock other than this process (None: free or stale)."""
    root = Path(root)
    if (os.getpid(), root.resolve()) in _HELD:
        return None
    path = root / LOCK_FILE
    try:
        seen, mtime = path.read_bytes(), path.stat().st_mtime
    except OSError:
        return None
    holder = Holder.parse(seen)
    live = holder is not None and stale_reason(root, holder, mtime, fs_clock=False) is None
    return holder if live else None
