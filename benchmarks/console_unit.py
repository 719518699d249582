"""The console's unit page at 10,000 targets (issue 19): what describing one unit costs.
A world of 10 zones x 20 racks x 50 hosts, with an allocation workload spread over the
zones, a mapping workload (conductors' nodes), a tagged one that runs only on the
`gpu` hosts and one whose units fit nowhere (pending), is applied in process (SQLite in
a temporary directory). Then `GET /v1/units/{unit}` (what `placed describe unit` reads)
and the console's `/ui/units/{unit}` are timed for a placed, a pending and a mapping
unit, and the last unit of the spread workload (the dearest: the units before it are
placed again first): the first ask of each (cold: the replica's world is built, once
per process and change of the world) and, alternately, three more (warm); then once
more after a claim (`POST /v1/workloads`) the replica's world takes without a rebuild.

Alone: `.venv/bin/python benchmarks/console_unit.py [--hosts-per-rack N]`. To time
another tree on the same world: `PYTHONPATH=OTHER/src` (its routes must exist). Wall
time and the process's CPU time are printed for each ask; on a shared machine read the
CPU time.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.service_support import client_of, served


def world(per_rack: int) -> tuple[dict[str, Any], int]:
    zones = []
    count = 0
    for z in range(10):
        racks = []
        for r in range(20):
            hosts = []
            for h in range(per_rack):
                host: dict[str, Any] = {
                    "id": f"h{z}-{r}-{h}",
                    "kind": "host",
                    "capacity": {"cpu": 16, "memory": 64},
                }
                if h % 10 == 0:
                    host["tags"] = ["gpu"]
                hosts.append(host)
                count += 1
            racks.append({"id": f"r{z}-{r}", "kind": "rack", "children": hosts})
        zones.append({"id": f"z{z}", "kind": "zone", "children": racks})
    spec = {
        "version": 1,
        "name": "console-unit-bench",
        "inventory": zones,
        "workloads": [
            {
                "name": "web",
                "units": 2000,
                "resources": {"cpu": 2, "memory": 4},
                "spread": {"over": "zone", "max_skew": 1},
            },
            {"name": "nodes", "mode": "mapping", "units": 3000},
            {"name": "train", "units": 200, "tags": ["gpu"], "resources": {"cpu": 8}},
            {"name": "huge", "units": 3, "resources": {"cpu": 64}},
        ],
    }
    return spec, count


def timed(client: Any, path: str) -> tuple[float, float]:
    started, cpu = time.perf_counter(), time.process_time()
    answer = client.get(path)
    wall, used = time.perf_counter() - started, time.process_time() - cpu
    assert answer.status_code == 200, answer.text[:300]
    return wall, used


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hosts-per-rack", type=int, default=50)
    options = parser.parse_args()
    spec, count = world(options.hosts_per_rack)
    with tempfile.TemporaryDirectory() as where:
        app, root = served(f"sqlite:///{Path(where) / 'placed.db'}")
        client = client_of(app, root)
        started = time.perf_counter()
        done = client.post(
            "/v1/apply", content=yaml.safe_dump(spec), headers={"content-type": "application/yaml"}
        )
        assert done.status_code == 200, done.text
        print(f"{count} targets applied in {time.perf_counter() - started:.1f} s")
        signed = client.post("/ui/login", data={"token": root}, follow_redirects=False)
        assert signed.status_code == 303, signed.text
        units = {
            "placed web/7": "web/7",
            # The last of 2,000: its workload's units before it are placed again first.
            "placed web/1999": "web/1999",
            "pending huge/1": "huge/1",
            "mapping nodes/42": "nodes/42",
        }
        asks = {
            f"{kind} {name}": path
            for name, unit in units.items()
            for kind, path in (
                ("GET /v1/units", f"/v1/units/{unit}"),
                ("GET /ui/units", f"/ui/units/{unit}"),
            )
        }
        times: dict[str, list[tuple[float, float]]] = {name: [] for name in asks}
        cold: dict[str, tuple[float, float]] = {}
        for name, path in asks.items():
            cold[name] = timed(client, path)
        for _ in range(3):
            for name, path in asks.items():
                times[name].append(timed(client, path))
        claim = client.post(
            "/v1/workloads", json={"name": "late", "units": 5, "resources": {"cpu": 1}}
        )
        assert claim.status_code == 201, claim.text
        after = {name: timed(client, path) for name, path in asks.items()}
        for name in asks:
            walls = [w for w, _ in times[name]]
            cpus = [c for _, c in times[name]]
            print(
                f"{name}: cold {cold[name][0] * 1000:.0f} ms (cpu {cold[name][1] * 1000:.0f}); "
                f"warm median {statistics.median(walls) * 1000:.0f} ms "
                f"(cpu {statistics.median(cpus) * 1000:.0f}; "
                + ", ".join(f"{w * 1000:.0f}" for w in walls)
                + f"); after a claim {after[name][0] * 1000:.0f} ms "
                f"(cpu {after[name][1] * 1000:.0f})"
            )


if __name__ == "__main__":
    main()
