"""An applied document as a delta on the live world (service/replica.py): its difference
from what is stored, when that difference is workloads alone (new ones, counts changed,
and with prune those it no longer names), each then decided as a claim, a count change
or a delete is, and all of them committed together or none.

Anything else the documents change (the inventory, tenancy, offerings, dedications,
settings, storage, a document's settings, what runs) goes to the general path, as does
a workload changed otherwise than in its count, or given to another document, account
or mode: the whole plan judges those.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from placed.spec.schema import SpecDocument, WorkloadSpec
from placed.store import merge
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

    @property
    def empty(self) -> bool:
        return not (self.created or self.counted or self.deleted)

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
    if any(getattr(after, key) != getattr(snapshot, key) for key in _WHOLE) or not (
        all(
            _same_at(getattr(after, key), getattr(snapshot, key), written.nodes) for key in _BY_NODE
        )
        and all(
            _same_at(getattr(after, key), getattr(snapshot, key), written.units) for key in _BY_UNIT
        )
    ):
        return None
    titles = [str(document.name) for document in documents]
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


def _same_at(after: dict[str, Any], before: dict[str, Any], written: set[str]) -> bool:
    """Whether `after`, a copy of `before` changed only at `written`, equals it."""
    return len(after) == len(before) and all(
        after.get(key, _ABSENT) == before.get(key, _ABSENT) for key in written
    )


def count_aside(stored: dict[str, Any]) -> dict[str, Any]:
    """A stored spec without its unit count: what a count-only change leaves alone."""
    return {key: value for key, value in stored.items() if key != "units"}
