"""The controller in real `placed serve` processes (SERVICE.md, "Tests"): a leader killed
(SIGKILL) or paused (SIGSTOP) inside its sweep's transaction leaves nothing half done and
the other replica moves each unit exactly once; all heartbeats stopping at once moves
nothing; a conductor that stops heartbeating and returns moves only its units, to where
`placed simulate --down` says, and back. Short timings keep it quick: heartbeats every
0.2 s, stale after 1 s, a 2 s lease renewed every 0.5 s, a sweep every 0.25 s."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import func, select

from placed.store.database import make_engine, reading
from placed.store.tables import EventRow, Placement, PlacementHistory, Target, Unit
from tests.fleets import conductors_spec
from tests.running_servers import BIN, free_port, server, upgrade

TTL_S, RENEW_S, SWEEP_S, TIMEOUT_S = 2.0, 0.5, 0.25, 1.0
TIMING = {
    "PLACED_LEASE_TTL_S": str(TTL_S),
    "PLACED_LEASE_RENEW_S": str(RENEW_S),
    "PLACED_SWEEP_S": str(SWEEP_S),
}
NODES = 500  # the count: the whole failover stays well under a minute
CONDUCTORS = [f"conductor{k}" for k in range(1, 5)]
# Scheduling on a loaded 2-core machine: what a takeover may take past TTL + one sweep.
SLACK_S = 1.5

# Replicas share one database: PostgreSQL's (the database fixture's other backend is a
# SQLite file, for one process at a time here).
only_postgresql = pytest.mark.parametrize("database", ["postgresql"], indirect=True)


def _wait(check: Callable[[], Any], within: float, what: str) -> Any:
    deadline = time.monotonic() + within
    while True:
        found = check()
        if found:
            return found
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {within:g} s: {what}")
        time.sleep(0.05)


class Beater:
    """Heartbeats of some targets every 0.2 s, to the first of `bases` that answers."""

    def __init__(self, bases: Sequence[str], token: str, names: Sequence[str]) -> None:
        self.bases = list(bases)
        self.names = set(names)
        self.headers = {"authorization": f"Bearer {token}"}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        with httpx.Client(headers=self.headers, timeout=2) as client:
            while not self._stop.wait(0.2):
                for name in sorted(self.names):
                    for base in self.bases:
                        try:
                            client.post(f"{base}/v1/targets/{name}/heartbeat")
                            break
                        except httpx.TransportError:
                            continue

    def __enter__(self) -> Beater:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join(timeout=10)


def _apply(base: str, token: str, spec: str) -> None:
    answer = httpx.post(
        f"{base}/v1/apply",
        content=spec,
        headers={"authorization": f"Bearer {token}", "content-type": "application/yaml"},
        timeout=120,
    )
    assert answer.status_code == 200, answer.text


def _leader(base: str, token: str) -> dict[str, Any]:
    answer = httpx.get(
        f"{base}/v1/leader", headers={"authorization": f"Bearer {token}"}, timeout=10
    )
    assert answer.status_code == 200, answer.text
    found: dict[str, Any] = answer.json()
    return found


class Rows:
    """The database, read straight (what the servers committed)."""

    def __init__(self, url: str) -> None:
        self.engine = make_engine(url)

    def placements(self) -> dict[str, str]:
        with reading(self.engine) as session:
            return dict(
                session.execute(
                    select(Unit.name, Target.name)
                    .join(Placement, Placement.unit_id == Unit.id)
                    .join(Target, Target.id == Placement.target_id)
                ).all()
            )

    def events(self, after: int = 0) -> list[tuple[int, str, str, dict[str, Any]]]:
        with reading(self.engine) as session:
            return [
                (row.id, row.kind, row.subject, row.details)
                for row in session.execute(
                    select(EventRow.id, EventRow.kind, EventRow.subject, EventRow.details)
                    .where(EventRow.id > after)
                    .order_by(EventRow.id)
                )
            ]

    def history(self) -> int:
        with reading(self.engine) as session:
            return int(session.scalar(select(func.count()).select_from(PlacementHistory)) or 0)

    def last_event(self) -> int:
        found = self.events()
        return found[-1][0] if found else 0


@contextmanager
def _rows(url: str) -> Iterator[Rows]:
    found = Rows(url)
    try:
        yield found
    finally:
        found.engine.dispose()


def _simulated(tmp_path: Path, spec: str, flag: str, name: str) -> dict[str, str]:
    path = tmp_path / "fleet.yaml"
    path.write_text(spec)
    done = subprocess.run(
        [str(BIN / "placed"), "simulate", str(path), flag, name, "-o", "json"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return {move["unit"]: move["to"] for move in json.loads(done.stdout)["moves"]}


def _stopped(process: subprocess.Popen[str]) -> bool:
    fields = Path(f"/proc/{process.pid}/stat").read_text().rsplit(")", 1)[1].split()
    return fields[0] == "T"


@pytest.mark.parametrize("pause", [False, True], ids=["sigkill", "sigstop"])
@only_postgresql
@pytest.mark.postgres
def test_a_leader_dying_mid_sweep_leaves_nothing_and_the_other_moves_each_unit_once(
    database: str, tmp_path: Path, pause: bool
) -> None:
    token = upgrade(database)
    spec = conductors_spec(NODES, on_first=True, timeout_s=TIMEOUT_S)
    expected = _simulated(tmp_path, spec, "--down", "conductor1")
    assert len(expected) == NODES
    fault = f"rebalance.after_moves:{NODES // 2}" + (":stop" if pause else "")
    with (
        _rows(database) as rows,
        server(database, tmp_path / "a.log", **TIMING, PLACED_FAULT=fault) as first,
    ):
        _apply(first.base, token, spec)
        start = rows.placements()
        assert set(start.values()) == {"conductor1"} and len(start) == NODES
        _wait(lambda: _leader(first.base, token)["leading"], 10, "the first server leads")
        with (
            server(database, tmp_path / "b.log", **TIMING) as second,
            Beater([second.base], token, CONDUCTORS) as beats,
        ):
            # Every conductor heartbeats, and the lease is older than one timeout.
            time.sleep(2 * TIMEOUT_S)
            epoch = _leader(first.base, token)["epoch"]
            seen, history = rows.last_event(), rows.history()
            beats.names.discard("conductor1")
            if pause:
                _wait(lambda: _stopped(first.process), 30, "the leader stops at the fault")
            else:
                assert first.process.wait(timeout=30) == -signal.SIGKILL
            died = time.monotonic()
            # Mid-transaction, N moves written: none of them committed. A sweep before it
            # may have held back (a loaded machine's heartbeats all late at once): that
            # sweep moved nothing and its event is all it committed.
            assert rows.placements() == start
            assert [e for e in rows.events(seen) if e[1] != "sweep.suppressed"] == []
            assert rows.history() == history
            took = _wait(
                lambda: _leader(second.base, token)["leading"] and time.monotonic() - died,
                TTL_S + SWEEP_S + SLACK_S + 5,
                "the other server takes the lease",
            )
            print(f"the other server took the lease {took:.2f} s after the leader stopped")
            assert took <= TTL_S + SWEEP_S + SLACK_S, took
            assert _leader(second.base, token)["epoch"] == epoch + 1
            if pause:
                # Resumed past its lease, the old leader's commit must be refused.
                first.process.send_signal(signal.SIGCONT)
                _wait(
                    lambda: not _leader(first.base, token)["leading"],
                    10,
                    "the old leader steps down",
                )
            _wait(
                lambda: "conductor1" not in rows.placements().values(),
                60,
                "the other server moves conductor1's units",
            )
            print(f"every unit moved {time.monotonic() - died:.2f} s after the leader stopped")
            time.sleep(4 * SWEEP_S)  # a double move would have had time to land
            moved = Counter(
                subject for _, kind, subject, _ in rows.events(seen) if kind == "unit.moved"
            )
            assert moved == Counter(dict.fromkeys(expected, 1))
            downs = [e for e in rows.events(seen) if e[1] == "target.down"]
            assert [e[2] for e in downs] == ["conductor1"]
            assert rows.placements() == expected
            assert _leader(second.base, token)["epoch"] == epoch + 1
            if pause:
                assert "lost the lease" in first.errors(), first.errors()
    assert "Traceback" not in second.errors(), second.errors()


@only_postgresql
@pytest.mark.postgres
def test_a_clean_stop_hands_the_lease_over_at_once(database: str, tmp_path: Path) -> None:
    token = upgrade(database)
    with (
        server(database, tmp_path / "b.log", **TIMING) as second,
        server(database, tmp_path / "a.log", **TIMING) as first,
    ):
        _wait(
            lambda: _leader(second.base, token)["leading"] or _leader(first.base, token)["leading"],
            10,
            "one server leads",
        )
        leading, other = (
            (first, second) if _leader(first.base, token)["leading"] else (second, first)
        )
        held = _leader(other.base, token)
        leading.process.terminate()
        leading.process.wait(timeout=15)
        # Released on the way out, not left to expire: already taken, or ended.
        after = _leader(other.base, token)
        assert after["holder"] != held["holder"] or after["expired"], (held, after)
        _wait(lambda: _leader(other.base, token)["leading"], TTL_S, "the other leads")
        assert _leader(other.base, token)["epoch"] == held["epoch"] + 1
        assert "Traceback" not in leading.errors(), leading.errors()


def test_all_heartbeats_stopping_at_once_moves_nothing(database: str, tmp_path: Path) -> None:
    token = upgrade(database)
    spec = conductors_spec(40, timeout_s=TIMEOUT_S)
    with _rows(database) as rows, server(database, tmp_path / "a.log", **TIMING) as one:
        _apply(one.base, token, spec)
        start = rows.placements()
        _wait(lambda: _leader(one.base, token)["leading"], 10, "it leads")
        with Beater([one.base], token, CONDUCTORS):
            time.sleep(2 * TIMEOUT_S)
        seen = rows.last_event()
        _wait(
            lambda: any(e[1] == "sweep.suppressed" for e in rows.events(seen)),
            10 * TIMEOUT_S,
            "the sweep says it holds back",
        )
        time.sleep(3 * TIMEOUT_S)
        assert rows.placements() == start
        found = rows.events(seen)
        assert [kind for _, kind, _, _ in found] == ["sweep.suppressed"]
        assert found[0][3]["late"] == found[0][3]["heartbeating"] == len(CONDUCTORS)


def _cli(*args: str, token: str, base: str, out: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [*INTERRUPTIBLE, str(BIN / "placed"), *args, "--server", base],
        stdout=out.open("w"),
        stderr=subprocess.STDOUT,
        text=True,
        env={"PLACED_TOKEN": token, "PATH": str(BIN)},
    )


# Ctrl-C as at a terminal, even when the suite runs in the background of a shell without
# job control, whose children start with SIGINT ignored (and an exec keeps it ignored):
# the default restored, then placed exec'd in the same process. Not a preexec_fn, which
# is not safe in a process with threads.
INTERRUPTIBLE = [
    sys.executable,
    "-c",
    "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); "
    "os.execv(sys.argv[1], sys.argv[1:])",
]


def test_a_conductor_that_stops_and_returns_moves_only_its_units_and_back(
    database: str, tmp_path: Path
) -> None:
    """With the CLI an operator runs: placed heartbeat --every, placed get events -w."""
    token = upgrade(database)
    spec = conductors_spec(60, timeout_s=TIMEOUT_S)
    away = _simulated(tmp_path, spec, "--down", "conductor1")
    with _rows(database) as rows, server(database, tmp_path / "a.log", **TIMING) as one:
        _apply(one.base, token, spec)
        start = rows.placements()
        assert set(away) == {u for u, t in start.items() if t == "conductor1"}
        watch = _cli(
            "get",
            "events",
            "-w",
            "-o",
            "json",
            token=token,
            base=one.base,
            out=tmp_path / "watch.out",
        )
        beats = {
            name: _cli(
                "heartbeat",
                name,
                "--every",
                "0.2s",
                token=token,
                base=one.base,
                out=tmp_path / f"{name}.out",
            )
            for name in CONDUCTORS
        }
        try:
            _wait(lambda: _leader(one.base, token)["leading"], 10, "it leads")
            for name in [*CONDUCTORS, "watch"]:  # each has started: its first lines are out
                _wait((tmp_path / f"{name}.out").read_text, 60, f"{name} has started")
            time.sleep(2 * TIMEOUT_S)
            seen = rows.last_event()
            beats["conductor1"].send_signal(signal.SIGINT)  # Ctrl-C
            assert beats["conductor1"].wait(timeout=10) == 0
            _wait(
                lambda: "conductor1" not in rows.placements().values(),
                30,
                "conductor1's units move",
            )
            now = rows.placements()
            assert {u: now[u] for u in away} == away
            assert {u: t for u, t in now.items() if u not in away} == {
                u: t for u, t in start.items() if u not in away
            }
            beats["conductor1"] = _cli(
                "heartbeat",
                "conductor1",
                "--every",
                "0.2s",
                token=token,
                base=one.base,
                out=tmp_path / "again.out",
            )
            _wait(lambda: rows.placements() == start, 30, "conductor1's units come back")
            found = rows.events(seen)
            kinds = Counter(kind for _, kind, _, _ in found)
            assert kinds == {"target.down": 1, "target.up": 1, "unit.moved": 2 * len(away)}
            time.sleep(1)  # the watch's long poll answers within its poll period
        finally:
            for process in [watch, *beats.values()]:
                process.send_signal(signal.SIGINT)
            codes = [process.wait(timeout=10) for process in [watch, *beats.values()]]
        assert codes == [0] * len(codes), (tmp_path / "watch.out").read_text()
        watched = [json.loads(line) for line in (tmp_path / "watch.out").read_text().splitlines()]
        assert [e["id"] for e in watched] == sorted({e["id"] for e in watched})
        assert {e[0] for e in found} <= {e["id"] for e in watched}
        said = (tmp_path / "again.out").read_text()
        assert "conductor1 is down" in said and "conductor1 is up" in said


def test_placed_heartbeat_every_keeps_trying_while_unreachable_and_stops_on_a_refusal(
    tmp_path: Path,
) -> None:
    nowhere = f"http://127.0.0.1:{free_port()}"
    trying = _cli("heartbeat", "h1", "--every", "0.1s", token="plc_x", base=nowhere,
                  out=tmp_path / "trying.out")  # fmt: skip
    _wait((tmp_path / "trying.out").read_text, 60, "it says it cannot reach it")
    time.sleep(1)
    assert trying.poll() is None  # still trying
    trying.send_signal(signal.SIGINT)
    assert trying.wait(timeout=10) == 0
    said = (tmp_path / "trying.out").read_text()
    assert said.count("cannot reach placed") == 1, said  # once per outage, not per beat
    url = f"sqlite:///{tmp_path / 'placed.db'}"
    token = upgrade(url)
    with server(url, tmp_path / "a.log") as one:
        refused = _cli("heartbeat", "nosuch", "--every", "0.1s", token=token, base=one.base,
                       out=tmp_path / "refused.out")  # fmt: skip
        assert refused.wait(timeout=30) == 2
    assert "404" in (tmp_path / "refused.out").read_text()
