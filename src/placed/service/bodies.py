"""Request bodies: of a media type placed reads, their size bounded before they are read
(service/limits.py); the units they ask for are bounded by operations/spec_plan.py."""

from __future__ import annotations

from fastapi import Request

from placed.service import problems

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
