"""README's table of problem kinds (its service section) against the kinds the service
raises: a kind added to the code, or one raised with a new status, is documented."""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from itertools import pairwise
from pathlib import Path

from placed.service import problems

ROOT = Path(__file__).resolve().parent.parent
SERVICE = ROOT / "src" / "placed" / "service"
OPERATIONS = ROOT / "src" / "placed" / "operations"
# An operation's refusal (operations/errors.py) by its class, and the status the service
# answers it with.
OPERATION_STATUS = {kind.__name__: status for kind, status in problems._STATUS_OF_OPERATION}


def documented() -> dict[int, set[str]]:
    """The README table's kinds by status: every `word` of a row."""
    text = (ROOT / "README.md").read_text()
    table = text.split("<!-- problem kinds -->", 1)[1].split("<!-- end problem kinds -->", 1)[0]
    found: dict[int, set[str]] = defaultdict(set)
    for row in table.splitlines():
        cells = [cell.strip() for cell in row.strip().strip("|").split("|")]
        if len(cells) == 2 and cells[0].isdigit():
            found[int(cells[0])] |= set(re.findall(r"`([a-z-]+)`", cells[1]))
    return found


def raised(source: str) -> set[tuple[int | None, str]]:
    """(status, kind) of each problem `source` raises: a call whose arguments hold a
    status then a kind (`ProblemException(409, "exists", ...)`, `response(...)`, a
    replica's `refuse(ticket, "exists", ...)` has no status: None), and a
    ProblemException whose status is not written there (None)."""
    found: set[tuple[int | None, str]] = set()
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call):
            continue
        values = [arg.value if isinstance(arg, ast.Constant) else None for arg in node.args]
        name = node.func.attr if isinstance(node.func, ast.Attribute) else ""
        name = node.func.id if isinstance(node.func, ast.Name) else name
        for status, kind in pairwise(values):
            if isinstance(status, int) and 400 <= status < 600 and isinstance(kind, str):
                found.add((status, kind))
        if name in ("ProblemException", "refuse") and len(values) > 1:
            status, kind = values[:2]
            if status is None and isinstance(kind, str):
                found.add((None, kind))
        # An operation's refusal: `Conflict(detail, "kind", ...)`.
        if name in OPERATION_STATUS and len(values) > 1 and isinstance(values[1], str):
            found.add((OPERATION_STATUS[name], values[1]))
    return found


def service_kinds() -> set[tuple[int | None, str]]:
    kinds: set[tuple[int | None, str]] = set(problems._KINDS.items())
    for path in SERVICE.rglob("*.py"):
        # The console's pages show a problem in HTML (ui/): the API's documents are the rest.
        if "ui" not in path.relative_to(SERVICE).parts:
            kinds |= raised(path.read_text())
    for path in OPERATIONS.rglob("*.py"):
        kinds |= raised(path.read_text())
    return kinds


def test_every_kind_the_service_raises_is_in_the_readme_table_at_its_status() -> None:
    table = documented()
    anywhere = set().union(*table.values())
    missing = sorted(
        f"{status} {kind}"
        for status, kind in service_kinds()
        if kind not in (table.get(status, set()) if status is not None else anywhere)
    )
    assert missing == []


def test_the_scan_finds_what_it_should() -> None:
    # Else an empty list above would prove nothing: the scan sees the kinds of every
    # form (a literal status, a default status, a replica's refusal, Starlette's own).
    kinds = service_kinds()
    assert {
        (404, "invalid-parameter"),
        (409, "conflicting-request"),
        (409, "invalid-scope"),
        (None, "exists"),
        (422, "invalid-world"),
        (405, "method-not-allowed"),
        (400, "bad-request"),
    } <= kinds
    assert len({kind for _, kind in kinds}) >= 30
    source = 'raise ProblemException(409, "made-up", "x")\nraise ProblemException(s, "other")'
    assert raised(source) == {(409, "made-up"), (None, "other")}
    assert raised('raise Conflict("x", "taken")\nraise NotFound("y")') == {(409, "taken")}
    assert documented()[404] >= {"not-found", "invalid-parameter"}
    assert "made-up" not in set().union(*documented().values())
