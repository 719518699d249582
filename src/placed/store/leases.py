"""Leases, judged by the database's clock only (never compared across machines).

`acquire` takes a free or expired lease (raising its epoch) or renews one's own; the
controller (through operations/lease.py) re-checks `holder`, `epoch` and `expires_at > now`
in each of its transactions with `held`, last before it commits.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from sqlalchemy import func, select, update
from sqlalchemy.orm import Session

from placed.store.tables import Lease


def database_now(session: Session) -> datetime:
    """The database's clock, as an aware UTC time."""
    if session.get_bind().dialect.name == "sqlite":
        text = session.scalar(select(func.strftime("%Y-%m-%d %H:%M:%f", "now")))
        return datetime.fromisoformat(f"{text}+00:00")
    moment: datetime = session.scalar(select(func.now()))  # type: ignore[assignment]
    return moment


def acquire(
    session: Session, name: str, holder: str, ttl_s: float, address: str | None = None
) -> Lease | None:
    """The lease, now held by `holder` (which takes forwarded writes at `address`) until
    the database's now + ttl; None when another holder's lease has not expired."""
    now = database_now(session)
    until = now + timedelta(seconds=ttl_s)
    row = session.get(Lease, name, with_for_update=True)
    if row is None:
        row = Lease(name=name, holder=holder, epoch=1, expires_at=until, address=address)
        session.add(row)
    elif row.holder == holder and row.expires_at > now:
        row.expires_at, row.address = until, address
    elif row.expires_at <= now:
        row.holder, row.epoch, row.expires_at = holder, row.epoch + 1, until
        row.address = address
    else:
        return None
    session.flush()
    return row


def release(session: Session, name: str, holder: str) -> bool:
    done = session.execute(
        update(Lease)
        .where(Lease.name == name, Lease.holder == holder)
        .values(expires_at=database_now(session))
        .execution_options(synchronize_session=False)
    )
    return bool(done.rowcount)  # type: ignore[attr-defined]


def held(session: Session, name: str, holder: str, epoch: int, lock: bool = True) -> bool:
    """Whether `holder` still holds the lease at `epoch`, by the database's clock. With
    `lock`, the row stays locked to the end of the transaction, so a takeover waits for
    its commit and an expired holder can never commit after one."""
    query = select(Lease.holder, Lease.epoch, Lease.expires_at).where(Lease.name == name)
    row = session.execute(query.with_for_update() if lock else query).first()
    if row is None:
        return False
    expires: datetime = row.expires_at
    return bool(row.holder == holder and row.epoch == epoch and expires > database_now(session))


def current(session: Session, name: str) -> Lease | None:
    return session.get(Lease, name)
