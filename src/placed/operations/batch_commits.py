"""Claims' batches committed by a process of its own (service/commit_process.py is the
server's end, which starts it and hands it each batch): here is what that process does,
and what the two ends say to each other on their pipe.

The child holds its own connection pool and runs `store.batch.write` exactly as the
server would; what it raises (`Behind`, `Stale`, a driver's error) is sent back to be
raised again in the server. It opens the store by its address, so only a store another
process can open (not an in-memory SQLite database) is committed this way.
"""

from __future__ import annotations

import contextlib
import multiprocessing.connection
import pickle
import signal

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
