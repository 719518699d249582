"""Open Horizon's own files (issue 11, item 6): plan, check and validate read what hzn
prints and takes, unchanged, and `placed convert` writes the native spec they amount to."""

from __future__ import annotations

import base64
import gzip
import io
import json
import re
import tarfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner, Result

from placed.cli.main import EXIT_INVALID, app
from placed.spec import hzn, hzn_files, hzn_keys

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
HZN = EXAMPLES / "openhorizon"
NATIVE = EXAMPLES / "openhorizon-native.yaml"


def invoke(*args: str | Path) -> Result:
    result = CliRunner().invoke(app, [str(arg) for arg in args])
    # CliRunner catches what the program raises; only the exit itself may come out.
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result


def invalid(*args: str | Path) -> str:
    """Run a command that must refuse its input; what it said on stderr."""
    result = invoke(*args)
    assert result.exit_code == EXIT_INVALID, result.output
    assert "Traceback" not in result.output
    assert result.stderr.startswith("error: "), result.stderr
    return result.stderr


def converted(*paths: str | Path) -> dict[str, Any]:
    result = invoke("convert", *paths)
    assert result.exit_code == 0, result.output
    data: dict[str, Any] = yaml.safe_load(result.stdout)
    return data


def as_json(*args: str | Path) -> dict[str, Any]:
    result = invoke(*args, "-f", "json")
    assert result.exit_code in (0, 1), result.output
    data: dict[str, Any] = json.loads(result.stdout)
    return data


def write(directory: Path, name: str, data: Any) -> Path:
    path = directory / name
    path.write_text(data if isinstance(data, str) else json.dumps(data, indent=2))
    return path


def location(document: dict[str, Any], node: str) -> dict[str, Any]:
    found: dict[str, Any] = next(n for n in document["inventory"] if n["id"] == node)
    return found


def workload(document: dict[str, Any], name: str) -> dict[str, Any]:
    found: dict[str, Any] = next(w for w in document["workloads"] if w["name"] == name)
    return found


def compatible(check: dict[str, Any]) -> dict[str, set[str]]:
    """Per workload, the targets `placed check` finds compatible."""
    return {
        row["workload"]: {t["target"] for t in row["targets"] if t["compatible"]}
        for row in check["workloads"]
    }


def check_namespaces(check: dict[str, Any]) -> dict[tuple[str, str], str | None]:
    return {
        (row["workload"], t["target"]): t.get("namespace")
        for row in check["workloads"]
        for t in row["targets"]
    }


def namespaces(plan: dict[str, Any]) -> dict[str, str | None]:
    return {p["unit"]: p.get("namespace") for p in plan["placements"]}


# -- small hzn documents, shaped as hzn prints or takes them -------------------------------


def node(kind: str = "device", arch: str = "amd64", **fields: Any) -> dict[str, Any]:
    """One entry of `hzn exchange node list -l` (exchange/node.go Device)."""
    return {
        "token": "********",
        "name": "n",
        "owner": "myorg/admin",
        "nodeType": kind,
        "isNamespaceScoped": False,
        "pattern": "",
        "registeredServices": [],
        "publicKey": "",
        "arch": arch,
        "userInput": [],
        **fields,
    }


def device_service(version: str = "1.0.0", arch: str = "amd64", **container: Any) -> dict[str, Any]:
    """`hzn exchange service publish -f` input for a device service."""
    return {
        "org": "myorg",
        "label": "web",
        "url": "com.example.web",
        "version": version,
        "arch": arch,
        "sharable": "multiple",
        "requiredServices": [],
        "userInput": [],
        "deployment": {"services": {"web": {"image": "web:" + version, **container}}},
    }


def cluster_service(archive: str, url: str = "com.example.op") -> dict[str, Any]:
    return {
        "org": "myorg",
        "url": url,
        "version": "1.0.0",
        "arch": "amd64",
        "sharable": "singleton",
        "clusterDeployment": {"operatorYamlArchive": archive},
    }


def policy(
    url: str = "com.example.web",
    arch: str = "*",
    versions: tuple[str, ...] = ("1.0.0",),
    **more: Any,
) -> dict[str, Any]:
    """`hzn exchange deployment addpolicy -f` input."""
    service: dict[str, Any] = {
        "name": url,
        "org": "myorg",
        "arch": arch,
        "serviceVersions": [{"version": v, "priority": {}} for v in versions],
    }
    service.update(more.pop("service", {}))
    return {"label": url, "description": "", "service": service, **more}


def archive(*manifests: tuple[str, str]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for name, text in manifests:
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return gzip.compress(buffer.getvalue(), mtime=0)


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


NAMESPACE_XYZ = "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: XYZ\n"
DEPLOYMENT_IN = (
    "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: op\n  namespace: {}\n"
    "spec:\n  replicas: 1\n"
)


# -- detection -----------------------------------------------------------------------------


def test_a_directory_is_read_as_open_horizon_files() -> None:
    data = as_json("validate", HZN)
    assert data["valid"] is True
    assert (data["targets"], data["workloads"]) == (6, 5)


def test_files_are_recognised_by_their_shape() -> None:
    files = [
        HZN / "nodes.json",
        HZN / "web.deployment.policy.json",
        HZN / "web.service.definition.json",
        HZN / "services.json",
    ]
    assert hzn.looks_like_openhorizon(files)
    data = as_json("validate", *files)
    assert (data["valid"], data["targets"], data["workloads"]) == (True, 6, 1)
    # A native spec is still native, in JSON as in YAML.
    assert not hzn.looks_like_openhorizon([NATIVE])
    assert as_json("validate", NATIVE)["workloads"] == 5


def test_input_format_chooses_the_reader(tmp_path: Path) -> None:
    nodes = write(tmp_path, "nodes.json", {"myorg/d1": node()})
    assert as_json("validate", "--input-format", "openhorizon", nodes)["targets"] == 1
    # Read as a native spec, the node list is refused by the native schema.
    assert "unknown key 'myorg/d1'" in invalid("validate", "--input-format", "native", nodes)
    # A document of no known shape: auto takes it for a native spec, openhorizon says what
    # it expected.
    other = write(tmp_path, "other.json", {"something": 1})
    assert not hzn.looks_like_openhorizon([other])
    stderr = invalid("check", "--input-format", "openhorizon", other)
    assert f"{other}:1:1: not an Open Horizon document placed reads" in stderr


def test_several_native_files_are_refused_with_a_hint(tmp_path: Path) -> None:
    stderr = invalid("plan", "--input-format", "native", NATIVE, NATIVE)
    assert "a native spec is one file" in stderr
    assert "--input-format openhorizon" in stderr


# -- each kind of document, from a file and from a directory -------------------------------


def _nodes(tmp: Path) -> list[Path]:
    return [
        write(
            tmp,
            "nodes.json",
            {
                "myorg/dev": node(arch="arm64"),
                "myorg/big": node("cluster", clusterNamespace="openhorizon-agent"),
                "myorg/small": node("cluster", clusterNamespace="ABC", isNamespaceScoped=True),
            },
        )
    ]


def _check_nodes(doc: dict[str, Any]) -> None:
    assert doc["inventory"] == [
        {"id": "dev", "kind": "device", "scope": "device", "arch": "arm64"},
        {
            "id": "big",
            "kind": "cluster",
            "scope": "cluster",
            "namespace": "openhorizon-agent",
            "arch": "amd64",
        },
        {
            "id": "small",
            "kind": "cluster",
            "scope": "namespace",
            "namespace": "ABC",
            "arch": "amd64",
        },
    ]


def _node_policy(tmp: Path) -> list[Path]:
    return [
        write(tmp, "nodes.json", {"myorg/dev": node()}),
        write(
            tmp,
            "dev.node.policy.json",
            {"properties": [{"name": "site", "value": "lab"}], "constraints": ["app == web"]},
        ),
    ]


def _check_node_policy(doc: dict[str, Any]) -> None:
    assert location(doc, "dev")["properties"] == [{"name": "site", "value": "lab"}]
    assert location(doc, "dev")["constraints"] == ["app == web"]


def _deployment_policy(tmp: Path) -> list[Path]:
    return [
        write(
            tmp, "web.deployment.policy.json", policy(properties=[{"name": "app", "value": "web"}])
        ),
        write(tmp, "web.service.definition.json", device_service()),
    ]


def _check_deployment_policy(doc: dict[str, Any]) -> None:
    assert doc["workloads"] == [
        {
            "name": "web",
            "mode": "every",
            "properties": [{"name": "app", "value": "web"}],
            "service": {
                "url": "com.example.web",
                "org": "myorg",
                "version": "1.0.0",
                "arch": "amd64",
                "privileged": False,
                "runs_on": ["device"],
            },
        }
    ]


def _pattern(tmp: Path) -> list[Path]:
    pattern = {
        "name": "gw",
        "org": "myorg",
        "label": "gateways",
        "public": False,
        "clusterNamespace": "",
        "services": [
            {
                "serviceUrl": "com.example.web",
                "serviceOrgid": "myorg",
                "serviceArch": "amd64",
                "serviceVersions": [{"version": "1.0.0"}],
            }
        ],
    }
    return [
        write(tmp, "gw.json", pattern),
        write(tmp, "web.service.definition.json", device_service()),
        write(tmp, "nodes.json", {"myorg/gate": node(pattern="myorg/gw"), "myorg/other": node()}),
    ]


def _check_pattern(doc: dict[str, Any]) -> None:
    gw = workload(doc, "gw")
    assert gw["pattern"] is True
    assert [s["url"] for s in gw["services"]] == ["com.example.web"]
    assert gw["constraints"] == ['hzn.pattern == "myorg/gw"']
    assert location(doc, "gate")["constraints"] == ['hzn.pattern == "myorg/gw"']
    assert "constraints" not in location(doc, "other")


def _service_list(tmp: Path) -> list[Path]:
    listed = {
        "myorg/com.example.op_1.0.0_amd64": {
            "owner": "myorg/admin",
            "url": "com.example.op",
            "version": "1.0.0",
            "arch": "amd64",
            "sharable": "singleton",
            "deployment": "",
            "clusterDeployment": json.dumps(
                {"metadata": {"namespace": "XYZ"}, "operatorYamlArchive": "H4sIAAAA..."}
            ),
        }
    }
    return [
        write(tmp, "services.json", listed),
        write(tmp, "op.deployment.policy.json", policy("com.example.op")),
    ]


def _check_service_list(doc: dict[str, Any]) -> None:
    service = workload(doc, "op")["service"]
    assert (service["namespace"], service["runs_on"], service["org"]) == (
        "XYZ",
        ["cluster"],
        "myorg",
    )


def _service_definition(tmp: Path) -> list[Path]:
    return [
        write(
            tmp,
            "op.service.definition.json",
            cluster_service(b64(archive(("ns.yaml", NAMESPACE_XYZ)))),
        ),
        write(tmp, "op.deployment.policy.json", policy("com.example.op")),
    ]


def _check_service_definition(doc: dict[str, Any]) -> None:
    service = workload(doc, "op")["service"]
    assert (service["namespace"], service["runs_on"]) == ("XYZ", ["cluster"])


KINDS: dict[str, tuple[Callable[[Path], list[Path]], Callable[[dict[str, Any]], None]]] = {
    "node list": (_nodes, _check_nodes),
    "node policy": (_node_policy, _check_node_policy),
    "deployment policy": (_deployment_policy, _check_deployment_policy),
    "pattern": (_pattern, _check_pattern),
    "service definition": (_service_definition, _check_service_definition),
    "service list": (_service_list, _check_service_list),
}


@pytest.mark.parametrize("kind", list(KINDS))
def test_each_document_kind_from_files_and_from_a_directory(tmp_path: Path, kind: str) -> None:
    make, check = KINDS[kind]
    files = make(tmp_path)
    from_directory = converted(tmp_path)
    from_files = converted(*files)
    check(from_directory)
    assert from_files["inventory"] == from_directory["inventory"]
    assert from_files["workloads"] == from_directory["workloads"]
    # And plan, check and validate take them as they are.
    assert as_json("validate", *files)["valid"] is True
    assert as_json("validate", tmp_path)["valid"] is True


# -- node policies -------------------------------------------------------------------------


def test_node_policy_named_after_a_node_belongs_to_it(tmp_path: Path) -> None:
    write(tmp_path, "nodes.json", {"myorg/a": node(), "myorg/b": node()})
    write(tmp_path, "b.node.policy.json", {"properties": [{"name": "x", "value": 1}]})
    doc = converted(tmp_path)
    assert "properties" not in location(doc, "a")
    assert location(doc, "b")["properties"] == [{"name": "x", "value": 1}]


def test_node_policy_of_an_unknown_node_is_an_error(tmp_path: Path) -> None:
    write(tmp_path, "nodes.json", {"myorg/edge-1": node()})
    path = write(tmp_path, "edge-l.node.policy.json", {"properties": []})
    stderr = invalid("plan", tmp_path)
    assert f"{path}: no node 'edge-l' in the node list; did you mean 'edge-1'?" in stderr


def test_lone_node_policy_is_one_node_as_deploycheck_takes_it(tmp_path: Path) -> None:
    lone = write(tmp_path, "node.policy.json", {"properties": [{"name": "site", "value": "lab"}]})
    doc = converted(lone)
    assert doc["inventory"] == [
        {
            "id": "node",
            "kind": "device",
            "scope": "device",
            "properties": [{"name": "site", "value": "lab"}],
        }
    ]
    # As `hzn exchange node listpolicy` prints it, with the agent's built-ins: these become
    # the node's own fields (a cluster agent here), not properties placed would refuse.
    exported = {
        "properties": [
            {"name": "openhorizon.cpu", "value": 4},
            {"name": "openhorizon.memory", "value": 7961},
            {"name": "openhorizon.arch", "value": "amd64"},
            {"name": "openhorizon.kubernetesNamespace", "value": "ABC"},
            {"name": "openhorizon.kubernetesNamespaceScoped", "value": True},
            {"name": "openhorizon.allowPrivileged", "value": "true"},
        ],
        "constraints": [],
        "deployment": {"properties": [], "constraints": []},
        "management": {"properties": [], "constraints": []},
        "nodePolicyVersion": "v2",
        "lastUpdated": "2026-11-30T09:00:00.000Z[UTC]",
    }
    write(tmp_path, "node.policy.json", exported)
    assert converted(tmp_path)["inventory"] == [
        {
            "id": "node",
            "kind": "cluster",
            "scope": "namespace",
            "namespace": "ABC",
            "arch": "amd64",
            "capacity": {"cpu": 4, "memory": 7961},
            # Open Horizon turns "true" into a boolean for this one property.
            "properties": [{"name": "openhorizon.allowPrivileged", "value": True}],
        }
    ]


def test_lone_node_policy_with_several_nodes_must_say_whose(tmp_path: Path) -> None:
    write(tmp_path, "nodes.json", {"myorg/a": node(), "myorg/b": node()})
    path = write(tmp_path, "node.policy.json", {"properties": []})
    assert f"{path}: which node's policy is this?" in invalid("check", tmp_path)
    # With a single node in the list, it is that node's.
    write(tmp_path, "nodes.json", {"myorg/a": node()})
    assert [n["id"] for n in converted(tmp_path)["inventory"]] == ["a"]


def test_deployment_section_is_merged_over_the_top_level(tmp_path: Path) -> None:
    write(tmp_path, "nodes.json", {"myorg/a": node(), "myorg/b": node()})
    top = {
        "properties": [{"name": "tier", "value": "gold"}, {"name": "site", "value": "lab"}],
        "constraints": ["tier == gold"],
    }
    # a: the section's properties win on a clash; its constraints replace the top level's.
    write(
        tmp_path,
        "a.node.policy.json",
        {
            **top,
            "deployment": {
                "properties": [{"name": "tier", "value": "silver"}],
                "constraints": ["app == web"],
            },
        },
    )
    # b: a section without constraints keeps the top level's.
    write(
        tmp_path,
        "b.node.policy.json",
        {**top, "deployment": {"properties": [], "constraints": []}},
    )
    doc = converted(tmp_path)
    assert location(doc, "a")["properties"] == [
        {"name": "tier", "value": "silver"},
        {"name": "site", "value": "lab"},
    ]
    assert location(doc, "a")["constraints"] == ["app == web"]
    assert location(doc, "b")["properties"] == top["properties"]
    assert location(doc, "b")["constraints"] == ["tier == gold"]
    # In the example, cluster-a's top level asks for `tier == gold`, which no policy has;
    # its deployment section replaces that, so the operators reach it.
    check = compatible(as_json("check", HZN))
    assert "cluster-a" in check["operator"]
    assert location(converted(HZN), "cluster-a")["constraints"] == [
        "openhorizon.service.org == myorg"
    ]


def test_management_section_is_ignored(tmp_path: Path) -> None:
    write(tmp_path, "nodes.json", {"myorg/a": node()})
    write(
        tmp_path,
        "a.node.policy.json",
        {
            "properties": [{"name": "tier", "value": "gold"}],
            "constraints": [],
            "management": {
                "properties": [{"name": "tier", "value": "maintenance"}],
                "constraints": ["upgradeWindow == night", "not even valid (("],
            },
        },
    )
    assert location(converted(tmp_path), "a") == {
        "id": "a",
        "kind": "device",
        "scope": "device",
        "arch": "amd64",
        "properties": [{"name": "tier", "value": "gold"}],
    }
    # edge-device's management constraint (upgradeWindow == night) would refuse every
    # policy; it takes web all the same.
    assert "edge-device" in compatible(as_json("check", HZN))["web"]


# -- services: versions, arch, device or cluster, privileged -------------------------------


def test_highest_defined_version_per_arch_and_one_workload_per_arch(tmp_path: Path) -> None:
    write(tmp_path, "web.deployment.policy.json", policy(versions=("1.0.0", "1.2.0", "2.0.0")))
    write(tmp_path, "a.json", device_service("1.0.0", "amd64"))
    write(tmp_path, "b.json", device_service("1.2.0", "amd64"))
    write(tmp_path, "c.json", device_service("1.0.0", "arm64"))
    write(tmp_path, "d.json", device_service("3.0.0", "arm64"))  # not allowed by the policy
    doc = converted(tmp_path)
    assert [
        (w["name"], w["service"]["arch"], w["service"]["version"]) for w in doc["workloads"]
    ] == [
        ("web-amd64", "amd64", "1.2.0"),
        ("web-arm64", "arm64", "1.0.0"),
    ]
    # A policy that names its arch takes only that one, under its own name.
    write(tmp_path, "web.deployment.policy.json", policy(arch="arm64", versions=("1.0.0",)))
    assert [(w["name"], w["service"]["arch"]) for w in converted(tmp_path)["workloads"]] == [
        ("web", "arm64")
    ]


def test_where_a_service_runs_and_whether_it_needs_privileges(tmp_path: Path) -> None:
    both = {**device_service(), "url": "com.example.both"}
    # As the exchange keeps it (JSON text, metadata recorded at publish time).
    both["clusterDeployment"] = json.dumps(
        {"metadata": {"namespace": ""}, "operatorYamlArchive": "x..."}
    )
    write(tmp_path, "both.json", both)
    write(tmp_path, "priv.json", {**device_service(privileged=True), "url": "com.example.priv"})
    write(tmp_path, "host.json", {**device_service(network="host"), "url": "com.example.host"})
    write(tmp_path, "plain.json", device_service())
    for url in ("both", "priv", "host", "web"):
        write(tmp_path, f"{url}.deployment.policy.json", policy(f"com.example.{url}"))
    doc = converted(tmp_path)
    found = {
        w["name"]: (w["service"]["runs_on"], w["service"]["privileged"]) for w in doc["workloads"]
    }
    assert found == {
        "both": (["device", "cluster"], False),
        "host": (["device"], True),  # the host network needs privileged mode too
        "priv": (["device"], True),
        "web": (["device"], False),
    }


# The next tests run the converted files through the engine's service rules
# (policy/services.py): runs_on, the arch rule and privileged mode.


def test_device_services_on_devices_cluster_services_on_clusters(tmp_path: Path) -> None:
    files = tmp_path / "hzn"
    files.mkdir()
    write(files, "nodes.json", {"myorg/dev": node(), "myorg/clu": node("cluster")})
    write(files, "web.json", device_service())
    write(files, "op.json", cluster_service(b64(archive(("a.yaml", NAMESPACE_XYZ)))))
    write(files, "web.deployment.policy.json", policy())
    write(files, "op.deployment.policy.json", policy("com.example.op"))
    doc = converted(files)
    assert workload(doc, "web")["service"]["runs_on"] == ["device"]
    assert workload(doc, "op")["service"]["runs_on"] == ["cluster"]
    assert compatible(as_json("check", files)) == {"web": {"dev"}, "op": {"clu"}}


def test_service_arch_must_be_the_nodes(tmp_path: Path) -> None:
    files = tmp_path / "hzn"
    files.mkdir()
    write(files, "nodes.json", {"myorg/x86": node(), "myorg/arm": node(arch="arm64")})
    write(files, "web.json", device_service(arch="amd64"))
    write(files, "web.deployment.policy.json", policy(arch="*"))
    assert workload(converted(files), "web")["service"]["arch"] == "amd64"
    check = compatible(as_json("check", files))
    assert check == {"web": {"x86"}}


def test_privileged_service_needs_a_node_that_allows_it(tmp_path: Path) -> None:
    files = tmp_path / "hzn"
    files.mkdir()
    write(files, "nodes.json", {"myorg/open": node(), "myorg/closed": node()})
    write(
        files,
        "open.node.policy.json",
        {"properties": [{"name": "openhorizon.allowPrivileged", "value": True}]},
    )
    write(files, "web.json", device_service(network="host"))
    write(files, "web.deployment.policy.json", policy())
    assert workload(converted(files), "web")["service"]["privileged"] is True
    check = compatible(as_json("check", files))
    assert check == {"web": {"open"}}


def test_example_deploys_where_open_horizon_would() -> None:
    check = compatible(as_json("check", HZN))
    assert check == {
        "metrics": {"cluster-a", "ns-abc", "ns-xyz"},
        "operator-abc": {"cluster-a", "ns-abc"},
        "operator": {"cluster-a", "ns-xyz"},
        # edge-camera does not allow privileged services; edge-gateway runs its pattern.
        "web": {"edge-device"},
        "web-pattern": {"edge-gateway"},
    }


def test_example_reproduces_seed_002_cluster_namespaces() -> None:
    plan = namespaces(as_json("plan", HZN))
    # Cluster-scoped agent: no clusterNamespace, nothing embedded -> its own namespace;
    # the embedded namespace; clusterNamespace over the embedded one.
    assert plan["metrics/cluster-a"] == "openhorizon-agent"
    assert plan["operator/cluster-a"] == "XYZ"
    assert plan["operator-abc/cluster-a"] == "ABC"
    # Namespace-scoped agents: the policy's namespace is theirs; no namespace -> their own;
    # an embedded namespace that is not theirs keeps the service away.
    assert plan["operator-abc/ns-abc"] == "ABC"
    assert plan["metrics/ns-abc"] == "ABC"
    assert plan["operator/ns-xyz"] == "XYZ"
    assert "operator/ns-abc" not in plan
    assert "operator-abc/ns-xyz" not in plan


def test_pattern_nodes_take_only_their_pattern() -> None:
    check = compatible(as_json("check", HZN))
    assert check["web-pattern"] == {"edge-gateway"}
    assert all(
        "edge-gateway" not in targets for name, targets in check.items() if name != "web-pattern"
    )


# -- convert, and the native example ---------------------------------------------------------


def test_convert_prints_the_committed_native_example(tmp_path: Path) -> None:
    result = invoke("convert", HZN)
    assert result.exit_code == 0, result.output
    assert result.stdout == NATIVE.read_text()
    written = tmp_path / "spec.yaml"
    assert invoke("convert", HZN, "--output-file", written).exit_code == 0
    assert written.read_text() == NATIVE.read_text()


def test_hzn_files_and_their_native_spec_give_the_same_answers() -> None:
    from_hzn, from_native = as_json("check", HZN), as_json("check", NATIVE)
    assert compatible(from_hzn) == compatible(from_native)
    assert [w["workload"] for w in from_hzn["workloads"]] == [
        "metrics",
        "operator-abc",
        "operator",
        "web",
        "web-pattern",
    ]
    # The namespace field of each target in `placed check`, and of each unit in `placed plan`.
    assert check_namespaces(from_hzn) == check_namespaces(from_native)
    assert check_namespaces(from_hzn)[("metrics", "ns-abc")] == "ABC"
    assert namespaces(as_json("plan", HZN)) == namespaces(as_json("plan", NATIVE))


# -- operator archives -------------------------------------------------------------------------


def _namespace_of(tmp: Path, definition: dict[str, Any]) -> str | None:
    write(tmp, "op.service.definition.json", definition)
    write(tmp, "op.deployment.policy.json", policy("com.example.op"))
    service: dict[str, Any] = workload(converted(tmp), "op")["service"]
    return service.get("namespace")


@pytest.mark.parametrize(
    ("manifests", "expected"),
    [
        # A Namespace object names the namespace, wherever it stands.
        ([("a.yaml", DEPLOYMENT_IN.format("OTHER")), ("b.yaml", NAMESPACE_XYZ)], "XYZ"),
        # Else the first Deployment that says where it goes.
        ([("a.yaml", DEPLOYMENT_IN.format("DEP") + "---\n" + DEPLOYMENT_IN.format("N2"))], "DEP"),
        # Other resources do not count, and manifests that do not parse are skipped.
        (
            [
                ("sa.yaml", "apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  namespace: SA\n"),
                ("bad.yaml", "kind: Deployment\nmetadata: [unclosed\n"),
            ],
            None,
        ),
    ],
)
def test_embedded_namespace_from_a_base64_operator_archive(
    tmp_path: Path, manifests: list[tuple[str, str]], expected: str | None
) -> None:
    assert _namespace_of(tmp_path, cluster_service(b64(archive(*manifests)))) == expected


def test_operator_archive_given_as_a_path_beside_the_definition(tmp_path: Path) -> None:
    (tmp_path / "operator").mkdir()
    (tmp_path / "operator" / "op.tar.gz").write_bytes(archive(("ns.yaml", NAMESPACE_XYZ)))
    assert _namespace_of(tmp_path, cluster_service("operator/op.tar.gz")) == "XYZ"


def test_namespace_recorded_at_publish_wins_and_a_cut_archive_is_unknown(tmp_path: Path) -> None:
    recorded = cluster_service(b64(archive(("ns.yaml", NAMESPACE_XYZ))))
    recorded["clusterDeployment"]["metadata"] = {"namespace": "RECORDED"}
    # Pre-signed, as JSON text: hzn publishes it as it is (a publish file's own object may
    # not carry metadata, see test_publish_refusals).
    recorded["clusterDeployment"] = json.dumps(recorded["clusterDeployment"])
    assert _namespace_of(tmp_path, recorded) == "RECORDED"
    # `hzn exchange service list -l` cuts long archives at 100 characters.
    assert _namespace_of(tmp_path, cluster_service("H4sIAAAAAAAAA+3UW0vDMBQ...")) is None


def test_operator_archive_is_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(hzn, "MAX_ARCHIVE_UNPACKED", 10)
    path = write(tmp_path, "op.json", cluster_service(b64(archive(("ns.yaml", NAMESPACE_XYZ)))))
    write(tmp_path, "op.deployment.policy.json", policy("com.example.op"))
    stderr = invalid("convert", tmp_path)
    assert (
        f"{path}:8:28: clusterDeployment.operatorYamlArchive: the operator archive unpacks to"
        in (stderr)
    )


def test_inputs_are_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    nodes = write(tmp_path, "nodes.json", {"myorg/a": node()})
    write(tmp_path, "more.json", {"myorg/b": node()})
    monkeypatch.setattr(hzn_files, "MAX_FILES", 1)
    assert "2 files; at most 1 are read" in invalid("plan", tmp_path)
    monkeypatch.setattr(hzn_files, "MAX_FILE_BYTES", 100)
    assert f"{nodes}: is " in invalid("plan", "--input-format", "openhorizon", nodes)


# -- errors in hzn files: exit 2, file:line:column, no traceback ------------------------------


def test_bad_json(tmp_path: Path) -> None:
    path = write(tmp_path, "nodes.json", '{\n  "myorg/a": {"nodeType": "device",,}\n}\n')
    assert f"{path}:2:36: not valid JSON: Expecting property name" in invalid(
        "plan", "--input-format", "openhorizon", path
    )


def test_missing_required_field(tmp_path: Path) -> None:
    data = policy()
    del data["service"]["org"]
    path = write(tmp_path, "web.deployment.policy.json", data)
    write(tmp_path, "web.json", device_service())
    assert f"{path}:4:14: service: missing required key 'org'" in invalid("check", tmp_path)


def test_wrong_type(tmp_path: Path) -> None:
    path = write(tmp_path, "nodes.json", {"myorg/a": node(isNamespaceScoped="yes")})
    stderr = invalid("validate", tmp_path)
    assert f"{path}:7:26: myorg/a.isNamespaceScoped: expected a boolean, got a string 'yes'" in (
        stderr
    )


def test_unknown_service_reference(tmp_path: Path) -> None:
    path = write(tmp_path, "web.deployment.policy.json", policy(versions=("2.0.0",)))
    write(tmp_path, "web.json", device_service("1.0.0"))
    stderr = invalid("plan", tmp_path)
    assert (
        f"{path}:4:14: service: no service definition for myorg/com.example.web version 2.0.0"
        in (stderr)
    )


def test_property_and_constraint_errors_point_into_the_node_policy(tmp_path: Path) -> None:
    write(tmp_path, "nodes.json", {"myorg/a": node()})
    text = """/* Node policy for a, with hzn's comments.
   They span lines. */
{
  "properties": [
    { "name": "cpus", "value": "4", "type": "int" }
  ],
  "constraints": ["cpus >> 2"]
}
"""
    path = write(tmp_path, "a.node.policy.json", text)
    stderr = invalid("validate", "-f", "json", tmp_path)
    assert f"{path}:5:32: properties[0].value: value '4' is text, not an int" in stderr
    assert f"{path}:7:25: constraints[0]: invalid constraint" in stderr
    # validate --format json gives the same places as data.
    result = invoke("validate", "-f", "json", tmp_path)
    errors = json.loads(result.stdout)["errors"]
    assert [(e["file"], e["line"], e["column"]) for e in errors] == [
        (str(path), 5, 32),
        (str(path), 7, 25),
    ]


def test_read_only_builtin_in_a_deployment_policy(tmp_path: Path) -> None:
    data = policy(properties=[{"name": "openhorizon.service.url", "value": "x"}])
    path = write(tmp_path, "web.deployment.policy.json", data)
    write(tmp_path, "web.json", device_service())
    assert f"{path}:17:15: properties[0].name: openhorizon.service.url is a read-only" in invalid(
        "plan", tmp_path
    )


def test_a_service_policy_needs_its_service_beside_it(tmp_path: Path) -> None:
    path = write(tmp_path, "service.policy.json", {"properties": [], "constraints": []})
    assert f"{path}:1:1: which service's policy is this?" in invalid(
        "plan", "--input-format", "openhorizon", tmp_path
    )


def test_a_missing_operator_archive_is_read_as_deploycheck_reads_it(tmp_path: Path) -> None:
    # hzn deploycheck --service reads the definition without the archive; hzn exchange
    # service publish reads it from beside the file, and fails without it: a warning.
    folder = tmp_path / "horizon"
    folder.mkdir()
    path = write(folder, "op.json", cluster_service("../operator.tar.gz"))
    write(folder, "op.deployment.policy.json", policy("com.example.op"))
    result = invoke("validate", folder)
    assert result.exit_code == 0, result.output
    assert (
        f"warning [operator-archive-missing] {path}:8:28: clusterDeployment.operatorYamlArchive: "
        f"no such file {tmp_path / 'operator.tar.gz'}; read without it, as hzn deploycheck"
    ) in result.output
    assert "hzn exchange service publish reads the archive from there and fails" in result.output


def test_bad_operator_archive(tmp_path: Path) -> None:
    path = write(tmp_path, "op.json", cluster_service("operator.tar.gz"))
    write(tmp_path, "op.deployment.policy.json", policy("com.example.op"))
    write(tmp_path, "op.json", cluster_service("not an archive"))
    assert f"{path}:8:28: clusterDeployment.operatorYamlArchive: 'not an archive' is neither" in (
        invalid("check", tmp_path)
    )


def test_pattern_services_may_embed_different_namespaces(tmp_path: Path) -> None:
    # Legal in Open Horizon: on a cluster-scoped agent each service goes to its own
    # namespace; `placed validate` warns that no namespace-scoped agent can take it.
    first = cluster_service(b64(archive(("ns.yaml", NAMESPACE_XYZ))), "com.example.a")
    second = cluster_service(b64(archive(("d.yaml", DEPLOYMENT_IN.format("DEP")))), "com.example.b")
    write(tmp_path, "a.json", first)
    write(tmp_path, "b.json", second)
    reference = {"serviceOrgid": "myorg", "serviceArch": "amd64"}
    versions = [{"version": "1.0.0"}]
    pattern = {
        "name": "both",
        "services": [
            {"serviceUrl": "com.example.a", **reference, "serviceVersions": versions},
            {"serviceUrl": "com.example.b", **reference, "serviceVersions": versions},
        ],
    }
    write(tmp_path, "both.json", pattern)
    services = workload(converted(tmp_path), "both")["services"]
    assert [s["namespace"] for s in services] == ["XYZ", "DEP"]
    warnings = as_json("validate", tmp_path)["warnings"]
    assert "pattern-namespaces-differ" in {w["code"] for w in warnings}


# -- keys (issue 15): unknown to the real tool is an error, known and unused is ignored --------


def at(path: Path, needle: str) -> str:
    """file:line:column of the first `needle` in the file (1-based, as errors give them)."""
    text = path.read_text()
    offset = text.index(needle)
    line = text.count("\n", 0, offset) + 1
    column = offset - (text.rfind("\n", 0, offset) + 1) + 1
    return f"{path}:{line}:{column}"


def test_misspelt_constraints_in_a_deployment_policy_is_an_error(tmp_path: Path) -> None:
    write(tmp_path, "web.json", device_service())
    path = write(tmp_path, "web.deployment.policy.json", policy(constriants=["purpose == lab"]))
    stderr = invalid("validate", tmp_path)
    where = at(path, '"constriants"')
    assert f"{where}: constriants: unknown key 'constriants'; did you mean 'constraints'?" in stderr


PATTERN_REF = {"serviceUrl": "com.example.web", "serviceOrgid": "myorg", "serviceArch": "amd64"}


@pytest.mark.parametrize(
    ("name", "document", "bad", "key", "meant"),
    [
        (
            "a.node.policy.json",
            {"propertes": [], "constraints": []},
            "propertes",
            "propertes",
            "properties",
        ),
        (
            "a.node.policy.json",
            {"deployment": {"properties": [], "constraint": ["x == 1"]}},
            "constraint",
            "deployment.constraint",
            "constraints",
        ),
        (
            "a.node.policy.json",
            {"properties": [{"name": "purpose", "vaule": "lab"}]},
            "vaule",
            "properties[0].vaule",
            "value",
        ),
        (
            "web.json",
            {**device_service(), "sharabel": "multiple"},
            "sharabel",
            "sharabel",
            "sharable",
        ),
        (
            "web.deployment.policy.json",
            policy(service={"serviceVersion": []}),
            "serviceVersion",
            "service.serviceVersion",
            "serviceVersions",
        ),
        (
            "p.json",
            {"name": "p", "clusterNamspace": "", "services": [{**PATTERN_REF}]},
            "clusterNamspace",
            "clusterNamspace",
            "clusterNamespace",
        ),
        (
            "p.json",
            {"name": "p", "services": [{**PATTERN_REF, "serviceVersion": [{"version": "1.0.0"}]}]},
            "serviceVersion",
            "services[0].serviceVersion",
            "serviceVersions",
        ),
        (
            "p.json",
            {"name": "p", "services": [{**PATTERN_REF, "serviceVersions": [{"versoin": "1"}]}]},
            "versoin",
            "services[0].serviceVersions[0].versoin",
            "version",
        ),
        (
            "nodes.json",
            {"myorg/a": node(isNamespacedScoped=True)},
            "isNamespacedScoped",
            "myorg/a.isNamespacedScoped",
            "isNamespaceScoped",
        ),
        (
            "services.json",
            {"myorg/web_1.0.0_amd64": {"url": "web", "version": "1.0.0", "clusterDeploymnet": ""}},
            "clusterDeploymnet",
            "myorg/web_1.0.0_amd64.clusterDeploymnet",
            "clusterDeployment",
        ),
    ],
)
def test_a_key_unknown_to_hzn_is_an_error_in_every_document(
    tmp_path: Path, name: str, document: dict[str, Any], bad: str, key: str, meant: str
) -> None:
    if name != "web.json":
        write(tmp_path, "web.json", device_service())
    path = write(tmp_path, name, document)
    stderr = " ".join(invalid("validate", tmp_path).split())
    expected = f"{at(path, json.dumps(bad))}: {key}: unknown key '{bad}'; did you mean '{meant}'?"
    assert expected in stderr


def test_a_key_that_differs_only_in_case_is_named(tmp_path: Path) -> None:
    # Go's encoding/json would read "Constraints" as constraints; placed asks for the exact
    # spelling and says so, rather than reading it or dropping it silently.
    write(tmp_path, "web.json", device_service())
    path = write(tmp_path, "web.deployment.policy.json", policy(Constraints=["a == 1"]))
    stderr = " ".join(invalid("validate", tmp_path).split())
    where = at(path, '"Constraints"')
    assert (
        f"{where}: Constraints: unknown key 'Constraints'; did you mean "
        "'constraints'? (hzn would read it as constraints, since Go's encoding/json matches "
        "keys ignoring case" in stderr
    )


def test_force_reads_a_key_hzn_does_not_know_as_hzn_does(tmp_path: Path) -> None:
    # The shape of a public service repository's node policy: a deployment policy's
    # `service` section pasted into it. hzn register --policy and hzn deploycheck
    # --node-pol read it with encoding/json, which drops the key; placed refuses it, as one
    # may be misspelt, and says what --force does.
    write(tmp_path, "web.json", device_service())
    write(tmp_path, "web.deployment.policy.json", policy())
    pasted = {"name": "com.example.web", "org": "myorg", "arch": "*"}
    path = write(
        tmp_path, "node.policy.json", {"properties": [], "constraints": [], "service": [pasted]}
    )
    stderr = " ".join(invalid("validate", tmp_path).split())
    assert stderr.startswith(
        f"error: {path}: 1 key hzn does not know (below): hzn ignores such a key (Go's "
        "encoding/json drops a key no struct field has), and placed refuses it, as one may "
        "be misspelt; --force reads the file as hzn does, each such key a warning"
    )
    assert f"{at(path, json.dumps('service'))}: service: unknown key 'service'" in stderr
    result = invoke("validate", "--force", tmp_path)
    assert result.exit_code == 0, result.output
    assert (
        f"warning [unknown-key] {at(path, json.dumps('service'))}: service: unknown key "
        "'service'; ignored, as hzn ignores such a key"
    ) in " ".join(result.output.split())
    # The same files are planned alike, the key aside.
    checked = invoke("check", "--force", tmp_path)
    assert checked.exit_code == 0, checked.output
    assert "node" in checked.stdout and "yes" in checked.stdout
    converted = invoke("convert", "--force", tmp_path)
    assert converted.exit_code == 0, converted.output
    assert "warning [unknown-key]" in converted.stderr


def test_force_keeps_a_key_hzn_reads_as_another_an_error(tmp_path: Path) -> None:
    # hzn reads "Constraints" as constraints; placed cannot ignore it as hzn would not.
    write(tmp_path, "web.json", device_service())
    path = write(tmp_path, "web.deployment.policy.json", policy(Constraints=["a == 1"]))
    stderr = " ".join(invalid("validate", "--force", tmp_path).split())
    assert f"{at(path, json.dumps('Constraints'))}: Constraints: unknown key" in stderr
    assert "key hzn does not know" not in stderr


def _with_every_ignored_key(keys: hzn_keys.Keys, document: dict[str, Any]) -> dict[str, Any]:
    found = {**document, **{key: document.get(key, "x") for key in keys.ignored}}
    for key, (kind, inner) in keys.nested.items():
        value = found.get(key)
        if kind == "object" and isinstance(value, dict):
            found[key] = _with_every_ignored_key(inner, value)
        elif kind == "list" and isinstance(value, list):
            found[key] = [_with_every_ignored_key(inner, v) for v in value]
    return found


def test_every_key_hzn_knows_is_accepted_and_ignored(tmp_path: Path) -> None:
    documents: dict[str, tuple[str, dict[str, Any]]] = {
        "nodes.json": ("nodes", {"myorg/a": node(), "myorg/gw": node(arch="arm64")}),
        "a.node.policy.json": (
            "node-policy",
            {"properties": [{"name": "p", "value": 1}], "deployment": {"properties": []}},
        ),
        "web.json": ("service", device_service()),
        "web.deployment.policy.json": (
            "deployment-policy",
            policy(properties=[{"name": "app", "value": "web", "type": "string"}]),
        ),
        "services.json": (
            "services",
            {"myorg/x_1.0.0_arm64": {"url": "x", "version": "1.0.0", "arch": "arm64"}},
        ),
        "p.json": (
            "pattern",
            {"name": "p", "services": [{**PATTERN_REF, "serviceVersions": [{"version": "1.0.0"}]}]},
        ),
    }
    for name, (shape, document) in documents.items():
        keys = hzn_keys.FORMATS[shape][2]
        if shape in hzn_keys.ENTRIES:
            document = {k: _with_every_ignored_key(keys, v) for k, v in document.items()}
        else:
            document = _with_every_ignored_key(keys, document)
        write(tmp_path, name, document)
    result = invoke("validate", tmp_path)
    assert result.exit_code == 0, result.output


def test_the_readme_lists_the_ignored_keys() -> None:
    readme = (EXAMPLES.parent / "README.md").read_text()
    block = re.search(
        r"<!-- hzn keys: generated by python -m placed.spec.hzn_keys -->\n(.*?)\n"
        r"<!-- end of hzn keys -->",
        readme,
        re.S,
    )
    assert block is not None, "the README lost its table of hzn keys"
    assert block.group(1) == hzn_keys.markdown_table()


# -- expr --props reads `hzn policy list` (issue 15) ---------------------------------------------

# A node's policy as `hzn policy list` prints it (cli/policy/policy.go List).
POLICY_LIST = """{
  "properties": [
    {"name": "openhorizon.cpu", "value": 4},
    {"name": "purpose", "value": "dev"}
  ],
  "constraints": [],
  "deployment": {
    "properties": [
      {"name": "purpose", "value": "lab"},
      {"name": "tier", "value": "4", "type": "int"}
    ],
    "constraints": []
  },
  "management": {"properties": null, "constraints": null}
}
"""


def test_expr_reads_hzn_policy_list_from_standard_input() -> None:
    # The example `placed expr --help` gives. The deployment section wins over the top
    # level (exchangecommon/nodepolicy.go GetDeploymentPolicy).
    good = POLICY_LIST.replace('"value": "4", "type": "int"', '"value": 4, "type": "int"')
    runner = CliRunner()
    result = runner.invoke(app, ["expr", 'purpose == "lab"', "--props", "@-"], input=good)
    assert result.exit_code == 0, result.output
    assert result.stdout == "true\n"
    result = runner.invoke(app, ["expr", "openhorizon.cpu >= 8", "--props", "@-"], input=good)
    assert result.exit_code == 1
    # A bad property points into the policy, at its value.
    result = runner.invoke(app, ["expr", "tier > 2", "--props", "@-"], input=POLICY_LIST)
    assert result.exit_code == EXIT_INVALID
    assert result.stderr.startswith("error: <stdin>:10:33: property 'tier': value '4' is text")
    # Its keys are a node policy's (exchangecommon.NodePolicy), misspelt ones named.
    misspelt = good.replace('"deployment"', '"deploymnet"')
    result = runner.invoke(app, ["expr", "a == 1", "--props", "@-"], input=misspelt)
    assert result.exit_code == EXIT_INVALID
    assert result.stderr.startswith(
        "error: <stdin>:7:3: deploymnet: unknown key 'deploymnet'; did you mean 'deployment'?"
    )
