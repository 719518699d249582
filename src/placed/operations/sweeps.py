"""The controller's sweep where it meets the store: the heartbeats it judges, the
liveness counts it reports, and the guard of each transaction that takes a stale target
down or brings it back up (service/controller.py judges; operations/placing.py plans and
operations/transactions.py writes the moves, telling the guard of each step).

Fault hooks, for tests only: `PLACED_FAULT=point:N` (or `point:N:stop`) kills this
process with SIGKILL (or stops it with SIGSTOP) inside such a transaction:
`rebalance.after_moves:N` once N unit moves are written, `rebalance.before_commit:N` at
the Nth commit of a move. Unset, nothing of it runs."""

from __future__ import annotations

import logging
import os
import signal
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from sqlalchemy import Connection, text
from sqlalchemy.orm import Session

from placed.operations import lease
from placed.operations.store import Store
from placed.store import leases, settings, targets
from placed.store.claims import Move
from placed.store.database import reading
from placed.store.world import Snapshot

POINTS = ("rebalance.after_moves", "rebalance.before_commit")
log = logging.getLogger("placed.controller")


@dataclass(frozen=True)
class Fault:
    point: str
    count: int
    stop: bool = False

    @classmethod
    def from_environment(cls, environment: Mapping[str, str] = os.environ) -> Fault | None:
        """$PLACED_FAULT as `point:N[:stop]`; None when unset. ValueError: why not."""
        value = environment.get("PLACED_FAULT", "")
        if not value:
            return None
        parts = value.split(":")
        if (
            len(parts) not in (2, 3)
            or parts[0] not in POINTS
            or not parts[1].isdigit()
            or int(parts[1]) < 1
            or (len(parts) == 3 and parts[2] != "stop")
        ):
            raise ValueError(
                f"$PLACED_FAULT is {value!r}: give point:N or point:N:stop, N from 1, "
                f"point one of {', '.join(POINTS)}"
            )
        return cls(parts[0], int(parts[1]), len(parts) == 3)

    def reached(self, point: str, count: int, session: Session) -> None:
        # Counts may jump (a commit writes its moves in one statement): at least N.
        if point != self.point or count < self.count:
            return
        session.flush()  # what was written so far is in the database's transaction
        log.warning("PLACED_FAULT %s:%d reached", point, count)
        os.kill(os.getpid(), signal.SIGSTOP if self.stop else signal.SIGKILL)


@dataclass(frozen=True)
class Heartbeats:
    """What a sweep judges, read in one transaction: the database's clock, the
    heartbeat settings, and every target that has heartbeated."""

    moment: datetime
    interval_s: float
    timeout_s: float
    seen: list[targets.Seen]
    guard_minimum: int


def heartbeats(store: Store) -> Heartbeats:
    with reading(store) as session:
        moment = leases.database_now(session)
        interval, timeout = settings.heartbeats(session)
        return Heartbeats(
            moment,
            interval,
            timeout,
            targets.seen(session),
            settings.disruption_guard_min_targets(session),
        )


def liveness_counts(store: Store) -> dict[str, int]:
    """How many targets are in each liveness, for the leader's metrics."""
    with reading(store) as session:
        return targets.liveness_counts(session)


class Leader(lease.Holder, Protocol):
    """What a sweep's transaction asks of the controller running it, at each step: the
    lease it holds now, its fault hook, and its count of rebalance commits (for
    `rebalance.before_commit`)."""

    fault: Fault | None
    rebalance_commits: int


class Change(Protocol):
    """The planned change the guard sees last before its commit."""

    @property
    def after(self) -> Snapshot: ...

    @property
    def moves(self) -> Sequence[Move]: ...


def _fence_opened(session: Session, leader: Leader, ttl_s: float) -> None:
    if session.get_bind().dialect.name == "postgresql":
        # A paused leader (SIGSTOP) holds its locks, the revision row's among them,
        # until resumed; resumed, its fence refuses the commit. Never resumed, the
        # database ends its session after two TTLs, and so its locks.
        limit = int(2 * ttl_s * 1000)
        session.execute(text(f"SET LOCAL idle_in_transaction_session_timeout = {limit}"))
    lease.check(session, leader, lock=False)


class Fence:
    """A sweep's fence for a change the live world writes in its batch's own
    transaction (operations/replica.py, on a Core connection): the lease checked as the
    transaction opens and again, its row locked, before it commits, as `Guard` checks
    it. No fault hooks: a leader with one takes the general path, with its `Guard`."""

    def __init__(self, leader: Leader, ttl_s: float) -> None:
        self.leader = leader
        self.ttl_s = ttl_s

    def opened(self, connection: Connection) -> None:
        # A session joined to the connection's transaction: closing it leaves that open.
        with Session(bind=connection) as session:
            _fence_opened(session, self.leader, self.ttl_s)

    def closing(self, connection: Connection) -> None:
        with Session(bind=connection) as session:
            lease.check(session, self.leader, lock=True)


class Guard:
    """A sweep transaction's fence, its liveness row, and the fault hooks
    (transactions.Guard)."""

    def __init__(self, leader: Leader, ttl_s: float, target_id: int, name: str) -> None:
        self.leader = leader
        self.ttl_s = ttl_s
        self.target_id = target_id
        self.name = name

    def opened(self, session: Session) -> None:
        _fence_opened(session, self.leader, self.ttl_s)

    def moved(self, session: Session, count: int) -> None:
        if self.leader.fault is not None:
            self.leader.fault.reached("rebalance.after_moves", count, session)

    def closing(self, session: Session, change: Change) -> None:
        targets.set_liveness(session, self.target_id, change.after.targets[self.name].liveness)
        leader = self.leader
        if leader.fault is not None and change.moves:
            leader.rebalance_commits += 1
            leader.fault.reached("rebalance.before_commit", leader.rebalance_commits, session)
        lease.check(session, leader, lock=True)
