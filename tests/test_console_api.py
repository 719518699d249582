"""What /v1 gained for the console (issue 19): the locations, targets filtered by place
and status, a target's down or up as a dry run, several at once (POST /v1/targets:batch),
and the newest events first; and the what-if page's handlers without a browser."""

from __future__ import annotations

import html
import re
from pathlib import Path
from typing import Any

from fastapi import FastAPI
from fastapi.testclient import TestClient

from placed.service.ui import whatif
from placed.service.ui.session import csrf_of
from tests.conftest import another_database
from tests.service_support import client_of, issue, served, table_digest

WORLD = (
    Path(__file__).resolve().parent.parent / "examples" / "cloudstack-dedication.yaml"
).read_bytes()


def applied(url: str) -> tuple[FastAPI, TestClient]:
    app, root = served(url)
    client = client_of(app, root)
    done = client.post("/v1/apply", content=WORLD, headers={"content-type": "application/yaml"})
    assert done.status_code == 200, done.text
    return app, client


def test_locations_list_the_tree_with_parents_paged(database: str) -> None:
    _, client = applied(database)
    found = client.get("/v1/locations", params={"limit": 1000}).json()
    parents = {row["name"]: row["parent"] for row in found["items"]}
    kinds = {row["name"]: row["kind"] for row in found["items"]}
    assert parents["z2"] is None and kinds["z2"] == "zone"
    assert parents["p1"] is not None and kinds["p1"] == "pod"
    first = client.get("/v1/locations", params={"limit": 2}).json()
    assert len(first["items"]) == 2 and first["next_cursor"] == first["items"][-1]["name"]
    rest = client.get("/v1/locations", params={"after": first["next_cursor"], "limit": 1000})
    assert [r["name"] for r in first["items"] + rest.json()["items"]] == sorted(parents)


def test_targets_filter_by_places_below_and_by_status(database: str) -> None:
    _, client = applied(database)
    every = {
        t["name"]: t for t in client.get("/v1/targets", params={"limit": 1000}).json()["items"]
    }
    zone = client.get("/v1/targets", params={"under": "z2"}).json()["items"]
    assert sorted(t["name"] for t in zone) == ["H4a", "H4b"]
    # Several places, a location and a host by name: either.
    both = client.get("/v1/targets", params=[("under", "z2"), ("under", "H1a")]).json()["items"]
    assert sorted(t["name"] for t in both) == ["H1a", "H4a", "H4b"]
    pod = client.get("/v1/targets", params={"under": "p1"}).json()["items"]
    assert {"H1a", "H1b", "H11a", "H111a"} <= {t["name"] for t in pod} < set(every)
    assert client.post("/v1/targets/H4a/down").status_code == 200
    down = client.get("/v1/targets", params={"state": "down"}).json()["items"]
    assert [t["name"] for t in down] == ["H4a"]
    zone_up = client.get("/v1/targets", params={"under": "z2", "state": "up"}).json()["items"]
    assert [t["name"] for t in zone_up] == ["H4b"]
    never = client.get("/v1/targets", params={"state": "unknown", "limit": 1000}).json()["items"]
    assert len(never) == len(every)  # no target has sent a heartbeat
    assert client.post("/v1/targets/H4b/heartbeat").status_code == 200
    never = client.get("/v1/targets", params={"state": "unknown", "limit": 1000}).json()["items"]
    assert "H4b" not in {t["name"] for t in never}
    assert client.get("/v1/targets", params={"state": "stale"}).json()["items"] == []


def test_target_filters_are_bounded(database: str) -> None:
    _, client = applied(database)
    wrong = client.get("/v1/targets", params={"state": "sideways"})
    assert wrong.status_code == 422
    many = client.get("/v1/targets", params=[("under", f"x{i}") for i in range(101)])
    assert many.status_code == 422
    long = client.get("/v1/targets", params={"under": "x" * 256})
    assert long.status_code == 422
    assert long.json()["errors"][0]["parameter"] == "query.under.0"


def test_a_dry_run_down_answers_the_moves_and_writes_nothing(database: str) -> None:
    app, client = applied(database)
    before = table_digest(app.state.database)
    tried = client.post("/v1/targets/H33b/down", params={"dry_run": "true"})
    assert tried.status_code == 200, tried.text
    answer = tried.json()
    assert answer["dry_run"] is True and answer["changed"] is True
    assert {m["unit"] for m in answer["moves"]} == {"shared-u2/0", "shared-u2/1"}
    assert table_digest(app.state.database) == before
    done = client.post("/v1/targets/H33b/down").json()
    assert done["dry_run"] is False
    assert [m["unit"] for m in done["moves"]] == [m["unit"] for m in answer["moves"]]
    assert client.get("/v1/targets/H33b").json()["admin_state"] == "down"


def test_latest_events_are_the_newest_oldest_first(database: str) -> None:
    _, client = applied(database)
    every = client.get("/v1/events", params={"limit": 1000}).json()["items"]
    assert len(every) > 3
    last = client.get("/v1/events", params={"limit": 3, "latest": "true"}).json()
    assert [e["id"] for e in last["items"]] == [e["id"] for e in every[-3:]]
    assert last["next_cursor"] == every[-1]["id"]
    units = client.get("/v1/events", params={"kind": "unit.", "limit": 2, "latest": "true"})
    expected = [e["id"] for e in every if e["kind"].startswith("unit.")][-2:]
    assert [e["id"] for e in units.json()["items"]] == expected


def test_whoami_names_the_callers_own_token(database: str) -> None:
    _, client = applied(database)
    root = client.get("/v1/whoami").json()
    assert root["role"] == "root-admin" and root["scope"] is None and root["accessor"]
    made = client.post("/v1/tokens", json={"role": "user", "scope": "U2"}).json()
    mine = client.get("/v1/whoami", headers={"Authorization": f"Bearer {made['token']}"})
    assert mine.json() == {"accessor": made["accessor"], "role": "user", "scope": "U2"}
    assert client.get("/v1/whoami", headers={"Authorization": "Bearer nope"}).status_code == 401


def test_a_batch_moves_no_unit_onto_another_target_going_down(database: str) -> None:
    app, client = applied(database)
    alone = client.post("/v1/targets/H1a/down", params={"dry_run": "true"}).json()
    assert {m["to"] for m in alone["moves"]} == {"H111a"}  # its neighbour, when alone
    before = table_digest(app.state.database)
    tried = client.post(
        "/v1/targets:batch", params={"dry_run": "true"}, json={"down": ["H1a", "H111a"]}
    )
    assert tried.status_code == 200, tried.text
    answer = tried.json()
    assert answer["dry_run"] is True
    assert answer["targets"] == [
        {"target": "H1a", "admin_state": "down", "changed": True},
        {"target": "H111a", "admin_state": "down", "changed": True},
    ]
    leaving = {p["unit"] for t in ("H111a", "H1a") for p in placements_on(client, t)}
    assert leaving and leaving <= {m["unit"] for m in answer["moves"]}
    assert not {m["to"] for m in answer["moves"]} & {"H111a", "H1a"}
    assert table_digest(app.state.database) == before
    # Confirmed at the revision the dry run saw: the same moves, both targets down.
    done = client.post(
        "/v1/targets:batch",
        params={"expected_revision": answer["revision"]},
        json={"down": ["H1a", "H111a"], "reason": "racks"},
    )
    assert done.status_code == 200, done.text
    assert [m["unit"] for m in done.json()["moves"]] == [m["unit"] for m in answer["moves"]]
    assert done.json()["revision"] > answer["revision"]
    for name in ("H111a", "H1a"):
        assert client.get(f"/v1/targets/{name}").json()["admin_state"] == "down"
        assert placements_on(client, name) == []
    # Stale: the revision the first dry run saw is gone.
    stale = client.post(
        "/v1/targets:batch",
        params={"expected_revision": answer["revision"]},
        json={"up": ["H1a", "H111a"]},
    )
    assert stale.status_code == 409
    assert stale.json()["type"] == "urn:placed:problem:revision-changed"
    back = client.post("/v1/targets:batch", json={"up": ["H111a", "H1a"]})
    assert back.status_code == 200, back.text
    assert all(t["changed"] for t in back.json()["targets"])
    assert client.get("/v1/targets/H111a").json()["admin_state"] == "up"


def placements_on(client: TestClient, target: str) -> list[dict[str, str]]:
    found: list[dict[str, str]] = client.get(
        "/v1/placements", params={"target": target, "limit": 1000}
    ).json()["items"]
    return found


def test_a_bad_batch_is_a_problem_and_changes_nothing(database: str) -> None:
    app, client = applied(database)
    before = table_digest(app.state.database)
    both = client.post("/v1/targets:batch", json={"down": ["H1a"], "up": ["H1a"]})
    # Each list is well-formed: together they conflict.
    assert both.status_code == 409
    assert both.json()["type"] == "urn:placed:problem:conflicting-request"
    assert both.json()["errors"] == [{"pointer": "/up/0", "detail": "also in down"}]
    missing = client.post("/v1/targets:batch", json={"down": ["H1a", "nope", "nah"]})
    assert missing.status_code == 404
    assert "'nope' (and 1 more)" in missing.json()["detail"]
    assert client.post("/v1/targets:batch", json={}).status_code == 422
    assert client.post("/v1/targets:batch", json={"down": ["x" * 256]}).status_code == 422
    assert client.post("/v1/targets:batch", json={"down": ["H1a"], "drain": []}).status_code == 422
    many = client.post("/v1/targets:batch", json={"down": [f"h{i}" for i in range(1001)]})
    assert many.status_code == 422
    assert table_digest(app.state.database) == before


def signed_in_console(app: FastAPI, token: str) -> TestClient:
    console = TestClient(app)
    signed = console.post("/ui/login", data={"token": token}, follow_redirects=False)
    assert signed.status_code == 303
    return console


def test_the_what_if_forms_need_the_csrf_value(database: str) -> None:
    app, root = served(database)
    console = signed_in_console(app, root)
    before = table_digest(app.state.database)
    spec = WORLD.decode()
    for path, fields in (
        ("/ui/whatif/apply", {"spec": spec, "confirm": "yes", "revision": "0"}),
        ("/ui/whatif", {"targets": "H1a", "action": "down", "confirm": "yes"}),
    ):
        refused = console.post(path, data=fields)
        assert refused.status_code == 403 and "CSRF" in refused.text
        wrong = console.post(path, data={**fields, "csrf": "0" * 64})
        assert wrong.status_code == 403
        foreign = console.post(
            path,
            data={**fields, "csrf": csrf_of(root)},
            headers={"Origin": "https://evil.example"},
        )
        assert foreign.status_code == 403
    assert table_digest(app.state.database) == before
    # With it, the same spec is applied (the preview first: its revision confirms).
    preview = console.post("/ui/whatif/apply", data={"spec": spec, "csrf": csrf_of(root)})
    assert preview.status_code == 200 and "Dry run: nothing has changed" in preview.text
    assert table_digest(app.state.database) == before
    seen = re.search(r'name="revision" value="(\d+)"', preview.text)
    assert seen is not None
    done = console.post(
        "/ui/whatif/apply",
        data={"spec": spec, "csrf": csrf_of(root), "confirm": "yes", "revision": seen[1]},
    )
    assert done.status_code == 200 and 'id="applied"' in done.text
    assert client_of(app, root).get("/v1/targets/H1a").status_code == 200


def test_user_text_on_the_what_if_page_is_escaped(database: str) -> None:
    app, client = applied(database)
    root = client.headers["Authorization"].split()[1]
    console = signed_in_console(app, root)
    hostile = "<script>window.pwned=1</script>"
    bad = f'version: 1\nname: x\nworkloads:\n  - {{name: "{hostile}", units: two}}\n'
    answer = console.post("/ui/whatif/apply", data={"spec": bad, "csrf": csrf_of(root)})
    assert answer.status_code == 422
    assert hostile not in answer.text
    escaped = html.escape(hostile, quote=False)
    assert escaped in answer.text  # in the textarea, the error and its line
    assert "line 4, column" in answer.text
    targets = console.post(
        "/ui/whatif", data={"targets": hostile, "action": "down", "csrf": csrf_of(root)}
    )
    assert targets.status_code == 404 and hostile not in targets.text
    assert html.escape(hostile, quote=False) in targets.text
    preview = console.post(
        "/ui/whatif", data={"targets": "H33b\nH33a", "action": "down", "csrf": csrf_of(root)}
    )
    assert preview.status_code == 200 and "<svg" in preview.text


def test_a_pasted_spec_is_bounded_and_the_page_says_so(database: str) -> None:
    app, root = served(database, max_body_bytes=2_000)
    console = signed_in_console(app, root)
    page = console.get("/ui/whatif").text
    assert "At most 2,000 bytes here" in page and "up to 2,000 bytes" in page
    big = "# " + "x" * 2_000 + "\nversion: 1\n"
    answer = console.post("/ui/whatif/apply", data={"spec": big, "csrf": csrf_of(root)})
    assert answer.status_code == 413
    assert "the console takes at most 2,000" in answer.text
    # The console's own bound, under a larger API limit.
    app.state.max_body_bytes = 16 * 1024 * 1024
    assert f"At most {whatif.MAX_SPEC_BYTES:,} bytes here" in console.get("/ui/whatif").text
    many = "\n".join(f"h{i}" for i in range(whatif.MAX_TARGETS + 1))
    refused = console.post(
        "/ui/whatif", data={"targets": many, "action": "down", "csrf": csrf_of(root)}
    )
    assert refused.status_code == 422 and "at most 1,000 targets" in refused.text
    # A drain's confirmation names the revision its preview saw.
    unseen = console.post(
        "/ui/whatif",
        data={"targets": "a\nb", "action": "drain", "confirm": "yes", "csrf": csrf_of(root)},
    )
    assert unseen.status_code == 422 and "confirm a preview" in unseen.text


def test_a_drain_of_several_is_confirmed_at_its_previews_revision(database: str) -> None:
    app, client = applied(database)
    root = client.headers["Authorization"].split()[1]
    console = signed_in_console(app, root)
    fields = {"targets": "H1a\nH111a", "action": "drain", "csrf": csrf_of(root)}
    before = table_digest(app.state.database)
    preview = console.post("/ui/whatif", data=fields)
    assert preview.status_code == 200, preview.text
    assert "Preview: H1a, H111a maintenance" in preview.text
    assert table_digest(app.state.database) == before
    seen = re.search(r'name="revision" value="(\d+)"', preview.text)
    assert seen is not None
    # The world changes after the preview: its confirmation is refused, nothing changes.
    assert client.post("/v1/targets/H2a/down").status_code == 200
    changed = table_digest(app.state.database)
    stale = console.post("/ui/whatif", data={**fields, "confirm": "yes", "revision": seen[1]})
    assert stale.status_code == 409 and "revision-changed" in stale.text
    assert 'id="again"' in stale.text and "Preview again" in stale.text
    assert table_digest(app.state.database) == changed
    fresh = console.post("/ui/whatif", data=fields)
    again = re.search(r'name="revision" value="(\d+)"', fresh.text)
    assert again is not None and int(again[1]) > int(seen[1])
    done = console.post("/ui/whatif", data={**fields, "confirm": "yes", "revision": again[1]})
    assert done.status_code == 200 and 'id="done"' in done.text, done.text
    assert "H1a, H111a are in maintenance" in done.text
    for name in ("H1a", "H111a"):
        assert client.get(f"/v1/targets/{name}").json()["admin_state"] == "maintenance"
        assert placements_on(client, name) == []


def test_usage_sums_each_zones_up_targets_and_counts_the_down_apart(database: str) -> None:
    _, client = applied(database)
    every = client.get("/v1/targets", params={"limit": 1000}).json()["items"]
    zone_of = {
        row["name"]: row["parent"]
        for row in client.get("/v1/locations", params={"limit": 1000}).json()["items"]
    }

    def zone(place: str | None) -> str | None:
        while place is not None and zone_of.get(place) is not None:
            place = zone_of[place]
        return place

    assert client.post("/v1/targets/H4a/down").status_code == 200
    every = client.get("/v1/targets", params={"limit": 1000}).json()["items"]
    expected: dict[str, dict[str, Any]] = {}
    for target in every:
        row = expected.setdefault(
            str(zone(target["parent"])), {"up": 0, "down": 0, "resources": {}, "down_resources": {}}
        )
        up = target["admin_state"] == "up"
        row["up" if up else "down"] += 1
        into = row["resources" if up else "down_resources"]
        for name, capacity in target["capacity"].items():
            was = into.setdefault(name, {"capacity": 0.0, "used": 0.0})
            was["capacity"] += capacity
            was["used"] += target["used"].get(name, 0.0)
    found = client.get("/v1/usage").json()
    assert found["level"] == "zone" and found["levels"] == ["cluster", "pod", "zone"]
    assert {row.pop("name"): row for row in found["items"]} == expected
    assert expected["z2"]["down"] == 1 and expected["z2"]["down_resources"]["cpu"]["capacity"] == 4
    pods = client.get("/v1/usage", params={"level": "pod"}).json()["items"]
    assert sum(p["up"] + p["down"] for p in pods) == len(every)
    wrong = client.get("/v1/usage", params={"level": "rack"})
    # A level the inventory does not have: well-formed, it finds nothing.
    assert wrong.status_code == 404 and wrong.json()["errors"][0]["parameter"] == "query.level"
    assert "cluster, pod, zone" in wrong.json()["detail"]


def test_a_workloads_spread_counts_its_units_per_place_of_a_level(database: str) -> None:
    _, client = applied(database)
    placed = client.get("/v1/placements", params={"workload": "shared-u2"}).json()["items"]
    by_target = {p["target"]: 0 for p in placed}
    for p in placed:
        by_target[p["target"]] += 1
    spread = client.get("/v1/workloads/shared-u2/spread", params={"level": "target"}).json()
    assert {i["name"]: i["units"] for i in spread["items"]} == by_target
    assert spread["units"] == 2 and spread["pending"] == 0
    assert spread["levels"] == ["cluster", "pod", "zone", "target"]
    parents = {
        t["name"]: t["parent"]
        for t in client.get("/v1/targets", params={"limit": 1000}).json()["items"]
    }
    clusters = client.get("/v1/workloads/shared-u2/spread", params={"level": "cluster"}).json()
    expected: dict[str, int] = {}
    for target, count in by_target.items():
        expected[parents[target]] = expected.get(parents[target], 0) + count
    assert {i["name"]: i["units"] for i in clusters["items"]} == expected
    assert client.get("/v1/workloads/nothing/spread").status_code == 404
    assert client.get("/v1/workloads/shared-u2/spread", params={"level": "x"}).status_code == 404
    # A user of another account does not see the workload at all.
    made = client.post("/v1/tokens", json={"role": "user", "scope": "A13"}).json()
    other = {"Authorization": f"Bearer {made['token']}"}
    assert client.get("/v1/workloads/shared-u2/spread", headers=other).status_code == 404


def test_owners_of_named_targets_match_the_dedications_and_add_implicit_ones(
    database: str,
) -> None:
    _, client = applied(database)
    listed = {d["resource"]: d for d in client.get("/v1/dedications").json()["items"]}
    names = [t["name"] for t in client.get("/v1/targets", params={"limit": 1000}).json()["items"]]
    found = client.get("/v1/owners", params=[("target", n) for n in names]).json()
    owners = {row["target"]: row for row in found["items"]}
    # Every explicit owner is a dedication GET /v1/dedications lists, with its owner.
    for target, row in owners.items():
        if row["implicit"]:
            continue
        dedication = listed[row["resource"]]
        assert (row["domain"], row["account"]) == (dedication["domain"], dedication["account"])
        assert row["inherited_from"] == (None if row["resource"] == target else row["resource"])
    assert owners["H4a"]["inherited_from"] == "z2" and owners["H4a"]["account"] == "A13"
    # U14's dedicated VM took the empty H33a (implicit dedication), and it says so.
    vm = client.get("/v1/placements", params={"workload": "dedicated-a14"}).json()["items"][0]
    implicit = owners[vm["target"]]
    assert implicit["implicit"] is True and (implicit["domain"], implicit["account"]) == (
        "D2",
        "U14",
    )
    assert "H33b" not in owners  # shared VMs only: nobody's
    # The dedications' rows, as GET /v1/dedications lists them (it judges the world).
    every = client.get("/v1/dedications").json()["items"]
    assert found["dedications"] == sorted(every, key=lambda d: d["resource"])
    # A user sees what applies to its own account, as GET /v1/dedications shows it.
    made = client.post("/v1/tokens", json={"role": "user", "scope": "U14"}).json()
    mine = {"Authorization": f"Bearer {made['token']}"}
    theirs = client.get("/v1/dedications", headers=mine).json()["items"]
    seen = client.get("/v1/owners", params=[("target", n) for n in names], headers=mine).json()
    assert {r["resource"] for r in seen["items"] if not r["implicit"]} <= {
        d["resource"] for d in theirs
    }
    assert vm["target"] in {r["target"] for r in seen["items"]}
    assert "H4a" not in {r["target"] for r in seen["items"]}  # A13's, not U14's
    assert seen["dedications"] == sorted(theirs, key=lambda d: d["resource"])
    many = client.get("/v1/owners", params=[("target", f"x{i}") for i in range(101)])
    assert many.status_code == 422
    # An account's implicit hosts, for the filter by owner: U14's is its VM's host; A13
    # holds z2 explicitly, nothing implicitly; U14's own token sees its host, another
    # account's token sees none of U14's.
    held = client.get("/v1/owners", params={"account": "U14"}).json()
    assert held["implicit"] == [vm["target"]]
    assert client.get("/v1/owners", params={"account": "A13"}).json()["implicit"] == []
    assert client.get("/v1/owners", params={"account": "U14"}, headers=mine).json()["implicit"] == [
        vm["target"]
    ]
    other = client.post("/v1/tokens", json={"role": "user", "scope": "A13"}).json()
    theirs_headers = {"Authorization": f"Bearer {other['token']}"}
    hidden = client.get("/v1/owners", params={"account": "U14"}, headers=theirs_headers)
    assert hidden.status_code == 200 and hidden.json()["implicit"] == []
    assert client.get("/v1/owners", params={"account": ""}).status_code == 422


PREFERRED = b"""
name: preferred
settings: {implicit_dedication: false}
tenancy:
  domains:
    D1: {accounts: [A1]}
inventory:
  - id: z1
    kind: zone
    children:
      - {id: h1, kind: host, capacity: {cpu: 2}}
      - {id: h2, kind: host, capacity: {cpu: 2}}
offerings:
  - {name: strict, cpu: 1, dedicated: true}
  - {name: preferred, cpu: 1, dedicated: true, implicit: preferred}
"""


def test_only_a_host_implicit_dedication_took_is_owned_implicitly(database: str) -> None:
    app, root = served(database)
    client = client_of(app, root)
    done = client.post("/v1/apply", content=PREFERRED, headers={"content-type": "application/yaml"})
    assert done.status_code == 200, done.text
    # Implicit dedication is off: a preferred VM falls back to a shared host, taking none.
    fell = client.post(
        "/v1/workloads", json={"name": "p", "account": "A1", "offering": "preferred"}
    )
    assert fell.status_code == 201, fell.text
    asked = [("target", "h1"), ("target", "h2")]
    assert client.get("/v1/owners", params=asked).json()["items"] == []
    # On: a strict VM takes an empty host, which is then A1's, implicitly.
    assert client.put("/v1/settings/implicit_dedication", json={"value": True}).status_code == 200
    took = client.post("/v1/workloads", json={"name": "s", "account": "A1", "offering": "strict"})
    assert took.status_code == 201, took.text
    host = took.json()["changes"][0]["to"]
    owners = client.get("/v1/owners", params=asked).json()["items"]
    assert [(o["target"], o["account"], o["implicit"]) for o in owners] == [(host, "A1", True)]


def test_targets_down_and_up_preview_for_anyone_and_confirm_for_root_only(database: str) -> None:
    app, client = applied(database)
    engine = app.state.database
    user = issue(app, "user", "U2")
    console = signed_in_console(app, user)
    fields = {"targets": "H33a", "action": "down", "up": "H33b", "csrf": csrf_of(user)}
    before = table_digest(engine)
    preview = console.post("/ui/whatif", data=fields)
    assert preview.status_code == 200, preview.text
    assert "Preview: H33a down, H33b up" in preview.text
    assert "Only a root admin can make this change" in preview.text
    revision = client.post("/v1/simulate", json={"down": ["H33a"], "up": ["H33b"]}).json()
    confirm = {**fields, "confirm": "yes", "revision": str(revision["revision"])}
    refused = console.post("/ui/whatif", data=confirm)
    assert refused.status_code == 403 and "forbidden" in refused.text
    drain = console.post("/ui/whatif", data={**fields, "action": "drain"})
    assert drain.status_code == 422 and "a drain is previewed alone" in drain.text
    many = "\n".join(f"h{i}" for i in range(whatif.MAX_TARGETS + 1))
    bounded = console.post("/ui/whatif", data={**fields, "up": many})
    assert bounded.status_code == 422 and "at most 1,000 targets" in bounded.text
    hostile = "<b>x</b>"
    unknown = console.post("/ui/whatif", data={**fields, "up": hostile})
    assert unknown.status_code == 404 and hostile not in unknown.text
    assert table_digest(engine) == before


def test_a_what_if_confirmed_without_its_previews_revision_changes_nothing(
    database: str,
) -> None:
    """A confirmation is of a preview at the revision it saw: a form that carries none
    (or one that is no number) is refused, whatever the action, and nothing changes."""
    app, client = applied(database)
    root = client.headers["Authorization"].split()[1]
    console = signed_in_console(app, root)
    before = table_digest(app.state.database)
    for action in ("down", "up", "drain"):
        for revision in (None, "", "x1", "-1"):
            fields = {"targets": "H1a", "action": action, "confirm": "yes", "csrf": csrf_of(root)}
            if revision is not None:
                fields["revision"] = revision
            refused = console.post("/ui/whatif", data=fields)
            assert refused.status_code == 422, (action, revision)
            assert "confirm a preview: preview it first" in refused.text
    also = {"targets": "H1a", "up": "H2a", "action": "down", "confirm": "yes"}
    refused = console.post("/ui/whatif", data={**also, "csrf": csrf_of(root)})
    assert refused.status_code == 422 and "preview it first" in refused.text
    assert table_digest(app.state.database) == before


def test_the_workload_page_says_a_level_is_not_there(database: str, tmp_path: Path) -> None:
    app, root = served(database)
    assert (
        client_of(app, root)
        .post("/v1/apply", content=WORLD, headers={"content-type": "application/yaml"})
        .is_success
    )
    console = signed_in_console(app, root)
    # A level the inventory does not have (the API's 404 invalid-parameter): said so.
    page = console.get("/ui/workloads/shared-u2", params={"level": "rack"})
    assert page.status_code == 404 and "No such level" in page.text
    assert console.get("/ui/workloads/shared-u2").status_code == 200
    # A workload that is not there is the workload's own 404, not a level's.
    gone = console.get("/ui/workloads/nothing")
    assert gone.status_code == 404 and "No such level" not in gone.text
    # An inventory without zones: the page falls back to targets.
    with another_database(database, tmp_path) as url:
        bare, bare_root = served(url)
        spec = b"inventory: [{id: h1, capacity: {cpu: 4}}]\nworkloads: [{name: w}]\n"
        assert (
            client_of(bare, bare_root)
            .post("/v1/apply", content=spec, headers={"content-type": "application/yaml"})
            .is_success
        )
        flat = signed_in_console(bare, bare_root).get("/ui/workloads/w")
        assert flat.status_code == 200 and "h1" in flat.text
