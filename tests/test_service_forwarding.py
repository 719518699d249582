"""One committer (service/forwarding.py): two real `placed serve` processes on one
PostgreSQL database; the one holding the lease commits the writes the other forwards.
A claim sent to the follower is committed by the leader and both then answer the same
world; a bad token is refused at the follower and never forwarded; the leader killed,
the follower answers 503 `leader-unavailable` with Retry-After, and once the lease runs
out it leads and commits itself. Short timings keep it quick: a 2 s lease renewed every
0.5 s."""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from typer.testing import CliRunner

from placed.cli.main import app as cli
from placed.service import forwarding
from placed.service.app import create_app
from placed.service.auth import route_rules
from tests.running_servers import replicas, upgrade

TIMING = {"PLACED_LEASE_TTL_S": "2", "PLACED_LEASE_RENEW_S": "0.5", "PLACED_SWEEP_S": "0.25"}
SPEC = """
name: racks
inventory:
  - id: rack1
    kind: rack
    children:
      - {id: h1, capacity: {cpu: 60}}
      - {id: h2, capacity: {cpu: 60}}
"""


def _wait(check: Callable[[], Any], within: float, what: str) -> Any:
    deadline = time.monotonic() + within
    while True:
        found = check()
        if found:
            return found
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {within:g} s: {what}")
        time.sleep(0.05)


def _metric(base: str, name: str) -> float:
    """A sample of /metrics (0 when the series was never written)."""
    text = httpx.get(f"{base}/metrics", timeout=10).text
    pattern = re.escape(name) + r" ([0-9.e+-]+)$"
    found = re.search(pattern, text, re.MULTILINE)
    return float(found.group(1)) if found else 0.0


@pytest.mark.postgres
def test_the_follower_forwards_writes_to_the_leader_and_commits_itself_once_it_leads(
    postgres_database: str,
) -> None:
    token = upgrade(postgres_database)
    headers = {"authorization": f"Bearer {token}"}
    with replicas(postgres_database, 1, **TIMING) as first:
        leader = first[0]

        def leading() -> Any:
            found = httpx.get(f"{leader.base}/v1/leader", headers=headers, timeout=10).json()
            return found if found["leading"] else None

        mine = _wait(leading, 10, "the first server leads")
        with replicas(postgres_database, 1, **TIMING) as second:
            follower = second[0]
            # Its controller's first renewals: it knows the leader from them, not per request.
            time.sleep(2 * float(TIMING["PLACED_LEASE_RENEW_S"]))
            seen = httpx.get(f"{follower.base}/v1/leader", headers=headers, timeout=10).json()
            assert seen["holder"] == mine["this_replica"] and not seen["leading"]
            # The leader's own address, as it listens (no --advertise given).
            assert seen["address"] == leader.base
            applied = httpx.post(
                f"{follower.base}/v1/apply",
                content=SPEC,
                headers={**headers, "content-type": "application/yaml"},
                timeout=60,
            )
            assert applied.status_code == 200, applied.text
            assert applied.headers[forwarding.ANSWERED_BY] == mine["this_replica"]

            claimed = httpx.post(
                f"{follower.base}/v1/workloads",
                json={"name": "vm1", "resources": {"cpu": 1}},
                headers={**headers, "x-request-id": "claim-vm1"},
                timeout=60,
            )
            assert claimed.status_code == 201, claimed.text
            assert claimed.headers[forwarding.ANSWERED_BY] == mine["this_replica"]
            assert claimed.headers["x-request-id"] == "claim-vm1"
            assert _metric(leader.base, "placed_forwarded_writes_received_total") == 2
            answered = 'placed_forwarded_writes_total{outcome="answered"}'
            assert _metric(follower.base, answered) == 2
            assert _metric(follower.base, "placed_forwarded_writes_received_total") == 0

            # Both answer the same world.
            def world(base: str) -> Any:
                answer = httpx.get(f"{base}/v1/workloads/vm1", headers=headers, timeout=10)
                return answer.json() if answer.status_code == 200 else None

            assert _wait(lambda: world(follower.base), 10, "the follower reads vm1") == world(
                leader.base
            )

            # Read-only POSTs and dry runs stay here; a refusal is the leader's own answer.
            simulated = httpx.post(
                f"{follower.base}/v1/simulate", json={"down": ["h1"]}, headers=headers
            )
            assert simulated.status_code == 200, simulated.text
            assert forwarding.ANSWERED_BY not in simulated.headers
            again = httpx.post(
                f"{follower.base}/v1/workloads",
                json={"name": "vm1", "resources": {"cpu": 1}},
                headers=headers,
                timeout=60,
            )
            assert again.status_code == 409, again.text
            assert again.headers["content-type"] == "application/problem+json"

            # A bad token: 401 at the follower, never forwarded.
            before = _metric(leader.base, "placed_forwarded_writes_received_total")
            bad = httpx.post(
                f"{follower.base}/v1/workloads",
                json={"name": "vm2", "resources": {"cpu": 1}},
                headers={"authorization": "Bearer plc_nothing_wrong"},
                timeout=10,
            )
            assert bad.status_code == 401, bad.text
            assert bad.headers["www-authenticate"] == "Bearer"
            assert forwarding.ANSWERED_BY not in bad.headers
            deleted_badly = httpx.delete(f"{follower.base}/v1/workloads/vm1", timeout=10)
            assert deleted_badly.status_code == 401, deleted_badly.text
            assert _metric(leader.base, "placed_forwarded_writes_received_total") == before

            # The leader dies: the follower cannot forward, and says so.
            leader.kill()
            refused = httpx.post(
                f"{follower.base}/v1/workloads",
                json={"name": "vm3", "resources": {"cpu": 1}},
                headers=headers,
                timeout=60,
            )
            assert refused.status_code == 503, refused.text
            problem = refused.json()
            assert problem["type"] == "urn:placed:problem:leader-unavailable"
            assert problem["may_have_committed"] is False
            assert 1 <= int(refused.headers["retry-after"]) <= 2
            unreachable = 'placed_forwarded_writes_total{outcome="unreachable"}'
            assert _metric(follower.base, unreachable) >= 1

            # Once the lease runs out the follower leads and commits itself.
            def committed_here() -> httpx.Response | None:
                answer = httpx.post(
                    f"{follower.base}/v1/workloads",
                    json={"name": "vm3", "resources": {"cpu": 1}},
                    headers=headers,
                    timeout=60,
                )
                if answer.status_code == 503:
                    return None
                return answer

            done = _wait(committed_here, 10, "the follower commits vm3 itself")
            assert done.status_code == 201, done.text
            assert forwarding.ANSWERED_BY not in done.headers
            deleted = httpx.delete(f"{follower.base}/v1/workloads/vm1", headers=headers)
            assert deleted.status_code in (200, 204), deleted.text
            assert forwarding.ANSWERED_BY not in deleted.headers
            # (It committed once the lease ran out, perhaps before its renewal took it.)

            def follower_leads() -> Any:
                found = httpx.get(f"{follower.base}/v1/leader", headers=headers, timeout=10)
                return found.json() if found.json()["leading"] else None

            now = _wait(follower_leads, 10, "the follower leads")
            assert now["epoch"] == mine["epoch"] + 1
            assert now["address"] == follower.base


def test_every_write_route_is_forwarded_or_stays_for_a_reason() -> None:
    # Each route STAY names is a route of the app: renaming one would forward it quietly.
    writes = {
        (method, path)
        for method, path in route_rules(create_app())
        if method in forwarding.WRITES and path.startswith("/v1/")
    }
    assert forwarding.STAY - writes == set()
    assert ("POST", "/v1/workloads") in writes - forwarding.STAY


def test_an_app_without_a_controller_forwards_nothing() -> None:
    # A test's app, or one replica: no lease to follow.
    assert create_app().state.forwarder is None


@pytest.mark.parametrize(
    ("given", "why"),
    [
        ("ftp://10.0.0.5:8700", "give http://HOST:PORT"),
        ("http://10.0.0.5:8700/?a=1", "only a scheme"),
        ("http://10.0.0.5:port", "not a URL"),
    ],
)
def test_serve_refuses_an_advertised_address_that_is_no_base_url(given: str, why: str) -> None:
    done = CliRunner().invoke(cli, ["serve", "--advertise", given])
    assert done.exit_code == 2, done.output
    assert "--advertise" in done.output and why in done.output


def test_the_forwarder_drops_an_idle_connection_before_the_leader_closes_it() -> None:
    """A connection both sides keep idle equally long may be closed by the leader just as
    a write goes out on it, and that write is answered 503 may-have-committed: the
    forwarder's pool lets go of an idle connection well before `placed serve`'s
    keep-alive (uvicorn's, which the command leaves at its default) runs out."""
    import uvicorn

    from placed.store.database import make_engine

    app = create_app(database=make_engine("sqlite://"))
    client = forwarding.Forwarder(app.state.controller, app.state.metrics).client()
    expiry = client._transport._pool._keepalive_expiry  # type: ignore[attr-defined]
    served = uvicorn.Config(app=app).timeout_keep_alive
    assert expiry is not None and expiry <= served / 2, (expiry, served)
