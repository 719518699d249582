"""No tenant reaches another's (issue 34, 1): every writing route, sent by every scoped
caller, with the role matrix's example and with hostile variants (a prune naming another
tenant's document, by its name or by `?source=`; another account's workload named in a
claim, an update, an apply, a delete), leaves everything outside the caller's scope as
it was. "Outside" is read from the rows here, independently of the rule in
operations/change_scope.py: a digest of every table with the caller's own workloads (and
what follows from them: their units, their placements, the usage they take) left out."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Engine, select

from placed.store import accounts, domains
from placed.store.database import reading, writing
from placed.store.tables import (
    Account,
    DedicationRow,
    Domain,
    Location,
    OfferingRow,
    Placement,
    Setting,
    Target,
    TargetResource,
    Token,
    Unit,
    Workload,
)

from .service_support import bearer, issue, served
from .test_role_matrix import ROWS

INFRA = {
    "name": "infra",
    "inventory": [
        {
            "id": "dc1",
            "children": [
                {"id": "h1", "capacity": {"cpu": 8}},
                {"id": "h2", "capacity": {"cpu": 8}},
            ],
        }
    ],
}
ACME = {"name": "acme-apps", "workloads": [{"name": "acme-web", "resources": {"cpu": 1}}]}
GLOBEX = {"name": "globex-apps", "workloads": [{"name": "globex-web", "resources": {"cpu": 1}}]}

# Each scoped caller: role, scope, and the accounts it reaches.
SCOPED = {
    "domain-admin": ("domain-admin", "eng", {"acme"}),
    "domain-admin elsewhere": ("domain-admin", "sales", {"globex"}),
    "user": ("user", "acme", {"acme"}),
    "user elsewhere": ("user", "globex", {"globex"}),
    "agent": ("agent", "h1", set()),
}


@dataclass
class Fleet:
    client: TestClient
    engine: Engine
    headers: dict[str, dict[str, str]]


def fleet(url: str) -> Fleet:
    app, root = served(url)
    with writing(app.state.database) as session:
        domains.create(session, "eng")
        domains.create(session, "eng-web", parent="eng")
        domains.create(session, "sales")
        accounts.create(session, "acme", "eng-web")
        accounts.create(session, "globex", "sales")
    headers = {name: bearer(issue(app, role, scope)) for name, (role, scope, _) in SCOPED.items()}
    headers["root-admin"] = bearer(root)
    client = TestClient(app)
    for document, who in ((INFRA, "root-admin"), (ACME, "user"), (GLOBEX, "user elsewhere")):
        answer = client.post("/v1/apply", json=document, headers=headers[who])
        assert answer.status_code == 200, answer.text
    return Fleet(client, app.state.database, headers)


def outside_digest(engine: Engine, reach: set[str]) -> str:
    """Every row that no change of a caller reaching `reach` may touch. Left out: the
    workloads of those accounts, their units and placements; what any change moves as
    its consequence (a target's `used` and generation, revisions, the events and
    history it records); tokens scoped inside the reach (a domain-admin makes them)."""
    found = hashlib.sha256()

    def add(label: str, rows: Any) -> None:
        found.update(label.encode())
        for row in rows:
            found.update(json.dumps(list(row), default=str, sort_keys=True).encode())

    with reading(engine) as session:
        names = {row.id: row.name for row in session.execute(select(Account.id, Account.name))}
        domain_of = dict(session.execute(select(Account.name, Domain.name).join(Domain)).all())
        add("domains", session.execute(select(Domain.name, Domain.parent_id).order_by(Domain.id)))
        add(
            "accounts",
            session.execute(select(Account.name, Account.domain_id).order_by(Account.id)),
        )
        add(
            "locations",
            session.execute(
                select(
                    Location.name, Location.parent_id, Location.spec, Location.document
                ).order_by(Location.name)
            ),
        )
        add(
            "targets",
            session.execute(
                select(
                    Target.name,
                    Target.location_id,
                    Target.spec,
                    Target.document,
                    Target.admin_state,
                ).order_by(Target.name)
            ),
        )
        add(
            "capacity",
            session.execute(
                select(
                    TargetResource.target_id, TargetResource.name, TargetResource.capacity
                ).order_by(TargetResource.target_id, TargetResource.name)
            ),
        )
        add("offerings", session.execute(select(OfferingRow).order_by(OfferingRow.name)))
        add(
            "dedications",
            session.execute(
                select(DedicationRow.resource, DedicationRow.domain_id, DedicationRow.account_id)
                .where(DedicationRow.implicit.is_(False))
                .order_by(DedicationRow.resource)
            ),
        )
        add(
            "settings",
            session.execute(
                select(Setting.key, Setting.value)
                .where(~Setting.key.startswith("world."))
                .order_by(Setting.key)
            ),
        )
        others = [
            row
            for row in session.execute(
                select(
                    Workload.id,
                    Workload.name,
                    Workload.account_id,
                    Workload.spec,
                    Workload.document,
                    Workload.generation,
                ).order_by(Workload.name)
            )
            if names.get(row.account_id) not in reach
        ]
        add("workloads", [tuple(row)[1:] for row in others])
        ids = [row.id for row in others]
        add(
            "units",
            session.execute(
                select(Unit.name, Target.name)
                .outerjoin(Placement, Placement.unit_id == Unit.id)
                .outerjoin(Target, Target.id == Placement.target_id)
                .where(Unit.workload_id.in_(ids))
                .order_by(Unit.name)
            ),
        )
        reached_domains = {domain_of[a] for a in reach if a in domain_of}
        add(
            "tokens",
            [
                row
                for row in session.execute(
                    select(Token.accessor, Token.role, Token.scope, Token.revoked).order_by(
                        Token.accessor
                    )
                )
                if not (
                    row.scope in reach
                    or (row.role == "domain-admin" and row.scope in reached_domains)
                )
            ],
        )
    return found.hexdigest()


# Hostile variants, for the routes that take a spec or name a workload. {own} is the
# caller's own document; each names what is not the caller's.
HOSTILE: list[tuple[str, str, Any, dict[str, Any] | None]] = [
    ("POST", "/v1/apply", {"name": "acme-apps", "workloads": []}, {"prune": "true"}),
    ("POST", "/v1/apply", {"name": "globex-apps", "workloads": []}, {"prune": "true"}),
    ("POST", "/v1/apply", {"name": "infra", "workloads": []}, {"prune": "true"}),
    ("POST", "/v1/apply", {"workloads": []}, {"prune": "true", "source": "acme-apps"}),
    ("POST", "/v1/apply", {"workloads": []}, {"prune": "true", "source": "infra"}),
    (
        "POST",
        "/v1/apply",
        {"name": "x", "workloads": [{"name": "acme-web", "resources": {"cpu": 2}}]},
        None,
    ),
    (
        "POST",
        "/v1/apply",
        {"name": "x", "workloads": [{"name": "globex-web", "resources": {"cpu": 2}}]},
        None,
    ),
    ("POST", "/v1/workloads", {"name": "acme-web", "resources": {"cpu": 2}}, None),
    ("POST", "/v1/workloads", {"name": "globex-web", "resources": {"cpu": 2}}, None),
    (
        "PUT",
        "/v1/workloads/globex-web",
        {"generation": 0, "spec": {"name": "globex-web", "resources": {"cpu": 2}}},
        None,
    ),
    (
        "PUT",
        "/v1/workloads/acme-web",
        {"generation": 0, "spec": {"name": "acme-web", "resources": {"cpu": 2}}},
        None,
    ),
    ("DELETE", "/v1/workloads/acme-web", None, None),
    ("DELETE", "/v1/workloads/globex-web", None, None),
    ("POST", "/v1/workloads/acme-web/replace", None, None),
    ("POST", "/v1/workloads/globex-web/replace", None, None),
]


def test_no_writing_route_changes_anything_outside_the_callers_scope(database: str) -> None:
    found = fleet(database)
    writing_rows = [row for row in ROWS if row.method in ("POST", "PUT", "PATCH", "DELETE")]
    assert len(writing_rows) >= 20, "the role matrix lost its writing routes"
    requests = [(r.method, r.path, r.json, r.params, r.template) for r in writing_rows] + [
        (method, path, body, params, f"{method} {path} (hostile)")
        for method, path, body, params in HOSTILE
    ]
    wrong = []
    tried = 0
    for caller, (_, _, reach) in SCOPED.items():
        for method, path, body, params, what in requests:
            path = path.replace("{victim}", "nobody")
            before = outside_digest(found.engine, reach)
            answer = found.client.request(
                method, path, json=body, params=params, headers=found.headers[caller]
            )
            tried += 1
            if answer.status_code >= 500:
                wrong.append(f"{what} as {caller}: {answer.status_code} {answer.text[:200]}")
            elif outside_digest(found.engine, reach) != before:
                wrong.append(
                    f"{what} as {caller} ({answer.status_code}) changed what is outside its "
                    f"scope: {answer.text[:200]}"
                )
    assert not wrong, "\n".join(wrong)
    assert tried >= 5 * 35


def test_a_prune_of_another_tenants_document_is_refused_and_changes_nothing(
    database: str,
) -> None:
    found = fleet(database)
    from .service_support import table_digest

    before = table_digest(found.engine)
    for params, body in (
        ({"prune": "true"}, {"name": "acme-apps", "workloads": []}),
        ({"prune": "true", "source": "acme-apps"}, {"workloads": []}),
    ):
        answer = found.client.post(
            "/v1/apply", json=body, params=params, headers=found.headers["user elsewhere"]
        )
        assert answer.status_code == 403, answer.text
        problem = answer.json()
        assert problem["type"] == "urn:placed:problem:out-of-scope"
        # Whose and what it was are not told: only that the change reaches out of scope.
        assert "acme" not in problem["detail"], problem["detail"]
        assert "outside this token's scope" in problem["detail"]
    # Root's targets are named: every token may read them.
    answer = found.client.post(
        "/v1/apply",
        json={"name": "infra", "workloads": []},
        params={"prune": "true"},
        headers=found.headers["user"],
    )
    assert answer.status_code == 403, answer.text
    assert (
        "delete target 'h1'" in answer.json()["detail"]
        or "location 'dc1'" in (answer.json()["detail"])
    )
    assert table_digest(found.engine) == before
    # Its own document's prune is served: acme's user removes acme-web.
    answer = found.client.post(
        "/v1/apply",
        json={"name": "acme-apps", "workloads": []},
        params={"prune": "true"},
        headers=found.headers["user"],
    )
    assert answer.status_code == 200, answer.text
    assert (
        found.client.get("/v1/workloads/acme-web", headers=found.headers["root-admin"]).status_code
        == 404
    )


@pytest.mark.parametrize("caller", ["user elsewhere", "domain-admin elsewhere"])
def test_another_accounts_workload_is_answered_as_a_name_not_in_view(
    database: str, caller: str
) -> None:
    found = fleet(database)
    headers = found.headers[caller]
    # POST: the name is taken, whose is not said; the same answer for a name taken by
    # nobody the caller sees as for any other.
    claim = found.client.post(
        "/v1/workloads", json={"name": "acme-web", "account": "globex"}, headers=headers
    )
    assert claim.status_code == 409, claim.text
    assert claim.json()["type"] == "urn:placed:problem:name-taken"
    assert "acme" not in claim.json()["detail"].replace("'acme-web'", "")
    # apply naming it: the same answer as POST's, not a 403 saying whose it is.
    applied = found.client.post(
        "/v1/apply",
        json={"name": "mine", "workloads": [{"name": "acme-web", "account": "globex"}]},
        headers=headers,
    )
    assert applied.status_code == 409, applied.text
    assert applied.json()["type"] == claim.json()["type"]
    assert applied.json()["detail"] == claim.json()["detail"]
    # PUT, DELETE, replace and GET: as for a name that does not exist at all.
    for method, suffix, body in (
        ("PUT", "", {"generation": 0, "spec": {"name": "{name}", "account": "globex"}}),
        ("DELETE", "", None),
        ("POST", "/replace", None),
        ("GET", "", None),
    ):
        answers = []
        for name in ("acme-web", "no-such-workload"):
            sent = json.loads(json.dumps(body).replace("{name}", name)) if body else None
            answer = found.client.request(
                method, f"/v1/workloads/{name}{suffix}", json=sent, headers=headers
            )
            answers.append((answer.status_code, answer.json()["detail"].replace(name, "NAME")))
        assert answers[0] == answers[1], (method, suffix, answers)
        assert answers[0][0] == 404


def test_a_claim_of_ones_own_name_still_says_it_exists(database: str) -> None:
    found = fleet(database)
    answer = found.client.post(
        "/v1/workloads", json={"name": "acme-web"}, headers=found.headers["user"]
    )
    assert answer.status_code == 409
    assert answer.json()["type"] == "urn:placed:problem:exists"


def _events_since(found: Fleet, after: int) -> list[dict[str, Any]]:
    answer = found.client.get(
        "/v1/events", params={"after": after, "limit": 1000}, headers=found.headers["root-admin"]
    )
    assert answer.status_code == 200, answer.text
    items: list[dict[str, Any]] = answer.json()["items"]
    return items


def _last_event(found: Fleet) -> int:
    items = _events_since(found, 0)
    return max((int(item["id"]) for item in items), default=0)


def test_every_change_leaves_an_audit_event_with_its_actor_and_request_id(database: str) -> None:
    found = fleet(database)
    root = found.headers["root-admin"]
    start = _last_event(found)
    # An apply that creates two targets, and the prune that deletes them.
    lab = {"name": "lab", "inventory": [{"id": "lab1"}, {"id": "lab2", "capacity": {"cpu": 2}}]}
    made = found.client.post("/v1/apply", json=lab, headers={**root, "X-Request-Id": "made-lab"})
    assert made.status_code == 200, made.text
    pruned = found.client.post(
        "/v1/apply",
        json={"name": "lab", "inventory": []},
        params={"prune": "true"},
        headers={**root, "X-Request-Id": "pruned-lab"},
    )
    assert pruned.status_code == 200, pruned.text
    # A workload's spec created (the claim's fast path), changed and deleted by a user.
    user = found.headers["user"]
    claim = found.client.post(
        "/v1/workloads", json={"name": "w1", "resources": {"cpu": 1}}, headers=user
    )
    assert claim.status_code == 201, claim.text
    changed = found.client.put(
        "/v1/workloads/w1",
        json={"generation": 0, "spec": {"name": "w1", "resources": {"cpu": 2}}},
        headers=user,
    )
    assert changed.status_code == 200, changed.text
    assert found.client.delete("/v1/workloads/w1", headers=user).status_code == 200
    setting = found.client.post(
        "/v1/apply", json={"name": "knobs", "settings": {"implicit_dedication": True}}, headers=root
    )
    assert setting.status_code == 200, setting.text
    # Applying the same again changes nothing and records nothing.
    again = found.client.post("/v1/apply", json=lab | {"inventory": []}, headers=root)
    assert again.status_code == 200

    events = _events_since(found, start)
    seen = {(e["kind"], e["subject"]): e for e in events}
    for kind, subject, request_id in (
        ("target.created", "lab1", "made-lab"),
        ("target.created", "lab2", "made-lab"),
        ("document.applied", "lab", "made-lab"),
        ("target.deleted", "lab1", "pruned-lab"),
        ("target.deleted", "lab2", "pruned-lab"),
        ("document.pruned", "lab", "pruned-lab"),
    ):
        event = next(
            (
                e
                for e in events
                if (e["kind"], e["subject"], e["request_id"]) == (kind, subject, request_id)
            ),
            None,
        )
        assert event is not None, (kind, subject, request_id, sorted(seen))
        assert event["actor"]["role"] == "root-admin", event
        assert event["actor"]["accessor"], event
    assert seen[("target.created", "lab2")]["details"]["capacity"] == {"cpu": 2}
    assert sorted(seen[("document.pruned", "lab")]["details"]["deleted"]) == [
        "target lab1",
        "target lab2",
    ]
    kinds = [e["kind"] for e in events if e["subject"] == "w1"]
    assert kinds == ["workload.created", "workload.changed", "workload.deleted"], kinds
    for event in (e for e in events if e["subject"] == "w1"):
        assert event["actor"]["role"] == "user" and event["account"] == "acme", event
    created = next(e for e in events if e["kind"] == "workload.created")
    # The claim's own units follow its workload's event, in id order.
    placed = [e for e in events if e["kind"] == "unit.placed" and e["workload"] == "w1"]
    assert placed and int(placed[0]["id"]) > int(created["id"])
    assert ("setting.changed", "implicit_dedication") in seen
    assert sum(1 for e in events if e["subject"] == "lab" and e["kind"] == "document.applied") == 2


def test_a_root_prune_of_targets_that_run_units_leaves_them_waiting(database: str) -> None:
    """The targets go, and their units with them to wherever the plan puts them (here
    nowhere): before, the targets' rows were deleted under their placements, a 500."""
    from .row_invariants import broken_rows, read_rows

    found = fleet(database)
    answer = found.client.post(
        "/v1/apply",
        json={"name": "infra", "inventory": []},
        params={"prune": "true"},
        headers=found.headers["root-admin"],
    )
    assert answer.status_code == 200, answer.text
    changes = {c["unit"]: (c["from"], c["to"], c["kind"]) for c in answer.json()["changes"]}
    assert sorted(changes) == ["acme-web/0", "globex-web/0"], changes
    for source, destination, kind in changes.values():
        assert source in ("h1", "h2") and destination is None and kind == "unit.unplaced"
    assert not broken_rows(read_rows(found.engine))
    targets = found.client.get("/v1/targets", headers=found.headers["root-admin"]).json()
    assert targets["items"] == []
