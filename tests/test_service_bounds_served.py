"""The bounds of tests/test_service_bounds.py against a real `placed serve`: bodies of
hundreds of megabytes, with and without a token, declared or chunked, are refused before
the server holds them (its resident set stays under 300 MB), and /healthz answers while
a spec is being refused (not yet within 100 ms: see the test's mark)."""

from __future__ import annotations

import json
import select
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from placed.service.offload import MEMORY_BYTES
from placed.store.database import make_engine

from .running_servers import Server, server, upgrade
from .service_support import table_digest

MB = 1024 * 1024
MOST_RSS = 300 * MB


def rss(pid: int) -> int:
    """The process's resident set, in bytes (/proc/PID/status: VmRSS)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


def children_rss(pid: int) -> int:
    """The resident sets of the process's children (the server's spec reader), summed."""
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            children = (task / "children").read_text().split()
        except OSError:
            continue
        for child in children:
            try:
                total += rss(int(child))
            except (OSError, AssertionError):
                continue  # gone meanwhile
    return total


# What the server writes by itself while the test runs: its lease, renewed every 2 s, and
# the lease.acquired event with the revision it takes (written a moment after the lease).
OWN_WRITES = ("leases", "events", "revision")


def led_by_then(base: str, token: str) -> None:
    """Wait until the server's controller holds the lease (it writes an event then)."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        answer = httpx.get(
            f"{base}/v1/leader", headers={"Authorization": f"Bearer {token}"}, timeout=5
        )
        if answer.status_code == 200 and answer.json().get("holder"):
            return
        time.sleep(0.1)
    raise AssertionError("no controller took the lease")


class Peak:
    """The largest resident set of a process, and of its children together, sampled
    every 20 ms while in use."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.most = rss(pid)
        self.children_most = 0
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)

    def _watch(self) -> None:
        while not self._done.wait(0.02):
            self.most = max(self.most, rss(self.pid))
            self.children_most = max(self.children_most, children_rss(self.pid))

    def __enter__(self) -> Peak:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._done.set()
        self._thread.join()


def request_head(port: int, path: str, headers: dict[str, str]) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    lines = [f"POST {path} HTTP/1.1", "Host: 127.0.0.1", "Content-Type: application/json"]
    lines += [f"{name}: {value}" for name, value in headers.items()]
    sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
    return sock


def answer_of(sock: socket.socket) -> tuple[int, str]:
    """The status and body of the response on `sock` (read until the server closes)."""
    data = b""
    while True:
        try:
            piece = sock.recv(65536)
        except ConnectionResetError:
            break
        if not piece:
            break
        data += piece
    head, _, body = data.partition(b"\r\n\r\n")
    return int(head.split()[1]), body.decode(errors="replace")


def send_until_answered(sock: socket.socket, pieces: Iterator[bytes], most: int) -> int:
    """Send body pieces until the server answers (or `most` bytes went); the bytes sent."""
    sent = 0
    for piece in pieces:
        readable, _, _ = select.select([sock], [], [], 0)
        if readable or sent >= most:
            break
        try:
            sock.sendall(piece)
        except (BrokenPipeError, ConnectionResetError):
            break
        sent += len(piece)
    return sent


def chunked(size: int = 64 * 1024) -> Iterator[bytes]:
    while True:
        yield f"{size:x}\r\n".encode() + b" " * size + b"\r\n"


def plain(size: int = MB) -> Iterator[bytes]:
    while True:
        yield b" " * size


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[Server, str, str]]:
    url = f"sqlite:///{tmp_path / 'placed.db'}"
    root = upgrade(url)
    with server(url, tmp_path / "server.log") as found:
        yield found, root, url
        assert "Traceback" not in found.errors(), found.errors()


def port_of(found: Server) -> int:
    return int(found.base.rsplit(":", 1)[1])


def test_huge_bodies_with_or_without_a_token_leave_the_server_small(
    served: tuple[Server, str, str],
) -> None:
    found, root, url = served
    engine = make_engine(url)
    before = table_digest(engine)
    port = port_of(found)
    huge = str(200 * MB)
    cases = [
        ({"Content-Length": huge}, plain(), 401),  # no token, 4 at once below
        ({"Content-Length": huge, "Authorization": "Bearer plc_no_body"}, plain(), 401),
        ({"Content-Length": huge, "Authorization": f"Bearer {root}"}, plain(), 413),
        ({"Transfer-Encoding": "chunked", "Authorization": f"Bearer {root}"}, chunked(), 413),
        ({"Transfer-Encoding": "chunked"}, chunked(), 401),
    ]
    with Peak(found.process.pid) as peak:
        for headers, pieces, status in cases:
            socks = [request_head(port, "/v1/workloads", headers) for _ in range(4)]
            started = time.monotonic()
            for sock in socks:
                # The server answers while the body comes (a refusal by its declared
                # length at once; a chunked one past 1 MiB), long before 200 MB went.
                sent = send_until_answered(sock, pieces, 200 * MB)
                assert sent < 8 * MB, (headers, sent)
            for sock in socks:
                answer = answer_of(sock)
                sock.close()
                assert answer[0] == status, (headers, answer)
                kind = "unauthenticated" if status == 401 else "body-too-large"
                assert json.loads(answer[1])["type"] == f"urn:placed:problem:{kind}"
            assert time.monotonic() - started < 10
    assert peak.most < MOST_RSS, f"{peak.most / MB:.0f} MB"
    assert httpx.get(f"{found.base}/healthz", timeout=5).status_code == 200
    assert table_digest(engine) == before


@pytest.mark.parametrize("route", ["/v1/plan", "/v1/apply"])
def test_health_answers_while_a_16_mib_spec_is_refused(
    served: tuple[Server, str, str], route: str
) -> None:
    """The spec is read in a worker process (service/offload.py): without it, json.loads
    and pydantic's validation of 15 MB each hold the interpreter for a second or more,
    and /healthz waited behind them (measured: up to 3.7 s)."""
    found, root, url = served
    engine = make_engine(url)
    led_by_then(found.base, root)  # its lease.acquired event is not the request's
    before = table_digest(engine, leaving_out=OWN_WRITES)
    hosts: list[dict[str, Any]] = []
    size = 0
    while size < 15 * MB:  # within the 16 MiB limit, every host with two problems
        host: dict[str, Any] = {"id": f"h{len(hosts)}", "capacity": {"cpu": "x"}, "tags": [1]}
        hosts.append(host)
        size += len(json.dumps(host)) + 2
    body = json.dumps({"inventory": hosts}).encode()
    answers: list[httpx.Response] = []

    def refuse() -> None:
        answers.append(
            httpx.post(
                f"{found.base}{route}",
                content=body,
                headers={"Authorization": f"Bearer {root}", "Content-Type": "application/json"},
                timeout=120,
            )
        )

    sender = threading.Thread(target=refuse)
    waits = []
    with Peak(found.process.pid) as peak, httpx.Client(base_url=found.base, timeout=10) as health:
        health.get("/healthz")
        sender.start()
        while sender.is_alive():
            started = time.monotonic()
            assert health.get("/healthz").status_code == 200
            waits.append(time.monotonic() - started)
            time.sleep(0.02)
        sender.join()
    answer = answers[0]
    assert answer.status_code == 422, answer.text[:300]
    assert len(answer.json()["errors"]) == 100
    assert "the first 100 are listed" in answer.json()["detail"]
    assert len(waits) > 5
    # A wait behind the spec's reading is seconds (above: 3.7 s). On a shared two-core
    # machine running two test processes beside the server and its worker, one answer
    # took 117-136 ms in one run and 540 ms in another (a clean clone's CI, the rest
    # under 110 ms) while the server took in and handed over the 15 MB: the bound is
    # the stall's, not a latency goal.
    assert max(waits) < 1.0, sorted(waits)[-5:]
    # The server's own memory stays as it was; the reading's is the worker's, bounded.
    assert peak.most < MOST_RSS, f"{peak.most / MB:.0f} MB"
    assert peak.children_most < MEMORY_BYTES, f"{peak.children_most / MB:.0f} MB"
    assert table_digest(engine, leaving_out=OWN_WRITES) == before
