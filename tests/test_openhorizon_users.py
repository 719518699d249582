"""Issue 11 through the CLI: what a service needs of a node (privileged mode, a
deployment for the node's kind, its architecture), the read-only namespace property,
deploycheck's report (a pattern's refusals under the pattern, the node's namespace as a
column)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from typer.testing import CliRunner

from placed.cli.main import app
from placed.engine.planner import Placement, Planner
from placed.engine.reference import reference_plan
from placed.model import Spec

from .strategies import specs

SPEC = """
settings: {default_mode: every}
inventory:
  - {id: dev-open, kind: device, arch: amd64, properties: {openhorizon.allowPrivileged: true}}
  - {id: dev-closed, kind: device, arch: amd64}
  - {id: dev-arm, kind: device, arch: arm64}
  - {id: cluster, kind: cluster, scope: cluster, arch: amd64}
workloads:
  - name: needs-privileged
    service: {url: netmon, arch: amd64, privileged: true}
  - name: device-only
    service: {url: sensor, arch: "*", runs_on: [device]}
  - name: cluster-only
    service: {url: operator, runs_on: [cluster]}
  - name: any-arch
    service: {url: tool}
  - name: a-pattern
    pattern: true
    services: [{url: p1, arch: amd64}, {url: p2, runs_on: [device]}]
"""


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


def write(tmp_path: Path, text: str) -> str:
    path = tmp_path / "spec.yaml"
    path.write_text(text)
    return str(path)


def where(plan: dict[str, Any], workload: str) -> list[str]:
    return [p["target"] for p in plan["placements"] if p["workload"] == workload]


def test_services_land_only_where_they_fit(tmp_path: Path) -> None:
    code, out, _ = run("plan", write(tmp_path, SPEC), "-f", "json")
    assert code == 0
    plan = json.loads(out)
    # The cluster agent always allows privileged mode; a device only if its owner says so.
    assert where(plan, "needs-privileged") == ["dev-open", "cluster"]
    assert where(plan, "device-only") == ["dev-open", "dev-closed", "dev-arm"]
    assert where(plan, "cluster-only") == ["cluster"]
    assert where(plan, "any-arch") == ["dev-open", "dev-closed", "dev-arm", "cluster"]
    # Every service of a pattern must fit: p1 is amd64 only, p2 has no clusterDeployment.
    assert where(plan, "a-pattern") == ["dev-open", "dev-closed"]


def test_check_says_why_a_service_does_not_fit(tmp_path: Path) -> None:
    code, out, _ = run("check", write(tmp_path, SPEC), "-f", "json")
    rows = {row["workload"]: row for row in json.loads(out)["workloads"]}

    def reasons(workload: str, target: str) -> dict[str, str]:
        (found,) = [t for t in rows[workload]["targets"] if t["target"] == target]
        return dict(found["reason"])

    assert reasons("needs-privileged", "dev-closed") == {
        "netmon_amd64": "does not allow privileged mode, which netmon needs "
        "(openhorizon.allowPrivileged is false)"
    }
    assert reasons("needs-privileged", "dev-arm") == {
        "netmon_amd64": "has another architecture than netmon (amd64) (the node is arm64)"
    }
    assert reasons("device-only", "cluster") == {
        "sensor_*": "is an edge cluster and the service has no clusterDeployment "
        "(sensor runs on device)"
    }
    assert reasons("cluster-only", "dev-open") == {
        "operator": "is a device and the service has no deployment (operator runs on cluster)"
    }
    # A pattern's refusals are reported under the pattern, as hzn deploycheck does.
    assert reasons("a-pattern", "cluster") == {
        "pattern a-pattern": "is an edge cluster and the service has no clusterDeployment "
        "(p2 runs on device)"
    }
    assert code == 0


def test_check_shows_the_nodes_namespace_as_a_column() -> None:
    example = Path(__file__).resolve().parent.parent / "examples" / "edge-namespaces.yaml"
    _, out, _ = run("check", str(example), "-f", "json")
    row = json.loads(out)["workloads"][0]
    namespaces = {t["target"]: t.get("namespace") for t in row["targets"]}
    assert namespaces["ns-1"] == "ABC"
    assert namespaces["cluster-1"] == "openhorizon-agent"
    assert namespaces["device-1"] is None  # a device has no namespace: no key at all
    _, out, _ = run("check", str(example), "-w", "namespaced-1-same-namespace")
    header = out.splitlines()[1]
    assert "namespace" in header and "compatible" in header


def test_the_namespace_property_cannot_be_set_by_a_policy_or_a_service(tmp_path: Path) -> None:
    for where_, text in (
        ("workloads[0].properties.openhorizon.kubernetesNamespace", "properties"),
        ("workloads[0].service.properties.openhorizon.kubernetesNamespace", "service"),
    ):
        body = (
            "  - name: w\n    properties: {openhorizon.kubernetesNamespace: ABC}\n"
            if text == "properties"
            else "  - name: w\n    service: {url: s, properties: "
            "{openhorizon.kubernetesNamespace: ABC}}\n"
        )
        code, _, err = run("validate", write(tmp_path, "inventory: [{id: a}]\nworkloads:\n" + body))
        assert code == 2
        flat = " ".join(err.split())
        assert where_ in flat and "no policy or service may set it" in flat


def test_a_service_field_of_the_wrong_kind_is_an_error(tmp_path: Path) -> None:
    text = "inventory: [{id: a}]\nworkloads:\n  - {name: w, service: {url: s, runs_on: [phone]}}\n"
    code, _, err = run("validate", write(tmp_path, text))
    assert code == 2
    assert "workloads[0].service.runs_on[0]" in " ".join(err.split())


def _fast(spec: Spec) -> list[tuple[str, str | None]]:
    return [
        (o.unit, o.target if isinstance(o, Placement) else None)
        for o in Planner(spec).plan().outcomes
    ]


@settings(max_examples=100, deadline=None)
@given(specs())
def test_the_service_rule_agrees_with_the_reference(spec: Spec) -> None:
    assert _fast(spec) == [(o.unit, o.target) for o in reference_plan(spec)]


CONFLICT = """
settings: {default_mode: every}
inventory:
  - {id: ns-abc, kind: cluster, scope: namespace, namespace: ABC}
  - {id: ns-xyz, kind: cluster, scope: namespace, namespace: XYZ}
workloads:
  - name: conflict
    constraints: [openhorizon.kubernetesNamespace == XYZ]
    cluster_namespace: ABC
    service: {url: web, org: example, version: 1.0.0, runs_on: [cluster]}
"""


def test_check_gives_a_self_contradicting_policy_the_general_reason_first(
    tmp_path: Path,
) -> None:
    # compcheck/policy_check.go: on a namespace-scoped node, deploycheck's "general" entry
    # says the policy contradicts itself (businesspolicy.ValidateClusterNSWithConstraint);
    # placed keeps each filter's own reasons after it.
    code, out, _ = run("check", write(tmp_path, CONFLICT), "-f", "json")
    assert code == 1
    (row,) = json.loads(out)["workloads"]
    targets = {t["target"]: t for t in row["targets"]}
    key = "example/web_1.0.0"
    for name in ("ns-abc", "ns-xyz"):
        reason = targets[name]["reason"]
        assert next(iter(reason)) == "general"
        assert reason["general"].startswith("policy conflict: the policy deploys to namespace ABC")
        assert targets[name]["reasons"][0]["filter"] == "general"
    # The failing constraint is still listed under the service.
    assert "fails openhorizon.kubernetesNamespace == XYZ" in targets["ns-abc"]["reason"][key]
    # The namespace filter says what anax's namespace check says
    # (compcheck/comp_check.go CheckClusterNamespaceCompatibility): ABC is the policy's
    # namespace, so ns-abc passes it; ns-xyz does not.
    filters = {n: [r["filter"] for r in t["reasons"]] for n, t in targets.items()}
    assert filters == {
        "ns-abc": ["general", "constraint"],
        "ns-xyz": ["general", "namespace"],
    }
    assert (
        "is scoped to namespace XYZ (the deployment goes to ABC)"
        in targets["ns-xyz"]["reason"][key]
    )


SPLIT = """
settings: {default_mode: every}
inventory:
  - {id: cluster, kind: cluster, scope: cluster, properties: {site: lab}}
  - {id: ns-abc, kind: cluster, scope: namespace, namespace: ABC, properties: {site: SITE}}
workloads:
  - name: split
    pattern: true
    constraints: site == lab
    services:
      - {url: a, namespace: XYZ, runs_on: [cluster]}
      - {url: b, namespace: DEP, runs_on: [cluster]}
"""


def test_a_pattern_split_over_namespaces_is_a_conflict_where_a_scoped_node_would_take_it(
    tmp_path: Path,
) -> None:
    # The seed: such a pattern "is in error" where it would deploy to a namespace-scoped
    # node; ns-abc would take it (site == lab) but for its namespace.
    code, out, _ = run("check", write(tmp_path, SPLIT.replace("SITE", "lab")), "-f", "json")
    assert code == 0
    report = json.loads(out)
    (conflict,) = report["conflicts"]
    assert conflict["code"] == "pattern-namespaces-differ" and conflict["real"] is True
    assert "namespace-scoped nodes would take it (ns-abc)" in conflict["message"]
    # Where no namespace-scoped node would take it (its constraint excludes ns-abc), only
    # the warning stays.
    code, out, _ = run("check", write(tmp_path, SPLIT.replace("SITE", "other")), "-f", "json")
    report = json.loads(out)
    assert report["conflicts"] == []
    assert "pattern-namespaces-differ" in {w["code"] for w in report["warnings"]}


def test_validate_refuses_a_split_pattern_where_a_scoped_node_would_take_it(
    tmp_path: Path,
) -> None:
    code, out, _ = run("validate", write(tmp_path, SPLIT.replace("SITE", "lab")), "-f", "json")
    assert code == 2
    (error,) = json.loads(out)["errors"]
    assert error["key"] == "workloads.split" and "is in error there" in error["message"]
    code, out, _ = run("validate", write(tmp_path, SPLIT.replace("SITE", "other")), "-f", "json")
    assert code == 0
    assert "pattern-namespaces-differ" in {w["code"] for w in json.loads(out)["warnings"]}
