"""The controller's lease where it meets the store (SERVICE.md, "One controller at a
time: the lease"), judged by the database's clock only: taking or renewing it, letting
it go, the fence each controller transaction checks, and the events written under it.
The controller (service/controller.py) decides when to do each."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from sqlalchemy.orm import Session

from placed.operations.store import Store
from placed.store import events, leases
from placed.store.claims import Actor
from placed.store.database import reading, writing
from placed.store.events import Recorded

LEASE = "controller"


class Fenced(Exception):
    """This process no longer holds the lease at its epoch: it steps down."""


class Holder(Protocol):
    """A controller as the fence reads it at each check: `epoch` is the one it holds as it
    knows now (None: not leading), which a renewal may change under a transaction."""

    holder: str
    epoch: int | None


@dataclass(frozen=True)
class Seen:
    """The lease as a renewal found it: who holds it, where it takes forwarded writes
    (None: nowhere said), and how long it has left by the database's clock."""

    holder: str
    epoch: int
    address: str | None
    left_s: float


@dataclass(frozen=True)
class Renewal:
    """`epoch`: the epoch `holder` holds now (None: another holds it); `moment`: the
    database's clock in the renewal's transaction; `seen`: the lease it left, held or not
    (None: there is none)."""

    epoch: int | None
    moment: datetime
    seen: Seen | None


@dataclass(frozen=True)
class Standing:
    """The lease as stored, for anyone asking who leads: `expired` by the database's
    clock (no replica leads until one takes it)."""

    holder: str
    epoch: int
    expires_at: datetime
    expired: bool
    address: str | None


def standing(store: Store) -> Standing | None:
    """The lease now; None when it was never held."""
    with reading(store) as session:
        row = leases.current(session, LEASE)
        moment = leases.database_now(session)
        if row is None:
            return None
        return Standing(
            row.holder, row.epoch, row.expires_at, row.expires_at <= moment, row.address
        )


def renew(store: Store, holder: str, ttl_s: float, address: str | None) -> Renewal:
    """Take the lease when it is free or expired (raising its epoch), or renew
    `holder`'s own, for `ttl_s` by the database's clock."""
    with writing(store) as session:
        row = leases.acquire(session, LEASE, holder, ttl_s, address)
        epoch = row.epoch if row is not None else None
        moment = leases.database_now(session)
        # Loaded by acquire, held or not: no second read.
        found = leases.current(session, LEASE)
        seen = (
            Seen(
                found.holder,
                found.epoch,
                found.address,
                (found.expires_at - moment).total_seconds(),
            )
            if found is not None
            else None
        )
    return Renewal(epoch, moment, seen)


def release(store: Store, holder: str) -> None:
    """Let the lease go now, so another replica leads at once (no-op when not held)."""
    with writing(store) as session:
        leases.release(session, LEASE, holder)


def check(session: Session, who: Holder, lock: bool) -> None:
    """Fenced unless `who` still holds the lease at its epoch in this transaction. With
    `lock`, the row stays locked to its end, so no takeover commits before it."""
    epoch = who.epoch
    if epoch is None or not leases.held(session, LEASE, who.holder, epoch, lock=lock):
        raise Fenced


def record(
    store: Store, who: Holder, actor: Actor, kind: str, details: Mapping[str, Any]
) -> Recorded:
    """An event of the lease's (`lease.acquired`, `sweep.suppressed`), committed only while
    `who` holds it (else Fenced, and nothing is written)."""
    with writing(store) as session:
        check(session, who, lock=True)
        return events.append(session, kind, LEASE, actor_role=actor.role, details=details)
