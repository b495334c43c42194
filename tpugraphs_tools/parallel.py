"""One ordered, memory-bounded process pool for per-file work (import, validate).

Results come back in input order, so a parallel run writes exactly what a serial one does, and
at most ``2 × jobs`` items are in flight, so memory does not grow with the number of files.
Workers are spawned (not forked): polars and pyarrow thread pools do not survive a fork.
"""

from __future__ import annotations

import multiprocessing
import os
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from itertools import chain, islice
from typing import TypeVar

MIN_PARALLEL = 4  # fewer items than this run in the calling process
T = TypeVar("T")
R = TypeVar("R")


def default_jobs() -> int:
    """Cores this process may use (``TGT_JOBS`` overrides)."""
    env = os.environ.get("TGT_JOBS")
    if env and env.isdigit() and int(env) > 0:
        return int(env)
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


class Pool:
    """A reusable ordered pool: ``with Pool(jobs) as pool: for r in pool.map(fn, items)``.

    Workers start on the first ``map`` with enough items, so small inputs pay nothing.
    """

    def __init__(self, jobs: int = 1) -> None:
        self.jobs = jobs
        self._pool: ProcessPoolExecutor | None = None

    def __enter__(self) -> Pool:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)

    def map(self, fn: Callable[[T], R], items: Iterable[T]) -> Iterator[R]:
        """``map(fn, items)`` in input order, at most ``2 × jobs`` items in flight.

        ``fn`` must be a module-level function and items/results picklable when ``jobs > 1``.
        """
        items = iter(items)
        head = list(islice(items, MIN_PARALLEL))
        if self.jobs <= 1 or len(head) < MIN_PARALLEL:  # a few files: workers cost more
            yield from map(fn, chain(head, items))
            return
        if self._pool is None:
            self._pool = ProcessPoolExecutor(max_workers=self.jobs,
                                             mp_context=multiprocessing.get_context("spawn"))
        items = chain(head, items)
        pending: deque[Future[R]] = deque()
        try:
            for item in items:
                pending.append(self._pool.submit(fn, item))
                if len(pending) >= 2 * self.jobs:
                    yield pending.popleft().result()
            while pending:
                yield pending.popleft().result()
        finally:
            for job in pending:
                job.cancel()


def ordered_map(fn: Callable[[T], R], items: Iterable[T], jobs: int = 1) -> Iterator[R]:
    """One-off :meth:`Pool.map` on ``jobs`` processes (1: in this process)."""
    with Pool(jobs) as pool:
        yield from pool.map(fn, items)
