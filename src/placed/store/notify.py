"""Waking readers when events commit (SERVICE.md, "Events"): on PostgreSQL a transaction
that writes events sends a NOTIFY, which every replica's `Listener` hears at its commit,
so a long-poll anywhere answers at once; SQLite has no such thing, and readers poll.

A rolled-back transaction notifies nobody: PostgreSQL delivers notifications at commit
only, and folds a transaction's identical ones into one.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

import psycopg
from sqlalchemy import Connection, Engine, text
from sqlalchemy.orm import Session

CHANNEL = "placed_events"
RECONNECT_S = 1.0
log = logging.getLogger("placed.notify")

_NOTIFY = text(f"SELECT pg_notify('{CHANNEL}', '')")


def announce(where: Session | Connection) -> None:
    """Tell every listener, at this transaction's commit, that events were written. Once
    per transaction of a session, however many events it writes."""
    dialect = where.get_bind().dialect if isinstance(where, Session) else where.dialect
    if dialect.name != "postgresql":
        return
    if isinstance(where, Session):
        transaction = where.get_transaction()
        if where.info.get("announced") is transaction:
            return
        where.info["announced"] = transaction
    where.execute(_NOTIFY)


def listener(
    engine: Engine, heard: Callable[[], None], listening: threading.Event | None = None
) -> Listener | None:
    """A `Listener` for `engine`, not yet started; None when its database has no
    notifications (SQLite), and readers poll."""
    if engine.dialect.name != "postgresql":
        return None
    return Listener(engine, heard, listening)


class Listener:
    """A thread holding one connection of its own in LISTEN, calling `heard` for each
    notification (and once on each connect, for what committed while it was away).
    `listening` is set while the connection is up."""

    def __init__(
        self,
        engine: Engine,
        heard: Callable[[], None],
        listening: threading.Event | None = None,
    ) -> None:
        self._conninfo = engine.url.set(drivername="postgresql").render_as_string(
            hide_password=False
        )
        self._heard = heard
        self._stop = threading.Event()
        self.listening = listening or threading.Event()
        self._thread = threading.Thread(target=self._run, name="placed-listen", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                with psycopg.connect(self._conninfo, autocommit=True, connect_timeout=5) as db:
                    db.execute(f"LISTEN {CHANNEL}")
                    self.listening.set()
                    self._heard()
                    while not self._stop.is_set():
                        for _ in db.notifies(timeout=0.5):
                            self._heard()
            except psycopg.Error as error:
                log.warning("listening for events: %s; again in %g s", error, RECONNECT_S)
            finally:
                self.listening.clear()
            self._stop.wait(RECONNECT_S)
