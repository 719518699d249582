"""GET /v1/units/{unit} from the replica's world in memory (operations/cached_explain.py)
says what the general path says (unit_description.described: the whole world read, loaded and
planned again): for placed, pending, mapping and every-mode units, after claims this
replica took, claims another replica took, and a target another replica took down, so
that a cache behind the store's revision, or one brought forward wrongly, fails here."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from placed.operations import unit_description
from placed.operations.replica import ReplicaWorld
from placed.service import create_app, problems
from placed.service.ui import pages
from placed.store import world
from placed.store.database import make_engine, reading

from .service_support import bearer, issue, served

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"

RACKS = """
name: racks
inventory:
  - id: z1
    kind: zone
    children:
      - id: r1
        kind: rack
        children: [{id: h1, capacity: {cpu: 4}, tags: [gpu]}, {id: h2, capacity: {cpu: 4}}]
      - {id: r2, kind: rack, children: [{id: h3, capacity: {cpu: 8}}, {id: h4, capacity: {cpu: 2}}]}
  - id: z2
    kind: zone
    children:
      - id: r3
        kind: rack
        children: [{id: h5, capacity: {cpu: 4}, tags: [gpu]}, {id: h6, capacity: {cpu: 4}}]
      - {id: r4, kind: rack, children: [{id: h7, capacity: {cpu: 3}}, {id: h8, capacity: {cpu: 4}}]}
workloads:
  - {name: conductors, mode: mapping, units: 9}
  - {name: web, units: 5, resources: {cpu: 1}, spread: {over: zone, max_skew: 1}}
  - {name: capped, mode: mapping, units: 12, max_load: 1.2}
  - {name: huge, units: 2, resources: {cpu: 16}}
  - {name: agent, mode: every, tags: [gpu], resources: {cpu: 1}}
  - {name: db, units: 3, resources: {cpu: 2}, distinct: rack}
  - {name: train, units: 2, tags: [gpu], resources: {cpu: 2}}
  - {name: batch, units: 7, resources: {cpu: 0.1}}
"""


def applied(database: str, spec: str) -> tuple[FastAPI, str]:
    app, root = served(database)
    answer = TestClient(app).post(
        "/v1/apply", content=spec, headers={**bearer(root), "content-type": "application/yaml"}
    )
    assert answer.status_code == 200, answer.text
    return app, root


def every_unit(app: FastAPI) -> list[str]:
    with reading(app.state.database) as session:
        return list(world.read(session).units)


def from_cache(app: FastAPI, unit: str, accounts: set[str] | None = None) -> dict[str, Any]:
    """The cached world's answer, asserting it gave one (no fall back to the general path)."""
    engine = app.state.database
    replica: ReplicaWorld = app.state.replica
    found = replica.read_current(
        engine, lambda cached: unit_description._from_cache(engine, cached, unit, accounts)
    )
    assert found is not None, f"the cache did not answer for {unit}"
    return found


def same_everywhere(app: FastAPI, root: str, names: list[str]) -> dict[str, dict[str, Any]]:
    """Each unit's document from the cache, from the general path and from the route:
    all the same. The general path's documents, by unit."""
    client = TestClient(app, headers=bearer(root))
    found = {}
    for unit in names:
        general = unit_description.described(app.state.database, unit)
        assert from_cache(app, unit) == general, unit
        route = client.get(f"/v1/units/{unit}")
        assert route.status_code == 200, route.text
        assert route.json() == json.loads(json.dumps(general)), unit
        found[unit] = general
    return found


def test_the_cached_world_explains_each_unit_as_the_general_path_does(database: str) -> None:
    app, root = applied(database, RACKS)
    names = every_unit(app)
    first = same_everywhere(app, root, names)
    kinds = {(doc["explanation"]["placed"], doc["workload"]) for doc in first.values()}
    # Placed and pending units, of each mode, all compared.
    assert (False, "huge") in kinds and (True, "web") in kinds
    assert {"conductors", "capped", "agent", "db", "train", "batch"} <= {w for _, w in kinds}
    assert "agent/h1" in names
    rebuilds = app.state.replica.rebuilds
    # Claims this replica takes (the cache moves with its own commits) and claims another
    # replica takes (the cache reads them from the rows): no rebuild for either.
    client = TestClient(app, headers=bearer(root))
    made = client.post("/v1/workloads", json={"name": "mine", "units": 3, "resources": {"cpu": 1}})
    assert made.status_code == 201, made.text
    other = create_app(database=make_engine(database))
    other_root = issue(other, "root-admin")
    theirs = TestClient(other, headers=bearer(other_root)).post(
        "/v1/workloads", json={"name": "theirs", "units": 2, "resources": {"cpu": 1}}
    )
    assert theirs.status_code == 201, theirs.text
    names = every_unit(app)
    assert {"mine/2", "theirs/1"} <= set(names)
    after_claims = same_everywhere(app, root, names)
    assert app.state.replica.rebuilds == rebuilds
    # The claims took room: a pending unit's verdicts say so (what a cache that missed
    # them would not).
    assert after_claims["huge/0"] != first["huge/0"]
    # Another replica takes a target down: this one's cache is behind the store.
    down = TestClient(other, headers=bearer(other_root)).post("/v1/targets/h5/down", json={})
    assert down.status_code == 200, down.text
    names = every_unit(app)
    after_down = same_everywhere(app, root, names)
    verdicts = {v["target"]: v for v in after_down["train/0"]["explanation"]["targets"]}
    assert not verdicts["h5"]["compatible"]
    assert "agent/h5" not in names


def test_a_tenants_world_is_explained_from_the_cache_as_in_full(database: str) -> None:
    """CloudStack's example: dedications, implicit dedication held by running VMs, VMs
    already running (so the cached spec numbers their units after those), offerings."""
    app, root = applied(database, (EXAMPLES / "cloudstack-dedication.yaml").read_text())
    names = every_unit(app)
    assert len(names) == 9 and "dedicated-a1/1" in names
    same_everywhere(app, root, names)
    client = TestClient(app, headers=bearer(root))
    made = client.post(
        "/v1/workloads", json={"name": "fast-a7", "account": "A7", "offering": "dedicated-small"}
    )
    assert made.status_code == 201, made.text
    same_everywhere(app, root, every_unit(app))


def test_a_world_with_a_directive_is_explained_by_the_general_path(database: str) -> None:
    """A Juju directive is read with the units that run: the cache declines, the route
    answers with the general path's document."""
    spec = RACKS + "  - {name: pinned, units: 2, to: [h2, h3], resources: {cpu: 1}}\n"
    app, root = applied(database, spec)
    engine = app.state.database
    with pytest.raises(LookupError):
        app.state.replica.read_current(
            engine, lambda cached: unit_description._from_cache(engine, cached, "pinned/1", None)
        )
    same_route = TestClient(app, headers=bearer(root)).get("/v1/units/pinned/1")
    assert same_route.json() == json.loads(
        json.dumps(unit_description.described(engine, "pinned/1"))
    )
    assert same_route.json()["explanation"]["target"] == "h3"


def test_a_unit_out_of_reach_is_not_found_from_the_cache_either(database: str) -> None:
    app, _ = applied(database, (EXAMPLES / "cloudstack-dedication.yaml").read_text())
    unit = next(u for u in every_unit(app) if u.startswith("dedicated-a1/"))
    ways: list[Callable[[], dict[str, Any]]] = [
        lambda: from_cache(app, "nothing/0"),
        lambda: from_cache(app, unit, {"U2"}),
        lambda: unit_description.described(app.state.database, unit, {"U2"}),
    ]
    for way in ways:
        with pytest.raises(problems.ProblemException) as refused, problems.operation_errors():
            way()
        assert refused.value.status == 404
    assert from_cache(app, unit, {"A1"})["account"] == "A1"


# The unit page's rows as its template wrote them before they were made in Python
# (ui/pages.py, verdict_rows): the same text, every value escaped.
TEMPLATE_ROWS = """  <tbody>
  {% for v in verdicts %}
  <tr>
    <th scope="row">{{ v.target }}</th>
    <td>{% if explanation.placed and v.target == explanation.target %}<strong>chosen</strong>{% elif v.compatible %}yes{% else %}no{% endif %}</td>
    <td>{{ "%g" | format(v.score) if v.compatible else "-" }}</td>
    <td>{% for r in v.reasons %}{{ r.filter }}: {{ r.message }}{% if not loop.last %}; {% endif %}{% else %}-{% endfor %}</td>
  </tr>
  {% endfor %}
  </tbody>
"""  # noqa: E501


@pytest.mark.parametrize("placed", [True, False])
def test_the_unit_pages_rows_are_what_its_template_wrote(placed: bool) -> None:
    verdicts: list[dict[str, Any]] = [
        {"target": "h<1>&'\"", "compatible": True, "score": 2.5, "reasons": []},
        {"target": "h2", "compatible": True, "score": 0.0, "reasons": []},
        {
            "target": "h3",
            "compatible": False,
            "score": None,
            "reasons": [
                {"filter": "constraints", "message": 'purpose == "lab" is false: <b>'},
                {"filter": "capacity", "message": "needs 8 cpu, 2 free & more"},
            ],
        },
        {"target": "h4", "compatible": True, "score": -1e-7, "reasons": []},
    ]
    explanation = {"placed": placed, "target": "h2" if placed else None}
    expected = pages.templates.from_string(TEMPLATE_ROWS).render(
        verdicts=verdicts, explanation=explanation
    )
    made = pages.templates.from_string("  <tbody>\n{{ rows }}  </tbody>\n").render(
        rows=pages.verdict_rows(verdicts, explanation)
    )
    assert made == expected
    assert "&lt;b&gt;" in made
    assert ("<strong>chosen</strong>" in made) == placed
