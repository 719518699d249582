"""A served replica's batches committed by a process of its own (operations/replica.py):
the server's end (`CommitProcess`, which starts the child and hands it each batch), what
the child does, and what the two ends say to each other on their pipe.

A batch's commit is the chain every claim waits on: one after another, each on the
revision the one before made. In the server's process the committing thread gives the
interpreter's lock away at each of the driver's waits (a dozen a batch) and waits to get
it back from the threads answering requests: a commit of 2 ms alone took 6 ms there. In a
process of its own the same statements run on an interpreter nobody else wants, and the
server waits once, for the answer on a pipe.

The child holds its own connection pool and runs `store.batch.write` exactly as the
server would; what it raises (`Behind`, `Stale`, a driver's error) is sent back to be
raised again in the server. It opens the store by its address, so only a store another
process can open (not an in-memory SQLite database) is committed this way. A child that
dies leaves the outcome of the batch it held unknown: that batch's claims get `Lost` (a
503 that says so), and the next batch starts another child. Until a child has said it is
ready (its imports and engine take about a second) batches are committed in the server's
process, as an unserved app always does.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import multiprocessing.connection
import pickle
import signal
import threading
from multiprocessing.process import BaseProcess
from typing import Any

from placed.operations.store import Address, Store
from placed.store import batch
from placed.store.database import make_engine

READY = "ready"
STORED = "stored"
RAISED = "raised"


class Lost(Exception):
    """The commit process ended while it held a batch: whether it was stored is unknown."""


def shareable(url: Address) -> bool:
    """Whether another process opens the same database (not an in-memory SQLite one)."""
    return url.get_backend_name() != "sqlite" or url.database not in (None, "", ":memory:")


def address_of(store: Store) -> Address | None:
    """Where a commit process opens `store`; None when no other process can."""
    return store.url if shareable(store.url) else None


def commit_forever(url: Address, pipe: multiprocessing.connection.Connection) -> None:
    """The child: each batch the server sends, written and committed, and the answer sent
    back, until the server closes its end."""
    # Ctrl-C reaches the whole process group: the server stops the child by closing the
    # pipe, after its last batch, instead of the child dying mid-commit with a traceback.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    engine = make_engine(url)
    # The server gone (its end closed, or the process killed) ends the child: a batch
    # it was committing is stored or not as the database decided, and nobody waits.
    with contextlib.suppress(EOFError, OSError):
        pipe.send((READY, None))
        while True:
            seen, rows = pipe.recv()
            try:
                with engine.begin() as connection:
                    stored = batch.write(connection, seen, *rows)
            except Exception as error:
                pipe.send_bytes(_raised(error))
                continue
            pipe.send((STORED, stored))
    engine.dispose()


def _raised(error: Exception) -> bytes:
    """The error pickled to be raised again in the server; one that cannot be pickled (a
    driver's, holding its connection) as a RuntimeError with its text."""
    try:
        return pickle.dumps((RAISED, error))
    except Exception:  # whatever stops pickling it, its text still goes back
        return pickle.dumps((RAISED, RuntimeError(f"{type(error).__name__}: {error}")))


STOP_SECONDS = 5.0


class CommitProcess:
    """The server's end: `write` sends a batch to the child and waits for its answer.
    Called from one committing thread at a time (the replica's); `close` from another."""

    def __init__(self, url: Address) -> None:
        self._url = url
        self._lock = threading.Lock()
        self._process: BaseProcess | None = None
        self._pipe: multiprocessing.connection.Connection | None = None
        self._ready = False
        self._closed = False
        self.started = 0  # children started, the first included
        self.written = 0  # batches a child stored

    def start(self) -> None:
        """Start a child (it says when it is ready); a no-op once closed."""
        with self._lock:
            if self._closed or self._process is not None:
                return
            # spawn, not fork: the server has threads (and a fork would copy their
            # locks held), and a child of its own imports only what commits.
            context = multiprocessing.get_context("spawn")
            ours, theirs = context.Pipe()
            process = context.Process(
                target=commit_forever,
                args=(self._url, theirs),
                name="placed-commit",
                daemon=True,
            )
            process.start()
            theirs.close()
            self._process, self._pipe, self._ready = process, ours, False
            self.started += 1

    def ready(self) -> bool:
        """Whether batches go to the child now; starts one when there is none."""
        if self._closed:
            return False
        if self._process is None:
            self.start()
        pipe = self._pipe
        if self._ready or pipe is None:
            return self._ready
        try:
            if pipe.poll():
                kind, _ = pipe.recv()
                self._ready = kind == READY
        except (EOFError, OSError):
            self._forget()
        return self._ready

    def write(self, seen: int, rows: tuple[Any, ...]) -> batch.Stored:
        """`batch.write(connection, seen, *rows)` and its commit, in the child; what it
        raised, raised here; `Lost` when the child ended before it answered."""
        pipe = self._pipe
        if pipe is None or not self._ready:
            raise Lost("the commit process is not running")
        try:
            pipe.send((seen, rows))
            kind, value = pipe.recv()
        except (EOFError, OSError) as error:
            self._forget()
            raise Lost(
                "the commit process ended while it held the batch; a claim may or may "
                "not have been stored"
            ) from error
        if kind == RAISED:
            raise value
        assert isinstance(value, batch.Stored)
        self.written += 1
        return value

    def _forget(self) -> None:
        """The child is gone: the next `ready` starts another."""
        self._detach(closing=False)

    def close(self) -> None:
        """Stop the child: its pipe closed, it ends after the batch it holds."""
        self._detach(closing=True)

    def _detach(self, closing: bool) -> None:
        with self._lock:
            self._closed = self._closed or closing
            process, pipe = self._process, self._pipe
            self._process, self._pipe, self._ready = None, None, False
        if pipe is not None:
            pipe.close()
        if process is None:
            return
        process.join(timeout=STOP_SECONDS)
        # A child that died needs only the join; one held in a batch at close is ended.
        if process.is_alive():
            process.kill()
            process.join(timeout=STOP_SECONDS)
