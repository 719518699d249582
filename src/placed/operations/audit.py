"""Every change leaves a trail: one event per object it creates, changes or deletes, with
the actor (accessor and role) and the request id, in the same transaction.

The objects are the change's diff (`change_scope.touched`, the same reading the scope
rule judges), so an apply that creates two targets and the prune that deletes them each
write their events whatever route carried them. What a route records already with more
to say (a target taken down, a dedication made, an offering created through its own
route, a setting put) is not written twice: an event of the same kind and subject wins.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from typing import Any

from placed.operations.change_scope import CHANGED, CREATED, DELETED, Touched, touched
from placed.store.claims import Extra
from placed.store.world import Snapshot

# The verb each kind's events use: CloudStack's words for dedications and offerings
# (SERVICE.md's `dedication.updated`, `dedication.released`), settings only change.
_VERBS: dict[str, dict[str, str]] = {
    "dedication": {CREATED: "created", CHANGED: "updated", DELETED: "released"},
    "offering": {CREATED: "created", CHANGED: "updated", DELETED: "deleted"},
    "setting": {CREATED: "changed", CHANGED: "changed", DELETED: "changed"},
}
_KINDS = {"storage pool": "storage"}


def kind_of(item: Touched) -> str:
    noun = _KINDS.get(item.kind, item.kind)
    return f"{noun}.{_VERBS.get(item.kind, {}).get(item.how, item.how)}"


def events(
    before: Snapshot,
    after: Snapshot,
    made_for: Mapping[str, str],
    recorded: Iterable[Extra] = (),
    workloads: Collection[str] | None = None,
) -> list[Extra]:
    """The change's audit events, those `recorded` already left out. `workloads`: the
    only ones the change may have changed (change_scope.touched's `only`)."""
    seen = {(extra.kind, extra.subject) for extra in recorded}
    found: list[Extra] = []
    for item in touched(before, after, made_for, workloads):
        if item.kind == "target" and item.how == CHANGED and _only_admin_state(before, after, item):
            continue  # target.down, target.up and target.maintenance say it, with why
        kind = kind_of(item)
        if (kind, item.name) in seen:
            continue
        found.append(_event(kind, item, before, after, made_for))
    found.extend(_document_settings(before, after))
    return found


def created_nodes(before: Snapshot, after: Snapshot, names: Iterable[str]) -> list[Extra]:
    """The events `events` writes for the locations and targets `names` that `after`
    adds and `before` has not (a live world's apply that adds them alone), in that order."""
    found: list[Extra] = []
    for name in names:
        item = Touched("target" if name in after.targets else "location", name, CREATED)
        found.append(_event(kind_of(item), item, before, after, {}))
    return found


def _document_settings(before: Snapshot, after: Snapshot) -> list[Extra]:
    """A `setting.changed` per key a document's settings change, naming the document (a
    scoped caller can change none: apply refuses its settings, so the scope rule's diff
    does not list them)."""
    if before.document_settings == after.document_settings:
        return []
    found: list[Extra] = []
    for document in sorted(before.document_settings.keys() | after.document_settings.keys()):
        was = before.document_settings.get(document, {})
        now = after.document_settings.get(document, {})
        for key in sorted(was.keys() | now.keys()):
            if was.get(key) != now.get(key):
                details = {
                    "how": CHANGED,
                    "key": key,
                    "value": now.get(key),
                    "was": was.get(key),
                    "document": document,
                }
                found.append(Extra("setting.changed", key, details=details))
    return found


def _only_admin_state(before: Snapshot, after: Snapshot, item: Touched) -> bool:
    was, now = before.targets.get(item.name), after.targets.get(item.name)
    return (
        was is not None
        and now is not None
        and was.admin_state != now.admin_state
        and was.capacity == now.capacity
        and before.nodes.get(item.name) == after.nodes.get(item.name)
        and before.parents.get(item.name) == after.parents.get(item.name)
        and before.node_documents.get(item.name) == after.node_documents.get(item.name)
    )


def _event(
    kind: str, item: Touched, before: Snapshot, after: Snapshot, made_for: Mapping[str, str]
) -> Extra:
    details: dict[str, Any] = {"how": item.how}
    if item.kind == "workload":
        row = after.workloads.get(item.name) or before.workloads.get(item.name)
        spec = after.workload_specs.get(item.name)
        if spec is not None:
            details["spec"] = spec
        if row is not None and row.document is not None:
            details["document"] = row.document
        return Extra(
            kind,
            item.name,
            workload=item.name,
            account=row.account if row is not None else None,
            details=details,
        )
    if item.kind in ("target", "location"):
        document = after.node_documents.get(item.name, before.node_documents.get(item.name))
        if document is not None:
            details["document"] = document
        parent = after.parents.get(item.name, before.parents.get(item.name))
        if parent is not None:
            details["parent"] = parent
        target = after.targets.get(item.name) or before.targets.get(item.name)
        if target is not None and target.capacity:
            details["capacity"] = dict(target.capacity)
        if item.name in made_for:
            details["made_for"] = made_for[item.name]
        return Extra(
            kind,
            item.name,
            target=item.name if item.kind == "target" else None,
            workload=made_for.get(item.name),
            details=details,
        )
    if item.kind == "setting":
        details.update(
            key=item.name, value=after.settings.get(item.name), was=before.settings.get(item.name)
        )
    return Extra(kind, item.name, details=details)
