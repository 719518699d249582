"""A spec planned with nothing kept (POST /v1/plan): the same reader as `placed plan` and
the same engine function for its document. The route authorizes and reads the body;
this reads the spec, bounds it and plans it."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from placed.engine.planner import Planner
from placed.engine.report import plan_document
from placed.operations import pointers
from placed.operations.errors import Invalid, Where
from placed.operations.pointers import PLACED_BYTES
from placed.spec import SpecError
from placed.spec.load import load_spec_text
from placed.spec.source import decode, placed_up_to

SOURCE = "request"  # the spec's name in its errors, as a file's path is on the CLI

# The units one request may ask the service to plan (a spec file on the CLI may ask for
# more): planning is CPU work on a shared thread pool, at about 15,000 units a second.
MAX_REQUEST_UNITS = 100_000


def bounded_units(counts: Iterable[tuple[str, int]]) -> None:
    """Refused (`too-many-units`) when the units asked for (pointer, count) add up past
    MAX_REQUEST_UNITS, naming the largest count."""
    found = list(counts)
    total = sum(count for _, count in found)
    if total <= MAX_REQUEST_UNITS:
        return
    pointer, largest = max(found, key=lambda item: item[1])
    raise Invalid(
        f"the request asks for {total:,} units; the service plans at most "
        f"{MAX_REQUEST_UNITS:,} in one request",
        "too-many-units",
        [Where(f"{largest:,} units", pointer=pointer)],
    )


def plan(body: bytes) -> dict[str, Any]:
    """The plan document of the spec in `body`, under the spec's name, as `placed plan
    -o json` prints one document's plan."""
    try:
        text = decode(body, SOURCE)
        with placed_up_to(PLACED_BYTES):
            spec = load_spec_text(text, SOURCE)
    except SpecError as error:
        raise pointers.invalid_spec(error, body) from None
    bounded_units(
        (f"/workloads/{number}/units", workload.units)
        for number, workload in enumerate(spec.workloads)
        if workload.mode != "every"
    )
    return {"name": spec.name, **plan_document(Planner(spec).plan())}
