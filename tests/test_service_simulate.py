"""POST /v1/simulate: `placed simulate` on the stored world. The same document as the
CLI's (the same engine function), the revision it read, nothing written; a scoped
caller sees its own accounts' moves only, the others counted; a change made from it at
a revision since overtaken is refused."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient

from placed.engine.documents import simulation_document
from placed.engine.planner import Planner
from placed.engine.rebalance import simulate
from tests.conftest import EXAMPLES
from tests.running_servers import BIN, serving, upgrade
from tests.service_support import bearer, client_of, issue, served, table_digest

WORLD = """version: 1
name: shop
tenancy:
  domains:
    eng:
      accounts: [acme]
      children:
        eng-web: {accounts: [webco]}
    sales: {accounts: [globex]}
inventory:
  - {id: h1, capacity: {cpu: 4}}
  - {id: h2, capacity: {cpu: 4}}
  - {id: h3, capacity: {cpu: 4}}
workloads:
  - {name: web, account: acme, units: 2, resources: {cpu: 1}}
  - {name: site, account: webco, units: 1, resources: {cpu: 1}}
  - {name: shop, account: globex, units: 2, resources: {cpu: 1}}
  - {name: infra, units: 1, resources: {cpu: 1}}
"""


def world(database: str) -> tuple[TestClient, dict[str, dict[str, str]]]:
    app, root = served(database)
    client = client_of(app, root)
    answer = client.post(
        "/v1/apply", content=WORLD.encode(), headers={"content-type": "application/yaml"}
    )
    assert answer.status_code == 200, answer.text
    tokens = {
        "root": bearer(root),
        "eng": bearer(issue(app, "domain-admin", "eng")),
        "eng-web": bearer(issue(app, "domain-admin", "eng-web")),
        "acme": bearer(issue(app, "user", "acme")),
        "globex": bearer(issue(app, "user", "globex")),
        "agent": bearer(issue(app, "agent", "h1")),
    }
    return client, tokens


def busiest(client: TestClient) -> str:
    """The target with the most units (every workload has one there or more)."""
    items = client.get("/v1/placements", params={"limit": 1000}).json()["items"]
    count: dict[str, int] = {}
    for item in items:
        count[item["target"]] = count.get(item["target"], 0) + 1
    return max(sorted(count), key=lambda name: count[name])


def simulated(client: TestClient, headers: dict[str, str], body: Any) -> dict[str, Any]:
    answer = client.post("/v1/simulate", json=body, headers=headers)
    assert answer.status_code == 200, answer.text
    found: dict[str, Any] = answer.json()
    return found


def test_root_sees_every_move_as_the_cli_prints_it_and_nothing_changes(database: str) -> None:
    client, tokens = world(database)
    engine = client.app.state.database  # type: ignore[attr-defined]
    down = busiest(client)
    before = table_digest(engine)
    found = simulated(client, tokens["root"], {"down": [down], "up": []})
    assert table_digest(engine) == before
    assert found["hidden"] == {"moves": 0, "unplaced": 0, "unplaced_before": 0, "changes": 0}
    assert found["moved"] == len(found["moves"]) > 0
    assert {m["from"] for m in found["moves"]} == {down}
    # The same document `placed simulate` prints for the world as a spec: the world
    # exported as the store reads it gives the same moves.
    from placed.operations import placing
    from placed.store import world as stored
    from placed.store.database import reading

    with reading(engine) as session:
        snapshot = stored.read(session)
    planner = Planner(placing.world_spec(snapshot))
    offline = simulation_document(planner, simulate(planner, [down], []))
    assert found["revision"] == snapshot.revision
    kept = ("revision", "hidden", "changes")
    assert {k: v for k, v in found.items() if k not in kept} == offline
    # And what the change would write is what the batch's dry run says it writes.
    batch = client.post(
        "/v1/targets:batch",
        params={"dry_run": "true"},
        json={"down": [down]},
        headers=tokens["root"],
    )
    assert batch.status_code == 200, batch.text
    assert found["changes"] == batch.json()["moves"] and found["changes"]


def test_a_user_sees_its_own_moves_and_how_many_others_are_hidden(database: str) -> None:
    client, tokens = world(database)
    engine = client.app.state.database  # type: ignore[attr-defined]
    items = client.get("/v1/placements", params={"limit": 1000}).json()["items"]
    targets = sorted({item["target"] for item in items})  # every unit moves
    everything = simulated(client, tokens["root"], {"down": targets})
    workloads = {m["workload"] for m in everything["moves"]}
    assert workloads == {"web", "site", "shop", "infra"}, everything["moves"]
    assert everything["unplaced"], everything
    before = table_digest(engine)
    for who, mine in (
        ("acme", {"web"}),
        ("globex", {"shop"}),
        ("eng", {"web", "site"}),  # its subtree: acme and eng-web's webco
        ("eng-web", {"site"}),
    ):
        found = simulated(client, tokens[who], {"down": targets})
        expected = [m for m in everything["moves"] if m["workload"] in mine]
        assert found["moves"] == expected, who
        assert found["hidden"]["moves"] == len(everything["moves"]) - len(expected)
        changes = [m for m in everything["changes"] if m["workload"] in mine]
        assert found["changes"] == changes, who
        assert found["hidden"]["changes"] == len(everything["changes"]) - len(changes)
        assert found["moved"] == everything["moved"]
        shown = [u for u in everything["unplaced"] if u["workload"] in mine]
        assert found["unplaced"] == shown
        assert found["hidden"]["unplaced"] == len(everything["unplaced"]) - len(shown)
        assert found["revision"] == everything["revision"]
        # Nothing of another account's is named anywhere in the document.
        text = str(found)
        for other in {"web", "site", "shop", "infra"} - mine:
            assert f"'{other}/" not in text, (who, other)
    assert table_digest(engine) == before


def test_down_and_up_in_one_simulation(database: str) -> None:
    client, tokens = world(database)
    down = busiest(client)
    assert client.post(f"/v1/targets/{down}/down", headers=tokens["root"]).status_code == 200
    other = next(t for t in ("h1", "h2", "h3") if t != down)
    found = simulated(client, tokens["root"], {"down": [other], "up": [down]})
    assert found["down"] == [other] and found["up"] == [down]
    assert found["already_down"] == [] and found["already_up"] == []
    assert {m["from"] for m in found["moves"]} <= {other, down, None}
    assert any(m["from"] == other for m in found["moves"]), found["moves"]


def test_a_confirm_at_a_revision_since_overtaken_is_refused(database: str) -> None:
    client, tokens = world(database)
    engine = client.app.state.database  # type: ignore[attr-defined]
    seen = simulated(client, tokens["root"], {"down": ["h1"]})["revision"]
    # Something else changes the world meanwhile.
    assert client.post("/v1/targets/h3/down", headers=tokens["root"]).status_code == 200
    before = table_digest(engine)
    answer = client.post(
        "/v1/targets:batch",
        params={"expected_revision": seen},
        json={"down": ["h1"]},
        headers=tokens["root"],
    )
    assert answer.status_code == 409, answer.text
    assert answer.json()["type"] == "urn:placed:problem:revision-changed"
    assert table_digest(engine) == before
    fresh = simulated(client, tokens["root"], {"down": ["h1"]})
    assert fresh["revision"] > seen
    answer = client.post(
        "/v1/targets:batch",
        params={"expected_revision": fresh["revision"]},
        json={"down": ["h1"]},
        headers=tokens["root"],
    )
    assert answer.status_code == 200, answer.text


def test_an_agent_is_refused(database: str) -> None:
    client, tokens = world(database)
    answer = client.post("/v1/simulate", json={"down": ["h1"]}, headers=tokens["agent"])
    assert answer.status_code == 403
    assert answer.headers["content-type"].startswith("application/problem+json")


@pytest.mark.parametrize(
    ("body", "status", "pointer"),
    [
        ({}, 422, ""),
        ({"down": [], "up": []}, 422, ""),
        ({"down": ["nosuch"]}, 404, "/down/0"),
        ({"down": ["h1"], "up": ["h2", "nosuch"]}, 404, "/up/1"),
        # Each list is well-formed; together they conflict.
        ({"down": ["h1"], "up": ["h1"]}, 409, "/up"),
        ({"down": [""]}, 422, "/down/0"),
        ({"down": ["x" * 256]}, 422, "/down/0"),
        ({"down": [f"t{i}" for i in range(1001)]}, 422, "/down"),
        ({"down": "h1"}, 422, "/down"),
        ({"sideways": ["h1"]}, 422, "/sideways"),
        ({"down": ["h1"], "migrate": [{"unit": "web/0", "target": "h2"}]}, 409, "/migrate"),
        ({"migrate": [{"unit": "nosuch/0", "target": "h2"}]}, 404, "/migrate/0/unit"),
        ({"migrate": [{"unit": "web/0", "target": "nosuch"}]}, 404, "/migrate/0/target"),
        ({"migrate": [{"unit": "web/0"}]}, 422, "/migrate/0/target"),
    ],
)
def test_bad_bodies_are_problems_and_change_nothing(
    database: str, body: Any, status: int, pointer: str
) -> None:
    client, tokens = world(database)
    engine = client.app.state.database  # type: ignore[attr-defined]
    before = table_digest(engine)
    answer = client.post("/v1/simulate", json=body, headers=tokens["root"])
    assert answer.status_code == status, answer.text
    assert answer.headers["content-type"].startswith("application/problem+json")
    problem = answer.json()
    assert [e.get("pointer") for e in problem.get("errors", [])][:1] == [pointer], problem
    assert table_digest(engine) == before


def test_a_user_cannot_name_another_accounts_unit(database: str) -> None:
    client, tokens = world(database)
    answer = client.post(
        "/v1/simulate",
        json={"migrate": [{"unit": "shop/0", "target": "h2"}]},
        headers=tokens["acme"],
    )
    assert answer.status_code == 404, answer.text


def test_migrations_as_the_cli_judges_them(database: str) -> None:
    app, root = served(database)
    client = client_of(app, root)
    text = (EXAMPLES / "cloudstack-dedication.yaml").read_text()
    answer = client.post(
        "/v1/apply", content=text.encode(), headers={"content-type": "application/yaml"}
    )
    assert answer.status_code == 200, answer.text
    before = table_digest(app.state.database)
    unit = "dedicated-a1/0"
    where = client.get(f"/v1/units/{unit}").json()
    assert where.get("target"), where
    found = simulated(client, bearer(root), {"migrate": [{"unit": unit, "target": "H4a"}]})
    assert found["migrated"] == []
    assert [r["unit"] for r in found["refused"]] == [unit]
    assert found["refused"][0]["kind"] == "migration-refused"
    assert table_digest(app.state.database) == before


def placed(*args: str, token: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(BIN / "placed"), *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PLACED_TOKEN": token},
    )


def test_the_online_command_prints_what_the_offline_one_prints(tmp_path: Path) -> None:
    database = f"sqlite:///{tmp_path / 'placed.db'}"
    root = upgrade(database)
    spec = EXAMPLES / "ironic-service.yaml"
    with serving(database) as (base,):
        applied = httpx.post(
            f"{base}/v1/apply",
            content=spec.read_bytes(),
            headers={**bearer(root), "content-type": "application/yaml"},
            timeout=60,
        )
        assert applied.status_code == 200, applied.text
        online = placed(
            "simulate", "--down", "conductor1", "--server", base, "-f", "json", token=root
        )
        table = placed("simulate", "--down", "conductor1", "--server", base, token=root)
        both = placed("simulate", str(spec), "--down", "x", "--server", base, token=root)
        unknown = placed("simulate", "--down", "nosuch", "--server", base, token=root)
    offline = placed("simulate", str(spec), "--down", "conductor1", "-f", "json", token=root)
    assert online.returncode == offline.returncode, online.stderr
    found, expected = json.loads(online.stdout), json.loads(offline.stdout)
    assert found.pop("name") == base and expected.pop("name")
    assert found.pop("hidden") == {"moves": 0, "unplaced": 0, "unplaced_before": 0, "changes": 0}
    assert isinstance(found.pop("revision"), int)
    # What the change would write, which the offline command (no store) cannot say.
    changes = found.pop("changes")
    assert {(m["unit"], m["from"]) for m in changes} == {
        (m["unit"], m["from"]) for m in expected["moves"]
    }
    assert found == expected
    assert "conductor1 down: 3 of 3 units move" in table.stdout, table.stdout
    assert "nothing changed" in table.stdout
    assert both.returncode == 2 and "--server" in both.stderr
    assert unknown.returncode == 2 and "nosuch" in unknown.stderr and "404" in unknown.stderr
