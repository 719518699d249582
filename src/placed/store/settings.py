"""Settings: a key and a JSON value (e.g. implicit dedication).

Two kinds share the table. The world's (heartbeats, the disruption guard, implicit
dedication) are a row per key, the root-admin's. A document's (`default_mode`) govern only
the workloads that document defines: one row per applied document, keyed `d:NAME`, its
value the document's settings as an object. No world key starts with `d:`, and a document
name is at most 253 characters, so a document's key neither meets a world key nor outgrows
the 255 of the column.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from placed.spec.schema import SettingsSpec
from placed.store import revision
from placed.store.tables import Setting

DOCUMENT_PREFIX = "d:"
# Before settings were documents', `default_mode` was one world row that every workload
# was read with. A database written then keeps it, and it stays the default of each
# document that has no row of its own (those applied before the change, and the API's
# claims): their workloads are read as they were planned. Every document applied since
# has its row (empty when it names no setting), so the old row never reaches it. A rule
# at read time rather than a data migration: which document set the old row is not
# recorded, so a migration could only copy it into every document's row, which is what
# this rule reads, and the database needs no upgrade step for it.
LEGACY_DEFAULT_MODE = "default_mode"


def get(session: Session, key: str, default: Any = None) -> Any:
    row = session.get(Setting, key)
    return row.value["value"] if row is not None else default


def values(session: Session, keys: Sequence[str]) -> dict[str, Any]:
    """The values of those of `keys` that are set, in one read."""
    rows = session.execute(select(Setting.key, Setting.value).where(Setting.key.in_(keys)))
    return {key: value["value"] for key, value in rows}


def put(session: Session, key: str, value: Any, bump: bool = True) -> None:
    """`bump=False`: the store's own bookkeeping within a change that has its revision
    already (a setting a user sets is a change of its own, with a revision)."""
    # Wrapped in an object, so a bare string or number is a JSON document on every backend.
    row = session.get(Setting, key)
    if row is None:
        session.add(Setting(key=key, value={"value": value}))
    else:
        row.value = {"value": value}
    if bump:
        revision.bump(session)
    session.flush()


def heartbeats(session: Session) -> tuple[float, float]:
    """(interval, timeout) of heartbeats in seconds, as applied in a spec's settings."""
    fields = SettingsSpec.model_fields
    interval = get(session, "heartbeat_interval_s", fields["heartbeat_interval_s"].default)
    timeout = get(session, "heartbeat_timeout_s", fields["heartbeat_timeout_s"].default)
    return float(interval), float(timeout)


def disruption_guard_min_targets(session: Session) -> int:
    """How many targets must heartbeat before the controller's guard may hold a sweep."""
    default = SettingsSpec.model_fields["disruption_guard_min_targets"].default
    return int(get(session, "disruption_guard_min_targets", default))


def document_key(name: str) -> str:
    return DOCUMENT_PREFIX + name


def documents(session: Session) -> dict[str, dict[str, Any]]:
    """Each applied document's settings, by document name."""
    rows = session.execute(
        select(Setting.key, Setting.value).where(Setting.key.startswith(DOCUMENT_PREFIX))
    )
    return {key[len(DOCUMENT_PREFIX) :]: dict(value["value"]) for key, value in rows}


def put_document(session: Session, name: str, values: Mapping[str, Any] | None) -> None:
    """Store document `name`'s settings (None: it has none any more). No revision bump:
    a document's settings change within the apply that carries them."""
    if values is None:
        session.execute(delete(Setting).where(Setting.key == document_key(name)))
        session.flush()
        return
    put(session, document_key(name), dict(values), bump=False)


def default_mode(
    documents: Mapping[str, Mapping[str, Any]], legacy: str | None, document: str | None
) -> str:
    """The mode of document `document`'s workloads that name none."""
    own = documents.get(document) if document is not None else None
    if own is None:
        return legacy or "allocation"
    return str(own.get("default_mode") or "allocation")
