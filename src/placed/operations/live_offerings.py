"""A service offering made as a delta on the live world (operations/replica.py): POST
/v1/offerings for a name the world has not.

No workload names an offering before it exists (a workload naming an unknown one is
refused as it is read), so a new offering moves no unit and changes no judgement: the
delta writes its row, its `offering.created` event and the rules' revision, and adds it
to the cached world's offerings, which the claims that name it are read against. A name
the world has already (409), a value the spec's schema refuses, or a world where a unit
waits or misfits goes to the general path, which answers it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from placed.model import Spec
from placed.model.dedications import Offering
from placed.spec.schema import OfferingSpec
from placed.store import events
from placed.store.claims import Actor
from placed.store.world import Snapshot

CREATED = "offering.created"


@dataclass(frozen=True, slots=True)
class Offered:
    """POST /v1/offerings' offering, as the general path stores it (the route's body)."""

    offering: dict[str, Any]

    @property
    def name(self) -> str:
        return str(self.offering["name"])

    def answer(self, revision: int) -> dict[str, Any]:
        """What the general path answers for a new offering in a world where nothing
        waits or misfits."""
        return {
            "offering": self.offering,
            "was": None,
            "changed": True,
            "revision": revision,
            "changes": [],
            "incompatible": [],
        }

    def event(self, actor: Actor) -> events.Pending:
        return events.Pending(
            CREATED,
            self.name,
            actor_accessor=actor.accessor,
            actor_role=actor.role,
            request_id=actor.request_id,
            details={"offering": self.offering},
        )


def judge(snapshot: Snapshot, asked: Offered) -> Offered | None:
    """`asked` when a delta can make it: a name the world has not, with values the
    spec's schema takes (None: the general path's)."""
    if any(o["name"] == asked.name for o in snapshot.offerings):
        return None
    if model_of(asked.offering) is None:
        return None
    return asked


def model_of(offering: dict[str, Any]) -> Offering | None:
    """The offering as a world's spec reads it (spec/load.py), or None when the spec's
    schema refuses it."""
    try:
        read = OfferingSpec.model_validate(offering)
    except ValidationError:
        return None
    return Offering(read.name, read.cpu, read.memory, read.disk, read.dedicated, read.implicit)


def stored(spec: Spec, snapshot: Snapshot, made: Sequence[dict[str, Any]], number: int) -> Spec:
    """The cached world once `made` are stored at revision `number`: the snapshot's
    offerings and rules revision, and the spec's offerings (what a claim naming one is
    read against), returned."""
    models = [model_of(offering) for offering in made]
    assert all(model is not None for model in models)  # judged before they were written
    snapshot.offerings = [*snapshot.offerings, *made]
    snapshot.rules_revision = number
    return dataclasses.replace(
        spec, offerings=(*spec.offerings, *(m for m in models if m is not None))
    )


def added(
    before: Sequence[dict[str, Any]], rows: Sequence[dict[str, Any]]
) -> list[dict[str, Any]] | None:
    """The offerings `rows` (every one, in the order they were made) add to `before`; None
    when they change or remove one (then only a whole read knows)."""
    if list(rows[: len(before)]) != list(before):
        return None
    new = list(rows[len(before) :])
    if any(model_of(offering) is None for offering in new):
        return None
    return new
