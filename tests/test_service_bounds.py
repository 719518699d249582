"""Requests cannot exhaust the server (issue 34): every route reads at most its limit of
body bytes, refuses a declared length past it before reading any and a chunked body once
it passes it, and checks the caller's token before it reads a byte; JSON nested past what
placed reads is a 422 on every route that takes a body. Each refusal leaves every table
as it was."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Iterator, MutableMapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.routing import APIRoute
from typer.testing import CliRunner

from placed.cli.main import app as cli
from placed.service import create_app, limits
from placed.service.auth import UNAUTHENTICATED, Rule, route_rules
from placed.service.ui.session import COOKIE
from placed.spec import SpecError
from placed.spec.errors import MAX_LISTED
from placed.spec.load import load_spec_text
from placed.spec.schema import MAX_NAME, MAX_UNIT_NAME, SpecDocument

from .service_support import issue, served, table_digest

WRITES = {"POST", "PUT", "PATCH", "DELETE"}


@dataclass
class Exchange:
    """One request driven straight through the app (ASGI): what it read of the body and
    what it answered."""

    read: int = 0
    status: int = 0
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""

    def json(self) -> Any:
        return json.loads(self.body)


def drive(
    app: FastAPI,
    method: str,
    path: str,
    headers: dict[str, str],
    chunks: Iterator[bytes],
) -> Exchange:
    """Send `method path` with `headers` and the body `chunks` (read only as the app
    asks), and collect the answer."""
    done = Exchange()

    async def receive() -> dict[str, Any]:
        chunk = next(chunks, None)
        if chunk is None:
            return {"type": "http.request", "body": b"", "more_body": False}
        done.read += len(chunk)
        return {"type": "http.request", "body": chunk, "more_body": True}

    async def send(message: MutableMapping[str, Any]) -> None:
        if message["type"] == "http.response.start":
            done.status = message["status"]
            done.headers = {k.decode(): v.decode() for k, v in message["headers"]}
        elif message["type"] == "http.response.body":
            done.body += message.get("body", b"")

    path, _, query = path.partition("?")
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": query.encode(),
        "root_path": "",
        "headers": [(k.lower().encode(), v.encode()) for k, v in headers.items()],
        "client": ("127.0.0.1", 1234),
        "server": ("testserver", 80),
    }
    asyncio.run(app(scope, receive, send))
    return done


def endless(size: int = 64 * 1024) -> Iterator[bytes]:
    while True:
        yield b" " * size


def nothing_read() -> Iterator[bytes]:
    """A body the app must not read: reading it fails the test."""
    raise AssertionError("the body was read")
    yield b""  # pragma: no cover


def concrete(template: str) -> str:
    return re.sub(r"\{\w+(:\w+)?\}", "x", template)


def body_routes(app: FastAPI) -> list[tuple[str, str]]:
    """Every (method, path template) that may take a body."""
    return sorted(key for key in route_rules(app) if key[0] in WRITES)


def reads_a_body(app: FastAPI, method: str, template: str) -> bool:
    """A route that reads its body: a FastAPI body parameter, a spec or a console form."""
    for route in app.routes:
        if not isinstance(route, APIRoute) or route.path != template:
            continue
        if method in (route.methods or set()):
            return (
                route.body_field is not None
                or (method, template) in limits.LIMITS
                or template.startswith("/ui/")
            )
    return False


@pytest.fixture
def world(database: str) -> tuple[FastAPI, str]:
    """An app on SQLite and on PostgreSQL (a refusal writes nothing on either)."""
    return served(database, max_body_bytes=200_000)


def as_root(app: FastAPI, root: str, template: str, length: int | None) -> dict[str, str]:
    headers = {"Authorization": f"Bearer {root}", "Content-Type": "application/json"}
    if template.startswith("/ui/"):
        headers = {
            "Cookie": f"{COOKIE}={root}",
            "Content-Type": "application/x-www-form-urlencoded",
        }
    if length is None:
        headers["Transfer-Encoding"] = "chunked"
    else:
        headers["Content-Length"] = str(length)
    return headers


def test_every_declared_limit_is_a_route_of_the_app() -> None:
    app = create_app()
    known = set(route_rules(app))
    assert set(limits.LIMITS) <= known, set(limits.LIMITS) - known
    assert limits.limit_of(app, "POST", "/v1/apply") == app.state.max_body_bytes
    assert limits.limit_of(app, "POST", "/v1/workloads") == limits.JSON_BODY_BYTES


def test_every_route_refuses_a_declared_length_past_its_limit_unread(
    world: tuple[FastAPI, str],
) -> None:
    app, root = world
    before = table_digest(app.state.database)
    for method, template in body_routes(app):
        limit = limits.limit_of(app, method, template)
        headers = as_root(app, root, template, limit + 1)
        done = drive(app, method, concrete(template), headers, nothing_read())
        assert done.status == 413, (method, template, done.status, done.body)
        assert done.headers["content-type"] == "application/problem+json"
        assert done.json()["type"] == "urn:placed:problem:body-too-large"
        assert f"{limit:,} bytes" in done.json()["detail"]
        assert done.headers["connection"] == "close"
    assert table_digest(app.state.database) == before


def test_every_route_refuses_a_chunked_body_once_it_passes_its_limit(
    world: tuple[FastAPI, str],
) -> None:
    app, root = world
    before = table_digest(app.state.database)
    checked = []
    for method, template in body_routes(app):
        if not reads_a_body(app, method, template):
            continue
        limit = limits.limit_of(app, method, template)
        headers = as_root(app, root, template, None)
        done = drive(app, method, concrete(template), headers, endless())
        if done.read == 0:
            continue  # a handler that reads no body (POST /ui/logout)
        assert done.status == 413, (method, template, done.status, done.body[:300])
        assert done.json()["type"] == "urn:placed:problem:body-too-large"
        # It stopped reading at the first chunk past the limit.
        assert limit < done.read <= limit + 64 * 1024, (template, done.read)
        checked.append(template)
    assert {"/v1/workloads", "/v1/apply", "/v1/tokens", "/ui/whatif/apply"} <= set(checked)
    assert table_digest(app.state.database) == before


def test_no_token_is_a_401_before_a_byte_of_the_body_is_read(
    world: tuple[FastAPI, str],
) -> None:
    app, _ = world
    agent = issue(app, "agent", "h1")
    before = table_digest(app.state.database)
    rules = route_rules(app)
    plain = drive(app, "GET", "/v1/workloads", {}, iter(()))
    assert plain.status == 401
    for (method, template), rule in rules.items():
        if method not in WRITES or not isinstance(rule, Rule):
            continue
        for authorization in ({}, {"Authorization": "Bearer plc_nobody_nothing"}):
            headers = {"Content-Length": str(200 * 1024 * 1024), **authorization}
            done = drive(app, method, concrete(template), headers, nothing_read())
            assert done.status == 401, (method, template, done.status)
            # The one 401 of every route: its body and challenge as without a body.
            assert done.headers["www-authenticate"] == "Bearer"
            answer = done.json()
            assert answer["detail"] == UNAUTHENTICATED
            assert {**answer, "request_id": ""} == {**plain.json(), "request_id": ""}
    # A live token of a role the route does not serve: a 403, still unread.
    headers = {"Content-Length": str(200 * 1024 * 1024), "Authorization": f"Bearer {agent}"}
    done = drive(app, "POST", "/v1/workloads", headers, nothing_read())
    assert done.status == 403 and done.json()["type"] == "urn:placed:problem:forbidden"
    assert table_digest(app.state.database) == before


def deep_json(depth: int) -> bytes:
    return b"[" * depth + b"]" * depth


def test_json_nested_past_what_placed_reads_is_a_422_on_every_body_route(
    world: tuple[FastAPI, str],
) -> None:
    app, root = world
    before = table_digest(app.state.database)
    body = deep_json(100_000)
    checked = []
    for method, template in body_routes(app):
        if template.startswith("/ui/") or not reads_a_body(app, method, template):
            continue
        headers = {**as_root(app, root, template, len(body)), "Content-Type": "application/json"}
        done = drive(app, method, concrete(template), headers, iter([body]))
        assert done.status == 422, (method, template, done.status, done.body[:300])
        kind = "invalid-spec" if limits.LIMITS.get((method, template)) == limits.SPEC else None
        answer = done.json()
        assert answer["type"] == f"urn:placed:problem:{kind or 'invalid-request'}"
        if kind is None:
            assert "more than 100 levels deep" in answer["detail"]
        else:
            assert "nests more than 1000 levels" in answer["errors"][0]["detail"]
        checked.append((method, template))
    assert ("PUT", "/v1/workloads/{name}") in checked and ("POST", "/v1/plan") in checked
    # Just past where Python's own reader gives up (the spec routes read it again for
    # the errors' pointers: a RecursionError there was a 500).
    for path in ("/v1/plan", "/v1/apply"):
        body = deep_json(999)
        headers = as_root(app, root, path, len(body))
        assert drive(app, "POST", path, headers, iter([body])).status == 422
    assert table_digest(app.state.database) == before


def test_nesting_counts_brackets_outside_strings_only() -> None:
    text = json.dumps({"a": ["[" * 300, '"{' * 300, "\\[" * 50], "b": [[[{"c": "]]]"}]]]})
    nesting = limits.Nesting()
    # In pieces cut anywhere, an escape or a string split across two of them included.
    for at in range(0, len(text), 7):
        nesting.feed(text[at : at + 7].encode())
    assert nesting.deepest == 5 and nesting.depth == 0 and not nesting.in_string


def test_a_json_body_at_the_depth_limit_is_read(world: tuple[FastAPI, str]) -> None:
    app, root = world
    inner = b"[" * (limits.MAX_JSON_DEPTH - 1) + b"]" * (limits.MAX_JSON_DEPTH - 1)
    body = b'{"role": "user", "scope": ' + inner + b"}"
    headers = as_root(app, root, "/v1/tokens", len(body))
    done = drive(app, "POST", "/v1/tokens", headers, iter([body]))
    # Read and refused by the model (a scope is a name), not by its depth.
    assert done.status == 422 and "levels deep" not in done.json()["detail"], done.body


def bad_inventory(hosts: int) -> bytes:
    """A spec with two problems in each host (a capacity that is no number, a tag that is
    no string)."""
    inventory = [{"id": f"h{i}", "capacity": {"cpu": "x"}, "tags": [1]} for i in range(hosts)]
    return json.dumps({"inventory": inventory}).encode()


def test_a_spec_with_many_problems_lists_the_first_100_and_counts_the_rest(
    world: tuple[FastAPI, str],
) -> None:
    app, _ = world
    agent = issue(app, "agent", "h1")  # any token may plan
    before = table_digest(app.state.database)
    app.state.max_body_bytes = 16 * 1024 * 1024
    try:
        body = bad_inventory(60_000)  # 3.4 MB, 120,000 problems
        headers = {"Authorization": f"Bearer {agent}", "Content-Length": str(len(body))}
        done = drive(app, "POST", "/v1/plan", headers, iter([body]))
    finally:
        app.state.max_body_bytes = 200_000
    assert done.status == 422
    answer = done.json()
    assert answer["type"] == "urn:placed:problem:invalid-spec"
    assert answer["detail"] == "the spec has 120,000 problems; the first 100 are listed"
    assert len(answer["errors"]) == 100 and len(done.body) < 30_000
    assert answer["errors"][0]["pointer"] == "/inventory/0/tags/0"
    # A body this large is not read again for lines and columns: pointers say where.
    assert answer["errors"][0]["line"] is None
    # A small one's problems have their lines.
    small = bad_inventory(60)
    headers = {"Authorization": f"Bearer {agent}", "Content-Length": str(len(small))}
    answer = drive(app, "POST", "/v1/plan", headers, iter([small])).json()
    assert answer["detail"] == "the spec has 120 problems; the first 100 are listed"
    assert answer["errors"][0]["line"] == 1 and len(answer["errors"]) == 100
    assert table_digest(app.state.database) == before


def test_the_reader_places_the_first_100_problems_and_counts_the_rest() -> None:
    with pytest.raises(SpecError) as raised:
        load_spec_text(bad_inventory(1000).decode(), "spec.json")
    error = raised.value
    assert len(error.problems) == MAX_LISTED and error.more == 1900 and error.count == 2000
    assert all(problem.position is not None for problem in error.problems)
    assert error.render().endswith("... and 1990 more problems")


def test_a_request_with_many_errors_lists_100(world: tuple[FastAPI, str]) -> None:
    app, root = world
    body = json.dumps({"down": [""] * 500}).encode()
    headers = as_root(app, root, "/v1/simulate", len(body))
    done = drive(app, "POST", "/v1/simulate", headers, iter([body]))
    assert done.status == 422
    assert done.json()["detail"] == "the request has 500 errors; the first 100 are listed"
    assert len(done.json()["errors"]) == 100


LONG = "n" * (MAX_NAME + 1)


def test_every_path_parameter_refuses_a_name_past_the_bound(world: tuple[FastAPI, str]) -> None:
    app, root = world
    before = table_digest(app.state.database)
    checked = 0
    for route in app.routes:
        if not isinstance(route, APIRoute) or not route.path.startswith("/v1/"):
            continue
        names = [param.name for param in route.dependant.path_params]
        if not names:
            continue
        path = route.path
        for name in names:
            path = re.sub(r"\{" + name + r"(:\w+)?\}", "n" * (MAX_UNIT_NAME + 1), path)
        for method in sorted(route.methods or ()):
            body = b"{}"
            headers = {**as_root(app, root, route.path, len(body))}
            done = drive(app, method, path, headers, iter([body]))
            assert done.status == 422, (method, route.path, done.status, done.body[:200])
            parameters = {error.get("parameter") for error in done.json()["errors"]}
            assert {f"path.{name}" for name in names} <= parameters, (route.path, parameters)
            checked += 1
    assert checked >= 15
    assert table_digest(app.state.database) == before


def post(app: FastAPI, root: str, path: str, payload: Any, method: str = "POST") -> Exchange:
    body = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    return drive(app, method, path, as_root(app, root, path, len(body)), iter([body]))


def test_a_name_past_253_characters_is_a_422_at_its_field_everywhere(
    world: tuple[FastAPI, str],
) -> None:
    app, root = world
    before = table_digest(app.state.database)
    host = {"id": "h1", "capacity": {"cpu": 4}}
    workload = {"name": "w", "units": 1, "resources": {"cpu": 1}}
    refused: list[tuple[str, str, Any, str]] = [
        ("POST", "/v1/workloads", {**workload, "name": LONG}, "/name"),
        (
            "PUT",
            "/v1/workloads/w",
            {"generation": 0, "spec": {**workload, "name": LONG}},
            "/spec/name",
        ),
        ("POST", "/v1/apply", {"name": LONG, "inventory": [host]}, "/name"),
        ("POST", "/v1/apply", {"inventory": [{**host, "id": LONG}]}, "/inventory/0/id"),
        (
            "POST",
            "/v1/apply",
            {"inventory": [{**host, "tags": [LONG]}]},
            "/inventory/0/tags/0",
        ),
        (
            "POST",
            "/v1/apply",
            {"inventory": [host], "workloads": [{**workload, "name": LONG}]},
            "/workloads/0/name",
        ),
        (
            "POST",
            "/v1/apply",
            {"inventory": [host], "tenancy": {"domains": {LONG: {}}}},
            "/tenancy/domains",
        ),
        ("POST", "/v1/plan", {"inventory": [{**host, "id": LONG}]}, "/inventory/0/id"),
        ("POST", "/v1/tokens", {"role": "user", "scope": LONG}, "/scope"),
        ("POST", "/v1/dedications", {"resource": LONG, "domain": "d"}, "/resource"),
        ("POST", "/v1/simulate", {"down": [LONG]}, "/down/0"),
        ("POST", "/v1/targets:batch", {"down": [LONG]}, "/down/0"),
        ("POST", "/v1/targets:drain", {"targets": [LONG]}, "/targets/0"),
    ]
    for method, path, payload, pointer in refused:
        done = post(app, root, path, payload, method)
        assert done.status == 422, (path, pointer, done.status, done.body[:300])
        pointers = [error.get("pointer") for error in done.json()["errors"]]
        assert any(p is not None and p.startswith(pointer) for p in pointers), (path, pointers)
        # The name itself is never echoed whole.
        assert LONG not in done.body.decode()
    for query in (
        f"/v1/workloads?after={LONG}",
        f"/v1/targets?after={LONG}",
        f"/v1/events?workload={LONG}",
        f"/v1/placements?target={LONG}",
    ):
        done = drive(app, "GET", query, {"Authorization": f"Bearer {root}"}, iter(()))
        assert done.status == 422, (query, done.status)
    done = post(app, root, f"/v1/apply?source={LONG}", {"inventory": [host]})
    assert done.status == 422 and done.json()["errors"][0]["parameter"] == "query.source"
    assert table_digest(app.state.database) == before
    # 253 is a name.
    done = post(app, root, "/v1/apply?dry_run=true", {"inventory": [{**host, "id": "h" * 253}]})
    assert done.status == 200, done.body[:300]


def test_the_spec_schema_bounds_names_as_the_routes_do() -> None:
    schema = json.dumps(SpecDocument.model_json_schema())
    assert f'"maxLength": {MAX_NAME}' in schema
    api = create_app().openapi()
    parameters = [
        parameter
        for operations in api["paths"].values()
        for operation in operations.values()
        for parameter in operation.get("parameters", [])
        if parameter["in"] == "path" and parameter["name"] != "accessor"
    ]
    assert parameters
    for parameter in parameters:
        assert parameter["schema"]["maxLength"] in (MAX_NAME, MAX_UNIT_NAME), parameter


def test_placed_validate_points_at_a_name_past_the_bound(tmp_path: Path) -> None:
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        "inventory:\n  - id: h1\n    capacity: {cpu: 4}\n"
        f"workloads:\n  - name: {'w' * 300}\n    units: 1\n"
    )
    result = CliRunner().invoke(cli, ["validate", str(spec)])
    assert result.exit_code == 2
    assert f"{spec}:5:11: workloads[0].name: String should have at most 253 characters" in (
        result.output
    )
    assert "Traceback" not in result.output
