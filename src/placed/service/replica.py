"""Each replica's world in memory: the engine's index and plan state at one revision, so
a claim plans one workload in O(targets) instead of planning the whole world again.

A claim (POST /v1/workloads) whose workload needs nothing but the world as it is (no
account, offering or Juju directive: those read the whole spec) forks the cached state,
places its units there, and commits them with `used = used + delta` guarded by each
target's generation. When the write transaction starts right after the cached revision
(its lock is the revision row's), nothing else can have changed, and the cache moves to
the new revision with the claim in it; otherwise the generation check decides, and the
cache is read again on the next claim. Anything the fast path cannot take returns None
and the caller takes the general path (placing.py), which plans the whole world.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Engine, exc, select, update
from sqlalchemy.orm import Session

from placed.engine import loop
from placed.engine.outcomes import Placement, PlanResult
from placed.engine.planner import Planner
from placed.engine.report import Explainer, plan_document
from placed.engine.state import PlanState
from placed.model import Spec, Workload
from placed.service import placing, problems
from placed.spec import SpecError
from placed.spec.load import load_workload
from placed.spec.schema import WorkloadSpec
from placed.store import events, revision, settings, world
from placed.store.claims import PLACED, Actor, Move
from placed.store.database import reading, writing
from placed.store.tables import (
    EventRow,
    PlacementHistory,
    Revision,
    Target,
    TargetResource,
    Unit,
    now,
)
from placed.store.tables import (
    Placement as PlacementRow,
)
from placed.store.tables import (
    Workload as WorkloadRecord,
)
from placed.store.world import Snapshot, WorkloadRow

API_DOCUMENT = "api"  # the document a workload made through the API belongs to


@dataclass
class Cached:
    revision: int
    snapshot: Snapshot
    spec: Spec
    planner: Planner
    state: PlanState  # the world as it stands: every unit in its place
    kinds: set[str]


class Stale(Exception):
    """A target changed since the cache was read."""


class ReplicaWorld:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._cached: Cached | None = None
        self.rebuilds = 0

    def _fresh(self, engine: Engine) -> Cached:
        with reading(engine) as session:
            current = revision.current(session)
            cached = self._cached
            if cached is not None and cached.revision == current:
                return cached
            changed = int(settings.get(session, world.CHANGED_SETTING, 0) or 0)
            if (
                cached is not None
                and changed <= cached.revision
                and self._claims_since(session, cached, current)
            ):
                return cached
            snapshot = world.read(session)
        spec = placing.world_spec(snapshot)
        planner = Planner(spec)
        state = planner.initial_state()
        planner.plan(state)
        kinds = {location.kind for location in spec.inventory.locations()}
        self.rebuilds += 1
        self._cached = Cached(snapshot.revision, snapshot, spec, planner, state, kinds)
        return self._cached

    def _claims_since(self, session: Session, cached: Cached, current: int) -> bool:
        """Bring the cache to `current` from the claims committed since (each a new
        workload with its units placed). False when one cannot be read that way."""
        snapshot = cached.snapshot
        since = cached.revision
        added = session.scalars(
            select(WorkloadRecord)
            .where(WorkloadRecord.revision > since)
            .order_by(WorkloadRecord.id)
        ).all()
        names = {row.id: row.name for row in added}
        models: dict[str, Workload] = {}
        for row in added:
            if row.name in snapshot.workloads:
                return False  # a change of a known workload: only the general path knows
            try:
                spec = WorkloadSpec.model_validate(row.spec)
                model = load_workload(spec, cached.spec.settings, cached.kinds)
            except (SpecError, ValueError):
                return False
            if not _simple(spec) or model.mode != "allocation":
                return False
            models[row.name] = model
        placed = session.execute(
            select(Unit.id, Unit.name, Unit.workload_id, Target.name)
            .join(PlacementRow, PlacementRow.unit_id == Unit.id)
            .join(Target, Target.id == PlacementRow.target_id)
            .where(Unit.workload_id.in_(list(names)))
            .order_by(Unit.workload_id, Unit.ordinal)
        ).all()
        targets = session.execute(
            select(Target.id, Target.name, Target.generation).where(Target.revision > since)
        ).all()
        used: dict[int, dict[str, float]] = {}
        for target_id, resource, amount in session.execute(
            select(TargetResource.target_id, TargetResource.name, TargetResource.used).where(
                TargetResource.target_id.in_([row.id for row in targets])
            )
        ):
            used.setdefault(target_id, {})[resource] = amount
        state, planner = cached.state, cached.planner
        for row in added:
            snapshot.workloads[row.name] = WorkloadRow(
                row.id, row.generation, row.document, None, "allocation"
            )
            snapshot.workload_specs[row.name] = dict(row.spec)
            planner.workloads[row.name] = models[row.name]
        for unit_id, unit, workload_id, target in placed:
            position = state.position(target)
            if position is None:
                return False
            workload = names[workload_id]
            snapshot.units[unit] = (unit_id, workload)
            snapshot.placements[unit] = target
            state.place(unit, workload, position)
            state.judging = unit
            planner.pipeline.reserve(planner.request(models[workload]), state, position)
        state.judging = None
        for target_id, name, generation in targets:
            known = snapshot.targets.get(name)
            if known is None:
                return False
            snapshot.targets[name] = dataclasses.replace(
                known, generation=generation, used=used.get(target_id, known.used)
            )
        if added:
            cached.spec = dataclasses.replace(
                cached.spec, workloads=(*cached.spec.workloads, *models.values())
            )
            planner.spec = cached.spec
        snapshot.revision = cached.revision = current
        return True

    def claim(
        self,
        engine: Engine,
        spec: WorkloadSpec,
        actor: Actor,
        report: placing.Reporter = placing.silent,
    ) -> dict[str, Any] | None:
        """The claim's answer, or None when only the general path can take it."""
        if not _simple(spec):
            return None
        started = time.perf_counter()
        with self._lock:
            cached = self._fresh(engine)
            if cached.spec.tenancy is not None or cached.spec.dedications:
                return None  # tenants and dedications read the whole spec
            if spec.name in cached.snapshot.workloads:
                raise problems.ProblemException(
                    409, "exists", f"workload {spec.name!r} exists: PUT changes it"
                )
            try:
                workload = load_workload(spec, cached.spec.settings, cached.kinds)
            except SpecError:
                return None  # the general path reports it with the whole spec
            if workload.mode != "allocation" or not set(workload.resources) <= set(
                cached.planner.index.resources
            ):
                return None
            planned = self._plan(cached, workload)
            if planned is None:
                return None
            result, state, new_spec = planned
            unplaced = result.unplaced
            if unplaced:
                raise problems.ProblemException(
                    409,
                    "unplaceable",
                    f"{len(unplaced)} of the units cannot be placed: {unplaced[0].summary}",
                )
            explainer = Explainer(new_spec, cached.planner.families)
            moves = [
                Move(workload.name, p.unit, None, p.target, explainer.reason(p), PLACED)
                for p in result.placements
            ]
            try:
                number, follows, ids, rows = self._commit(
                    engine, cached, workload, spec, moves, actor
                )
            except Stale:
                self._cached = None
                return None
            if follows:
                self._advance(cached, number, workload, spec, new_spec, state, moves, ids)
            # Else others committed first: the next refresh reads this claim with theirs.
            report(0, rows, time.perf_counter() - started, False)
            return {
                "revision": number,
                "conflicts": 0,
                "changes": placing.moves_document(moves),
                **plan_document(result),
            }

    def _plan(
        self, cached: Cached, workload: Workload
    ) -> tuple[PlanResult, PlanState, Spec] | None:
        new_spec = dataclasses.replace(cached.spec, workloads=(*cached.spec.workloads, workload))
        state = cached.state.fork()
        result = PlanResult(new_spec, cached.planner.families)
        context = loop.Context(cached.planner.judge, state, result)
        result.outcomes = loop.run(context, [workload])
        if state.created or result.events or result.dedications_created:
            return None  # what the general path writes (new targets, dedications)
        return result, state, new_spec

    def _commit(
        self,
        engine: Engine,
        cached: Cached,
        workload: Workload,
        spec: WorkloadSpec,
        moves: list[Move],
        actor: Actor,
    ) -> tuple[int, bool, dict[str, int], list[EventRow]]:
        deltas: dict[str, dict[str, float]] = {}
        for move in moves:
            assert move.destination is not None
            found = deltas.setdefault(move.destination, {})
            for name, amount in workload.resources.items():
                found[name] = found.get(name, 0.0) + amount
        with writing(engine) as session:
            number = revision.bump(session)
            follows = number - 1 == cached.revision
            ids: dict[str, int] = {}
            rows: list[EventRow] = []
            for name in sorted(deltas, key=lambda n: cached.snapshot.targets[n].id):
                row = cached.snapshot.targets[name]
                done = session.execute(
                    update(Target)
                    .where(Target.id == row.id, Target.generation == row.generation)
                    .values(generation=Target.generation + 1, revision=number)
                    .execution_options(synchronize_session=False)
                )
                if done.rowcount == 0:  # type: ignore[attr-defined]
                    raise Stale(name)
                try:
                    for resource, amount in sorted(deltas[name].items()):
                        session.execute(
                            update(TargetResource)
                            .where(
                                TargetResource.target_id == row.id,
                                TargetResource.name == resource,
                            )
                            .values(used=TargetResource.used + amount)
                            .execution_options(synchronize_session=False)
                        )
                    session.flush()
                except exc.IntegrityError:
                    raise Stale(name) from None
                ids[name] = row.id
            record = WorkloadRecord(
                name=workload.name,
                account_id=None,
                spec=spec.model_dump(mode="json", exclude_defaults=True),
                document=API_DOCUMENT,
                generation=0,
                revision=number,
            )
            session.add(record)
            try:
                session.flush()
            except exc.IntegrityError:
                raise problems.ProblemException(
                    409, "exists", f"workload {workload.name!r} exists: PUT changes it"
                ) from None
            ids[""] = record.id
            at = now()
            for move in moves:
                assert move.destination is not None
                unit = Unit(
                    name=move.unit,
                    workload_id=record.id,
                    ordinal=int(move.unit.rpartition("/")[2]),
                )
                session.add(unit)
                session.flush()
                ids[move.unit] = unit.id
                session.add(
                    PlacementRow(
                        unit_id=unit.id,
                        target_id=cached.snapshot.targets[move.destination].id,
                        placed_at=at,
                        revision=number,
                    )
                )
                event = events.append(
                    session,
                    move.kind,
                    move.unit,
                    actor_accessor=actor.accessor,
                    actor_role=actor.role,
                    target=move.destination,
                    workload=move.workload,
                    request_id=actor.request_id,
                    details={"from": None, "to": move.destination, "why": move.why},
                )
                rows.append(event)
                session.add(
                    PlacementHistory(
                        unit_name=move.unit,
                        from_target=None,
                        to_target=move.destination,
                        at=at,
                        reason=move.why[:255],
                        event_id=event.id,
                    )
                )
            final = session.scalar(select(Revision.value).where(Revision.id == 1))
        return int(final or number), follows and final == number, ids, rows

    def _advance(
        self,
        cached: Cached,
        number: int,
        workload: Workload,
        spec: WorkloadSpec,
        new_spec: Spec,
        state: PlanState,
        moves: list[Move],
        ids: dict[str, int],
    ) -> None:
        """Move the cache to `number`: the world it held, and this claim."""
        snapshot = cached.snapshot
        snapshot.revision = number
        snapshot.workloads[workload.name] = WorkloadRow(
            ids[""], 0, API_DOCUMENT, None, "allocation"
        )
        snapshot.workload_specs[workload.name] = spec.model_dump(mode="json", exclude_defaults=True)
        for move in moves:
            assert move.destination is not None
            snapshot.units[move.unit] = (ids[move.unit], workload.name)
            snapshot.placements[move.unit] = move.destination
        for name in {m.destination for m in moves if m.destination is not None}:
            row = snapshot.targets[name]
            used = dict(row.used)
            for move in moves:
                if move.destination == name:
                    for resource, amount in workload.resources.items():
                        used[resource] = used.get(resource, 0.0) + amount
            snapshot.targets[name] = dataclasses.replace(
                row, generation=row.generation + 1, used=used
            )
        cached.planner.spec = new_spec
        cached.planner.workloads[workload.name] = workload
        cached.spec = new_spec
        cached.state = state
        cached.revision = number

    def forget(self) -> None:
        with self._lock:
            self._cached = None


def _simple(spec: WorkloadSpec) -> bool:
    return not (
        spec.account
        or spec.offering
        or spec.to is not None
        or spec.juju_constraints
        or spec.new_machines
        or spec.service is not None
        or spec.services
        or spec.pattern
    )


__all__ = ["Placement", "ReplicaWorld"]
