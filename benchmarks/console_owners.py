"""The console's fleet page at 10,000 hosts (issue 19): what its owner badges and its
usage chart cost. A CloudStack world of 4 zones x 10 pods x 10 clusters x 25 hosts, two
dedications and 400 VMs is applied in process (SQLite in a temporary directory); then,
alternately, three times each: `GET /v1/dedications` (which reads and judges the whole
world: what the badges read before), `GET /v1/owners` for one page of 50 targets (what
they read now) and `GET /v1/usage?level=zone` (the chart), and the console's own
`/ui/fleet` and `/ui/fleet/owners`.

Alone: `.venv/bin/python benchmarks/console_owners.py [--hosts-per-cluster N]`. To time
another tree's console on the same world: `PYTHONPATH=OTHER/src` (its routes must exist).
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


def world(per_cluster: int) -> tuple[dict[str, Any], list[str]]:
    zones, hosts = [], []
    for z in range(4):
        pods = []
        for p in range(10):
            clusters = []
            for c in range(10):
                names = [f"h{z}-{p}-{c}-{h}" for h in range(per_cluster)]
                hosts.extend(names)
                children = [
                    {"id": n, "kind": "host", "capacity": {"cpu": 16, "memory": 64}} for n in names
                ]
                clusters.append({"id": f"c{z}-{p}-{c}", "kind": "cluster", "children": children})
            pods.append({"id": f"p{z}-{p}", "kind": "pod", "children": clusters})
        zones.append({"id": f"z{z}", "kind": "zone", "children": pods})
    spec = {
        "version": 1,
        "name": "console-bench",
        "tenancy": {"domains": {"D1": {"accounts": ["A1", "A2"]}, "D2": {"accounts": ["B1"]}}},
        "inventory": zones,
        "offerings": [
            {"name": "ded", "cpu": 1, "memory": 2, "dedicated": True},
            {"name": "shared", "cpu": 1, "memory": 2},
        ],
        "dedications": [
            {"resource": "z1", "domain": "D2"},
            {"resource": "p0-1", "domain": "D1", "account": "A1"},
        ],
        "workloads": [
            {"name": "a1", "account": "A1", "offering": "ded", "units": 100},
            {"name": "shared", "account": "A2", "offering": "shared", "units": 300},
        ],
    }
    return spec, hosts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hosts-per-cluster", type=int, default=25)
    options = parser.parse_args()
    spec, hosts = world(options.hosts_per_cluster)
    with tempfile.TemporaryDirectory() as where:
        app, root = served(f"sqlite:///{Path(where) / 'placed.db'}")
        client = client_of(app, root)
        started = time.perf_counter()
        done = client.post(
            "/v1/apply", content=yaml.safe_dump(spec), headers={"content-type": "application/yaml"}
        )
        assert done.status_code == 200, done.text
        print(f"{len(hosts)} hosts applied in {time.perf_counter() - started:.1f} s")
        signed = client.post("/ui/login", data={"token": root}, follow_redirects=False)
        assert signed.status_code == 303, signed.text
        page = [("target", h) for h in hosts[:50]]
        asks: dict[str, tuple[str, Any]] = {
            "GET /v1/dedications": ("/v1/dedications", None),
            "GET /v1/owners (50 targets)": ("/v1/owners", page),
            "GET /v1/usage?level=zone": ("/v1/usage", {"level": "zone"}),
            "GET /ui/fleet": ("/ui/fleet", None),
            "GET /ui/fleet/owners": ("/ui/fleet/owners", None),
        }
        times: dict[str, list[float]] = {name: [] for name in asks}
        for _ in range(3):
            for name, (path, params) in asks.items():
                started = time.perf_counter()
                answer = client.get(path, params=params)
                times[name].append(time.perf_counter() - started)
                assert answer.status_code == 200, answer.text[:300]
        for name, found in times.items():
            each = ", ".join(f"{x * 1000:.0f}" for x in found)
            print(f"{name}: median {statistics.median(found) * 1000:.0f} ms ({each})")


if __name__ == "__main__":
    main()
