"""A dedication made, changed or released (POST, PATCH and DELETE /v1/dedications):
CloudStack's dedicateZone/Pod/Cluster/Host, an owner changed in one step, and their
release. The rules (`engine.cloud.Cloud` on the world read) are asked as the caller's
principal, then the world they leave is planned, so the placements the dedication affects
are judged again in the same transaction, with one event per dedication made, changed or
released. A delta of the live world when it can be one (operations/rededication.py)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from placed.engine.cloud import Cloud
from placed.model.dedications import Dedication, DedicationError
from placed.model.tenancy import Principal
from placed.operations import cloudstack, placing
from placed.operations.errors import NotFound
from placed.operations.rededication import DEDICATE, UPDATE, Rededicating
from placed.operations.replica import ReplicaWorld
from placed.operations.store import Store
from placed.store.claims import Actor
from placed.store.world import Snapshot


def _act(asked: Rededicating) -> Callable[[Cloud, Principal], Dedication]:
    """What the change asks of the rules, as the caller's principal."""

    def act(cloud: Cloud, who: Principal) -> Dedication:
        if asked.action == DEDICATE:
            assert asked.domain is not None
            return cloud.dedicate(who, asked.resource, asked.domain, asked.account)
        if asked.action == UPDATE:
            assert asked.domain is not None
            return cloud.update(who, asked.resource, asked.domain, asked.account)
        return cloud.release(who, asked.resource)

    return act


def change(
    engine: Store,
    actor: Actor,
    asked: Rededicating,
    named: str | None = None,
    report: placing.Reporter = placing.silent,
    replica: ReplicaWorld | None = None,
) -> dict[str, Any]:
    """Apply one dedication operation through the rules and plan the world it leaves.
    `named`: the resource the request's path names (404 when the world has none). With
    `replica`, a delta on its live world when it can be one (operations/rededication.py)."""
    if replica is not None:
        fast = replica.rededicate(engine, asked, actor, report)
        if fast is not None:
            return fast
    act = _act(asked)

    def prepare(snapshot: Snapshot) -> placing.Prepared:
        if (
            named is not None
            and named not in snapshot.nodes
            and not any(pool.get("id") == named for pool in snapshot.storage)
        ):
            raise NotFound(f"no resource {named!r}")
        cloud = cloudstack.cloud_of(snapshot)
        who = cloudstack.principal_of(cloud, asked.principal)
        seen = len(cloud.events)
        try:
            found = act(cloud, who)
        except DedicationError as error:
            raise cloudstack.problem(error) from None
        new_events = cloud.events[seen:]
        after = snapshot.copy()
        after.dedications = cloudstack.dedication_entries(cloud.rules.items.values(), snapshot)
        prepared = placing.plan(snapshot, after)
        prepared.extra.extend(cloudstack.dedication_events(new_events))
        was = next((e.details.get("was") for e in new_events if "was" in e.details), None)
        prepared.data.update(
            dedication=found.to_dict(),
            was=was,
            absorbed=[
                dict(e.details)
                for e in new_events
                if e.kind == "dedication-released" and e.subject != found.resource
            ],
        )
        return prepared

    committed = placing.transact(engine, prepare, actor, report=report)
    return {
        **committed.prepared.data,
        "revision": committed.revision,
        "changes": placing.moves_document(committed.prepared.moves),
    }
