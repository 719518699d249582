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

from collections.abc import Mapping
from datetime import datetime
from typing import Annotated, Literal

from fastapi import APIRouter, Path, Request
from pydantic import BaseModel, ConfigDict, Field, JsonValue

from placed.operations import change_scope
from placed.operations import tokens as operation
from placed.service import context, problems
from placed.service.auth import AGENT, DOMAIN_ADMIN, ROOT_ADMIN, USER, Caller, allow
from placed.spec.schema import MAX_NAME
from placed.store.claims import Actor

Role = Literal["root-admin", "domain-admin", "user", "agent"]
MAX_LIFETIME_S = operation.MAX_LIFETIME_S
WHAT_SCOPE_NAMES = operation.WHAT_SCOPE_NAMES


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


def rule_of(actor: Actor) -> operation.ReachRule:
    """The scope rule (operations/change_scope.py) for the tokens `actor` manages."""

    def reach(
        parents: Mapping[str, str | None], homes: Mapping[str, str]
    ) -> change_scope.TokenReach:
        return change_scope.token_reach(actor, parents, homes)

    return reach


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
    actor = context.actor(request, caller)
    row, text = operation.create(
        request.app.state.database,
        actor,
        rule_of(actor),
        body.role,
        body.scope,
        body.description,
        body.expires_in_s,
    )
    return NewToken(**row, token=text)


@router.get(
    "/tokens",
    summary="List tokens",
    description="Every token the caller manages (a root-admin: all; a domain-admin: those "
    "of its subtree), oldest first, without secrets.",
)
def list_tokens(request: Request, caller: Manager) -> TokenList:
    actor = context.actor(request, caller)
    rows = operation.listed(request.app.state.database, actor, rule_of(actor))
    return TokenList(items=[TokenInfo(**row) for row in rows])


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
    actor = context.actor(request, caller)
    row = operation.revoke(request.app.state.database, actor, rule_of(actor), accessor)
    # Revoked and committed: this process stops trusting it now, not in TRUST_SECONDS.
    request.app.state.trusted_tokens.forget(accessor)
    return TokenInfo(**row)


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
