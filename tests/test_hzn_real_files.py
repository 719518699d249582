"""Open Horizon's files as their users have them (issue 38): hzn's `$VAR` substitution from
hzn.json and the environment, service policies, requiredServices, arch synonyms, user
input files, several folders and trees. Each rule names the anax code it follows."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from placed.spec import hzn_config
from placed.spec.hzn_config import Setting, Variables, expand

from .test_hzn_files import (
    NAMESPACE_XYZ,
    archive,
    as_json,
    b64,
    compatible,
    converted,
    device_service,
    invalid,
    invoke,
    node,
    policy,
    workload,
    write,
)


@pytest.fixture(autouse=True)
def hermetic(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """hzn's files outside the project are the test's own: an empty home, no package
    configuration, no /etc/default/horizon, and none of the variables the tests use."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setattr(hzn_config, "PACKAGE_CONFIG", tmp_path / "etc" / "horizon" / "hzn.json")
    monkeypatch.setattr(hzn_config, "DEFAULTS_FILE", tmp_path / "etc" / "default" / "horizon")
    for name in ("ARCH", "HZN_ORG_ID", "SERVICE_NAME", "SERVICE_VERSION", "VERSION", "V"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv(hzn_config.DONT_SUBSTITUTE, raising=False)
    yield home


def folder(tmp_path: Path, name: str, files: dict[str, Any]) -> Path:
    directory = tmp_path / name
    directory.mkdir(parents=True, exist_ok=True)
    for file, data in files.items():
        write(directory, file, data)
    return directory


def hzn_json(metadata: dict[str, str] | None = None, **settings: str) -> dict[str, Any]:
    return {**settings, "MetadataVars": metadata or {}}


# A service as the examples write it: everything from variables.
TEMPLATE_SERVICE = {
    "org": "$HZN_ORG_ID",
    "label": "$SERVICE_NAME for $ARCH",
    "url": "$SERVICE_NAME",
    "version": "${SERVICE_VERSION}",
    "arch": "$ARCH",
    "deployment": {"services": {"$SERVICE_NAME": {"image": "img_$ARCH:$SERVICE_VERSION"}}},
}
TEMPLATE_POLICY = {
    "label": "$SERVICE_NAME Deployment Policy",
    "service": {
        "name": "$SERVICE_NAME",
        "org": "$HZN_ORG_ID",
        "arch": "*",
        "serviceVersions": [{"version": "$SERVICE_VERSION"}],
    },
    "constraints": ["purpose == web"],
}
PROJECT = hzn_json({"SERVICE_NAME": "web", "SERVICE_VERSION": "1.2.3"}, HZN_ORG_ID="myorg")


def project(tmp_path: Path, name: str = "horizon", files: dict[str, Any] | None = None) -> Path:
    """A folder as the examples have one, `files` replacing or adding to its files."""
    every = {
        "hzn.json": PROJECT,
        "service.definition.json": TEMPLATE_SERVICE,
        "deployment.policy.json": TEMPLATE_POLICY,
        **(files or {}),
    }
    return folder(tmp_path, name, every)


# -- variables (cli/cliconfig/config.go, cli/cliutils/cliutils.go ReadJsonFile) -------------


def test_variables_come_from_the_hzn_json_beside_the_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ARCH", "amd64")  # as the examples' Makefiles export it
    document = converted(project(tmp_path))
    service = workload(document, "deployment")["service"]
    # convert writes the values hzn substitutes: MetadataVars and the HZN_ORG_ID setting.
    assert (service["url"], service["org"], service["version"], service["arch"]) == (
        "web",
        "myorg",
        "1.2.3",
        "amd64",
    )


def test_the_environment_wins_then_the_users_file_then_the_project(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, hermetic: Path
) -> None:
    # SetEnvVars never overrides what the environment has; the project's file is read
    # after ~/.hzn/hzn.json and so only fills what is still unset.
    monkeypatch.setenv("ARCH", "arm64")
    (hermetic / ".hzn").mkdir()
    write(hermetic / ".hzn", "hzn.json", hzn_json({"SERVICE_VERSION": "2.0.0"}))
    monkeypatch.setenv("SERVICE_NAME", "from-env")
    document = converted(project(tmp_path))
    service = workload(document, "deployment")["service"]
    assert (service["url"], service["version"], service["arch"]) == ("from-env", "2.0.0", "arm64")


def test_later_system_files_win_over_earlier_ones(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, hermetic: Path
) -> None:
    # SetEnvVarsFromConfigFiles: the package's hzn.json, then /etc/default/horizon, then
    # the user's, each compared with the original environment: the last one wins.
    package = tmp_path / "etc" / "horizon" / "hzn.json"
    package.parent.mkdir(parents=True)
    package.write_text(json.dumps(hzn_json({"ARCH": "s390x", "SERVICE_VERSION": "9.0.0"})))
    defaults = tmp_path / "etc" / "default" / "horizon"
    defaults.parent.mkdir(parents=True)
    defaults.write_text("# agent settings\nARCH=ppc64le\nHZN_EXCHANGE_URL=http://x/v1\n")
    document = converted(project(tmp_path))
    service = workload(document, "deployment")["service"]
    # /etc/default/horizon over the package's; the project's value loses to both.
    assert (service["arch"], service["version"]) == ("ppc64le", "9.0.0")


def test_an_hzn_setting_wins_over_metadata_vars_of_the_same_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ARCH", "amd64")
    config = hzn_json({"SERVICE_NAME": "web", "SERVICE_VERSION": "1.2.3", "HZN_ORG_ID": "meta"})
    config["HZN_ORG_ID"] = "setting"
    document = converted(project(tmp_path, files={"hzn.json": config}))
    assert workload(document, "deployment")["service"]["org"] == "setting"


def test_an_undefined_variable_is_named_with_where_hzn_looked(tmp_path: Path) -> None:
    # ARCH is set nowhere: hzn substitutes "" (os.Expand) and warns; the arch then empty
    # is the error, at the line and column of "$ARCH" as written.
    directory = project(tmp_path)
    stderr = invalid("validate", directory)
    path = directory / "service.definition.json"
    assert f"{path}:6:11: arch: may not be empty ($ARCH is defined nowhere hzn looks (" in stderr
    assert "the environment, ~/.hzn/hzn.json, " in stderr
    assert f'{directory / "hzn.json"}), so hzn substitutes "" as placed did)' in stderr


def test_a_variable_that_is_not_a_version_is_named_with_its_origin(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ARCH", "amd64")
    config = hzn_json({"SERVICE_NAME": "web", "SERVICE_VERSION": "1.x"}, HZN_ORG_ID="myorg")
    directory = project(tmp_path, files={"hzn.json": config})
    stderr = invalid("check", directory)
    assert (
        f"{directory / 'service.definition.json'}:5:14: version: '1.x' is not a version (1 to 3 "
        f"dot-separated numbers, such as 1.2.3) ($SERVICE_VERSION is '1.x' from "
        f"{directory / 'hzn.json'} (MetadataVars))"
    ) in stderr


def test_an_unused_undefined_variable_is_a_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ARCH", "amd64")
    service = {**TEMPLATE_SERVICE, "description": "built by $BUILDER /* $IN_A_COMMENT */"}
    data = as_json("validate", project(tmp_path, files={"service.definition.json": service}))
    warnings = [w["message"] for w in data["warnings"] if w["code"] == "undefined-variable"]
    assert len(warnings) == 1 and warnings[0].startswith("$BUILDER is defined nowhere hzn looks")
    # Comments go before substitution, as in ReadJsonFile.
    assert "IN_A_COMMENT" not in json.dumps(data)


def test_hzn_dont_subst_env_vars_turns_substitution_off(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ARCH", "amd64")
    monkeypatch.setenv("HZN_DONT_SUBST_ENV_VARS", "1")
    stderr = invalid("validate", project(tmp_path))
    assert "version: '${SERVICE_VERSION}' is not a version" in stderr


def test_a_value_that_breaks_the_json_is_placed_where_it_was_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ARCH", "amd64")
    config = hzn_json({"SERVICE_NAME": 'we"b', "SERVICE_VERSION": "1.0.0"}, HZN_ORG_ID="o")
    directory = project(tmp_path, files={"hzn.json": config})
    stderr = invalid("validate", directory)
    # Line 4 holds "label": "$SERVICE_NAME for $ARCH": the quote hzn substitutes there
    # ends the text early; the column is that of the $ as written.
    assert f"{directory / 'deployment.policy.json'}:2:13: not valid JSON: " in stderr
    assert "where a variable's value stands: $SERVICE_NAME is 'we\"b' from " in stderr


def test_hzn_json_is_checked_as_hzn_reads_it(tmp_path: Path) -> None:
    directory = project(tmp_path, files={"hzn.json": '{\n  "MetaDataVars": {}\n}\n'})
    assert (
        f"{directory / 'hzn.json'}:2:3: MetaDataVars: unknown key 'MetaDataVars'; did you mean "
        "'MetadataVars'?"
    ) in invalid("validate", directory)
    write(directory, "hzn.json", '{"MetadataVars": {\n  "N": 1}}')
    # map[string]string: hzn cannot decode the file.
    assert f"{directory / 'hzn.json'}:2:8: MetadataVars.N: expected a text, got 1" in invalid(
        "validate", directory
    )


def _variables(**values: str) -> Variables:
    return Variables({k: Setting(v, "test") for k, v in values.items()}, ("the test",))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # Go's os.Expand, case by case (src/os/env.go getShellName).
        ("$A-$B", "a-b"),
        ("${A}x$Ax", "ax"),
        ("$$ and $1 and $*", " and  and "),  # one-character shell names, all undefined
        ("${}", ""),  # bad syntax: eaten
        ("x${A", "xA"),  # an unclosed ${: "${" eaten
        ("cost: 5$", "cost: 5$"),  # a $ at the end stays
        ("$ é $é", "$ é $é"),  # a $ before what names nothing stays
        ("${A B}", ""),  # any name inside braces
    ],
)
def test_substitution_is_go_os_expand(text: str, expected: str) -> None:
    assert expand(text, _variables(A="a", B="b")).text == expected


def test_positions_map_back_to_the_text_as_written() -> None:
    expanded = expand('{"a": "$LONG", "b": 1}', _variables(LONG="x" * 20))
    at = expanded.text.index('"b"')
    assert expanded.written_offset(at) == len('{"a": "$LONG", ')
    # Inside a value: the $ that produced it.
    assert expanded.written_offset(expanded.text.index("x") + 5) == len('{"a": "')


# -- service policies (compcheck/policy_check.go) ----------------------------------------


NODES = {
    "myorg/big": node(arch="amd64"),
    "myorg/small": node(arch="amd64"),
}


def node_policy(*properties: tuple[str, Any], constraints: list[str] | None = None) -> Any:
    return {
        "properties": [{"name": n, "value": v} for n, v in properties],
        "constraints": constraints or [],
    }


def policy_folder(tmp_path: Path, service_policy: Any, **more: Any) -> Path:
    return folder(
        tmp_path,
        "horizon",
        {
            "nodes.json": NODES,
            "big.node.policy.json": node_policy(("purpose", "web"), ("memory", 4096)),
            "small.node.policy.json": node_policy(
                ("purpose", "web"), ("memory", 512), constraints=["tier == gold"]
            ),
            "service.definition.json": device_service(),
            "deployment.policy.json": policy(constraints=["purpose == web"]),
            "service.policy.json": service_policy,
            **more,
        },
    )


def test_a_service_policy_constraint_joins_the_deployment_policys(tmp_path: Path) -> None:
    directory = policy_folder(tmp_path, {"properties": [], "constraints": ["memory >= 1024"]})
    check = as_json("check", directory)
    assert compatible(check) == {"deployment": {"big"}}
    rows = {t["target"]: t for t in check["workloads"][0]["targets"]}
    # Reported under the service, as hzn deploycheck keys it (org/url_version_arch): the
    # service policy's constraint on the node, the node's on the merged properties.
    assert rows["small"]["reason"] == {
        "myorg/com.example.web_1.0.0_amd64": "fails memory >= 1024 (memory is 512.0); "
        "requires tier == gold of the workload (tier is absent)"
    }
    # Without the service policy, small is refused only for its own constraint.
    (directory / "service.policy.json").unlink()
    rows = {t["target"]: t for t in as_json("check", directory)["workloads"][0]["targets"]}
    assert rows["small"]["reason"] == {
        "myorg/com.example.web_1.0.0_amd64": "requires tier == gold of the workload (tier is "
        "absent)"
    }


def test_a_node_constraint_is_judged_against_the_service_policys_properties(
    tmp_path: Path,
) -> None:
    directory = policy_folder(
        tmp_path, {"properties": [{"name": "tier", "value": "gold"}], "constraints": []}
    )
    assert compatible(as_json("check", directory)) == {"deployment": {"big", "small"}}
    # Without the service policy, small's `tier == gold` fails.
    (directory / "service.policy.json").unlink()
    assert compatible(as_json("check", directory)) == {"deployment": {"big"}}


def test_the_deployment_policy_wins_a_property_clash(tmp_path: Path) -> None:
    # MergePolicyWithExternalPolicy adds the service's properties without replacing the
    # deployment policy's (PropertyList.MergeWith, replaceExisting false).
    deployment = policy(
        constraints=["purpose == web"], properties=[{"name": "tier", "value": "silver"}]
    )
    directory = policy_folder(
        tmp_path,
        {"properties": [{"name": "tier", "value": "gold"}]},
        **{"deployment.policy.json": deployment},
    )
    assert compatible(as_json("check", directory)) == {"deployment": {"big"}}


def test_hzn_overrides_a_service_policys_built_ins(tmp_path: Path) -> None:
    # ServiceAddPolicy replaces openhorizon.service.*; SetServicePolicyPrivilege sets
    # openhorizon.allowPrivileged from the deployment: accepted, their values the service's.
    service_policy = {
        "properties": [
            {"name": "openhorizon.service.url", "value": "other"},
            {"name": "openhorizon.allowPrivileged", "value": True},
        ]
    }
    document = converted(policy_folder(tmp_path, service_policy))
    assert "properties" not in workload(document, "deployment")["service"]


def test_a_pattern_takes_no_service_policy(tmp_path: Path) -> None:
    # deployCompatible checks a pattern's privilege, namespace and user input, no policy.
    pattern = {
        "name": "p",
        "services": [
            {
                "serviceUrl": "com.example.web",
                "serviceOrgid": "myorg",
                "serviceArch": "amd64",
                "serviceVersions": [{"version": "1.0.0"}],
            }
        ],
    }
    document = converted(
        policy_folder(tmp_path, {"constraints": ["memory >= 1024"]}, **{"pattern.json": pattern})
    )
    assert "constraints" in workload(document, "deployment")["service"]
    assert "constraints" not in workload(document, "pattern")["services"][0]


# -- requiredServices (common/service_file.go ValidateService, agbot resolution) ----------


def dependency(url: str, versions: str = "[1.0.0,INFINITY)", arch: str = "$ARCH") -> Any:
    return {"url": url, "org": "myorg", "versionRange": versions, "arch": arch}


def top_service(*requires: Any, privileged: bool = False) -> Any:
    service = device_service(arch="$ARCH")
    service["requiredServices"] = list(requires)
    return service


def base_service(version: str = "1.0.0", privileged: bool = False) -> Any:
    service = device_service(version=version, arch="$ARCH", privileged=privileged)
    service["url"] = "com.example.base"
    return service


def test_a_dependency_in_another_folder_is_found_when_both_are_given(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ARCH", "amd64")
    web = folder(
        tmp_path,
        "web/horizon",
        {
            "service.definition.json": top_service(dependency("com.example.base")),
            "deployment.policy.json": policy(),
        },
    )
    base = folder(tmp_path, "base/horizon", {"service.definition.json": base_service()})
    folder(tmp_path, "base2/horizon", {"service.definition.json": base_service("1.5.0")})
    alone = invalid("validate", web)
    assert (
        f"{web / 'service.definition.json'}:9:5: requiredServices[0]: requires myorg/"
        "com.example.base [1.0.0,INFINITY) for arch amd64, which no file given defines"
    ) in alone
    both = converted(web, base)
    required = workload(both, "web-deployment")["service"]["requires"]
    assert [(r["url"], r["version"]) for r in required] == [("com.example.base", "1.0.0")]
    # The tree: every project beneath, the highest version in the range.
    tree = converted(tmp_path)
    required = workload(tree, "web-deployment")["service"]["requires"]
    assert [(r["url"], r["version"]) for r in required] == [("com.example.base", "1.5.0")]


def test_a_dependency_outside_the_range_is_not_taken(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ARCH", "amd64")
    directory = folder(
        tmp_path,
        "horizon",
        {
            "web.service.definition.json": top_service(
                dependency("com.example.base", "[2.0.0,3.0.0)")
            ),
            "base.service.definition.json": base_service("3.0.0"),
        },
    )
    assert "requires myorg/com.example.base [2.0.0,3.0.0) for arch amd64" in invalid(
        "validate", directory
    )
    write(
        directory,
        "web.service.definition.json",
        top_service(dependency("com.example.base", "[2.0.0, 3.0.0)")),
    )
    assert "whitespace is not permitted in a version range" in invalid("validate", directory)


def test_a_dependency_must_fit_the_device_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # ServicesRequirePrivilege counts the dependencies: a device that does not allow
    # privileged mode refuses a service whose dependency needs it.
    monkeypatch.setenv("ARCH", "amd64")
    directory = folder(
        tmp_path,
        "horizon",
        {
            "nodes.json": {"myorg/dev": node(arch="x86_64"), "myorg/kube": node("cluster")},
            "web.service.definition.json": {
                **top_service(dependency("com.example.base")),
                "clusterDeployment": {"operatorYamlArchive": ""},
            },
            "base.service.definition.json": base_service(privileged=True),
            "web.deployment.policy.json": policy(),
        },
    )
    check = as_json("check", directory)
    rows = {t["target"]: t for t in check["workloads"][0]["targets"]}
    assert rows["dev"]["reason"] == {
        "myorg/com.example.web_1.0.0_amd64": "does not allow privileged mode, which "
        "myorg/com.example.base (which myorg/com.example.web requires) needs "
        "(openhorizon.allowPrivileged is false)"
    }
    # An edge cluster does not run what the service requires (the agbot drops it).
    assert compatible(check) == {"web": {"kube"}}
    write(directory, "dev.node.policy.json", node_policy(("openhorizon.allowPrivileged", True)))
    assert compatible(as_json("check", directory)) == {"web": {"dev", "kube"}}


def test_a_cluster_service_may_not_require_services(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ARCH", "amd64")
    cluster = {
        **top_service(dependency("com.example.base")),
        "clusterDeployment": {"operatorYamlArchive": b64(archive(("ns.yaml", NAMESPACE_XYZ)))},
    }
    del cluster["deployment"]
    directory = folder(
        tmp_path,
        "horizon",
        {"web.service.definition.json": cluster, "base.service.definition.json": base_service()},
    )
    assert "'requiredServices' is not supported for cluster type service" in invalid(
        "validate", directory
    )


# -- arch synonyms (config/archsynonyms.go, anax.json ArchSynonyms) ------------------------


@pytest.mark.parametrize(
    ("node_arch", "service_arch"), [("x86_64", "amd64"), ("arm64", "aarch64"), ("armhf", "arm")]
)
def test_arch_synonyms_are_the_same_architecture(
    tmp_path: Path, node_arch: str, service_arch: str
) -> None:
    directory = folder(
        tmp_path,
        "horizon",
        {
            "nodes.json": {"myorg/n": node(arch=node_arch), "myorg/other": node(arch="s390x")},
            "service.definition.json": device_service(arch=service_arch),
            "deployment.policy.json": policy(arch=service_arch),
        },
    )
    assert compatible(as_json("check", directory)) == {"deployment": {"n"}}


def test_the_arch_built_in_is_the_canonical_one(tmp_path: Path) -> None:
    directory = folder(
        tmp_path,
        "horizon",
        {
            "nodes.json": {"myorg/n": node(arch="x86_64")},
            "service.definition.json": device_service(),
            "deployment.policy.json": policy(constraints=["openhorizon.arch == amd64"]),
        },
    )
    assert compatible(as_json("check", directory)) == {"deployment": {"n"}}


# -- what else the folders hold -----------------------------------------------------------


def test_user_input_files_are_accepted_and_checked_for_keys(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ARCH", "amd64")
    old_form = {"services": [{"org": "$HZN_ORG_ID", "url": "$SERVICE_NAME", "variables": {}}]}
    directory = project(tmp_path, files={"userinput.json": old_form})
    assert as_json("validate", directory)["valid"] is True
    new_form = [{"serviceOrgid": "o", "serviceUrl": "u", "inputs": [{"name": "a", "value": 1}]}]
    write(directory, "userinput.json", new_form)
    assert as_json("validate", directory)["valid"] is True
    write(directory, "userinput.json", {"services": [{"url": "u", "variabels": {}}]})
    assert "unknown key 'variabels'; did you mean 'variables'?" in invalid("validate", directory)


def test_a_format_hzn_dropped_in_2018_is_refused_with_its_reason(tmp_path: Path) -> None:
    directory = folder(
        tmp_path,
        "horizon",
        {
            "workload.definition.json": {
                "workloadUrl": "https://x/w",
                "version": "1",
                "workloads": [],
            }
        },
    )
    assert (
        f"{directory / 'workload.definition.json'}:1:1: a workload definition (workloadUrl, "
        "apiSpec, workloads), a format hzn has not read since 2018"
    ) in invalid("validate", directory)


def test_a_folder_with_only_hzn_json(tmp_path: Path) -> None:
    directory = folder(tmp_path, "horizon", {"hzn.json": PROJECT})
    assert "holds only hzn.json, which gives variables to the files beside it" in invalid(
        "validate", directory
    )


def test_several_folders_name_their_workloads_and_nodes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ARCH", "amd64")
    lone = node_policy(("purpose", "web"))
    a = project(tmp_path, "a/horizon", files={"node.policy.json": lone})
    b = project(
        tmp_path,
        "b/horizon",
        files={
            "hzn.json": hzn_json(
                {"SERVICE_NAME": "api", "SERVICE_VERSION": "1.0.0"}, HZN_ORG_ID="o"
            ),
            "node.policy.json": lone,
        },
    )
    check = as_json("check", a, b)
    assert compatible(check) == {
        "a-deployment": {"a-node", "b-node"},
        "b-deployment": {"a-node", "b-node"},
    }


def test_a_pattern_for_all_arches_is_planned_for_those_given(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ARCH", "amd64")
    reference = {
        "serviceUrl": "$SERVICE_NAME",
        "serviceOrgid": "$HZN_ORG_ID",
        "serviceVersions": [{"version": "$SERVICE_VERSION"}],
    }
    pattern = {
        "name": "pattern-$SERVICE_NAME",
        "services": [{**reference, "serviceArch": arch} for arch in ("amd64", "arm")],
    }
    directory = project(tmp_path, files={"pattern-all-arches.json": pattern})
    data = as_json("validate", directory)
    [warning] = [w for w in data["warnings"] if w["code"] == "service-definition-missing"]
    assert (
        "services[1]: no service definition for myorg/web version 1.2.3 for arch arm"
        in (warning["message"])
    )
    # With no arch's definition given, it is an error as before.
    monkeypatch.setenv("ARCH", "s390x")
    assert "no service definition for myorg/web version 1.2.3 for arch amd64" in invalid(
        "validate", directory
    )


def test_convert_lists_the_warnings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ARCH", "amd64")
    service = {**TEMPLATE_SERVICE, "description": "$BUILDER"}
    result = invoke("convert", project(tmp_path, files={"service.definition.json": service}))
    assert result.exit_code == 0
    assert "# warning [undefined-variable]: $BUILDER is defined nowhere hzn looks" in result.stdout
    assert "warning [undefined-variable]: $BUILDER" in result.stderr


def test_the_readme_example_project(tmp_path: Path) -> None:
    tree = Path(__file__).resolve().parent.parent / "examples" / "openhorizon-project"
    check = as_json("check", tree)
    assert compatible(check) == {"hello-deployment": {"gw1"}}
    reasons = {t["target"]: t["reason"] for t in check["workloads"][0]["targets"]}
    key = "myorg/hello_1.0.0_amd64"
    # gw2 is aarch64 (arm64); gw3 lacks the memory the service policy asks and refuses
    # the privileged broker hello requires. gw1 is x86_64, amd64 by its synonym, and its
    # `tier == gold` holds on the service policy's property.
    assert reasons["gw2"] == {
        key: "has another architecture than myorg/hello (amd64) (the node is aarch64)"
    }
    assert reasons["gw3"] == {
        key: "fails openhorizon.memory >= 2048 (openhorizon.memory is 1024.0); does not allow "
        "privileged mode, which myorg/mqtt (which myorg/hello requires) needs "
        "(openhorizon.allowPrivileged is false)"
    }
    # The native spec convert writes gives the same answers.
    native = tmp_path / "native.yaml"
    assert invoke("convert", tree, "--output-file", native).exit_code == 0
    assert compatible(as_json("check", native)) == compatible(check)
