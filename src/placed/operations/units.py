"""What GET /v1/units/{unit} reads: the unit's moves, oldest first, with the world they
are explained in (the store's whole world, or the replica's when it is current)."""

from __future__ import annotations

from typing import Any

from placed.operations.store import Store
from placed.store import placements, revision, world
from placed.store.database import reading


def history_at(engine: Store, unit: str, at: int, most: int) -> list[dict[str, Any]] | None:
    """The unit's first `most` moves, read in one transaction with the store's revision;
    None when that is no longer `at` (the world explained would be an older one)."""
    with reading(engine) as session:
        if revision.current(session) != at:
            return None
        return placements.history_page(session, 0, most, unit)


def world_and_history(
    engine: Store, unit: str, most: int
) -> tuple[world.Snapshot, list[dict[str, Any]]]:
    """The whole world and the unit's first `most` moves, read in one transaction."""
    with reading(engine) as session:
        return world.read(session), placements.history_page(session, 0, most, unit)
