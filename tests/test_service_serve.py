"""`placed serve` as an operator runs it: a real process on loopback."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

BIN = Path(sys.executable).parent


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def upgraded(tmp_path: Path) -> str:
    """A SQLite database at the current schema, as `placed db upgrade` makes it."""
    url = f"sqlite:///{tmp_path / 'placed.db'}"
    done = subprocess.run(
        [str(BIN / "placed"), "db", "upgrade", "--database", url],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return url


def test_serve_answers_health_and_stops_on_sigterm(tmp_path: Path) -> None:
    port = free_port()
    url = upgraded(tmp_path)
    server = subprocess.Popen(
        [
            *(str(BIN / "placed"), "serve", "--port", str(port), "--log-level", "warning"),
            *("--database", url),
        ],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ},
    )
    try:
        deadline = time.monotonic() + 20
        answer = None
        while time.monotonic() < deadline and server.poll() is None:
            try:
                answer = httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2)
                break
            except httpx.TransportError:
                time.sleep(0.1)
        assert answer is not None, server.stderr.read() if server.stderr else ""
        assert answer.status_code == 200
        assert answer.json() == {"status": "ok"}
        assert answer.headers["x-request-id"]
        ready = httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=5)
        assert ready.status_code == 200, ready.text
        missing = httpx.get(f"http://127.0.0.1:{port}/nowhere", timeout=2)
        assert missing.status_code == 404
        assert missing.headers["content-type"] == "application/problem+json"
    finally:
        server.terminate()
        try:
            _, stderr = server.communicate(timeout=15)
        except subprocess.TimeoutExpired:
            server.kill()
            server.communicate()
            raise
    # uvicorn shuts down cleanly, then ends by the signal it got, as a shell expects.
    assert server.returncode in (0, -signal.SIGTERM), stderr
    assert (
        f"listening on http://127.0.0.1:{port} (the console: http://127.0.0.1:{port}/ui)" in stderr
    )
    assert "Traceback" not in stderr


def test_serve_refuses_a_database_without_its_schema(tmp_path: Path) -> None:
    done = subprocess.run(
        [str(BIN / "placed"), "serve", "--database", f"sqlite:///{tmp_path / 'empty.db'}"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert done.stderr.startswith("error: --database: ")
    assert "run placed db upgrade" in done.stderr and "Traceback" not in done.stderr


def test_serve_on_a_port_in_use_is_an_error_naming_the_port(tmp_path: Path) -> None:
    url = upgraded(tmp_path)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run(
            [str(BIN / "placed"), "serve", "--port", str(port), "--database", url],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert done.returncode == 2
    assert done.stderr.startswith(f"error: --port: 127.0.0.1:{port} is already in use")
    assert "Traceback" not in done.stderr
