"""What the what-if page reads from its forms and shows of the API's answers: the
targets listed one a line, the spec pasted (bounded), a spec error's line with its
text. Pure functions; the handlers in pages.py call /v1 with them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# Targets in one what-if: POST /v1/targets:batch takes at most this many of each.
MAX_TARGETS = 1000
# A pasted spec: the API reads bodies up to its own limit (16 MiB by default); a form
# round-trips the spec through the page twice (preview, confirm), so the console takes
# less, and says so. A larger spec: `placed apply` or POST /v1/apply.
MAX_SPEC_BYTES = 512 * 1024
# Form bytes for a spec form: url-encoding triples a byte at worst, plus the small fields.
SPEC_FORM_BYTES = 3 * MAX_SPEC_BYTES + 16 * 1024
TARGETS_FORM_BYTES = 2 * 3 * MAX_TARGETS * 256 + 16 * 1024  # targets, and those up too
CONTEXT_LINES = 1  # lines of the spec shown either side of an error's line


def names(text: str) -> list[str]:
    """The targets of a one-a-line list: blank lines dropped, each once, in order."""
    found: dict[str, None] = {}
    for line in text.splitlines():
        name = line.strip()
        if name:
            found.setdefault(name, None)
    return list(found)


def spec_limit(max_body_bytes: int) -> int:
    """The most a pasted spec may hold: the console's bound, or the API's if smaller."""
    return min(MAX_SPEC_BYTES, max_body_bytes)


def spec_errors(data: Any, spec: str) -> list[dict[str, Any]]:
    """The API's errors[{pointer, line, column, detail}] of a refused spec, each with the
    lines of the pasted text around it (user text: the template escapes it)."""
    if not isinstance(data, Mapping):
        return []
    errors = data.get("errors")
    if not isinstance(errors, list):
        return []
    lines = spec.splitlines()
    found = []
    for error in errors[:100]:
        if not isinstance(error, Mapping):
            continue
        line = error.get("line")
        column = error.get("column")
        excerpt: list[tuple[int, str]] = []
        if isinstance(line, int) and 0 < line <= len(lines):
            low = max(1, line - CONTEXT_LINES)
            high = min(len(lines), line + CONTEXT_LINES)
            excerpt = [(number, lines[number - 1][:300]) for number in range(low, high + 1)]
        found.append(
            {
                "pointer": str(error.get("pointer") or error.get("parameter") or ""),
                "line": line if isinstance(line, int) else None,
                "column": column if isinstance(column, int) else None,
                "detail": str(error.get("detail", "")),
                "excerpt": excerpt,
            }
        )
    return found


def heading(targets: list[str], limit: int = 5) -> str:
    shown = ", ".join(targets[:limit])
    return shown + (f" and {len(targets) - limit} more" if len(targets) > limit else "")
