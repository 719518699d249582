"""Issue 34's five reproductions against a real `placed serve`, as an attacker sends them,
with the figures RELIABILITY.md gives: requests tried, 5xx answers, scope violations,
bodies refused, the slowest answer, the server's memory peak and /healthz's worst wait.

    .venv/bin/python benchmarks/attack.py [--database sqlite|postgresql] [--big-mb 200]

1. Prune across tenants: every scoped token (two users, two domain-admins) applies an
   empty document named as each other tenant's document (and as root's), with
   prune=true, by name and by ?source=. A violation: anything outside the caller's
   scope changed (root's listing of targets and of the other accounts' workloads).
2. Big bodies: 4 bodies of --big-mb MB to POST /v1/workloads without a token, two with
   Content-Length and two chunked; and one chunked with a valid token.
3. Long names: a workload named with 254 characters and with 1 MiB, by a user.
4. A spec with many problems (10 MB, from an agent token) to POST /v1/plan, while
   /healthz is asked every 20 ms.
5. Deep JSON (depth 1,000 and 100,000) to every operation that takes a body.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

BIN = Path(sys.executable).parent
POSTGRES = os.environ.get(
    "PLACED_BENCH_POSTGRES_URL", "postgresql+psycopg://postgres@127.0.0.1:5432"
)


@dataclass
class Tally:
    tried: int = 0
    server_errors: int = 0
    refused: dict[int, int] = field(default_factory=dict)
    violations: list[str] = field(default_factory=list)
    slowest: float = 0.0

    def count(self, answer: httpx.Response | None, seconds: float) -> None:
        self.tried += 1
        self.slowest = max(self.slowest, seconds)
        if answer is None:
            return
        if answer.status_code >= 500:
            self.server_errors += 1
        elif answer.status_code >= 400:
            self.refused[answer.status_code] = self.refused.get(answer.status_code, 0) + 1


class Memory(threading.Thread):
    """The server's resident set, sampled every 20 ms: its peak."""

    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.pid = pid
        self.peak_kb = 0
        self.running = True

    def run(self) -> None:
        while self.running:
            try:
                for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
                    if line.startswith("VmRSS:"):
                        self.peak_kb = max(self.peak_kb, int(line.split()[1]))
            except OSError:
                return
            time.sleep(0.02)


def _database(kind: str, folder: Path) -> tuple[str, Any]:
    if kind == "sqlite":
        return f"sqlite:///{folder / 'attack.db'}", None
    import psycopg

    name = f"placed_attack_{os.getpid()}"
    admin = POSTGRES.replace("postgresql+psycopg://", "postgresql://") + "/postgres"
    with psycopg.connect(admin, autocommit=True) as connection:
        connection.execute(f'DROP DATABASE IF EXISTS "{name}"')
        connection.execute(f'CREATE DATABASE "{name}"')

    def drop() -> None:
        with psycopg.connect(admin, autocommit=True) as connection:
            connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    return f"{POSTGRES}/{name}", drop


def _free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _tokens(client: httpx.Client) -> dict[str, str]:
    made = {}
    for name, role, scope in (
        ("user acme", "user", "acme"),
        ("user globex", "user", "globex"),
        ("domain-admin eng", "domain-admin", "eng"),
        ("domain-admin sales", "domain-admin", "sales"),
        ("agent h1", "agent", "h1"),
    ):
        answer = client.post("/v1/tokens", json={"role": role, "scope": scope})
        answer.raise_for_status()
        made[name] = answer.json()["token"]
    return made


def _outside(client: httpx.Client, reach: set[str]) -> str:
    """Root's view of what a caller reaching `reach` may not change."""
    targets = client.get("/v1/targets", params={"limit": 1000}).json()["items"]
    workloads = client.get("/v1/workloads", params={"limit": 1000}).json()["items"]
    kept = [
        (t["name"], t.get("capacity"), t.get("admin_state"), t.get("document")) for t in targets
    ] + [
        (w["name"], w["spec"], w["account"], w["document"], w["generation"])
        for w in workloads
        if w["account"] not in reach
    ]
    return json.dumps(kept, sort_keys=True, default=str)


def _chunks(size: int, piece: int = 1 << 20) -> Iterator[bytes]:
    block = b"x" * piece
    sent = 0
    while sent < size:
        yield block[: min(piece, size - sent)]
        sent += piece


def _timed(tally: Tally, send: Any, *args: Any, **options: Any) -> httpx.Response | None:
    started = time.perf_counter()
    try:
        answer: httpx.Response | None = send(*args, **options)
    except httpx.HTTPError:
        answer = None  # the server closed the connection while the body was sent
    tally.count(answer, time.perf_counter() - started)
    return answer


def _deep(depth: int) -> bytes:
    return b'{"a":' * depth + b"1" + b"}" * depth


def run(database: str, big_mb: int) -> dict[str, Any]:
    folder = Path(tempfile.mkdtemp(prefix="placed-attack-"))
    url, drop = _database(database, folder)
    upgraded = subprocess.run(
        [str(BIN / "placed"), "db", "upgrade", "--database", url],
        capture_output=True,
        text=True,
        check=True,
    )
    root = next(word for word in upgraded.stdout.split() if word.startswith("plc_"))
    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    with open(folder / "serve.log", "w") as log:
        server = subprocess.Popen(
            [str(BIN / "placed"), "serve", "--port", str(port), "--database", url],
            stdout=log,
            stderr=log,
        )
    memory = Memory(server.pid)
    figures: dict[str, Any] = {}
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                httpx.get(f"{base}/healthz", timeout=1)
                break
            except httpx.TransportError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
        memory.start()
        admin = httpx.Client(
            base_url=base, headers={"Authorization": f"Bearer {root}"}, timeout=120
        )
        admin.post(
            "/v1/apply",
            json={
                "name": "infra",
                "tenancy": {
                    "domains": {
                        "eng": {"accounts": ["acme"]},
                        "sales": {"accounts": ["globex"]},
                    }
                },
                "inventory": [
                    {
                        "id": "dc1",
                        "children": [{"id": f"h{i}", "capacity": {"cpu": 8}} for i in range(1, 5)],
                    }
                ],
            },
        ).raise_for_status()
        tokens = _tokens(admin)
        as_ = {
            name: httpx.Client(
                base_url=base, headers={"Authorization": f"Bearer {text}"}, timeout=300
            )
            for name, text in tokens.items()
        }
        for account in ("acme", "globex"):
            as_[f"user {account}"].post(
                "/v1/apply",
                json={
                    "name": f"{account}-apps",
                    "workloads": [{"name": f"{account}-web", "resources": {"cpu": 1}}],
                },
            ).raise_for_status()

        # 1. Prune across tenants.
        tally = Tally()
        reach = {
            "user acme": {"acme"},
            "user globex": {"globex"},
            "domain-admin eng": {"acme"},
            "domain-admin sales": {"globex"},
        }
        for caller, accounts in reach.items():
            for document in ("acme-apps", "globex-apps", "infra"):
                for body, params in (
                    ({"name": document, "workloads": []}, {"prune": "true"}),
                    ({"workloads": []}, {"prune": "true", "source": document}),
                ):
                    before = _outside(admin, accounts)
                    _timed(tally, as_[caller].post, "/v1/apply", json=body, params=params)
                    if _outside(admin, accounts) != before:
                        tally.violations.append(f"{caller} pruning {document}")
                    # What a caller may prune of its own, it did: put it back.
                    own = f"{next(iter(accounts))}-apps"
                    if document == own:
                        as_[f"user {next(iter(accounts))}"].post(
                            "/v1/apply",
                            json={
                                "name": own,
                                "workloads": [
                                    {"name": f"{next(iter(accounts))}-web", "resources": {"cpu": 1}}
                                ],
                            },
                        )
        figures["prune across tenants"] = tally

        # 2. Big bodies.
        tally = Tally()
        size = big_mb * 1024 * 1024
        anonymous = httpx.Client(base_url=base, timeout=300)
        for chunked in (False, False, True, True):
            headers = {"content-type": "application/json"}
            if not chunked:
                headers["content-length"] = str(size)
            _timed(tally, anonymous.post, "/v1/workloads", content=_chunks(size), headers=headers)
        json_type = {"content-type": "application/json"}
        _timed(
            tally, as_["user acme"].post, "/v1/workloads", content=_chunks(size), headers=json_type
        )
        figures["big bodies"] = tally

        # 3. Long names.
        tally = Tally()
        for length in (254, 1024 * 1024):
            before = _outside(admin, set())
            _timed(tally, as_["user acme"].post, "/v1/workloads", json={"name": "n" * length})
            if _outside(admin, set()) != before:
                tally.violations.append(f"a {length}-character name was stored")
        figures["long names"] = tally

        # 4. Many problems, while /healthz is asked.
        tally = Tally()
        waits: list[float] = []
        stop = threading.Event()

        def probe() -> None:
            while not stop.is_set():
                started = time.perf_counter()
                with contextlib.suppress(httpx.HTTPError):
                    httpx.get(f"{base}/healthz", timeout=30)
                waits.append(time.perf_counter() - started)
                time.sleep(0.02)

        spec = {
            "workloads": [{"name": f"w{i}", "units": -1, "mode": "nope"} for i in range(150_000)]
        }
        text = json.dumps(spec).encode()
        prober = threading.Thread(target=probe, daemon=True)
        prober.start()
        answer = _timed(tally, as_["agent h1"].post, "/v1/plan", content=text, headers=json_type)
        stop.set()
        prober.join()
        figures["many problems"] = tally
        figures["many problems: body MB"] = round(len(text) / 1e6, 1)
        figures["many problems: errors answered"] = (
            len(answer.json().get("errors", []))
            if answer is not None and answer.headers.get("content-type", "").endswith("json")
            else None
        )
        figures["many problems: answer bytes"] = len(answer.content) if answer is not None else None
        figures["healthz worst wait (s)"] = round(max(waits), 3) if waits else None

        # 5. Deep JSON on every operation with a body.
        tally = Tally()
        schema = admin.get("/openapi.json").json()
        operations = [
            (method.upper(), path)
            for path, entries in schema["paths"].items()
            for method, operation in entries.items()
            if "requestBody" in operation
        ]
        for method, path in operations:
            concrete = (
                path.replace("{name}", "h1")
                .replace("{resource}", "h1")
                .replace("{key}", "default_mode")
                .replace("{unit}", "acme-web/0")
                .replace("{accessor}", "x")
            )
            for depth in (1_000, 100_000):
                _timed(
                    tally,
                    admin.request,
                    method,
                    concrete,
                    content=_deep(depth),
                    headers={"content-type": "application/json"},
                )
        figures["deep JSON"] = tally
        figures["deep JSON: operations"] = len(operations)
    finally:
        memory.running = False
        server.terminate()
        server.wait(timeout=30)
        if drop is not None:
            drop()
    figures["server memory peak (MB)"] = round(memory.peak_kb / 1024, 1)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--database", choices=("sqlite", "postgresql"), default="sqlite")
    parser.add_argument("--big-mb", type=int, default=200, help="each big body's size (MB)")
    options = parser.parse_args()
    figures = run(options.database, options.big_mb)
    print(
        f"| reproduction ({options.database}) | requests | 5xx | refused (status: count) "
        "| scope violations | slowest (s) |"
    )
    print("|---|---|---|---|---|---|")
    failed = False
    for name, value in figures.items():
        if isinstance(value, Tally):
            refused = ", ".join(f"{k}: {v}" for k, v in sorted(value.refused.items()))
            print(
                f"| {name} | {value.tried} | {value.server_errors} | {refused} | "
                f"{len(value.violations)} | {value.slowest:.2f} |"
            )
            failed |= bool(value.server_errors or value.violations)
            for violation in value.violations:
                print(f"  violation: {violation}")
    for name, value in figures.items():
        if not isinstance(value, Tally):
            print(f"- {name}: {value}")
    peak = figures["server memory peak (MB)"]
    failed |= peak >= 300
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
