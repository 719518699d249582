"""Where in a request's body a problem is: JSON pointers (RFC 6901) and a spec's
problems as places in the body that carried it, with their lines and columns. The
operations point at what they refuse with these; the service writes them into the
problem document (service/problems.py)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from placed.operations.errors import Invalid, SpecPlace
from placed.spec import SpecError

# A problem document lists at most this many errors; its detail counts them all.
MAX_ERRORS = 100
# A body's problems get their line and column up to this size (finding them reads the
# body again, seconds a megabyte, on the server's CPU); a larger body's have their
# pointers only.
PLACED_BYTES = 2 * 1024 * 1024


def counted(count: int, what: str = "problem") -> str:
    """'3 problems', or '250 problems; the first 100 are listed' past MAX_ERRORS."""
    text = f"{count:,} {what}{'s' if count != 1 else ''}"
    if count > MAX_ERRORS:
        text += f"; the first {MAX_ERRORS} are listed"
    return text


def invalid_spec(error: SpecError, body: bytes) -> Invalid:
    """A spec that does not read, as the refusal that points at each of its problems."""
    try:
        data = json.loads(body)
    except (ValueError, RecursionError):
        # Not JSON (pointers split the keys at their dots), or JSON nested deeper than
        # Python reads (the spec reader refused it for that).
        data = None
    return Invalid(f"the spec has {counted(error.count)}", "invalid-spec", spec_places(error, data))


def escape(part: str | int) -> str:
    """One reference token of a JSON pointer (RFC 6901: ~ as ~0, / as ~1)."""
    return str(part).replace("~", "~0").replace("/", "~1")


def pointer(parts: Sequence[str | int]) -> str:
    return "".join("/" + escape(part) for part in parts)


def spec_places(error: SpecError, data: Any) -> list[SpecPlace]:
    """A spec's problems as places in the body (the first MAX_ERRORS): its key as a
    pointer (resolved against the body, so a key with a dot in it stays one token), its
    line and column."""
    return [
        SpecPlace(
            problem.message,
            key_pointer(problem.key, data),
            line=problem.position.line if problem.position else None,
            column=problem.position.column if problem.position else None,
        )
        for problem in error.problems[:MAX_ERRORS]
    ]


def key_pointer(key: str, data: Any) -> str:
    """`workloads[0].units` as `/workloads/0/units`. A dotted key is ambiguous (a tag name
    may hold a dot), so each step takes the longest name the body really has at that
    place, and splits at the next dot only where the body has none (a missing key)."""
    parts: list[str | int] = []
    rest, node = key, data
    while rest:
        if rest.startswith("["):
            end = rest.find("]")
            inside = rest[1:end] if end > 0 else ""
            if inside.isdigit():
                index = int(inside)
                parts.append(index)
                node = node[index] if isinstance(node, list) and index < len(node) else None
                rest = rest[end + 1 :]
                continue
        if rest.startswith(".") and parts:
            rest = rest[1:]
        name = _name_at(rest, node)
        parts.append(name)
        node = node.get(name) if isinstance(node, dict) else None
        rest = rest[len(name) :]
    return pointer(parts)


def _name_at(rest: str, node: Any) -> str:
    ends = [i for i, char in enumerate(rest) if char in ".[" and i > 0] + [len(rest)]
    if isinstance(node, dict):
        for end in reversed(ends):
            if rest[:end] in node:
                return rest[:end]
    return rest[: ends[0]]
