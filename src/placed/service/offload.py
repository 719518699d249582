"""Reading a large spec in a process of its own, so the server keeps answering meanwhile.

Python's JSON and YAML readers and pydantic's validation each hold the interpreter for the
whole of one call: on a 16 MiB spec, seconds in which no other thread runs, worker
threads or not, and `/healthz` with them. A body past `OFFLOAD_BYTES` is therefore read
(and, for `POST /v1/plan`, planned) in a worker process: the server's event loop and
threads go on, and the memory the reading takes is the worker's, bounded by
`MEMORY_BYTES` (past it the worker fails, and the request gets a 413 saying so).

Only small things cross between the processes: the body's bytes in, and out either the
answer already encoded as JSON, or a problem's fields (at most 100 errors).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import multiprocessing
import resource
import threading
from collections.abc import Callable
from concurrent.futures.process import BrokenProcessPool
from typing import Any

from placed.operations.errors import OperationError
from placed.service.problems import ProblemException, from_operation

OFFLOAD_BYTES = 1024 * 1024
WORKERS = 1  # large specs wait for each other, not for the server
MEMORY_BYTES = 2 * 1024**3

# A worker's outcome: ("answer", JSON bytes) or ("problem", the problem's fields).
Outcome = tuple[str, Any]


def _bounded(memory: int) -> None:
    """In the worker, first: its address space bounded, so one spec cannot take the
    machine's memory."""
    if memory > 0:
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))


def as_outcome(work: Callable[..., bytes], *args: Any) -> Outcome:
    """Run `work` (in the worker) and say what it gave, a problem included, as plain data."""
    try:
        try:
            return ("answer", work(*args))
        except OperationError as error:
            raise from_operation(error) from error
    except ProblemException as problem:
        return (
            "problem",
            (problem.status, problem.kind, problem.detail, problem.errors, problem.extensions),
        )
    except MemoryError:
        return ("problem", (413, "body-too-large", _TOO_MUCH, None, {}))


_TOO_MUCH = (
    "the spec takes more memory to read than the server gives one request; split it into "
    "several documents or files"
)


class Offload:
    """The worker processes, started on first use (a server that never sees a large spec
    starts none) and stopped with the app."""

    def __init__(self, workers: int = WORKERS, memory: int = MEMORY_BYTES) -> None:
        self.workers = workers
        self.memory = memory
        self._lock = threading.Lock()
        self._pool: concurrent.futures.ProcessPoolExecutor | None = None

    def _executor(self) -> concurrent.futures.ProcessPoolExecutor:
        with self._lock:
            if self._pool is None:
                # Spawned, not forked: the server's threads (the claims' thread, the
                # database pools, the controller) must not be copied mid-way.
                self._pool = concurrent.futures.ProcessPoolExecutor(
                    self.workers,
                    mp_context=multiprocessing.get_context("spawn"),
                    initializer=_bounded,
                    initargs=(self.memory,),
                )
            return self._pool

    async def run(self, work: Callable[..., bytes], *args: Any) -> bytes:
        """`work(*args)` in a worker: its JSON bytes, or its problem raised here."""
        running = asyncio.get_running_loop()
        try:
            kind, value = await running.run_in_executor(self._executor(), as_outcome, work, *args)
        except BrokenProcessPool:
            # The worker died (its memory bound, or killed): the next request gets a
            # new one.
            self._forget()
            raise ProblemException(413, "body-too-large", _TOO_MUCH) from None
        if kind == "problem":
            status, problem_kind, detail, errors, extensions = value
            raise ProblemException(status, problem_kind, detail, errors, extensions=extensions)
        assert isinstance(value, bytes)
        return value

    def _forget(self) -> None:
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)

    def close(self) -> None:
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
