"""Settings: a key and a JSON value (e.g. implicit dedication)."""

from __future__ import annotations

from typing import Any

from sqlalchemy.orm import Session

from placed.spec.schema import SettingsSpec
from placed.store import revision
from placed.store.tables import Setting


def get(session: Session, key: str, default: Any = None) -> Any:
    row = session.get(Setting, key)
    return row.value["value"] if row is not None else default


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
