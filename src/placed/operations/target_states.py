"""Targets taken down and brought up by an admin (POST /v1/targets/{name}/down, .../up,
/v1/targets:batch), and the re-plan any change of a target's state asks for (the
controller's heartbeat sweeps use it too): its units move as `placed simulate --down`
and `--up` say they would, in the same transaction as the change."""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Collection, Sequence
from typing import Any

from placed.engine.planner import Planner
from placed.engine.rebalance import simulate
from placed.operations import placing
from placed.operations.errors import Conflict, Invalid, NotFound, Where
from placed.operations.replica import BATCH, DOWN_OR_UP, HEARTBEAT, ReplicaWorld, Retargeting
from placed.operations.store import Store
from placed.operations.sweeps import Fence, Guard
from placed.store.claims import Actor, Extra
from placed.store.world import Snapshot, TargetRow


def replanned(snapshot: Snapshot, name: str, changed: TargetRow) -> placing.Prepared:
    """Target `name` becoming `changed` (an admin state, or liveness): when it stops
    taking work its units move as `placed simulate --down` says, when it starts again
    as `--up` says. An admin's down stays down however the heartbeats go, and a stale
    target stays down whatever the admin says, until it heartbeats again."""
    return replanned_all(snapshot, {name: changed})


def replanned_all(snapshot: Snapshot, changed: dict[str, TargetRow]) -> placing.Prepared:
    """Several targets changing at once, in one simulation (`placed simulate --down A
    --down B`): a unit leaving A never lands on B on its way."""
    after = snapshot.copy()
    after.targets.update(changed)
    planner = Planner(placing.world_spec(snapshot))
    before = snapshot.targets
    down = [n for n, row in changed.items() if before[n].takes_work and not row.takes_work]
    up = [n for n, row in changed.items() if row.takes_work and not before[n].takes_work]
    return placing.simulated(snapshot, after, simulate(planner, down, up), planner)


def rows_of(snapshot: Snapshot, names: Collection[str]) -> dict[str, TargetRow]:
    """The stored rows of the targets a change names; refused, naming the first, when
    some are not there."""
    rows = {name: snapshot.targets[name] for name in names if name in snapshot.targets}
    missing = [name for name in names if name not in rows]
    if missing:
        raise NotFound(
            f"no target {missing[0]!r}"
            + (f" (and {len(missing) - 1} more)" if len(missing) > 1 else "")
        )
    return rows


def change_state(
    engine: Store,
    name: str,
    state: str,
    reason: str,
    actor: Actor,
    report: placing.Reporter = placing.silent,
    dry_run: bool = False,
    replica: ReplicaWorld | None = None,
) -> dict[str, Any]:
    """Take a target down or bring it up, moving its units in the same transaction;
    `dry_run`: plan the same and write nothing (the console's what-if). With `replica`,
    a delta on its live world when it can be one (operations/replica.py)."""
    if replica is not None and not dry_run:
        asked = Retargeting(((name, state),), reason, DOWN_OR_UP)
        fast = replica.retarget(engine, asked, actor, report)
        if fast is not None:
            return {
                "target": name,
                "admin_state": state,
                "dry_run": False,
                "changed": bool(fast["changed"]),
                "revision": fast["revision"],
                "moves": fast["moves"],
            }

    def prepare(snapshot: Snapshot) -> placing.Prepared:
        row = snapshot.targets.get(name)
        if row is None:
            raise NotFound(f"no target {name!r}")
        prepared = replanned(snapshot, name, dataclasses.replace(row, admin_state=state))
        if row.admin_state != state:
            prepared.extra.append(
                Extra(
                    f"target.{state}",
                    name,
                    target=name,
                    details={"reason": reason, "moves": len(prepared.moves)},
                )
            )
        prepared.data["changed"] = row.admin_state != state
        return prepared

    committed = placing.transact(engine, prepare, actor, dry_run=dry_run, report=report)
    return {
        "target": name,
        "admin_state": state,
        "dry_run": dry_run,
        "changed": committed.prepared.data["changed"],
        "revision": committed.revision,
        "moves": placing.moves_document(committed.prepared.moves),
    }


def change_states(
    engine: Store,
    down: Sequence[str],
    up: Sequence[str],
    reason: str,
    actor: Actor,
    report: placing.Reporter = placing.silent,
    dry_run: bool = False,
    expected_revision: int | None = None,
    replica: ReplicaWorld | None = None,
) -> dict[str, Any]:
    """Several targets down and others up in one transaction and one simulation: the
    console's what-if of several targets, and its confirmation. With `replica`, a delta
    on its live world when it can be one and no revision is expected."""
    wanted = {name: "down" for name in down}
    for index, name in enumerate(up):
        if name in wanted:
            # Each list is valid alone: together they ask for two things at once.
            raise Conflict(
                f"{name!r} is both taken down and brought up",
                "conflicting-request",
                [Where("also in down", pointer=f"/up/{index}")],
            )
        wanted[name] = "up"
    if not wanted:
        raise Invalid("name a target to take down or bring up", where=[])
    if replica is not None and not dry_run and expected_revision is None:
        asked = Retargeting(tuple(wanted.items()), reason, BATCH)
        fast = replica.retarget(engine, asked, actor, report)
        if fast is not None:
            done = set(fast["changed"])
            return {
                "targets": [
                    {"target": name, "admin_state": state, "changed": name in done}
                    for name, state in wanted.items()
                ],
                "dry_run": False,
                "revision": fast["revision"],
                "moves": fast["moves"],
            }

    def prepare(snapshot: Snapshot) -> placing.Prepared:
        rows = rows_of(snapshot, wanted)
        prepared = replanned_all(
            snapshot,
            {name: dataclasses.replace(rows[name], admin_state=s) for name, s in wanted.items()},
        )
        changed = [name for name, state in wanted.items() if rows[name].admin_state != state]
        prepared.extra.extend(
            Extra(
                f"target.{wanted[name]}",
                name,
                target=name,
                details={"reason": reason, "moves": len(prepared.moves), "batch": True},
            )
            for name in changed
        )
        prepared.data["changed"] = changed
        return prepared

    committed = placing.transact(
        engine,
        prepare,
        actor,
        dry_run=dry_run,
        expected_revision=expected_revision,
        report=report,
    )
    changed = set(committed.prepared.data["changed"])
    return {
        "targets": [
            {"target": name, "admin_state": state, "changed": name in changed}
            for name, state in wanted.items()
        ],
        "dry_run": dry_run,
        "revision": committed.revision,
        "moves": placing.moves_document(committed.prepared.moves),
    }


class _Gone(Exception):
    """The target was deleted since the sweep read it."""


def change_liveness(
    engine: Store,
    name: str,
    liveness: str,
    reason: str,
    actor: Actor,
    report: placing.Reporter,
    replica: ReplicaWorld | None,
    fence: Fence,
    guard: Guard,
) -> None:
    """The controller's change of a target's liveness (a heartbeat late, or back), in one
    transaction with every unit it moves. With `replica`, a delta of its live world when
    it can be one, in the replica's batch, committed only while `fence` holds; else the
    general path, under `guard` (the lease, the liveness row, the fault hooks). A target
    deleted since the sweep read it changes nothing."""
    if replica is not None:
        asked = Retargeting(((name, liveness),), reason, HEARTBEAT)
        if replica.retarget(engine, asked, actor, report, fence):
            return

    def prepare(snapshot: Snapshot) -> placing.Prepared:
        row = snapshot.targets.get(name)
        if row is None:
            raise _Gone
        prepared = replanned(snapshot, name, dataclasses.replace(row, liveness=liveness))
        prepared.extra.append(
            Extra(
                f"target.{liveness}",
                name,
                target=name,
                details={"reason": reason, "cause": "heartbeat", "moves": len(prepared.moves)},
            )
        )
        return prepared

    with contextlib.suppress(_Gone):
        placing.transact(engine, prepare, actor, report=report, guard=guard)
