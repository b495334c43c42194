"""One ordered, memory-bounded process pool for per-file work (import, validate).

The executor is only the choice of ``map``: local processes (:class:`Pool`) or Ray tasks
(:class:`RayPool`, ``--executor ray``), with the same ordered, bounded contract.
:func:`ray_session` is where Ray is started, for the pool and for collect's Ray executor.

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
from contextlib import ExitStack, contextmanager
from itertools import chain, islice
from typing import Any, TypeVar

from tpugraphs_tools.errors import RayUnavailableError

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


EXECUTORS = ("local", "ray")


@contextmanager
def ray_session(address: str | None = None) -> Iterator[Any]:
    """The ``ray`` module, joined to the cluster at ``address`` (None: a local instance)
    unless this process already joined one; shut down on exit only if started here. The one
    place tgt starts Ray (``--executor ray`` of import, validate and collect)."""
    try:
        import ray
    except ImportError:
        raise RayUnavailableError("--executor ray needs ray: pip install "
                                  "'tpugraphs-tools[ray]'") from None
    started = not ray.is_initialized()
    if started:
        ray.init(address=address, include_dashboard=False, log_to_driver=False)
    try:
        yield ray
    finally:
        if started:
            ray.shutdown()


class RayPool(Pool):
    """:class:`Pool` whose ``map`` runs each item as a Ray task (``--executor ray``): files
    are split across the cluster's nodes, results still come back in input order with a
    bounded number in flight. Ray is started on first use (:func:`ray_session`) and shut down
    on exit when this pool started it. Paths in the items must be readable (and for import
    writable) at the same place on every node."""

    def __init__(self, address: str | None = None) -> None:
        super().__init__(1)
        self.address = address
        self._session = ExitStack()
        self._ray: Any = None

    def __exit__(self, *exc: object) -> None:
        self._session.close()

    def _init(self) -> Any:
        if self._ray is None:
            self._ray = self._session.enter_context(ray_session(self.address))
        return self._ray

    def map(self, fn: Callable[[T], R], items: Iterable[T]) -> Iterator[R]:
        ray = self._init()
        remote = ray.remote(fn)
        window = max(2, 2 * int(ray.cluster_resources().get("CPU", 1)))
        pending: deque[Any] = deque()

        def result(ref: Any) -> R:
            try:
                return ray.get(ref)
            except ray.exceptions.RayTaskError as exc:  # the task's own error, not Ray's
                raise exc.cause from None

        try:
            for item in items:
                pending.append(remote.remote(item))
                if len(pending) >= window:
                    yield result(pending.popleft())
            while pending:
                yield result(pending.popleft())
        finally:
            for ref in pending:
                ray.cancel(ref)


def make_pool(executor: str = "local", jobs: int = 1, address: str | None = None) -> Pool:
    """The ordered pool of an ``--executor``: local processes or a Ray cluster."""
    if executor == "ray":
        return RayPool(address)
    if executor != "local":
        raise ValueError(f"executor {executor!r}: expected one of {', '.join(EXECUTORS)}")
    return Pool(jobs)
