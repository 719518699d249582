"""Request bodies: of a media type placed reads, and asking for a bounded number of units
(their size is bounded before they are read: service/limits.py)."""

from __future__ import annotations

from collections.abc import Iterable

from fastapi import Request

from placed.service import problems

# The units one request may ask the service to plan (a spec file on the CLI may ask for
# more): planning is CPU work on a shared thread pool, at about 15,000 units a second.
MAX_REQUEST_UNITS = 100_000

# JSON is what the API speaks; YAML is the spec files' own format and reads the same.
MEDIA_TYPES = frozenset({"application/json", "application/yaml", "application/x-yaml", "text/yaml"})


async def read_body(request: Request) -> bytes:
    """The body, of a media type placed reads. Its size is the body limits' to bound
    (service/limits.py: a spec route reads at most the app's `max_body_bytes`)."""
    kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if kind and kind not in MEDIA_TYPES and not kind.endswith("+json"):
        raise problems.ProblemException(
            415, "unsupported-media-type", f"a spec is application/json, not {kind}"
        )
    chunks = [chunk async for chunk in request.stream()]
    return b"".join(chunks)


def bounded_units(counts: Iterable[tuple[str, int]]) -> None:
    """A 422 problem when the units asked for (pointer, count) add up past
    MAX_REQUEST_UNITS, naming the largest count."""
    found = list(counts)
    total = sum(count for _, count in found)
    if total <= MAX_REQUEST_UNITS:
        return
    pointer, largest = max(found, key=lambda item: item[1])
    raise problems.ProblemException(
        422,
        "too-many-units",
        f"the request asks for {total:,} units; the service plans at most "
        f"{MAX_REQUEST_UNITS:,} in one request",
        [{"pointer": pointer, "detail": f"{largest:,} units"}],
    )
