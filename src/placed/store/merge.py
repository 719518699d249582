"""What the world becomes when spec documents are applied to it, before anything is
written: pure functions over a `Snapshot`.

Applying creates or updates what a document names and never deletes what it does not
name (`prune` deletes what the document defined before and names no more), as `kubectl
apply` does. Each location, target and workload belongs to the document that first
defined it: a second document defining the same name is an error naming both, so two
teams' files never silently overwrite each other.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from placed.spec.schema import LocationSpec, SpecDocument
from placed.store.world import (
    DOCUMENT_SETTINGS,
    SPEC_SETTINGS,
    Snapshot,
    TargetRow,
    WorkloadRow,
)

# A location's keys that live in their own rows, not in its `spec`.
_OWN_ROWS = {"id", "children", "capacity", "status"}


@dataclass(frozen=True, slots=True)
class Conflict:
    """A name that two documents define."""

    what: str  # location, target, workload
    name: str
    document: str  # the document applying it now
    owner: str | None  # the document that defined it before
    pointer: str  # where the applying document names it

    @property
    def message(self) -> str:
        return (
            f"{self.what} {self.name!r} is defined by document {self.owner!r}; document "
            f"{self.document!r} defines it too (apply that document, or rename one)"
        )


@dataclass
class Applied:
    """The world after the documents, and what they changed."""

    after: Snapshot
    conflicts: list[Conflict]
    capacity: dict[str, dict[str, float]]  # each target the documents name: its capacity
    status: dict[str, str]  # admin states the documents set
    workload_accounts: dict[str, str | None]
    new_dedications: list[dict[str, Any]]
    # The keys the documents wrote or deleted in the world's large maps (the rest of
    # each map is `before`'s, entry for entry): a comparison with `before` reads these
    # rather than 10,000 targets and 30,000 placements.
    written: Written


@dataclass
class Written:
    nodes: set[str]  # in nodes, parents, node_documents and targets
    workloads: set[str]  # in workloads and workload_specs
    units: set[str]  # in units and placements


def _walk(
    locations: Sequence[LocationSpec], pointer: str, parent: str | None = None
) -> Iterator[tuple[LocationSpec, str | None, str]]:
    pending = [(location, parent, f"{pointer}/{i}") for i, location in enumerate(locations)]
    while pending:
        location, above, where = pending.pop(0)
        yield location, above, where
        pending.extend(
            (child, location.id, f"{where}/children/{i}")
            for i, child in enumerate(location.children)
        )


def apply(before: Snapshot, documents: Sequence[SpecDocument], prune: bool = False) -> Applied:
    """`before` with `documents` applied in order (each named: its `name`)."""
    after = before.copy()
    conflicts: list[Conflict] = []
    capacity: dict[str, dict[str, float]] = {}
    status: dict[str, str] = {}
    accounts: dict[str, str | None] = {}
    new_dedications: list[dict[str, Any]] = []
    written = Written(set(), set(), set())
    forgotten = False
    for index, document in enumerate(documents):
        name = document.name or "request"
        prefix = f"/{index}" if len(documents) > 1 else ""
        named_nodes: set[str] = set()
        for location, parent, pointer in _walk(document.inventory, f"{prefix}/inventory"):
            owner = after.node_documents.get(location.id, name)
            if location.id in after.nodes and owner != name:
                what = "target" if location.id in after.targets else "location"
                conflicts.append(Conflict(what, location.id, name, owner, pointer))
                continue
            named_nodes.add(location.id)
            written.nodes.add(location.id)
            after.nodes[location.id] = location.model_dump(
                mode="json", exclude=_OWN_ROWS, exclude_defaults=True
            )
            after.parents[location.id] = parent
            after.node_documents[location.id] = name
            if "status" in location.model_fields_set:
                status[location.id] = location.status
            if location.children:
                after.targets.pop(location.id, None)  # a target no more: sync refuses it
                continue
            capacity[location.id] = dict(location.capacity or {})
            old = after.targets.get(location.id)
            after.targets[location.id] = TargetRow(
                old.id if old else 0,
                old.generation if old else 0,
                status.get(location.id, old.admin_state if old else "up"),
                name,
                old.used if old else {},
                capacity[location.id],
                old.liveness if old else "unknown",
            )
        written.workloads.update(_document_settings(after, name, document, prune))
        named_workloads: set[str] = set()
        for i, workload in enumerate(document.workloads):
            known = after.workloads.get(workload.name)
            if known is not None and known.document != name:
                conflicts.append(
                    Conflict(
                        "workload",
                        workload.name,
                        name,
                        known.document,
                        f"{prefix}/workloads/{i}",
                    )
                )
                continue
            named_workloads.add(workload.name)
            written.workloads.add(workload.name)
            after.workload_specs[workload.name] = workload.model_dump(
                mode="json", exclude_defaults=True
            )
            mode = workload.mode or after.default_mode(name)
            after.workloads[workload.name] = WorkloadRow(
                known.id if known else 0,
                known.generation if known else 0,
                name,
                workload.account,
                mode,
            )
            accounts[workload.name] = workload.account
        if prune:
            leaving = [
                n
                for n, owner in after.node_documents.items()
                if owner == name and n not in named_nodes
            ]
            if leaving:
                written.nodes.update(leaving, _forget_nodes(after, leaving))
                forgotten = True
            for gone in [w for w, row in after.workloads.items() if row.document == name]:
                if gone not in named_workloads:
                    del after.workloads[gone]
                    del after.workload_specs[gone]
                    written.workloads.add(gone)
        _tenancy(after, document)
        for offering in document.offerings:
            entry = offering.model_dump(mode="json")
            after.offerings = [o for o in after.offerings if o["name"] != offering.name]
            after.offerings.append(entry)
        for dedication in document.dedications:
            # As the rows read back: `implicit` only when it is (store/world.py).
            entry = dedication.model_dump(mode="json", exclude_defaults=True)
            if entry not in after.dedications:
                # A document's dedication of a host held implicitly takes its place, as
                # the writer always replaced that row.
                after.dedications = [
                    d
                    for d in after.dedications
                    if not (d.get("implicit") and d["resource"] == entry["resource"])
                ]
                after.dedications.append(entry)
                new_dedications.append(entry)
        for key in SPEC_SETTINGS:
            if key in document.settings.model_fields_set:
                after.settings[key] = getattr(document.settings, key)
        if document.storage:
            pools = {pool.id: pool.model_dump(mode="json") for pool in document.storage}
            after.storage = [p for p in after.storage if p["id"] not in pools]
            after.storage.extend(pools.values())
        for running in document.running:
            # What a document says runs, runs: the unit is placed where it says.
            owner = running.unit.rpartition("/")[0]
            after.units.setdefault(running.unit, (0, owner))
            after.placements[running.unit] = running.target
            written.units.add(running.unit)
    # Units on targets that are gone run nowhere now: the plan places them again. Only
    # a prune forgets targets; otherwise only a unit the documents say runs can name one
    # that is not there.
    suspects = after.placements if forgotten else written.units
    for unit in [u for u in suspects if after.placements.get(u, "") not in after.nodes]:
        after.placements.pop(unit, None)
        written.units.add(unit)
    return Applied(after, conflicts, capacity, status, accounts, new_dedications, written)


def _document_settings(
    after: Snapshot, name: str, document: SpecDocument, prune: bool
) -> list[str]:
    """Document `name`'s settings after it is applied: those it names, over those it had
    (with prune, only those it names). In an older database every applied document gets
    its own entry, even an empty one, so the old world-wide default_mode
    (store/settings.py) never governs a document applied since; elsewhere a document
    that names no setting has none (a scoped caller's, which may name none, never
    writes a settings row). The workloads it does not name again are read with its new
    settings too: those whose rows it rewrites are returned."""
    named = {
        key: getattr(document.settings, key)
        for key in DOCUMENT_SETTINGS
        if key in document.settings.model_fields_set
    }
    had = after.document_settings.get(name)
    # A document applied before settings were documents' had the old world-wide default:
    # it keeps it until it names its own.
    if (
        had is None
        and after.legacy_mode is not None
        and any(row.document == name for row in after.workloads.values())
    ):
        had = {"default_mode": after.legacy_mode}
    now = named if prune or had is None else {**had, **named}
    if after.document_settings.get(name) == now or (
        # No row says the same as an empty one, but where the old row is.
        not now and name not in after.document_settings and after.legacy_mode is None
    ):
        return []
    after.document_settings[name] = now
    rewritten = [
        workload
        for workload, row in after.workloads.items()
        if row.document == name and "mode" not in after.workload_specs[workload]
    ]
    for workload in rewritten:
        row = after.workloads[workload]
        after.workloads[workload] = dataclasses.replace(row, mode=after.default_mode(name))
    return rewritten


def _forget_nodes(after: Snapshot, nodes: list[str]) -> list[str]:
    """Each of `nodes` gone, its children kept under its parent: one pass over the
    parents for all of them, not one for each. The children so moved are returned."""
    gone = set(nodes)
    moved = []
    for child, parent in list(after.parents.items()):
        if parent in gone and child not in gone:
            # The nearest ancestor that stays.
            while parent is not None and parent in gone:
                parent = after.parents.get(parent)
            after.parents[child] = parent
            moved.append(child)
    for node in nodes:
        after.nodes.pop(node, None)
        after.targets.pop(node, None)
        after.parents.pop(node, None)
        after.node_documents.pop(node, None)
    return moved


def _tenancy(after: Snapshot, document: SpecDocument) -> None:
    section = document.tenancy
    if section is None:
        return
    for account in section.accounts:
        after.accounts.setdefault(account, "ROOT")
    pending = [("ROOT", name, child) for name, child in section.domains.items()]
    while pending:
        parent, name, domain = pending.pop(0)
        after.domains.setdefault(name, parent)
        for account in domain.accounts:
            after.accounts.setdefault(account, name)
        pending.extend((name, child_name, child) for child_name, child in domain.children.items())
