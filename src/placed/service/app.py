"""The app factory: every piece of state (metrics, readiness, limits) lives on the app
it builds, never in a module, so tests build as many apps as they like."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import APIRouter, FastAPI
from fastapi.openapi.utils import get_openapi
from fastapi.routing import APIRoute
from starlette.routing import BaseRoute

from placed import __version__
from placed.operations import batch_commits
from placed.operations.batch_commits import CommitProcess
from placed.operations.replica import ReplicaWorld
from placed.operations.spec_plan import MAX_REQUEST_UNITS
from placed.operations.store import Store
from placed.operations.sweeps import Fault
from placed.service import (
    apply,
    auth,
    controller,
    dedications,
    events,
    health,
    leader,
    locations,
    metrics,
    migrations,
    placements,
    plan,
    problems,
    simulate,
    targets,
    tokens,
    units,
    usage,
    workloads,
)
from placed.service.auth import TrustedTokens
from placed.service.bell import EventBell
from placed.service.forwarding import Forwarder, Forwarding
from placed.service.health import Readiness, always_ready
from placed.service.idempotency import Idempotency
from placed.service.limits import BodyLimits
from placed.service.lockout import AuthFailures
from placed.service.middleware import RequestContext
from placed.service.offload import Offload
from placed.service.ui import pages as console
from placed.spec.schema import spec_json_schema
from placed.store import notify

MAX_BODY_BYTES = 16 * 1024 * 1024


def create_app(
    database: Store | None = None,
    readiness: Readiness = always_ready,
    max_body_bytes: int = MAX_BODY_BYTES,
    log_json: bool = False,
    controlling: controller.Options | None = None,
    fault: Fault | None = None,
    commit_process: bool = False,
    auth_failures_per_minute: int = 0,
    access_log: bool = False,
    advertise: str | None = None,
) -> FastAPI:
    """`database`: the store's engine (None: only the routes that keep no state answer).
    `readiness`: None when the service can serve, else why not (GET /readyz answers
    503 with it). `max_body_bytes`: a larger request body gets a 413 problem.
    `controlling`: run a controller (service/controller.py) while the app runs, with
    these timings; `fault`: its fault hook (tests only). `commit_process`: while the app
    runs, claims' batches are committed by a process of its own
    (operations/batch_commits.py; not for an in-memory SQLite database, which another
    process cannot open). `auth_failures_per_minute`: an address that presents more
    tokens that are not live within a minute is answered 429 (service/lockout.py; 0, as
    the tests' apps have it, for never; `placed serve` holds off past 30). `access_log`:
    a log line per request from the request context middleware (`placed serve
    --log-format json`, in place of uvicorn's). `advertise`: the URL at which the other
    replicas reach this one, recorded in the lease while it leads, so they forward their
    writes to it (service/forwarding.py); None: they commit their own."""
    bell = EventBell()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        # Only a served app listens and controls (uvicorn, or a TestClient used as a
        # context): an app a test builds and drops holds no connection of its own.
        listener = None
        if database is not None:
            listener = notify.listener(database, bell.ring, bell.heard)
        if listener is not None:
            listener.start()
        running: controller.Controller | None = app.state.controller
        if running is not None:
            running.start()
        committing = None
        address = batch_commits.address_of(database) if database is not None else None
        if commit_process and address is not None:
            committing = CommitProcess(address)
            committing.start()
            app.state.replica.commit_process = committing
        try:
            yield
        finally:
            if committing is not None:
                app.state.replica.commit_process = None
                committing.close()
            if app.state.forwarder is not None:
                await app.state.forwarder.close()
            if running is not None:
                running.stop()
            if listener is not None:
                listener.stop()
            app.state.offload.close()

    app = FastAPI(
        title="placed",
        version=__version__,
        description="Decide where each unit of work goes, under policy, and explain why.",
        lifespan=lifespan,
        # placed's metrics are its own (/metrics); FastAPI's OpenTelemetry hooks would
        # otherwise look for configured providers on every request.
        telemetry={"tracing": False, "metrics": False, "logs": False, "operation_spans": False},
    )
    app.state.event_bell = bell
    app.state.database = database
    app.state.log_json = log_json  # each event's log line as JSON (service/eventlog.py)
    # The world in memory at one revision, for claims (operations/replica.py).
    app.state.replica = ReplicaWorld()
    if database is not None:
        app.state.replica.follow(database)
    app.state.trusted_tokens = TrustedTokens()
    app.state.auth_failures = AuthFailures(auth_failures_per_minute)
    app.state.metrics = found = metrics.HttpMetrics()
    app.state.readiness = readiness
    app.state.controller = (
        controller.Controller(
            database,
            found,
            log_json,
            controlling,
            fault,
            bell=bell,
            address=advertise,
            replica=app.state.replica,
        )
        if database is not None and controlling is not None
        else None
    )
    # Writes go to the lease holder when another replica holds it (service/forwarding.py).
    app.state.forwarder = (
        Forwarder(app.state.controller, found) if app.state.controller is not None else None
    )
    app.state.max_body_bytes = max_body_bytes
    # Large specs are read in a worker process of the app's (service/offload.py).
    app.state.offload = Offload()
    problems.install(app)
    auth.install(app)
    # Inside Forwarding: the replica that commits a keyed POST keeps its key (a follower
    # forwards the header with the write).
    app.add_middleware(Idempotency)
    # Inside BodyLimits: a forwarded write was checked and its body bounded here first.
    app.add_middleware(Forwarding)
    # Inside RequestContext: a refusal of a body has its request id and is counted.
    app.add_middleware(BodyLimits)
    app.add_middleware(RequestContext, metrics=found, access_log=access_log)
    for router in (
        health.router,
        metrics.router,
        plan.router,
        tokens.router,
        apply.router,
        simulate.router,
        targets.router,
        locations.router,
        workloads.router,
        units.router,
        placements.router,
        events.router,
        dedications.router,
        migrations.router,
        usage.router,
        leader.router,
        console.router,  # the web console at /ui, a client of /v1
    ):
        _add_routes(app, router)

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            app.openapi_schema = _schema(app)
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
    return app


# Most requests are claims. Starlette tries a request's path against each route in
# order, so the routes of the claim's path go first, in their declared order; every
# request still reaches the route it would in the declared order
# (tests/test_service_routes.py). A heartbeat's route could not go first: a PUT to its
# path would be refused by it (Allow: POST) instead of by GET /v1/targets/{name}.
HOT_PATHS = ("/v1/workloads",)


def _add_routes(app: FastAPI, router: APIRouter) -> None:
    """`router`'s routes into the app's own table, as if each were declared on the app.
    `include_router` would keep each router as one entry, which FastAPI matches by
    trying each of its routes, then tries them again to handle the request: about 10 us
    per router a request passes, and a claim passed eight of them. Every router here
    sets its prefix and tags where it declares its routes, and nothing else that
    `include_router` would merge (dependencies, responses, lifespans)."""
    table = app.router.routes
    for route in router.routes:
        assert isinstance(route, APIRoute), route
        declared_routes(app).append(route)
        if is_hot(route):
            table.insert(sum(1 for r in table if is_hot(r)), route)
        else:
            table.append(route)


def is_hot(route: Any) -> bool:
    return isinstance(route, APIRoute) and route.path in HOT_PATHS


def declared_routes(app: FastAPI) -> list[BaseRoute]:
    """The routes in the order the modules declare them: the OpenAPI document's order."""
    found: list[BaseRoute] | None = getattr(app.state, "declared_routes", None)
    if found is None:
        found = app.state.declared_routes = [r for r in app.router.routes]
    return found


def _in_declared_order(app: FastAPI) -> list[BaseRoute]:
    """Every route of the app, those the modules declare in their order, then any added
    to the app since (a test's)."""
    declared = declared_routes(app)
    known = {id(route) for route in declared}
    return [*declared, *(r for r in app.router.routes if id(r) not in known)]


def _parameter_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """A parameter's schema as the server reads the parameter. A query or path carries
    text, never a JSON null, so FastAPI's `{"type": "null"}` branch for an optional one
    promises nothing (absent is how a client leaves it out: it is not `required`), and a
    fuzzer reading the branch takes any other type for one the server must refuse, when
    on the wire it is the text the other branch takes. And no text there holds a NUL:
    the middleware refuses one (400) before any route reads it."""
    branches = schema.get("anyOf")
    if isinstance(branches, list):
        kept = [branch for branch in branches if branch != {"type": "null"}]
        if len(kept) == 1 and len(kept) < len(branches):
            rest = {key: value for key, value in schema.items() if key != "anyOf"}
            schema = {**kept[0], **rest}
    if schema.get("type") == "string" and "pattern" not in schema and "enum" not in schema:
        schema = {**schema, "pattern": NO_NUL}
    if schema.get("type") == "array" and isinstance(schema.get("items"), dict):
        schema = {**schema, "items": _parameter_schema(schema["items"])}
    return schema


# Any text but a NUL (written so that Python's re, ECMA 262 and Rust's regex read it alike).
NO_NUL = "^[^\\u0000]*$"


def _schema(app: FastAPI) -> dict[str, Any]:
    schema = get_openapi(
        title=app.title,
        version=app.version,
        description=app.description,
        routes=_in_declared_order(app),
    )
    components = schema.setdefault("components", {}).setdefault("schemas", {})
    components["Problem"] = problems.Problem.model_json_schema(
        ref_template="#/components/schemas/{model}"
    )
    components.update(components["Problem"].pop("$defs", {}))
    spec = spec_json_schema(ref_template="#/components/schemas/{model}")
    spec.pop("$id", None)
    components.update(spec.pop("$defs", {}))
    components["SpecDocument"] = spec
    # The service plans at most MAX_REQUEST_UNITS units in one request
    # (operations/spec_plan.py), and so at most that many for any one workload: the
    # spec's own bound is the CLI's.
    units = components["WorkloadSpec"]["properties"]["units"]
    units["maximum"] = min(units["maximum"], MAX_REQUEST_UNITS)
    units["description"] += (
        f" The service plans at most {MAX_REQUEST_UNITS:,} units in one request (422 "
        "too-many-units past it, the workloads of a document together)."
    )
    internal = problems.responses(500)[500]
    for operations in schema.get("paths", {}).values():
        for operation in operations.values():
            for parameter in operation.get("parameters", []):
                parameter["schema"] = _parameter_schema(parameter.get("schema", {}))
            found = operation.setdefault("responses", {})
            # FastAPI documents its own {detail} body for 422; placed answers a problem.
            if "422" in found:
                found["422"] = problems.responses(422)[422]
            # Any route may meet an unexpected error, answered by the middleware.
            found.setdefault("500", internal)
            # And a database connection lost under it (the middleware answers that too).
            found.setdefault("503", problems.responses(503)[503])
            # A connection past its address's cap (service/connections.py), or an
            # address held off after failing to authenticate (auth.describe).
            found.setdefault("429", problems.responses(429)[429])
            # A request that cannot be read at all (a body that is not UTF-8, a NUL in
            # the path or query) is a 400.
            found.setdefault("400", problems.responses(400)[400])
    for unused in ("HTTPValidationError", "ValidationError"):
        components.pop(unused, None)
    _describe_spec_rules(schema)
    auth.describe(schema, app)
    return schema


# The component schemas of a spec and of one of its workloads: what a body that carries a
# spec refers to.
SPEC_SCHEMAS = ("SpecDocument", "WorkloadSpec")
# What a spec's 422 may be: the body (or a query parameter) refused as the schema says
# (invalid-request, or invalid-spec for a spec read by the spec reader), a rule of the
# spec no JSON Schema can state (invalid-spec), more units than one request may plan.
SPEC_RULE_KINDS = ("invalid-request", "invalid-spec", "too-many-units")
# An operation that changes the world may also leave a world that cannot be planned;
# an apply may name its document with a reserved name (apply_documents.RESERVED_DOCUMENTS).
MORE_SPEC_RULE_KINDS = {
    "POST /v1/apply": ("invalid-world", "reserved-name"),
    "POST /v1/workloads": ("invalid-world",),
    "PUT /v1/workloads/{name}": ("invalid-world",),
}
SPEC_RULES = (
    "a body the schema admits may still be refused, by the spec's rules that JSON Schema "
    "cannot state (it relates fields to each other, not each field to its bounds): "
    "invalid-spec for an id used twice in the inventory, a name given twice (a workload, "
    "an offering, a running unit, a domain, an account in two domains), a reference to "
    "what the spec does not have (a workload, a target, a level, an offering, an account), "
    "a constraint expression or a Juju directive that does not parse, a field of another "
    "mode (max_load outside mapping; distinct, spread, near, avoid and to outside "
    "allocation), a running unit not named WORKLOAD/N, heartbeat_timeout_s under 3 x "
    "heartbeat_interval_s; invalid-world for a world the change would leave that cannot "
    f"be planned; too-many-units past {MAX_REQUEST_UNITS:,} units in one request "
    "(the workloads of a document together). Each error names its place (pointer, and "
    "line and column for a spec)."
)


def spec_operations(schema: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The operations whose request body carries a spec, by label (`POST /v1/plan`)."""
    components = schema.get("components", {}).get("schemas", {})

    def carries_spec(node: Any, seen: frozenset[str]) -> bool:
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str):
                name = ref.rsplit("/", 1)[-1]
                if name in SPEC_SCHEMAS:
                    return True
                return name not in seen and carries_spec(components.get(name), seen | {name})
            return any(carries_spec(value, seen) for value in node.values())
        if isinstance(node, list):
            return any(carries_spec(item, seen) for item in node)
        return False

    return {
        f"{method.upper()} {path}": operation
        for path, operations in schema.get("paths", {}).items()
        for method, operation in operations.items()
        if carries_spec(operation.get("requestBody"), frozenset())
    }


def _describe_spec_rules(schema: dict[str, Any]) -> None:
    """A spec body's 422 says which problems it carries and why a schema-valid body can
    get one: a client (or a fuzzer) reading the document learns that the schema is
    necessary, not sufficient."""
    for label, operation in spec_operations(schema).items():
        kinds = (*SPEC_RULE_KINDS, *MORE_SPEC_RULE_KINDS.get(label, ()))
        operation["responses"]["422"] = problems.response_of_kinds(422, kinds, SPEC_RULES)
