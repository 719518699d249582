"""POSTs' idempotency keys (service/idempotency.py): a key is taken before its request
runs, and holds the answer once there is one.

`take` is one transaction that either takes the key (a new row, `started`) or reads the
row another request took it with: the primary key (caller, key) lets one of two requests
racing with the same key take it, and the other reads the first's row. A row older than
the keys' lifetime is taken again as if it were not there.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import Engine, delete, exc, select, update

from placed.store.database import reading, writing
from placed.store.tables import IdempotencyKey, now

LIFETIME = timedelta(days=1)
STARTED, ANSWERED, UNKNOWN = "started", "answered", "unknown"


@dataclass(frozen=True, slots=True)
class Taken:
    """The row another request took the key with."""

    fingerprint: str
    created_at: datetime
    holder: str
    outcome: str
    status: int | None
    content_type: str | None
    body: bytes | None


def take(engine: Engine, caller: str, key: str, fingerprint: str, holder: str) -> Taken | None:
    """Take `key` for `caller`'s request `fingerprint`, run by process `holder`: None
    when taken now, else the row of the request that holds it."""
    moment = now()
    for _ in range(2):  # a second try only when the first lost a race to an insert
        try:
            with writing(engine) as session:
                row = session.get(IdempotencyKey, (caller, key), with_for_update=True)
                if row is not None and row.created_at > moment - LIFETIME:
                    return Taken(
                        row.fingerprint,
                        row.created_at,
                        row.holder,
                        row.outcome,
                        row.status,
                        row.content_type,
                        row.body,
                    )
                if row is not None:
                    session.delete(row)
                    session.flush()
                session.add(
                    IdempotencyKey(
                        caller=caller,
                        key=key,
                        fingerprint=fingerprint,
                        created_at=moment,
                        holder=holder,
                        outcome=STARTED,
                    )
                )
            return None
        except exc.IntegrityError:
            continue  # another request took it between the read and the insert: read it
    raise RuntimeError("an idempotency key was taken and released twice meanwhile")


def answer(
    engine: Engine, caller: str, key: str, status: int, content_type: str | None, body: bytes
) -> None:
    """Keep the request's answer, for a retry to get the same."""
    with writing(engine) as session:
        session.execute(
            update(IdempotencyKey)
            .where(IdempotencyKey.caller == caller, IdempotencyKey.key == key)
            .values(outcome=ANSWERED, status=status, content_type=content_type, body=body)
        )


def unknown(engine: Engine, caller: str, key: str) -> None:
    """The request ended without an answer that says what it did (a 5xx): a retry is
    told so, instead of running it again."""
    with writing(engine) as session:
        session.execute(
            update(IdempotencyKey)
            .where(IdempotencyKey.caller == caller, IdempotencyKey.key == key)
            .values(outcome=UNKNOWN)
        )


def release(engine: Engine, caller: str, key: str) -> None:
    """The request changed nothing and said to try again (a 409 or 429 with
    Retry-After): the key is free for the retry."""
    with writing(engine) as session:
        session.execute(
            delete(IdempotencyKey).where(IdempotencyKey.caller == caller, IdempotencyKey.key == key)
        )


def expire(engine: Engine) -> int:
    """Delete the keys past their lifetime; how many."""
    with writing(engine) as session:
        done = session.execute(
            delete(IdempotencyKey).where(IdempotencyKey.created_at <= now() - LIFETIME)
        )
        return int(done.rowcount)  # type: ignore[attr-defined]


def read(engine: Engine, caller: str, key: str) -> Taken | None:
    """The key's row as it stands (for tests and the operator)."""
    with reading(engine) as session:
        row = session.scalar(
            select(IdempotencyKey).where(IdempotencyKey.caller == caller, IdempotencyKey.key == key)
        )
        if row is None:
            return None
        return Taken(
            row.fingerprint,
            row.created_at,
            row.holder,
            row.outcome,
            row.status,
            row.content_type,
            row.body,
        )
