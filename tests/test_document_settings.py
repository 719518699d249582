"""Settings belong to documents (issue 35): a document's `default_mode` governs the
workloads it defines and no other's; the world's settings (heartbeats, the guard,
implicit dedication) are the root-admin's, through PUT /v1/settings/{key}, which refuses
a document's. On SQLite and PostgreSQL (the `database` fixture), through the API."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Engine, select

from placed.service import create_app
from placed.store import schema, settings
from placed.store.database import make_engine, reading, writing
from placed.store.tables import Setting

ROOT = Path(__file__).resolve().parent.parent
IRONIC = (ROOT / "examples" / "ironic-service.yaml").read_text()
JUJU = (ROOT / "examples" / "juju-bundle.yaml").read_text()
YAML = {"content-type": "application/yaml"}


@pytest.fixture
def world(database: str) -> Iterator[tuple[TestClient, Engine]]:
    done = schema.upgrade(database)
    engine = make_engine(database)
    client = TestClient(create_app(database=engine))
    client.headers["authorization"] = f"Bearer {done.root_token}"
    try:
        yield client, engine
    finally:
        engine.dispose()


def apply(client: TestClient, text: str, **params: Any) -> Any:
    return client.post("/v1/apply", content=text, headers=YAML, params=params)


def modes(client: TestClient) -> dict[str, str]:
    return {w["name"]: w["mode"] for w in client.get("/v1/workloads").json()["items"]}


def placed(client: TestClient) -> dict[str, str | None]:
    items = client.get("/v1/placements").json()["items"]
    return {item["unit"]: item["target"] for item in items}


def rows(engine: Engine) -> dict[str, Any]:
    with reading(engine) as session:
        return {
            key: value["value"]
            for key, value in session.execute(select(Setting.key, Setting.value))
        }


def test_ironic_then_juju_both_apply(world: tuple[TestClient, Engine]) -> None:
    """The contradiction of issue 35: ironic-service.yaml's `default_mode: mapping` made
    the Juju bundle applied after it a 422 (its machine directives read as mapping
    units). Each document's workloads are read with its own settings now."""
    client, engine = world
    ironic = apply(client, IRONIC, source="ironic-service.yaml")
    assert ironic.status_code == 200, ironic.text
    juju = apply(client, JUJU, source="juju-bundle.yaml")
    assert juju.status_code == 200, juju.text
    assert modes(client) == {
        "node1": "mapping",
        "node2": "mapping",
        "node3": "mapping",
        "mysql": "allocation",
        "wordpress": "allocation",
        "haproxy": "allocation",
    }
    where = placed(client)
    assert where["mysql/0"] == "0" and where["haproxy/0"].startswith("1/lxd/")  # type: ignore[union-attr]
    assert {where[f"node{i}/0"] for i in (1, 2, 3)} <= {"conductor1", "conductor2", "conductor3"}
    # The document's own row (the bundle names no setting: none); the world's rows hold
    # no default_mode.
    found = rows(engine)
    assert found["d:ironic-conductors"] == {"default_mode": "mapping"}
    assert "d:bundle" not in found
    assert "default_mode" not in found
    # The other order, and either applied again, changes nothing.
    assert apply(client, IRONIC).json()["changes"] == []
    assert apply(client, JUJU).json()["changes"] == []
    assert placed(client) == where


def test_a_documents_settings_leave_other_documents_workloads_alone(
    world: tuple[TestClient, Engine],
) -> None:
    client, _ = world
    inventory = (
        "name: hosts\ninventory:\n  - {id: h1, capacity: {cpu: 8}}\n"
        "  - {id: h2, capacity: {cpu: 8}}\n"
    )
    assert apply(client, inventory).is_success
    assert apply(client, "name: apps\nworkloads:\n  - {name: web}\n").is_success
    agents = "name: agents\nsettings: {default_mode: every}\nworkloads:\n  - {name: agent}\n"
    assert apply(client, agents).is_success
    assert modes(client) == {"web": "allocation", "agent": "every"}
    assert sorted(u for u in placed(client) if u.startswith("agent/")) == ["agent/h1", "agent/h2"]
    assert [u for u in placed(client) if u.startswith("web/")] == ["web/0"]
    # The document changes its own default: its workloads follow, the other's do not.
    again = apply(client, agents.replace("every", "mapping"))
    assert again.status_code == 200, again.text
    assert modes(client) == {"web": "allocation", "agent": "mapping"}
    changed = client.get("/v1/events", params={"kind": "setting.changed"}).json()["items"]
    assert [(e["subject"], e["details"]["document"], e["details"]["was"]) for e in changed] == [
        ("default_mode", "agents", None),
        ("default_mode", "agents", "every"),
    ]
    # Applied again without settings, a document keeps them; with prune, it has none.
    assert apply(client, "name: agents\nworkloads:\n  - {name: agent}\n").is_success
    assert modes(client)["agent"] == "mapping"
    pruned = apply(client, "name: agents\nworkloads:\n  - {name: agent}\n", prune="true")
    assert pruned.status_code == 200, pruned.text
    assert modes(client) == {"web": "allocation", "agent": "allocation"}
    # A claim through the API is read with no document's settings.
    claimed = client.post("/v1/workloads", json={"name": "api-made"})
    assert claimed.status_code == 201, claimed.text
    assert modes(client)["api-made"] == "allocation"


def test_a_problem_of_stored_state_names_the_document(world: tuple[TestClient, Engine]) -> None:
    """A document's new settings leave a workload it stored before unplannable (two units
    of a workload every mode reads as one per target): the problem names that workload
    and its document. The workload is in no file of this request: no line and column."""
    client, _ = world
    assert apply(client, "name: hosts\ninventory: [{id: h1}, {id: h2}]\n").is_success
    assert apply(client, "name: agents\nworkloads:\n  - {name: agent, units: 2}\n").is_success
    refused = apply(client, "name: agents\nsettings: {default_mode: every}\nworkloads: []\n")
    assert refused.status_code == 422, refused.text
    problem = refused.json()
    assert problem["type"].endswith(":invalid-world")
    (error,) = problem["errors"]
    assert error["document"] == "agents"
    assert error["detail"].startswith("workload 'agent' of document 'agents': an every-mode")
    assert error["line"] is None and error["column"] is None
    assert modes(client) == {"agent": "allocation"}  # nothing changed


def test_a_problem_in_an_applied_juju_file_has_its_line_and_column(
    world: tuple[TestClient, Engine],
) -> None:
    """The document `bundle` made mapping its default before; the bundle applied as that
    document keeps it (apply keeps what it does not name), and its machine directives
    are then refused: at each application of the file, with its line and column."""
    client, _ = world
    assert apply(client, "name: bundle\nsettings: {default_mode: mapping}\n").is_success
    refused = apply(client, JUJU, source="juju-bundle.yaml")
    assert refused.status_code == 422, refused.text
    problem = refused.json()
    assert problem["type"].endswith(":invalid-world")
    where = [(e["pointer"], e["line"], e["column"], e["document"]) for e in problem["errors"]]
    assert where == [
        ("/applications/mysql", 8, 3, "bundle"),
        ("/applications/wordpress", 12, 3, "bundle"),
        ("/applications/haproxy", 17, 3, "bundle"),
    ]


def test_an_older_databases_world_default_mode_still_reads(
    world: tuple[TestClient, Engine],
) -> None:
    """A database written before settings were documents' has one `default_mode` row and
    no document rows: the documents it holds keep that default (re-applied without
    settings too), and a document applied since does not take it."""
    client, engine = world
    old = "name: old\ninventory: [{id: c1}, {id: c2}]\nworkloads: [{name: n1}, {name: n2}]\n"
    assert apply(client, old).is_success
    assert "d:old" not in rows(engine)  # it names no setting
    with writing(engine) as session:
        settings.put(session, settings.LEGACY_DEFAULT_MODE, "mapping", bump=False)
    assert modes(client) == {"n1": "mapping", "n2": "mapping"}
    assert apply(client, JUJU).status_code == 200
    assert modes(client)["mysql"] == "allocation"
    assert modes(client)["n1"] == "mapping"
    assert rows(engine)["d:bundle"] == {}  # what keeps the old row from reaching it
    assert apply(client, old).is_success
    assert modes(client)["n1"] == "mapping"
    assert rows(engine)["d:old"] == {"default_mode": "mapping"}


def test_put_settings_takes_the_worlds_and_refuses_a_documents(
    world: tuple[TestClient, Engine],
) -> None:
    client, engine = world
    refused = client.put("/v1/settings/default_mode", json={"value": "mapping"})
    assert refused.status_code == 422, refused.text
    problem = refused.json()
    assert problem["type"].endswith(":document-setting")
    assert problem["detail"].startswith("default_mode is a document's setting")
    changed = client.put("/v1/settings/heartbeat_interval_s", json={"value": 5})
    assert changed.status_code == 200, changed.text
    assert changed.json()["changed"] is True
    with reading(engine) as session:
        assert settings.heartbeats(session) == (5.0, 40.0)
    short = client.put("/v1/settings/heartbeat_timeout_s", json={"value": 10})
    assert short.status_code == 422 and "3 x heartbeat_interval_s" in short.text
    assert client.put("/v1/settings/implicit_dedication", json={"value": 3}).status_code == 422
    assert client.put("/v1/settings/heartbeat_interval_s", json={"value": True}).status_code == 422
    assert client.put("/v1/settings/disruption_guard_min_targets", json={"value": 1}).is_success
    with reading(engine) as session:
        assert settings.disruption_guard_min_targets(session) == 1


def test_document_names_meet_no_world_setting(world: tuple[TestClient, Engine]) -> None:
    """A document's row is `d:NAME`: a document named as a world setting leaves it be;
    the API's own document's name is refused."""
    client, engine = world
    named = (
        "name: heartbeat_interval_s\nsettings: {default_mode: mapping}\nworkloads:\n  - {name: x}\n"
    )
    assert apply(client, "name: h\ninventory:\n  - {id: h1}\n").is_success
    assert apply(client, named).is_success
    with reading(engine) as session:
        assert settings.heartbeats(session) == (10.0, 40.0)
    assert modes(client) == {"x": "mapping"}
    refused = apply(client, "name: api\nworkloads:\n  - {name: y}\n")
    assert refused.status_code == 422, refused.text
    assert refused.json()["type"].endswith(":reserved-name")
    assert refused.json()["errors"][0]["pointer"] == "/name"
