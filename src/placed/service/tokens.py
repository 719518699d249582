"""/v1/tokens: create a token (its text is in that one answer and nowhere else), list
tokens without their secrets, revoke one.

A root-admin manages every token. A domain-admin manages the tokens of its subtree:
domain-admin tokens of its domain and the domains below it, user tokens of those
domains' accounts; nothing else, not even to look at (an agent token is root-admin's).
What a domain-admin may not see is answered as if it did not exist: a 404 for a token,
a 403 for a scope, whether or not the name exists, so names outside a domain do not
leak to it through the answers.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Path, Request
from pydantic import BaseModel, ConfigDict, Field, JsonValue
from sqlalchemy.orm import Session

from placed.service import change_scope, problems
from placed.service.auth import AGENT, DOMAIN_ADMIN, ROOT_ADMIN, USER, Caller, allow
from placed.spec.schema import MAX_NAME
from placed.store import accounts, domains, events, tokens
from placed.store.claims import Actor
from placed.store.database import reading, writing
from placed.store.tables import Token

Role = Literal["root-admin", "domain-admin", "user", "agent"]
MAX_LIFETIME_S = tokens.MAX_LIFETIME_S
WHAT_SCOPE_NAMES = tokens.SCOPE_KINDS


NO_NUL = r"^[^\x00]*$"  # PostgreSQL stores no NUL in text


class TokenRequest(BaseModel):
    """A token to create."""

    model_config = ConfigDict(
        extra="forbid",
        # What store.tokens.shape_problem refuses, said in the schema: a root-admin takes
        # no scope, every other role one.
        json_schema_extra={
            "oneOf": [
                {
                    "properties": {"role": {"const": "root-admin"}, "scope": {"type": "null"}},
                },
                {
                    "properties": {
                        "role": {"enum": list[JsonValue](sorted(WHAT_SCOPE_NAMES))},
                        "scope": {"type": "string"},
                    },
                    "required": ["scope"],
                },
            ]
        },
    )

    role: Role
    scope: str | None = Field(
        default=None,
        min_length=1,
        max_length=MAX_NAME,
        pattern=NO_NUL,
        description="What the token acts for: a domain-admin's domain, a user's account, "
        "an agent's target (by name). None for a root-admin.",
    )
    description: str = Field(
        default="", max_length=255, pattern=NO_NUL, description="A note for people."
    )
    expires_in_s: int | None = Field(
        default=None,
        ge=1,
        le=MAX_LIFETIME_S,
        description="Seconds until the token stops working (at most ten years); none: it "
        "works until revoked.",
    )


class TokenInfo(BaseModel):
    """A token as listed: everything but its secret."""

    accessor: str = Field(description="The token's public id: plc_<accessor>_<secret>.")
    role: Role
    scope: str | None
    description: str
    created: datetime
    expires: datetime | None
    revoked: datetime | None


class NewToken(TokenInfo):
    token: str = Field(description="The token's text, shown in this answer only.")


class TokenList(BaseModel):
    items: list[TokenInfo]


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


def reach_of(session: Session, caller: Caller) -> change_scope.TokenReach:
    """The tokens `caller` manages, by the scope rule (service/change_scope.py)."""
    actor = Actor(accessor=caller.accessor, role=caller.role, scope=caller.scope)
    if caller.role != DOMAIN_ADMIN:  # no tenancy to read: all or nothing
        return change_scope.token_reach(actor, {}, {})
    return change_scope.token_reach(actor, domains.parents(session), accounts.domains_of(session))


def scope_error(detail: str, status: int = 422) -> problems.ProblemException:
    return problems.ProblemException(
        status, "invalid-scope", detail, errors=[{"pointer": "/scope", "detail": detail}]
    )


def check_shape(role: str, scope: str | None) -> None:
    """A scope of the shape the role needs (422; TokenRequest's schema says it too)."""
    problem = tokens.shape_problem(role, scope)
    if problem is not None:
        raise scope_error(problem)


def check_exists(session: Session, role: str, scope: str | None) -> None:
    """A scope naming a domain, account or target that exists: a well-formed request
    naming what the world does not have is a 409, as for a dedication's resource."""
    problem = tokens.scope_problem(session, role, scope)
    if problem is not None:
        raise scope_error(problem, 409)


def where(session: Session, role: str, scope: str | None) -> dict[str, str | None]:
    """The event's domain, account or target, for a token of `role` over `scope`."""
    return tokens.places(session, role, scope)


router = APIRouter(prefix="/v1", tags=["tokens"])

Manager = Annotated[Caller, allow(ROOT_ADMIN, DOMAIN_ADMIN)]


@router.post(
    "/tokens",
    status_code=201,
    summary="Create a token",
    description="The answer holds the token's text, the only time it is shown: only a "
    "hash of its secret is stored. A domain-admin creates domain-admin tokens for its "
    "domain and the domains below it, and user tokens for their accounts.",
    responses=problems.responses(403, 409, 422),
)
def create_token(body: TokenRequest, request: Request, caller: Manager) -> NewToken:
    with writing(request.app.state.database) as session:
        if caller.role == DOMAIN_ADMIN:
            if body.role not in (DOMAIN_ADMIN, USER):
                raise problems.ProblemException(
                    403, "forbidden", "a domain-admin creates domain-admin and user tokens only"
                )
            check_shape(body.role, body.scope)
            # Outside its subtree is refused whether or not the name exists (see above).
            if not reach_of(session, caller).holds(body.role, body.scope):
                what = WHAT_SCOPE_NAMES[body.role]
                raise problems.ProblemException(
                    403,
                    "forbidden",
                    f"{body.scope!r} is not a {what} within domain {caller.scope!r}",
                )
        else:
            check_shape(body.role, body.scope)
            check_exists(session, body.role, body.scope)
        row, text = tokens.create(session, body.role, body.scope, None, body.description)
        if body.expires_in_s is not None:
            # Counted from the row's own creation time, so expires - created is exact.
            row.expires = expires = row.created + timedelta(seconds=body.expires_in_s)
        else:
            expires = None
        events.append(
            session,
            "token.created",
            row.accessor,
            actor_accessor=caller.accessor,
            actor_role=caller.role,
            request_id=problems.request_id_of(request),
            details={"role": row.role, "scope": row.scope, "expires": _moment(expires)},
            **where(session, row.role, row.scope),
        )
        return NewToken(**info(row), token=text)


@router.get(
    "/tokens",
    summary="List tokens",
    description="Every token the caller manages (a root-admin: all; a domain-admin: those "
    "of its subtree), oldest first, without secrets.",
)
def list_tokens(request: Request, caller: Manager) -> TokenList:
    with reading(request.app.state.database) as session:
        reach = reach_of(session, caller)
        rows = [row for row in tokens.listed(session) if reach.holds(row.role, row.scope)]
        return TokenList(items=[TokenInfo(**info(row)) for row in rows])


@router.delete(
    "/tokens/{accessor}",
    summary="Revoke a token",
    description="From now on the token is refused; the answer is its row, `revoked` set. "
    "Revoking a revoked token changes nothing. A caller may revoke its own token. The last "
    "live root-admin token cannot be revoked (409 `last-root-admin`): create another first.",
    responses=problems.responses(404, 409),
)
def revoke_token(
    accessor: Annotated[str, Path(max_length=64, description="The token's accessor.")],
    request: Request,
    caller: Manager,
) -> TokenInfo:
    with writing(request.app.state.database) as session:
        row = session.get(Token, accessor)
        if row is None or not reach_of(session, caller).holds(row.role, row.scope):
            raise problems.ProblemException(404, "not-found", f"no token {accessor!r}")
        try:
            done = tokens.revoke_keeping_a_root(session, accessor)
        except tokens.LastRootAdmin as error:
            raise problems.ProblemException(409, "last-root-admin", str(error)) from None
        if done is None:  # tokens are never deleted; read above, so this cannot happen
            raise problems.ProblemException(404, "not-found", f"no token {accessor!r}")
        if done.just_now:
            events.append(
                session,
                "token.revoked",
                row.accessor,
                actor_accessor=caller.accessor,
                actor_role=caller.role,
                request_id=problems.request_id_of(request),
                details={"role": row.role, "scope": row.scope},
                **where(session, row.role, row.scope),
            )
        request.app.state.trusted_tokens.forget(accessor)
        return TokenInfo(**info(row))


def _moment(at: datetime | None) -> str | None:
    return at.isoformat() if at is not None else None


class Self(BaseModel):
    accessor: str | None = Field(description="The token's public id.")
    role: Role
    scope: str | None = Field(description="Its domain, account or target (by the role).")


@router.get(
    "/whoami",
    summary="The caller's own token",
    description="Which token this is: its accessor, role and scope (the console's header).",
    response_model=Self,
)
def whoami(caller: Annotated[Caller, allow(ROOT_ADMIN, DOMAIN_ADMIN, USER, AGENT)]) -> Self:
    return Self(accessor=caller.accessor, role=caller.role, scope=caller.scope)  # type: ignore[arg-type]
