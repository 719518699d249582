"""Real `placed serve` processes on loopback, for tests that need more than one."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

BIN = Path(sys.executable).parent


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def upgrade(url: str) -> str:
    """Bring `url` to head with `placed db upgrade`; the root token it prints."""
    done = subprocess.run(
        [str(BIN / "placed"), "db", "upgrade", "--database", url],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    tokens = [word for word in done.stdout.split() if word.startswith("plc_")]
    assert tokens, done.stdout
    return tokens[0]


@contextmanager
def serving(url: str, count: int = 1, **env: str) -> Iterator[list[str]]:
    """`count` servers on one database; their base URLs. Stopped (SIGTERM) afterwards."""
    with ExitStack() as stack:
        bases = [stack.enter_context(_one(url, env)) for _ in range(count)]
        yield bases


@contextmanager
def _one(url: str, env: dict[str, str]) -> Iterator[str]:
    port = free_port()
    log = open(os.devnull, "w")  # noqa: SIM115 - closed below, after the process
    server = subprocess.Popen(
        [
            *(str(BIN / "placed"), "serve", "--port", str(port), "--log-level", "warning"),
            *("--database", url),
        ],
        stdin=subprocess.DEVNULL,
        stdout=log,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **env},
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            if server.poll() is not None:
                raise AssertionError(server.stderr.read() if server.stderr else "exited")
            try:
                httpx.get(f"{base}/healthz", timeout=2)
                break
            except httpx.TransportError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
        yield base
    finally:
        server.terminate()
        try:
            _, stderr = server.communicate(timeout=15)
        except subprocess.TimeoutExpired:
            server.kill()
            _, stderr = server.communicate()
        log.close()
        assert "Traceback" not in (stderr or ""), stderr


@dataclass
class Server:
    """A `placed serve` process: its base URL, the process (to kill or pause it), and
    the file its stderr goes to."""

    base: str
    process: subprocess.Popen[str]
    log: Path

    def errors(self) -> str:
        return self.log.read_text(errors="replace")


@contextmanager
def server(url: str, log: Path, **env: str) -> Iterator[Server]:
    """One server on `url`, its stderr in the file `log` (a pipe no one reads could fill
    and stall it); stopped afterwards, resumed first if a test paused it. A test that
    killed it finds it dead: that is no failure here."""
    port = free_port()
    with open(log, "w") as sink:
        process = subprocess.Popen(
            [
                *(str(BIN / "placed"), "serve", "--port", str(port), "--log-level", "warning"),
                *("--database", url),
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=sink,
            text=True,
            env={**os.environ, **env},
        )
    found = Server(f"http://127.0.0.1:{port}", process, log)
    try:
        deadline = time.monotonic() + 30
        while True:
            if process.poll() is not None:
                raise AssertionError(found.errors() or "exited")
            try:
                httpx.get(f"{found.base}/healthz", timeout=2)
                break
            except httpx.TransportError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
        yield found
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGCONT)
            process.terminate()
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
