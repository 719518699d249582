"""Each replica's world in memory: the engine's index and plan state at one revision, so
a claim plans one workload in O(targets) instead of planning the whole world again.

A claim (POST /v1/workloads) of a new allocation workload forks the cached state, places
its units there, and commits them with `used = used + delta` guarded by each target's
generation. An account and an offering are read against the cached world's tenancy and
offerings, and its dedications are in the cached index and state, as in a whole plan;
near and avoid read the named workloads' units in the state, and a Juju directive is
read against the workloads it names (operations/coupling.py says which claims qualify, and
which later changes of the workloads they name stay deltas). When the write transaction
starts right after the cached revision (its lock is the revision row's), nothing else
can have changed, and the cache moves to the new revision with the claim in it;
otherwise (another replica committed first) the batch is decided again: on PostgreSQL in a
transaction that takes the revision's lock before the cache is brought up to date, and so
cannot be overtaken; on SQLite on fresh rows. A plan that would write more than
placements (an implicit dedication, a dedication's event, a new target) and anything
else the fast path cannot take returns None, and the caller takes the general path
(placing.py), which plans the whole world.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import dataclasses
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar, cast

from placed.collector import set_aside, without_cycle_collection
from placed.engine import fit, loop, rebalance
from placed.engine.cloud import Cloud
from placed.engine.outcomes import DedicationCreated, Outcome, Placement, PlanResult
from placed.engine.pipeline import CompiledRequest
from placed.engine.planner import Planner
from placed.engine.report import Explainer, plan_document
from placed.engine.state import PlanState
from placed.model import Running, Spec, Workload
from placed.model.dedications import DedicationError, Owner, Topology
from placed.model.tenancy import ROOT_ADMIN
from placed.model.workload import Avoid, Mode, Near
from placed.operations import (
    audit,
    change_scope,
    cloudstack,
    live_apply,
    live_offerings,
    live_settings,
    placing,
    rededication,
    transactions,
)
from placed.operations.batch_commits import CommitProcess
from placed.operations.change_scope import CHANGED, CREATED, DELETED, Touched
from placed.operations.coupling import (
    READS_OTHERS,
    Coupling,
    claimable,
    names_in,
    names_others,
    reads_others,
)
from placed.operations.errors import Conflict, OperationError
from placed.operations.live_apply import Applying, Difference
from placed.operations.live_offerings import Offered
from placed.operations.live_settings import Reset, Resetting
from placed.operations.rededication import Rededicated, Rededicating
from placed.operations.store import Store, Transaction
from placed.policy.affinity import mirror_avoids
from placed.policy.dedication import IMPLICIT_EVENT, DedicationState, Tenant, rededicate
from placed.policy.directives import directed_of
from placed.spec import SpecError
from placed.spec.load import load_directed, load_workload
from placed.spec.schema import WorkloadSpec
from placed.store import batch, events, revision, settings, world
from placed.store.batch import Behind, Stale
from placed.store.claimed import Claimed, PlacedUnit
from placed.store.claimed import since as claimed_since
from placed.store.claims import MOVED, PLACED, REMOVED, Actor, Move, next_ordinals
from placed.store.database import reading
from placed.store.world import Snapshot, TargetRow, WorkloadRow

API_DOCUMENT = "api"  # the document a workload made through the API belongs to
# The thread that serves the requests' claims ends after this long without one (a new
# claim starts another).
IDLE_SECONDS = 5.0
# How often a batch is judged again when the world it was decided on moved before it was
# answered, before it goes to the general path (which plans under the revision's lock at
# last); on PostgreSQL a batch whose commit another replica's came before is decided
# under the revision's lock at once.
TRIES = 3
Answer = TypeVar("Answer")


@dataclass
class Cached:
    revision: int
    snapshot: Snapshot
    spec: Spec
    planner: Planner
    state: PlanState  # the world as it stands: every unit in its place
    kinds: set[str]
    explainer: Explainer  # its workloads grow with the claims the cache takes
    # Units waiting for room: a change other than a claim is a delta only when none does
    # (a freed place would be given to one). A tenant's VM is no different, whatever its
    # offering: one that holds its host by implicit dedication is not releasable
    # (policy/dedication.py), and a change that would release it goes to the whole plan.
    pending: int = 0
    # No running unit misfits its place (fit.collector): a change's answer then lists no
    # `incompatible`, and a delta need not find which of them the change leaves.
    fitting: bool = True
    # How the workloads read each other: what a change of one can be a delta for. A claim
    # that reads others changes it in its decision (`Decided.coupling`) and here once
    # stored.
    coupling: Coupling = field(default_factory=Coupling)
    # The locations' tree as the dedication rules read it, made with a world that has a
    # tenancy (a change of dedications keeps it).
    topology: Topology | None = None
    # The first free unit number of each every-mode workload (`Coupling.every`): a
    # target coming gets a unit of each, numbered from here.
    ordinals: dict[str, int] = field(default_factory=dict)

    # Each target's units, kept by every placement the cache takes, so that a drain reads
    # its targets' units rather than every placement (30,000 of them cost 5 ms a drain).
    by_target: dict[str, set[str]] = field(init=False)

    def __post_init__(self) -> None:
        self.by_target = {}
        for unit, on in self.snapshot.placements.items():
            self.by_target.setdefault(on, set()).add(unit)

    def dedication_topology(self) -> Topology:
        if self.topology is None:
            self.topology = Topology.of_roots(self.spec.inventory.roots)
        return self.topology

    def units_on(self, target: str) -> set[str]:
        return self.by_target.get(target, set())

    def put(self, unit: str, target: str) -> None:
        """`unit` is on `target` now (its row says so)."""
        placements = self.snapshot.placements
        before = placements.get(unit)
        placements[unit] = target
        if before != target:
            if before is not None:
                self.by_target[before].discard(unit)
            self.by_target.setdefault(target, set()).add(unit)

    def lift(self, unit: str) -> None:
        """`unit` is on no target now (deleted, or its workload is)."""
        before = self.snapshot.placements.pop(unit, None)
        if before is not None:
            self.by_target[before].discard(unit)

    def take(
        self,
        unit: str,
        unit_id: int,
        workload: str,
        target: str,
        position: int,
        request: CompiledRequest,
    ) -> None:
        """A unit the rows hold, new to the cache, placed in its state as the change
        that wrote it placed it: its row, its place, and its share taken there."""
        self.snapshot.units[unit] = (unit_id, workload)
        self.put(unit, target)
        state = self.state
        state.place(unit, workload, position)
        state.judging = unit
        self.planner.pipeline.reserve(request, state, position)
        state.judging = None


@dataclass(frozen=True, slots=True)
class Removing:
    """A DELETE's ask: workload `name`, at `generation` when the caller gave one."""

    name: str
    generation: int | None


@dataclass(frozen=True, slots=True)
class Rescaling:
    """A PUT's ask: the workload's new spec, at the generation the caller read."""

    spec: WorkloadSpec
    generation: int


@dataclass(frozen=True, slots=True)
class Retargeting:
    """A change of targets' states: each named target's new admin state (down, up, or
    maintenance for a drain), or its liveness (`HEARTBEAT`: the controller's), in the
    order asked, and why. `operation` names who asks (`DOWN_OR_UP`, `BATCH`, `DRAIN`,
    `HEARTBEAT`, `EVACUATE`): its events and its moves' reasons say what the general
    path's do."""

    states: tuple[tuple[str, str], ...]
    reason: str
    operation: str


@dataclass(frozen=True, slots=True)
class Migrating:
    """A VM asked to move (`unit` to host `target`), as CloudStack's
    migrateVirtualMachine asks it (operations/migrate.py)."""

    unit: str
    target: str


DOWN_OR_UP, BATCH, DRAIN = "state", "batch", "drain"
# A host put into maintenance with its VMs placed again by CloudStack's rules
# (operations/evacuate.py); its other units move as a target going down moves them.
EVACUATE = "evacuate"
# The controller's judgement of heartbeats: each named target's liveness (up or down)
# rather than its admin state, fenced by the lease (`Fence`).
HEARTBEAT = "heartbeat"


class Fence(Protocol):
    """A lease's fence around a batch's transaction (operations/sweeps.Fence): checked
    as it opens and before it commits; either raises to write nothing."""

    def opened(self, connection: Any) -> None: ...

    def closing(self, connection: Any) -> None: ...


@dataclass
class Ticket:
    """One change waiting for its batch, a claim (`spec`), a deletion (`removing`), a
    spec update (`rescaling`), targets' new states (`retargeting`), a dedication's
    change (`rededicating`) or a setting's (`resetting`): what it asks, and
    once served, its answer (None: the general path takes it) or the problem to raise."""

    spec: WorkloadSpec | None
    actor: Actor
    report: placing.Reporter
    started: float
    removing: Removing | None = None
    rescaling: Rescaling | None = None
    retargeting: Retargeting | None = None
    rededicating: Rededicating | None = None
    resetting: Resetting | None = None
    applying: Applying | None = None
    offering: Offered | None = None  # an offering made
    migrating: Migrating | None = None
    # The controller's change: committed only while it holds the lease, alone in its
    # batch (a fenced leader's error is its own).
    fence: Fence | None = None
    done: bool = False
    answer: dict[str, Any] | None = None
    error: BaseException | None = None
    # A request's claim: its event loop and the future its handler awaits.
    waiter: tuple[asyncio.AbstractEventLoop, asyncio.Future[None]] | None = None
    # A caller's thread waiting for the answer (`ReplicaWorld._served_now`).
    finished: threading.Event | None = None

    def finish(
        self, answer: dict[str, Any] | None = None, error: BaseException | None = None
    ) -> None:
        self.answer, self.error, self.done = answer, error, True
        if self.finished is not None:
            self.finished.set()
        if self.waiter is not None:
            running, future = self.waiter
            # A closed loop (RuntimeError) has nobody waiting for the answer any more.
            with contextlib.suppress(RuntimeError):
                running.call_soon_threadsafe(_resolve, future)


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


@dataclass
class Accepted:
    """A claim of the batch placed in full, to be committed."""

    ticket: Ticket
    spec: WorkloadSpec
    workload: Workload
    result: PlanResult
    moves: list[Move]
    stored_spec: dict[str, Any]  # the workload's row (its spec, defaults left out)
    # Its plan in words, made as it is decided when the claim dedicates a host: the
    # world's targets carry that dedication once stored, and the answer explains the
    # placement on the world it was made on, as the general path's plan does.
    plan: dict[str, Any] | None = None
    home: str = API_DOCUMENT  # the document it belongs to


@dataclass
class Removed:
    """A deletion of the batch, to be committed: the workload's row and model as the
    cache holds them, and its units' moves (each off its target)."""

    ticket: Ticket
    row: WorkloadRow
    workload: Workload
    moves: list[Move]
    # Hosts whose implicit dedication its last VM there took with it, and their owner.
    released: list[tuple[str, Owner]] = field(default_factory=list)


@dataclass
class Rescaled:
    """A change of a workload's count in the batch, to be committed: its row before,
    its new spec and model, and its units' moves (the new ones placed, or those past
    the count removed)."""

    ticket: Ticket
    row: WorkloadRow
    stored_spec: dict[str, Any]
    workload: Workload
    result: PlanResult
    moves: list[Move]
    # Hosts whose implicit dedication a count cut ends (its account's last VMs there
    # gone), and their owner, as a deletion's.
    released: list[tuple[str, Owner]] = field(default_factory=list)
    # Its plan's document when its new VMs took hosts by implicit dedication: made on the
    # world it was decided on, as a claim's (the hosts are not dedicated there yet).
    plan: dict[str, Any] | None = None


@dataclass
class Retargeted:
    """Targets' new states in the batch, to be committed: each named target's row after
    the change, those whose admin state changes, and the units that move off the ones
    that stop taking work, by workload (whose asks they carry)."""

    ticket: Ticket
    rows: dict[str, TargetRow]
    changed: list[str]
    moved: list[tuple[Workload, list[Move]]]
    numbers: dict[str, int] = field(default_factory=dict)  # each new unit's ordinal
    # Hosts whose implicit dedication ends as their account's last VMs move off, and
    # their owner; hosts the moved VMs take by implicit dedication.
    released: list[tuple[str, Owner]] = field(default_factory=list)
    made: list[DedicationCreated] = field(default_factory=list)

    @property
    def moves(self) -> list[Move]:
        return [move for _, moves in self.moved for move in moves]

    def writes(self) -> bool:
        return bool(self.changed or self.moved)


@dataclass
class Applied:
    """Documents applied as a delta: their difference from what is stored, and the
    claims, deletes and count changes of the batch it is made of."""

    ticket: Ticket
    difference: Difference
    prune: bool
    accepted: list[Accepted]
    removed: list[Removed]
    rescaled: list[Rescaled]
    # Nodes added to the inventory, as the world takes them in once stored.
    grown: live_apply.Grown | None = None

    @property
    def moves(self) -> list[Move]:
        return [
            *(m for claim in self.accepted for m in claim.moves),
            *(m for rescale in self.rescaled for m in rescale.moves),
            *(m for removal in self.removed for m in removal.moves),
        ]


@dataclass
class Decided:
    """A batch as the cached world judges it, before anything is answered."""

    explainer: Explainer
    state: PlanState  # the world with every accepted claim in it
    spec: Spec  # the world's, without the accepted claims (the cache grows it once stored)
    base: PlanState | None = None  # the world it was decided on (`state` before any claim)
    accepted: list[Accepted] = field(default_factory=list)
    refused: list[tuple[Ticket, OperationError]] = field(default_factory=list)
    general: list[Ticket] = field(default_factory=list)
    # The names accepted here and in every decision this one was made on: taken, though
    # not stored yet.
    names: set[str] = field(default_factory=set)
    removed: list[Removed] = field(default_factory=list)
    rescaled: list[Rescaled] = field(default_factory=list)
    # The names deleted or changed here and in every decision this one was made on: a
    # claim of one of them, or a second change, waits for the rows (the general path).
    gone: set[str] = field(default_factory=set)
    retargeted: list[Retargeted] = field(default_factory=list)
    # The targets whose state changes here and in every decision this one was made on:
    # a second change of one waits for the rows (the general path).
    targets: set[str] = field(default_factory=set)
    # A dedication's change ends the decision: the cached world's targets carry the new
    # dedication (what explanations read) only once it is stored, so what comes after
    # it is judged on that world, in the next batch (or on the general path).
    rededicated: list[tuple[Ticket, Rededicated]] = field(default_factory=list)
    # A setting's change ends it too: the world's settings and every tenant's request
    # change once it is stored.
    reset: list[tuple[Ticket, Reset]] = field(default_factory=list)
    # Documents applied: their changes are in the lists above too; an apply that changes
    # something ends the decision (its answer is the documents' as a whole).
    applied: list[Applied] = field(default_factory=list)
    # How the workloads read each other once this decision's claims are in the world.
    coupling: Coupling = field(default_factory=Coupling)
    # An offering made ends it too: the world's offerings change once it is stored.
    offered: list[tuple[Ticket, Offered]] = field(default_factory=list)

    @property
    def closed(self) -> bool:
        """Whether what comes after this decision waits for the next batch (or the
        general path): a change of the rules themselves is in it."""
        return bool(
            self.rededicated
            or any(reset.changed for _, reset in self.reset)
            or any(change.ticket.fence is not None for change in self.retargeted)
            or any(change.numbers or change.released or change.made for change in self.retargeted)
            or any(claim.result.dedications_created for claim in self.accepted)
            or any(rescale.result.dedications_created for rescale in self.rescaled)
            or any(removal.released for removal in self.removed)
            or any(rescale.released for rescale in self.rescaled)
            or any(not applied.difference.empty for applied in self.applied)
            or self.offered
        )

    @property
    def empty(self) -> bool:
        return not (
            self.accepted
            or self.removed
            or self.rescaled
            or self.retargeted
            or self.rededicated
            or self.reset
            or self.applied
            or self.offered
        )

    @property
    def fence(self) -> Fence | None:
        return next((c.ticket.fence for c in self.retargeted if c.ticket.fence), None)

    def followed_by(self, later: Decided) -> Decided:
        """This decision and `later`, made on the world this one leaves, as one."""
        return Decided(
            self.explainer,
            later.state,
            later.spec,
            self.base,
            self.accepted + later.accepted,
            self.refused + later.refused,
            self.general + later.general,
            later.names,
            self.removed + later.removed,
            self.rescaled + later.rescaled,
            later.gone,
            self.retargeted + later.retargeted,
            later.targets,
            self.rededicated + later.rededicated,
            self.reset + later.reset,
            self.applied + later.applied,
            later.coupling,
            self.offered + later.offered,
        )

    def writes(self) -> bool:
        return bool(
            self.accepted
            or self.removed
            or self.rescaled
            or any(change.writes() for change in self.retargeted)
            or self.rededicated
            or any(reset.changed for _, reset in self.reset)
            or any(applied.grown is not None for applied in self.applied)
            or self.offered
        )

    def keep_own_names(self) -> None:
        """`names`, `gone` and `targets` of this decision's own changes alone: the one it
        was made on is stored (else the sets would grow with every batch of an unbroken
        chain, and a stored workload would read as one not stored yet)."""
        self.names = {claim.workload.name for claim in self.accepted}
        self.gone = {r.workload.name for r in self.removed} | {
            r.workload.name for r in self.rescaled
        }
        self.targets = {name for change in self.retargeted for name in change.rows}

    def in_scope(
        self, ticket: Ticket, world: Snapshot, name: str, how: str, account: str | None
    ) -> bool:
        """Whether the ticket's change of workload `name` is in its caller's scope: the
        one object it makes, deletes or changes (`allows`)."""
        return self.allows(ticket, world, [Touched("workload", name, how, (account,))])

    def allows(self, ticket: Ticket, world: Snapshot, touched: list[Touched]) -> bool:
        """Whether the ticket's change of `touched` is in its caller's scope: the same
        rule as every other change's (operations/change_scope.py). Refused here when it
        is not."""
        try:
            change_scope.check_items(ticket.actor, world, touched)
        except OperationError as refusal:
            self.refused.append((ticket, refusal))
            return False
        return True

    def refuse(self, ticket: Ticket, kind: str, detail: str) -> None:
        self.refused.append((ticket, Conflict(detail, kind)))

    def finish(self, number: int, rows: dict[str, list[events.Written]]) -> None:
        for ticket in self.general:
            ticket.finish()
        for ticket, refusal in self.refused:
            ticket.finish(error=refusal)
        for claim in self.accepted:
            ticket = claim.ticket
            ticket.report(0, rows[claim.workload.name], time.perf_counter() - ticket.started, False)
            ticket.finish(
                answer={
                    "revision": number,
                    "conflicts": 0,
                    "changes": placing.moves_document(claim.moves),
                    "incompatible": [],  # a new workload leaves every running unit fitting
                    **(claim.plan or plan_document(claim.result, self.explainer)),
                }
            )
        for removal in self.removed:
            ticket = removal.ticket
            name = removal.workload.name
            ticket.report(0, rows.get(name, []), time.perf_counter() - ticket.started, False)
            ticket.finish(
                answer={"revision": number, "changes": placing.moves_document(removal.moves)}
            )
        for rescale in self.rescaled:
            ticket = rescale.ticket
            name = rescale.workload.name
            ticket.report(0, rows.get(name, []), time.perf_counter() - ticket.started, False)
            ticket.finish(
                answer={
                    "revision": number,
                    "conflicts": 0,
                    "changes": placing.moves_document(rescale.moves),
                    # `fitting`: no running unit misfits, and a count's change makes none.
                    "incompatible": [],
                    **(rescale.plan or plan_document(rescale.result, self.explainer)),
                }
            )
        for change in self.retargeted:
            ticket = change.ticket
            subjects = {
                *change.rows,
                *(move.unit for move in change.moves),
                *(host for host, _ in change.released),
                *(made.resource for made in change.made),
            }
            # In the order they were committed (each workload's are apart in `rows`).
            recorded = sorted(
                (
                    event
                    for key in {"", *(workload.name for workload, _ in change.moved)}
                    for event in rows.get(key, [])
                    if event.subject in subjects
                ),
                key=lambda event: event.id,
            )
            ticket.report(0, recorded, time.perf_counter() - ticket.started, False)
            ticket.finish(
                answer={
                    "revision": number,
                    "changed": list(change.changed),
                    "moves": placing.moves_document(change.moves),
                }
            )
        for ticket, rededicated in self.rededicated:
            subjects = {event.subject for event in rededicated.events}
            recorded = [event for event in rows.get("", []) if event.subject in subjects]
            ticket.report(0, recorded, time.perf_counter() - ticket.started, False)
            ticket.finish(answer={**rededicated.answer(), "revision": number})
        for applied in self.applied:
            ticket = applied.ticket
            results = [c.result for c in applied.accepted] + [r.result for r in applied.rescaled]
            names = {move.workload for move in applied.moves}
            recorded = sorted(
                (event for key in ("", *names) for event in rows.get(key, [])),
                key=lambda event: event.id,
            )
            ticket.report(0, recorded, time.perf_counter() - ticket.started, False)
            result = PlanResult(self.spec, self.explainer.families)
            result.outcomes = [outcome for found in results for outcome in found.outcomes]
            ticket.finish(
                answer={
                    "revision": number,
                    "dry_run": False,
                    "documents": applied.difference.titles,
                    "changes": placing.moves_document(applied.moves),
                    "incompatible": [],
                    "conflicts": 0,
                    **plan_document(result, self.explainer),
                }
            )
        for ticket, reset in self.reset:
            recorded = [event for event in rows.get("", []) if event.kind == "setting.changed"]
            ticket.report(0, recorded, time.perf_counter() - ticket.started, False)
            ticket.finish(answer=reset.answer(number))
        for ticket, offered in self.offered:
            recorded = [
                event
                for event in rows.get("", [])
                if event.kind == live_offerings.CREATED and event.subject == offered.name
            ]
            ticket.report(0, recorded, time.perf_counter() - ticket.started, False)
            ticket.finish(answer=offered.answer(number))


@dataclass
class Answers:
    """A committed batch's answers, to be sent once (`send`)."""

    decided: Decided | None = None
    number: int = 0
    rows: dict[str, list[events.Written]] = field(default_factory=dict)

    def send(self) -> None:
        decided, self.decided = self.decided, None
        if decided is not None:
            decided.finish(self.number, self.rows)


@dataclass
class Speculated:
    """A batch decided while the one before it committed, on the world that one leaves."""

    decided: Decided
    cached: Cached
    base: PlanState  # the state the batch before leaves, which the cache must hold
    revision: int = -1  # the revision the batch before made

    def holds(self, cached: Cached) -> bool:
        return (
            cached is self.cached
            and cached.state is self.base
            and cached.revision == self.revision
            and self.decided.base is self.base
        )


# The revisions of the last change of any kind, of the last that reshaped the world, and
# of the last of its rules (store/world.py): what a cache is brought up to date by.
MARKS = (world.CHANGED_SETTING, world.RESHAPED_SETTING, world.RULES_SETTING)


class ReplicaWorld:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._waiting_lock = threading.Lock()
        self._waiting: list[Ticket] = []
        # Rung when a request's claim waits; the serving thread waits on it.
        self._arrived = threading.Condition(self._waiting_lock)
        self._server: threading.Thread | None = None
        self._cached: Cached | None = None
        self.rebuilds = 0
        # Whether a decision sent a change to the general path since the cache was read.
        self._general_since = False
        # Commits run here, so the claims that arrive meanwhile are decided while a
        # batch is in flight (`_overlapped`).
        self._committer: concurrent.futures.ThreadPoolExecutor | None = None
        # Claims taken from the waiting ones while a batch commits: put back if it fails.
        self._taken: list[Ticket] = []
        # A served app's process for the commits (operations/batch_commits.py); None: in
        # this one.
        self.commit_process: CommitProcess | None = None

    def _fresh(self, engine: Store) -> Cached:
        # Building the world makes millions of objects that live until the next build:
        # the cycle collector would walk them all, again and again, while they are made.
        built = self.rebuilds
        with without_cycle_collection():
            cached = self._brought_up_to_date(engine)
        if self.rebuilds != built:
            set_aside()  # the new world, out of the collector's sight until the next
        return cached

    def _followed(self, session: Transaction) -> Cached | None:
        """The cache brought to the store's revision from the rows written since, as
        the deltas and whole plans that wrote them changed it; None when they cannot be
        read that way (then the cache may be part-read: only a whole read follows)."""
        current = revision.current(session)
        cached = self._cached
        if cached is None or cached.revision == current:
            return cached
        marks = settings.values(session, MARKS)
        changed, reshaped, ruled = (int(marks.get(key) or 0) for key in MARKS)
        if reshaped <= cached.revision and self._claims_since(
            session, cached, current, changed > cached.revision, ruled, cached.revision
        ):
            return cached
        return None

    def _brought_up_to_date(self, engine: Store) -> Cached:
        with reading(engine) as session:
            followed = self._followed(session)
            if followed is not None:
                return followed
            snapshot = world.read(session)
            every_mode = {n for n, row in snapshot.workloads.items() if row.mode == "every"}
            ordinals = next_ordinals(session, every_mode) if every_mode else {}
        spec = placing.world_spec(snapshot)
        planner = Planner(spec)
        misfits: list[fit.Misfit] = []
        state = planner.initial_state(landing=fit.collector(planner, misfits))
        planned = planner.plan(state)
        kinds = {location.kind for location in spec.inventory.locations()}
        self.rebuilds += 1
        explainer = Explainer(spec, planner.families)
        explainer.workloads = planner.workloads
        coupling = Coupling.of(
            spec, snapshot.workload_specs, (row.mode for row in snapshot.workloads.values())
        )
        self._cached = Cached(
            snapshot.revision,
            snapshot,
            spec,
            planner,
            state,
            kinds,
            explainer,
            len(planned.unplaced),
            not misfits,
            coupling,
            ordinals=ordinals,
        )
        if spec.tenancy is not None:
            # Made with the world (10 ms at 10,000 targets) rather than by the first
            # dedication's change, whose answer would wait for it.
            self._cached.dedication_topology()
        return self._cached

    def _claims_since(
        self,
        session: Transaction,
        cached: Cached,
        current: int,
        resized: bool = False,
        ruled: int = 0,
        since: int = 0,
    ) -> bool:
        """Bring the cache to `current` from the claims committed since (each a new
        workload with its units placed), and with `resized` the deletes and count changes
        committed as deltas since (`_resized`), and the rules changed since (`ruled`: the
        revision of their last change, after `since`): dedications and the world's
        settings (`_rules_from_rows`). False when one cannot be read that way."""
        snapshot = cached.snapshot
        rules = resized and ruled > since
        every = [
            snapshot.workloads[name].id
            for name in (cached.coupling.every if resized else ())
            if name in snapshot.workloads
        ]
        claimed = claimed_since(
            session, cached.revision, resized, rules, every, held=snapshot.workloads
        )
        # Offerings first: a workload written since may name one made since.
        if rules and not self._offerings_from_rows(cached, claimed, ruled):
            return False
        rewritten: set[str] = set()
        if resized:
            done = self._resized(cached, claimed)
            if done is None:
                return False
            rewritten = done
        names = {row.id: row.name for row in claimed.workloads}
        models: dict[str, Workload] = {}
        for row in claimed.workloads:
            if row.name in rewritten:
                continue
            if row.name in snapshot.workloads:
                return False  # a change of a known workload: only the general path knows
            try:
                spec = WorkloadSpec.model_validate(row.spec)
                model = self._load(cached, spec, row.document)
            except (SpecError, ValueError):
                return False
            if not claimable(row.spec) or model.mode != "allocation":
                return False
            models[row.name] = model
        state, planner = cached.state, cached.planner
        for row in claimed.workloads:
            if row.name in rewritten:
                continue
            snapshot.workloads[row.name] = WorkloadRow(
                row.id, row.generation, row.document, row.account, "allocation"
            )
            snapshot.workload_specs[row.name] = dict(row.spec)
            planner.workloads[row.name] = models[row.name]
        for placed in claimed.units:
            workload = names[placed.workload_id]
            if workload in rewritten:
                continue
            position = state.position(placed.target)
            if position is None:
                return False
            request = planner.request(models[workload])
            cached.take(placed.name, placed.id, workload, placed.target, position, request)
        for target in claimed.targets:
            known = snapshot.targets.get(target.name)
            if known is None:
                return False
            snapshot.targets[target.name] = dataclasses.replace(
                known,
                generation=target.generation,
                used=target.used if target.used is not None else known.used,
            )
        mirrored: dict[str, Workload] = {}
        for row in claimed.workloads:
            if row.name not in rewritten and reads_others(row.spec):
                cached.coupling = cached.coupling.with_reader(row.name, dict(row.spec))
                found = _mirrored(planner.workloads, models[row.name])
                planner.workloads.update(found)  # the next claim's mirror adds to these
                mirrored.update(found)
        if claimed.workloads:
            kept = tuple(mirrored.get(w.name, w) for w in cached.spec.workloads)
            made = tuple(planner.workloads[name] for name in models)  # mirrored, some
            cached.spec = dataclasses.replace(cached.spec, workloads=(*kept, *made))
            planner.spec = cached.spec
        if rules and not self._rules_from_rows(cached, claimed, ruled):
            return False
        snapshot.revision = cached.revision = current
        return True

    def _offerings_from_rows(self, cached: Cached, claimed: Claimed, ruled: int) -> bool:
        """The offerings the rows add to the cache's (`claimed`, read with the rules),
        taken in as the leader's delta took them (live_offerings.stored). False when one
        the cache holds changed, or the cache's world is not one that delta changes."""
        snapshot = cached.snapshot
        if claimed.offerings is None:
            return False
        offerings = live_offerings.added(snapshot.offerings, claimed.offerings)
        if offerings is None or (offerings and (cached.pending or not cached.fitting)):
            return False
        if offerings:
            cached.spec = cached.planner.spec = live_offerings.stored(
                cached.spec, snapshot, offerings, ruled
            )
        return True

    def _rules_from_rows(self, cached: Cached, claimed: Claimed, ruled: int) -> bool:
        """The world's settings and dedications as the rows hold them (`claimed`, read
        with the rules), where they differ from the cache's, applied as the leader's
        deltas applied them (live_settings.stored, `_store_dedication` and the owners in
        the plan state), at revision `ruled`.
        False when the cache's world is not one those deltas change (then only a whole
        read knows)."""
        snapshot = cached.snapshot
        entries, found = claimed.dedications, claimed.settings
        if entries is None or found is None:
            return False
        if cached.pending or not cached.fitting or cached.coupling.readers is None:
            return False
        for key in world.SPEC_SETTINGS:
            now, was = found.get(key), snapshot.settings.get(key)
            if now == was:
                continue
            if now is None:
                return False  # a setting unset: the general path's
            reset = live_settings.Reset(key, now, was)
            cached.spec = live_settings.stored(cached.spec, snapshot, cached.planner, reset, ruled)
        ordered = sorted(entries, key=lambda entry: snapshot.depth(entry["resource"]))
        changes = rededication.from_rows(
            cached.spec,
            snapshot,
            cached.planner.index,
            cached.dedication_topology(),
            ordered,
        )
        if changes is None:
            return False
        for change in changes:
            _store_dedication(cached, change, ruled)
            rededicate(cached.state, change.in_force, change.zone_owners)
        snapshot.rules_revision = ruled
        return True

    def _resized(self, cached: Cached, claimed: Claimed) -> set[str] | None:
        """The workloads deleted, the counts changed and the targets' changes of state
        since the cache's revision, as the rows say (`claimed`, read with `resized`),
        applied to the cache as the delta that wrote them applied them to its own: units
        released or placed, units moved, rows and models replaced. The names of the
        workloads rewritten (their units placed here too); None, with the cache left to
        be built again, when the rows show more than a delta writes or what a delta of
        this cache would not take."""
        snapshot, planner, state = cached.snapshot, cached.planner, cached.state
        coupling = cached.coupling
        moved = claimed.moved
        if (
            claimed.gone is None
            or moved is None
            or cached.pending
            or not cached.fitting
            or (coupling.every and claimed.every_units is None)
            # Units moved in a world that is neither allocations alone nor a fleet
            # (`Coupling.mapped`, `every`): only a whole read knows what else moved. A
            # mapping unit's owner is the row's: it takes nothing of the state.
            or (moved and coupling.readers is None and coupling.mapped is None)
        ):
            return None
        deleted = claimed.gone
        written = {row.name: row for row in claimed.workloads if row.name in snapshot.workloads}
        by_id = {row.id: row.name for row in claimed.workloads}
        now: dict[str, dict[str, tuple[int, str]]] = {name: {} for name in written}
        for placed in claimed.units:
            name = by_id[placed.workload_id]
            if name in now:
                now[name][placed.name] = (placed.id, placed.target)
        for name in deleted:
            model = planner.workloads.get(name)
            if (
                model is None
                or model.mode != "allocation"
                or not coupling.free(name, True, leaving=True)
                or not planner.pipeline.releasable(planner.request(model))
            ):
                return None
        models: dict[str, Workload] = {}
        for name, row in written.items():
            was, old = snapshot.workloads[name], planner.workloads.get(name)
            if (
                old is None
                or was.mode != "allocation"
                or (row.document, row.account) != (was.document, was.account)
                or not names_others(row.spec)
                or not coupling.free(name, True)
                or live_apply.count_aside(row.spec)
                != live_apply.count_aside(snapshot.workload_specs[name])
                or not planner.pipeline.releasable(planner.request(old))
            ):
                return None
            try:
                models[name] = self._load(
                    cached, WorkloadSpec.model_validate(row.spec), row.document
                )
            except (SpecError, ValueError):
                return None
            units = now[name]
            if any(
                unit in units and units[unit][1] != snapshot.placements.get(unit)
                for unit in state.placed(name)
            ):
                return None  # a unit moved: not a count's change
        leaving = [planner.workloads[name] for name in deleted]
        for name in deleted:
            self._released(cached, name, set())
            del snapshot.workloads[name]
            del snapshot.workload_specs[name]
            del planner.workloads[name]  # the explainer's too: one dict
        for name, row in written.items():
            self._released(cached, name, set(now[name]))
            model = planner.workloads[name] = models[name]
            request = planner.request(model)
            for unit, (unit_id, target) in sorted(now[name].items(), key=lambda u: _ordinal(u[0])):
                if unit in snapshot.units:
                    continue
                position = state.position(target)
                if position is None:
                    return None
                cached.take(unit, unit_id, name, target, position, request)
            snapshot.workloads[name] = dataclasses.replace(
                snapshot.workloads[name], generation=row.generation
            )
            snapshot.workload_specs[name] = dict(row.spec)
        for model in leaving:
            # As the delta that deleted it did (`_advance`): what a reader avoided no
            # longer holds the term it mirrored.
            planner.workloads.update(self._unmirrored(cached, model))
        if not self._grown_from_rows(cached, claimed):
            return None
        restated = self._restated(cached, claimed)
        if restated is None:
            return None
        if claimed.every_units is not None and not self._dropped(cached, claimed.every_units):
            return None
        if not self._moved(cached, moved):
            return None
        if any(cached.units_on(name) for name in restated if not snapshot.targets[name].takes_work):
            return None  # a unit a drain found no other place for misfits there
        if deleted or written:
            cached.spec = dataclasses.replace(
                cached.spec,
                workloads=tuple(
                    planner.workloads[w.name]
                    for w in cached.spec.workloads
                    if w.name in planner.workloads
                ),
            )
            planner.spec = cached.spec
        return set(written)

    def _grown_from_rows(self, cached: Cached, claimed: Claimed) -> bool:
        """The locations and targets the rows add (an apply the leader took as a delta),
        taken in as that delta took them (`_take_in`); False when the rows rewrite a
        location the cache holds, or add to a world the delta does not grow (then only a
        whole read knows)."""
        snapshot = cached.snapshot
        nodes = claimed.nodes or []
        new = [node for node in nodes if node.name not in snapshot.nodes]
        if any(not node.target for node in nodes if node.name in snapshot.nodes):
            return False
        if not new:
            return True
        coupling = cached.coupling
        if coupling.readers is None or coupling.directed:
            return False
        after = snapshot.copy()
        rows = {target.name: target for target in claimed.targets}
        for node in new:
            after.nodes[node.name] = node.spec
            after.parents[node.name] = node.parent
            after.node_documents[node.name] = node.document
            if node.target:
                row = rows[node.name]
                after.targets[node.name] = TargetRow(
                    row.id,
                    row.generation,
                    row.admin_state,
                    node.document,
                    dict(row.used or {}),
                    dict(row.capacity or {}),
                    row.liveness,
                )
        try:
            made = live_apply.grown(after, [node.name for node in new], cached.spec.inventory)
        except (SpecError, ValueError):
            return False
        resources = set(cached.planner.index.resources)
        if made is None or any(set(t.capacity) - resources for t in made.targets):
            return False
        ids = {f"target:{name}": row.id for name, row in after.targets.items() if row.id}
        cached.state = _take_in(cached, cached.state, made, after, ids)
        return True

    def _restated(self, cached: Cached, claimed: Claimed) -> list[str] | None:
        """Each target written since whose admin state or liveness changed, set in the
        cache as the delta that wrote it set it in its own (the rows, the index's flag
        and the state's): their names; None when a target is not the cache's."""
        snapshot, planner = cached.snapshot, cached.planner
        restated: list[str] = []
        for target in claimed.targets:
            row = snapshot.targets.get(target.name)
            position = planner.index.position.get(target.name)
            if row is None or position is None:
                return None
            if (row.admin_state, row.liveness) == (target.admin_state, target.liveness):
                continue
            now = snapshot.targets[target.name] = dataclasses.replace(
                row, admin_state=target.admin_state, liveness=target.liveness
            )
            planner.index.up[position] = cached.state.up[position] = now.takes_work
            restated.append(target.name)
        return restated

    def _moved(self, cached: Cached, moved: list[PlacedUnit]) -> bool:
        """Each unit of a workload not written since that is on another target now (a
        target's change of state moved it, by a delta or by a whole plan that moved units
        alone: transactions.followable), moved in the cache: what it took given back
        where it was and taken where it is (a mapping unit takes nothing: its owner alone
        changes, as the leader's delta derived it). False when a unit is not a move of
        one the cache holds, or misfits where it is now."""
        if not moved:
            return True
        snapshot, planner, state = cached.snapshot, cached.planner, cached.state
        names = {row.id: name for name, row in snapshot.workloads.items()}
        for placed in moved:
            workload = names.get(placed.workload_id)
            source = snapshot.placements.get(placed.name)
            if source == placed.target:
                continue
            position = state.position(placed.target)
            model = planner.workloads.get(workload) if workload is not None else None
            if model is None or position is None:
                return False
            if source is None:
                if model.mode != "every":
                    return False
                # An every-mode unit made on a target that came (or found room): its
                # number taken as the leader's delta took it.
                cached.ordinals[model.name] = max(
                    placed.ordinal + 1, cached.ordinals.get(model.name, 0)
                )
                request = planner.request(model)
                cached.take(placed.name, placed.id, model.name, placed.target, position, request)
                continue
            if model.mode == "mapping":
                cached.put(placed.name, placed.target)
                continue
            # A move the general path wrote by other rules (CloudStack's evacuation) may
            # land it where this world's rules reject it.
            if not _moved_to(planner, state, placed.name, model, position):
                return False
            cached.put(placed.name, placed.target)
        return True

    def _dropped(self, cached: Cached, present: frozenset[str]) -> bool:
        """The every-mode units the rows no longer hold (their targets stopped taking
        work, or no longer pass), taken off the cached world: each gives back what it
        took, as the leader's delta released it. False when a workload's units cannot be
        given back one by one (then only a whole read knows)."""
        snapshot, planner, state = cached.snapshot, cached.planner, cached.state
        for name in cached.coupling.every:
            gone = sorted(unit for unit in state.placed(name) if unit not in present)
            if not gone:
                continue
            request = planner.request(planner.workloads[name])
            if not planner.pipeline.releasable(request):
                return False
            for unit in gone:
                planner.pipeline.release(request, state, state.remove(unit))
                del snapshot.units[unit]
                cached.lift(unit)
        return True

    def _released(self, cached: Cached, name: str, staying: set[str]) -> None:
        """Workload `name`'s units but those `staying` taken off the cached world, each
        giving back what it took."""
        snapshot, planner, state = cached.snapshot, cached.planner, cached.state
        request = planner.request(planner.workloads[name])
        for unit in sorted(state.placed(name), key=_ordinal):
            if unit in staying:
                continue
            planner.pipeline.release(request, state, state.remove(unit))
            del snapshot.units[unit]
            cached.lift(unit)

    def _unmirrored(self, cached: Cached, gone: Workload) -> dict[str, Workload]:
        """Each workload `gone` avoided, without the mirrored term it gave it: read again
        from its stored spec and mirrored by the avoiders left, in the world's order, as a
        world loaded whole without `gone` holds it."""
        avoided = gone.request(Avoid)
        if avoided is None:
            return {}
        planner, snapshot = cached.planner, cached.snapshot
        found: dict[str, Workload] = {}
        for term in avoided.terms:
            name = term.workload
            current = planner.workloads.get(name)
            if term.mirrored or current is None or name == gone.name or name in found:
                continue
            spec = WorkloadSpec.model_validate(snapshot.workload_specs[name])
            base = dataclasses.replace(
                self._load(cached, spec, snapshot.workloads[name].document),
                units=current.units,
                first=current.first,
            )
            avoiders = [
                model
                for model in planner.workloads.values()
                if model is not current and name in _named(model)
            ]
            found[name] = mirror_avoids([*avoiders, base])[-1]
        return found

    def _load(
        self, cached: Cached, spec: WorkloadSpec, document: str | None = API_DOCUMENT
    ) -> Workload:
        """`spec` as the general path reads it: with its own document's default mode (the
        world spec's settings hold none of any document's)."""
        model = self._base(cached, spec, document)
        if spec.to is None:
            return model
        # Its directives read against the workloads its entries could name (every name
        # its entries could mean), with their running units, as a whole load reads them.
        snapshot, planner = cached.snapshot, cached.planner
        named = sorted(
            (name for name in names_in(spec.to) if name in planner.workloads),
            key=lambda name: snapshot.workloads[name].id,
        )
        models = [
            (stored, self._base(cached, stored, snapshot.workloads[name].document))
            for name in named
            for stored in [WorkloadSpec.model_validate(snapshot.workload_specs[name])]
        ]
        running = tuple(
            Running(name, unit, snapshot.placements[unit])
            for name in named
            for unit in sorted(cached.state.placed(name), key=_ordinal)
        )
        return load_directed(spec, model, models, set(snapshot.targets), running)

    def _base(self, cached: Cached, spec: WorkloadSpec, document: str | None) -> Workload:
        """`spec` without its Juju directives read (`load_workload`)."""
        world = cached.spec
        mode = cached.snapshot.default_mode(document)
        return load_workload(
            spec,
            world.settings
            if mode == world.settings.default_mode
            else dataclasses.replace(world.settings, default_mode=cast(Mode, mode)),
            cached.kinds,
            world.tenancy,
            world.offerings,
            world.storage,
            world.dedications,
        )

    def claim(
        self,
        engine: Store,
        spec: WorkloadSpec,
        actor: Actor,
        report: placing.Reporter = placing.silent,
    ) -> dict[str, Any] | None:
        """The claim's answer, or None when only the general path can take it.

        Claims that arrive while another batch commits wait for the lock together; the
        first of them to get it serves them all in one transaction (a group commit), so
        the commit's cost is shared instead of paid once per claim in a queue."""
        if not _claimable(spec):
            return None
        return self._served_now(engine, Ticket(spec, actor, report, time.perf_counter()))

    def _served_now(self, engine: Store, ticket: Ticket) -> dict[str, Any] | None:
        """`ticket` served by the serving thread, waited for in this one. Not served
        here: under steady load the serving thread holds the batch lock from one batch
        to the next, and a thread waiting for the lock would wait that long for an
        answer the serving thread gave at once."""
        finished = ticket.finished = threading.Event()
        self._enqueue(engine, ticket)
        finished.wait()
        if ticket.error is not None:
            raise ticket.error
        return ticket.answer

    def _enqueue(self, engine: Store, ticket: Ticket) -> None:
        """`ticket` in line for the serving thread (started when none runs)."""
        with self._arrived:
            self._waiting.append(ticket)
            if self._server is None:
                self._server = threading.Thread(
                    target=self._serving, args=(engine,), name="placed-claims", daemon=True
                )
                self._server.start()
            else:
                self._arrived.notify()

    async def claim_async(
        self,
        engine: Store,
        spec: WorkloadSpec,
        actor: Actor,
        report: placing.Reporter = placing.silent,
    ) -> dict[str, Any] | None:
        """`claim` for a request's handler, on its event loop. One thread serves the
        waiting claims in batches and wakes each handler when its answer is known: a
        thread of the pool per claim would cost two thread switches a claim, each a
        wait for the GIL, and most of them only to wait for the batch lock."""
        if not _claimable(spec):
            return None
        return await self._served_async(engine, Ticket(spec, actor, report, time.perf_counter()))

    async def _served_async(self, engine: Store, ticket: Ticket) -> dict[str, Any] | None:
        """`ticket` served by the serving thread, awaited on this event loop."""
        running = asyncio.get_running_loop()
        ticket.waiter = (running, running.create_future())
        self._enqueue(engine, ticket)
        # Shielded: a client that goes away leaves its claim to be served all the same.
        await asyncio.shield(ticket.waiter[1])
        if ticket.error is not None:
            raise ticket.error
        return ticket.answer

    def _serving(self, engine: Store) -> None:
        """The serving thread: a batch of what waits, as long as claims keep coming."""
        while True:
            with self._arrived:
                if not self._waiting:
                    self._arrived.wait(IDLE_SECONDS)
                if not self._waiting:
                    self._server = None
                    return
            with self._lock, contextlib.suppress(Exception):
                # Every claim of a batch that failed has the error, to raise in its
                # request: this thread goes on to the next batch.
                self._serve_waiting(engine)

    def _serve_waiting(self, engine: Store) -> None:
        """Serve every claim waiting (under the batch lock), and the claims each batch
        took while it committed."""
        with self._waiting_lock:
            batch, self._waiting = self._waiting, []
        speculated: Speculated | None = None
        answers = Answers()
        try:
            while batch:
                try:
                    batch, speculated, answers = self._serve_batch(
                        engine, batch, speculated, answers
                    )
                except BaseException as error:
                    self._cached = None
                    for waiting in batch:
                        if not waiting.done:
                            waiting.finish(error=error)
                    self._put_back()
                    raise
        finally:
            answers.send()

    def _put_back(self) -> None:
        """The claims taken while a batch committed wait again, first in line."""
        taken, self._taken = self._taken, []
        if taken:
            with self._waiting_lock:
                self._waiting[:0] = taken

    def _serve(
        self, engine: Store, batch: list[Ticket], speculated: Speculated | None = None
    ) -> tuple[list[Ticket], Speculated | None]:
        """`_serve_batch`, its answers sent before it returns."""
        taken, speculated, answers = self._serve_batch(engine, batch, speculated, Answers())
        answers.send()
        return taken, speculated

    def _serve_batch(
        self,
        engine: Store,
        batch: list[Ticket],
        speculated: Speculated | None,
        earlier: Answers,
    ) -> tuple[list[Ticket], Speculated | None, Answers]:
        """Plan each claim of `batch` on the world the ones before it leave, then commit
        every placed one in one transaction. Every answer waits until the world it was
        decided on is known to be the current one: the commit proves it (no revision
        came between the cache's and the commit's), or, when nothing is written, a read
        of the revision does. A claim refused because an earlier one took the room is
        refused only once that one is stored.

        While the batch commits, the claims waiting meanwhile are decided on the world
        it leaves (`speculated`), and returned, to be served next: that decision holds
        only if the commit succeeded and the cache moved to exactly that world (the
        same state, at the revision the commit made); otherwise they are decided again.
        Either way they are committed after this batch, on their own revision.

        `earlier`: the batch before's answers, sent once this batch's commit is under way
        (or at once, if it gets no commit): building them (a plan document a claim, its
        events logged and counted) then no longer holds up the chain of commits. This
        batch's come back, for the next to send."""
        try:
            return self._served(engine, batch, speculated, earlier)
        finally:
            earlier.send()

    def _served(
        self,
        engine: Store,
        batch: list[Ticket],
        speculated: Speculated | None,
        earlier: Answers,
    ) -> tuple[list[Ticket], Speculated | None, Answers]:
        if self._cached is None or self._general_since:
            # A change this replica left to the general path, or another of this
            # process's whole plans (`committed`), has most likely committed since: read
            # the rows first rather than commit a batch to find it Behind.
            self._general_since = False
            cached = self._fresh(engine)
        else:
            cached = self._cached
        for attempt in range(TRIES):
            if attempt == 0 and speculated is not None and speculated.holds(cached):
                decided = speculated.decided
                # The batch it was decided on is stored now: its names are the world's.
                decided.keep_own_names()
            else:
                decided = self._decide(cached, batch)
            if not decided.writes():
                seen = cached.revision
                current = self._fresh(engine)
                if current is not cached or current.revision != seen:
                    cached = current  # the world moved: decide again on the new one
                    continue
                decided.finish(cached.revision, {})
                return (*self._pending(), Answers())
            try:
                number, ids, rows, next_one = self._overlapped(
                    engine, cached, decided, attempt, earlier
                )
            except Behind:
                cached = self._fresh(engine)
                if engine.dialect.name == "postgresql":
                    # Another replica committed first. Judged again optimistically, the
                    # batch would meet the next of its commits, and the next, while they
                    # keep coming: decided under the revision's lock instead, it cannot be
                    # overtaken. (PostgreSQL grants a row's lock to its waiters in turn;
                    # SQLite's busy handler would let writers that wait starve behind it.)
                    return (*self._serve_locked(engine, batch), Answers())
                continue
            except Stale:
                self._cached = None
                for ticket in batch:
                    ticket.finish()  # the general path plans them on fresh rows
                return (*self._pending(), Answers())
            self._advance(cached, number, decided, ids)
            return (*self._pending(next_one), Answers(decided, number, rows))
        for ticket in batch:
            ticket.finish()  # the world keeps moving under this replica: plan in full
        return (*self._pending(), Answers())

    def _serve_locked(
        self, engine: Store, tickets: list[Ticket]
    ) -> tuple[list[Ticket], Speculated | None]:
        """`tickets` decided and committed in one transaction that holds the revision
        row's lock from its start (PostgreSQL): the cache is brought up to the revision
        under the lock (the claims committed since, read as `_fresh` reads them), so the
        decision is on the world as it stands and the commit cannot find another change
        first. The lock is held while the batch is decided (a millisecond or two), where
        another replica's general path holds it while it plans the whole world."""
        try:
            with engine.begin() as connection:
                revision.lock(connection)
                # The cache was just brought up to date: under the lock it reads the
                # claims committed since (a whole world only if something else changed
                # in between).
                cached = self._fresh(engine)
                decided = self._decide(cached, tickets)
                if decided.writes():
                    written = _rows(cached, decided)
                    stored = _fenced_write(connection, decided.fence, cached.revision, written)
        except (Stale, Behind):
            # Under the lock only a row the cache misread can be stale: plan it in full.
            self._cached = None
            for ticket in tickets:
                ticket.finish()
            return self._pending()
        if not decided.writes():
            decided.finish(cached.revision, {})
            return self._pending()
        number, ids, rows = _committed(stored)
        self._advance(cached, number, decided, ids)
        decided.finish(number, rows)
        return self._pending()

    def _pending(
        self, speculated: Speculated | None = None
    ) -> tuple[list[Ticket], Speculated | None]:
        """The claims taken while this batch committed, to be served next; with their
        decision only when this batch's commit is the world it was made on."""
        taken, self._taken = self._taken, []
        return taken, speculated

    def _overlapped(
        self,
        engine: Store,
        cached: Cached,
        decided: Decided,
        attempt: int,
        earlier: Answers,
    ) -> tuple[int, dict[str, int], dict[str, list[events.Written]], Speculated | None]:
        """`_commit` in the committer thread; meanwhile (on a batch's first try) the
        claims that wait are taken and decided on the world this batch leaves. The
        cache is not touched until the commit is known."""
        if self._committer is None:
            self._committer = concurrent.futures.ThreadPoolExecutor(
                max_workers=1, thread_name_prefix="placed-commit"
            )
        future = self._committer.submit(self._commit, engine, cached, decided)
        earlier.send()
        speculated: Speculated | None = None
        if attempt == 0 and not self._taken and not decided.closed:
            # Every claim that arrives before the commit ends is taken and decided, in
            # turn, on the world the ones before it leave: the next batch is then all
            # that came meanwhile, its commit's cost shared by as many as it can be.
            future.add_done_callback(self._commit_ended)
            lineage: Decided | None = None
            failed = False
            while True:
                with self._arrived:
                    while not self._waiting and not future.done():
                        self._arrived.wait(IDLE_SECONDS)
                    arrived, self._waiting = self._waiting, []
                if arrived:
                    self._taken += arrived
                if arrived and not failed:
                    # Nothing of this may raise before the commit's outcome is known
                    # (its claims would be answered with an error though stored): a
                    # decision that fails is made again, on its own, once this batch
                    # is served, and so are the ones taken after it.
                    try:
                        wave = self._decide(cached, arrived, lineage or decided)
                        lineage = wave if lineage is None else lineage.followed_by(wave)
                    except Exception:
                        failed, lineage = True, None
                if future.done():
                    break
            if lineage is not None:
                speculated = Speculated(lineage, cached, decided.state)
        number, ids, rows = future.result()
        if speculated is not None:
            speculated.revision = number
        return number, ids, rows, speculated

    def _commit_ended(self, _: concurrent.futures.Future[Any]) -> None:
        with self._arrived:
            self._arrived.notify_all()

    def _decide(self, cached: Cached, batch: list[Ticket], on: Decided | None = None) -> Decided:
        """What the cached world says of each claim; `on`: on the world that decision
        leaves (its batch committing), its new names taken."""
        decided = self._decided(cached, batch, on)
        if decided.general:
            self._general_since = True
        return decided

    def _decided(self, cached: Cached, batch: list[Ticket], on: Decided | None = None) -> Decided:
        if on is None:
            decided = Decided(cached.explainer, cached.state, cached.spec, cached.state)
            decided.coupling = cached.coupling
            taken: set[str] = set()
            gone: set[str] = set()
        else:
            decided = Decided(cached.explainer, on.state, on.spec, on.state)
            decided.coupling = on.coupling
            taken, gone = set(on.names), set(on.gone)
            decided.targets = set(on.targets)
        decided.names, decided.gone = taken, gone
        for ticket in batch:
            if decided.closed or (on is not None and on.closed):
                decided.general.append(ticket)  # see Decided.closed
                continue
            if ticket.resetting is not None:
                self._decide_reset(cached, decided, ticket, ticket.resetting)
                continue
            if ticket.offering is not None:
                self._decide_offer(cached, decided, ticket, ticket.offering)
                continue
            if ticket.applying is not None:
                self._decide_apply(cached, decided, ticket, ticket.applying)
                continue
            if ticket.rededicating is not None:
                self._decide_rededication(cached, decided, ticket, ticket.rededicating)
                continue
            if ticket.removing is not None:
                self._decide_removal(cached, decided, ticket, ticket.removing)
                continue
            if ticket.rescaling is not None:
                self._decide_rescale(cached, decided, ticket, ticket.rescaling)
                continue
            if ticket.retargeting is not None:
                self._decide_retarget(cached, decided, ticket, ticket.retargeting)
                continue
            if ticket.migrating is not None:
                self._decide_migration(cached, decided, ticket, ticket.migrating)
                continue
            spec = ticket.spec
            assert spec is not None
            self._decide_claim(cached, decided, ticket, spec, on)
        return decided

    def _decide_claim(
        self,
        cached: Cached,
        decided: Decided,
        ticket: Ticket,
        spec: WorkloadSpec,
        on: Decided | None,
        home: str = API_DOCUMENT,
    ) -> None:
        """A new workload (of document `home`) placed on the world `decided` leaves, or
        refused (its name taken, a unit with no place), or left to the general path."""
        name = spec.name
        if name in decided.gone:
            decided.general.append(ticket)  # its deletion is not stored yet
            return
        if name in cached.snapshot.workloads or name in decided.names:
            if change_scope.hidden(ticket.actor, cached.snapshot, name) or (
                name in decided.names
                and not _taken_in_view(decided, on, ticket, spec, cached.snapshot)
            ):
                decided.refused.append((ticket, change_scope.name_taken(name)))
            else:
                decided.refuse(ticket, "exists", f"workload {name!r} exists: PUT changes it")
            return
        if not _claimable(spec):
            decided.general.append(ticket)  # a document's: Juju constraints, a pattern...
            return
        if not decided.in_scope(ticket, cached.snapshot, name, CREATED, spec.account):
            return
        try:
            workload = self._load(cached, spec, home)
        except SpecError:
            decided.general.append(ticket)  # reported with the whole spec there
            return
        if (
            workload.mode != "allocation"
            or not set(workload.resources) <= set(cached.planner.index.resources)
            or any(
                other not in cached.planner.workloads or other in decided.gone | decided.names
                for other in _named(workload)
            )
        ):
            # A name a reader's term gives that is not stored as it stands: the general
            # path reads (and answers) it.
            decided.general.append(ticket)
            return
        planned = self._plan(cached, decided.spec, decided.state, workload)
        if planned is None:
            decided.general.append(ticket)
            return
        result, after = planned
        unplaced = result.unplaced
        if unplaced:
            decided.refuse(
                ticket,
                "unplaceable",
                f"{len(unplaced)} of the units cannot be placed: {unplaced[0].summary}",
            )
            return
        # The world's workloads gain it when its commit is known (`_advance`): a commit
        # that fails leaves no workload behind that the rows do not hold.
        explainer = cached.explainer.seeing({workload.name: workload})
        moves = [
            Move(workload.name, p.unit, None, p.target, explainer.reason(p), PLACED)
            for p in result.placements
        ]
        stored = spec.model_dump(mode="json", exclude_defaults=True)
        plan = plan_document(result, explainer) if result.dedications_created else None
        decided.accepted.append(Accepted(ticket, spec, workload, result, moves, stored, plan, home))
        decided.names.add(name)
        decided.state = after
        if reads_others(stored):
            decided.coupling = decided.coupling.with_reader(name, stored)

    def _decide_removal(
        self, cached: Cached, decided: Decided, ticket: Ticket, removing: Removing
    ) -> None:
        """A deletion judged on the world `decided` leaves: its units released there. To
        the general path (which answers the 404s and 409s, and plans the whole world)
        when the delta would not be what a whole plan finds: a unit waits for room (a
        freed place would be given to it), a reader names the workload or it has a Juju
        directive (`Coupling.free`), it is not an allocation, the room it frees would give
        an every-mode workload a unit (`_every_gains`), or it was made or deleted in a
        batch not stored yet."""
        snapshot, planner = cached.snapshot, cached.planner
        name = removing.name
        row = snapshot.workloads.get(name)
        workload = planner.workloads.get(name)
        reach = change_scope.reach_of(ticket.actor, snapshot)
        if (
            row is None
            or workload is None
            or name in decided.gone
            or (reach is not None and row.account not in reach)
            or (removing.generation is not None and row.generation != removing.generation)
            or cached.pending
            or not decided.coupling.free(name, cached.fitting, leaving=True)
            or not planner.pipeline.releasable(planner.request(workload))
        ):
            decided.general.append(ticket)
            return
        if not decided.in_scope(ticket, snapshot, name, DELETED, row.account):
            return
        request = planner.request(workload)
        state = decided.state.fork()
        before = _released_so_far(state)
        moves: list[Move] = []
        # In the rows' order, as the general path lists them (the state's changes with
        # every move of a unit).
        for unit in sorted(cached.state.placed(name), key=_ordinal):
            source = snapshot.placements.get(unit)
            moves.append(Move(name, unit, source, None, "its workload is gone", REMOVED))
            if source is not None:
                planner.pipeline.release(request, state, state.remove(unit))
        released = [(state.target_id(p), owner) for p, owner in _released_since(state, before)]
        if self._every_gains(cached, decided, state, moves):
            decided.general.append(ticket)
            return
        decided.removed.append(Removed(ticket, row, workload, moves, released))
        decided.gone.add(name)
        decided.state = state

    def _every_gains(
        self, cached: Cached, decided: Decided, state: PlanState, moves: list[Move]
    ) -> bool:
        """Whether the room `moves` free (units off their targets) on `state` could give
        an every-mode workload a unit, which a whole plan would place: a freed target
        without one of its units that it now takes. One that holds a unit of an every-mode
        workload judged after it counts as taken too: a whole plan derives the every-mode
        units in order, and the one judged first there finds that unit's room free."""
        every = decided.coupling.every
        freed = {m.source for m in moves if m.source is not None}
        if not every or not freed:
            return False
        planner = cached.planner
        positions = [p for name in sorted(freed) if (p := state.position(name)) is not None]
        hosting = [{state.units[unit][1] for unit in state.placed(name)} for name in every]
        for k, name in enumerate(every):
            keep = planner.judge.feasible(planner.request(planner.workloads[name]), state)
            for position in positions:
                if position not in hosting[k] and (
                    keep[position] or any(position in later for later in hosting[k + 1 :])
                ):
                    return True
        return False

    def _plan(
        self, cached: Cached, spec_now: Spec, state: PlanState, workload: Workload
    ) -> tuple[PlanResult, PlanState] | None:
        # The result's spec is the world's without the batch's workloads: a claim's plan
        # and its document read the workloads from the planner and the explainer, and the
        # spec is grown once a batch is stored (_advance), not copied for every claim.
        after = state.fork()
        result = PlanResult(spec_now, cached.planner.families)
        context = loop.Context(cached.planner.judge, after, result)
        since = _made_so_far(after)
        noticed = len(after.notices)
        result.outcomes = loop.run(context, [workload])
        _made_since(result, since)
        if after.created or not _only_implicit_dedications(result):
            return None  # what the general path writes (new targets, failure events)
        if len(after.notices) != noticed:
            return None  # a directive fell back: the general path's answer warns
        return result, after

    def _commit(self, engine: Store, cached: Cached, decided: Decided) -> Committed:
        """One transaction for the batch (store/batch.py): each target's usage moved by
        what the batch puts there and takes off it, guarded by the generation the cache
        saw; the workloads, units and placements made or deleted, events and history."""
        rows = _rows(cached, decided)
        committing = self.commit_process
        fence = decided.fence
        if fence is None and committing is not None and committing.ready():
            return _committed(committing.write(cached.revision, rows))
        # A Core connection, no ORM session: the batch's statements are the driver's.
        with engine.begin() as connection:
            stored = _fenced_write(connection, fence, cached.revision, rows)
        return _committed(stored)

    def _advance(self, cached: Cached, number: int, decided: Decided, ids: dict[str, int]) -> None:
        """Move the cache to `number`: the world it held, and this batch."""
        snapshot = cached.snapshot
        snapshot.revision = number
        for applied in decided.applied:
            if applied.grown is not None and applied.difference.after is not None:
                grown, after = applied.grown, applied.difference.after
                decided.state = _take_in(cached, decided.state, grown, after, ids)
        planner = cached.planner
        # Each read from the dedications the one before leaves (a claim's VMs may take
        # several hosts).
        for made in _made(decided):
            _store_dedication(cached, rededication.implicit(snapshot, planner.index, made), number)
        for releasing in (*_releasing(decided), *decided.retargeted):
            for host, owner in releasing.released:
                released = rededication.released_implicit(snapshot, planner.index, host, owner)
                _store_dedication(cached, released, number)
        for _, rededicated in decided.rededicated:
            _store_dedication(cached, rededicated, number)
        for _, reset in decided.reset:
            if reset.changed:
                cached.spec = live_settings.stored(cached.spec, snapshot, planner, reset, number)
        if decided.offered:
            offerings = [offered.offering for _, offered in decided.offered]
            cached.spec = planner.spec = live_offerings.stored(
                cached.spec, snapshot, offerings, number
            )
        for claim in decided.accepted:
            workload = claim.workload
            snapshot.workloads[workload.name] = WorkloadRow(
                ids[f"workload:{workload.name}"],
                0,
                claim.home,
                claim.spec.account,
                "allocation",
            )
            snapshot.workload_specs[workload.name] = claim.stored_spec
            planner.workloads[workload.name] = workload
            for move in claim.moves:
                assert move.destination is not None
                snapshot.units[move.unit] = (ids[move.unit], workload.name)
                cached.put(move.unit, move.destination)
        for removal in decided.removed:
            name = removal.workload.name
            del snapshot.workloads[name]
            del snapshot.workload_specs[name]
            for move in removal.moves:
                del snapshot.units[move.unit]
                cached.lift(move.unit)
            del planner.workloads[name]  # the explainer's too: one dict
        changed: dict[str, Workload] = {}
        for rescale in decided.rescaled:
            workload = rescale.workload
            name = workload.name
            snapshot.workloads[name] = dataclasses.replace(
                rescale.row, generation=rescale.row.generation + 1
            )
            snapshot.workload_specs[name] = rescale.stored_spec
            for move in rescale.moves:
                if move.destination is None:
                    del snapshot.units[move.unit]
                    cached.lift(move.unit)
                else:
                    snapshot.units[move.unit] = (ids[move.unit], name)
                    cached.put(move.unit, move.destination)
            planner.workloads[name] = changed[name] = workload
        for claim in decided.accepted:
            for other, mirrored in _mirrored(planner.workloads, claim.workload).items():
                planner.workloads[other] = changed[other] = mirrored
        for removal in decided.removed:
            for other, unmirrored in self._unmirrored(cached, removal.workload).items():
                planner.workloads[other] = changed[other] = unmirrored
        restated: set[str] = set()
        for change in decided.retargeted:
            for name in change.changed:
                row, now = snapshot.targets[name], change.rows[name]
                snapshot.targets[name] = dataclasses.replace(
                    row, admin_state=now.admin_state, liveness=now.liveness
                )
                position = planner.index.position[name]
                # The index's own flag too: what is read of the target's status apart
                # from the state (an explanation) says what the rows say.
                planner.index.up[position] = snapshot.targets[name].takes_work
                restated.add(name)
            for move in change.moves:
                if move.destination is None:  # an every-mode unit off a target leaving
                    del snapshot.units[move.unit]
                    cached.lift(move.unit)
                    continue
                if move.source is None:  # one on a target coming
                    snapshot.units[move.unit] = (ids[move.unit], move.workload)
                    after_it = change.numbers[move.unit] + 1
                    cached.ordinals[move.workload] = max(
                        after_it, cached.ordinals.get(move.workload, 0)
                    )
                cached.put(move.unit, move.destination)
        usage = _usage(cached, decided)
        for name, used in usage.items():
            row = snapshot.targets[name]
            snapshot.targets[name] = dataclasses.replace(
                row, generation=row.generation + 1, used=used
            )
        for name in restated - set(usage):
            row = snapshot.targets[name]
            snapshot.targets[name] = dataclasses.replace(row, generation=row.generation + 1)
        workloads = cached.spec.workloads
        if decided.removed or changed:
            workloads = tuple(
                changed.get(w.name, w)
                for w in workloads
                if w.name in changed or w.name not in decided.gone
            )
        # A claim's model as mirrored by those after it in the batch.
        claimed = (planner.workloads[claim.workload.name] for claim in decided.accepted)
        cached.spec = dataclasses.replace(cached.spec, workloads=(*workloads, *claimed))
        planner.spec = cached.spec
        cached.state = decided.state
        cached.coupling = decided.coupling
        cached.revision = number

    def remove(
        self,
        engine: Store,
        name: str,
        generation: int | None,
        actor: Actor,
        report: placing.Reporter = placing.silent,
    ) -> dict[str, Any] | None:
        """DELETE of workload `name` as a delta on the live world, committed with the
        claims that wait beside it (one transaction, one revision): its units taken off
        the cached state, the rows the general path writes for it, the cache moved on
        without building the world again. None when only the general path can take it
        (it also answers the 404s and 409s): see `_decide_removal`."""
        return self._served_now(engine, _ticket(actor, report, removing=Removing(name, generation)))

    async def remove_async(
        self,
        engine: Store,
        name: str,
        generation: int | None,
        actor: Actor,
        report: placing.Reporter = placing.silent,
    ) -> dict[str, Any] | None:
        """`remove` for a request's handler, on its event loop (as `claim_async`)."""
        ticket = _ticket(actor, report, removing=Removing(name, generation))
        return await self._served_async(engine, ticket)

    def rescale(
        self,
        engine: Store,
        spec: WorkloadSpec,
        generation: int,
        actor: Actor,
        report: placing.Reporter = placing.silent,
    ) -> dict[str, Any] | None:
        """PUT of a workload whose spec changes only its `units:` as a delta on the live
        world, committed with the claims beside it: the units past the new count leave,
        or the new ones are placed on the world the batch leaves as a claim's are, and
        the rows the general path writes for it are written. None when only the general
        path can take it (it also answers the 404s and 409s): see `_decide_rescale`."""
        ticket = _ticket(actor, report, rescaling=Rescaling(spec, generation))
        return self._served_now(engine, ticket)

    async def rescale_async(
        self,
        engine: Store,
        spec: WorkloadSpec,
        generation: int,
        actor: Actor,
        report: placing.Reporter = placing.silent,
    ) -> dict[str, Any] | None:
        """`rescale` for a request's handler, on its event loop (as `claim_async`)."""
        ticket = _ticket(actor, report, rescaling=Rescaling(spec, generation))
        return await self._served_async(engine, ticket)

    def retarget(
        self,
        engine: Store,
        asked: Retargeting,
        actor: Actor,
        report: placing.Reporter = placing.silent,
        fence: Fence | None = None,
    ) -> dict[str, Any] | None:
        """Targets taken down, brought up or drained as a delta on the live world,
        committed with the claims beside it: the units of a target that stops taking
        work placed again on the world the batch leaves, one by one as `placed simulate
        --down` places them, and the rows the general path writes for it. The answer:
        the revision, the targets whose state changed, the moves. None when only the
        general path can take it (it also answers the 404s): see `_decide_retarget`.
        `fence`: the controller's (a target's liveness), committed alone in its batch
        and only while the controller holds the lease (else the fence's error)."""
        ticket = _ticket(actor, report, retargeting=asked)
        ticket.fence = fence
        return self._served_now(engine, ticket)

    def _decide_rescale(
        self, cached: Cached, decided: Decided, ticket: Ticket, rescaling: Rescaling
    ) -> None:
        """A count's change judged on the world `decided` leaves. To the general path
        when the delta would not be what a whole plan finds: what `_decide_removal`
        declines, a change of anything but the count, a unit that would not find room
        (it would wait, pending), or a running unit that misfits its place (the answer
        lists them)."""
        snapshot, planner = cached.snapshot, cached.planner
        spec = rescaling.spec
        name = spec.name
        row = snapshot.workloads.get(name)
        old = planner.workloads.get(name)
        was = snapshot.workload_specs.get(name)
        reach = change_scope.reach_of(ticket.actor, snapshot)
        stored = spec.model_dump(mode="json", exclude_defaults=True)
        if (
            row is None
            or old is None
            or was is None
            or name in decided.gone
            or (reach is not None and row.account not in reach)
            or row.generation != rescaling.generation
            or row.account != spec.account
            or cached.pending
            or not decided.coupling.free(name, cached.fitting)
            or not cached.fitting
            or not names_others(_fields(spec))
            or live_apply.count_aside(stored) != live_apply.count_aside(was)
        ):
            decided.general.append(ticket)
            return
        try:
            model = self._load(cached, spec, row.document)
        except SpecError:
            decided.general.append(ticket)  # reported against the request's body there
            return
        running = sorted(cached.state.placed(name), key=_ordinal)
        wanted = model.units
        if (
            model.mode != "allocation"
            or not running
            or wanted == len(running)
            or wanted < 1  # every unit gone: the general path's wording
        ):
            decided.general.append(ticket)
            return
        if not decided.in_scope(ticket, snapshot, name, CHANGED, spec.account):
            return
        moves: list[Move] = []
        released: list[tuple[str, Owner]] = []
        plan: dict[str, Any] | None = None
        result = PlanResult(cached.spec, planner.families)
        if wanted < len(running):
            request = planner.request(old)
            if not planner.pipeline.releasable(request):
                decided.general.append(ticket)
                return
            state = decided.state.fork()
            before = _released_so_far(state)
            for unit in running[wanted:]:
                source = snapshot.placements[unit]
                moves.append(Move(name, unit, source, None, placing.FEWER_UNITS, REMOVED))
                planner.pipeline.release(request, state, state.remove(unit))
            released = [(state.target_id(p), owner) for p, owner in _released_since(state, before)]
            if self._every_gains(cached, decided, state, moves):
                decided.general.append(ticket)
                return
        else:
            if decided.coupling.every or not set(model.resources) <= set(planner.index.resources):
                # Room taken in an edge fleet: every-mode units the whole plan derives
                # after it may not fit where they run (the general path removes them).
                decided.general.append(ticket)
                return
            # Numbered after the running units, as the spec reader numbers a workload's
            # units that are still to place (Service.first).
            adding = dataclasses.replace(
                model, units=wanted - len(running), first=_ordinal(running[-1]) + 1
            )
            planned = self._plan(cached, decided.spec, decided.state, adding)
            if planned is None or planned[0].unplaced:
                decided.general.append(ticket)  # a unit would wait for room: pending
                return
            result, state = planned
            explainer = cached.explainer.seeing({name: adding})
            reasons = [explainer.reason(p) for p in result.placements]
            if result.dedications_created:
                plan = plan_document(result, explainer)
            moves += [
                Move(name, placement.unit, None, placement.target, why, PLACED)
                for placement, why in zip(result.placements, reasons, strict=True)
            ]
        decided.rescaled.append(Rescaled(ticket, row, stored, model, result, moves, released, plan))
        decided.gone.add(name)
        decided.state = state

    def _decide_retarget(
        self, cached: Cached, decided: Decided, ticket: Ticket, asked: Retargeting
    ) -> None:
        """Targets' new states judged on the world `decided` leaves: each target's up
        flag set, and the units of those that stop taking work released and placed again,
        workload by workload in the order they were made, each unit on its own (a
        simulation's order). To the general path when the delta would not be what a
        whole plan finds: a unit waits for room (one coming up would take it), a workload
        reads another or is not a plain allocation, a running unit misfits its place, a
        unit of the targets is not stored yet, a target changed in a batch not stored
        yet, or a unit finds no other place (it would wait, or a drain refuses it)."""
        snapshot, planner = cached.snapshot, cached.planner
        names = [name for name, _ in asked.states]
        if (
            (ticket.fence is not None and not decided.empty)
            or any(name not in snapshot.targets for name in names)
            or any(name in decided.targets for name in names)
            or cached.pending
            or (decided.coupling.mapped is None and decided.coupling.readers is None)
            or not cached.fitting
            or (asked.operation == EVACUATE and not self._evacuable(cached, decided, names))
        ):
            decided.general.append(ticket)
            return
        state = decided.state.fork()
        rows: dict[str, TargetRow] = {}
        changed: list[str] = []
        leaving: dict[str, int] = {}
        coming: set[str] = set()
        for name, wanted in asked.states:
            row = snapshot.targets[name]
            if asked.operation == HEARTBEAT:
                after = rows[name] = dataclasses.replace(row, liveness=wanted)
            else:
                after = rows[name] = dataclasses.replace(row, admin_state=wanted)
            position = state.position(name)
            if position is None:
                decided.general.append(ticket)
                return
            if (row.admin_state, row.liveness) != (after.admin_state, after.liveness):
                changed.append(name)
            if not after.takes_work and (row.takes_work or asked.operation == DRAIN):
                # A drain tries again the units an earlier drain of it refused.
                leaving[name] = position
            elif after.takes_work and not row.takes_work:
                coming.add(name)
            state.up[position] = after.takes_work
        positions = set(leaving.values())
        unstored = decided.names | decided.gone
        if any(
            state.units[unit][1] in positions for name in unstored for unit in state.placed(name)
        ):
            decided.general.append(ticket)  # its units' rows are not written yet
            return
        before = _released_so_far(state)
        evacuated: list[Move] = []
        taken: list[DedicationCreated] = []  # by implicit dedication, for the VMs
        if asked.operation == EVACUATE:
            found = self._evacuated(cached, decided, state, names[0], taken)
            if found is None:
                decided.general.append(ticket)
                return
            evacuated = found
        vms = {move.unit for move in evacuated}
        lost: dict[str, list[str]] = {}
        coupling = decided.coupling
        mapped, every = set(coupling.mapped or ()), set(coupling.every)
        owned: dict[str, list[str]] = {}  # mapping workloads' units on targets leaving
        dropped: dict[str, list[str]] = {}  # every-mode ones'
        for target in leaving:
            for unit in cached.units_on(target):
                workload = snapshot.units[unit][1]
                if unit in vms:
                    continue  # moved by the rules already
                if workload in mapped:
                    owned.setdefault(workload, []).append(unit)
                elif workload in every:
                    dropped.setdefault(workload, []).append(unit)
                else:
                    lost.setdefault(workload, []).append(unit)
        movers = {*lost, *(move.workload for move in evacuated)}
        if coupling.mapped is None and not all(coupling.free(w, cached.fitting) for w in movers):
            decided.general.append(ticket)  # another reads where its units run
            return
        # A target coming up may own any mapping unit again, and take an every-mode one.
        # One that balances its load (max_load) is assigned afresh over all of its units by
        # any change of its candidates, as a whole plan assigns it.
        remapping = [
            w
            for w in coupling.mapped or ()
            if coming or w in owned or planner.workloads[w].max_load is not None
        ]
        # Each allocation with units to place again, and each every-mode workload (it
        # may lose units and gain others), in the order they were made: a simulation's.
        judged = sorted({*lost, *every}, key=lambda workload: snapshot.workloads[workload].id)
        models = [planner.workloads[workload] for workload in judged]
        for units in (lost, dropped):
            for name, leaving_units in units.items():
                request = planner.request(planner.workloads[name])
                if not planner.pipeline.releasable(request):
                    decided.general.append(ticket)
                    return
                leaving_units.sort(key=_ordinal if units is lost else str)
                for unit in leaving_units:
                    planner.pipeline.release(request, state, state.remove(unit))
        released = [(state.target_id(p), owner) for p, owner in _released_since(state, before)]
        # What each unit was, so that each is judged on its own as a simulation judges
        # the units it places again (not in a block); and the every-mode units that stay.
        was: dict[str, Outcome] = {
            unit: Placement(workload, unit, snapshot.placements[unit], 0.0, 1, 1, (), via="running")
            for workload, units in lost.items()
            for unit in units
        }
        for name in every:
            for unit in state.placed(name):
                was[unit] = Placement(name, unit, snapshot.placements[unit], 0.0, 1, 1, (), "every")
        result = PlanResult(decided.spec, planner.families)
        context = loop.Context(planner.judge, state, result, previous=was, again=lost)
        since = _made_so_far(state)
        result.outcomes = loop.run(
            context, [m if m.mode == "every" else dataclasses.replace(m, units=0) for m in models]
        )
        _made_since(result, since)
        if result.unplaced or state.created or not _only_implicit_dedications(result):
            decided.general.append(ticket)
            return
        # Mapping units hold nothing in the state: each remapped workload's owners are
        # derived again on the state the change leaves, as a simulation derives them.
        # With no target coming, only the units of those leaving can change owner (the
        # others' choice is still there): theirs alone are derived.
        # A target coming may own any unit: those whose owner changes are kept.
        planned_on: dict[str, str] = {}  # see owners_bounded
        for model in (planner.workloads[name] for name in remapping):
            derived: list[Outcome] | None
            if model.max_load is not None:
                # A drain plans the world after it afresh; any other change of targets is
                # a simulation's, which repairs the owners a plan of the world before gave
                # (and words a move from there: `planned_on`).
                planned = None if asked.operation == DRAIN else decided.state
                derived, owners = loop.owners_bounded(context, model, planned, snapshot.placements)
                planned_on.update(owners)
            elif coming:
                keys = [model.unit_key(i) for i in range(model.units)]
                derived = loop.owners_again(planner.judge, model, keys, state, snapshot.placements)
            else:
                keys = sorted(owned[model.name], key=_ordinal)
                derived = loop.owners_again(planner.judge, model, keys, state)
            if derived is None or not all(isinstance(o, Placement) for o in derived):
                decided.general.append(ticket)  # a unit would wait: the whole plan says so
                return
            result.outcomes.extend(derived)
        moved: dict[str, list[Move]] = {}
        for move in evacuated:  # first, as the general path lists them
            moved.setdefault(move.workload, []).append(move)
        went_down = set(leaving)
        numbers: dict[str, int] = {}  # each new every-mode unit's number
        next_number: dict[str, int] = {}
        for placement in result.placements:
            source = snapshot.placements.get(placement.unit)
            if source == placement.target:
                continue  # a mapping unit whose owner stays, an every-mode one that stays
            if source is None:  # an every-mode unit on a target coming
                why = "; ".join(
                    rebalance.move_causes(cached.explainer, None, placement, went_down, coming)
                )
                # Numbered after the workload's last unit, as the general path numbers a
                # unit named by its target (the decision ends here: see Decided.closed).
                first = cached.ordinals.get(placement.workload, 0)
                ordinal = next_number.get(placement.workload, first)
                next_number[placement.workload] = ordinal + 1
                numbers[placement.unit] = ordinal
                moved.setdefault(placement.workload, []).append(
                    Move(placement.workload, placement.unit, None, placement.target, why, PLACED)
                )
                continue
            if asked.operation == DRAIN:
                why = f"{source} is drained (maintenance): placed again under the same rules; "
                why += f"now on {placement.target}: {cached.explainer.reason(placement)}"
            elif planned_on.get(placement.unit, source) == placement.target:
                # Where the simulation's own plan of the world before put it: no move of
                # the simulation's, only of the rows (service/placing.simulated).
                why = cached.explainer.reason(placement)
            else:
                said_from = planned_on.get(placement.unit, source)
                why = "; ".join(
                    rebalance.move_causes(cached.explainer, said_from, placement, went_down, coming)
                )
            moved.setdefault(placement.workload, []).append(
                Move(placement.workload, placement.unit, source, placement.target, why, MOVED)
            )
        for name, off in dropped.items():
            removed = [
                Move(name, unit, snapshot.placements[unit], None, placing.FEWER_UNITS, REMOVED)
                for unit in off
            ]
            if asked.operation == DRAIN:
                # A drain words it as a whole plan does: the rule the target now fails.
                removed = [placing.explained(move, planner, state) for move in removed]
            moved.setdefault(name, []).extend(removed)
        touched = [Touched("target", name, CHANGED) for name in changed] + [
            Touched("workload", workload, CHANGED, (snapshot.workloads[workload].account,))
            for workload in moved
        ]
        if not decided.allows(ticket, snapshot, touched):
            return
        decided.retargeted.append(
            Retargeted(
                ticket,
                rows,
                changed,
                [(planner.workloads[workload], moves) for workload, moves in moved.items()],
                numbers,
                released,
                [*taken, *result.dedications_created],
            )
        )
        decided.targets.update(names)
        decided.state = state

    @staticmethod
    def _evacuable(cached: Cached, decided: Decided, names: list[str]) -> bool:
        """An evacuation the delta takes: of one host that takes work now (one in
        maintenance already, or down, keeps its VMs where a plan of the world has them),
        in a world with no storage pools (a VM's disk may move with it: the general
        path's cloud decides where)."""
        if len(names) != 1 or decided.spec.storage is not None:
            return False
        return cached.snapshot.targets[names[0]].takes_work

    def _evacuated(
        self,
        cached: Cached,
        decided: Decided,
        state: PlanState,
        host: str,
        made: list[DedicationCreated],
    ) -> list[Move] | None:
        """The VMs on `host` (down in `state` now) placed again as CloudStack's rules
        place them (`Cloud.evacuate`: each as a deploy of its account and offering, in the
        world's order of running units), on a cloud over the live world rather than one
        built from the rows; then moved in `state`, each unit given back where it was and
        taken where it goes; the hosts they take by implicit dedication given to their
        accounts in `state` and added to `made`. None when only the general path can say
        it: a VM finds no place (it records the refusal), one that is not an allocation,
        or a move this world's rules reject where the cloud's accept it."""
        snapshot, planner = cached.snapshot, cached.planner
        on_host: list[tuple[int, int, str, Workload]] = []
        for unit in cached.units_on(host):
            name = snapshot.units[unit][1]
            model = planner.workloads[name]
            if model.request(Tenant) is None:
                continue  # not a VM: it moves as a target going down moves it
            if model.mode != "allocation":
                return None
            on_host.append((snapshot.workloads[name].id, _ordinal(unit), unit, model))
        if not on_host:
            return []
        on_host.sort(key=lambda found: found[:2])
        cloud = Cloud.over(
            decided.spec,
            planner,
            state.fork(),
            cached.dedication_topology(),
            [(unit, model, host) for _, _, unit, model in on_host],
        )
        held = dict(cloud.rules.items)
        try:
            went = cloud.evacuate(ROOT_ADMIN, host)
        except DedicationError:
            return None
        taken = cloud.taken_since(held)
        if taken is None:
            return None
        kept = state.family_state(DedicationState)
        for dedication in taken:
            # A host a VM took by implicit dedication, as a deploy takes one: its owner
            # in the state before the VMs land (a dedicated VM fits only there then).
            owner, position = dedication.owner, state.position(dedication.resource)
            if owner.account is None or position is None:
                return None
            kept.dedicate(position, owner)
            made.append(DedicationCreated(dedication.resource, owner.account, True, owner.domain))
        moves: list[Move] = []
        for _, _, unit, model in on_host:
            destination = went[unit]
            position = state.position(destination)
            if position is None or not _moved_to(planner, state, unit, model, position):
                return None
            why = cloudstack.evacuated_why(host, cloud, unit)
            moves.append(Move(model.name, unit, host, destination, why, MOVED))
        return moves

    def migrate(
        self,
        engine: Store,
        asked: Migrating,
        actor: Actor,
        report: placing.Reporter = placing.silent,
    ) -> dict[str, Any] | None:
        """A VM moved where it is asked to go as a delta on the live world, committed with
        the claims beside it: judged by the dedication rules on a cloud over the live
        world, with the rows the general path writes for it. The answer: the revision and
        the move. None when only the general path can take it (it also answers every
        refusal): see `_decide_migration`."""
        return self._served_now(engine, _ticket(actor, report, migrating=asked))

    def _decide_migration(
        self, cached: Cached, decided: Decided, ticket: Ticket, asked: Migrating
    ) -> None:
        """The move judged on the world `decided` leaves: `Cloud.migrate` over the live
        world (the VM's account may use the host, which is up and has room), then the
        unit given back where it was and taken where it goes, as a plan of the world
        after it (the general path's) keeps it. To the general path when that plan
        could do more, or the rules refuse (they record it): a unit waits for room or
        misfits, a workload reads another or is mapped or in every mode, a unit that is
        not a VM, an unknown unit or host, a world with storage pools (the disk may move),
        the VM's workload or place changed in a batch not stored yet, or a move this
        world's rules reject where the cloud's accept it."""
        snapshot, planner = cached.snapshot, cached.planner
        unit, target = asked.unit, asked.target
        found = snapshot.units.get(unit)
        source = snapshot.placements.get(unit)
        coupling = decided.coupling
        if (
            found is None
            or source is None
            or target == source
            or target not in snapshot.targets
            or cached.pending
            or not cached.fitting
            or decided.spec.storage is not None
            or (coupling.mapped is None and coupling.readers is None)
            or coupling.mapped
            or coupling.every
            or found[1] in decided.names | decided.gone
        ):
            decided.general.append(ticket)
            return
        name = found[1]
        model = planner.workloads[name]
        state = decided.state.fork()
        here, there = state.position(source), state.position(target)
        if (
            model.mode != "allocation"
            or model.request(Tenant) is None
            or not coupling.free(name, cached.fitting)
            or here is None
            or there is None
            or unit not in state.units
            or state.units[unit][1] != here
        ):
            decided.general.append(ticket)
            return
        cloud = Cloud.over(
            decided.spec,
            planner,
            state.fork(),
            cached.dedication_topology(),
            [(unit, model, source)],
        )
        try:
            cloud.migrate(ROOT_ADMIN, unit, target)
        except DedicationError:
            decided.general.append(ticket)
            return
        before = _released_so_far(state)
        if not _moved_to(planner, state, unit, model, there):
            decided.general.append(ticket)
            return
        released = [(state.target_id(p), owner) for p, owner in _released_since(state, before)]
        why = f"migrated from {source} to {target} as asked"
        move = Move(name, unit, source, target, why, MOVED)
        touched = [Touched("workload", name, CHANGED, (snapshot.workloads[name].account,))]
        if not decided.allows(ticket, snapshot, touched):
            return
        decided.retargeted.append(Retargeted(ticket, {}, [], [(model, [move])], released=released))
        decided.state = state

    def rededicate(
        self,
        engine: Store,
        asked: Rededicating,
        actor: Actor,
        report: placing.Reporter = placing.silent,
    ) -> dict[str, Any] | None:
        """A dedication made, given another owner or released as a delta on the live
        world, committed with the changes beside it: the rows and events the general
        path writes for it, and the owners of the targets below the resource in the
        cached state. The answer as the route's general path gives it; None when only
        the general path can take it (it also answers every refusal): see
        operations/rededication.py."""
        return self._served_now(engine, _ticket(actor, report, rededicating=asked))

    def _decide_rededication(
        self, cached: Cached, decided: Decided, ticket: Ticket, asked: Rededicating
    ) -> None:
        """A dedication's change judged on the world `decided` leaves. To the general path
        when a unit waits for room (the change could open a host to it), a workload is not
        an allocation (a mapping or every-mode one's owners read the dedications), a
        running unit misfits its place, or the rules cannot judge it here
        (rededication.judge: a unit runs below the resource). A reader's verdicts read
        where units run, which a dedication of a resource nothing runs below leaves."""
        if cached.pending or decided.coupling.readers is None or not cached.fitting:
            decided.general.append(ticket)
            return
        judged = rededication.judge(
            cached.spec,
            cached.snapshot,
            cached.planner.index,
            decided.state,
            cached.dedication_topology(),
            asked,
        )
        if judged is None:
            decided.general.append(ticket)
            return
        if not decided.allows(ticket, cached.snapshot, judged.touched(cached.snapshot)):
            return
        decided.rededicated.append((ticket, judged))
        decided.state = rededication.on_state(decided.state, judged)

    def apply(
        self,
        engine: Store,
        asked: Applying,
        actor: Actor,
        report: placing.Reporter = placing.silent,
    ) -> dict[str, Any] | None:
        """Documents applied as a delta on the live world when their difference from what
        is stored is workloads alone (operations/live_apply.py): POST /v1/apply's answer, or
        None when only the general path can take them (it also answers every refusal).
        Without a world in memory yet, None at once: a first apply (an inventory, most
        likely) builds no world only to find it the general path's."""
        if self._cached is None:
            return None
        ticket = _ticket(actor, report)
        ticket.applying = asked
        return self._served_now(engine, ticket)

    def _decide_apply(
        self, cached: Cached, decided: Decided, ticket: Ticket, asked: Applying
    ) -> None:
        """The documents' difference decided on the world `decided` leaves, as the claims,
        deletes and count changes it is made of, all or none: to the general path when
        the difference is more than workloads, when any of them would go there or be
        refused (a unit with no place waits pending there), or when the batch holds
        other changes already (the apply answers as one)."""
        snapshot = cached.snapshot
        if not decided.empty or cached.pending or not cached.fitting:
            decided.general.append(ticket)
            return
        try:
            documents = asked.read(snapshot)
        except Exception:
            decided.general.append(ticket)
            return
        named = [w.name for document in documents for w in document.workloads]
        if any(change_scope.hidden(ticket.actor, snapshot, name) for name in named):
            decided.general.append(ticket)
            return
        found = live_apply.difference(snapshot, documents, asked.prune)
        if found is None:
            decided.general.append(ticket)
            return
        if found.added:
            self._decide_grown(cached, decided, ticket, asked, found)
            return
        sub = Decided(cached.explainer, decided.state, decided.spec, decided.state)
        sub.names, sub.gone = set(decided.names), set(decided.gone)
        sub.coupling = decided.coupling
        for name in found.deleted:
            self._decide_removal(cached, sub, _part_of(ticket), Removing(name, None))
        for spec, generation in found.counted:
            self._decide_rescale(cached, sub, _part_of(ticket), Rescaling(spec, generation))
        for spec, home in found.created:
            self._decide_claim(cached, sub, _part_of(ticket), spec, None, home)
        if sub.general or sub.refused or sub.closed:
            decided.general.append(ticket)
            return
        decided.accepted += sub.accepted
        decided.removed += sub.removed
        decided.rescaled += sub.rescaled
        decided.names |= sub.names
        decided.gone |= sub.gone
        decided.state = sub.state
        decided.coupling = sub.coupling
        decided.applied.append(
            Applied(ticket, found, asked.prune, sub.accepted, sub.removed, sub.rescaled)
        )

    def _decide_grown(
        self,
        cached: Cached,
        decided: Decided,
        ticket: Ticket,
        asked: Applying,
        found: live_apply.Difference,
    ) -> None:
        """Locations and targets added to the inventory, and nothing else: each target
        comes empty, and in a world of allocations (no unit waiting for room, every unit
        fitting, no Juju directive's machines) a whole plan moves nothing for it, which
        the live world takes in by growing its index and state once stored (a new host
        under a dedicated location owned as the location is). To the general path
        otherwise, or when a new target counts a resource the world's index does not."""
        snapshot, coupling = cached.snapshot, decided.coupling
        after = found.after
        if after is None or coupling.readers is None or coupling.directed:
            decided.general.append(ticket)
            return
        try:
            made = live_apply.grown(after, found.added, cached.spec.inventory)
        except (SpecError, ValueError):
            made = None
        resources = set(cached.planner.index.resources)
        if made is None or any(set(t.capacity) - resources for t in made.targets):
            decided.general.append(ticket)
            return
        touched = [
            Touched("target" if node in after.targets else "location", node, CREATED)
            for node in found.added
        ]
        if not decided.allows(ticket, snapshot, touched):
            return
        decided.applied.append(Applied(ticket, found, asked.prune, [], [], [], made))

    def reset(
        self,
        engine: Store,
        asked: Resetting,
        actor: Actor,
        report: placing.Reporter = placing.silent,
    ) -> dict[str, Any] | None:
        """A setting of the whole world changed as a delta on the live world: the
        setting's row and event, and (implicit dedication) each tenant's request in the
        cached world. The answer as the route's general path gives it; None when only
        the general path can take it: see operations/live_settings.py."""
        return self._served_now(engine, _ticket(actor, report, resetting=asked))

    def _decide_reset(
        self, cached: Cached, decided: Decided, ticket: Ticket, asked: Resetting
    ) -> None:
        """A setting's change judged on the world `decided` leaves; to the general path
        when a unit waits for room (implicit dedication on could give it a host), a
        workload is not an allocation, a running unit misfits its place, or the value is
        not one the delta judges (live_settings.judge)."""
        if (
            cached.pending
            or decided.coupling.readers is None
            or not cached.fitting
            or decided.reset
        ):
            decided.general.append(ticket)
            return
        judged = live_settings.judge(cached.spec, cached.snapshot, asked)
        if judged is None:
            decided.general.append(ticket)
            return
        touched = [Touched("setting", judged.key, CHANGED)] if judged.changed else []
        if not decided.allows(ticket, cached.snapshot, touched):
            return
        decided.reset.append((ticket, judged))

    def offer(
        self,
        engine: Store,
        asked: Offered,
        actor: Actor,
        report: placing.Reporter = placing.silent,
    ) -> dict[str, Any] | None:
        """A service offering made as a delta on the live world: its row and event, and
        the cached world's offerings. The answer as the route's general path gives it;
        None when only the general path can take it: see operations/live_offerings.py."""
        return self._served_now(engine, _ticket(actor, report, offering=asked))

    def _decide_offer(
        self, cached: Cached, decided: Decided, ticket: Ticket, asked: Offered
    ) -> None:
        """An offering judged on the world `decided` leaves; to the general path when a
        unit waits for room or misfits (any change re-evaluates those there), another
        offering is made in the same decision, or live_offerings.judge declines it."""
        judged = live_offerings.judge(cached.snapshot, asked)
        if cached.pending or not cached.fitting or decided.offered or judged is None:
            decided.general.append(ticket)
            return
        if not decided.allows(ticket, cached.snapshot, [Touched("offering", judged.name, CREATED)]):
            return
        decided.offered.append((ticket, judged))

    @property
    def revision(self) -> int | None:
        """The revision of the world held (None: none is held yet)."""
        cached = self._cached
        return cached.revision if cached is not None else None

    def follow(self, engine: Store) -> None:
        """Follow every change this process's general path commits on `engine`
        (`committed`)."""
        transactions.followed_by(engine, self)

    def committed(self, engine: Store, number: int, followable: bool) -> None:
        """A change this process's general path committed (transactions.Follower): one
        its rows say (`followable`: units moved, targets' states) is read into the cache
        now, before the change is answered, as a delta's commit moves the cache before its
        answer: the claim after it finds the world current. When a batch is being served
        meanwhile (the lock is taken), or the change reshaped the world (then only a whole
        read knows it: not on this change's time), the next batch reads the rows first."""
        self._general_since = True
        if not followable or not self._lock.acquire(blocking=False):
            return
        try:
            if self._cached is not None and self._cached.revision < number:
                with reading(engine) as session:
                    if self._followed(session) is None:
                        self._cached = None  # part-read: built whole at its next use
                    else:
                        self._general_since = False
        except Exception:
            self._cached = None  # committed all the same: built whole at its next use
        finally:
            self._lock.release()

    def read_current(self, engine: Store, use: Callable[[Cached], Answer]) -> Answer:
        """What `use` reads of the world at the store's current revision (the cache
        brought to it first), under the batch lock, so that no claim of this replica
        changes the world meanwhile: `use` changes nothing of it (it forks the state or
        builds its own to plan on)."""
        with self._lock:
            return use(self._fresh(engine))

    def forget(self) -> None:
        with self._lock:
            self._cached = None


def _ticket(
    actor: Actor,
    report: placing.Reporter,
    *,
    removing: Removing | None = None,
    rescaling: Rescaling | None = None,
    retargeting: Retargeting | None = None,
    rededicating: Rededicating | None = None,
    resetting: Resetting | None = None,
    offering: Offered | None = None,
    migrating: Migrating | None = None,
) -> Ticket:
    """A change's ticket other than a claim's, started now."""
    return Ticket(
        None,
        actor,
        report,
        time.perf_counter(),
        removing,
        rescaling,
        retargeting=retargeting,
        rededicating=rededicating,
        resetting=resetting,
        offering=offering,
        migrating=migrating,
    )


def _moved_to(
    planner: Planner, state: PlanState, unit: str, model: Workload, position: int
) -> bool:
    """`unit` of `model` given back where it runs in `state` and taken at `position`,
    judged there as a world built from the rows judges each unit that runs. False when
    its share cannot be given back, or the world's rules reject it there: the state may
    then hold it nowhere, for the caller to drop."""
    request = planner.request(model)
    if not planner.pipeline.releasable(request):
        return False
    planner.pipeline.release(request, state, state.remove(unit))
    if fit.rejection(planner, model, position, state, fit.NOT_POLICY) is not None:
        return False
    state.place(unit, model.name, position)
    state.judging = unit
    planner.pipeline.reserve(request, state, position)
    state.judging = None
    return True


def _part_of(ticket: Ticket) -> Ticket:
    """A change an applied document is made of: by its caller, answered with it."""
    return Ticket(None, ticket.actor, placing.silent, ticket.started)


def _ordinal(unit: str) -> int:
    return int(unit.rpartition("/")[2])


# What a batch's commit answers: the new revision, the ids of what it made (a workload's
# as "workload:NAME", a unit's by its name), and each workload's events.
Committed = tuple[int, dict[str, int], dict[str, list[events.Written]]]
Rows = tuple[
    list[tuple[int, int]],
    list[tuple[int, str, float]],
    list[batch.NewWorkload],
    list[batch.NewUnit],
    batch.Gone,
]


def _usage(cached: Cached, decided: Decided) -> dict[str, dict[str, float]]:
    """Each target the batch places on or frees, and what it uses once the batch is
    stored: what the cache holds, raised by each unit placed or moved there and lowered
    (never below zero, as the general path writes it) by each one removed or moved off."""
    targets = cached.snapshot.targets
    found: dict[str, dict[str, float]] = {}
    for workload, moves in _moved(decided):
        for move in moves:
            if move.destination is not None:
                used = found.get(move.destination)
                if used is None:
                    used = found[move.destination] = dict(targets[move.destination].used)
                for resource, amount in workload.resources.items():
                    used[resource] = used.get(resource, 0.0) + amount
    for workload, moves in _moved(decided):
        for move in moves:
            if move.source is None:
                continue
            used = found.get(move.source)
            if used is None:
                used = found[move.source] = dict(targets[move.source].used)
            for resource, amount in workload.resources.items():
                if resource in used:
                    used[resource] = round(max(0.0, used[resource] - amount), 9)
    return found


def _moved(decided: Decided) -> list[tuple[Workload, list[Move]]]:
    """Each change of the batch's units, with the workload whose asks they carry."""
    return [
        *((c.workload, c.moves) for c in decided.accepted),
        *((r.workload, r.moves) for r in decided.removed),
        *((r.workload, r.moves) for r in decided.rescaled),
        *(pair for r in decided.retargeted for pair in r.moved),
    ]


def _rows(cached: Cached, decided: Decided) -> Rows:
    """What `batch.write` takes for the batch: each target's guard (the generation the
    cache saw); the usage a target only gains raised by the amounts placed there, and
    the usage of one the batch frees written as `_usage` finds it; the workloads and
    units made, and those deleted, removed or changed."""
    deltas: dict[str, dict[str, float]] = {}
    units: list[batch.NewUnit] = []
    targets = cached.snapshot.targets
    placing_changes = [
        *((c.ticket.actor, c.spec.account, c.workload, c.moves) for c in decided.accepted),
        *((r.ticket.actor, r.row.account, r.workload, r.moves) for r in decided.rescaled),
    ]
    accounts = cached.snapshot.workloads
    for change in decided.retargeted:
        for workload, moves in change.moved:
            for move in moves:
                if move.source is not None or move.destination is None:
                    continue
                found = deltas.setdefault(move.destination, {})
                for name, amount in workload.resources.items():
                    found[name] = found.get(name, 0.0) + amount
                account = accounts[workload.name].account
                units.append(
                    batch.NewUnit(
                        move.unit,
                        move.workload,
                        change.numbers[move.unit],
                        targets[move.destination].id,
                        move.why,
                        _unit_event(change.ticket.actor, move, account),
                    )
                )
    for actor, account, workload, moves in placing_changes:
        for move in moves:
            if move.destination is None:
                continue
            found = deltas.setdefault(move.destination, {})
            for name, amount in workload.resources.items():
                found[name] = found.get(name, 0.0) + amount
            units.append(
                batch.NewUnit(
                    move.unit,
                    move.workload,
                    _ordinal(move.unit),
                    targets[move.destination].id,
                    move.why,
                    _unit_event(actor, move, account),
                )
            )
    freed: dict[str, dict[str, float]] = {}
    if decided.removed or decided.rescaled or decided.retargeted:
        usage = _usage(cached, decided)
        # A target a unit leaves, or one a target's unit moves to: its usage as it will
        # be, written whole (a claim's units there counted in it).
        freed = {
            end: usage[end]
            for _, moves in _moved(decided)
            for move in moves
            if move.source is not None
            for end in (move.source, move.destination)
            if end is not None
        }
    restated = [
        name
        for change in decided.retargeted
        for name in change.changed
        if name not in deltas and name not in freed
    ]
    touched = [*deltas, *(name for name in freed if name not in deltas), *restated]
    return (
        [(targets[name].id, targets[name].generation) for name in touched],
        [
            (targets[name].id, resource, amount)
            for name in deltas
            if name not in freed
            for resource, amount in sorted(deltas[name].items())
        ],
        [
            batch.NewWorkload(
                c.workload.name,
                c.spec.account,
                c.stored_spec,
                c.home,
                _workload_event(
                    c.ticket.actor,
                    "workload.created",
                    c.workload.name,
                    c.spec.account,
                    {"how": CREATED, "spec": c.stored_spec, "document": c.home},
                ),
            )
            for c in decided.accepted
        ],
        units,
        _gone(cached, decided, freed),
    )


def _gone(cached: Cached, decided: Decided, freed: dict[str, dict[str, float]]) -> batch.Gone:
    """The batch's deletions and count changes as rows: each workload at the generation
    the cache saw, with its workload.deleted or workload.changed event; each unit
    removed with its unit.removed event (a deleted workload's with no account: the
    general path reads it from the world after, where the workload is gone); and the
    freed targets' usage."""
    if (
        not decided.removed
        and not decided.rescaled
        and not decided.retargeted
        and not decided.closed
    ):
        return batch.NOTHING_GONE
    targets, units = cached.snapshot.targets, cached.snapshot.units
    workloads: list[batch.GoneWorkload] = []
    changed: list[batch.ChangedWorkload] = []
    gone_units: list[batch.GoneUnit] = []
    for removal in decided.removed:
        actor, row, name = removal.ticket.actor, removal.row, removal.workload.name
        details: dict[str, Any] = {"how": DELETED}
        if row.document is not None:
            details["document"] = row.document
        event = _workload_event(actor, "workload.deleted", name, row.account, details)
        workloads.append(batch.GoneWorkload(row.id, row.generation, event))
        gone_units += [
            batch.GoneUnit(units[m.unit][0], m.unit, m.source, m.why, _unit_event(actor, m, None))
            for m in removal.moves
        ]
    for rescale in decided.rescaled:
        actor, row, name = rescale.ticket.actor, rescale.row, rescale.workload.name
        details = {"how": CHANGED, "spec": rescale.stored_spec}
        if row.document is not None:
            details["document"] = row.document
        event = _workload_event(actor, "workload.changed", name, row.account, details)
        changed.append(batch.ChangedWorkload(row.id, row.generation, rescale.stored_spec, event))
        gone_units += [
            batch.GoneUnit(
                units[m.unit][0], m.unit, m.source, m.why, _unit_event(actor, m, row.account)
            )
            for m in rescale.moves
            if m.destination is None
        ]
    used = [
        (targets[name].id, resource, amount)
        for name in sorted(freed)
        for resource, amount in sorted(freed[name].items())
    ]
    states: list[batch.TargetState] = []
    moved: list[batch.MovedUnit] = []
    for change in decided.retargeted:
        actor, asked = change.ticket.actor, change.ticket.retargeting
        if asked is not None:  # else a migration: units move, no target changes
            heartbeat = asked.operation == HEARTBEAT
            states += [
                batch.TargetState(
                    targets[name].id,
                    change.rows[name].liveness if heartbeat else change.rows[name].admin_state,
                    _target_event(actor, asked, name, change),
                    liveness=heartbeat,
                )
                for name in change.changed
            ]
        accounts = cached.snapshot.workloads
        gone_units += [
            batch.GoneUnit(
                units[m.unit][0],
                m.unit,
                m.source,
                m.why,
                _unit_event(actor, m, accounts[m.workload].account),
            )
            for m in change.moves
            if m.destination is None
        ]
        moved += [
            batch.MovedUnit(
                units[m.unit][0],
                m.unit,
                m.source,
                targets[m.destination].id,
                m.why,
                _unit_event(actor, m, accounts[m.workload].account),
            )
            for m in change.moves
            if m.source is not None and m.destination is not None
        ]
    dedications: list[batch.Rededication] = [
        rededication.implicit_row(made, cached.planner.index) for made in _made(decided)
    ] + [
        batch.Rededication(host, "", owner.domain, owner.account, implicit=True, gone=True)
        for change in (*_releasing(decided), *decided.retargeted)
        for host, owner in change.released
    ]
    notes: list[events.Pending] = []
    for ticket, rededicated in decided.rededicated:
        written, said = rededication.rows(rededicated, cached.snapshot, ticket.actor)
        dedications += written
        notes += said
    for applied in decided.applied:
        after = applied.difference.after
        if applied.grown is not None and after is not None:
            # Each node's own event first, as the general path writes its trail.
            made = audit.created_nodes(cached.snapshot, after, applied.difference.added)
            notes += [extra.pending(applied.ticket.actor) for extra in made]
        if not applied.difference.empty:
            extras = applied.difference.notes(cached.snapshot, applied.prune)
            notes += [extra.pending(applied.ticket.actor) for extra in extras]
    settings: list[tuple[str, Any]] = []
    for ticket, reset in decided.reset:
        if reset.changed:
            settings.append((reset.key, reset.value))
            notes.append(reset.event(ticket.actor))
    notes += [offered.event(ticket.actor) for ticket, offered in decided.offered]
    inventory = [
        row
        for applied in decided.applied
        if applied.grown is not None
        for row in applied.grown.rows
    ]
    return batch.Gone(
        workloads,
        gone_units,
        used,
        changed,
        states,
        moved,
        dedications,
        notes,
        settings,
        inventory,
        [offered.offering for _, offered in decided.offered],
    )


def _take_in(
    cached: Cached,
    on: PlanState,
    grown: live_apply.Grown,
    after: Snapshot,
    ids: dict[str, int],
) -> PlanState:
    """The nodes `grown` adds, stored (`ids`: the targets' row ids), taken into the cached
    world: their rows, the spec's inventory, the index extended, a planner on that index
    whose compiled requests are made again as they are asked for, and the state `on`
    taken onto it, returned (a new state: a batch decided on the one before is decided
    again)."""
    snapshot = cached.snapshot
    for row in grown.rows:
        name = row.name
        snapshot.nodes[name] = after.nodes[name]
        if name in after.parents:
            snapshot.parents[name] = after.parents[name]
        snapshot.node_documents[name] = after.node_documents.get(name)
        if row.target:
            made = after.targets[name]
            snapshot.targets[name] = dataclasses.replace(
                made, id=ids[f"target:{name}"], used=dict.fromkeys(made.capacity, 0.0)
            )
    cached.spec = dataclasses.replace(cached.spec, inventory=grown.inventory)
    index = cached.planner.index.extended(grown.targets)
    state = on.fork()
    state.extend_to(index)
    planner = Planner.on(cached.spec, index, cached.planner.families)
    planner.workloads = cached.planner.workloads  # one dict with the explainer's
    cached.planner = planner
    cached.explainer.rededicated(cached.spec)
    cached.kinds |= grown.kinds
    # The dedication rules' tree of locations, made again when next asked for.
    cached.topology = None
    return state


def _target_event(
    actor: Actor, asked: Retargeting, name: str, change: Retargeted
) -> events.Pending:
    """A target's new state as the route's general path records it: target.down,
    target.up, or a drain's target.maintenance, with the reason and the moves."""
    details: dict[str, Any] = {"reason": asked.reason}
    if asked.operation == HEARTBEAT:
        # As the controller's general path records it (service/controller.py).
        state = change.rows[name].liveness
        details["cause"] = "heartbeat"
    else:
        state = change.rows[name].admin_state
    if asked.operation == DRAIN:
        details["operation"] = DRAIN
    details["moves"] = len(change.moves)
    if asked.operation == DRAIN:
        details["refused"] = 0  # a unit with no other place goes to the general path
        if len(change.rows) > 1:
            details["batch"] = True
    elif asked.operation == BATCH:
        details["batch"] = True
    return events.Pending(
        f"target.{state}",
        name,
        actor_accessor=actor.accessor,
        actor_role=actor.role,
        target=name,
        request_id=actor.request_id,
        details=details,
    )


def _workload_event(
    actor: Actor, kind: str, name: str, account: str | None, details: dict[str, Any]
) -> events.Pending:
    return events.Pending(
        kind,
        name,
        actor_accessor=actor.accessor,
        actor_role=actor.role,
        workload=name,
        account=account,
        request_id=actor.request_id,
        details=details,
    )


def _unit_event(actor: Actor, move: Move, account: str | None) -> events.Pending:
    """A unit's move, as the general path records it (store/claims.py)."""
    return events.Pending(
        move.kind,
        move.unit,
        actor_accessor=actor.accessor,
        actor_role=actor.role,
        target=move.destination or move.source,
        workload=move.workload,
        account=account,
        request_id=actor.request_id,
        details={
            "from": move.source,
            "to": move.destination,
            "why": move.why,
            **(move.details or {}),
        },
    )


def _store_dedication(cached: Cached, rededicated: Rededicated, number: int) -> None:
    cached.spec = rededication.stored(
        cached.spec,
        cached.snapshot,
        cached.planner.index,
        cached.explainer,
        cached.dedication_topology(),
        rededicated,
        number,
        cached.planner.workloads,
    )


def _made(decided: Decided) -> list[DedicationCreated]:
    """The hosts a batch's VMs take by implicit dedication: claimed, added by a count's
    change, or moved off a target."""
    return [
        *(made for claim in decided.accepted for made in claim.result.dedications_created),
        *(made for rescale in decided.rescaled for made in rescale.result.dedications_created),
        *(made for change in decided.retargeted for made in change.made),
    ]


def _releasing(decided: Decided) -> list[Removed | Rescaled]:
    """The deletions and count changes of a batch, whose last units on a host may end
    its implicit dedication."""
    return [*decided.removed, *decided.rescaled]


def _released_so_far(state: PlanState) -> int:
    kept = state.found_family_state(DedicationState)
    return len(kept.released) if kept is not None else 0


def _released_since(state: PlanState, since: int) -> list[tuple[int, Owner]]:
    """The hosts whose implicit dedication a release on `state` ended, since `since`."""
    kept = state.found_family_state(DedicationState)
    return kept.released[since:] if kept is not None else []


def _made_so_far(state: PlanState) -> tuple[int, int]:
    """How many events and implicit dedications `state` holds before a run on it."""
    kept = state.found_family_state(DedicationState)
    return len(state.events), len(kept.dedicated) if kept is not None else 0


def _made_since(result: PlanResult, since: tuple[int, int]) -> None:
    """The result's events and implicit dedications of its own run: the loop reports a
    state's whole lists, and the live world's state holds those of the changes before
    it (stored already)."""
    events, made = since
    result.events = result.events[events:]
    result.dedications_created = result.dedications_created[made:]


def _only_implicit_dedications(result: PlanResult) -> bool:
    """Whether all the run made, besides placements, is hosts implicitly dedicated to
    the accounts of the VMs that took them (a stored row each, the batch writes it); a
    failure event or any other dedication is the general path's to write."""
    return all(event.kind == IMPLICIT_EVENT for event in result.events) and all(
        made.implicit for made in result.dedications_created
    )


def _fenced_write(connection: Any, fence: Fence | None, seen: int, rows: Rows) -> batch.Stored:
    """`batch.write` in `connection`'s transaction, inside `fence` when there is one."""
    if fence is not None:
        fence.opened(connection)
    stored = batch.write(connection, seen, *rows)
    if fence is not None:
        fence.closing(connection)
    return stored


def _committed(stored: batch.Stored) -> Committed:
    ids = {f"workload:{name}": id_ for name, id_ in stored.workload_ids.items()}
    ids.update(stored.unit_ids)
    ids.update({f"target:{name}": id_ for name, id_ in stored.target_ids.items()})
    rows: dict[str, list[events.Written]] = {}
    for event in stored.events:
        rows.setdefault(event.workload or "", []).append(event)
    return stored.revision, ids, rows


def _taken_in_view(
    decided: Decided, on: Decided | None, ticket: Ticket, spec: WorkloadSpec, world: Snapshot
) -> bool:
    """Whether the claim of the batch that took the name (not stored yet) belongs to an
    account the ticket's caller sees."""
    reach = change_scope.reach_of(ticket.actor, world)
    if reach is None:
        return True
    for accepted in (*(on.accepted if on is not None else ()), *decided.accepted):
        if accepted.workload.name == spec.name:
            return accepted.spec.account in reach
    return False


def _fields(spec: WorkloadSpec) -> dict[str, Any]:
    """A request's fields that may read other workloads (`READS_OTHERS`)."""
    return {key: getattr(spec, key) for key in READS_OTHERS}


def _claimable(spec: WorkloadSpec) -> bool:
    """A claim the cache can take: one that reads no other workload, or reads them as
    `coupling.CLAIMABLE` says (near, avoid, a Juju directive). An account and an offering
    are read from the cached world's tenancy and offerings, as the whole spec's loader
    reads them."""
    return claimable(_fields(spec))


def _named(workload: Workload) -> set[str]:
    """The other workloads a workload's near and avoid terms name, and those whose units
    its Juju directives place it beside."""
    named: set[str] = set()
    for request in (workload.request(Near), workload.request(Avoid)):
        if request is not None:
            named.update(term.workload for term in request.terms if not term.mirrored)
    directed = directed_of(workload)
    if directed is not None:
        named.update(
            plan.beside.split("/", 1)[0] for plan in directed.units.values() if plan.beside
        )
    named.discard(workload.name)
    return named


def _mirrored(workloads: dict[str, Workload], reader: Workload) -> dict[str, Workload]:
    """Each workload `reader` avoids, with the mirrored term the loader gives it
    (policy.affinity.mirror_avoids), as a world loaded whole would hold it."""
    avoided = reader.request(Avoid)
    if avoided is None:
        return {}
    found: dict[str, Workload] = {}
    for term in avoided.terms:
        other = workloads.get(term.workload)
        if other is None or term.mirrored or other is reader or term.workload in found:
            continue
        mirrored = mirror_avoids([reader, other])[1]
        if mirrored is not other:
            found[term.workload] = mirrored
    return found


__all__ = ["Placement", "ReplicaWorld"]
