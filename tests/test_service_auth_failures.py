"""Failed authentications are counted, and an address that fails too often is held off
with 429 and Retry-After (issue 34; service/lockout.py)."""

from __future__ import annotations

from pathlib import Path

from placed.service.lockout import WINDOW_S, AuthFailures

from .service_support import bearer, client_of, served

PROBLEM = "application/problem+json"


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def failures_counted(metrics: str) -> float:
    for line in metrics.splitlines():
        if line.startswith("placed_auth_failures_total "):
            return float(line.split()[1])
    raise AssertionError("no placed_auth_failures_total")


def test_a_burst_of_bad_tokens_is_held_off_with_429_until_the_minute_passes(
    tmp_path: Path,
) -> None:
    app, root = served(f"sqlite:///{tmp_path / 'placed.db'}", auth_failures_per_minute=3)
    clock = Clock()
    app.state.auth_failures.clock = clock
    client = client_of(app)
    bad = bearer("plc_nobody_nothing")
    # No token at all guesses nothing: never a failure.
    for _ in range(5):
        assert client.get("/v1/events").status_code == 401
    assert failures_counted(client.get("/metrics").text) == 0
    for _ in range(4):  # three a minute are allowed; the fourth is one too many
        assert client.get("/v1/events", headers=bad).status_code == 401
        clock.now += 1
    held = client.get("/v1/events", headers=bad)
    assert held.status_code == 429, held.text
    assert held.headers["content-type"] == PROBLEM
    assert held.json()["type"] == "urn:placed:problem:too-many-auth-failures"
    # The oldest failure was 4 s ago: a minute after it, the address may try again.
    assert held.headers["retry-after"] == str(int(WINDOW_S) - 4)
    # A valid token from the held address is not looked at either (no oracle).
    assert client.get("/v1/events", headers=bearer(root)).status_code == 429
    # Public routes stay open, and the 429s were not failures.
    assert failures_counted(client.get("/metrics").text) == 4
    clock.now += WINDOW_S - 4
    assert client.get("/v1/events", headers=bearer(root)).status_code == 200
    # Past the window, the failures before it no longer count.
    assert client.get("/v1/events", headers=bad).status_code == 401


def test_an_app_without_a_limit_never_holds_off() -> None:
    failures = AuthFailures(per_minute=0)
    for _ in range(1000):
        failures.failed("192.0.2.1")
    assert failures.retry_after("192.0.2.1") is None
    assert len(failures) == 0


def test_the_table_of_addresses_is_bounded() -> None:
    clock = Clock()
    failures = AuthFailures(per_minute=2, addresses=100, clock=clock)
    for number in range(10_000):
        failures.failed(f"10.0.{number // 256}.{number % 256}")
        failures.failed("192.0.2.1")  # keeps failing: stays in the table
    assert len(failures) == 100
    assert failures.retry_after("192.0.2.1") is not None
    # The one that failed longest ago was forgotten first.
    assert failures.retry_after("10.0.0.0") is None


def test_the_schema_documents_429_where_it_can_answer(tmp_path: Path) -> None:
    app, _ = served(f"sqlite:///{tmp_path / 'placed.db'}")
    schema = client_of(app).get("/openapi.json").json()
    events = schema["paths"]["/v1/events"]["get"]["responses"]
    assert "Retry-After" in events["429"]["headers"]
    # A connection past its address's cap may meet any route, a public one included.
    assert "429" in schema["paths"]["/healthz"]["get"]["responses"]
