"""The world as rows, read back as one spec document: what a plan starts from.

The rows keep each location's, target's and workload's own spec keys, so the document
read here goes through the spec's own schema and rules (`spec.load.load_spec_data`), and
the service never keeps a second copy of them. What already runs comes back as
`running:`, except the units a plan derives again every time (mapping owners are a pure
function of the live targets; every-mode units are one per compatible target).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from placed.model.tenancy import ROOT
from placed.store import revision, settings
from placed.store.tables import (
    Account,
    DedicationRow,
    Domain,
    Location,
    OfferingRow,
    Placement,
    Target,
    TargetLiveness,
    TargetResource,
    Unit,
    Workload,
)

# Settings of the whole world: rows that are the world document's `settings:`.
SPEC_SETTINGS = (
    "implicit_dedication",
    "heartbeat_interval_s",
    "heartbeat_timeout_s",
    "disruption_guard_min_targets",
)
# Settings of a document: each governs only the workloads its own document defines
# (store/settings.py keeps them, a row per document).
DOCUMENT_SETTINGS = ("default_mode",)
STORAGE_SETTING = "storage"
# The revision of the last change that was more than claims of new workloads: a replica
# whose world is newer than it reads the claims since from the rows alone.
CHANGED_SETTING = "world.changed"
# The revision of the last change a whole plan made (operations/transactions.py): a
# replica whose world is newer than it reads every change since from the rows alone, as
# the live world's deltas wrote them (store/batch.py: claims, deletes, count changes,
# targets' changes of state and the units they moved, targets added, dedications and
# settings); a replica that knows only CHANGED_SETTING reads the whole world after any
# of them.
RESHAPED_SETTING = "world.reshaped"
# The revision of the last change of the world's rules: a location, an offering, a
# dedication, a setting or a storage pool. A change planned on rules older than the
# current ones is stale: its placements were judged by rules that no longer hold, and
# no target generation of theirs records it (a dedication touches no target row).
RULES_SETTING = "world.rules"
# A snapshot's fields that define the world but for its workloads and targets' rows.
DEFINING = (
    "nodes",
    "parents",
    "node_documents",
    "domains",
    "accounts",
    "offerings",
    "dedications",
    "settings",
    "storage",
    "document_settings",
    "legacy_mode",
)
DERIVED_MODES = frozenset({"mapping", "every"})


@dataclass(frozen=True, slots=True)
class TargetRow:
    id: int
    generation: int
    admin_state: str
    document: str | None
    used: dict[str, float]
    capacity: dict[str, float]
    # From heartbeats, apart from the admin's state: up, down (the controller found it
    # stale) or unknown (never heartbeated). Down takes nothing, as an admin's down.
    liveness: str = "unknown"

    @property
    def takes_work(self) -> bool:
        return self.admin_state == "up" and self.liveness != "down"


@dataclass(frozen=True, slots=True)
class WorkloadRow:
    id: int
    generation: int
    document: str | None
    account: str | None
    mode: str


@dataclass
class Snapshot:
    """The rows a plan starts from, and what a commit checks them against."""

    revision: int
    # Every node of the inventory by id: its own keys, its parent, its document, and
    # whether it is a target (a leaf with a row in `targets`).
    nodes: dict[str, dict[str, Any]] = field(default_factory=dict)
    parents: dict[str, str | None] = field(default_factory=dict)
    node_documents: dict[str, str | None] = field(default_factory=dict)
    targets: dict[str, TargetRow] = field(default_factory=dict)
    workloads: dict[str, WorkloadRow] = field(default_factory=dict)
    workload_specs: dict[str, dict[str, Any]] = field(default_factory=dict)
    # Each unit that exists, by name -> (its id, its workload), and where the placed ones are.
    units: dict[str, tuple[int, str]] = field(default_factory=dict)
    placements: dict[str, str] = field(default_factory=dict)
    domains: dict[str, str | None] = field(default_factory=dict)
    accounts: dict[str, str] = field(default_factory=dict)
    offerings: list[dict[str, Any]] = field(default_factory=list)
    dedications: list[dict[str, Any]] = field(default_factory=list)
    settings: dict[str, Any] = field(default_factory=dict)
    storage: list[dict[str, Any]] = field(default_factory=list)
    rules_revision: int = 0  # RULES_SETTING as read
    # Each applied document's own settings (DOCUMENT_SETTINGS), by document name.
    document_settings: dict[str, dict[str, Any]] = field(default_factory=dict)
    legacy_mode: str | None = None  # settings.LEGACY_DEFAULT_MODE, in an older database

    def copy(self) -> Snapshot:
        """Another snapshot whose containers are its own (a change sets entries, as
        `dataclasses.replace` does for a row) sharing their values, which nothing
        changes in place: a deep copy of a 10,000-target world takes seconds."""
        return Snapshot(
            self.revision,
            dict(self.nodes),
            dict(self.parents),
            dict(self.node_documents),
            dict(self.targets),
            dict(self.workloads),
            dict(self.workload_specs),
            dict(self.units),
            dict(self.placements),
            dict(self.domains),
            dict(self.accounts),
            list(self.offerings),
            list(self.dedications),
            dict(self.settings),
            list(self.storage),
            self.rules_revision,
            dict(self.document_settings),
            self.legacy_mode,
        )

    def defines_same(self, other: Snapshot) -> bool:
        """Whether `other` defines the same world (placements apart)."""
        return all(
            getattr(self, key) == getattr(other, key) for key in (*DEFINING, "workload_specs")
        ) and {
            n: (t.capacity, t.admin_state, t.liveness == "down") for n, t in self.targets.items()
        } == {
            n: (t.capacity, t.admin_state, t.liveness == "down") for n, t in other.targets.items()
        }

    def default_mode(self, document: str | None) -> str:
        """The mode of `document`'s workloads that name none."""
        return settings.default_mode(self.document_settings, self.legacy_mode, document)

    def workload_spec(self, name: str) -> dict[str, Any]:
        """Workload `name` as the world document holds it: with its own document's
        default mode written in, since the world document has one `settings:` for all."""
        spec = self.workload_specs[name]
        if "mode" in spec:
            return spec
        mode = self.default_mode(self.workloads[name].document)
        return spec if mode == "allocation" else {**spec, "mode": mode}

    def depth(self, resource: str) -> int:
        """How many locations are above a node (a storage pool: one more than where it
        is). Dedications apply outermost first, so none is absorbed by a wider one of
        the same owner read after it."""
        at = next((p.get("at") for p in self.storage if p.get("id") == resource), None)
        extra = 0 if at is None else 1
        node = self.parents.get(resource if at is None else str(at))
        while node is not None:
            extra += 1
            node = self.parents.get(node)
        return extra

    def document(self, name: str = "store") -> dict[str, Any]:
        """The whole world as one spec document."""
        document: dict[str, Any] = {
            "version": 1,
            "name": name,
            "inventory": self.inventory_entries(),
            "workloads": [self.workload_spec(w) for w in self.workloads],
        }
        if self.settings:
            document["settings"] = dict(self.settings)
        if len(self.domains) > 1 or self.accounts:
            document["tenancy"] = self.tenancy()
        if self.offerings:
            document["offerings"] = list(self.offerings)
        if self.dedications:
            document["dedications"] = list(self.dedications)
        if self.storage:
            document["storage"] = list(self.storage)
        running = self.running()
        if running:
            document["running"] = running
        return document

    def inventory_entries(self, only: Collection[str] | None = None) -> list[dict[str, Any]]:
        """The inventory as a spec's entries, a tree; with `only`, the entries of those
        nodes alone, each under its ancestors (which `only` holds too)."""
        children: dict[str | None, list[str]] = defaultdict(list)
        for node in self.nodes if only is None else (n for n in self.nodes if n in only):
            children[self.parents.get(node)].append(node)

        def tree(node: str) -> dict[str, Any]:
            entry = {"id": node, **self.nodes[node]}
            target = self.targets.get(node)
            if target is not None:
                if target.capacity:
                    entry["capacity"] = dict(target.capacity)
                if not target.takes_work:
                    entry["status"] = "down"  # down, maintenance, stale: nothing new
            below = children.get(node)
            if below:
                entry["children"] = [tree(child) for child in below]
            return entry

        return [tree(root) for root in children.get(None, [])]

    def running(self) -> list[dict[str, str]]:
        """The units that stay where they are while a plan runs, as `running:` entries,
        in unit order per workload (a workload's first units take a `to:`'s first entries).
        A workload's units past its `units:` are left out: the plan removes them."""
        out: list[dict[str, str]] = []
        per_workload: dict[str, list[tuple[int, str]]] = defaultdict(list)
        for unit, (_, workload) in self.units.items():
            target = self.placements.get(unit)
            row = self.workloads.get(workload)
            if target is None or row is None or row.mode in DERIVED_MODES:
                continue
            ordinal = unit.rpartition("/")[2]
            if ordinal.isdigit():
                per_workload[workload].append((int(ordinal), unit))
        for workload, units in per_workload.items():
            wanted = int(self.workload_specs[workload].get("units", 1))
            for _, unit in sorted(units)[:wanted]:
                out.append({"unit": unit, "target": self.placements[unit]})
        return out

    def tenancy(self) -> dict[str, Any]:
        kids: dict[str, list[str]] = defaultdict(list)
        for name, parent in self.domains.items():
            if parent is not None:
                kids[parent].append(name)
        accounts: dict[str, list[str]] = defaultdict(list)
        for account, home in self.accounts.items():
            accounts[home].append(account)

        def section_of(name: str) -> dict[str, Any]:
            entry: dict[str, Any] = {}
            if accounts.get(name):
                entry["accounts"] = accounts[name]
            if kids.get(name):
                entry["children"] = {child: section_of(child) for child in kids[name]}
            return entry

        section: dict[str, Any] = {"domains": {child: section_of(child) for child in kids[ROOT]}}
        if accounts.get(ROOT):
            section["accounts"] = accounts[ROOT]
        return section


def read(session: Session) -> Snapshot:
    """Everything a plan needs, read in one transaction (so it is one moment's world)."""
    snapshot = Snapshot(revision=revision.current(session))
    # The session's connection (the same transaction) for the queries of a row per
    # target, unit or workload: the ORM's handling of a plain row costs more than the row.
    rows = session.connection()
    locations = rows.execute(
        select(
            Location.id, Location.name, Location.parent_id, Location.spec, Location.document
        ).order_by(Location.id)
    ).all()
    location_names = {row.id: row.name for row in locations}
    for row in locations:
        snapshot.nodes[row.name] = dict(row.spec)
        snapshot.parents[row.name] = location_names.get(row.parent_id) if row.parent_id else None
        snapshot.node_documents[row.name] = row.document
    resources: dict[int, dict[str, tuple[float, float]]] = defaultdict(dict)
    for target_id, name, capacity, used in rows.execute(
        select(
            TargetResource.target_id,
            TargetResource.name,
            TargetResource.capacity,
            TargetResource.used,
        )
    ):
        resources[target_id][name] = (capacity, used)
    liveness = dict(rows.execute(select(TargetLiveness.target_id, TargetLiveness.liveness)).all())
    target_names: dict[int, str] = {}
    # Rows, not ORM objects, and only the columns read here (not the tags and properties
    # columns): a world is read by every general plan and every rebuild of a replica's
    # cache, and an ORM object (and two more JSON documents) per target cost more than
    # the row.
    for target in rows.execute(
        select(
            Target.id,
            Target.name,
            Target.location_id,
            Target.spec,
            Target.document,
            Target.admin_state,
            Target.generation,
        ).order_by(Target.id)
    ):
        target_names[target.id] = target.name
        found = resources.get(target.id, {})
        snapshot.nodes[target.name] = dict(target.spec)
        parent = location_names.get(target.location_id) if target.location_id else None
        snapshot.parents[target.name] = parent
        snapshot.node_documents[target.name] = target.document
        snapshot.targets[target.name] = TargetRow(
            target.id,
            target.generation,
            target.admin_state,
            target.document,
            {name: used for name, (_, used) in found.items()},
            {name: capacity for name, (capacity, _) in found.items()},
            liveness.get(target.id, "unknown"),
        )
    domain_rows = session.execute(select(Domain.id, Domain.name, Domain.parent_id)).all()
    domain_names = {row.id: row.name for row in domain_rows}
    snapshot.domains = {
        row.name: domain_names.get(row.parent_id) if row.parent_id else None
        for row in sorted(domain_rows, key=lambda r: r.id)
    }
    account_rows = session.execute(
        select(Account.id, Account.name, Account.domain_id).order_by(Account.id)
    ).all()
    account_names = {row.id: row.name for row in account_rows}
    snapshot.accounts = {row.name: domain_names[row.domain_id] for row in account_rows}
    snapshot.document_settings = settings.documents(session)
    legacy = settings.get(session, settings.LEGACY_DEFAULT_MODE)
    snapshot.legacy_mode = str(legacy) if legacy is not None else None
    workload_names: dict[int, str] = {}
    for workload in rows.execute(
        select(
            Workload.id,
            Workload.name,
            Workload.account_id,
            Workload.spec,
            Workload.document,
            Workload.generation,
        ).order_by(Workload.id)
    ):
        workload_names[workload.id] = workload.name
        snapshot.workload_specs[workload.name] = dict(workload.spec)
        snapshot.workloads[workload.name] = WorkloadRow(
            workload.id,
            workload.generation,
            workload.document,
            account_names.get(workload.account_id) if workload.account_id else None,
            str(workload.spec.get("mode") or snapshot.default_mode(workload.document)),
        )
    for unit_id, name, workload_id in rows.execute(
        select(Unit.id, Unit.name, Unit.workload_id).order_by(Unit.workload_id, Unit.ordinal)
    ):
        snapshot.units[name] = (unit_id, workload_names[workload_id])
    unit_names = {unit_id: name for name, (unit_id, _) in snapshot.units.items()}
    for unit_id, target_id in rows.execute(select(Placement.unit_id, Placement.target_id)):
        snapshot.placements[unit_names[unit_id]] = target_names[target_id]
    snapshot.offerings = world_offerings(session)
    snapshot.dedications = dedication_entries(session, domain_names, account_names)
    snapshot.settings = world_settings(session)
    snapshot.storage = list(settings.get(session, STORAGE_SETTING, []) or [])
    snapshot.rules_revision = int(settings.get(session, RULES_SETTING, 0) or 0)
    snapshot.dedications.sort(key=lambda entry: snapshot.depth(entry["resource"]))
    return snapshot


def dedication_entries(
    session: Session,
    domain_names: dict[int, str] | None = None,
    account_names: dict[int, str] | None = None,
) -> list[dict[str, Any]]:
    """Every dedication row as a spec's `dedications:` entry, by id (`Snapshot.dedications`
    before its sort by depth); the names of domains and accounts read when not given."""
    if domain_names is None:
        domain_names = {id_: name for id_, name in session.execute(select(Domain.id, Domain.name))}
    if account_names is None:
        account_names = {
            id_: name for id_, name in session.execute(select(Account.id, Account.name))
        }
    found: list[dict[str, Any]] = []
    for dedication in session.scalars(select(DedicationRow).order_by(DedicationRow.id)):
        entry: dict[str, Any] = {
            "resource": dedication.resource,
            "domain": domain_names[dedication.domain_id],
        }
        if dedication.account_id is not None:
            entry["account"] = account_names[dedication.account_id]
        if dedication.implicit:  # a host a plan gave an account: the world holds it too
            entry["implicit"] = True
        found.append(entry)
    return found


def world_offerings(session: Session) -> list[dict[str, Any]]:
    """Every service offering, in the order they were made."""
    return [
        {
            "name": row.name,
            "cpu": row.cpu,
            "memory": row.memory,
            "disk": row.disk,
            "dedicated": row.dedicated,
            "implicit": row.implicit,
        }
        for row in session.scalars(select(OfferingRow).order_by(OfferingRow.id))
    ]


def world_settings(session: Session) -> dict[str, Any]:
    """The settings of the whole world that are set (`Snapshot.settings`)."""
    found: dict[str, Any] = {}
    for key in SPEC_SETTINGS:
        value = settings.get(session, key)
        if value is not None:
            found[key] = value
    return found
