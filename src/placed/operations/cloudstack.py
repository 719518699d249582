"""The CloudStack rules (`engine.cloud.Cloud`, `model.dedications`) on a snapshot of the
rows: what the dedication, settings and migration routes share. A change builds the Cloud
of the world it read, asks it (as the caller's principal), and writes what it decided;
the rules themselves live only in the model.

A refusal becomes a problem of the rule's own kind (`urn:placed:problem:<kind>`): 403
when the principal may not act at all, 409 otherwise. A refused migration or maintenance
is also recorded, as CloudStack's design asks of a failed placement ("an event
generated"): one `migration.refused` event, and nothing else changes. So is a tenant's
deploy (a claim) that finds no host: one `placement.failed` event per unit that found
none (at most `MAX_FAILURE_EVENTS`), the rules' own `placement-failed` or `zone-closed`
as its cause.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from typing import Any

from placed.engine.cloud import Cloud
from placed.model.dedications import PERMISSION_DENIED, Dedication, DedicationError, Event
from placed.model.tenancy import Principal
from placed.operations import placing, refusals
from placed.operations.errors import Conflict, Forbidden, OperationError
from placed.operations.store import Store
from placed.policy.dedication import PLACEMENT_FAILED, ZONE_CLOSED_EVENT
from placed.store.claims import Actor, Extra
from placed.store.world import Snapshot

MIGRATION_REFUSED_EVENT = "migration.refused"
PLACEMENT_FAILED_EVENT = "placement.failed"
# Failure events one refused claim writes at most: a claim may ask for 100,000 units, and
# a refusal should not cost a row each; the last one counts the units left unrecorded.
MAX_FAILURE_EVENTS = 100

# The rules' event kinds as the service's events name them.
_EVENT_KINDS = {
    "dedication-created": "dedication.created",
    "dedication-updated": "dedication.updated",
    "dedication-released": "dedication.released",
}


def cloud_of(snapshot: Snapshot) -> Cloud:
    return Cloud(placing.world_spec(snapshot))


def evacuated_why(host: str, cloud: Cloud, vm: str) -> str:
    """Why an evacuated VM went where it did: the host's maintenance, and how the rules
    put it there when they say (a host it took by implicit dedication)."""
    why = f"{host} went into maintenance: placed again under the same rules"
    note = cloud.notes.get(vm)
    return f"{why}; {note}" if note else why


def principal_of(cloud: Cloud, text: str) -> Principal:
    """The caller's principal in this world's tenancy; a caller it does not know (an
    agent, an account or domain that is not there) may do nothing here."""
    found = cloud.tenancy.principal(text)
    if found is None:
        raise Forbidden(
            f"the caller ({text}) is no root admin, domain admin or user of this world's tenancy",
            PERMISSION_DENIED,
        )
    return found


def problem(error: DedicationError) -> OperationError:
    """The rules' refusal as the operation's: the caller's role refused, or the world."""
    if error.kind == PERMISSION_DENIED:
        return Forbidden(error.message, error.kind)
    return Conflict(error.message, error.kind)


class Refusal(Exception):
    """A migration or maintenance the rules refused: recorded, then answered as a 409."""

    def __init__(
        self,
        error: DedicationError,
        subject: str,
        target: str | None,
        workload: str | None,
        details: dict[str, Any],
        account: str | None = None,
    ) -> None:
        super().__init__(error.message)
        self.error = error
        self.subject = subject
        self.target = target
        self.workload = workload
        self.details = details
        self.account = account


def record(
    engine: Store, refusal: Refusal, actor: Actor, report: placing.Reporter = placing.silent
) -> OperationError:
    """Write the refusal's event (it changes no row of the world, so the revision stays),
    report it as any change's events are reported (its log line, the long-poll's wake),
    and return the problem to answer."""
    started = time.perf_counter()
    written = refusals.record_refusal(
        engine,
        MIGRATION_REFUSED_EVENT,
        refusal.subject,
        actor,
        refusal.target,
        refusal.workload,
        refusal.account,
        {**refusal.details, "error": refusal.error.kind, "why": refusal.error.message},
    )
    report(0, [written], time.perf_counter() - started, False)
    return problem(refusal.error)


class Unplaceable(Exception):
    """A claim some unit of which found no place: the failures the rules recorded for
    its units, written once the claim's transaction is rolled back, then the problem."""

    def __init__(self, answer: OperationError, failures: Sequence[Extra]) -> None:
        super().__init__(answer.detail)
        self.answer = answer
        self.failures = failures


def placement_failures(found: Sequence[Event], workload: str) -> list[Extra]:
    """The rules' failed-placement events of `workload`'s units (a plan of the whole
    world records those of other workloads that stay unplaced too)."""
    failed = [
        event
        for event in found
        if event.kind in (PLACEMENT_FAILED, ZONE_CLOSED_EVENT)
        and event.subject.rpartition("/")[0] == workload
    ]
    failures = []
    for number, event in enumerate(failed[:MAX_FAILURE_EVENTS], start=1):
        details = {**dict(event.details), "cause": event.kind}
        if number == MAX_FAILURE_EVENTS and len(failed) > number:
            details["not_recorded"] = len(failed) - number
        failures.append(
            Extra(
                PLACEMENT_FAILED_EVENT,
                event.subject,
                workload=workload,
                account=details.get("account"),
                details=details,
            )
        )
    return failures


def record_unplaceable(
    engine: Store, refused: Unplaceable, actor: Actor, report: placing.Reporter = placing.silent
) -> OperationError:
    """Write the claim's failure events (no row of the world changes: the revision
    stays), report them as any change's events are reported, and return the problem."""
    if not refused.failures:
        return refused.answer
    started = time.perf_counter()
    written = refusals.record_failures(engine, refused.failures, actor)
    report(0, written, time.perf_counter() - started, False)
    return refused.answer


def dedication_events(found: Sequence[Event]) -> list[Extra]:
    """The rules' dedication events (an absorbed dedication's release included) as the
    events the commit writes."""
    extra = []
    for event in found:
        kind = _EVENT_KINDS.get(event.kind)
        if kind is None:
            continue
        details = dict(event.details)
        extra.append(
            Extra(
                kind,
                event.subject,
                target=event.subject,
                domain=details.get("domain"),
                account=details.get("account"),
                details=details,
            )
        )
    return extra


def dedication_entries(found: Iterable[Dedication], snapshot: Snapshot) -> list[dict[str, Any]]:
    """Dedications as the spec (and the rows) write them, outermost first as the rows
    are read: applied in that order, none absorbs another. Implicit ones (a plan's) stay
    rows as they are, `implicit`."""
    entries = []
    for dedication in found:
        entry: dict[str, Any] = {"resource": dedication.resource, "domain": dedication.owner.domain}
        if dedication.owner.account:
            entry["account"] = dedication.owner.account
        if dedication.owner.implicit:
            entry["implicit"] = True
        entries.append(entry)
    entries.sort(key=lambda entry: snapshot.depth(entry["resource"]))
    return entries
