"""/v1/dedications, /v1/offerings and /v1/settings: CloudStack's dedicated resources
(dedicateZone/Pod/Cluster/Host, their release, an owner changed in one step, and
listDedicated*), the service offerings, and implicit.dedication.enable.

Every write asks the dedication rules (`engine.cloud.Cloud` on the world read) as the
caller's principal, then plans the world they leave, so the placements a dedication
affects are judged again in the same transaction, with one event per dedication made,
changed or released.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query, Request
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictFloat,
    StrictInt,
    StrictStr,
    ValidationError,
)
from starlette.concurrency import run_in_threadpool

from placed.engine.cloud import Cloud
from placed.model.dedications import (
    INVALID_PARAMETER,
    Dedication,
    DedicationError,
    Offering,
)
from placed.model.tenancy import Principal
from placed.operations import cloudstack, offerings, placing, snapshots
from placed.operations.live_settings import CONTROLLER_SETTINGS, Resetting
from placed.operations.rededication import DEDICATE, RELEASE, UPDATE, Rededicating
from placed.operations.replica import ReplicaWorld
from placed.operations.store import Store
from placed.service import context, problems
from placed.service.auth import (
    DOMAIN_ADMIN,
    EVERY_ROLE,
    ROOT_ADMIN,
    USER,
    Caller,
    allow,
)
from placed.service.targets import MoveView
from placed.spec.schema import MAX_NAME, Identifier, SettingsSpec
from placed.store import world
from placed.store.claims import Actor, Extra
from placed.store.world import Snapshot

router = APIRouter(prefix="/v1")

Name = Annotated[str, Field(min_length=1, max_length=MAX_NAME)]

# The settings PUT /v1/settings/{key} changes, and what each is: the whole world's, the
# root-admin's. A document's settings (world.DOCUMENT_SETTINGS) are not here: each
# governs only its own document's workloads, and is set by applying that document.
SETTINGS = {
    "implicit_dedication": "CloudStack's implicit.dedication.enable: a dedicated request "
    "that finds no dedicated host takes an empty, undedicated one for its account.",
    **{key: str(SettingsSpec.model_fields[key].description) for key in CONTROLLER_SETTINGS},
}


class NewDedication(BaseModel):
    model_config = ConfigDict(extra="forbid")
    resource: Name = Field(description="A zone, pod, cluster, host or storage pool.")
    domain: Name
    account: Name | None = Field(None, description="An account of that very domain.")


class Owner(BaseModel):
    model_config = ConfigDict(extra="forbid")
    domain: Name
    account: Name | None = Field(None, description="An account of that very domain.")


class DedicationView(BaseModel):
    resource: str
    kind: str = Field(description="zone, pod, cluster, host or pool (from the inventory)")
    domain: str
    account: str | None = Field(description="null: the whole domain (and its subdomains)")
    implicit: bool


class DedicationChange(BaseModel):
    dedication: DedicationView = Field(description="As it is now (released: as it was).")
    was: DedicationView | None = Field(None, description="An update: the owner before.")
    absorbed: list[DedicationView] = Field(
        default_factory=list,
        description="Dedications below it to the same owner, released as CloudStack "
        "releases them when a wider dedication replaces them.",
    )
    revision: int
    changes: list[MoveView] = Field(description="Units placed or moved by the change.")
    incompatible: list[dict[str, Any]] = Field(
        default_factory=list,
        description="Allocation units that no longer fit where they run and stay there, "
        "each with the rule (a unit.incompatible event when new); POST "
        "/v1/workloads/{name}/replace moves them.",
    )


class DedicationList(BaseModel):
    items: list[DedicationView]


class OfferingView(BaseModel):
    name: str
    cpu: float
    memory: float
    disk: float
    dedicated: bool = Field(description="Its VMs ask for dedicated resources.")
    implicit: str = Field(description="strict or preferred (may fall back to shared hosts)")


class OfferingList(BaseModel):
    items: list[OfferingView]


# A number, as the schema says: not false (which a lax float reads as 0.0) nor "8".
Amount = Annotated[float, Field(ge=0, le=1e15, allow_inf_nan=False, strict=True)]
Implicit = Literal["strict", "preferred"]


class NewOffering(BaseModel):
    model_config = ConfigDict(extra="forbid")
    # As a spec's offering is named (the world refuses any other name, spec/schema.py).
    name: Identifier
    cpu: Amount = 0.0
    memory: Amount = 0.0
    disk: Amount = 0.0
    dedicated: StrictBool = Field(False, description="Its VMs ask for dedicated resources.")
    implicit: Implicit = Field("strict", description="preferred: may fall back to shared hosts")


class OfferingFlag(BaseModel):
    model_config = ConfigDict(extra="forbid")
    dedicated: StrictBool = Field(description="Its VMs ask for dedicated resources.")
    implicit: Implicit | None = Field(None, description="null: as it is.")


class OfferingChange(BaseModel):
    offering: OfferingView
    was: OfferingView | None = Field(description="An update: the offering before; null: made.")
    changed: bool = Field(description="false: it was so already (no event, no plan).")
    revision: int
    changes: list[MoveView] = Field(description="Units the new flag placed or moved.")
    incompatible: list[dict[str, Any]] = Field(
        default_factory=list,
        description="Allocation units that no longer fit where they run and stay there, "
        "each with the rule (a unit.incompatible event when new); POST "
        "/v1/workloads/{name}/replace moves them.",
    )


class SettingValue(BaseModel):
    model_config = ConfigDict(extra="forbid")
    # A string too, so that a document's setting (default_mode: "mapping") is answered
    # by what it is rather than by the value's type.
    value: StrictBool | StrictInt | StrictFloat | StrictStr = Field(
        description="implicit_dedication: true or false; the others: a number."
    )


class SettingChange(BaseModel):
    key: str
    value: StrictBool | StrictInt | StrictFloat
    changed: bool = Field(description="false: it had that value already.")
    revision: int
    changes: list[MoveView] = Field(description="Units the new setting placed or moved.")
    incompatible: list[dict[str, Any]] = Field(
        default_factory=list,
        description="Allocation units that no longer fit where they run and stay there, "
        "each with the rule (a unit.incompatible event when new); POST "
        "/v1/workloads/{name}/replace moves them.",
    )


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
            raise problems.ProblemException(404, "not-found", f"no resource {named!r}")
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


def _changed(request: Request, caller: Caller, asked: Rededicating, named: str | None) -> Any:
    return run_in_threadpool(
        change,
        context.store(request),
        context.actor(request, caller),
        asked,
        named,
        context.reporter(request),
        request.app.state.replica,
    )


_WRITE_PROBLEMS = problems.responses(403, 409, 422)


@router.post(
    "/dedications",
    summary="Dedicate a resource",
    description="CloudStack's dedicateZone, dedicatePod, dedicateCluster and dedicateHost "
    "(the kind is the resource's, from the inventory): root admins only (403 "
    "permission-denied otherwise). Each refusal is a 409 problem of the rule's kind: "
    "invalid-parameter, already-dedicated, ancestor-dedicated, descendant-conflict, "
    "host-has-foreign-vms.",
    status_code=201,
    response_model=DedicationChange,
    response_model_by_alias=True,
    responses=_WRITE_PROBLEMS,
)
async def post_dedication(
    request: Request, body: NewDedication, caller: Annotated[Caller, allow(ROOT_ADMIN)]
) -> dict[str, Any]:
    asked = Rededicating(
        DEDICATE, body.resource, context.principal(caller), body.domain, body.account
    )
    answer: dict[str, Any] = await _changed(request, caller, asked, None)
    return answer


@router.patch(
    "/dedications/{resource:path}",
    summary="Give a dedicated resource another owner",
    description="In one step, under every check a new dedication passes (CloudStack only "
    "has release and dedicate again). 409 not-dedicated when the resource has no "
    "dedication of its own.",
    response_model=DedicationChange,
    response_model_by_alias=True,
    responses={**_WRITE_PROBLEMS, **problems.responses(404)},
)
async def patch_dedication(
    request: Request,
    resource: context.NamePath,
    body: Owner,
    caller: Annotated[Caller, allow(ROOT_ADMIN)],
) -> dict[str, Any]:
    asked = Rededicating(UPDATE, resource, context.principal(caller), body.domain, body.account)
    answer: dict[str, Any] = await _changed(request, caller, asked, resource)
    return answer


@router.delete(
    "/dedications/{resource:path}",
    summary="Release a dedication",
    description="CloudStack's releaseDedicated*: VMs stay where they run, and dedications "
    "below it stay. 409 not-dedicated when the resource has no dedication of its own.",
    response_model=DedicationChange,
    response_model_by_alias=True,
    responses=problems.responses(403, 404, 409),
)
async def delete_dedication(
    request: Request, resource: context.NamePath, caller: Annotated[Caller, allow(ROOT_ADMIN)]
) -> dict[str, Any]:
    asked = Rededicating(RELEASE, resource, context.principal(caller))
    answer: dict[str, Any] = await _changed(request, caller, asked, resource)
    return answer


def listing(
    engine: Store, principal: str, kind: str | None, domain: str | None, account: str | None
) -> dict[str, Any]:
    cloud = cloudstack.cloud_of(snapshots.read(engine))
    who = cloudstack.principal_of(cloud, principal)
    try:
        found = cloud.list_dedications(who, kind, domain, account)
    except DedicationError as error:
        if error.kind == INVALID_PARAMETER and error.parameter is not None:
            # A filter at fault: two that disagree (an account outside the domain named)
            # conflict, and one naming what the world does not have finds nothing (404).
            # Each is well-formed: the schema cannot tell them (SERVICE.md, Errors).
            raise problems.ProblemException(
                409 if error.conflict else 404,
                "conflicting-request" if error.conflict else error.kind,
                error.message,
                [{"parameter": f"query.{error.parameter}", "detail": error.message}],
            ) from None
        raise cloudstack.problem(error) from None
    return {"items": [d.to_dict() for d in found]}


@router.get(
    "/dedications",
    summary="List dedications",
    description="CloudStack's listDedicatedZones/Pods/Clusters/Hosts: a root admin sees "
    "every dedication, a domain admin those of its domain's chain and its domain's "
    "accounts, a user those that apply to its account. An account is named inside its "
    "domain: `account` needs `domain`, the account's own (else 409 conflicting-request). "
    "A kind, domain or account the world does not have is a 404 invalid-parameter.",
    response_model=DedicationList,
    responses=problems.responses(403, 404, 409, 422),
)
async def list_dedications(
    request: Request,
    caller: Annotated[Caller, allow(ROOT_ADMIN, DOMAIN_ADMIN, USER)],
    kind: Annotated[
        str | None, Query(max_length=32, description="zone, pod, cluster, host or pool")
    ] = None,
    domain: context.NameQuery = None,
    account: context.NameQuery = None,
) -> dict[str, Any]:
    engine = context.store(request)
    return await run_in_threadpool(
        listing, engine, context.principal(caller), kind, domain, account
    )


@router.get(
    "/offerings",
    summary="List service offerings",
    response_model=OfferingList,
    responses=problems.responses(503),
)
async def list_offerings(
    request: Request, caller: Annotated[Caller, allow(*EVERY_ROLE)]
) -> dict[str, Any]:
    engine = context.store(request)

    found = await run_in_threadpool(offerings.listed, engine)
    return {"items": [offering_view(o) for o in found]}


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


@router.post(
    "/offerings",
    summary="Add a service offering",
    description="CloudStack's createServiceOffering, with its dedicated flag (isdedicated): "
    "root admins only (403 otherwise), as the seed's permissions say; 409 "
    "invalid-parameter when an offering of that name exists (PATCH changes it). An "
    "offering.created event, in the same transaction.",
    status_code=201,
    response_model=OfferingChange,
    responses=problems.responses(403, 409, 422),
)
async def post_offering(
    request: Request, body: NewOffering, caller: Annotated[Caller, allow(ROOT_ADMIN)]
) -> dict[str, Any]:
    engine = context.store(request)

    def wanted(old: dict[str, Any] | None) -> dict[str, Any]:
        if old is not None:
            raise problems.ProblemException(
                409, INVALID_PARAMETER, f"offering {body.name} exists already"
            )
        return body.model_dump()

    return await run_in_threadpool(
        put_offering,
        engine,
        body.name,
        wanted,
        context.actor(request, caller),
    )


@router.patch(
    "/offerings/{name}",
    summary="Change an offering's dedicated flag",
    description="Root admins only (403 otherwise); 404 not-found for an offering that is "
    "not there. The world is planned again in the same transaction (the offering's VMs "
    "now ask for dedicated resources, or no longer do), with an offering.updated event; "
    "a flag it has already changes nothing (`changed: false`).",
    response_model=OfferingChange,
    responses=problems.responses(403, 404, 409, 422),
)
async def patch_offering(
    request: Request,
    name: context.NamePath,
    body: OfferingFlag,
    caller: Annotated[Caller, allow(ROOT_ADMIN)],
) -> dict[str, Any]:
    engine = context.store(request)

    def wanted(old: dict[str, Any] | None) -> dict[str, Any]:
        if old is None:
            raise problems.ProblemException(404, "not-found", f"no offering {name!r}")
        new = {**old, "dedicated": body.dedicated}
        if body.implicit is not None:
            new["implicit"] = body.implicit
        return new

    return await run_in_threadpool(
        put_offering, engine, name, wanted, context.actor(request, caller)
    )


def offering_view(offering: Offering) -> dict[str, Any]:
    return {
        "name": offering.name,
        "cpu": offering.cpu,
        "memory": offering.memory,
        "disk": offering.disk,
        "dedicated": offering.dedicated,
        "implicit": offering.implicit,
    }


def put_setting(
    engine: Store,
    key: str,
    value: bool | float | str,
    principal: str,
    actor: Actor,
    report: placing.Reporter = placing.silent,
    replica: ReplicaWorld | None = None,
) -> dict[str, Any]:
    """Change one setting of the whole world. With `replica`, a delta on its live world
    when it can be one (operations/live_settings.py)."""
    if key in world.DOCUMENT_SETTINGS:
        raise problems.ProblemException(
            422,
            "document-setting",
            f"{key} is a document's setting, not the world's: it governs only the workloads "
            "of the document that names it; set it in that document's settings: and apply "
            f"the document. The world's settings are {', '.join(SETTINGS)}",
            [{"parameter": "path.key", "detail": f"{key} is a document's setting"}],
        )
    if key not in SETTINGS:
        raise problems.ProblemException(
            404, "not-found", f"no setting {key!r}; the settings are {', '.join(SETTINGS)}"
        )
    if key == "implicit_dedication" and not isinstance(value, bool):
        raise _bad_value(key, "must be true or false")
    if replica is not None:
        fast = replica.reset(engine, Resetting(key, value, principal), actor, report)
        if fast is not None:
            return fast
    if key != "implicit_dedication":
        return _put_world_setting(engine, key, value, actor, report)
    enabled = bool(value)  # checked above: true or false

    def prepare(snapshot: Snapshot) -> placing.Prepared:
        cloud = cloudstack.cloud_of(snapshot)
        who = cloudstack.principal_of(cloud, principal)
        was = cloud.implicit_enabled
        try:
            cloud.set_implicit(who, enabled)
        except DedicationError as error:
            raise cloudstack.problem(error) from None
        after = snapshot.copy()
        if was != value:
            after.settings[key] = value
        prepared = placing.plan(snapshot, after)
        if was != value:
            prepared.extra.append(
                Extra("setting.changed", key, details={"key": key, "value": value, "was": was})
            )
        prepared.data["changed"] = was != value
        return prepared

    committed = placing.transact(engine, prepare, actor, report=report)
    return {
        "key": key,
        "value": value,
        "changed": committed.prepared.data["changed"],
        "revision": committed.revision,
        "changes": placing.moves_document(committed.prepared.moves),
        "incompatible": committed.prepared.data.get("incompatible", []),
    }


def _bad_value(key: str, detail: str) -> problems.ProblemException:
    return problems.ProblemException(
        422,
        "invalid-request",
        f"{key}: {detail}",
        [{"pointer": "/value", "detail": detail}],
    )


def _put_world_setting(
    engine: Store,
    key: str,
    value: bool | float | str,
    actor: Actor,
    report: placing.Reporter = placing.silent,
) -> dict[str, Any]:
    """A heartbeat or guard setting: checked with the others as a spec's `settings:` is
    (a timeout at least 3 heartbeats long), stored in the same transaction as a plan of
    the world (which it leaves as it was: the controller reads it at its next sweep)."""
    if isinstance(value, bool | str):
        raise _bad_value(key, "must be a number")

    def prepare(snapshot: Snapshot) -> placing.Prepared:
        fields = SettingsSpec.model_fields
        now = {k: snapshot.settings.get(k, fields[k].default) for k in SETTINGS if k != key}
        try:
            checked = SettingsSpec.model_validate({**now, key: value})
        except ValidationError as error:
            raise _bad_value(key, "; ".join(e["msg"] for e in error.errors())) from None
        was = snapshot.settings.get(key, fields[key].default)
        wanted = getattr(checked, key)
        after = snapshot.copy()
        if was != wanted:
            after.settings[key] = wanted
        prepared = placing.plan(snapshot, after)
        if was != wanted:
            prepared.extra.append(
                Extra("setting.changed", key, details={"key": key, "value": wanted, "was": was})
            )
        prepared.data.update(changed=was != wanted, value=wanted)
        return prepared

    committed = placing.transact(engine, prepare, actor, report=report)
    return {
        "key": key,
        "value": committed.prepared.data["value"],
        "changed": committed.prepared.data["changed"],
        "revision": committed.revision,
        "changes": placing.moves_document(committed.prepared.moves),
        "incompatible": committed.prepared.data.get("incompatible", []),
    }


@router.put(
    "/settings/{key}",
    summary="Change a setting",
    description="Root admins only: the whole world's settings. `implicit_dedication` "
    "{value: true|false}: "
    + SETTINGS["implicit_dedication"]
    + " The world is planned again under the new value in the same transaction. "
    "`heartbeat_interval_s`, `heartbeat_timeout_s`, `disruption_guard_min_targets` "
    "{value: a number}: the controller's, read at its next sweep (the timeout at least "
    "3 intervals). A document's settings (`default_mode`) are refused "
    "(`document-setting`): each governs only its own document's workloads, and is set "
    "by applying the document.",
    response_model=SettingChange,
    response_model_by_alias=True,
    responses=problems.responses(403, 404, 409, 422),
)
async def put_setting_route(
    request: Request,
    key: context.NamePath,
    body: SettingValue,
    caller: Annotated[Caller, allow(ROOT_ADMIN)],
) -> dict[str, Any]:
    engine = context.store(request)
    return await run_in_threadpool(
        put_setting,
        engine,
        key,
        body.value,
        context.principal(caller),
        context.actor(request, caller),
        context.reporter(request),
        request.app.state.replica,
    )
