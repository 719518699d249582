"""Commit a planned change in one transaction: the store's half of the one path every
change takes (operations/placing.py plans it and hands it here with the plan to redo).

The plan runs on a snapshot read outside the write transaction, so replicas plan side
by side; the commit checks each row it writes against the generation the snapshot saw
and, when someone else changed it first, plans again on fresh rows (server-side retry,
with jitter). The last try plans inside the write transaction, after taking the
revision row's lock, so it cannot be overtaken: a claim is refused only when nothing
fits, never because others were faster.
"""

from __future__ import annotations

import random
import time
import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

from sqlalchemy import exc
from sqlalchemy.orm import Session

from placed.operations.errors import Conflict, Contended
from placed.operations.store import Store
from placed.store import claims, definitions, revision, settings, statistics, world
from placed.store.claims import Actor, Extra, Move
from placed.store.database import reading, writing
from placed.store.events import Recorded
from placed.store.world import Snapshot

TRIES = 10
# Tries planned on a snapshot before the last one, which plans under the lock. Under
# heavy contention most optimistic tries lose, and each costs a whole plan.
OPTIMISTIC_TRIES = 3


class Change(Protocol):
    """A planned change, as the writer reads it (operations/placing.py's `Prepared`): the
    world after it, the unit moves, what each target uses once it is done, the events it
    records itself, the targets it made (each with the workload it was made for), and
    the only workloads it may define otherwise than the world before it (None: any)."""

    @property
    def after(self) -> Snapshot: ...

    @property
    def moves(self) -> Sequence[Move]: ...

    @property
    def used(self) -> Mapping[str, Mapping[str, float]]: ...

    @property
    def extra(self) -> Sequence[Extra]: ...

    @property
    def made_for(self) -> Mapping[str, str]: ...

    @property
    def workloads(self) -> frozenset[str] | None: ...

    @property
    def waiting(self) -> int:
        """Units the world after it leaves waiting for room."""
        ...


C = TypeVar("C", bound=Change)


@dataclass
class Written(Generic[C]):
    """What a change became: `committed` False for a dry run or a change that changes
    nothing (then `revision` is the world's it was planned on, and no rows)."""

    change: C
    revision: int
    rows: list[Recorded]
    conflicts: int
    committed: bool


class Guard(Protocol):
    """Told of each step of a change's write transaction, inside it: the controller's
    fencing (operations/sweeps.py). Raising rolls the whole transaction back."""

    def opened(self, session: Session) -> None:
        """First, before anything is written."""

    def moved(self, session: Session, count: int) -> None:
        """After `count` unit moves were written."""

    def closing(self, session: Session, change: Change) -> None:
        """Last, just before the commit."""


# The change's audit events, from the world before it: those it records itself left out.
Trail = Callable[[Snapshot, C], list[Extra]]


class Follower(Protocol):
    """A world in memory kept at the store's revision (operations/replica.py), told of
    each change this process commits here, before the change is answered."""

    def committed(self, engine: Store, number: int, followable: bool) -> None:
        """`number`: the change's revision; `followable`: whether it can be read from
        its rows as a delta's (`followable`). Never raises."""


_FOLLOWERS: weakref.WeakKeyDictionary[Store, weakref.WeakSet[Follower]] = (
    weakref.WeakKeyDictionary()
)


def followed_by(engine: Store, follower: Follower) -> None:
    """Tell `follower` of every change `transact` commits on `engine` from now on (as
    long as it lives)."""
    _FOLLOWERS.setdefault(engine, weakref.WeakSet()).add(follower)


def transact(
    engine: Store,
    prepare: Callable[[Snapshot], C],
    trail: Trail[C],
    actor: Actor,
    dry_run: bool = False,
    expected_revision: int | None = None,
    guard: Guard | None = None,
) -> Written[C]:
    """Plan with `prepare` on a snapshot and commit what it says, trying again on fresh
    rows when someone else changed them first: `Contended` (nothing written) when they
    did on every try. `expected_revision`: the world's revision the caller saw, else
    `Conflict` (revision-changed)."""
    conflicts = 0
    for attempt in range(min(TRIES, OPTIMISTIC_TRIES + 1)):
        last = attempt == OPTIMISTIC_TRIES
        prepared: C | None = None
        snapshot: Snapshot | None = None
        if not last or dry_run:
            with reading(engine) as session:
                snapshot = world.read(session)
            _expected(snapshot, expected_revision)
            prepared = prepare(snapshot)
            if dry_run or _nothing(snapshot, prepared):
                return Written(prepared, snapshot.revision, [], conflicts, False)
        try:
            with writing(engine) as session:
                if guard is not None:
                    guard.opened(session)
                number = revision.bump(session)  # the lock: writers commit one at a time
                if prepared is None or snapshot is None:
                    snapshot = world.read(session)
                    _expected(snapshot, expected_revision, seen=number - 1)
                    prepared = prepare(snapshot)
                follows = followable(snapshot, prepared)
                rows = _write(session, snapshot, prepared, trail, number, actor, guard, follows)
                statistics.refresh(session.connection(), _grown(snapshot, prepared))
                final = revision.current(session)  # one change may raise it more than once
                if guard is not None:
                    guard.closing(session, prepared)
            for follower in list(_FOLLOWERS.get(engine, ())):
                follower.committed(engine, final, follows)
            return Written(prepared, final, rows, conflicts, True)
        except (definitions.StaleRow, exc.IntegrityError) as error:
            if isinstance(error, exc.IntegrityError) and last:
                raise  # under the lock nothing can have raced it: a bug, not a conflict
            # An IntegrityError on a try planned on a snapshot: another change created a
            # row of the same name (a target, a location, a workload) since.
            conflicts += 1
            # Replicas break ties alike and so collide alike: spread the next tries.
            time.sleep(random.uniform(0, 0.005 * (2 ** min(attempt, 6))))
    raise Contended(
        f"others changed the same targets {TRIES} times while this was planned; try again",
        conflicts=conflicts,
    )


def _grown(snapshot: Snapshot, change: Change) -> int:
    """About how many rows `change` made: its new targets and the units it placed new."""
    made = len(change.after.targets) - len(snapshot.targets)
    return made + sum(1 for move in change.moves if move.source is None)


def _nothing(snapshot: Snapshot, change: Change) -> bool:
    """Nothing to write: a change that changes nothing leaves the revision as it is."""
    return not change.moves and not change.extra and snapshot.defines_same(change.after)


def _expected(snapshot: Snapshot, expected: int | None, seen: int | None = None) -> None:
    current = snapshot.revision if seen is None else seen
    if expected is not None and current != expected:
        raise Conflict(
            f"the world is at revision {current}, not {expected}: something changed since "
            "that revision was seen (simulate or plan again, then apply)",
            "revision-changed",
        )


def _write(
    session: Session,
    snapshot: Snapshot,
    change: C,
    trail: Trail[C],
    number: int,
    actor: Actor,
    guard: Guard | None,
    follows: bool,
) -> list[Recorded]:
    # Replicas refresh claims, deletes and count changes committed as deltas from the
    # rows, and a whole plan's change that only moved units and changed targets' states
    # (`follows`); any other since means reading all.
    settings.put(session, world.CHANGED_SETTING, number, bump=False)
    if not follows:
        settings.put(session, world.RESHAPED_SETTING, number, bump=False)
    try:
        wrote = definitions.write(
            session, snapshot, change.after, number, change.used, change.workloads
        )
    except definitions.Refused as error:
        raise Conflict(str(error), error.kind) from None
    accounts = {name: row.account for name, row in change.after.workloads.items()}
    # The change's own objects first (a workload created, then its units placed).
    written: list[Recorded] = []
    written += claims.commit(
        session,
        snapshot,
        change.moves,
        change.used,
        actor,
        wrote.targets,
        [*trail(snapshot, change), *change.extra],
        accounts,
        guard.moved if guard is not None else None,
        rewritten=wrote.workloads,
        at_revision=number,
    )
    return written


def followable(snapshot: Snapshot, change: Change) -> bool:
    """Whether a replica can follow `change` from its rows as it follows a delta's
    (operations/replica.py, `_claims_since`): units of the world moved from one target to
    another and targets' states changed (an evacuation, a migration, a target taken down
    by the general path), nothing else of the world, and no unit left waiting. Then the
    world is not marked reshaped, and a replica's next claim reads the moves where it
    would build its world again (a second at 10,000 targets and 30,000 units)."""
    after = change.after
    if change.waiting or change.made_for:
        return False
    if any(
        move.source is None or move.destination is None or move.unit not in snapshot.units
        for move in change.moves
    ):
        return False
    if any(getattr(snapshot, key) != getattr(after, key) for key in world.DEFINING):
        return False
    if snapshot.workloads != after.workloads or snapshot.workload_specs != after.workload_specs:
        return False
    targets = snapshot.targets
    return targets.keys() == after.targets.keys() and all(
        after.targets[name].capacity == row.capacity for name, row in targets.items()
    )
