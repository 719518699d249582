"""What a refused change leaves behind: its events, and nothing else. A migration or
maintenance the dedication rules refused, and a claim some unit of which found no place,
write their events in a transaction of their own (the change's own rolled back): no row
of the world changes, so the revision stays."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from placed.operations.store import Store
from placed.store import events
from placed.store.claims import Actor, Extra
from placed.store.database import writing
from placed.store.events import Recorded


def record_refusal(
    engine: Store,
    kind: str,
    subject: str,
    actor: Actor,
    target: str | None,
    workload: str | None,
    account: str | None,
    details: dict[str, Any],
) -> Recorded:
    """The refusal's one event."""
    with writing(engine) as session:
        return events.append(
            session,
            kind,
            subject,
            actor_accessor=actor.accessor,
            actor_role=actor.role,
            target=target,
            workload=workload,
            account=account,
            request_id=actor.request_id,
            details=details,
        )


def record_failures(engine: Store, failures: Sequence[Extra], actor: Actor) -> list[Recorded]:
    """A refused claim's failure events, one per failure, in order."""
    with writing(engine) as session:
        return [
            events.append(
                session,
                failure.kind,
                failure.subject,
                actor_accessor=actor.accessor,
                actor_role=actor.role,
                workload=failure.workload,
                account=failure.account,
                request_id=actor.request_id,
                details=failure.details,
            )
            for failure in failures
        ]
