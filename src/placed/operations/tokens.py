"""Tokens: create one (its text is in that one answer and nowhere else), list them
without their secrets, revoke one, and find the live token a request's text names.

Who manages which token is the scope rule's (`TokenReach` in operations/change_scope.py,
passed in as `ReachRule` until that rule lives in this layer): a root-admin every one, a
domain-admin those of its subtree. What a domain-admin may not see is answered as if it
did not exist: NotFound for a token, Forbidden for a scope, whether or not the name
exists, so names outside a domain do not leak to it through the answers."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Protocol

from sqlalchemy.orm import Session

from placed.operations.errors import Conflict, Forbidden, Invalid, NotFound, Where
from placed.operations.store import Store
from placed.store import accounts, domains, events, tables, tokens
from placed.store.claims import Actor
from placed.store.database import reading, writing
from placed.store.tables import Token, now

# A token's roles, in the order the API lists them.
ROLES = tables.ROLES
ROOT_ADMIN, DOMAIN_ADMIN, USER, AGENT = ROLES
MAX_LIFETIME_S = tokens.MAX_LIFETIME_S
WHAT_SCOPE_NAMES = tokens.SCOPE_KINDS


class Reach(Protocol):
    """The tokens a caller manages."""

    def holds(self, role: str, scope: str | None) -> bool: ...


# The scope rule: the reach of the caller, given the domain tree (domain -> parent) and
# each account's domain.
ReachRule = Callable[[Mapping[str, str | None], Mapping[str, str]], Reach]


@dataclass(frozen=True, slots=True)
class Live:
    """A live token found by its text: whom it names, and when it stops working."""

    accessor: str
    role: str
    scope: str | None
    expires: datetime | None


def look_up(engine: Store, text: str) -> Live | None:
    """The live token `text` names; None when it names none (unknown, revoked, expired)."""
    with reading(engine) as session:
        row = tokens.authenticate(session, text)
        if row is None:
            return None
        return Live(row.accessor, row.role, row.scope, row.expires)


def seconds_until(moment: datetime) -> float:
    """Seconds from the store's clock now until `moment` (negative once it is past)."""
    return (moment - now()).total_seconds()


def create(
    engine: Store,
    actor: Actor,
    rule: ReachRule,
    role: str,
    scope: str | None,
    description: str,
    expires_in_s: int | None,
) -> tuple[dict[str, Any], str]:
    """A new token of `role` over `scope`, made by `actor`: its row as listed, and its
    text (shown once)."""
    with writing(engine) as session:
        if actor.role == DOMAIN_ADMIN:
            if role not in (DOMAIN_ADMIN, USER):
                raise Forbidden("a domain-admin creates domain-admin and user tokens only")
            _check_shape(role, scope)
            # Outside its subtree is refused whether or not the name exists (see above).
            if not _reach(session, actor, rule).holds(role, scope):
                what = WHAT_SCOPE_NAMES[role]
                raise Forbidden(f"{scope!r} is not a {what} within domain {actor.scope!r}")
        else:
            _check_shape(role, scope)
            _check_exists(session, role, scope)
        row, text = tokens.create(session, role, scope, None, description)
        if expires_in_s is not None:
            # Counted from the row's own creation time, so expires - created is exact.
            row.expires = expires = row.created + timedelta(seconds=expires_in_s)
        else:
            expires = None
        events.append(
            session,
            "token.created",
            row.accessor,
            actor_accessor=actor.accessor,
            actor_role=actor.role,
            request_id=actor.request_id,
            details={"role": row.role, "scope": row.scope, "expires": _moment(expires)},
            **tokens.places(session, row.role, row.scope),
        )
        return info(row), text


def listed(engine: Store, actor: Actor, rule: ReachRule) -> list[dict[str, Any]]:
    """Every token `actor` manages, oldest first, without secrets."""
    with reading(engine) as session:
        reach = _reach(session, actor, rule)
        return [info(row) for row in tokens.listed(session) if reach.holds(row.role, row.scope)]


def revoke(engine: Store, actor: Actor, rule: ReachRule, accessor: str) -> dict[str, Any]:
    """Revoke the token (again: nothing changes); its row, `revoked` set. The last live
    root-admin token stays (Conflict `last-root-admin`)."""
    with writing(engine) as session:
        row = session.get(Token, accessor)
        if row is None or not _reach(session, actor, rule).holds(row.role, row.scope):
            raise NotFound(f"no token {accessor!r}")
        try:
            done = tokens.revoke_keeping_a_root(session, accessor)
        except tokens.LastRootAdmin as error:
            raise Conflict(str(error), "last-root-admin") from None
        if done is None:  # tokens are never deleted; read above, so this cannot happen
            raise NotFound(f"no token {accessor!r}")
        if done.just_now:
            events.append(
                session,
                "token.revoked",
                row.accessor,
                actor_accessor=actor.accessor,
                actor_role=actor.role,
                request_id=actor.request_id,
                details={"role": row.role, "scope": row.scope},
                **tokens.places(session, row.role, row.scope),
            )
        return info(row)


def info(row: Token) -> dict[str, Any]:
    return {
        "accessor": row.accessor,
        "role": row.role,
        "scope": row.scope,
        "description": row.description,
        "created": row.created,
        "expires": row.expires,
        "revoked": row.revoked,
    }


def _reach(session: Session, actor: Actor, rule: ReachRule) -> Reach:
    if actor.role != DOMAIN_ADMIN:  # no tenancy to read: all or nothing
        return rule({}, {})
    return rule(domains.parents(session), accounts.domains_of(session))


def _check_shape(role: str, scope: str | None) -> None:
    """A scope of the shape the role needs (the route's schema says it too)."""
    problem = tokens.shape_problem(role, scope)
    if problem is not None:
        raise Invalid(problem, "invalid-scope", [Where(problem, pointer="/scope")])


def _check_exists(session: Session, role: str, scope: str | None) -> None:
    """A scope naming a domain, account or target that exists: a well-formed request
    naming what the world does not have is a conflict, as for a dedication's resource."""
    problem = tokens.scope_problem(session, role, scope)
    if problem is not None:
        raise Conflict(problem, "invalid-scope", [Where(problem, pointer="/scope")])


def _moment(at: datetime | None) -> str | None:
    return at.isoformat() if at is not None else None
