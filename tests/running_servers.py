"""Real `placed serve` processes on loopback, for tests that need more than one."""

from __future__ import annotations

import os
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO

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


class Replica:
    """One `placed serve` on a port of its own, which it keeps across a kill and a start
    (clients keep their base URL). Its stderr goes to a file, never a pipe nobody reads:
    a server that logs enough would block on a full pipe. `args`: more options of placed
    serve; with `tls` (the client's side: the CA to trust, a certificate to present) it
    is an https:// server, probed with it."""

    def __init__(
        self,
        url: str,
        env: dict[str, str],
        args: Sequence[str] = (),
        tls: ssl.SSLContext | None = None,
    ) -> None:
        self.url = url
        self.env = env
        self.args = tuple(args)
        self.tls = tls
        self.port = free_port()
        self.base = f"{'https' if tls else 'http'}://127.0.0.1:{self.port}"
        self.process: subprocess.Popen[str] | None = None
        self._logs: list[IO[str]] = []

    def start(self) -> None:
        assert self.process is None or self.process.poll() is not None, "already running"
        log = tempfile.TemporaryFile(mode="w+")  # noqa: SIM115 - closed by stop()
        self._logs.append(log)
        self.process = subprocess.Popen(
            [
                *(str(BIN / "placed"), "serve", "--port", str(self.port)),
                *("--log-level", "warning", "--database", self.url),
                *self.args,
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=log,
            text=True,
            env={**os.environ, **self.env},
        )
        deadline = time.monotonic() + 30
        while True:
            if self.process.poll() is not None:
                raise AssertionError(f"placed serve exited: {self.stderr()}")
            try:
                httpx.get(
                    f"{self.base}/healthz", timeout=2, verify=True if self.tls is None else self.tls
                )
                return
            except httpx.TransportError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)

    def kill(self) -> None:
        """SIGKILL: nothing is cleaned up, as when the machine loses the process."""
        assert self.process is not None
        self.process.send_signal(signal.SIGKILL)
        self.process.wait()

    def stop(self) -> None:
        """SIGTERM, as an operator stops it; SIGKILL when it does not end in 15 s."""
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def stderr(self) -> str:
        """Everything every start of this server wrote on stderr."""
        text = []
        for log in self._logs:
            log.flush()
            log.seek(0)
            text.append(log.read())
        return "".join(text)

    def close(self) -> None:
        for log in self._logs:
            log.close()
        self._logs.clear()


@contextmanager
def replicas(url: str, count: int = 1, **env: str) -> Iterator[list[Replica]]:
    """`count` running servers on one database, stopped (SIGTERM) afterwards; none may
    have logged a traceback."""
    with running([Replica(url, env) for _ in range(count)]) as servers:
        yield servers


@contextmanager
def running(servers: Sequence[Replica]) -> Iterator[list[Replica]]:
    """These servers started, one after the other, and stopped (SIGTERM) afterwards; none
    may have logged a traceback."""
    with ExitStack() as stack:
        started = []
        for server in servers:
            stack.callback(server.close)
            stack.callback(_stopped, server)
            server.start()
            started.append(server)
        yield started


def _stopped(server: Replica) -> None:
    server.stop()
    logged = server.stderr()
    assert "Traceback" not in logged, logged


@contextmanager
def serving(url: str, count: int = 1, **env: str) -> Iterator[list[str]]:
    """`count` servers on one database; their base URLs. Stopped (SIGTERM) afterwards."""
    with replicas(url, count, **env) as servers:
        yield [server.base for server in servers]


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
