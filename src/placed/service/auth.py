"""Who is calling, and whether the route lets them: every route declares a rule.

A route that needs a token takes `caller: Annotated[Caller, allow(ROOT_ADMIN, USER)]`
and gets the verified caller; a route anyone may call (probes, metrics) says so with
`dependencies=[public()]`. `route_rules(app)` reads the declarations back from the app,
so a test walks every route and fails on one that declares nothing (SERVICE.md: the
role matrix).

A request without a live token is a 401 that never says what was wrong with it (no
header, not a token, unknown, wrong secret, expired, revoked): telling them apart would
help only someone probing tokens. A live token whose role the route does not allow is a
403. Reading a token writes nothing (no "last used"), so a read stays a read.

A token found live is trusted for `TRUST_SECONDS` in this process without asking the
database again (never past its expiry), as keystonemiddleware's token cache does: a
revocation through this process ends the trust at once, one through another replica (or
`placed token revoke` on the database) within those seconds.
"""

from __future__ import annotations

import hashlib
import inspect
import re
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Annotated, Any

from fastapi import Depends, FastAPI, Request, Response
from fastapi.dependencies.models import Dependant
from fastapi.exceptions import RequestValidationError
from fastapi.routing import APIRoute, RouteContext, iter_route_contexts
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from starlette.concurrency import run_in_threadpool
from starlette.routing import Route

from placed.operations import tokens
from placed.operations.tokens import ROLES
from placed.service import problems
from placed.service.lockout import AuthFailures

ROOT_ADMIN, DOMAIN_ADMIN, USER, AGENT = ROLES
EVERY_ROLE = ROLES

CHALLENGE = {"WWW-Authenticate": "Bearer"}
# scope["state"][CHECKED]: (token text, Caller), a caller already checked for this request
CHECKED = "placed.caller"
# One message for every way a token can fail to count (see the module's docstring).
UNAUTHENTICATED = "this route needs a valid bearer token (Authorization: Bearer plc_...)"

bearer = HTTPBearer(
    auto_error=False,
    scheme_name="bearer",
    bearerFormat="plc_<accessor>_<secret>",
    description="A placed token, as placed db upgrade or POST /v1/tokens printed it.",
)


@dataclass(frozen=True, slots=True)
class Caller:
    """A verified caller. `scope`: a domain-admin's domain, a user's account, an agent's
    target (names); None for a root-admin."""

    accessor: str | None
    role: str
    scope: str | None


TRUST_SECONDS = 2.0
TRUSTED_AT_MOST = 10_000  # tokens remembered; past it, the memory starts again


class TrustedTokens:
    """Tokens found live lately, by a digest of their text (the text itself is never
    kept), each until its trust runs out."""

    def __init__(self, seconds: float = TRUST_SECONDS) -> None:
        self.seconds = seconds
        self._lock = threading.Lock()
        self._found: dict[bytes, tuple[Caller, float]] = {}

    @staticmethod
    def _key(text: str) -> bytes:
        return hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()

    def get(self, text: str) -> Caller | None:
        key = self._key(text)
        with self._lock:
            found = self._found.get(key)
            if found is None:
                return None
            if found[1] <= time.monotonic():
                del self._found[key]
                return None
            return found[0]

    def keep(self, text: str, caller: Caller, expires: datetime | None) -> None:
        seconds = self.seconds
        if expires is not None:
            seconds = min(seconds, tokens.seconds_until(expires))
        if seconds <= 0:
            return
        with self._lock:
            if len(self._found) >= TRUSTED_AT_MOST:
                self._found.clear()
            self._found[self._key(text)] = (caller, time.monotonic() + seconds)

    def forget(self, accessor: str) -> None:
        with self._lock:
            for key in [k for k, (c, _) in self._found.items() if c.accessor == accessor]:
                del self._found[key]


def unauthenticated() -> problems.ProblemException:
    return problems.ProblemException(401, "unauthenticated", UNAUTHENTICATED, headers=CHALLENGE)


def held_off(seconds: int) -> problems.ProblemException:
    return problems.ProblemException(
        429,
        "too-many-auth-failures",
        "too many requests from this address presented a token that is not live; no "
        f"token from it is checked for {seconds} s",
        headers={"Retry-After": str(seconds)},
    )


async def authenticate(request: Request, text: str | None) -> Caller:
    """The caller a token's text names; a 401 problem when it names no live token, a
    429 while the client's address is held off for failing too often (lockout.py)."""
    failures: AuthFailures = request.app.state.auth_failures
    address = request.client.host if request.client else ""
    wait = failures.retry_after(address)
    if wait is not None:
        raise held_off(wait)
    if not text:
        raise unauthenticated()
    trusted: TrustedTokens = request.app.state.trusted_tokens
    caller = trusted.get(text)
    if caller is not None:
        request.state.accessor = caller.accessor  # for the access log (middleware.py)
        return caller
    database = request.app.state.database
    if database is None:
        raise problems.ProblemException(
            503, "not-ready", "this service has no database, so it cannot check tokens"
        )
    found = await run_in_threadpool(tokens.look_up, database, text)
    if found is None:
        request.app.state.metrics.auth_failures.inc()
        failures.failed(address)
        raise unauthenticated()
    caller = Caller(found.accessor, found.role, found.scope)
    trusted.keep(text, caller, found.expires)
    request.state.accessor = caller.accessor
    return caller


@dataclass(frozen=True, slots=True)
class Rule:
    """A route's rule: the roles that may call it. Scoping within a role (which domain,
    which account) is the handler's, since it depends on what the request names."""

    roles: frozenset[str]

    async def __call__(
        self,
        request: Request,
        credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)],
    ) -> Caller:
        text = credentials.credentials if credentials else None
        # The body limits (service/limits.py) check a request with a body before it is
        # read: its caller is not looked up again.
        checked = request.scope.get("state", {}).get(CHECKED)
        if checked is not None and checked[0] == text:
            caller: Caller = checked[1]
        else:
            caller = await authenticate(request, text)
        if caller.role not in self.roles:
            allowed = ", ".join(role for role in ROLES if role in self.roles)
            raise problems.ProblemException(
                403,
                "forbidden",
                f"{request.method} {_shown(route_path(request))} is for {allowed}; "
                f"this token is a {caller.role} token",
            )
        return caller


@dataclass(frozen=True, slots=True)
class Public:
    """The marker of a route anyone may call, token or not."""

    def __call__(self) -> None:
        return None


PUBLIC = Public()


def allow(*roles: str) -> Any:
    """The rule of a route, as the type of its caller parameter:
    `caller: Annotated[Caller, allow(ROOT_ADMIN, DOMAIN_ADMIN)]`."""
    unknown = [role for role in roles if role not in ROLES]
    if unknown or not roles:
        raise ValueError(f"a rule names roles among {', '.join(ROLES)}, not {unknown or 'none'}")
    return Depends(Rule(frozenset(roles)))


def public() -> Any:
    """The rule of a route anyone may call: `dependencies=[public()]`."""
    return Depends(PUBLIC)


def route_path(request: Request) -> str:
    """The route's template (never the raw path, which is the caller's text)."""
    return str(getattr(request.scope.get("route"), "path", "") or request.url.path)


_CONVERTER = re.compile(r"\{(\w+):\w+\}")


def _shown(template: str) -> str:
    """A route template as the API documents it: `{name}`, not Starlette's `{name:path}`."""
    return _CONVERTER.sub(r"{\1}", template)


def rules_of(dependant: Dependant) -> Iterable[Rule | Public]:
    if isinstance(dependant.call, Rule | Public):
        yield dependant.call
    for sub in dependant.dependencies:
        yield from rules_of(sub)


def documentation_paths(app: FastAPI) -> set[str]:
    """FastAPI's own documentation routes: public by nature (the schema is no secret)."""
    paths = {app.openapi_url, app.docs_url, app.redoc_url}
    if app.docs_url:
        paths.add(app.swagger_ui_oauth2_redirect_url)
    return {path for path in paths if path}


def rule_of(route: RouteContext, documentation: set[str]) -> Rule | Public | None:
    """The one rule a route declares; None for none. Two is a mistake in the route."""
    if isinstance(route.original_route, APIRoute):
        dependant: Dependant | None = route.dependant
        found = set(rules_of(dependant)) if dependant is not None else set()
        if len(found) > 1:
            raise ValueError(f"{route.path} declares {len(found)} rules; give it one")
        return found.pop() if found else None
    if isinstance(route.original_route, Route) and route.path in documentation:
        return PUBLIC
    return None


def route_rules(app: FastAPI) -> dict[tuple[str, str], Rule | Public | None]:
    """Every (method, path template) of the app with the rule it declares (None: none),
    routers included at any depth."""
    documentation = documentation_paths(app)
    found: dict[tuple[str, str], Rule | Public | None] = {}
    for route in iter_route_contexts(app.routes):
        methods = set(route.methods or ())
        rule = rule_of(route, documentation)
        # Starlette answers HEAD wherever it answers GET: one entry covers both.
        for method in sorted(methods - {"HEAD"} if "GET" in methods else methods):
            found[(method, str(route.path))] = rule
    return found


def install(app: FastAPI) -> None:
    """Check the rule before a body that is not JSON is answered: FastAPI parses JSON
    before it runs any dependency, and a caller without a live token learns nothing,
    that its body is malformed included, before its token is checked."""
    answer_invalid = app.exception_handlers[RequestValidationError]

    async def rule_first(request: Request, error: Exception) -> Response:
        route = request.scope.get("route")
        dependant = getattr(route, "dependant", None)
        rules = [r for r in rules_of(dependant) if isinstance(r, Rule)] if dependant else []
        if rules:
            found = await bearer(request)
            await rules[0](request, found)
        answered = answer_invalid(request, error)
        return await answered if inspect.isawaitable(answered) else answered

    app.add_exception_handler(RequestValidationError, rule_first)


def describe(schema: dict[str, Any], app: FastAPI) -> None:
    """Each operation's roles, and the 401, 403 and 429 problems its rule may answer, in the
    OpenAPI schema (so no router has to repeat them)."""
    paths = schema.get("paths", {})
    for (method, path), rule in route_rules(app).items():
        # The schema writes a route's {name:path} as {name}.
        operation = paths.get(re.sub(r"\{(\w+):\w+\}", r"{\1}", path), {}).get(method.lower())
        if operation is None:
            continue
        if isinstance(rule, Public):
            operation["security"] = []
            continue
        if rule is None:
            continue
        roles = [role for role in ROLES if role in rule.roles]
        statuses = (401, 403) if len(roles) < len(ROLES) else (401,)
        found = problems.responses(*statuses)
        found[401]["headers"] = {
            "WWW-Authenticate": {"description": "Bearer", "schema": {"type": "string"}}
        }
        # An address held off for failing to authenticate too often (lockout.py).
        found.update(problems.responses(429))
        found[429]["headers"] = {
            "Retry-After": {"description": "Seconds to wait.", "schema": {"type": "integer"}}
        }
        operation.setdefault("responses", {}).update({str(k): v for k, v in found.items()})
        note = f"Roles: {', '.join(roles)}."
        given = operation.get("description")
        operation["description"] = f"{given}\n\n{note}" if given else note
