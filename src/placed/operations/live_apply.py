"""An applied document as a delta on the live world (operations/replica.py): its difference
from what is stored, when that difference is workloads alone (new ones, counts changed,
and with prune those it no longer names), each then decided as a claim, a count change
or a delete is, and all of them committed together or none.

Targets added (with the locations they bring), and nothing else, are a delta too
(`Difference.added`): taken in by the live world as its index and plan state grow
(engine `TargetIndex.extended`, `PlanState.extend_to`).

Anything else the documents change (the inventory's nodes that were there, tenancy,
offerings, dedications, settings, storage, a document's settings, what runs) goes to the
general path, as does a workload changed otherwise than in its count, or given to
another document, account or mode: the whole plan judges those.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from placed.model import Inventory, Location, Target
from placed.spec.load import load_spec_data
from placed.spec.schema import SpecDocument, WorkloadSpec
from placed.store import batch, merge
from placed.store.claims import Extra
from placed.store.world import DEFINING, Snapshot

# Compared between the world read and the world after the documents: a delta leaves them
# (what defines the world but its workloads, and what runs where). The large maps are
# compared at the keys the documents wrote (merge.Written), the rest whole.
_BY_NODE = ("nodes", "parents", "node_documents", "targets")
_BY_UNIT = ("units", "placements")
_WHOLE = tuple(key for key in DEFINING if key not in _BY_NODE)


@dataclass(frozen=True, slots=True)
class Applying:
    """POST /v1/apply's ask: its documents as read against a world (the caller's scope
    applied), and whether what a document no longer names is deleted."""

    read: Callable[[Snapshot], list[SpecDocument]]
    prune: bool


@dataclass
class Difference:
    """What the documents change, as the changes the live world takes."""

    titles: list[str]
    documents: list[SpecDocument]
    named: set[str]
    created: list[tuple[WorkloadSpec, str]] = field(default_factory=list)  # spec, document
    counted: list[tuple[WorkloadSpec, int]] = field(default_factory=list)  # spec, generation
    deleted: list[str] = field(default_factory=list)
    # Nodes new to the inventory (locations and targets), in the order the world after
    # holds them, and that world: a difference of these alone.
    added: list[str] = field(default_factory=list)
    after: Snapshot | None = None

    @property
    def empty(self) -> bool:
        return not (self.created or self.counted or self.deleted or self.added)

    def notes(self, before: Snapshot, prune: bool) -> list[Extra]:
        """The documents' events, as the general path writes them."""
        deleted: dict[str, list[str]] = {}
        for gone in self.deleted:
            deleted.setdefault(str(before.workloads[gone].document), []).append(f"workload {gone}")
        return document_events(self.documents, deleted, prune)


def document_events(
    documents: list[SpecDocument], deleted: dict[str, list[str]], prune: bool
) -> list[Extra]:
    """A `document.applied` event per document, and a `document.pruned` one for each
    whose prune deleted something, naming what (`deleted`, by document)."""
    found: list[Extra] = []
    for document in documents:
        name = str(document.name)
        found.append(
            Extra(
                "document.applied",
                name,
                details={"prune": prune, "workloads": [w.name for w in document.workloads]},
            )
        )
        if deleted.get(name):
            found.append(Extra("document.pruned", name, details={"deleted": deleted[name]}))
    return found


def difference(snapshot: Snapshot, documents: list[SpecDocument], prune: bool) -> Difference | None:
    """The documents' difference from `snapshot` as workloads created, counts changed and
    workloads deleted; None when anything else differs (the general path's)."""
    applied = merge.apply(snapshot, documents, prune)
    after = applied.after
    if applied.conflicts or applied.new_dedications:
        return None
    written = applied.written
    added = [node for node in written.nodes if node not in snapshot.nodes]
    if any(getattr(after, key) != getattr(snapshot, key) for key in _WHOLE) or not (
        all(
            _same_at(getattr(after, key), getattr(snapshot, key), written.nodes, added)
            for key in _BY_NODE
        )
        and all(
            _same_at(getattr(after, key), getattr(snapshot, key), written.units) for key in _BY_UNIT
        )
    ):
        return None
    titles = [str(document.name) for document in documents]
    if added:
        # Nodes added, and nothing else: no workload of the documents new or changed.
        if any(
            after.workload_specs.get(name) != snapshot.workload_specs.get(name)
            or after.workloads.get(name) != snapshot.workloads.get(name)
            for name in written.workloads
        ) or len(after.workloads) != len(snapshot.workloads):
            return None
        order = {node: k for k, node in enumerate(after.nodes)}
        added.sort(key=order.__getitem__)
        specs = {w.name: w for document in documents for w in document.workloads}
        return Difference(titles, documents, set(specs), added=added, after=after)
    specs = {w.name: w for document in documents for w in document.workloads}
    found = Difference(titles, documents, set(specs))
    # In the order of `after`'s workloads, as a whole plan reads them: those stored by
    # id, then the new ones as the documents name them.
    position = {name: k for k, name in enumerate(specs)}
    for name in sorted(
        written.workloads,
        key=lambda n: (
            (0, snapshot.workloads[n].id) if n in snapshot.workloads else (1, position[n])
        ),
    ):
        stored = after.workload_specs.get(name)
        if stored is None:
            continue  # deleted: below
        row = after.workloads[name]
        was = snapshot.workloads.get(name)
        if was is None:
            found.created.append((specs[name], str(row.document)))
            continue
        if stored == snapshot.workload_specs[name]:
            if row != was:
                return None  # its mode read again under another default
            continue
        if (row.document, row.account, row.mode) != (was.document, was.account, was.mode):
            return None
        if count_aside(stored) != count_aside(snapshot.workload_specs[name]):
            return None
        found.counted.append((specs[name], was.generation))
    found.deleted = [name for name in snapshot.workloads if name not in after.workloads]
    return found


_ABSENT = object()


def _same_at(
    after: dict[str, Any],
    before: dict[str, Any],
    written: set[str],
    added: Sequence[str] = (),
) -> bool:
    """Whether `after`, a copy of `before` changed only at `written`, equals it but for
    the keys `added` (nodes new to it, which `after` may hold and `before` does not)."""
    new = set(added)
    return len(after) == len(before) + sum(1 for key in new if key in after) and all(
        after.get(key, _ABSENT) == before.get(key, _ABSENT) for key in written if key not in new
    )


def count_aside(stored: dict[str, Any]) -> dict[str, Any]:
    """A stored spec without its unit count: what a count-only change leaves alone."""
    return {key: value for key, value in stored.items() if key != "units"}


@dataclass(frozen=True)
class Grown:
    """What nodes added to the inventory make of the live world's: the inventory with
    them (their locations under their parents, the new targets after every other, in the
    order the store numbers them), the new targets, every kind they bring, and their rows
    (batch.NewNode, parents first)."""

    inventory: Inventory
    targets: tuple[Target, ...]
    kinds: frozenset[str]
    rows: tuple[batch.NewNode, ...]


def grown(after: Snapshot, added: Sequence[str], inventory: Inventory) -> Grown | None:
    """The live world's `inventory` with the nodes `added` in `after` (a `Difference`'s)
    read as the whole world's loader reads them: each under its ancestors, whose rules
    (and dedication in force) it inherits. None when a node goes under a target (a target
    with children is the general path's refusal)."""
    new = set(added)
    if any(after.parents.get(node) in after.targets for node in added):
        return None
    kept: set[str] = set()
    for node in added:
        at: str | None = node
        while at is not None and at not in kept:
            kept.add(at)
            at = after.parents.get(at)
    document: dict[str, Any] = {
        "version": 1,
        "name": "world",
        "inventory": after.inventory_entries(kept),
    }
    # What a dedication in force there gives them: the tenancy it names, and the
    # dedications of the nodes they sit under.
    if len(after.domains) > 1 or after.accounts:
        document["tenancy"] = after.tenancy()
    dedications = [entry for entry in after.dedications if entry.get("resource") in kept]
    if dedications:
        document["dedications"] = dedications
    loaded = load_spec_data(document, "world").inventory
    by_id = {location.id: location for location in loaded.locations()}
    under: dict[str | None, list[Location]] = {}
    for node in added:
        parent = after.parents.get(node)
        if parent not in new:
            under.setdefault(parent, []).append(by_id[node])
    order = {name: k for k, name in enumerate(after.targets)}
    targets = tuple(sorted((t for t in loaded.targets if t.id in new), key=lambda t: order[t.id]))
    roots = _grafted(inventory.roots, under, after.parents)
    rows = tuple(
        batch.NewNode(
            node,
            after.parents.get(node),
            str(after.nodes[node].get("kind", "host")),
            tuple(after.nodes[node].get("tags", [])),
            dict(after.nodes[node]),
            after.node_documents.get(node),
            node in after.targets,
            after.targets[node].admin_state if node in after.targets else "up",
            tuple(after.targets[node].capacity.items()) if node in after.targets else (),
        )
        for node in sorted(
            added, key=lambda n: (n in after.targets, order.get(n, 0), _depth(after, n))
        )
    )
    return Grown(
        Inventory(roots=roots, targets=(*inventory.targets, *targets)),
        targets,
        frozenset(by_id[node].kind for node in added),
        rows,
    )


def _depth(after: Snapshot, node: str) -> int:
    depth = 0
    at = after.parents.get(node)
    while at is not None:
        depth += 1
        at = after.parents.get(at)
    return depth


def _grafted(
    roots: tuple[Location, ...],
    under: Mapping[str | None, Sequence[Location]],
    parents: Mapping[str, str | None],
) -> tuple[Location, ...]:
    """`roots` with each location of `under` the last child of the location it names
    (None: a root), each changed location's ancestors made again, every other one kept.
    `parents`: each node's parent, which finds a location's path from its root without
    walking the tree."""
    found: dict[str, Location] = {}
    changed: dict[str, int] = {}  # every location whose children change, by depth
    for parent in under:
        if parent is None:
            continue
        path: list[str] = []
        at: str | None = parent
        while at is not None:
            path.append(at)
            at = parents.get(at)
        path.reverse()
        level: Sequence[Location] = roots
        for depth, name in enumerate(path):
            location = found.get(name) or next(child for child in level if child.id == name)
            found[name] = location
            changed[name] = depth
            level = location.children
    made: dict[str, Location] = {}
    for name in sorted(changed, key=changed.__getitem__, reverse=True):
        location = found[name]
        children = tuple(made.get(child.id, child) for child in location.children)
        made[name] = dataclasses.replace(location, children=(*children, *under.get(name, ())))
    return (*(made.get(root.id, root) for root in roots), *under.get(None, ()))
