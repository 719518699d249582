"""`placed serve`'s connections (issue 34): headers that trickle are cut off, one
address's connections are capped, and a stop ends long polls at once. Real servers on
loopback."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

from tests.running_servers import BIN, free_port, upgrade


@dataclass
class Served:
    base: str
    process: subprocess.Popen[str]
    log: Path  # its stdout and stderr
    token: str  # a root-admin's


@contextmanager
def serving(tmp_path: Path, *options: str) -> Iterator[Served]:
    """A `placed serve` with `options` on a fresh SQLite database; stopped (SIGTERM)
    afterwards."""
    url = f"sqlite:///{tmp_path / 'placed.db'}"
    token = upgrade(url)
    port = free_port()
    log = tmp_path / "serve.log"
    with open(log, "w") as sink:
        process = subprocess.Popen(
            [str(BIN / "placed"), "serve", "--port", str(port), "--database", url, *options],
            stdin=subprocess.DEVNULL,
            stdout=sink,
            stderr=subprocess.STDOUT,
            text=True,
            env={**os.environ},
        )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            assert process.poll() is None, log.read_text()
            try:
                httpx.get(f"{base}/healthz", timeout=2)
                break
            except httpx.TransportError:
                assert time.monotonic() < deadline, log.read_text()
                time.sleep(0.1)
        yield Served(base, process, log, token)
    finally:
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def connect(base: str) -> socket.socket:
    host, port = base.removeprefix("http://").split(":")
    return socket.create_connection((host, int(port)), timeout=10)


def closed_after(sock: socket.socket) -> float:
    """Seconds until the server closes `sock` (reading and dropping what it sends)."""
    started = time.monotonic()
    try:
        while sock.recv(4096):
            pass
    except ConnectionResetError:
        pass
    return time.monotonic() - started


def test_headers_that_trickle_are_cut_off_after_the_header_timeout(tmp_path: Path) -> None:
    with serving(tmp_path, "--header-timeout", "1", "--log-level", "warning") as served:
        base = served.base
        # A client that opens a connection and sends nothing.
        with connect(base) as idle:
            assert closed_after(idle) < 5
        # One that sends a header line every 0.3 s, never the blank line that ends them.
        with connect(base) as slow:
            slow.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
            started = time.monotonic()
            cut = False
            while time.monotonic() - started < 10:
                try:
                    slow.sendall(b"X-Slow: 1\r\n")
                except (BrokenPipeError, ConnectionResetError):
                    cut = True
                    break
                time.sleep(0.3)
            assert cut, "the server still read headers after 10 s"
            assert time.monotonic() - started < 5
        # A keep-alive connection's second request has the same deadline.
        with connect(base) as kept:
            kept.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
            assert kept.recv(4096).startswith(b"HTTP/1.1 200")
            kept.sendall(b"GET /healthz HTTP/1.1\r\n")
            assert closed_after(kept) < 5
        # Headers sent at once are answered as ever.
        assert httpx.get(f"{base}/healthz", timeout=5).status_code == 200


def test_connections_past_an_address_cap_are_answered_429(tmp_path: Path) -> None:
    options = ("--max-conns-per-client", "2", "--header-timeout", "60", "--log-level", "warning")
    with serving(tmp_path, *options) as served:
        base = served.base
        first, second = connect(base), connect(base)
        time.sleep(0.2)  # both accepted before the next
        refused = httpx.get(f"{base}/healthz", timeout=5)
        assert refused.status_code == 429
        assert refused.headers["content-type"] == "application/problem+json"
        assert refused.json()["type"] == "urn:placed:problem:too-many-connections"
        assert refused.headers["retry-after"] == "1"
        assert refused.headers["connection"] == "close"
        assert httpx.get(f"{base}/healthz", timeout=5).status_code == 429
        # One warning while the address stays at the cap, not one per connection.
        assert served.log.read_text().count("connections open") == 1
        first.close()
        second.close()
        time.sleep(0.2)
        # Closed connections no longer count.
        with httpx.Client(timeout=5) as client:
            for _ in range(3):  # one connection, kept alive: one of the two
                assert client.get(f"{base}/healthz").status_code == 200


def test_sigterm_ends_a_long_poll_at_once(tmp_path: Path) -> None:
    options = ("--graceful-timeout", "20", "--log-level", "warning")
    with serving(tmp_path, *options) as served:
        base, process, log = served.base, served.process, served.log
        auth = {"Authorization": f"Bearer {served.token}"}
        # The controller's lease.acquired is the last event a server writes by itself.
        leased: dict[str, str | int] = {"kind": "lease.acquired", "wait": 20}
        assert httpx.get(f"{base}/v1/events", params=leased, headers=auth, timeout=30).json()[
            "items"
        ]
        newest = httpx.get(f"{base}/v1/events", params={"latest": True}, headers=auth).json()
        answers: list[httpx.Response | Exception] = []

        def poll() -> None:
            try:
                params = {"after": newest["next_cursor"], "wait": 30}
                answers.append(
                    httpx.get(f"{base}/v1/events", params=params, headers=auth, timeout=60)
                )
            except Exception as error:
                answers.append(error)

        poller = threading.Thread(target=poll)
        poller.start()
        time.sleep(1.0)  # the poll is waiting on the server
        assert not answers
        stopped = time.monotonic()
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=30)
        took = time.monotonic() - stopped
        poller.join(timeout=30)
        # Without the bell closing, the poll would wait out its 30 s, and the stop the
        # whole --graceful-timeout (20 s).
        assert took < 8, (took, log.read_text())
        assert answers, "the poll never ended"
        answer = answers[0]
        if isinstance(answer, httpx.Response):
            assert answer.status_code == 200, answer.text
            assert answer.json() == {"items": [], "next_cursor": newest["next_cursor"]}
        else:
            assert isinstance(answer, httpx.RemoteProtocolError), answer
        assert process.returncode in (0, -signal.SIGTERM)
        assert "Traceback" not in log.read_text()


def test_json_logs_every_line_an_object_with_access_fields(tmp_path: Path) -> None:
    with serving(tmp_path, "--log-format", "json", "--log-level", "info") as served:
        base, process, log, token = served.base, served.process, served.log, served.token
        accessor = token.split("_")[1]
        auth = {"Authorization": f"Bearer {token}", "X-Request-Id": "given-id-1"}
        assert httpx.get(f"{base}/v1/events", headers=auth).status_code == 200
        bad = {"Authorization": "Bearer plc_nothing_here"}
        assert httpx.get(f"{base}/v1/events", headers=bad).status_code == 401
        assert httpx.get(f"{base}/nowhere").status_code == 404
        process.terminate()
        process.wait(timeout=30)
    lines = [line for line in log.read_text().splitlines() if line.strip()]
    parsed = []
    for line in lines:
        found = json.loads(line)  # every line, uvicorn's included
        assert isinstance(found, dict), line
        assert {"time", "level", "logger", "message"} <= set(found), line
        parsed.append(found)
    loggers = {line["logger"] for line in parsed}
    assert "uvicorn.error" in loggers  # "Started server process", "Application startup..."
    assert "uvicorn.access" not in loggers  # placed's own access lines instead
    listening = [line for line in parsed if line["logger"] == "placed.serve"]
    assert listening and listening[0]["url"] == base
    access = [line for line in parsed if line["logger"] == "placed.access"]
    by_status = {line["status"]: line for line in access}
    answered = by_status[200]
    assert answered["method"] == "GET" and answered["route"] == "/v1/events"
    assert answered["request_id"] == "given-id-1" and answered["accessor"] == accessor
    assert isinstance(answered["duration_ms"], float)
    assert by_status[401]["accessor"] is None and by_status[401]["route"] == "/v1/events"
    assert by_status[404]["route"] == "<unmatched>"
    assert all(line["client"] == "127.0.0.1" for line in access)


def test_serve_help_teaches_the_limits() -> None:
    done = subprocess.run(
        [str(BIN / "placed"), "serve", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "COLUMNS": "80"},
    )
    assert done.returncode == 0, done.stderr
    for option in (
        "--header-timeout",
        "--max-conns-per-client",
        "--graceful-timeout",
        "--auth-failures-per-minute",
        "--log-format",
    ):
        assert option in done.stdout
