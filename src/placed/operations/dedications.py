"""What the dedication and offering routes read: the stored world the CloudStack rules
judge a listing in, and the service offerings. (Their changes are planned and committed
through service/placing.py's transact, and move here with it.)"""

from __future__ import annotations

from placed.model.dedications import Offering
from placed.operations.store import Store
from placed.store import offerings, world
from placed.store.database import reading


def stored_world(engine: Store) -> world.Snapshot:
    """The world as the rows have it, read in one transaction."""
    with reading(engine) as session:
        return world.read(session)


def listed_offerings(engine: Store) -> list[Offering]:
    """Every service offering, by name."""
    with reading(engine) as session:
        return offerings.listed(session)
