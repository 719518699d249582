"""Schemathesis against the app's own OpenAPI schema (SERVICE.md, Tests): requests made
from the schema, valid and invalid, for a root-admin and for a user token, on SQLite and
PostgreSQL, under every check schemathesis has (`schemathesis run --checks all`): no
answer is a 5xx; every answer is one the schema documents (its status code, content
type, headers and body); a request the schema refuses is refused (4xx), and one it
admits is not refused as malformed (400, 422); an operation that declares a token
refuses a request without one or with a wrong one (401); a 405's `Allow` names the
path's documented methods. The checks that need the stateful phase or the coverage
phase (use_after_free, ensure_resource_availability, missing_required_header,
unsupported_method) run and pass vacuously here: RELIABILITY.md gives the CLI run that
has those phases; so does object_level_authorization, which needs identities configured
as peers (tests/test_role_matrix.py and tests/test_change_scope.py test who reaches
what). No check is excluded, tokens' DELETE included: the run's root-admin
token is the last live one (its revocation is a 409) and the user's accessor is never
drawn.

One check is narrowed, not dropped: positive_data_acceptance takes a 422 for a spec
body the schema admits when a rule of the spec refused it, a rule no JSON Schema can
say (`spec_rule`: a unit naming its workload, ids unique across the inventory...), and
only when the spec's models themselves take the body but for such a rule. The document
declares it: each operation that takes a spec says in its 422 which kinds of problem it
carries and why a schema-valid body can get one, and the repository's schemathesis.toml
lets the bare CLI (which cannot run the models) take a 422 on those operations alone.

The test walks whatever operations the schema has, so a route added later is fuzzed
without touching this file. It is bounded so that CI stays quick and reproducible: a
fixed seed, deterministic generation, 40 examples per operation, a deadline per
request, and no example database carried between runs: about 7,800 requests in two
minutes under CI=true (RELIABILITY.md).
"""

from __future__ import annotations

import json
import tomllib
from collections import Counter
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from fastapi import Depends, FastAPI
from fastapi.security import HTTPBearer
from hypothesis import HealthCheck, settings
from pydantic import ValidationError
from schemathesis.checks import CHECKS as REGISTERED_CHECKS
from schemathesis.checks import load_all_checks
from schemathesis.config import PositiveDataAcceptanceConfig
from schemathesis.specs.openapi.checks import (
    positive_data_acceptance as schemathesis_positive_data_acceptance,
)
from sqlalchemy import Engine

from placed.service import create_app
from placed.service.app import spec_operations
from placed.service.problems import MEDIA_TYPE, TYPE_PREFIX
from placed.spec.schema import SpecDocument, WorkloadSpec
from placed.store import accounts, schema, tokens
from placed.store.database import make_engine, writing

REPO = Path(__file__).resolve().parent.parent

load_all_checks()
# Every check schemathesis has (`schemathesis run --checks all`): the registry holds each
# built-in check once its OpenAPI checks are loaded. One is narrowed, below.
EVERY_CHECK = [check for check in REGISTERED_CHECKS.get_all() if not isinstance(check, type)]

# The operations whose body is a spec, or a workload of one, and how to read it.
SPEC_BODIES: dict[str, Callable[[Any], object]] = {
    "POST /v1/plan": SpecDocument.model_validate,
    "POST /v1/apply": SpecDocument.model_validate,
    "POST /v1/workloads": WorkloadSpec.model_validate,
    "PUT /v1/workloads/{name}": lambda body: WorkloadSpec.model_validate(body["spec"]),
}


def declared_kinds(operation: dict[str, Any], status: str) -> set[str]:
    """The problem types an operation's answer of `status` declares (`type`'s enum), or
    none when it declares any Problem."""
    schema = operation["responses"][status]["content"][MEDIA_TYPE]["schema"]
    return {
        kind
        for part in schema.get("allOf", [])
        for kind in part.get("properties", {}).get("type", {}).get("enum", [])
    }


# A spec's rule is what its operation's 422 declares, but for a body the schema refuses.
SPEC_RULES = {
    label: declared_kinds(operation, "422") - {f"{TYPE_PREFIX}invalid-request"}
    for label, operation in spec_operations(create_app().openapi()).items()
}


def spec_rule(response: Any, case: Any) -> bool:
    """A 422 for a spec the schema admits, by a rule of the spec no JSON Schema can say:
    ids unique across the inventory, a unit naming its workload, a heartbeat timeout of
    at least 3 heartbeat intervals, a world that can be planned, at most 100,000 units
    in one request for all its workloads together. The models must take
    the body but for their validators' rules, so a schema that admits what the models
    refuse still fails."""
    read = SPEC_BODIES.get(case.operation.label)
    if read is None or response.status_code != 422:
        return False
    if json.loads(response.content).get("type") not in SPEC_RULES[case.operation.label]:
        return False
    try:
        read(case.body)
    except ValidationError as error:
        # A rule of the models' own (a validator: value_error) is such a rule; any other
        # refusal (a type, a bound, a missing field) is the schema and the models
        # disagreeing: the document's fault.
        return all(found["type"] == "value_error" for found in error.errors())
    return True


def positive_data_acceptance(ctx: Any, response: Any, case: Any) -> bool | None:
    """Schemathesis's own check (a request the schema admits is not refused with 400 or
    422), but for a spec refused by a rule of the spec (`spec_rule`)."""
    if spec_rule(response, case):
        return None
    return schemathesis_positive_data_acceptance(ctx, response, case)


CHECKS = [
    positive_data_acceptance if check.__name__ == "positive_data_acceptance" else check
    for check in EVERY_CHECK
]
SEED = 20261201
EXAMPLES_PER_OPERATION = 40
# A request that takes this long is a bug, not load: the slowest (a plan) takes ms.
DEADLINE = timedelta(seconds=10)
ACCOUNT = "acct1"

CONFIG = schemathesis.Config.from_dict(
    {
        "seed": SEED,
        "generation": {
            "max-examples": EXAMPLES_PER_OPERATION,
            "deterministic": True,
            # Examples found in one run must not change what the next run tries.
            "database": "none",
            # The test sends each case with its callers' tokens (below), so a generated
            # Authorization header, valid or not, would never reach the server.
            "with-security-parameters": False,
        },
        "phases": {
            # The coverage phase sends every boundary of every field: some 1,400 requests
            # for the spec body alone, past this test's budget; the fuzzing phase samples.
            "coverage": {"enabled": False},
            # Stateful links are not declared; each operation is fuzzed on its own.
            "stateful": {"enabled": False},
        },
    }
)


# The engine plans about 50 µs per unit, so a spec's largest unit count (a million) is a
# minute's work; the fuzz is about the contract, not throughput (the benchmark's job).
FEW_UNITS = 100


def few_units(body: Any) -> Any:
    """`body` with every `units` count above FEW_UNITS brought down to it."""
    if isinstance(body, dict):
        return {
            key: FEW_UNITS
            if key == "units" and isinstance(value, int) and value > FEW_UNITS
            else few_units(value)
            for key, value in body.items()
        }
    if isinstance(body, list):
        return [few_units(item) for item in body]
    return body


@pytest.fixture
def engine(database: str) -> Iterator[Engine]:
    schema.upgrade(database)
    made = make_engine(database)
    yield made
    made.dispose()


@pytest.fixture
def callers(engine: Engine) -> dict[str, str]:
    """A token per role the fuzz speaks as: a root-admin, and a user of one account."""
    with writing(engine) as session:
        _, root = tokens.create(session, "root-admin", description="schema fuzz")
        accounts.create(session, ACCOUNT, "ROOT")
        _, user = tokens.create(session, "user", ACCOUNT, description="schema fuzz")
    return {"root-admin": root, "user": user}


# What the module's fuzz sent, by status class, printed when it ends (pytest -s shows
# it; RELIABILITY.md quotes it): every request the apps answered, the checks' own
# probes (ignored_auth's requests without a token or with a wrong one) included.
TALLY: Counter[str] = Counter()


@pytest.fixture(scope="module", autouse=True)
def tally() -> Iterator[None]:
    yield
    if TALLY:
        classes = ", ".join(f"{name}: {count:,}" for name, count in sorted(TALLY.items()))
        print(f"\nschemathesis fuzz: {TALLY.total():,} requests ({classes})")


@pytest.fixture
def app(engine: Engine) -> Iterator[FastAPI]:
    made = create_app(database=engine)
    yield made
    for metric in made.state.metrics.registry.collect():
        for sample in metric.samples:
            if sample.name == "placed_http_requests_total":
                TALLY[f"{sample.labels['code'][0]}xx"] += int(sample.value)


# The schema does not depend on the database, so it is read once, from an app without
# one, when pytest collects this module; each test sends its cases to its own app.
fuzzed = schemathesis.openapi.from_asgi("/openapi.json", create_app(), config=CONFIG)


@fuzzed.parametrize()
@settings(
    max_examples=EXAMPLES_PER_OPERATION,
    deadline=DEADLINE,
    derandomize=True,
    database=None,
    # The fixtures are per test, not per example: the app and its rows stay as the
    # examples change them, as a live service would.
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
def test_every_operation_answers_within_its_schema(
    case: Any, app: FastAPI, callers: dict[str, str]
) -> None:
    case.body = few_units(case.body)
    if isinstance(case.query, dict) and "wait" in case.query:
        # A long-poll answers after its wait when nothing happens: real time, not a fault.
        case.query["wait"] = 0
    # Making a case costs far more than sending it (the spec body's schema is large), so
    # each case goes out once per caller rather than being made again per caller.
    for token in callers.values():
        case.call_and_validate(app=app, headers={"Authorization": f"Bearer {token}"}, checks=CHECKS)


PROBLEM_CONTENT = {MEDIA_TYPE: {"schema": {"$ref": "#/components/schemas/Problem"}}}


def is_problem(content: Any) -> bool:
    """A Problem, or a Problem whose `type` is one of some kinds."""
    if content == PROBLEM_CONTENT:
        return True
    if not isinstance(content, dict) or list(content) != [MEDIA_TYPE]:
        return False
    parts = content[MEDIA_TYPE].get("schema", {}).get("allOf", [])
    return len(parts) == 2 and parts[0] == PROBLEM_CONTENT[MEDIA_TYPE]["schema"]


def operations(document: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    for path, methods in document["paths"].items():
        for method, operation in methods.items():
            yield f"{method.upper()} {path}", operation


def problem_rules(document: dict[str, Any]) -> list[str]:
    """What each operation of an OpenAPI document fails to declare of its problems."""
    missing = []
    for label, operation in operations(document):
        answers = operation.get("responses", {})
        for status, answer in answers.items():
            error = status == "default" or int(status) >= 400
            if error and not is_problem(answer.get("content")):
                missing.append(f"{label}: {status} is not a problem document")
        needed = {
            "500": "an unexpected error (the middleware answers it)",
            "400": "a request that cannot be read (a NUL in the query, a body not UTF-8)",
        }
        parameters = operation.get("parameters", [])
        if parameters or "requestBody" in operation:
            needed["422"] = "a request its schema refuses"
        if any(parameter.get("in") == "path" for parameter in parameters):
            needed["404"] = "a path naming nothing"
        if operation.get("security", document.get("security")):
            needed["401"] = "a missing or bad token"
        for status, why in needed.items():
            if status not in answers:
                missing.append(f"{label}: no {status} problem for {why}")
    return missing


def test_every_operation_declares_its_problems() -> None:
    document = create_app().openapi()
    assert "Problem" in document["components"]["schemas"]
    found = list(operations(document))
    assert {"GET /healthz", "GET /readyz", "GET /metrics", "POST /v1/plan"} <= {
        label for label, _ in found
    }
    assert problem_rules(document) == []


def test_the_problem_rules_catch_an_undeclared_problem() -> None:
    # Each rule, on a route that breaks it: else an empty list above would prove nothing.
    app = create_app()

    def lookup(name: str) -> dict[str, str]:
        return {"name": name}

    app.add_api_route("/v1/things/{name}", lookup, methods=["GET"])
    app.add_api_route(
        "/v1/plain",
        lookup,
        methods=["POST"],
        responses={409: {"description": "taken", "content": {"application/json": {}}}},
    )
    app.add_api_route(
        "/v1/secret", lambda: {}, methods=["GET"], dependencies=[Depends(HTTPBearer())]
    )
    assert sorted(problem_rules(app.openapi())) == [
        "GET /v1/secret: no 401 problem for a missing or bad token",
        "GET /v1/things/{name}: no 404 problem for a path naming nothing",
        "POST /v1/plain: 409 is not a problem document",
    ]


def test_every_spec_operation_declares_its_rules_and_the_cli_takes_them() -> None:
    # The operations that take a spec: the document's (its 422 says a schema-valid body
    # may be refused, and by which kinds), this test's readers, and the CLI's config.
    document = create_app().openapi()
    found = spec_operations(document)
    assert (
        set(found)
        == set(SPEC_BODIES)
        == {
            "POST /v1/plan",
            "POST /v1/apply",
            "POST /v1/workloads",
            "PUT /v1/workloads/{name}",
        }
    )
    for label, operation in found.items():
        answer = operation["responses"]["422"]
        assert "JSON Schema cannot state" in answer["description"], label
        kinds = declared_kinds(operation, "422")
        assert {f"{TYPE_PREFIX}{kind}" for kind in ("invalid-spec", "too-many-units")} <= kinds
        assert kinds - {f"{TYPE_PREFIX}invalid-request"} == SPEC_RULES[label]
    # No other operation declares kinds for its 422: a rule beyond its schema would be
    # one no check here knows of.
    others = [op for label, op in operations(document) if label not in found]
    assert all(not declared_kinds(op, "422") for op in others if "422" in op["responses"])
    # `schemathesis run`, started in the repository, reads schemathesis.toml: a 422 is
    # expected of those operations and of no other, on top of schemathesis's own list.
    config = tomllib.loads((REPO / "schemathesis.toml").read_text())
    (widened,) = config["operations"]
    assert set(widened["include-name"]) == set(found)
    statuses = widened["checks"]["positive_data_acceptance"]["expected-statuses"]
    assert sorted(statuses) == sorted([*PositiveDataAcceptanceConfig().expected_statuses, "422"])
    assert set(config) == {"operations"}
