"""Where tasks run: in this process (``local``), a process pool (``process``) or a Ray cluster (``ray``).

Every executor takes a stream of jobs (one trace with its shared token counts and a few of its
tasks) and yields each job's task outputs as it finishes, with only a bounded number of jobs in
flight, so neither the traces nor the results pile up in the parent. On Ctrl-C, ``interrupt``
starts nothing new and saves what is still finishing; a second Ctrl-C stops waiting, keeps what
had finished and ends the workers. Pool workers also watch their parent and exit when it is gone
(SIGKILL, the OOM killer), so nothing is left running.

A command that runs several sweeps (``run``: the primary run, then robustness's replays) opens
``shared_pools()`` around them: each ``process`` executor of the same worker count then submits to
one pool, started once and ended when the command ends (issue 28: every spawned pool imported the
whole harness again in each worker, ~0.9 s CPU each). A job carries its run's settings, and the
job function brings what a worker keeps between jobs to them (bench.run.runner.run_job: the prices).
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

EXECUTORS = ("local", "process", "ray")
PARENT_POLL = 0.5
"""Seconds between a worker's checks that its parent is still alive."""


@dataclass(frozen=True)
class Job:
    """One trace and some of its tasks: ``tasks`` is a tuple of (key, strategy spec)."""

    trace: Any
    counts: Any
    tasks: tuple[tuple[str, Any], ...]
    sha: str = ""
    """The trace's content hash when the planner has it (bench.run.sources.trace_hash, 14 ms for a trace of
    the seeds-1 bench): a worker would otherwise hash the trace again for every job to find its kept counts."""


Save = Callable[[list[Any]], None]
JobFn = Callable[..., list[Any]]


def _watch_parent(parent: int) -> None:
    """Exit this worker as soon as its parent is gone (re-parented: getppid changes)."""
    def watch() -> None:
        while True:
            time.sleep(PARENT_POLL)
            if os.getppid() != parent:
                os._exit(3)

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()


_WORKER = [False]
"""Whether this process is a pool's or Ray's worker, which serves the jobs of one run after another."""


def in_worker() -> bool:
    """True in a process pool's or a Ray worker (not in the process that plans the runs)."""
    return _WORKER[0]


def _init_pool_worker(parent: int) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle (no traceback per worker)
    _WORKER[0] = True
    _watch_parent(parent)


STARTED = [0]
"""Process pools started by this process (tests/bench/test_shared_pool.py counts them)."""


def _start_pool(workers: int) -> ProcessPoolExecutor:
    import multiprocessing

    STARTED[0] += 1
    return ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn"),
                               initializer=_init_pool_worker, initargs=(os.getpid(),))


class Pools:
    """The process pools one command shares, by worker count (``shared_pools``)."""

    def __init__(self) -> None:
        self.pools: dict[int, ProcessPoolExecutor] = {}

    def get(self, workers: int) -> ProcessPoolExecutor:
        """The pool of ``workers`` processes, started on first use or again after it broke (a worker died)."""
        pool = self.pools.get(workers)
        if pool is None or getattr(pool, "_broken", False):
            if pool is not None:
                pool.shutdown(wait=False, cancel_futures=True)
            pool = self.pools[workers] = _start_pool(workers)
        return pool

    def discard(self, pool: ProcessPoolExecutor) -> None:
        """``pool`` was killed (a second Ctrl-C): never hand it out again."""
        self.pools = {w: p for w, p in self.pools.items() if p is not pool}

    def close(self) -> None:
        """End every pool: its workers finish what they run and exit (idempotent)."""
        pools, self.pools = list(self.pools.values()), {}
        for pool in pools:
            pool.shutdown(wait=True, cancel_futures=True)


_SHARED: list[Pools] = []
"""The open ``shared_pools`` scopes, innermost last."""


@contextmanager
def shared_pools() -> Iterator[Pools]:
    """Within the block, ``process`` executors share one pool per worker count; it is ended when the
    block ends, however it ends (an error, Ctrl-C). Outside any block each executor has its own pool."""
    pools = Pools()
    _SHARED.append(pools)
    try:
        yield pools
    finally:
        _SHARED.remove(pools)
        pools.close()


class LocalExecutor:
    """Tasks one after another in this process (``--workers 1``, tests, debugging)."""

    def __init__(self, fn: JobFn, args: tuple[Any, ...]) -> None:
        self.fn, self.args = fn, args

    def results(self, jobs: Iterable[Job]) -> Iterator[list[Any]]:
        for job in jobs:
            for task in job.tasks:  # one task at a time: each is saved as soon as it finishes
                yield self.fn(Job(job.trace, job.counts, (task,), job.sha), *self.args)

    def interrupt(self, save: Save) -> None:
        """Nothing runs in the background."""

    def close(self) -> None:
        pass


class ProcessExecutor:
    """A pool of spawned processes; at most ``2 × workers + 2`` jobs in flight."""

    def __init__(self, fn: JobFn, args: tuple[Any, ...], workers: int, pools: Pools | None = None) -> None:
        self.fn, self.args, self.workers, self.pools = fn, args, workers, pools
        self.pool = pools.get(workers) if pools is not None else _start_pool(workers)
        self.killed = False
        self.pending: set[Future] = set()
        self.handed: set[Future] = set()

    def results(self, jobs: Iterable[Job]) -> Iterator[list[Any]]:
        limit = 2 * self.workers + 2
        for job in jobs:
            self.pending.add(self.pool.submit(self.fn, job, *self.args))
            while len(self.pending) >= limit:
                yield from self._collect()
        while self.pending:
            yield from self._collect()

    def _collect(self) -> Iterator[list[Any]]:
        done, _ = wait(self.pending, return_when=FIRST_COMPLETED)
        for fut in done:
            result = fut.result()
            yield result
            self.pending.discard(fut)  # only once the caller has it (it saves before asking for more)

    def interrupt(self, save: Save) -> None:
        for fut in self.pending:
            fut.cancel()
        running = [f for f in self.pending if not f.cancelled()]
        try:
            for fut in running:
                if fut.exception() is None:
                    save(fut.result())
                self.pending.discard(fut)
        except KeyboardInterrupt:  # a second Ctrl-C: keep what has finished, stop the rest now
            for fut in list(self.pending):
                if fut.done() and not fut.cancelled() and fut.exception() is None:
                    save(fut.result())
            self.kill()
            raise

    def kill(self) -> None:
        for p in list((getattr(self.pool, "_processes", None) or {}).values()):
            p.terminate()
        self.pool.shutdown(wait=False, cancel_futures=True)
        self.killed = True
        if self.pools is not None:
            self.pools.discard(self.pool)

    def close(self) -> None:
        """This run's jobs that have not started are cancelled and those running are waited for; an
        own pool is ended, a shared one stays for the command's next run (``shared_pools``)."""
        if self.pools is None or self.killed:
            self.pool.shutdown(wait=True, cancel_futures=True)
            return
        for fut in self.pending:
            fut.cancel()
        wait(self.pending)
        self.pending.clear()


class RayExecutor:
    """Ray tasks on an existing cluster (``address``, or RAY_ADDRESS) or a local one.

    Each trace and its token counts go to the object store once (``ray.put``) and every job of
    that trace refers to them; results come back with ``ray.wait`` as they finish.
    """

    def __init__(self, fn: JobFn, args: tuple[Any, ...], workers: int, address: str | None = None) -> None:
        try:
            import ray
        except ImportError:
            raise ValueError("--executor ray needs Ray: pip install 'compaction-bench[ray]'") from None
        self.ray = ray
        self.started = not ray.is_initialized()
        if self.started:
            address = address or os.environ.get("RAY_ADDRESS")
            options: dict[str, Any] = {"address": address} if address else {"num_cpus": workers}
            ray.init(**options, include_dashboard=False, log_to_driver=False, logging_level="warning")
        self.remote = ray.remote(_ray_job).options(max_retries=0)
        self.fn, self.args = fn, args
        self.limit = 2 * max(1, int(ray.available_resources().get("CPU", workers))) + 2
        self.pending: list[Any] = []

    def results(self, jobs: Iterable[Job]) -> Iterator[list[Any]]:
        ray = self.ray
        shared: tuple[int, Any] | None = None
        fn, args = ray.put(self.fn), ray.put(self.args)
        for job in jobs:
            if shared is None or shared[0] != id(job.trace):
                shared = (id(job.trace), ray.put((job.trace, job.counts, job.sha)))
            self.pending.append(self.remote.remote(fn, shared[1], job.tasks, args))
            while len(self.pending) >= self.limit:
                yield from self._collect()
        while self.pending:
            yield from self._collect()

    def _collect(self) -> Iterator[list[Any]]:
        ray = self.ray
        done, _ = ray.wait(self.pending, num_returns=1)
        for ref in done:
            result = ray.get(ref)
            yield result
            self.pending.remove(ref)

    def interrupt(self, save: Save) -> None:
        ray = self.ray
        try:
            while self.pending:
                done, _ = ray.wait(self.pending, num_returns=1)
                for ref in done:
                    try:
                        save(ray.get(ref))
                    except ray.exceptions.RayError:
                        pass
                    self.pending.remove(ref)
        except KeyboardInterrupt:  # second Ctrl-C: keep what finished, cancel the rest
            done, rest = ray.wait(self.pending, num_returns=len(self.pending), timeout=0)
            for ref in done:
                save(ray.get(ref))
            for ref in rest:
                ray.cancel(ref, force=True)
            self.pending = []
            raise

    def close(self) -> None:
        if self.started:
            self.ray.shutdown()


def _ray_job(fn: JobFn, shared: tuple[Any, Any], tasks: tuple, args: tuple[Any, ...]) -> list[Any]:
    _WORKER[0] = True  # a Ray worker may serve several runs of one driver too
    trace, counts, sha = shared
    return fn(Job(trace, counts, tasks, sha), *args)


def build(kind: str, fn: JobFn, args: tuple[Any, ...], *, workers: int, address: str | None = None):
    """The executor of ``--executor`` (``process`` with one worker runs locally)."""
    if kind not in EXECUTORS:
        raise ValueError(f"--executor {kind!r}: expected one of {', '.join(EXECUTORS)}")
    if kind == "ray":
        return RayExecutor(fn, args, workers, address)
    if kind == "local" or workers <= 1:
        return LocalExecutor(fn, args)
    return ProcessExecutor(fn, args, workers, _SHARED[-1] if _SHARED else None)
