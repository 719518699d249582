"""Every numbered scenario of seed 002 (Open Horizon cluster namespaces), on
examples/edge-namespaces.yaml: where each policy deploys, into which namespace, and the
publish warning and deploy-check conflict of scenario 4."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from typer.testing import CliRunner

from placed.cli.main import app
from placed.cli.render import plan_table
from placed.engine.check import deploy_check
from placed.engine.planner import Planner
from placed.engine.report import plan_document
from placed.model import Spec
from placed.policy.lint import lint
from placed.spec import load_spec, load_spec_text

from .conftest import EXAMPLES

EXAMPLE = EXAMPLES / "edge-namespaces.yaml"


@pytest.fixture(scope="module")
def spec() -> Spec:
    return load_spec(EXAMPLE)


@pytest.fixture(scope="module")
def plan(spec: Spec) -> dict[str, Any]:
    return plan_document(Planner(spec).plan())


def deployed(plan: dict[str, Any], workload: str) -> list[tuple[str, str | None]]:
    return [
        (p["target"], p.get("namespace")) for p in plan["placements"] if p["workload"] == workload
    ]


def unplaced(plan: dict[str, Any], workload: str) -> list[str]:
    return [u["summary"] for u in plan["unplaced"] if u["workload"] == workload]


# -- an edge cluster whose agent has cluster privileges --------------------------------


def test_cluster_1_no_namespace_anywhere_goes_to_openhorizon_agent(plan: dict[str, Any]) -> None:
    assert deployed(plan, "cluster-1-default") == [("cluster-1", "openhorizon-agent")]


def test_cluster_2_policy_namespace_abc(plan: dict[str, Any]) -> None:
    assert deployed(plan, "cluster-2-policy-namespace") == [("cluster-2", "ABC")]


def test_cluster_3_embedded_namespace_xyz(plan: dict[str, Any]) -> None:
    assert deployed(plan, "cluster-3-embedded-namespace") == [("cluster-3", "XYZ")]


def test_cluster_4_policy_namespace_wins_over_embedded(plan: dict[str, Any]) -> None:
    assert deployed(plan, "cluster-4-policy-over-embedded") == [("cluster-4", "ABC")]


# -- an edge cluster whose agent is scoped to namespace ABC ----------------------------


def test_namespaced_1_same_namespace_deploys(plan: dict[str, Any]) -> None:
    assert deployed(plan, "namespaced-1-same-namespace") == [("ns-1", "ABC")]


def test_namespaced_2_no_namespace_deploys_into_the_nodes(plan: dict[str, Any]) -> None:
    assert deployed(plan, "namespaced-2-no-namespace") == [("ns-2", "ABC")]


def test_namespaced_3_constraint_on_another_namespace_does_not_deploy(
    plan: dict[str, Any],
) -> None:
    assert deployed(plan, "namespaced-3-constraint-elsewhere") == []
    (summary,) = unplaced(plan, "namespaced-3-constraint-elsewhere")
    assert "1 fails openhorizon.kubernetesNamespace == XYZ" in summary


def test_namespaced_4_conflict_does_not_deploy_and_warns_at_publish(
    spec: Spec, plan: dict[str, Any]
) -> None:
    assert deployed(plan, "namespaced-4-conflict") == []
    warnings = [n for n in lint(spec) if n.workload == "namespaced-4-conflict"]
    assert [n.code for n in warnings] == ["namespace-conflict"]
    assert "may result in no deployments; run placed check" in warnings[0].message


def test_a_device_ignores_the_cluster_namespace(plan: dict[str, Any]) -> None:
    assert deployed(plan, "device-ignores-namespace") == [("device-1", None)]


# -- the deploy check ------------------------------------------------------------------


def test_check_reports_the_real_conflict_of_scenario_4(spec: Spec) -> None:
    workload = next(w for w in spec.workloads if w.name == "namespaced-4-conflict")
    report, failed = deploy_check(Planner(spec), [workload])
    assert failed
    assert [(c["code"], c["real"]) for c in report["conflicts"]] == [
        ("namespace-conflict", True),
        ("no-compatible-target", True),
    ]
    ns4 = next(t for t in report["workloads"][0]["targets"] if t["target"] == "ns-4")
    assert ns4["compatible"] is False
    # Issue 11: a policy-level reason naming the conflict, as hzn deploycheck reports it;
    # issue 15: first, with the constraint failure still under the service.
    conflict = (
        "policy conflict: the policy deploys to namespace ABC but requires "
        "openhorizon.kubernetesNamespace == XYZ; on a namespace-scoped node "
        "openhorizon.kubernetesNamespace is the deployment's namespace, so no such node can "
        "run it"
    )
    failing = (
        'fails openhorizon.kubernetesNamespace == XYZ (openhorizon.kubernetesNamespace is "ABC")'
    )
    assert ns4["reason"] == {"general": conflict, "example/com.example.web_1.0.0": failing}
    assert ns4["reasons"] == [
        {"filter": "general", "message": conflict},
        {"filter": "constraint", "message": failing},
    ]
    assert ns4["namespace"] == "ABC"
    # A cluster-scoped node is refused for what it is (its scenario), not for the conflict.
    c1 = next(t for t in report["workloads"][0]["targets"] if t["target"] == "cluster-1")
    assert c1["reason"] == {
        "example/com.example.web_1.0.0": "fails scenario == n4 AND "
        'openhorizon.kubernetesNamespace == XYZ (scenario is "c1", '
        'openhorizon.kubernetesNamespace is "openhorizon-agent")'
    }


def test_check_cli_prints_the_conflict() -> None:
    result = CliRunner().invoke(app, ["check", str(EXAMPLE), "-w", "namespaced-4-conflict"])
    assert result.exit_code == 1
    assert "conflict [namespace-conflict] namespaced-4-conflict" in result.stdout
    assert "no namespace-scoped node can run it" in result.stdout.replace("\n", " ")


def test_validate_warns_about_embedded_namespaces_and_the_conflict() -> None:
    result = CliRunner().invoke(app, ["validate", str(EXAMPLE), "-f", "json"])
    assert result.exit_code == 0
    codes = sorted((w["code"], w["workload"]) for w in json.loads(result.stdout)["warnings"])
    assert codes == [
        ("embedded-namespace", "cluster-3-embedded-namespace"),
        ("embedded-namespace", "cluster-4-policy-over-embedded"),
        ("namespace-conflict", "namespaced-4-conflict"),
    ]


def test_a_mere_overlap_is_a_warning_not_a_conflict() -> None:
    spec = load_spec_text(
        """
settings: {default_mode: every}
inventory:
  - {id: ns-1, scope: namespace, namespace: ABC}
workloads:
  - name: overlap
    cluster_namespace: ABC
    constraints: openhorizon.kubernetesNamespace == ABC OR purpose == lab
    service: {url: web}
"""
    )
    (notice,) = lint(spec)
    assert notice.code == "namespace-overlap"
    report, failed = deploy_check(Planner(spec), list(spec.workloads))
    assert not failed and report["conflicts"] == []


# -- patterns ----------------------------------------------------------------------------

PATTERNS = """
settings: {default_mode: every}
inventory:
  - {id: cluster, scope: cluster}
  - {id: ns-abc, scope: namespace, namespace: ABC}
  - {id: device}
workloads:
  - name: open-pattern
    pattern: true
    services: [{url: a}, {url: b}]
  - name: abc-pattern
    pattern: true
    cluster_namespace: ABC
    services: [{url: a, namespace: XYZ}, {url: b}]
"""


def test_cluster_scoped_nodes_take_only_patterns_without_a_namespace() -> None:
    plan = plan_document(Planner(load_spec_text(PATTERNS)).plan())
    assert deployed(plan, "open-pattern") == [("cluster", "openhorizon-agent"), ("device", None)]
    assert deployed(plan, "abc-pattern") == [("ns-abc", "ABC"), ("device", None)]


def test_a_pattern_whose_services_embed_different_namespaces_deploys_each_to_its_own() -> None:
    # Issue 11 (it was an error before): on a cluster-scoped node each service goes to the
    # namespace its operator embeds, or the agent's; the output says so per service.
    text = PATTERNS.replace(
        "cluster_namespace: ABC\n    services: [{url: a, namespace: XYZ}, {url: b}]",
        "services: [{url: a, namespace: XYZ}, {url: b, namespace: QRS}, {url: c}]",
    )
    spec = load_spec_text(text, "patterns.yaml")
    plan = plan_document(Planner(spec).plan())
    (on_cluster,) = [
        p for p in plan["placements"] if p["workload"] == "abc-pattern" and p["target"] == "cluster"
    ]
    assert "namespace" not in on_cluster
    assert on_cluster["namespaces"] == {"a": "XYZ", "b": "QRS", "c": "openhorizon-agent"}
    # A namespace-scoped node never takes a pattern without a cluster namespace.
    assert "ns-abc" not in [p for p, _ in deployed(plan, "abc-pattern")]
    codes = [n.code for n in lint(spec) if n.workload == "abc-pattern"]
    assert "pattern-namespaces-differ" in codes


def test_the_plan_table_shows_each_services_namespace(tmp_path: Path) -> None:
    path = tmp_path / "patterns.yaml"
    path.write_text(
        PATTERNS.replace(
            "cluster_namespace: ABC\n    services: [{url: a, namespace: XYZ}, {url: b}]",
            "services: [{url: a, namespace: XYZ}, {url: b}]",
        )
    )
    result = CliRunner().invoke(app, ["plan", str(path), "-f", "json"])
    document = json.loads(result.stdout)
    wide = Console(file=io.StringIO(), width=240)
    plan_table(wide, [(document["name"], document)])
    assert "a: XYZ, b: openhorizon-agent" in wide.file.getvalue()  # type: ignore[attr-defined]


def test_a_pattern_with_one_embedded_namespace_deploys_there_on_a_cluster() -> None:
    text = PATTERNS.replace(
        "cluster_namespace: ABC\n    services: [{url: a, namespace: XYZ}, {url: b}]",
        "services: [{url: a, namespace: XYZ}]",
    )
    plan = plan_document(Planner(load_spec_text(text)).plan())
    assert ("cluster", "XYZ") in deployed(plan, "abc-pattern")
