"""/v1/dedications, /v1/offerings and /v1/settings: CloudStack's dedicated resources
(dedicateZone/Pod/Cluster/Host, their release, an owner changed in one step, and
listDedicated*), the service offerings, and implicit.dedication.enable.

Every write asks the dedication rules (`engine.cloud.Cloud` on the world read) as the
caller's principal, then plans the world they leave, so the placements a dedication
affects are judged again in the same transaction, with one event per dedication made,
changed or released.
"""

from __future__ import annotations

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
)
from starlette.concurrency import run_in_threadpool

from placed.model.dedications import (
    Offering,
)
from placed.operations import (
    dedication_changes,
    dedication_listing,
    offering_changes,
    offerings,
    setting_changes,
)
from placed.operations.rededication import DEDICATE, RELEASE, UPDATE, Rededicating
from placed.operations.setting_changes import SETTINGS
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
from placed.spec.schema import MAX_NAME, Identifier

router = APIRouter(prefix="/v1")

Name = Annotated[str, Field(min_length=1, max_length=MAX_NAME)]


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


def _changed(request: Request, caller: Caller, asked: Rededicating, named: str | None) -> Any:
    return run_in_threadpool(
        dedication_changes.change,
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
        dedication_listing.listing, engine, context.principal(caller), kind, domain, account
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
    return await run_in_threadpool(
        offering_changes.create_offering,
        engine,
        body.model_dump(),
        context.actor(request, caller),
        request.app.state.replica,
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
    return await run_in_threadpool(
        offering_changes.flag_offering,
        engine,
        name,
        body.dedicated,
        body.implicit,
        context.actor(request, caller),
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
        setting_changes.put_setting,
        engine,
        key,
        body.value,
        context.principal(caller),
        context.actor(request, caller),
        context.reporter(request),
        request.app.state.replica,
    )
