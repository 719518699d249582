"""The service's skeleton through HTTP: probes, problem documents for every error,
request ids and metrics by route template."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from pydantic import BaseModel
from sqlalchemy.exc import DataError, OperationalError

from placed.operations.pointers import key_pointer
from placed.operations.spec_plan import MAX_REQUEST_UNITS
from placed.service import create_app
from placed.service.context import MAX_ID
from tests.service_support import client_of, served

PROBLEM = "application/problem+json"


class Body(BaseModel):
    count: int
    names: list[str]


def assert_problem(response: object, status: int, kind: str) -> dict[str, object]:
    from httpx import Response

    assert isinstance(response, Response)
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == PROBLEM
    body = response.json()
    assert body["type"] == f"urn:placed:problem:{kind}"
    assert body["status"] == status
    assert body["title"] and body["detail"]
    assert body["request_id"] == response.headers["x-request-id"]
    assert "Traceback" not in response.text
    return dict(body)


def test_healthz_answers_ok() -> None:
    response = TestClient(create_app()).get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}


def test_readyz_by_default_is_ready() -> None:
    response = TestClient(create_app()).get("/readyz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}


def test_readyz_not_ready_is_a_503_problem_with_the_reason() -> None:
    client = TestClient(create_app(readiness=lambda: "the schema is old: run placed db upgrade"))
    body = assert_problem(client.get("/readyz"), 503, "not-ready")
    assert body["detail"] == "the schema is old: run placed db upgrade"
    # Alive all the same.
    assert client.get("/healthz").status_code == 200


def test_readyz_check_that_raises_is_not_ready_without_a_traceback() -> None:
    def broken() -> str | None:
        raise ConnectionError("database at 10.0.0.1 refused")

    body = assert_problem(TestClient(create_app(readiness=broken)).get("/readyz"), 503, "not-ready")
    assert body["detail"] == "the readiness check failed: ConnectionError"


def test_unknown_route_is_a_404_problem() -> None:
    body = assert_problem(TestClient(create_app()).get("/v1/nothing"), 404, "not-found")
    assert "/v1/nothing" in str(body["detail"])


def test_wrong_method_is_a_405_problem_with_allow() -> None:
    response = TestClient(create_app()).delete("/healthz")
    body = assert_problem(response, 405, "method-not-allowed")
    assert response.headers["allow"] == "GET"
    assert "DELETE" in str(body["detail"])


@pytest.mark.parametrize(
    ("method", "path", "allowed"),
    [
        # Two routes serve the path: Starlette's own 405 names only the first one's.
        ("OPTIONS", "/v1/workloads", "GET, POST"),
        ("PATCH", "/v1/workloads/w1", "DELETE, GET, PUT"),
        ("OPTIONS", "/v1/dedications/zone1", "DELETE, PATCH"),
        # GET /v1/targets/{name:path} matches a heartbeat's path too, by taking a name
        # with a slash: the heartbeat's path is the one the document names.
        ("PUT", "/v1/targets/h1/heartbeat", "POST"),
        ("PUT", "/v1/targets/h1", "GET"),
    ],
)
def test_a_405_allows_every_method_of_its_path(method: str, path: str, allowed: str) -> None:
    app = create_app()
    response = TestClient(app).request(method, path)
    body = assert_problem(response, 405, "method-not-allowed")
    assert response.headers["allow"] == allowed
    assert str(body["detail"]).endswith(f"allowed: {allowed}")
    # The same methods the OpenAPI document lists for the path.
    template = {"/v1/workloads/w1": "/v1/workloads/{name}"}.get(path, path)
    template = template.replace("zone1", "{resource}").replace("h1", "{name}")
    documented = app.openapi()["paths"][template]
    assert sorted(m.upper() for m in documented) == allowed.split(", ")


def test_request_validation_is_a_422_problem_with_a_pointer_per_error() -> None:
    app = create_app()

    def echo(body: Body, limit: int = 10) -> dict[str, int]:
        return {"count": body.count}

    app.add_api_route("/test/echo", echo, methods=["POST"])
    client = TestClient(app)
    response = client.post("/test/echo?limit=many", json={"count": "x", "names": ["a", 2]})
    body = assert_problem(response, 422, "invalid-request")
    errors = body["errors"]
    assert isinstance(errors, list)
    assert {e.get("pointer") for e in errors} >= {"/count", "/names/1"}
    assert {"parameter": "query.limit"} in [{"parameter": e.get("parameter")} for e in errors]
    assert all(e["detail"] for e in errors)
    malformed = client.post(
        "/test/echo", content=b"{not json", headers={"content-type": "application/json"}
    )
    assert_problem(malformed, 422, "invalid-request")


def test_an_unexpected_exception_is_a_500_problem_without_the_traceback() -> None:
    app = create_app()

    def explode() -> None:
        raise RuntimeError("secret internal state")

    app.add_api_route("/test/explode", explode)
    response = TestClient(app).get("/test/explode")
    body = assert_problem(response, 500, "internal-error")
    assert "secret" not in response.text and "RuntimeError" not in response.text
    assert response.headers["x-request-id"] in str(body["detail"])


def test_a_database_connection_lost_under_a_request_is_a_503_to_retry() -> None:
    """The server restarted or an operator cut the connection (`pg_terminate_backend`):
    no bug of placed's, so no 500, and the client is told to try again."""
    app = create_app()

    def cut() -> None:
        lost = OperationalError("SELECT 1", {}, Exception("server closed the connection"))
        lost.connection_invalidated = True
        raise lost

    def broken() -> None:  # a database error that is not a lost connection stays a bug
        raise OperationalError("SELECT 1", {}, Exception("syntax"))

    app.add_api_route("/test/cut", cut)
    app.add_api_route("/test/broken", broken)
    client = TestClient(app)
    response = client.get("/test/cut")
    body = assert_problem(response, 503, "database-unavailable")
    assert response.headers["retry-after"] == "1"
    assert "may or may not have been stored" in str(body["detail"])
    assert_problem(client.get("/test/broken"), 500, "internal-error")


def test_a_nul_the_database_refuses_is_the_requests_fault() -> None:
    """A NUL in a text no model refused reaches PostgreSQL, which stores none: a 422
    problem, as a model's refusal would be; any other data error stays a 500."""
    app = create_app()

    def nul() -> None:
        refused = Exception("PostgreSQL text fields cannot contain NUL (0x00) bytes")
        raise DataError("INSERT", {}, refused)

    def other() -> None:
        raise DataError("INSERT", {}, Exception("value too long for type character"))

    app.add_api_route("/test/nul", nul)
    app.add_api_route("/test/other", other)
    client = TestClient(app)
    body = assert_problem(client.get("/test/nul"), 422, "invalid-request")
    assert "NUL" in str(body["detail"])
    assert_problem(client.get("/test/other"), 500, "internal-error")


def test_a_sane_request_id_is_echoed_and_any_other_replaced() -> None:
    client = TestClient(create_app())
    given = client.get("/healthz", headers={"X-Request-Id": "req-42.a:b"})
    assert given.headers["x-request-id"] == "req-42.a:b"
    forged = client.get("/nowhere", headers={"X-Request-Id": "x\tlevel=error msg=forged"})
    assert re.fullmatch(r"[0-9a-f]{32}", forged.headers["x-request-id"])
    assert forged.json()["request_id"] == forged.headers["x-request-id"]
    one, two = client.get("/healthz"), client.get("/healthz")
    assert one.headers["x-request-id"] != two.headers["x-request-id"]


def sample(text: str, name: str, **labels: str) -> float:
    """One sample's value from Prometheus' text (0 when it is absent)."""
    for line in text.splitlines():
        if line.startswith(f"{name}{{"):
            found, value = line[len(name) :].rsplit(" ", 1)
            if dict(re.findall(r'(\w+)="([^"]*)"', found)) == labels:
                return float(value)
    return 0.0


def test_metrics_count_requests_under_their_route_template() -> None:
    app = create_app()

    def target(id: str) -> dict[str, str]:
        return {"id": id}

    # A route of the test's own, so no real route answers first.
    app.add_api_route("/test/things/{id}", target)
    client = TestClient(app)
    for name in ("h1", "h2", "h3"):
        assert client.get(f"/test/things/{name}").status_code == 200
    client.get("/no/such/route")
    client.get("/another/unknown")
    response = client.get("/metrics")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain")
    text = response.text
    total = "placed_http_requests_total"
    assert sample(text, total, method="GET", route="/test/things/{id}", code="200") == 3
    assert "/test/things/h1" not in text
    assert sample(text, total, method="GET", route="<unmatched>", code="404") == 2
    count = "placed_http_request_duration_seconds_count"
    assert sample(text, count, method="GET", route="/test/things/{id}") == 3


def test_each_app_counts_on_its_own() -> None:
    first, second = TestClient(create_app()), TestClient(create_app())
    first.get("/healthz")
    first.get("/healthz")
    second.get("/healthz")
    total = "placed_http_requests_total"
    labels = {"method": "GET", "route": "/healthz", "code": "200"}
    assert sample(first.get("/metrics").text, total, **labels) == 2
    assert sample(second.get("/metrics").text, total, **labels) == 1


def test_an_invented_method_is_one_label_value() -> None:
    client = TestClient(create_app())
    client.request("BREW", "/healthz")
    text = client.get("/metrics").text
    assert sample(text, "placed_http_requests_total", method="other", route="/healthz", code="405")
    assert "BREW" not in text


def test_openapi_documents_problems_and_the_spec_body() -> None:
    schema = TestClient(create_app()).get("/openapi.json").json()
    components = schema["components"]["schemas"]
    plan = schema["paths"]["/v1/plan"]["post"]
    for status in ("413", "415"):
        content = plan["responses"][status]["content"]
        assert content == {PROBLEM: {"schema": {"$ref": "#/components/schemas/Problem"}}}
    # A spec's 422 is a Problem of the kinds a spec's rules give (a body the schema
    # admits may still break one).
    refused = plan["responses"]["422"]["content"][PROBLEM]["schema"]["allOf"]
    assert refused[0] == {"$ref": "#/components/schemas/Problem"}
    assert "urn:placed:problem:invalid-spec" in refused[1]["properties"]["type"]["enum"]
    body = plan["requestBody"]["content"]["application/json"]["schema"]
    # A plan needs an inventory; an apply adds to the store's.
    assert body == {
        "allOf": [{"$ref": "#/components/schemas/SpecDocument"}],
        "required": ["inventory"],
    }
    apply = schema["paths"]["/v1/apply"]["post"]["requestBody"]["content"]
    spec = {"$ref": "#/components/schemas/SpecDocument"}
    assert apply == {"application/json": {"schema": spec}, "application/yaml": {"schema": spec}}
    workload = {"allOf": [{"$ref": "#/components/schemas/WorkloadSpec"}]}
    post = schema["paths"]["/v1/workloads"]["post"]["requestBody"]["content"]
    assert post["application/json"]["schema"]["allOf"] == workload["allOf"]
    assert components["WorkloadUpdate"]["properties"]["spec"]["allOf"] == workload["allOf"]
    assert {"Problem", "ProblemError", "SpecDocument", "WorkloadSpec"} <= set(components)
    assert "HTTPValidationError" not in components
    assert schema["paths"]["/readyz"]["get"]["responses"]["503"]["content"][PROBLEM]
    text = str(schema)
    # Every reference resolves inside the document.
    for ref in re.findall(r"#/components/schemas/(\w+)", text):
        assert ref in components, ref


def test_a_dotted_key_becomes_a_pointer_resolved_against_the_body() -> None:
    data = {"inventory": [{"id": "a", "tags": {"topology.zone": "x"}}]}
    assert key_pointer("inventory[0].tags.topology.zone", data) == "/inventory/0/tags/topology.zone"
    assert key_pointer("workloads[0].units", None) == "/workloads/0/units"
    assert key_pointer("", data) == ""
    assert key_pointer("a/b~c", {"a/b~c": 1}) == "/a~1b~0c"


def test_what_the_document_says_a_parameter_or_body_takes_is_what_is_taken(
    tmp_path: Path,
) -> None:
    """Three places schemathesis found the document and the code apart."""
    app, root = served(f"sqlite:///{tmp_path / 'placed.db'}")
    client = client_of(app, root)
    document = client.get("/openapi.json").json()
    # `since` is a date-time: not a count of seconds since 1970, which pydantic takes.
    assert client.get("/v1/events", params={"since": "0.5"}).status_code == 422
    assert client.get("/v1/events", params={"since": "2026-12-01t09:00:00z"}).is_success
    # An offering's amounts are numbers: false is not 0.
    refused = client.post("/v1/offerings", json={"name": "small", "disk": False})
    assert_problem(refused, 422, "invalid-request")
    # The service's bound on units is the one the document gives a workload.
    units = document["components"]["schemas"]["WorkloadSpec"]["properties"]["units"]
    assert units["maximum"] == MAX_REQUEST_UNITS
    too_many = client.post("/v1/workloads", json={"name": "w", "units": units["maximum"] + 1})
    assert_problem(too_many, 422, "too-many-units")
    # An identifier is bounded where the document writes it as a float: exactly.
    generation = document["components"]["schemas"]["WorkloadUpdate"]["properties"]["generation"]
    assert generation["maximum"] == MAX_ID == float(MAX_ID)
    assert client.delete("/v1/workloads/w", params={"generation": MAX_ID + 1}).status_code == 422
