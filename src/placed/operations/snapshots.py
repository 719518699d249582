"""The stored world as one snapshot of its rows: what a read that judges the world as a
whole (a dedication listing by the CloudStack rules, a what-if simulation) starts from."""

from __future__ import annotations

from placed.operations.store import Store
from placed.store import world
from placed.store.database import reading


def read(engine: Store) -> world.Snapshot:
    """The world as the rows have it, read in one transaction."""
    with reading(engine) as session:
        return world.read(session)
