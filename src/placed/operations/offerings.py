"""The service offerings (CloudStack's service offerings: a VM's size and whether it asks
for dedicated resources). Their changes are planned and committed through
operations/placing.py's transact, and move here with it."""

from __future__ import annotations

from placed.model.dedications import Offering
from placed.operations.store import Store
from placed.store import offerings
from placed.store.database import reading


def listed(engine: Store) -> list[Offering]:
    """Every service offering, by name."""
    with reading(engine) as session:
        return offerings.listed(session)
