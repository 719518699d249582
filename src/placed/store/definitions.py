"""Write what applied documents define: locations, targets, workloads, tenancy,
offerings, dedications and settings, from the world before and after (store/merge.py).

Every row this changes is checked against the generation the snapshot saw: a target or
workload someone else changed since is a `StaleRow`, and the caller plans again.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any

from sqlalchemy import delete, insert, select, tuple_, update
from sqlalchemy.orm import Session

from placed.store import settings
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
    Workload,
    table_of,
)
from placed.store.world import RULES_SETTING, SPEC_SETTINGS, STORAGE_SETTING, Snapshot


class StaleRow(Exception):
    """A row changed since the snapshot was read: plan again on fresh rows."""

    def __init__(self, what: str, name: str) -> None:
        super().__init__(f"{what} {name} changed meanwhile")
        self.what = what
        self.name = name


class Refused(Exception):
    """A change the rows cannot take (a target with units cannot gain children)."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


@dataclass(frozen=True)
class Written:
    """What `write` changed: the targets whose generation it raised and the workloads
    it created, changed or deleted (their rows are this transaction's now)."""

    targets: set[str]
    workloads: set[str]


def write(
    session: Session,
    before: Snapshot,
    after: Snapshot,
    revision: int,
    used: Mapping[str, Mapping[str, float]] | None = None,
    workloads: Collection[str] | None = None,
) -> Written:
    """Bring the rows from `before` to `after` (both snapshots of this database). `used`:
    what each target uses once the change is done, written with a capacity it changes
    (a cut must not meet the usage of before: units leaving in the same change lower it
    only later, and `CHECK (used <= capacity)` holds at every statement). `workloads`:
    the only workloads `after` may define otherwise than `before` (a live world's delta
    knows them: 30,000 others need no comparing); None: any."""
    if int(settings.get(session, RULES_SETTING, 0) or 0) != before.rules_revision:
        raise StaleRow("rules", "of the world")
    if rules_changed(before, after):
        settings.put(session, RULES_SETTING, revision, bump=False)
    _tenancy(session, before, after)
    # A delta that leaves the inventory alone shares its containers with `before` (the
    # live world's delete): nothing of it to compare, at 10,000 targets.
    bumped = (
        set()
        if same_inventory(before, after)
        else _inventory(session, before, after, revision, used or {})
    )
    written = _workloads(session, before, after, revision, workloads)
    _offerings(session, before, after)
    _dedications(session, before, after, revision)
    for key in SPEC_SETTINGS:
        if after.settings.get(key) != before.settings.get(key) and key in after.settings:
            # Part of this change, at its revision (raised once per change, as a batch
            # raises it for the same setting).
            settings.put(session, key, after.settings[key], bump=False)
    if after.document_settings != before.document_settings:
        for name in before.document_settings.keys() | after.document_settings.keys():
            if after.document_settings.get(name) != before.document_settings.get(name):
                settings.put_document(session, name, after.document_settings.get(name))
    if after.storage != before.storage:
        settings.put(session, STORAGE_SETTING, after.storage, bump=False)
    return Written(bumped, written)


def same_inventory(before: Snapshot, after: Snapshot) -> bool:
    """Whether `after` holds `before`'s very inventory containers (so, unchanged)."""
    return (
        after.nodes is before.nodes
        and after.parents is before.parents
        and after.node_documents is before.node_documents
        and after.targets is before.targets
    )


def rules_changed(before: Snapshot, after: Snapshot) -> bool:
    """Whether `after` changes a rule every plan is judged by: a location that was there
    (its keys or its parent), an offering, a dedication, a setting (the world's or a
    document's) or a storage pool.
    New locations, domains and accounts change no judgement made before them."""
    for node, spec in () if same_inventory(before, after) else before.nodes.items():
        if node in before.targets:
            continue  # a target's own row is generation-checked
        if after.nodes.get(node) != spec or after.parents.get(node) != before.parents.get(node):
            return True
    return (
        before.offerings != after.offerings
        or before.dedications != after.dedications
        or before.storage != after.storage
        or any(before.settings.get(key) != after.settings.get(key) for key in SPEC_SETTINGS)
        # A document's default mode changes how its workloads are read (a new document's
        # entry judges only its own new workloads).
        or any(
            before.default_mode(name) != after.default_mode(name)
            for name in before.document_settings.keys() | after.document_settings.keys()
        )
    )


def _tenancy(session: Session, before: Snapshot, after: Snapshot) -> None:
    ids = {name: id_ for id_, name in session.execute(select(Domain.id, Domain.name))}
    for domain, parent in after.domains.items():  # parents come first (breadth first)
        if domain not in before.domains and parent is not None:
            row = Domain(name=domain, parent_id=ids[parent])
            session.add(row)
            session.flush()
            ids[domain] = row.id
    for account, domain in after.accounts.items():
        if account not in before.accounts:
            session.add(Account(name=account, domain_id=ids[domain]))
    session.flush()


def _inventory(
    session: Session,
    before: Snapshot,
    after: Snapshot,
    revision: int,
    used: Mapping[str, Mapping[str, float]],
) -> set[str]:
    bumped: set[str] = set()
    location_ids = {name: id_ for id_, name in session.execute(select(Location.id, Location.name))}
    # Inner nodes first, outermost first, so each parent has its id before its children:
    # new ones go in one bulk insert per depth (a flush per row is a round trip each).
    depth = _depths(after)
    waiting: list[dict[str, Any]] = []
    for node in sorted(after.nodes, key=lambda n: depth[n]):
        if node in after.targets:
            continue
        if node in before.targets:
            raise Refused(
                "target-has-children",
                f"{node} is a target; a target cannot become a location with children "
                "(its units and capacity would have nowhere to be)",
            )
        parent = after.parents.get(node)
        if parent is not None and parent not in location_ids:
            _insert_locations(session, waiting, location_ids)  # the parent is among them
        values: dict[str, Any] = {
            "parent_id": location_ids[parent] if parent else None,
            "kind": str(after.nodes[node].get("kind", "host")),
            "tags": list(after.nodes[node].get("tags", [])),
            "spec": after.nodes[node],
            "document": after.node_documents.get(node),
            "revision": revision,
        }
        if node in location_ids:
            if before.nodes.get(node) != after.nodes[node] or before.parents.get(node) != parent:
                session.execute(
                    update(Location).where(Location.id == location_ids[node]).values(values)
                )
        else:
            waiting.append({"name": node, **values})
    _insert_locations(session, waiting, location_ids)
    new_targets: list[tuple[dict[str, Any], Mapping[str, float]]] = []
    for node, target in sorted(after.targets.items(), key=lambda item: item[1].id or 1 << 62):
        parent = after.parents.get(node)
        values = {
            "location_id": location_ids[parent] if parent else None,
            "spec": after.nodes[node],
            "document": after.node_documents.get(node),
            "admin_state": target.admin_state,
            "revision": revision,
        }
        old = before.targets.get(node)
        if old is None:
            new_targets.append(({"name": node, "generation": 0, **values}, target.capacity))
            continue
        if (
            before.nodes.get(node) == after.nodes[node]
            and before.parents.get(node) == parent
            and old.capacity == target.capacity
            and old.admin_state == target.admin_state
        ):
            continue
        done = session.execute(
            update(Target)
            .where(Target.id == old.id, Target.generation == old.generation)
            .values(generation=Target.generation + 1, **values)
            .execution_options(synchronize_session=False)
        )
        if done.rowcount == 0:  # type: ignore[attr-defined]
            raise StaleRow("target", node)
        bumped.add(node)
        for name in set(old.capacity) | set(target.capacity):
            if name not in target.capacity:
                if old.used.get(name, 0.0) > 0:
                    raise Refused(
                        "capacity-in-use",
                        f"{node} uses {name}; a resource in use cannot be removed",
                    )
                session.execute(
                    delete(TargetResource).where(
                        TargetResource.target_id == old.id, TargetResource.name == name
                    )
                )
            elif name not in old.capacity:
                session.add(
                    TargetResource(
                        target_id=old.id, name=name, capacity=target.capacity[name], used=0.0
                    )
                )
            elif old.capacity[name] != target.capacity[name]:
                now = used.get(node, {}).get(name, old.used.get(name, 0.0))
                session.execute(
                    update(TargetResource)
                    .where(TargetResource.target_id == old.id, TargetResource.name == name)
                    .values(capacity=target.capacity[name], used=round(now, 9))
                )
    _insert_targets(session, new_targets)
    gone_targets = [before.targets[n].id for n in before.targets if n not in after.targets]
    if gone_targets:
        # Units running there leave with it (the change's moves record each one, from
        # the target to wherever its plan puts them): no placement may outlive its row.
        session.execute(delete(Placement).where(Placement.target_id.in_(gone_targets)))
        session.execute(delete(Target).where(Target.id.in_(gone_targets)))
    gone = [location_ids[n] for n in location_ids if n not in after.nodes or n in after.targets]
    if gone:
        session.execute(delete(Location).where(Location.id.in_(gone)))
    session.flush()
    return bumped


def _depths(after: Snapshot) -> dict[str, int]:
    depth: dict[str, int] = {}
    for node in after.nodes:
        chain: list[str] = []
        at: str | None = node
        while at is not None and at not in depth:
            chain.append(at)
            at = after.parents.get(at)
        base = depth[at] if at is not None else -1
        for offset, name in enumerate(reversed(chain), start=1):
            depth[name] = base + offset
    return depth


def _insert_locations(session: Session, waiting: list[dict[str, Any]], ids: dict[str, int]) -> None:
    """Insert `waiting` (and empty it) in one statement; their ids into `ids`."""
    if not waiting:
        return
    table = table_of(Location)
    made = session.execute(
        insert(table).returning(table.c.id, sort_by_parameter_order=True), waiting
    ).scalars()
    ids.update(zip((row["name"] for row in waiting), made, strict=True))
    waiting.clear()


def _insert_targets(
    session: Session, new: list[tuple[dict[str, Any], Mapping[str, float]]]
) -> None:
    """New targets, their resources and liveness rows: three bulk statements."""
    if not new:
        return
    table = table_of(Target)
    made = list(
        session.execute(
            insert(table).returning(table.c.id, sort_by_parameter_order=True),
            [values for values, _ in new],
        ).scalars()
    )
    resources = [
        {"target_id": id_, "name": name, "capacity": amount, "used": 0.0}
        for id_, (_, capacity) in zip(made, new, strict=True)
        for name, amount in capacity.items()
    ]
    if resources:
        session.execute(insert(table_of(TargetResource)), resources)
    session.execute(
        insert(table_of(TargetLiveness)), [{"target_id": id_, "last_seen": None} for id_ in made]
    )


def _workloads(
    session: Session,
    before: Snapshot,
    after: Snapshot,
    revision: int,
    only: Collection[str] | None = None,
) -> set[str]:
    written: set[str] = set()
    account_ids = {name: id_ for id_, name in session.execute(select(Account.id, Account.name))}
    names = after.workloads if only is None else [n for n in only if n in after.workloads]
    for name in names:
        row = after.workloads[name]
        spec = after.workload_specs[name]
        old = before.workloads.get(name)
        account = account_ids.get(row.account) if row.account else None
        if old is None:
            session.add(
                Workload(
                    name=name,
                    account_id=account,
                    spec=spec,
                    document=row.document,
                    generation=0,
                    revision=revision,
                )
            )
            written.add(name)
            continue
        if before.workload_specs.get(name) == spec:
            continue
        written.add(name)
        done = session.execute(
            update(Workload)
            .where(Workload.id == old.id, Workload.generation == old.generation)
            .values(
                spec=spec,
                account_id=account,
                generation=Workload.generation + 1,
                revision=revision,
            )
            .execution_options(synchronize_session=False)
        )
        if done.rowcount == 0:  # type: ignore[attr-defined]
            raise StaleRow("workload", name)
    gone = [n for n in (before.workloads if only is None else only) if n not in after.workloads]
    gone = [n for n in gone if n in before.workloads]
    if gone:
        # At the generation seen: deleting a workload changed since would take units
        # (and their usage) this change never planned with.
        seen = [(before.workloads[n].id, before.workloads[n].generation) for n in gone]
        done = session.execute(
            delete(Workload)
            # `id IN` beside the pair: SQLite reads a row-value IN by scanning the table.
            .where(Workload.id.in_([id_ for id_, _ in seen]))
            .where(tuple_(Workload.id, Workload.generation).in_(seen))
            .execution_options(synchronize_session=False)
        )
        if done.rowcount != len(gone):  # type: ignore[attr-defined]
            raise StaleRow("workload", ", ".join(gone[:3]))
    session.flush()
    return written | set(gone)


def _offerings(session: Session, before: Snapshot, after: Snapshot) -> None:
    old = {o["name"]: o for o in before.offerings}
    for offering in after.offerings:
        if old.get(offering["name"]) == offering:
            continue
        row = session.scalar(select(OfferingRow).where(OfferingRow.name == offering["name"]))
        if row is None:
            row = OfferingRow(name=offering["name"])
            session.add(row)
        for key in ("cpu", "memory", "disk", "dedicated", "implicit"):
            setattr(row, key, offering[key])
    session.flush()


def _dedications(session: Session, before: Snapshot, after: Snapshot, revision: int) -> None:
    """New dedications are inserted, changed owners updated, and those `after` no longer
    has deleted; implicit ones (a plan's) as the admin's."""
    domains = {name: id_ for id_, name in session.execute(select(Domain.id, Domain.name))}
    accounts = {name: id_ for id_, name in session.execute(select(Account.id, Account.name))}
    pools = {str(pool.get("id")) for pool in after.storage}
    old = {entry["resource"]: entry for entry in before.dedications}
    new = {entry["resource"]: entry for entry in after.dedications}
    gone = [resource for resource in old if resource not in new]
    if gone:
        session.execute(delete(DedicationRow).where(DedicationRow.resource.in_(gone)))
    for resource, entry in new.items():
        if old.get(resource) == entry:
            continue
        owner = {
            "domain_id": domains[entry["domain"]],
            "account_id": accounts[entry["account"]] if entry.get("account") else None,
            "implicit": bool(entry.get("implicit")),
            "revision": revision,
        }
        if resource in old:
            session.execute(
                update(DedicationRow).where(DedicationRow.resource == resource).values(owner)
            )
            continue
        kind = (
            "pool" if resource in pools else str(after.nodes.get(resource, {}).get("kind", "host"))
        )
        session.execute(delete(DedicationRow).where(DedicationRow.resource == resource))
        session.add(DedicationRow(resource=resource, kind=kind, **owner))
    session.flush()
