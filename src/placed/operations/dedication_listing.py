"""The dedications a caller may see (GET /v1/dedications): CloudStack's
listDedicatedZones/Pods/Clusters/Hosts, asked of the rules as the caller's principal."""

from __future__ import annotations

from typing import Any

from placed.model.dedications import INVALID_PARAMETER, DedicationError
from placed.operations import cloudstack, snapshots
from placed.operations.errors import Conflict, NotFound, Where
from placed.operations.store import Store


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
            where = [Where(error.message, parameter=f"query.{error.parameter}")]
            if error.conflict:
                raise Conflict(error.message, "conflicting-request", where) from None
            raise NotFound(error.message, error.kind, where) from None
        raise cloudstack.problem(error) from None
    return {"items": [d.to_dict() for d in found]}
