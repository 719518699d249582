"""Placement with dedication (issue 10): 10,000 hosts (zones of pods of clusters of
hosts), a 3-level domain tree with two accounts per domain, dedications at every level
(pods to top domains, clusters to subdomains, hosts to accounts), and VMs of random
accounts, most asking for dedicated hosts, with implicit dedication on. The fast path
and the reference oracle place the same first units in the same run (they must agree);
the fast path then places them all.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import yaml

from harness import Config, progress, table
from placed.engine.planner import Planner
from placed.engine.reference import reference_plan
from placed.model import Spec
from placed.spec import load_spec_text

BRANCHING = 4  # domains per domain, three levels deep


@dataclass(frozen=True, slots=True)
class DedicationRun:
    hosts: int
    domains: int
    accounts: int
    dedications: int
    units: int
    placed: int
    implicit: int
    fast_seconds: float
    reference_units: int
    reference_seconds: float
    fast_on_reference_seconds: float
    mismatches: int

    @property
    def ratio(self) -> float:
        fast = self.fast_seconds / max(self.units, 1)
        slow = self.reference_seconds / max(self.reference_units, 1)
        return slow / fast if fast else float("inf")


def world(rng: np.random.Generator, side: int, units: int) -> str:
    """`side`^4 hosts, the domain tree, the dedications and the VMs as a spec."""
    domains: dict[str, Any] = {}
    names: list[tuple[str, int]] = []  # (domain, depth)
    accounts: dict[str, str] = {}
    for a in range(BRANCHING):
        top = f"D{a}"
        domains[top] = {"accounts": [f"{top}a0", f"{top}a1"], "children": {}}
        names.append((top, 1))
        for b in range(BRANCHING):
            sub = f"{top}.{b}"
            domains[top]["children"][sub] = {"accounts": [f"{sub}a0", f"{sub}a1"], "children": {}}
            names.append((sub, 2))
            for c in range(BRANCHING):
                leaf = f"{sub}.{c}"
                domains[top]["children"][sub]["children"][leaf] = {
                    "accounts": [f"{leaf}a0", f"{leaf}a1"]
                }
                names.append((leaf, 3))
    for domain, _ in names:
        accounts[f"{domain}a0"] = domain
        accounts[f"{domain}a1"] = domain
    inventory = []
    pods: list[str] = []
    clusters: list[tuple[str, str]] = []
    hosts: list[tuple[str, str]] = []
    for z in range(side):
        zone: dict[str, Any] = {"id": f"z{z}", "kind": "zone", "children": []}
        for p in range(side):
            pod: dict[str, Any] = {"id": f"z{z}p{p}", "kind": "pod", "children": []}
            pods.append(pod["id"])
            for c in range(side):
                cluster_id = f"z{z}p{p}c{c}"
                clusters.append((pod["id"], cluster_id))
                members = [f"{cluster_id}h{h}" for h in range(side)]
                hosts.extend((cluster_id, h) for h in members)
                pod["children"].append(
                    {
                        "id": cluster_id,
                        "kind": "cluster",
                        "children": [
                            {"id": h, "kind": "host", "capacity": {"cpu": 8, "memory": 32}}
                            for h in members
                        ],
                    }
                )
            zone["children"].append(pod)
        inventory.append(zone)
    # The last top domain gets nothing: its own accounts' dedicated VMs take empty hosts
    # by implicit dedication, which the run is meant to include.
    tops = [d for d, depth in names if depth == 1][:-1]
    dedications: list[dict[str, Any]] = []
    owner_of_pod: dict[str, str] = {}
    for pod_id in rng.choice(pods, size=len(pods) // 4, replace=False).tolist():
        owner_of_pod[pod_id] = str(rng.choice(tops))
        dedications.append({"resource": pod_id, "domain": owner_of_pod[pod_id]})
    owner_of_cluster: dict[str, str] = {}
    for index in rng.choice(len(clusters), size=len(clusters) // 8, replace=False).tolist():
        pod_id, cluster = clusters[index]
        pod_owner = owner_of_pod.get(pod_id)
        # Inside a dedicated pod, only the pod's domain or below (the rules refuse the rest).
        choices = [
            d for d, depth in names if depth == 2 and (pod_owner is None or d.startswith(pod_owner))
        ]
        owner_of_cluster[cluster] = str(rng.choice(choices))
        dedications.append({"resource": cluster, "domain": owner_of_cluster[cluster]})
    for index in rng.choice(len(hosts), size=len(hosts) // 20, replace=False).tolist():
        cluster, host = hosts[index]
        pod_id = cluster.rsplit("c", 1)[0]
        above = owner_of_cluster.get(cluster) or owner_of_pod.get(pod_id)
        choices = [a for a, d in accounts.items() if above is None or d.startswith(above)]
        account = str(rng.choice(choices))
        dedications.append({"resource": host, "domain": accounts[account], "account": account})
    account_names = list(accounts)
    workloads = [
        {
            "name": f"vm{i}",
            "account": str(rng.choice(account_names)),
            "offering": "dedicated" if rng.random() < 0.7 else "shared",
        }
        for i in range(units)
    ]
    document = {
        "name": "dedication",
        "tenancy": {"domains": domains},
        "inventory": inventory,
        "offerings": [
            {"name": "dedicated", "cpu": 2, "memory": 4, "dedicated": True},
            {"name": "shared", "cpu": 2, "memory": 4},
        ],
        "dedications": dedications,
        "settings": {"implicit_dedication": True},
        "workloads": workloads,
    }
    return yaml.safe_dump(document, sort_keys=False)


def _first(spec: Spec, units: int) -> Spec:
    return Spec(
        spec.inventory,
        spec.workloads[:units],
        spec.settings,
        spec.source,
        spec.name,
        tenancy=spec.tenancy,
        dedications=spec.dedications,
        offerings=spec.offerings,
    )


def run(config: Config) -> DedicationRun:
    side = 5 if config.quick else 10
    units = 500 if config.quick else 5_000
    reference_units = min(config.reference_units, units)
    rng = np.random.default_rng([config.seed, 10])
    progress(f"dedication: generating {side**4:,} hosts and {units:,} VMs")
    spec = load_spec_text(world(rng, side, units), "dedication.yaml")
    small = _first(spec, reference_units)
    progress(f"dedication: reference oracle, {reference_units} VMs")
    start = time.perf_counter()
    reference = {o.unit: o.target for o in reference_plan(small)}
    reference_seconds = time.perf_counter() - start
    start = time.perf_counter()
    fast_small = {p.unit: p.target for p in Planner(small).plan().placements}
    fast_on_reference = time.perf_counter() - start
    mismatches = sum(
        1
        for unit in set(reference) | set(fast_small)
        if reference.get(unit) != fast_small.get(unit)
    )
    progress(f"dedication: fast engine, {units:,} VMs")
    start = time.perf_counter()
    result = Planner(spec).plan()
    fast_seconds = time.perf_counter() - start
    return DedicationRun(
        hosts=len(spec.inventory.targets),
        domains=len(spec.tenancy.parents) - 1 if spec.tenancy else 0,
        accounts=len(spec.tenancy.accounts) if spec.tenancy else 0,
        dedications=len(spec.dedications),
        units=units,
        placed=len(result.placements),
        implicit=len(result.dedications_created),
        fast_seconds=fast_seconds,
        reference_units=reference_units,
        reference_seconds=reference_seconds,
        fast_on_reference_seconds=fast_on_reference,
        mismatches=mismatches,
    )


def section(found: DedicationRun) -> list[str]:
    lines = ["## Dedication", ""]
    lines += table(
        [
            "hosts",
            "domains",
            "accounts",
            "dedications",
            "VMs",
            "placed",
            "implicit dedications",
            "fast, per VM",
            "reference, per VM",
            "fast / reference",
            "mismatches",
        ],
        [
            [
                f"{found.hosts:,}",
                f"{found.domains:,}",
                f"{found.accounts:,}",
                f"{found.dedications:,}",
                f"{found.units:,}",
                f"{found.placed:,}",
                f"{found.implicit:,}",
                f"{found.fast_seconds / found.units * 1e3:.2f} ms",
                f"{found.reference_seconds / found.reference_units * 1e3:.1f} ms",
                f"{found.ratio:.0f}x",
                f"{found.mismatches}",
            ]
        ],
    )
    lines += [
        "",
        f"Zones of pods of clusters of hosts ({found.hosts:,} hosts, 8 cpu each); a domain "
        f"tree {BRANCHING} wide and 3 deep with two accounts per domain; a quarter of the "
        "pods dedicated to top domains (all but the last, whose own accounts then take "
        "hosts by implicit dedication), an eighth of the clusters to second-level domains "
        "(inside their pod's domain), a twentieth of the hosts to accounts; VMs of 2 cpu "
        "for random accounts, 70% asking for dedicated hosts, implicit dedication on. The "
        f"reference places the first {found.reference_units} VMs and the fast path the "
        "same ones (mismatches must be 0); the fast path then places every VM.",
        "",
    ]
    return lines
