"""CloudStack dedication over the API (issue 16): dedicate, update, release and list
through the dedication rules, VMs placed under them, migrations and maintenance judged by
them, implicit dedication as a setting; each step an event in its transaction, each
refusal a problem of the rule's kind that leaves the database as it was. SQLite and
PostgreSQL."""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from alembic import command
from fastapi.testclient import TestClient
from httpx import Response
from sqlalchemy import Engine, delete, select

from placed.operations import evacuate as evacuating
from placed.operations.cloudstack import MAX_FAILURE_EVENTS
from placed.service import locations as locations_route
from placed.service import targets as targets_route
from placed.service.app import create_app
from placed.service.auth import Caller
from placed.service.context import principal
from placed.store import schema, tokens
from placed.store.claims import Actor
from placed.store.database import make_engine, reading, writing
from placed.store.tables import Base, DedicationRow, EventRow, Revision
from tests.conftest import EXAMPLES

SPEC = """
name: cloud
settings:
  implicit_dedication: false
tenancy:
  domains:
    D1:
      accounts: [A1, A2]
      children:
        SD1: {accounts: [S1]}
    D2: {accounts: [B1]}
inventory:
  - id: z1
    kind: zone
    children:
      - id: p1
        kind: pod
        children:
          - id: c1
            kind: cluster
            children:
              - {id: h1, kind: host, capacity: {cpu: 2}}
              - {id: h2, kind: host, capacity: {cpu: 2}}
              - {id: h3, kind: host, capacity: {cpu: 2}}
offerings:
  - {name: dedicated, cpu: 1, dedicated: true}
  - {name: shared, cpu: 1}
"""

PROBLEM = "application/problem+json"


# What a failed deploy may change: its events, and the event counter on the revision row
# (whose value the caller checks apart).
RECORDED = frozenset({"events", "revision"})


@dataclass
class World:
    client: TestClient
    engine: Engine
    tokens: dict[str, str] = field(default_factory=dict)

    def as_(self, who: str) -> dict[str, str]:
        """The headers of a real token of `who` (role:scope), made once."""
        if who not in self.tokens:
            role, _, scope = who.partition(":")
            with writing(self.engine) as session:
                _, self.tokens[who] = tokens.create(session, role, scope or None)
        return {"Authorization": f"Bearer {self.tokens[who]}"}

    def digest(self, without: frozenset[str] = frozenset()) -> str:
        """Every row of every table (but `without`), in key order, as one hash."""
        found = hashlib.sha256()
        with reading(self.engine) as session:
            for table in Base.metadata.sorted_tables:
                if table.name in without:
                    continue
                order = list(table.primary_key.columns) or list(table.columns)
                for row in session.execute(select(table).order_by(*order)):
                    found.update(repr((table.name, tuple(row))).encode())
        return found.hexdigest()

    def revision(self) -> int:
        with reading(self.engine) as session:
            return int(session.scalar(select(Revision.value)) or 0)

    def events(self, kind: str | None = None) -> list[dict[str, Any]]:
        query = "/v1/events?limit=1000" + (f"&kind={kind}" if kind else "")
        answer = self.client.get(query)
        assert answer.status_code == 200, answer.text
        return list(answer.json()["items"])

    def refused(
        self, status: int, kind: str, method: str, path: str, **options: Any
    ) -> dict[str, Any]:
        """The request is refused as `kind` and changes nothing at all."""
        before = self.digest()
        answer = self.client.request(method, path, **options)
        assert_problem(answer, status, kind)
        assert self.digest() == before, f"{method} {path} changed the database"
        return dict(answer.json())

    def deploy_fails(self, body: dict[str, Any], **options: Any) -> list[dict[str, Any]]:
        """The claim is refused as unplaceable and changes nothing but the events: one
        `placement.failed` per unit (CloudStack: "event generated"); they are returned."""
        before, revision = self.digest(without=RECORDED), self.revision()
        seen = max((e["id"] for e in self.events()), default=0)
        answer = self.client.post("/v1/workloads", json=body, **options)
        assert_problem(answer, 409, "unplaceable")
        assert self.digest(without=RECORDED) == before, "a failed deploy changed the world"
        assert self.revision() == revision
        found = [e for e in self.events() if e["id"] > seen]
        assert [e["kind"] for e in found] == ["placement.failed"] * len(found), found
        assert [e["subject"] for e in found] == [
            f"{body['name']}/{k}" for k in range(int(body.get("units", 1)))
        ]
        for event in found:
            assert event["workload"] == body["name"]
            assert event["details"]["why"] and event["details"]["cause"] in (
                "placement-failed",
                "zone-closed",
            )
        return found

    def dedicate(self, resource: str, domain: str, account: str | None = None) -> Response:
        body = {"resource": resource, "domain": domain}
        if account is not None:
            body["account"] = account
        answer: Response = self.client.post("/v1/dedications", json=body)
        return answer

    def vm(self, name: str, account: str, offering: str, units: int = 1) -> Response:
        body = {"name": name, "account": account, "offering": offering, "units": units}
        answer: Response = self.client.post("/v1/workloads", json=body)
        return answer


def assert_problem(answer: Response, status: int, kind: str) -> None:
    assert answer.status_code == status, answer.text
    assert answer.headers["content-type"] == PROBLEM
    assert answer.json()["type"] == f"urn:placed:problem:{kind}", answer.text


def hosts_of(answer: Response) -> dict[str, str | None]:
    """Each unit the answer placed or moved, and where to."""
    return {change["unit"]: change["to"] for change in answer.json()["changes"]}


@pytest.fixture
def world(database: str) -> Iterator[World]:
    root = schema.upgrade(database).root_token
    engine = make_engine(database)
    app = create_app(database=engine)
    try:
        with TestClient(app) as client:
            client.headers["authorization"] = f"Bearer {root}"
            applied = client.post(
                "/v1/apply", content=SPEC, headers={"content-type": "application/yaml"}
            )
            assert applied.status_code == 200, applied.text
            yield World(client, engine)
    finally:
        engine.dispose()


def test_a_big_failed_deploy_records_a_bounded_number_of_events(world: World) -> None:
    """A claim may ask for 100,000 units: its refusal writes at most MAX_FAILURE_EVENTS
    failure events, the last counting the units left unrecorded, and nothing else."""
    units = MAX_FAILURE_EVENTS + 7
    before, revision = world.digest(without=RECORDED), world.revision()
    seen = max((e["id"] for e in world.events()), default=0)
    answer = world.vm("a2-many", "A2", "dedicated", units=units)
    assert_problem(answer, 409, "unplaceable")
    assert f"{units} of the units cannot be placed" in answer.json()["detail"]
    assert world.digest(without=RECORDED) == before
    assert world.revision() == revision
    found = [e for e in world.events() if e["id"] > seen]
    assert [e["subject"] for e in found] == [f"a2-many/{k}" for k in range(MAX_FAILURE_EVENTS)]
    assert {e["kind"] for e in found} == {"placement.failed"}
    assert found[-1]["details"]["not_recorded"] == 7
    assert all("not_recorded" not in e["details"] for e in found[:-1])


def test_a_host_dedicated_to_an_account_takes_only_that_accounts_vms(world: World) -> None:
    made = world.dedicate("h1", "D1", "A1")
    assert made.status_code == 201, made.text
    assert made.json()["dedication"] == {
        "resource": "h1",
        "kind": "host",
        "domain": "D1",
        "account": "A1",
        "implicit": False,
    }
    [event] = world.events("dedication.created")
    assert (event["subject"], event["domain"], event["account"]) == ("h1", "D1", "A1")
    # Another account's dedicated VM: nothing is dedicated to A2 and implicit dedication
    # is off, so it has nowhere to go (the design: the deploy fails).
    [failed] = world.deploy_fails(
        {"name": "a2-dedicated", "account": "A2", "offering": "dedicated"}
    )
    assert (failed["account"], failed["actor"]["role"]) == ("A2", "root-admin")
    assert failed["details"]["cause"] == "placement-failed"
    assert failed["details"]["offering"] == "dedicated"
    assert "a2-dedicated" not in str(world.client.get("/v1/workloads").json())
    # Its shared VMs go to shared hosts only: h2 and h3, never h1.
    shared = world.vm("a2-shared", "A2", "shared", units=4)
    assert shared.status_code == 201, shared.text
    assert sorted(map(str, hosts_of(shared).values())) == ["h2", "h2", "h3", "h3"]
    # The owning account's dedicated VM lands on its host.
    own = world.vm("a1-dedicated", "A1", "dedicated")
    assert own.status_code == 201, own.text
    assert hosts_of(own) == {"a1-dedicated/0": "h1"}
    placed = [e["subject"] for e in world.events("unit.placed")]
    assert placed.count("a1-dedicated/0") == 1


@pytest.mark.parametrize("who", ["user:A1", "domain-admin:D1", "agent:h1", "user:nobody"])
def test_only_a_root_admin_dedicates_releases_updates_and_migrates(world: World, who: str) -> None:
    assert world.dedicate("h2", "D1").status_code == 201
    assert world.vm("a1-vm", "A1", "shared").status_code == 201
    headers = world.as_(who)
    body = {"resource": "h1", "domain": "D1", "account": "A1"}
    refusal = world.refused(403, "forbidden", "POST", "/v1/dedications", json=body, headers=headers)
    assert "is for root-admin" in refusal["detail"]
    drain = world.refused(
        403, "forbidden", "POST", "/v1/targets/h1/drain", json={}, headers=headers
    )
    assert drain["detail"].startswith("POST /v1/targets/{name}/drain is for root-admin"), drain
    world.refused(
        403,
        "forbidden",
        "PATCH",
        "/v1/dedications/h2",
        json={"domain": "D1", "account": "A1"},
        headers=headers,
    )
    world.refused(403, "forbidden", "DELETE", "/v1/dedications/h2", headers=headers)
    world.refused(
        403,
        "forbidden",
        "PUT",
        "/v1/settings/implicit_dedication",
        json={"value": True},
        headers=headers,
    )
    world.refused(
        403,
        "forbidden",
        "POST",
        "/v1/units/a1-vm/0/migrate",
        json={"target": "h3"},
        headers=headers,
    )
    world.refused(403, "forbidden", "POST", "/v1/targets/h3/evacuate", headers=headers)


def test_the_principal_of_a_caller() -> None:
    assert principal(Caller(None, "root-admin", None)) == "root-admin"
    assert principal(Caller("a", "domain-admin", "D1")) == "domain-admin:D1"
    assert principal(Caller("a", "user", "A7")) == "user:A7"
    # An agent is no tenant: the tenancy knows no such principal.
    assert principal(Caller("a", "agent", "h1")) == "agent:h1"


def test_listing_filters_as_listdedicated_and_shows_each_principal_its_own(
    world: World,
) -> None:
    for resource, domain, account in (("h1", "D1", "A1"), ("h2", "D1", None), ("h3", "D2", "B1")):
        assert world.dedicate(resource, domain, account).status_code == 201

    def listed(query: str = "", who: str | None = None) -> list[str]:
        headers = world.as_(who) if who else None
        answer = world.client.get(f"/v1/dedications{query}", headers=headers)
        assert answer.status_code == 200, answer.text
        return [item["resource"] for item in answer.json()["items"]]

    assert listed() == ["h1", "h2", "h3"]
    assert listed("?kind=host") == ["h1", "h2", "h3"]
    assert listed("?kind=cluster") == []
    assert listed("?domain=D1") == ["h1", "h2"]
    assert listed("?domain=D1&account=A1") == ["h1"]
    assert listed("?domain=D2&account=B1") == ["h3"]
    # A user sees what applies to its account and its domain's chain; a subdomain's user
    # its parent's domain dedication; a domain admin its domain's.
    assert listed(who="user:A1") == ["h1", "h2"]
    assert listed(who="user:A2") == ["h2"]
    assert listed(who="user:S1") == ["h2"]
    assert listed(who="user:B1") == ["h3"]
    assert listed(who="domain-admin:D2") == ["h3"]
    # An account is named inside its own domain, as CloudStack asks.
    # Filters that disagree conflict (409); one naming nothing there is finds nothing.
    for query, parameter, status, kind in (
        ("?account=A1", "query.account", 409, "conflicting-request"),
        ("?domain=D2&account=A1", "query.account", 409, "conflicting-request"),
        ("?domain=D2&account=Z9", "query.account", 404, "invalid-parameter"),
        ("?account=Z9", "query.account", 404, "invalid-parameter"),
        ("?kind=rack", "query.kind", 404, "invalid-parameter"),
        ("?domain=D9", "query.domain", 404, "invalid-parameter"),
    ):
        answer = world.client.get(f"/v1/dedications{query}")
        assert_problem(answer, status, kind)
        assert answer.json()["errors"][0]["parameter"] == parameter
    assert_problem(
        world.client.get("/v1/dedications", headers=world.as_("agent:h1")),
        403,
        "forbidden",
    )


def test_update_and_release_go_through_the_rules(world: World) -> None:
    assert world.dedicate("h1", "D1", "A1").status_code == 201
    assert hosts_of(world.vm("a1-vm", "A1", "dedicated")) == {"a1-vm/0": "h1"}
    # Each refusal has the rule's kind and changes nothing.
    world.refused(
        409, "already-dedicated", "POST", "/v1/dedications", json={"resource": "h1", "domain": "D1"}
    )
    world.refused(
        409,
        "descendant-conflict",
        "POST",
        "/v1/dedications",
        json={"resource": "c1", "domain": "D2"},
    )
    world.refused(
        409, "invalid-parameter", "POST", "/v1/dedications", json={"resource": "h9", "domain": "D1"}
    )
    world.refused(
        409,
        "invalid-parameter",
        "POST",
        "/v1/dedications",
        json={"resource": "h2", "domain": "D2", "account": "A1"},
    )
    world.refused(
        409,
        "host-has-foreign-vms",
        "PATCH",
        "/v1/dedications/h1",
        json={"domain": "D1", "account": "A2"},
    )
    world.refused(409, "not-dedicated", "PATCH", "/v1/dedications/h2", json={"domain": "D1"})
    world.refused(409, "not-dedicated", "DELETE", "/v1/dedications/h2")
    world.refused(422, "invalid-request", "POST", "/v1/dedications", json={"resource": "h2"})

    updated = world.client.patch("/v1/dedications/h1", json={"domain": "D1"})
    assert updated.status_code == 200, updated.text
    assert updated.json()["dedication"]["account"] is None
    assert updated.json()["was"]["account"] == "A1"
    [event] = world.events("dedication.updated")
    assert event["subject"] == "h1" and event["details"]["was"]["account"] == "A1"

    # A wider dedication to the same owner absorbs the one below, as CloudStack does.
    wider = world.dedicate("c1", "D1")
    assert wider.status_code == 201, wider.text
    assert [d["resource"] for d in wider.json()["absorbed"]] == ["h1"]
    kinds = [(e["kind"], e["subject"]) for e in world.events("dedication.")]
    assert kinds[-2:] == [("dedication.released", "h1"), ("dedication.created", "c1")]
    with reading(world.engine) as session:
        rows = session.execute(select(DedicationRow.resource, DedicationRow.kind)).all()
    assert [tuple(row) for row in rows] == [("c1", "cluster")]

    released = world.client.delete("/v1/dedications/c1")
    assert released.status_code == 200, released.text
    assert released.json()["dedication"]["resource"] == "c1"
    assert world.events("dedication.released")[-1]["subject"] == "c1"
    assert world.client.get("/v1/dedications").json()["items"] == []
    # Release evicts nothing: the VM stays where it runs.
    placements = world.client.get("/v1/placements").json()["items"]
    assert {(p["unit"], p["target"]) for p in placements} >= {("a1-vm/0", "h1")}


def test_a_migration_across_a_dedication_is_refused_with_its_kind(world: World) -> None:
    assert world.dedicate("h1", "D1", "A1").status_code == 201
    assert hosts_of(world.vm("a1-vm", "A1", "dedicated")) == {"a1-vm/0": "h1"}
    shared = hosts_of(world.vm("b1-vm", "B1", "shared"))["b1-vm/0"]
    assert shared in ("h2", "h3")
    free = "h3" if shared == "h2" else "h2"
    for unit, target in (("a1-vm/0", shared), ("b1-vm/0", "h1")):
        rows, events = world.digest(frozenset({"events", "revision"})), len(world.events())
        revision = world.revision()
        answer = world.client.post(f"/v1/units/{unit}/migrate", json={"target": target})
        assert_problem(answer, 409, "migration-refused")
        # Nothing moved, the world's revision stays; only the refusal is recorded.
        assert world.digest(frozenset({"events", "revision"})) == rows
        assert world.revision() == revision
        after = world.events()
        assert len(after) == events + 1
        refused = after[-1]
        assert (refused["kind"], refused["subject"], refused["target"]) == (
            "migration.refused",
            unit,
            target,
        )
        assert refused["details"]["error"] == "migration-refused"
    with reading(world.engine) as session:
        assert session.scalar(select(EventRow.kind).order_by(EventRow.id.desc())) == (
            "migration.refused"
        )
    world.refused(404, "not-found", "POST", "/v1/units/nothing/0/migrate", json={"target": "h2"})
    world.refused(
        409, "invalid-parameter", "POST", "/v1/units/a1-vm/0/migrate", json={"target": "h9"}
    )

    # Onto another host of its own account, it moves, with its usage.
    assert world.dedicate(free, "D1", "A1").status_code == 201
    moved = world.client.post("/v1/units/a1-vm/0/migrate", json={"target": free})
    assert moved.status_code == 200, moved.text
    assert (moved.json()["from"], moved.json()["to"]) == ("h1", free)
    assert hosts_of(moved) == {"a1-vm/0": free}
    event = world.events("unit.moved")[-1]
    assert (event["subject"], event["details"]["from"], event["details"]["to"]) == (
        "a1-vm/0",
        "h1",
        free,
    )
    assert world.client.get(f"/v1/targets/{free}").json()["used"] == {"cpu": 1.0}
    assert world.client.get("/v1/targets/h1").json()["used"] == {"cpu": 0.0}


def test_maintenance_places_each_vm_again_or_moves_none(world: World) -> None:
    for host in ("h1", "h2"):
        assert world.dedicate(host, "D1", "A1").status_code == 201
    [(unit, first)] = hosts_of(world.vm("a1-vm", "A1", "dedicated")).items()
    second = "h2" if first == "h1" else "h1"
    evacuated = world.client.post(f"/v1/targets/{first}/evacuate", json={"reason": "patching"})
    assert evacuated.status_code == 200, evacuated.text
    assert evacuated.json()["admin_state"] == "maintenance"
    assert [(m["unit"], m["from"], m["to"]) for m in evacuated.json()["moves"]] == [
        (unit, first, second)
    ]
    assert world.events("target.maintenance")[-1]["details"]["reason"] == "patching"
    assert world.events("unit.moved")[-1]["subject"] == unit
    assert world.client.get(f"/v1/targets/{first}").json()["admin_state"] == "maintenance"
    # Its account's other host is in maintenance now: the VM has nowhere to go, so
    # nothing moves, and the refusal is an event.
    rows, events = world.digest(frozenset({"events", "revision"})), len(world.events())
    revision = world.revision()
    answer = world.client.post(f"/v1/targets/{second}/evacuate")
    assert_problem(answer, 409, "no-capacity")
    assert world.digest(frozenset({"events", "revision"})) == rows
    assert world.revision() == revision
    after = world.events()
    assert len(after) == events + 1
    assert (after[-1]["kind"], after[-1]["subject"]) == ("migration.refused", second)
    assert after[-1]["details"]["vm"] == unit
    world.refused(404, "not-found", "POST", "/v1/targets/h9/evacuate")
    assert world.client.post(f"/v1/targets/{first}/up").status_code == 200
    again = world.client.post(f"/v1/targets/{second}/evacuate")
    assert again.status_code == 200, again.text
    assert [(m["unit"], m["to"]) for m in again.json()["moves"]] == [(unit, first)]


@pytest.mark.parametrize("live", [True, False], ids=["live-world", "general-path"])
def test_a_dedicated_vm_evacuated_onto_an_empty_host_takes_it_by_implicit_dedication(
    world: World, live: bool
) -> None:
    """As a deploy would (and `Cloud.evacuate` does): the host the VM lands on becomes
    its account's, the one it left is released, and another account's VM is kept off
    the new one. Through the route (the live world's delta) and through the general path
    alone, which kept no dedication: the VM ran on a host nobody owned."""
    assert world.client.put("/v1/settings/implicit_dedication", json={"value": True}).is_success
    [(unit, first)] = hosts_of(world.vm("b1-vm", "B1", "dedicated")).items()
    assert first is not None
    owned = world.client.get("/v1/dedications").json()["items"]
    assert [(d["resource"], d["account"], d["implicit"]) for d in owned] == [(first, "B1", True)]
    if live:
        evacuated = world.client.post(f"/v1/targets/{first}/evacuate")
        assert evacuated.status_code == 200, evacuated.text
        moves = evacuated.json()["moves"]
    else:
        root = Actor("r" * 16, "root-admin", "req")
        moves = evacuating.evacuate(world.engine, first, "", "root-admin", root)["moves"]
    [(moved, second, why)] = [(m["unit"], m["to"], m["why"]) for m in moves]
    assert moved == unit and second not in (first, None)
    # The move says how the VM came to own its new host, as a deploy's placement does.
    assert why.startswith(f"{first} went into maintenance: placed again under the same rules; ")
    assert f"the empty host {second} became account B1's" in why, why
    owned = world.client.get("/v1/dedications").json()["items"]
    assert [(d["resource"], d["account"], d["implicit"]) for d in owned] == [(second, "B1", True)]
    # Two hosts of c1 left, one of them B1's: A1's VMs fit on the other only.
    placed = hosts_of(world.vm("a1-vms", "A1", "shared", units=2))
    assert second not in placed.values(), placed


def test_migrations_and_maintenance_log_each_event_they_store(
    world: World, caplog: pytest.LogCaptureFixture
) -> None:
    """A migration, a maintenance and their refusals are reported as every other change
    is: one log line per stored event (they were stored but never logged)."""
    for host in ("h1", "h2"):
        assert world.dedicate(host, "D1", "A1").status_code == 201
    [(unit, first)] = hosts_of(world.vm("a1-vm", "A1", "dedicated")).items()
    second = "h2" if first == "h1" else "h1"
    before = len(world.events())
    with caplog.at_level(logging.INFO, logger="placed.events"):
        refused = world.client.post(f"/v1/units/{unit}/migrate", json={"target": "h3"})
        assert refused.status_code == 409, refused.text
        moved = world.client.post(f"/v1/units/{unit}/migrate", json={"target": second})
        assert moved.status_code == 200, moved.text
        evacuated = world.client.post(f"/v1/targets/{second}/evacuate")
        assert evacuated.status_code == 200, evacuated.text
        stuck = world.client.post(f"/v1/targets/{first}/evacuate")
        assert stuck.status_code == 409, stuck.text
    stored = world.events()[before:]
    kinds = [event["kind"] for event in stored]
    assert kinds.count("migration.refused") == 2 and "target.maintenance" in kinds
    logged = [r.getMessage() for r in caplog.records if r.name == "placed.events"]
    assert len(logged) == len(stored)
    for event, line in zip(stored, logged, strict=True):
        assert event["kind"] in line and event["subject"] in line


def test_implicit_dedication_is_a_setting_plans_obey(world: World) -> None:
    assert world.dedicate("h1", "D1", "A1").status_code == 201
    body = {"name": "a2-dedicated", "account": "A2", "offering": "dedicated"}
    world.deploy_fails(body)
    turned = world.client.put("/v1/settings/implicit_dedication", json={"value": True})
    assert turned.status_code == 200, turned.text
    assert turned.json()["changed"] is True
    event = world.events("setting.changed")[-1]
    assert (event["subject"], event["details"]["value"]) == ("implicit_dedication", True)
    # Now the request takes an empty undedicated host for its account.
    placed = world.client.post("/v1/workloads", json=body)
    assert placed.status_code == 201, placed.text
    assert hosts_of(placed)["a2-dedicated/0"] in ("h2", "h3")
    same = world.client.put("/v1/settings/implicit_dedication", json={"value": True})
    assert same.json()["changed"] is False
    world.refused(404, "not-found", "PUT", "/v1/settings/nothing", json={"value": True})
    world.refused(
        422, "invalid-request", "PUT", "/v1/settings/implicit_dedication", json={"value": "on"}
    )


def test_offerings_are_listed(world: World) -> None:
    answer = world.client.get("/v1/offerings")
    assert answer.status_code == 200, answer.text
    assert [(o["name"], o["cpu"], o["dedicated"]) for o in answer.json()["items"]] == [
        ("dedicated", 1.0, True),
        ("shared", 1.0, False),
    ]


def test_an_offerings_dedicated_flag_is_the_root_admins_to_change(world: World) -> None:
    body = {"name": "b1-vm", "account": "B1", "offering": "shared"}
    placed = world.vm("b1-vm", "B1", "shared")
    assert placed.status_code == 201, placed.text
    # A user, even of the account, may not change the flag: the rule's 403, nothing changed.
    for who in ("user:B1", "domain-admin:D2"):
        world.refused(
            403,
            "forbidden",
            "PATCH",
            "/v1/offerings/shared",
            json={"dedicated": True},
            headers=world.as_(who),
        )
    world.refused(404, "not-found", "PATCH", "/v1/offerings/nothing", json={"dedicated": True})
    world.refused(422, "invalid-request", "PATCH", "/v1/offerings/shared", json={"dedicated": 1})
    world.refused(
        422,
        "invalid-request",
        "PATCH",
        "/v1/offerings/shared",
        json={"dedicated": True, "implicit": "maybe"},
    )
    revision = world.revision()
    turned = world.client.patch("/v1/offerings/shared", json={"dedicated": True})
    assert turned.status_code == 200, turned.text
    answer = turned.json()
    assert answer["changed"] is True and answer["revision"] > revision
    assert answer["was"]["dedicated"] is False and answer["offering"]["dedicated"] is True
    # B1's VM runs on a shared host and now asks for dedication: it stays, incompatible.
    assert [i["unit"] for i in answer["incompatible"]] == ["b1-vm/0"]
    event = world.events("offering.updated")[-1]
    assert event["subject"] == "shared"
    assert (event["details"]["was"]["dedicated"], event["details"]["offering"]["dedicated"]) == (
        False,
        True,
    )
    listed = {o["name"]: o for o in world.client.get("/v1/offerings").json()["items"]}
    assert listed["shared"]["dedicated"] is True
    # The plans obey it: B1 has nothing dedicated and implicit dedication is off.
    world.client.delete("/v1/workloads/b1-vm")
    world.deploy_fails(body)
    revision = world.revision()
    same = world.client.patch("/v1/offerings/shared", json={"dedicated": True})
    assert same.json()["changed"] is False and same.json()["revision"] == revision
    back = world.client.patch("/v1/offerings/shared", json={"dedicated": False})
    assert back.status_code == 200 and back.json()["offering"]["dedicated"] is False
    assert world.client.post("/v1/workloads", json=body).status_code == 201


def test_an_offering_is_added_by_the_root_admin_only(world: World) -> None:
    new = {"name": "big", "cpu": 2, "memory": 4, "dedicated": True, "implicit": "preferred"}
    world.refused(403, "forbidden", "POST", "/v1/offerings", json=new, headers=world.as_("user:A1"))
    world.refused(422, "invalid-request", "POST", "/v1/offerings", json={**new, "cpu": -1})
    made = world.client.post("/v1/offerings", json=new)
    assert made.status_code == 201, made.text
    assert made.json()["was"] is None and made.json()["offering"]["implicit"] == "preferred"
    assert world.events("offering.created")[-1]["subject"] == "big"
    found = world.refused(409, "invalid-parameter", "POST", "/v1/offerings", json=new)
    assert "exists already" in found["detail"]
    listed = {o["name"]: o for o in world.client.get("/v1/offerings").json()["items"]}
    assert listed["big"] == {**new, "cpu": 2.0, "memory": 4.0, "disk": 0.0}


def test_every_new_operation_declares_its_problems() -> None:
    paths = TestClient(create_app()).get("/openapi.json").json()["paths"]
    expected = {
        ("/v1/dedications", "post"): {"403", "409", "422"},
        ("/v1/dedications/{resource}", "patch"): {"403", "409", "422"},
        ("/v1/dedications/{resource}", "delete"): {"403", "409"},
        ("/v1/dedications", "get"): {"403", "422"},
        ("/v1/offerings", "get"): {"503"},
        ("/v1/offerings", "post"): {"403", "409", "422"},
        ("/v1/offerings/{name}", "patch"): {"403", "404", "409", "422"},
        ("/v1/settings/{key}", "put"): {"403", "404", "409", "422"},
        ("/v1/units/{unit}/migrate", "post"): {"403", "404", "409", "422"},
        ("/v1/targets/{name}/evacuate", "post"): {"403", "404", "409", "422"},
    }
    for (path, method), statuses in expected.items():
        responses = paths[path][method]["responses"]
        for status in statuses:
            content = responses[status]["content"]
            assert content == {PROBLEM: {"schema": {"$ref": "#/components/schemas/Problem"}}}


def test_a_dedication_below_one_of_the_same_owner_outlives_a_reread(world: World) -> None:
    # h1's row comes first; once it has c1's owner, reading the rows in that order would
    # let c1 absorb it. They are read outermost first, so both stay.
    assert world.dedicate("h1", "SD1").status_code == 201
    assert world.dedicate("c1", "D1").json()["absorbed"] == []
    assert world.client.patch("/v1/dedications/h1", json={"domain": "D1"}).status_code == 200
    listed = world.client.get("/v1/dedications").json()["items"]
    assert [(d["resource"], d["domain"]) for d in listed] == [("c1", "D1"), ("h1", "D1")]
    assert world.client.delete("/v1/dedications/h1").status_code == 200
    assert [d["resource"] for d in world.client.get("/v1/dedications").json()["items"]] == ["c1"]


def test_the_cloudstack_example_over_the_api(database: str) -> None:
    root = schema.upgrade(database).root_token
    engine = make_engine(database)
    try:
        client = TestClient(create_app(database=engine))
        client.headers["authorization"] = f"Bearer {root}"
        applied = client.post(
            "/v1/apply",
            content=(EXAMPLES / "cloudstack-dedication.yaml").read_text(),
            headers={"content-type": "application/yaml"},
        )
        assert applied.status_code == 200, applied.text
        listed = client.get("/v1/dedications").json()["items"]
        assert {(d["resource"], d["kind"], d["domain"], d["account"]) for d in listed} == {
            ("p1", "pod", "D1", None),
            ("c11", "cluster", "SD3", None),
            ("p2", "pod", "SD1", None),
            ("c3", "cluster", "SD2", None),
            ("z2", "zone", "D2", "A13"),
            ("ps-c1", "pool", "D1", None),
            # U14's dedicated VM took the empty H33a: a row of its own, listed as such.
            ("H33a", "host", "D2", "U14"),
        }
        assert [d["resource"] for d in listed if d["implicit"]] == ["H33a"]
        # As README's walk through it: implicit dedication off stops new ones and keeps
        # H33a U14's (CloudStack keeps a host's dedication), so none of U2's shared VMs
        # goes there: H33b has room for two more, a third is refused.
        turned = client.put("/v1/settings/implicit_dedication", json={"value": False})
        assert turned.status_code == 200, turned.text
        more = {"name": "u2-more", "account": "U2", "offering": "shared-small", "units": 3}
        assert_problem(client.post("/v1/workloads", json=more), 409, "unplaceable")
        fewer = client.post("/v1/workloads", json={**more, "units": 2})
        assert fewer.status_code == 201, fewer.text
        assert set(hosts_of(fewer).values()) == {"H33b"}
        # A user of U14 deploys on its account's kept host; past its room (the third of
        # three), no other host takes it (z2 is A13's): a 409 and a placement.failed
        # event; that user dedicating is a 403 and writes nothing.
        with writing(engine) as session:
            _, secret = tokens.create(session, "user", "U14")
        user = {"authorization": f"Bearer {secret}"}
        kept = client.post(
            "/v1/workloads", json={"name": "u14-vm", "offering": "dedicated-small"}, headers=user
        )
        assert kept.status_code == 201, kept.text
        assert hosts_of(kept) == {"u14-vm/0": "H33a"}
        listed = client.get("/v1/dedications").json()["items"]
        assert [(d["resource"], d["implicit"]) for d in listed if d["resource"] == "H33a"] == [
            ("H33a", True)
        ]
        deploy = client.post(
            "/v1/workloads",
            json={"name": "u14-big", "offering": "dedicated-small", "units": 3},
            headers=user,
        )
        assert_problem(deploy, 409, "unplaceable")
        assert "dedicated to account A13 and closed to account U14" in deploy.json()["detail"]
        assert "implicit dedication is off" in deploy.json()["detail"]
        [failed] = client.get("/v1/events?kind=placement.failed", headers=user).json()["items"]
        assert (failed["subject"], failed["account"], failed["details"]["cause"]) == (
            "u14-big/2",
            "U14",
            "placement-failed",
        )
        last = client.get("/v1/events?limit=1&latest=true").json()["items"]
        dedicate = client.post(
            "/v1/dedications",
            json={"resource": "H33b", "domain": "D2", "account": "U14"},
            headers=user,
        )
        assert_problem(dedicate, 403, "forbidden")
        assert client.get("/v1/events?limit=1&latest=true").json()["items"] == last
        # As `placed simulate --migrate dedicated-a1/0=H2a` says: SD1's pod is not A1's.
        answer = client.post("/v1/units/dedicated-a1/0/migrate", json={"target": "H2a"})
        assert_problem(answer, 409, "migration-refused")
        assert "dedicated to domain SD1" in answer.json()["detail"]
        evacuated = client.post("/v1/targets/H1a/evacuate")
        assert evacuated.status_code == 200, evacuated.text
        moves = {m["unit"]: m["to"] for m in evacuated.json()["moves"]}
        # D1's hosts but c11's, which SD3 carved out.
        assert moves["dedicated-a1/0"] in ("H1b", "H111a")
    finally:
        engine.dispose()


def test_an_update_absorbs_what_a_dedication_would(world: World) -> None:
    # An account's dedication never sits above another of its own: giving p1 to A1
    # releases c1's dedication to A1, as dedicating p1 to A1 would.
    assert world.dedicate("c1", "D1", "A1").status_code == 201
    assert world.dedicate("p1", "D1").status_code == 201
    updated = world.client.patch("/v1/dedications/p1", json={"domain": "D1", "account": "A1"})
    assert updated.status_code == 200, updated.text
    assert [d["resource"] for d in updated.json()["absorbed"]] == ["c1"]
    listed = world.client.get("/v1/dedications")
    assert listed.status_code == 200, listed.text
    assert [(d["resource"], d["account"]) for d in listed.json()["items"]] == [("p1", "A1")]
    kinds = [(e["kind"], e["subject"]) for e in world.events("dedication.")]
    assert kinds[-2:] == [("dedication.released", "c1"), ("dedication.updated", "p1")]
    assert hosts_of(world.vm("a1-vm", "A1", "dedicated"))["a1-vm/0"] in ("h1", "h2", "h3")


def test_the_admin_dedicates_and_users_of_other_accounts_are_kept_off(world: World) -> None:
    """The issue's scenario, each caller with a token of its own: the root-admin
    dedicates a host to an account; a user of another account deploys and is kept off
    it; that user trying to dedicate is a 403; each step is an event (the failed deploy
    too, as the design asks), the 403 none."""
    made = world.dedicate("h1", "D1", "A1")
    assert made.status_code == 201, made.text
    other = world.as_("user:A2")
    # The user's VM needs a dedicated host and none is A2's: refused, nothing stored.
    [failed] = world.deploy_fails({"name": "a2-vm", "offering": "dedicated"}, headers=other)
    assert failed["details"]["why"].startswith("0/3 targets"), failed
    assert (failed["account"], failed["actor"]["role"]) == ("A2", "user")
    # A shared VM of that user: placed, never on A1's host; its account is the user's.
    shared = world.client.post(
        "/v1/workloads", json={"name": "a2-web", "offering": "shared"}, headers=other
    )
    assert shared.status_code == 201, shared.text
    assert set(hosts_of(shared).values()) <= {"h2", "h3"}
    mine = world.client.get("/v1/workloads", headers=other).json()["items"]
    assert [(w["name"], w["account"]) for w in mine] == [("a2-web", "A2")]
    # A user of A1 deploys on its account's host.
    own = world.client.post(
        "/v1/workloads",
        json={"name": "a1-vm", "offering": "dedicated"},
        headers=world.as_("user:A1"),
    )
    assert own.status_code == 201, own.text
    assert hosts_of(own) == {"a1-vm/0": "h1"}
    world.refused(
        403,
        "forbidden",
        "POST",
        "/v1/dedications",
        json={"resource": "h2", "domain": "D1", "account": "A2"},
        headers=other,
    )
    kinds = [(e["kind"], e["subject"], e["actor"]["role"]) for e in world.events()]
    assert ("dedication.created", "h1", "root-admin") in kinds
    assert ("unit.placed", "a2-web/0", "user") in kinds
    assert ("unit.placed", "a1-vm/0", "user") in kinds
    assert ("placement.failed", "a2-vm/0", "user") in kinds
    # The refused dedication wrote nothing: the last event is A1's VM placed.
    assert kinds[-1] == ("unit.placed", "a1-vm/0", "user")
    # A user sees its own account's events only.
    seen = world.client.get("/v1/events", headers=other).json()["items"]
    assert {e["account"] for e in seen} == {"A2"}


def test_a_path_naming_no_resource_is_a_404(world: World) -> None:
    world.refused(404, "not-found", "DELETE", "/v1/dedications/nowhere")
    world.refused(404, "not-found", "PATCH", "/v1/dedications/nowhere", json={"domain": "D1"})


def _listed(world: World, who: str, **params: Any) -> list[str]:
    answer = world.client.get("/v1/targets", params=params, headers=world.as_(who))
    assert answer.status_code == 200, answer.text
    return [t["name"] for t in answer.json()["items"]]


def _paged(world: World, who: str, limit: int) -> list[str]:
    found: list[str] = []
    after: str | None = None
    for _ in range(10):
        params: dict[str, Any] = {"limit": limit}
        if after is not None:
            params["after"] = after
        answer = world.client.get("/v1/targets", params=params, headers=world.as_(who)).json()
        found += [t["name"] for t in answer["items"]]
        after = answer["next_cursor"]
        if after is None:
            return found
    raise AssertionError(f"more than 10 pages for {who}")


def test_domain_admins_and_users_see_the_targets_they_may_use(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SERVICE.md: GET /v1/targets is "R; D, U: what they may use", by the dedication in
    force (the target's own, its location's, or an implicit one), judged by the rules'
    own `covers`; another tenant's target is a 404, as if it were not there."""
    assert world.dedicate("h1", "D1", "A1").status_code == 201
    assert world.dedicate("h2", "SD1").status_code == 201
    assert _listed(world, "root-admin") == ["h1", "h2", "h3"]
    assert _listed(world, "user:A1") == ["h1", "h3"]  # SD1's h2 is below A1's domain
    assert _listed(world, "user:S1") == ["h2", "h3"]  # D1's subdomain, not account A1
    assert _listed(world, "user:A2") == ["h3"]
    assert _listed(world, "domain-admin:D1") == ["h1", "h2", "h3"]  # A1, A2, S1 between them
    assert _listed(world, "domain-admin:SD1") == ["h2", "h3"]
    assert _listed(world, "domain-admin:D2") == ["h3"]
    assert _listed(world, "user:A2", under="c1") == ["h3"]
    for who, name, status in [
        ("user:A2", "h1", 404),
        ("user:A1", "h1", 200),
        ("domain-admin:D2", "h2", 404),
        ("domain-admin:D1", "h2", 200),
    ]:
        answer = world.client.get(f"/v1/targets/{name}", headers=world.as_(who))
        assert answer.status_code == status, (who, name, answer.text)
    # Judged a chunk at a time: pages stay whole when most of a chunk is another's.
    monkeypatch.setattr(targets_route, "USABLE_CHUNK", 1)
    assert _paged(world, "user:A2", 1) == ["h3"]
    assert _paged(world, "user:S1", 1) == ["h2", "h3"]
    assert _paged(world, "domain-admin:D1", 2) == ["h1", "h2", "h3"]
    # An implicit dedication holds the host for its account alone.
    assert world.client.put("/v1/settings/implicit_dedication", json={"value": True}).is_success
    taken = world.vm("b1-vm", "B1", "dedicated")
    assert taken.status_code == 201, taken.text
    assert hosts_of(taken) == {"b1-vm/0": "h3"}
    assert _listed(world, "user:B1") == ["h3"]
    assert _listed(world, "user:A2") == []
    assert _listed(world, "domain-admin:D1") == ["h1", "h2"]


def _locations(world: World, who: str, **params: Any) -> list[str]:
    answer = world.client.get("/v1/locations", params=params, headers=world.as_(who))
    assert answer.status_code == 200, answer.text
    return [row["name"] for row in answer.json()["items"]]


def test_domain_admins_and_users_see_the_locations_they_may_use(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As for targets: a location another tenant's dedication holds (its own, or its
    nearest dedicated ancestor's) is listed to nobody else, in GET /v1/locations and in
    GET /v1/usage (CloudStack lists a dedicated zone to its domain's users only)."""
    assert world.dedicate("p1", "D1", "A1").status_code == 201
    assert _locations(world, "root-admin") == ["c1", "p1", "z1"]
    assert _locations(world, "user:A1") == ["c1", "p1", "z1"]
    assert _locations(world, "domain-admin:D1") == ["c1", "p1", "z1"]
    assert _locations(world, "user:A2") == ["z1"]  # p1 and the cluster below it are A1's
    assert _locations(world, "domain-admin:SD1") == ["z1"]
    assert _locations(world, "domain-admin:D2") == ["z1"]
    # Read a chunk at a time, pages stay whole.
    monkeypatch.setattr(locations_route, "SCOPED_CHUNK", 1)
    first = world.client.get(
        "/v1/locations", params={"limit": 1}, headers=world.as_("user:A1")
    ).json()
    assert [row["name"] for row in first["items"]] == ["c1"]
    assert _locations(world, "user:A1", after=first["next_cursor"]) == ["p1", "z1"]
    assert _locations(world, "user:A2", limit=1) == ["z1"]

    def pods(who: str) -> list[str | None]:
        answer = world.client.get("/v1/usage", params={"level": "pod"}, headers=world.as_(who))
        assert answer.status_code == 200, answer.text
        return [row["name"] for row in answer.json()["items"]]

    assert pods("root-admin") == ["p1"]
    assert pods("user:A1") == ["p1"]
    assert pods("user:A2") == []


def cloudstack_example(database: str) -> tuple[Engine, TestClient]:
    root = schema.upgrade(database).root_token
    engine = make_engine(database)
    client = TestClient(create_app(database=engine))
    client.headers["authorization"] = f"Bearer {root}"
    applied = client.post(
        "/v1/apply",
        content=(EXAMPLES / "cloudstack-dedication.yaml").read_text(),
        headers={"content-type": "application/yaml"},
    )
    assert applied.status_code == 200, applied.text
    return engine, client


def implicit_rows(engine: Engine) -> list[tuple[str, str | None]]:
    with reading(engine) as session:
        return [
            (row.resource, str(row.account_id))
            for row in session.scalars(select(DedicationRow).where(DedicationRow.implicit))
        ]


def test_an_implicit_dedication_is_explained_as_chosen_and_released_with_its_last_vm(
    database: str,
) -> None:
    """The issue's contradictions: U14's VM on the host it took is explained as chosen
    there (the unit's page, as the console draws it) and is never `incompatible` for it,
    in the answer to an unrelated change; the row goes when the host's last such VM
    leaves."""
    engine, client = cloudstack_example(database)
    try:
        assert [resource for resource, _ in implicit_rows(engine)] == ["H33a"]
        page = client.get("/v1/units/dedicated-a14/0").json()
        assert page["target"] == "H33a"
        explained = page["explanation"]
        assert (explained["placed"], explained["target"]) == (True, "H33a")
        [verdict] = [v for v in explained["targets"] if v["target"] == "H33a"]
        assert (verdict["compatible"], verdict["reasons"]) == (True, [])
        made = client.post("/v1/offerings", json={"name": "unrelated", "cpu": 1, "memory": 1})
        assert made.status_code == 201, made.text
        assert made.json()["incompatible"] == []
        # A second VM of U14 joins it; the host stays U14's until both have left.
        joined = client.post(
            "/v1/workloads",
            json={"name": "a14-more", "account": "U14", "offering": "dedicated-small"},
        )
        assert hosts_of(joined) == {"a14-more/0": "H33a"}
        assert client.delete("/v1/workloads/dedicated-a14").status_code == 200
        assert [resource for resource, _ in implicit_rows(engine)] == ["H33a"]
        assert client.delete("/v1/workloads/a14-more").status_code == 200
        assert implicit_rows(engine) == []
        listed = client.get("/v1/dedications").json()["items"]
        assert "H33a" not in {d["resource"] for d in listed}
        # Empty and nobody's again: a shared VM may land there.
        shared = client.post(
            "/v1/workloads",
            json={"name": "u2-more", "account": "U2", "offering": "shared-small", "units": 3},
        )
        assert shared.status_code == 201, shared.text
        assert "H33a" in set(hosts_of(shared).values())
    finally:
        engine.dispose()


def test_a_database_from_before_gets_its_implicit_dedications_as_rows(database: str) -> None:
    """Revision 0004 derives the rows once for a database written when they were not
    kept (the host U14's VM took, read from its placement's reason)."""
    engine, client = cloudstack_example(database)
    try:
        before = implicit_rows(engine)
        assert [resource for resource, _ in before] == ["H33a"]
        with engine.begin() as connection:
            connection.execute(delete(DedicationRow).where(DedicationRow.implicit))
            config = schema.config()
            config.attributes["connection"] = connection
            command.downgrade(config, "0003")
        assert implicit_rows(engine) == []
        assert schema.upgrade(database).after == schema.head()
        assert implicit_rows(engine) == before
        listed = client.get("/v1/dedications").json()["items"]
        assert [(d["resource"], d["account"]) for d in listed if d["implicit"]] == [("H33a", "U14")]
    finally:
        engine.dispose()
