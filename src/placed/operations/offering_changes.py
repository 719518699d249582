"""A service offering made or its dedicated flag changed (POST /v1/offerings, PATCH
/v1/offerings/{name}), and the world planned again in the same transaction: its VMs now
ask for dedication or no longer do. A new offering is a delta on the live world when it
can be one (operations/live_offerings.py): no workload names it yet."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from placed.model.dedications import INVALID_PARAMETER
from placed.operations import placing
from placed.operations.errors import Conflict, NotFound
from placed.operations.live_offerings import Offered
from placed.operations.replica import ReplicaWorld
from placed.operations.store import Store
from placed.store.claims import Actor, Extra
from placed.store.world import Snapshot


def create_offering(
    engine: Store,
    offering: dict[str, Any],
    actor: Actor,
    replica: ReplicaWorld | None = None,
) -> dict[str, Any]:
    """A new offering; one of that name is refused (PATCH changes it). With `replica`, a
    delta on its live world when it can be one (operations/live_offerings.py)."""
    name = offering["name"]
    if replica is not None:
        fast = replica.offer(engine, Offered(offering), actor)
        if fast is not None:
            return fast

    def wanted(old: dict[str, Any] | None) -> dict[str, Any]:
        if old is not None:
            raise Conflict(f"offering {name} exists already", INVALID_PARAMETER)
        return offering

    return put_offering(engine, name, wanted, actor)


def flag_offering(
    engine: Store, name: str, dedicated: bool, implicit: str | None, actor: Actor
) -> dict[str, Any]:
    """Offering `name`'s dedicated flag changed, and its implicit planner (strict or
    preferred) when given."""

    def wanted(old: dict[str, Any] | None) -> dict[str, Any]:
        if old is None:
            raise NotFound(f"no offering {name!r}")
        new = {**old, "dedicated": dedicated}
        if implicit is not None:
            new["implicit"] = implicit
        return new

    return put_offering(engine, name, wanted, actor)


def put_offering(
    engine: Store,
    name: str,
    wanted: Callable[[dict[str, Any] | None], dict[str, Any]],
    actor: Actor,
) -> dict[str, Any]:
    """Make or change one offering in the stored world and plan the world it leaves (its
    VMs now ask for dedication or no longer do), with its event, in one transaction.
    `wanted`: the offering as it should be, from the offering as it is (None: none).
    Only a root admin may (the seed: only a root admin offers dedication): the routes'
    rule says so, before this runs."""

    def prepare(snapshot: Snapshot) -> placing.Prepared:
        old = next((o for o in snapshot.offerings if o["name"] == name), None)
        new = wanted(old)
        after = snapshot.copy()
        if old != new:
            after.offerings = [o for o in after.offerings if o["name"] != name] + [new]
        prepared = placing.plan(snapshot, after)
        if old != new:
            kind = "offering.created" if old is None else "offering.updated"
            details: dict[str, Any] = {"offering": new}
            if old is not None:
                details["was"] = old
            prepared.extra.append(Extra(kind, name, details=details))
        prepared.data.update(offering=new, was=old, changed=old != new)
        return prepared

    committed = placing.transact(engine, prepare, actor)
    return {
        **committed.prepared.data,
        "revision": committed.revision,
        "changes": placing.moves_document(committed.prepared.moves),
        "incompatible": committed.prepared.data.get("incompatible", []),
    }
