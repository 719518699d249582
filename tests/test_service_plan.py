"""POST /v1/plan answers what `placed plan --format json` prints, and a bad spec comes
back as a problem whose errors are where the CLI puts them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from placed.cli.main import app as cli
from placed.operations.spec_plan import MAX_REQUEST_UNITS
from placed.service import create_app, documents
from placed.store.database import make_engine

from .service_support import bearer, served

ROOT = Path(__file__).resolve().parent.parent
PROBLEM = "application/problem+json"


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    """One database for the module (planning stores nothing), and a root-admin token."""
    url = f"sqlite:///{tmp_path_factory.mktemp('plan') / 'placed.db'}"
    _, token = served(url)
    return url, token


@pytest.fixture
def planner(store: tuple[str, str]) -> TestClient:
    """A client of an app on that database, sending the token."""
    url, token = store
    return TestClient(create_app(database=make_engine(url)), headers=bearer(token))


def test_plan_answers_the_document_the_cli_prints(planner: TestClient) -> None:
    spec = ROOT / "examples" / "distinct-racks.yaml"
    body = json.dumps(yaml.safe_load(spec.read_text()))
    response = planner.post("/v1/plan", content=body, headers={"content-type": "application/json"})
    assert response.status_code == 200, response.text
    printed = CliRunner().invoke(cli, ["plan", str(spec), "--format", "json"])
    assert printed.exit_code == 1, printed.output  # web/3 stays unplaced
    expected = json.loads(printed.stdout)
    assert response.json() == expected
    assert any(p["unit"] == "web/3" for p in expected["unplaced"])


def test_a_spec_error_is_a_problem_at_its_pointer_line_and_column(
    planner: TestClient, tmp_path: Path
) -> None:
    text = (
        "{\n"
        '  "name": "bad",\n'
        '  "inventory": [\n'
        '    {"id": "h1", "capacity": {"cpu": 4}}\n'
        "  ],\n"
        '  "workloads": [\n'
        '    {"name": "web", "units": "three"},\n'
        '    {"name": "db", "unitz": 1}\n'
        "  ]\n"
        "}\n"
    )
    response = planner.post("/v1/plan", content=text)
    assert response.status_code == 422, response.text
    assert response.headers["content-type"] == PROBLEM
    body = response.json()
    assert body["type"] == "urn:placed:problem:invalid-spec"
    assert body["request_id"] == response.headers["x-request-id"]
    units = next(e for e in body["errors"] if e["pointer"] == "/workloads/0/units")
    assert (units["line"], units["column"]) == (7, 30)
    # The same problems, at the same places, as `placed validate` gives for the file.
    path = tmp_path / "bad.json"
    path.write_text(text)
    validated = CliRunner().invoke(cli, ["validate", str(path), "--format", "json"])
    assert validated.exit_code == 2
    expected = [
        (e["line"], e["column"], e["message"]) for e in json.loads(validated.stdout)["errors"]
    ]
    assert [(e["line"], e["column"], e["detail"]) for e in body["errors"]] == expected
    assert len(expected) == 2


def test_malformed_json_is_an_invalid_spec_at_its_line(planner: TestClient) -> None:
    response = planner.post(
        "/v1/plan", content='{\n  "name": "x",\n  "inventory": [\n}', headers={}
    )
    assert response.status_code == 422
    body = response.json()
    assert body["type"] == "urn:placed:problem:invalid-spec"
    assert body["errors"][0]["line"] == 4


def test_a_body_that_is_not_utf8_is_an_invalid_spec(planner: TestClient) -> None:
    response = planner.post("/v1/plan", content=b'{"name": "\xff"}')
    assert response.status_code == 422
    error = response.json()["errors"][0]
    assert "not UTF-8" in error["detail"]
    assert (error["line"], error["column"]) == (1, 11)


def test_a_body_past_the_limit_is_a_413_problem(store: tuple[str, str]) -> None:
    url, token = store
    app = create_app(database=make_engine(url), max_body_bytes=1000)
    client = TestClient(app, headers=bearer(token))
    spec = json.dumps({"inventory": [{"id": f"h{i}"} for i in range(200)]})
    response = client.post("/v1/plan", content=spec)
    assert response.status_code == 413
    assert response.headers["content-type"] == PROBLEM
    assert response.json()["type"] == "urn:placed:problem:body-too-large"

    def chunks() -> object:
        for _ in range(20):
            yield b" " * 100  # no Content-Length: counted as it arrives

    streamed = client.post("/v1/plan", content=chunks())
    assert streamed.status_code == 413
    assert client.post("/v1/plan", content='{"inventory": [{"id": "h1"}]}').status_code == 200


def test_a_body_of_another_media_type_is_a_415_problem(planner: TestClient) -> None:
    response = planner.post("/v1/plan", content="name: x", headers={"content-type": "text/plain"})
    assert response.status_code == 415
    assert response.json()["type"] == "urn:placed:problem:unsupported-media-type"


def test_plan_is_counted_under_its_route(planner: TestClient) -> None:
    client = planner
    client.post("/v1/plan", content='{"inventory": [{"id": "h1"}]}')
    client.post("/v1/plan", content="{")
    text = client.get("/metrics").text
    assert 'placed_http_requests_total{code="200",method="POST",route="/v1/plan"} 1.0' in text
    assert 'placed_http_requests_total{code="422",method="POST",route="/v1/plan"} 1.0' in text


def test_plan_needs_a_token(planner: TestClient) -> None:
    # It stores nothing, but planning is CPU work: not for anyone who can reach the port.
    response = planner.post(
        "/v1/plan", content='{"inventory": [{"id": "h1"}]}', headers={"Authorization": ""}
    )
    assert response.status_code == 401
    assert response.json()["type"] == "urn:placed:problem:unauthenticated"


def test_a_lone_surrogate_in_the_spec_is_quoted_back_in_the_problem(
    planner: TestClient,
) -> None:
    # Found by the schema fuzz: JSON may escape a lone surrogate, which UTF-8 cannot
    # encode; the problem quoting it was a 500. It goes back escaped, as it came.
    body = (
        r'{"name": "x", "inventory": [{"id": "a"}],'
        r' "workloads": [{"name": "w", "constraints": "k\ud800 == v"}]}'
    )
    response = planner.post("/v1/plan", content=body, headers={"content-type": "application/json"})
    assert response.status_code == 422, response.text
    assert response.headers["content-type"] == PROBLEM
    assert b"\\ud800" in response.content
    (error,) = response.json()["errors"]
    assert error["pointer"] == "/workloads/0/constraints"
    assert "k\ud800 == v" in error["detail"]


def test_a_plan_of_more_units_than_the_service_plans_is_a_422_at_the_workload(
    planner: TestClient,
) -> None:
    """A spec may ask for a million units on the CLI; the service bounds the work one
    request may take from its threads, and says at once which workload asks."""
    spec = {
        "inventory": [{"id": "h1"}],
        "workloads": [
            {"name": "small", "units": 10},
            {"name": "huge", "units": MAX_REQUEST_UNITS},
        ],
    }
    response = planner.post("/v1/plan", json=spec)
    assert response.status_code == 422, response.text
    problem = response.json()
    assert problem["type"] == "urn:placed:problem:too-many-units"
    assert f"{MAX_REQUEST_UNITS + 10:,} units" in problem["detail"]
    assert problem["errors"][0]["pointer"] == "/workloads/1/units"
    spec["workloads"][1]["units"] = 10  # type: ignore[index]
    assert planner.post("/v1/plan", json=spec).status_code == 200
    claim = planner.post("/v1/workloads", json={"name": "w", "units": MAX_REQUEST_UNITS + 1})
    assert claim.status_code == 422, claim.text
    assert claim.json()["errors"][0]["pointer"] == "/units"


NATIVE_EXAMPLES = (
    "balanced-conductors.yaml",
    "cloudstack-dedication.yaml",
    "distinct-racks.yaml",
    "edge-namespaces.yaml",
    "ironic-service.yaml",
    "openhorizon-native.yaml",
)
JUJU_EXAMPLES = ("juju-bundle.yaml", "juju-deployer.yaml", "juju-proposed.yaml")


@pytest.mark.parametrize("name", NATIVE_EXAMPLES)
def test_each_examples_plan_is_the_documented_answer(planner: TestClient, name: str) -> None:
    """The schema's PlanAnswer holds every family's plan (schemathesis checks answers
    only to specs it makes up, which seldom place anything)."""
    response = planner.post(
        "/v1/plan",
        content=(ROOT / "examples" / name).read_text(),
        headers={"content-type": "application/yaml"},
    )
    assert response.status_code == 200, response.text
    answer = documents.PlanAnswer.model_validate(response.json())
    assert answer.placements, "an example that places nothing would check nothing"


@pytest.mark.parametrize("name", JUJU_EXAMPLES)
def test_each_juju_examples_applied_plan_is_the_documented_answer(
    store: tuple[str, str], name: str
) -> None:
    url, token = store
    client = TestClient(create_app(database=make_engine(url)), headers=bearer(token))
    response = client.post(
        "/v1/apply",
        params={"dry_run": "true"},
        content=(ROOT / "examples" / name).read_text(),
        headers={"content-type": "application/yaml"},
    )
    assert response.status_code == 200, response.text
    answer = documents.ApplyAnswer.model_validate(response.json())
    assert answer.new_targets and answer.placements


def test_a_claimed_workload_s_problems_are_worded_as_placed_validate_words_them(
    planner: TestClient, tmp_path: Path
) -> None:
    """POST /v1/workloads and PUT's spec: one problem per mistake, in the spec reader's
    words, pointing at the key (never at a branch of the schema's unions), as `placed
    validate` reports the same workload in a file."""
    body = {"name": "x", "units": "two", "avoid": {"workload": "a"}, "colour": 1}
    response = planner.post("/v1/workloads", json=body)
    assert response.status_code == 422, response.text
    answer = response.json()
    assert answer["type"] == "urn:placed:problem:invalid-spec"
    found = {e["pointer"]: e["detail"] for e in answer["errors"]}
    assert set(found) == {"/units", "/avoid/level", "/colour"}, found
    assert answer["detail"] == "the workload has 3 problems"
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({"name": "bad", "inventory": [{"id": "h1"}], "workloads": [body]}))
    validated = CliRunner().invoke(cli, ["validate", str(path), "--format", "json"])
    assert validated.exit_code == 2
    messages = sorted(e["message"] for e in json.loads(validated.stdout)["errors"])
    assert sorted(found.values()) == messages
    near = {"generation": 0, "spec": {"name": "x", "near": 5}}
    changed = planner.put("/v1/workloads/x", json=near)
    assert changed.status_code == 422, changed.text
    [error] = changed.json()["errors"]
    assert error["pointer"] == "/spec/near"
    assert error["detail"] == "expected a mapping or a list of mappings, got an integer 5"
