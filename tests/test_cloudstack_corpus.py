"""The CloudStack corpus (tests/data/cloudstack/cases.yaml; its README says how a case
reads): each case's world is written as a placed spec, loaded, and its steps run in order
on a `Cloud` (engine/cloud.py), the Python API the CLI and the service stand on. Each
step must succeed, or fail with the error kind it names, and change nothing when it
fails."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from placed.engine.cloud import Cloud
from placed.model.dedications import DedicationError, Offering
from placed.model.tenancy import ROOT_ADMIN, Principal
from placed.spec import load_spec_text

CORPUS = Path(__file__).resolve().parent / "data" / "cloudstack" / "cases.yaml"
DATA: dict[str, Any] = yaml.safe_load(CORPUS.read_text(encoding="utf-8"))
WORLD: dict[str, Any] = DATA["world"]
CASES: list[dict[str, Any]] = DATA["cases"]

# The corpus's event names -> placed's event kinds.
EVENTS = {
    "dedicate": "dedication-created",
    "release": "dedication-released",
    "update": "dedication-updated",
    "implicit-dedicate": "implicit-dedication",
    "placement-failed": "placement-failed",
    "zone-closed": "zone-closed",
    "migration-refused": "migration-refused",
    "maintenance-failed": "maintenance-failed",
}

# What placed does not do yet, each a strict xfail naming it (remove once it passes).
KNOWN_GAPS: dict[str, str] = {}


def spec_of(world: dict[str, Any]) -> str:
    """The world as a native spec."""
    capacity = world.get("capacity") or {}
    host = world["host_capacity"]
    zone_settings = world.get("zone_settings") or {}
    inventory = []
    for zone, pods in world["topology"].items():
        zone_location: dict[str, Any] = {"id": zone, "kind": "zone", "children": []}
        setting = (zone_settings.get(zone) or {}).get("implicit.dedication.enable")
        if setting is not None:
            zone_location["properties"] = {"implicit.dedication.enable": setting}
        for pod, clusters in pods.items():
            pod_location: dict[str, Any] = {"id": pod, "kind": "pod", "children": []}
            for cluster, hosts in clusters.items():
                pod_location["children"].append(
                    {
                        "id": cluster,
                        "kind": "cluster",
                        "children": [
                            {"id": h, "kind": "host", "capacity": capacity.get(h, host)}
                            for h in hosts
                        ],
                    }
                )
            zone_location["children"].append(pod_location)
        inventory.append(zone_location)
    domains = world["domains"]["ROOT"]
    offerings = [
        {"name": name, **{k: v for k, v in o.items() if k != "implicit" or o.get("dedicated")}}
        for name, o in world["offerings"].items()
    ]
    workloads: list[dict[str, Any]] = []
    running: list[dict[str, Any]] = []
    for host_id, vms in (world.get("vms") or {}).items():
        for vm in vms:
            vm = {"name": f"pre-{len(workloads)}", **vm}
            workloads.append(
                {"name": vm["name"], "account": vm["account"], "offering": vm["offering"]}
            )
            running.append({"unit": f"{vm['name']}/0", "target": host_id})
    storage = [
        {"id": pool, "scope": p["scope"], "at": p[p["scope"]], "capacity": p["capacity"]}
        for pool, p in (world.get("pools") or {}).items()
    ]
    document = {
        "inventory": inventory,
        "storage": storage,
        "tenancy": {
            "domains": domains.get("children", {}),
            "accounts": domains.get("accounts", []),
        },
        "offerings": offerings,
        "dedications": [
            {k: v for k, v in d.items() if k in ("resource", "domain", "account")}
            for d in world.get("dedications") or []
        ],
        "settings": {
            "implicit_dedication": (world.get("settings") or {}).get(
                "implicit.dedication.enable", True
            )
        },
        "workloads": workloads,
        "running": running,
    }
    return yaml.safe_dump(document, sort_keys=False)


def principal_of(cloud: Cloud, who: Any) -> Principal:
    if who == "root-admin":
        return ROOT_ADMIN
    ((role, name),) = who.items()
    found = cloud.tenancy.principal(f"{role}:{name}")
    assert found is not None, who
    return found


def gap(case: dict[str, Any]) -> str | None:
    return KNOWN_GAPS.get(case["name"])


def run_step(cloud: Cloud, step: dict[str, Any], names: dict[str, str]) -> Any:
    who = principal_of(cloud, step["as"])
    if "dedicate" in step:
        return cloud.dedicate(who, step["dedicate"], step["domain"], step.get("account"))
    if "release" in step:
        return cloud.release(who, step["release"])
    if "update" in step:
        return cloud.update(who, step["update"], step["domain"], step.get("account"))
    if "list" in step:
        filters = step["list"] or {}
        return cloud.list_dedications(
            who, filters.get("kind"), filters.get("domain"), filters.get("account")
        )
    if "deploy" in step:
        asked = step["deploy"]
        vm = cloud.deploy(
            who, asked["account"], asked["offering"], asked.get("name"), zone=asked.get("zone")
        )
        names[asked.get("name", vm.name)] = vm.name
        return vm
    if "stop" in step:
        return cloud.stop(who, names.get(step["stop"], step["stop"]))
    if "start" in step:
        return cloud.start(who, names.get(step["start"], step["start"]))
    if "migrate" in step:
        return cloud.migrate(who, names.get(step["migrate"], step["migrate"]), step["to"])
    if "maintenance" in step:
        return cloud.evacuate(who, step["maintenance"])
    if "destroy" in step:
        return cloud.destroy(who, names.get(step["destroy"], step["destroy"]))
    if "set" in step:
        ((key, value),) = step["set"].items()
        assert key == "implicit.dedication.enable", key
        return cloud.set_implicit(who, bool(value), step.get("zone"))
    if "create_offering" in step:
        o = step["create_offering"]
        return cloud.create_offering(
            who,
            Offering(
                o["name"],
                o.get("cpu", 0),
                o.get("memory", 0),
                o.get("disk", 0),
                o.get("dedicated", False),
                o.get("implicit", "strict"),
            ),
        )
    if "eligible" in step:
        return cloud.eligible(step["eligible"]["account"], step["eligible"]["offering"])
    if "where" in step:
        return cloud.where(names.get(step["where"], step["where"]))
    raise AssertionError(f"unknown step {step}")


def check(
    step: dict[str, Any], result: Any, events: list[str], cloud: Cloud, names: dict[str, str]
) -> list[str]:
    expect = step.get("expect") or {}
    wrong = []
    host = result if isinstance(result, str) else getattr(result, "host", None)
    if "host" in expect and host != expect["host"]:
        wrong.append(f"on {host}, expected {expect['host']}")
    if "host_in" in expect and host not in expect["host_in"]:
        wrong.append(f"on {host}, expected one of {expect['host_in']}")
    if "host_not_in" in expect and host in expect["host_not_in"]:
        wrong.append(f"on {host}, expected none of {expect['host_not_in']}")
    pool = getattr(result, "pool", None)
    if "pool" in expect and pool != expect["pool"]:
        wrong.append(f"disk on {pool}, expected {expect['pool']}")
    if "pool_in" in expect and pool not in expect["pool_in"]:
        wrong.append(f"disk on {pool}, expected one of {expect['pool_in']}")
    if "implicit" in expect and getattr(result, "implicit", None) != expect["implicit"]:
        wrong.append(f"implicit {getattr(result, 'implicit', None)}, expected {expect['implicit']}")
    if "events" in expect:
        wanted = [EVENTS[e] for e in expect["events"]]
        if events != wanted:
            wrong.append(f"events {events}, expected {wanted}")
    if "resources" in expect:
        got = sorted(d.resource for d in result)
        if got != sorted(expect["resources"]):
            wrong.append(f"listed {got}, expected {sorted(expect['resources'])}")
    if "dedications" in expect:
        got = sorted(
            (d.resource, d.owner.domain, d.owner.account, d.owner.implicit) for d in result
        )
        want = sorted(
            (d["resource"], d["domain"], d.get("account"), d.get("implicit", False))
            for d in expect["dedications"]
        )
        if got != want:
            wrong.append(f"dedications {got}, expected {want}")
    if "hosts" in expect and sorted(result) != sorted(expect["hosts"]):
        wrong.append(f"hosts {sorted(result)}, expected {sorted(expect['hosts'])}")
    for vm, where in (expect.get("moved") or {}).items():
        landed = result.get(names.get(vm, vm))
        if "host_in" in where and landed not in where["host_in"]:
            wrong.append(f"{vm} moved to {landed}, expected one of {where['host_in']}")
        if "host" in where and landed != where["host"]:
            wrong.append(f"{vm} moved to {landed}, expected {where['host']}")
    return wrong


def _params() -> list[Any]:
    params = []
    for case in CASES:
        reason = gap(case)
        marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
        params.append(pytest.param(case, id=case["name"], marks=marks))
    return params


@pytest.mark.parametrize("case", _params())
def test_cloudstack_case(case: dict[str, Any]) -> None:
    world = {**WORLD, **(case.get("world") or {})}
    cloud = Cloud(load_spec_text(spec_of(world), "world.yaml"))
    names = {
        vm["name"]: f"{vm['name']}/0"
        for vms in (world.get("vms") or {}).values()
        for vm in vms
        if "name" in vm
    }
    wrong: list[str] = []
    for number, step in enumerate(case["steps"]):
        before = len(cloud.events)
        dedications_before = sorted(cloud.rules.items)
        expect = step.get("expect") or {}
        try:
            result = run_step(cloud, step, names)
        except DedicationError as error:
            if "error" not in expect:
                wrong.append(f"step {number} {step}: refused ({error.kind}: {error.message})")
            elif error.kind != expect["error"]:
                wrong.append(
                    f"step {number}: {error.kind} ({error.message}), expected {expect['error']}"
                )
            elif sorted(cloud.rules.items) != dedications_before:
                wrong.append(f"step {number}: refused but the dedications changed")
            events = [e.kind for e in cloud.events[before:]]
            if "events" in expect and events != [EVENTS[e] for e in expect["events"]]:
                wrong.append(f"step {number}: events {events}, expected {expect['events']}")
            continue
        if "error" in expect:
            wrong.append(f"step {number} {step}: succeeded, expected {expect['error']}")
            continue
        events = [e.kind for e in cloud.events[before:]]
        wrong += [f"step {number} {step}: {w}" for w in check(step, result, events, cloud, names)]
    assert not wrong, "\n".join(wrong)
