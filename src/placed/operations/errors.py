"""Why an operation refuses: a domain error, which the service answers as a problem
document of the same kind (`service/problems.py:from_operation`). The class says what
the refusal is (its HTTP status is the service's business); `kind` names it as the
problem's stable type does; `where` says which part of the request it is about."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Where:
    """One place in the request a refusal is about: a `pointer` into its body (RFC
    6901) or a `parameter` of its query or path (as location.name)."""

    detail: str
    pointer: str | None = None
    parameter: str | None = None

    def document(self) -> dict[str, Any]:
        found: dict[str, Any] = {}
        if self.pointer is not None:
            found["pointer"] = self.pointer
        if self.parameter is not None:
            found["parameter"] = self.parameter
        found["detail"] = self.detail
        return found


@dataclass(frozen=True, slots=True)
class SpecPlace(Where):
    """A place in a spec the request carried: its line and column (None when the
    problem has no position, a key that is missing), and the document that defined what
    it is about."""

    line: int | None = None
    column: int | None = None
    # The document that defined what the place is about, when one does (`owned`; a
    # stored workload applied before documents had names was defined by none).
    defined_by: str | None = None
    owned: bool = False
    # False: a place in the request's documents that no line of its text holds (a
    # document's name), so it has no line or column at all.
    located: bool = True

    def document(self) -> dict[str, Any]:
        found: dict[str, Any] = {"pointer": self.pointer or ""}
        if self.located:
            found["line"] = self.line
            found["column"] = self.column
        found["detail"] = self.detail
        if self.owned:
            found["document"] = self.defined_by
        return found


class OperationError(Exception):
    """An operation refused and changed nothing. `where`: None when the refusal is about
    no place of the request (the problem then lists no errors)."""

    default_kind = "invalid-request"

    def __init__(
        self,
        detail: str,
        kind: str | None = None,
        where: Sequence[Where] | None = None,
        extensions: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(detail)
        self.detail = detail
        self.kind = kind or self.default_kind
        self.where = tuple(where) if where is not None else None
        self.extensions = dict(extensions or {})


class NotFound(OperationError):
    """What the request names is not there, or not there for this caller."""

    default_kind = "not-found"


class Conflict(OperationError):
    """A well-formed request the state of the world refuses."""

    default_kind = "conflict"


class Forbidden(OperationError):
    """The caller may not do this, whatever the world holds."""

    default_kind = "forbidden"


class Invalid(OperationError):
    """The request itself is wrong."""

    default_kind = "invalid-request"


class Contended(Conflict):
    """Others changed the same rows on every try while this was planned: nothing changed,
    and the same request may well succeed `retry_after` seconds later. `conflicts`: the
    tries lost."""

    default_kind = "claim-conflict"

    def __init__(
        self, detail: str, kind: str | None = None, conflicts: int = 0, retry_after: int = 1
    ) -> None:
        super().__init__(detail, kind)
        self.conflicts = conflicts
        self.retry_after = retry_after
