"""Open Horizon's own JSON documents (issue 11), read unchanged and converted into one
native spec document, which then goes through the native pipeline so that every native
check applies.

The documents, as hzn prints or takes them (field spellings are anax's JSON tags):

- the node list, `hzn exchange node list -l`: {"org/node": exchange.Device}
  (exchange/node.go: nodeType, arch, clusterNamespace, isNamespaceScoped, pattern);
- node policies, `hzn policy new` (exchangecommon/nodepolicy.go: properties, constraints,
  deployment, management); NODE.node.policy.json is node NODE's policy;
- deployment policies, `hzn exchange deployment addpolicy -f`
  (businesspolicy/business_policy.go: service {name, org, arch, clusterNamespace,
  serviceVersions}, properties, constraints);
- patterns, `hzn exchange pattern publish -f` (common/pattern_file.go: name, org,
  clusterNamespace, services [{serviceUrl, serviceOrgid, serviceArch, serviceVersions}]);
- service definitions, `hzn exchange service publish -f` (common/service_file.go: org, url,
  version, arch, deployment, clusterDeployment), and the service list,
  `hzn exchange service list -l` ({"org/id": exchange.ServiceDefinition}, exchange/service.go,
  where deployment and clusterDeployment are JSON text), with their requiredServices;
- service policies, `hzn exchange service addpolicy -f` (exchangecommon/servicepolicy.go:
  properties, constraints), each the policy of the service defined beside it;
- accepted for their keys only: hzn.json (its variables) and user input (`hzn register
  -f`, common/userinput_file.go).

Each file is read as hzn reads it, comments removed and variables substituted
(placed.spec.hzn_files, placed.spec.hzn_config). A key the real tool does not know is an
error with a did-you-mean, where hzn (Go's encoding/json) would ignore it; the keys it
knows and placed does not use are accepted and ignored (placed.spec.hzn_keys, one table
per document).

Errors in these files name the hzn file and line:column. Positions come from
placed.spec.source, computed only when a problem needs one (a big node list would
otherwise be parsed twice), and the values from json itself (YAML reads JSON's 1e5 as text).
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import difflib
import io
import json
import os
import re
import tarfile
import zlib
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from placed.model import Notice, Spec
from placed.model.inventory import DEFAULT_AGENT_NAMESPACE
from placed.model.properties import ALLOW_PRIVILEGED, PropertyError, make_property, parse_version
from placed.policy.builtins import SERVICE_BUILTINS, read_only_reason
from placed.policy.expressions.syntax import Range
from placed.spec import hzn_config, hzn_keys, openhorizon
from placed.spec.errors import Problem, SpecError, quoted
from placed.spec.hzn_files import HznFile, LongNumber, bounded_int, fail, has_documents, read_all
from placed.spec.load import load_specs_text
from placed.spec.source import MAX_DIGITS, dotted
from placed.spec.source import Path as KeyPath

# Bounds on an operator archive: rarely more than a megabyte (the files' own are in
# placed.spec.hzn_files).
MAX_ARCHIVE_BYTES = 16 * 1024 * 1024  # an operator archive, compressed
MAX_ARCHIVE_UNPACKED = 32 * 1024 * 1024
MAX_ARCHIVE_MEMBERS = 1000

# How a node registered with a pattern is tied to it. In Open Horizon such a node runs only
# its pattern's services and no deployment policy reaches it, and a pattern reaches only
# the nodes registered with it. The native spec has no such link, so the converter writes
# it as properties and constraints, both ways round: the node gets the property
# `hzn.pattern: ID` and the constraint `hzn.pattern == "ID"` (which only a workload carrying
# the same property satisfies, so deployment policies, which lack it, are refused); the
# pattern's workload gets the same property and constraint (which only a node registered
# with the pattern satisfies, since an absent property makes a comparison false).
PATTERN_PROPERTY = "hzn.pattern"

# Node built-ins a node policy carries as `hzn exchange node listpolicy` prints it
# (externalpolicy/builtin_properties.go). The native spec sets these itself from the
# location's fields, so they become those fields instead of properties.
_CPU, _MEMORY = "openhorizon.cpu", "openhorizon.memory"
_ARCH, _HARDWARE_ID = "openhorizon.arch", "openhorizon.hardwareId"
_K8S_VERSION = "openhorizon.kubernetesVersion"
_K8S_NAMESPACE = "openhorizon.kubernetesNamespace"
_K8S_SCOPED = "openhorizon.kubernetesNamespaceScoped"
_NODE_FIELDS = (_CPU, _MEMORY, _ARCH, _HARDWARE_ID, _K8S_VERSION, _K8S_NAMESPACE, _K8S_SCOPED)
_CLUSTER_FIELDS = (_K8S_VERSION, _K8S_NAMESPACE, _K8S_SCOPED)

MAX_SNIFFED = 32 * 1024 * 1024  # a file looked into to tell whether it is hzn's
_NODE_KEYS = {"nodeType", "isNamespaceScoped", "registeredServices", "publicKey", "pattern"}
_NODE_POLICY_KEYS = set(hzn_keys.NODE_POLICY.known)
_NODE_POLICY_SECTIONS = {"properties", "constraints", "deployment", "management"}
_SHAPES = (
    "the node list (hzn exchange node list -l), a node policy (hzn policy new), a "
    "deployment policy (hzn exchange deployment addpolicy), a pattern (hzn exchange "
    "pattern publish), a service definition (hzn exchange service publish) or the "
    "service list (hzn exchange service list -l)"
)
_MANIFEST_KIND = re.compile(r"""kind["']?\s*:\s*["']?(Namespace|Deployment)\b""")
_YAML_SEPARATOR = re.compile(r"^---.*$", re.MULTILINE)


# -- what each document is ---------------------------------------------------------------


def _shape(data: Any, name: str) -> str | None:
    """Which hzn document `data` is, by its keys (and for policies, user input and hzn.json,
    the file's name)."""
    lowered = name.lower()
    if isinstance(data, list):
        # The registration input file in its list form (common/userinput_file.go).
        if lowered.endswith("userinput.json") or (
            data and all(isinstance(item, dict) and "serviceUrl" in item for item in data)
        ):
            return "user-inputs"
        return None
    if not isinstance(data, dict):
        return None
    if lowered == hzn_config.CONFIG_NAME:
        return "config"
    if "workloadUrl" in data:
        return "old-workload" if "workloadVersions" not in data else "old-pattern-entry"
    if "specRef" in data and "workloads" in data:
        return "old-microservice"
    workloads = data.get("workloads")
    if (
        "services" not in data
        and isinstance(workloads, list)
        and any(isinstance(w, dict) and "workloadUrl" in w for w in workloads)
    ):
        return "old-pattern"
    if isinstance(data.get("service"), dict):
        return "deployment-policy"
    services = data.get("services")
    if (
        isinstance(services, list)
        and "url" not in data
        and all(isinstance(s, dict) and "serviceUrl" in s for s in services)
        and not lowered.endswith("userinput.json")
    ):
        return "pattern"
    if lowered.endswith("userinput.json") or (
        set(data) <= {"global", "services"}
        and isinstance(services, list)
        and all(isinstance(s, dict) and "variables" in s for s in services)
    ):
        return "user-input"
    if "url" in data and "version" in data:
        return "service"
    if data and all(isinstance(value, dict) for value in data.values()):
        values = list(data.values())
        if all(_NODE_KEYS & set(value) for value in values):
            return "nodes"
        if all("url" in value and "version" in value for value in values):
            return "services"
    if lowered.endswith("service.policy.json"):
        return "service-policy"
    # A node policy is one by its file's name, or by its keys (a misspelt one among them is
    # then reported as such, not as an unknown document).
    if lowered.endswith("node.policy.json") or (
        set(data) & _NODE_POLICY_SECTIONS
        and len(set(data) - _NODE_POLICY_KEYS) <= len(set(data) & _NODE_POLICY_KEYS)
    ):
        return "node-policy"
    return None


# Documents hzn has not read since anax e7fbc8d0 (2018-10-10, "Issue 683 - remove workloads
# and microservices"): `hzn exchange microservice publish` and `hzn exchange workload
# publish` are gone, and `hzn exchange service publish` has no specRef, workloadUrl,
# apiSpec or workloads.
_OLD_FORMATS = {
    "old-microservice": "a microservice definition (specRef, workloads)",
    "old-workload": "a workload definition (workloadUrl, apiSpec, workloads)",
    "old-pattern": "a pattern of workloads (workloads[].workloadUrl)",
    "old-pattern-entry": "a pattern's workload (workloadUrl, workloadVersions)",
}
# Documents read for nothing but their keys: user input does not decide where a service
# goes, and hzn.json gives the other files their variables.
_ACCEPTED = {"config", "user-input", "user-inputs"}


def looks_like_openhorizon(paths: list[Path]) -> bool:
    """Whether `paths` are Open Horizon documents: a directory is when it holds .json
    files or hzn projects beneath, files are when one of them has the shape of an hzn
    document."""
    if all(path.is_dir() for path in paths):
        return bool(paths) and all(has_documents(path) for path in paths)
    for path in paths:
        if path.is_dir():
            continue
        try:
            with path.open("rb") as handle:
                raw = handle.read(MAX_SNIFFED + 1)
            if len(raw) > MAX_SNIFFED:
                continue
            data = json.loads(hzn_config.blank_comments(raw.decode("utf-8-sig")))
        except (OSError, ValueError, RecursionError):
            continue
        if _shape(data, path.name) not in (None, "service-policy", *_ACCEPTED):
            return True
    return False


# -- typed checks at their place ---------------------------------------------------------


def _text(
    file: HznFile, owner: dict[str, Any], key: str, path: KeyPath, required: bool = False
) -> str:
    value = owner.get(key)
    if value is None:
        if required:
            file.add(f"missing required key {quoted(key)}", path)
        return ""
    if not isinstance(value, str):
        file.add(f"expected a string, got {_kind(value)}", (*path, key))
        return ""
    if required and not value.strip():
        file.add("may not be empty", (*path, key))
    return value


def _mapping(file: HznFile, owner: dict[str, Any], key: str, path: KeyPath) -> dict[str, Any]:
    value = owner.get(key)
    if value is None:
        return {}
    if not isinstance(value, dict):
        file.add(f"expected an object, got {_kind(value)}", (*path, key))
        return {}
    return value


def _list(file: HznFile, owner: dict[str, Any], key: str, path: KeyPath) -> list[Any]:
    value = owner.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        file.add(f"expected a list, got {_kind(value)}", (*path, key))
        return []
    return value


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return f"a boolean {str(value).lower()}"
    if isinstance(value, int | float):
        return f"a number {quoted(value)}"
    if isinstance(value, str):
        return f"a string {quoted(value)}"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return "null"


@dataclass
class _Properties:
    """A property list checked at its place: the entries to write, and the node built-ins
    it carried (which become location fields)."""

    entries: dict[str, dict[str, Any]] = field(default_factory=dict)
    builtins: dict[str, tuple[Any, KeyPath]] = field(default_factory=dict)


def _properties(file: HznFile, owner: dict[str, Any], path: KeyPath, who: str) -> _Properties:
    found = _Properties()
    for index, item in enumerate(_list(file, owner, "properties", path)):
        where = (*path, "properties", index)
        if not isinstance(item, dict):
            file.add(f"expected {{name, value, type}}, got {_kind(item)}", where)
            continue
        name, value, declared = item.get("name"), item.get("value"), item.get("type")
        if not isinstance(name, str) or not name.strip():
            file.add("a property needs a non-empty name", where)
            continue
        if declared == "":
            declared = None  # Open Horizon's "undeclared" (externalpolicy/property_list.go)
        try:
            make_property(name, value, declared)
        except PropertyError as error:
            file.add(error.message, (*where, "value"))
            continue
        if who == "node" and name in _NODE_FIELDS:
            found.builtins[name] = (value, (*where, "value"))
            continue
        if who == "service" and (name in SERVICE_BUILTINS or name == ALLOW_PRIVILEGED):
            # hzn replaces these with the service's own values: the service built-ins when
            # it adds the policy (cli/exchange/service.go ServiceAddPolicy), and privilege
            # from the deployment (compcheck/policy_check.go SetServicePolicyPrivilege).
            continue
        reason = read_only_reason(name, who)
        if reason:
            file.add(reason, (*where, "name"))
        elif name in found.entries:
            file.add(f"property {quoted(name)} is given twice", (*where, "name"))
        else:
            entry: dict[str, Any] = {"name": name, "value": value}
            if name == ALLOW_PRIVILEGED and isinstance(value, str):
                # Open Horizon turns "true"/"false" into a boolean here
                # (externalpolicy/external_policy.go ValidateAndNormalize).
                entry["value"] = value.strip().lower() == "true"
            elif declared is not None:
                entry["type"] = declared
            found.entries[name] = entry
    return found


def _constraints(file: HznFile, owner: dict[str, Any], path: KeyPath) -> list[str]:
    raw = _list(file, owner, "constraints", path)
    bad = [i for i, text in enumerate(raw) if not isinstance(text, str)]
    for index in bad:
        file.add(f"expected a string, got {_kind(raw[index])}", (*path, "constraints", index))
    if bad:
        return []
    return list(openhorizon.constraints(raw, (*path, "constraints"), file.out))


def _version(file: HznFile, text: str, path: KeyPath) -> tuple[int, int, int] | None:
    parsed = parse_version(text)
    if parsed is None and text:
        file.add(f"{text!r} is not a version (1 to 3 dot-separated numbers, such as 1.2.3)", path)
    return parsed


# -- service definitions -----------------------------------------------------------------


@dataclass
class _Dependency:
    """One of a service's requiredServices (exchangecommon.ServiceDependency)."""

    url: str
    org: str
    versions: Range
    written: str  # the range as the file gives it
    arch: str
    path: KeyPath


@dataclass
class _Definition:
    url: str
    org: str  # empty when the publish file leaves it to hzn's -o
    version: str
    key: tuple[int, int, int]
    arch: str
    runs_on: list[str]
    privileged: bool
    namespace: str | None
    file: HznFile
    path: KeyPath = ()
    publish: bool = False  # a `hzn exchange service publish` file, not the exchange's copy
    requires: list[_Dependency] = field(default_factory=list)
    # Its service policy (`hzn exchange service addpolicy`), from the folder it is in.
    policy: HznFile | None = None
    properties: list[dict[str, Any]] = field(default_factory=list)
    constraints: list[str] = field(default_factory=list)

    @property
    def name(self) -> str:
        return f"{self.org}/{self.url}" if self.org else self.url


def _definition(
    file: HznFile,
    data: dict[str, Any],
    path: KeyPath,
    org: str,
    notices: list[Notice],
    publish: bool = False,
) -> _Definition | None:
    """A service definition; `publish` when it is a `hzn exchange service publish` file
    rather than what the exchange keeps. What it warns about goes to `notices`."""
    if publish:
        _publishable(file, data, path)
    url = _text(file, data, "url", path, required=True)
    version = _text(file, data, "version", path, required=True)
    arch = _text(file, data, "arch", path, required=True)
    org = org or _text(file, data, "org", path)
    key = _version(file, version, (*path, "version"))
    deployment = _json_field(file, data, "deployment", path)
    cluster = _json_field(file, data, "clusterDeployment", path)
    requires = _required_services(file, data, path)
    if not url or not arch or key is None:
        return None
    # A device runs a service with a `deployment`, a cluster one with a `clusterDeployment`
    # (compcheck/comp_check.go CheckTypeCompatibility; empty means null, "" or {}).
    runs_on = [where for where, found in (("device", deployment), ("cluster", cluster)) if found]
    return _Definition(
        url=url,
        org=org,
        version=version,
        key=key,
        arch=arch,
        runs_on=runs_on,
        privileged=_privileged(deployment),
        namespace=_embedded_namespace(file, cluster, (*path, "clusterDeployment"), notices),
        file=file,
        path=path,
        publish=publish,
        requires=requires,
    )


def _required_services(file: HznFile, data: dict[str, Any], path: KeyPath) -> list[_Dependency]:
    """A definition's requiredServices, each checked at its place."""
    found = []
    for index, item in enumerate(_list(file, data, "requiredServices", path)):
        where = (*path, "requiredServices", index)
        if not isinstance(item, dict):
            file.add(
                f"expected an object with url, org, versionRange, arch, got {_kind(item)}", where
            )
            continue
        url = _text(file, item, "url", where, required=True)
        org = _text(file, item, "org", where, required=True)
        arch = _text(file, item, "arch", where)
        # ServiceDependency.GetVersionRange: versionRange, else version, else any version.
        key = "versionRange" if item.get("versionRange") else "version"
        written = _text(file, item, key, where) or "[0.0.0,INFINITY)"
        versions = _version_range(written)
        if isinstance(versions, str):
            file.add(versions, (*where, key))
        elif url and org:
            found.append(_Dependency(url, org, versions, written, arch, where))
    return found


def _version_range(text: str) -> Range | str:
    """A version range as anax reads one (semanticversion Version_Expression_Factory): a
    version v for [v,INFINITY), or [low,high) with either bracket; else what is wrong."""
    if " " in text:
        return f"{quoted(text)}: whitespace is not permitted in a version range"
    if parse_version(text) is not None:
        return Range(parse_version(text) or (0, 0, 0), True, None, False)
    if text[:1] not in "[(" or text[-1:] not in ")]" or len(text) < 2:
        return (
            f"{quoted(text)} is neither a version nor a range such as [1.0.0,INFINITY) (it "
            "must begin with [ or ( and end with ] or ))"
        )
    parts = text[1:-1].split(",")
    if len(parts) != 2 or not all(parts):
        return f"{quoted(text)}: a range holds two versions, such as [1.0.0,2.0.0)"
    low = parse_version(parts[0])
    high = None if parts[1] == "INFINITY" else parse_version(parts[1])
    if low is None or (high is None and parts[1] != "INFINITY"):
        bad = parts[0] if low is None else parts[1]
        return f"{quoted(bad)} in {quoted(text)} is not a version"
    return Range(low, text[0] == "[", high, text[-1] == "]")


def _publishable(file: HznFile, data: dict[str, Any], path: KeyPath) -> None:
    """What `hzn exchange service publish` refuses before it signs a cluster deployment
    (cli/kube_deployment/kube_deployment.go Sign): publishing records the operator's
    namespace as clusterDeployment.metadata itself, so a publish file may not carry one.
    A clusterDeployment given as JSON text is pre-signed and published as it is."""
    cluster = data.get("clusterDeployment")
    if (
        isinstance(cluster, dict)
        and isinstance(cluster.get("operatorYamlArchive"), str)
        and cluster["operatorYamlArchive"]
        and "metadata" in cluster
    ):
        file.add(
            "'metadata' in 'clusterDeployment' should not be set; remove it before "
            "publishing (hzn exchange service publish refuses it: publishing records the "
            "operator's namespace there)",
            (*path, "clusterDeployment", "metadata"),
            key=True,
        )


def _json_field(file: HznFile, data: dict[str, Any], key: str, path: KeyPath) -> dict[str, Any]:
    """A deployment section: an object, or the same as JSON text (as the exchange and a
    pre-signed service keep it)."""
    value = data.get(key)
    if value is None or value == "":
        return {}
    if isinstance(value, str):
        try:
            value = json.loads(value, parse_int=bounded_int)
        except (json.JSONDecodeError, RecursionError) as error:
            file.add(f"holds text that is not valid JSON: {error}", (*path, key))
            return {}
        except LongNumber as error:
            file.add(
                f"holds a number of {len(error.number)} digits; placed takes integers of at "
                f"most {MAX_DIGITS} digits",
                (*path, key),
            )
            return {}
    if not isinstance(value, dict):
        file.add(f"expected an object (or JSON text of one), got {_kind(value)}", (*path, key))
        return {}
    return value


def _privileged(deployment: dict[str, Any]) -> bool:
    """A service needs privileged mode when one of its containers asks for it or for the
    host network (compcheck/comp_check.go DeploymentRequiresPrivilege)."""
    services = deployment.get("services")
    if not isinstance(services, dict):
        return False
    return any(
        isinstance(container, dict)
        and (container.get("privileged") is True or container.get("network") == "host")
        for container in services.values()
    )


def _embedded_namespace(
    file: HznFile, cluster: dict[str, Any], path: KeyPath, notices: list[Notice]
) -> str | None:
    """The namespace a cluster service embeds, as anax finds it
    (common/deploymentconfig.go GetClusterDeploymentMetadata): metadata.namespace, which
    `hzn exchange service publish` records, else the operator archive's own."""
    metadata = cluster.get("metadata")
    if isinstance(metadata, dict) and isinstance(metadata.get("namespace"), str):
        return metadata["namespace"] or None
    archive = cluster.get("operatorYamlArchive")
    if not isinstance(archive, str) or not archive:
        return None
    where = (*path, "operatorYamlArchive")
    raw = _archive_bytes(file, archive, where, notices)
    if raw is None:
        return None
    try:
        manifests = list(_manifests(raw))
    except ValueError as error:
        file.add(f"the operator archive {error}", where)
        return None
    return _operator_namespace(manifests)


def _archive_bytes(
    file: HznFile, archive: str, where: KeyPath, notices: list[Notice]
) -> bytes | None:
    # In a publish file the archive is a path relative to the file
    # (cli/kube_deployment/kube_deployment.go Sign); once published, base64 of the tar.gz.
    if len(archive) < 4096 and not archive.endswith("..."):
        candidate = file.path.parent / archive
        try:
            if archive.endswith((".tar.gz", ".tgz")) and not candidate.exists():
                # `hzn deploycheck --service` reads the definition without the archive
                # (cli/deploycheck readServiceFile: clusterDeployment stays as written),
                # and so does placed; only publishing reads the file.
                at = file.at(where)
                notices.append(
                    Notice(
                        "operator-archive-missing",
                        f"{file.path}{f':{at.line}:{at.column}' if at else ''}: "
                        f"{dotted(where)}: no such file {os.path.normpath(candidate)}; "
                        "read without it, as "
                        "hzn deploycheck reads it, so the namespace the operator embeds is "
                        "not known (taken as none); hzn exchange service publish reads the "
                        "archive from there and fails without it",
                    )
                )
                return None
            if candidate.is_file():
                size = candidate.stat().st_size
                if size > MAX_ARCHIVE_BYTES:
                    file.add(f"{archive} is {size} bytes; at most {MAX_ARCHIVE_BYTES}", where)
                    return None
                return candidate.read_bytes()
        except OSError as error:
            file.add(f"cannot read {archive}: {error}", where)
            return None
    if archive.endswith("..."):
        # `hzn exchange service list -l` cuts archives at 100 characters; without the
        # metadata it records at publish time, the namespace cannot be known.
        return None
    if len(archive) > MAX_ARCHIVE_BYTES * 4 // 3 + 4:
        file.add(f"the operator archive is over {MAX_ARCHIVE_BYTES} bytes", where)
        return None
    try:
        return base64.b64decode(archive, validate=True)
    except (binascii.Error, ValueError):
        file.add(
            f"{archive[:60]!r} is neither a file beside this one nor a base64 tar.gz "
            "operator archive",
            where,
        )
        return None


def _manifests(raw: bytes) -> Iterator[str]:
    """The text of each file in a tar.gz, bounded in count and size."""
    left = MAX_ARCHIVE_UNPACKED
    try:
        with tarfile.open(fileobj=io.BytesIO(raw), mode="r:gz") as archive:
            for count, member in enumerate(archive, start=1):
                if count > MAX_ARCHIVE_MEMBERS:
                    raise ValueError(f"holds more than {MAX_ARCHIVE_MEMBERS} files")
                if not member.isfile():
                    continue
                left -= member.size
                if left < 0:
                    raise ValueError(f"unpacks to more than {MAX_ARCHIVE_UNPACKED} bytes")
                extracted = archive.extractfile(member)
                if extracted is not None:
                    yield extracted.read().decode("utf-8", errors="replace")
    except (tarfile.TarError, EOFError, OSError, zlib.error) as error:
        raise ValueError(f"is not a readable tar.gz ({error})") from None


def _operator_namespace(manifests: list[str]) -> str | None:
    """anax's rule (common/deploymentconfig.go getK8sNamespaceObjectFromYaml): the name
    of a Namespace object (the last one), else the namespace of the first Deployment that
    sets one. Manifests that do not parse are skipped, as anax skips them."""
    namespace = ""
    for text in manifests:
        for piece in _YAML_SEPARATOR.split(text):
            # Only the two kinds that matter are parsed; an operator's CRDs are large.
            if not _MANIFEST_KIND.search(piece):
                continue
            try:
                found = yaml.safe_load(piece)
            except yaml.YAMLError:
                continue
            if not isinstance(found, dict) or not isinstance(found.get("metadata"), dict):
                continue
            metadata = found["metadata"]
            if found.get("kind") == "Namespace" and isinstance(metadata.get("name"), str):
                namespace = metadata["name"]
            elif (
                found.get("kind") == "Deployment"
                and not namespace
                and isinstance(metadata.get("namespace"), str)
            ):
                namespace = metadata["namespace"]
    return namespace or None


# -- the conversion ----------------------------------------------------------------------


@dataclass
class _Node:
    id: str
    key: str  # as the node list names it: org/id
    kind: str  # device or cluster
    arch: str = ""
    namespace: str = ""
    scoped: bool = False
    pattern: str = ""
    file: HznFile | None = None
    policy: HznFile | None = None


UNKNOWN_KEY = "unknown-key"
# Go's encoding/json, with which hzn reads every file, drops a key no struct field has.
_HZN_IGNORES = "hzn ignores such a key (Go's encoding/json drops a key no struct field has)"


class _Converter:
    def __init__(self, files: list[HznFile], force: bool = False) -> None:
        self.files = files
        # --force: keys hzn does not know are read as hzn reads them, ignored with a warning.
        self.force = force
        self.nodes: dict[str, _Node] = {}
        self.definitions: list[_Definition] = []
        self.workload_names: dict[str, HznFile] = {}
        self.required: dict[int, list[dict[str, Any]]] = {}
        # Warnings the files give, shown beside what placed answers (a Spec's notices).
        self.notices: list[Notice] = []

    # Problems are reported for the first file that has any, all of that file's at once.
    def check(self) -> None:
        for file in self.files:
            if file.problems:
                raise SpecError(file.source, file.problems)

    def convert(self, name: str) -> dict[str, Any]:
        shapes: dict[str, list[HznFile]] = {}
        for file in self.files:
            shape = _shape(file.data, file.path.name)
            if shape in _OLD_FORMATS:
                raise fail(
                    file.source,
                    f"{_OLD_FORMATS[shape]}, a format hzn has not read since 2018 (anax "
                    "e7fbc8d0 removed `hzn exchange microservice` and `hzn exchange "
                    "workload`); write it as a service definition (`hzn dev service new`)",
                    file.at(()),
                )
        for file in self.files:
            shape = _shape(file.data, file.path.name)
            if shape is None:
                raise fail(
                    file.source,
                    f"not an Open Horizon document placed reads; expected {_SHAPES}",
                    file.at(()),
                )
            shapes.setdefault(shape, []).append(file)
            self._unknown_keys(file, shape)
        self.check()
        for file in shapes.get("nodes", []):
            self._node_list(file)
        for file in shapes.get("service", []):
            self._add_definition(_definition(file, file.data, (), "", self.notices, publish=True))
        for file in shapes.get("services", []):
            for key, data in file.data.items():
                org = key.rpartition("/")[0]
                self._add_definition(_definition(file, data, (key,), org, self.notices))
        self._node_policies(shapes.get("node-policy", []), bool(shapes.get("nodes")))
        self.check()
        self._service_policies(shapes.get("service-policy", []))
        for definition in self.definitions:
            if definition.publish:
                # `hzn exchange service publish` resolves every dependency first
                # (common/service_file.go ValidateService).
                self._dependencies(definition)
        self.check()
        self._undefined_variables()
        patterns = self._pattern_ids(shapes.get("pattern", []))
        inventory = [self._location(node, patterns) for node in self.nodes.values()]
        workloads: list[dict[str, Any]] = []
        for file in shapes.get("deployment-policy", []):
            workloads.extend(self._policy(file))
        for file in shapes.get("pattern", []):
            workloads.extend(self._pattern(file, patterns[id(file)]))
        self.check()
        return {"version": 1, "name": name, "inventory": inventory, "workloads": workloads}

    def _unknown_keys(self, file: HznFile, shape: str) -> None:
        """Keys hzn does not know: errors, as one may be misspelt (the first problem says
        that hzn ignores them and what --force does), or under --force warnings at their
        place, as hzn reads the file. A key that differs from a known one only in case stays
        an error: hzn reads it as that key, which placed does not."""
        found = list(hzn_keys.unknown_keys(shape, file.data))
        ignored = 0
        for message, path in found:
            if self.force and not hzn_keys.is_case_variant(message):
                at = file.sources.key(path)
                where = f"{file.path}:{at.line}:{at.column}" if at else str(file.path)
                brief = message.split("; ", 1)[0] if "did you mean" not in message else message
                self.notices.append(
                    Notice(
                        UNKNOWN_KEY, f"{where}: {dotted(path)}: {brief}; ignored, as {_HZN_IGNORES}"
                    )
                )
                continue
            file.out.add(message, path, key=True, code=UNKNOWN_KEY)
            ignored += not hzn_keys.is_case_variant(message)
        if ignored:
            keys = f"{ignored} key{'s' if ignored != 1 else ''}"
            file.problems.insert(
                0,
                Problem(
                    f"{keys} hzn does not know (below): {_HZN_IGNORES}, and placed refuses "
                    f"{'it' if ignored == 1 else 'them'}, as one may be misspelt; --force "
                    "reads the file as hzn does, each such key a warning"
                ),
            )

    def _undefined_variables(self) -> None:
        """hzn's warning for each variable a file uses that nothing defines
        (cli/cliutils ExpandMapping), once per variable."""
        files: dict[str, list[HznFile]] = {}
        for file in self.files:
            for name in file.undefined:
                files.setdefault(name, []).append(file)
        for name, where in files.items():
            looked = where[0].folder.variables.where_looked()
            names = ", ".join(str(file.path) for file in where[:3])
            more = f" and {len(where) - 3} more" if len(where) > 3 else ""
            self.notices.append(
                Notice(
                    "undefined-variable",
                    f'${name} is defined nowhere hzn looks ({looked}); hzn substitutes "" '
                    f"for it, as placed did, in {names}{more}",
                )
            )

    # -- nodes ---------------------------------------------------------------------------

    def _node_list(self, file: HznFile) -> None:
        for key, data in file.data.items():
            path: KeyPath = (key,)
            node_id = key.rpartition("/")[2]
            if not node_id.strip() or any(c.isspace() for c in node_id):
                file.add(f"{quoted(key)} is not a node id", path, key=True)
                continue
            kind = _text(file, data, "nodeType", path) or "device"
            if kind not in ("device", "cluster"):
                file.add(f"got {kind!r}; expected device or cluster", (*path, "nodeType"))
            scoped = data.get("isNamespaceScoped", False)
            if not isinstance(scoped, bool):
                file.add(f"expected a boolean, got {_kind(scoped)}", (*path, "isNamespaceScoped"))
                scoped = False
            node = _Node(
                id=node_id,
                key=key,
                kind=kind,
                arch=_text(file, data, "arch", path),
                namespace=_text(file, data, "clusterNamespace", path),
                scoped=scoped,
                pattern=_text(file, data, "pattern", path),
                file=file,
            )
            first = self.nodes.get(node_id)
            if first is not None:
                file.add(
                    f"node id {node_id!r} is also {first.key!r}; placed needs ids unique "
                    "across organisations",
                    path,
                    key=True,
                )
                continue
            self.nodes[node_id] = node

    def _node_policies(self, files: list[HznFile], listed: bool) -> None:
        unnamed = Counter(f.folder.path for f in files if _policy_node(f.path.name) is None)
        for file in files:
            node_id = _policy_node(file.path.name)
            if node_id is None:
                # `hzn deploycheck --node-pol FILE` checks one node with that policy: one per
                # folder, named after the folder when several are read.
                if listed and len(self.nodes) == 1:
                    node_id = next(iter(self.nodes))
                elif listed or unnamed[file.folder.path] > 1:
                    raise fail(
                        file.source,
                        "which node's policy is this? name it NODE.node.policy.json "
                        "after the node it belongs to",
                    )
                else:
                    node_id = f"{file.folder.label}-node" if file.folder.label else "node"
            node = self.nodes.get(node_id)
            if node is None and listed:
                close = difflib.get_close_matches(node_id, list(self.nodes), n=1)
                hint = f"; did you mean {close[0]!r}?" if close else ""
                raise fail(file.source, f"no node {node_id!r} in the node list{hint}")
            if node is None:
                node = self.nodes[node_id] = _Node(id=node_id, key=node_id, kind="device")
                # Without the node list, only the policy's built-ins say what the node is.
                builtins = self._builtins(file)
                if set(builtins) & set(_CLUSTER_FIELDS):
                    node.kind = "cluster"
            if node.policy is not None:
                raise fail(
                    file.source, f"node {node_id!r} already has the policy {node.policy.path}"
                )
            node.policy = file

    def _builtins(self, file: HznFile) -> dict[str, tuple[Any, KeyPath]]:
        found = dict(_properties(_quiet(file), file.data, (), "node").builtins)
        deployment = file.data.get("deployment")
        if isinstance(deployment, dict):
            found.update(_properties(_quiet(file), deployment, ("deployment",), "node").builtins)
        return found

    def _location(self, node: _Node, patterns: dict[int, str]) -> dict[str, Any]:
        location: dict[str, Any] = {"id": node.id, "kind": node.kind, "scope": "device"}
        properties: dict[str, dict[str, Any]] = {}
        constraints: list[str] = []
        builtins: dict[str, tuple[Any, KeyPath]] = {}
        policy = node.policy
        if policy is not None:
            top = _properties(policy, policy.data, (), "node")
            top_constraints = _constraints(policy, policy.data, ())
            section = _mapping(policy, policy.data, "deployment", ())
            deployment = _properties(policy, section, ("deployment",), "node")
            deployment_constraints = _constraints(policy, section, ("deployment",))
            # For deployment, Open Horizon merges the `deployment` section over the top
            # level: its properties win on a clash, and its constraints, where it has any,
            # replace the top level's (exchangecommon/nodepolicy.go GetDeploymentPolicy).
            # `management` only governs agent upgrades, so placement ignores it.
            properties = {**top.entries, **deployment.entries}
            builtins = {**top.builtins, **deployment.builtins}
            constraints = deployment_constraints if section.get("constraints") else top_constraints
        if node.kind == "cluster":
            scoped = node.scoped or _flag(policy, builtins, _K8S_SCOPED)
            location["scope"] = "namespace" if scoped else "cluster"
            namespace = node.namespace or _builtin_text(policy, builtins, _K8S_NAMESPACE)
            location["namespace"] = namespace or DEFAULT_AGENT_NAMESPACE
        arch = node.arch or _builtin_text(policy, builtins, _ARCH)
        if arch:
            location["arch"] = arch
        hardware_id = _builtin_text(policy, builtins, _HARDWARE_ID)
        if hardware_id:
            location["hardware_id"] = hardware_id
        if node.kind == "cluster":
            version = _builtin_text(policy, builtins, _K8S_VERSION)
            if version:
                location["kubernetes_version"] = version
        capacity = {
            resource: value
            for resource, name in (("cpu", _CPU), ("memory", _MEMORY))
            if (value := _builtin_number(policy, builtins, name)) is not None
        }
        if capacity:
            location["capacity"] = capacity
        if node.pattern:
            pattern_id = _pattern_for(node.pattern, patterns)
            properties[PATTERN_PROPERTY] = {"name": PATTERN_PROPERTY, "value": pattern_id}
            # Open Horizon evaluates no node policy constraint for a pattern
            # (compcheck/comp_check.go deployCompatible checks only privilege, namespace and
            # user input), so the node's own constraints give way to the pattern's tie.
            constraints = [f'{PATTERN_PROPERTY} == "{pattern_id}"']
        if properties:
            location["properties"] = list(properties.values())
        if constraints:
            location["constraints"] = constraints
        return location

    # -- services ------------------------------------------------------------------------

    def _add_definition(self, found: _Definition | None) -> None:
        if found is None:
            return
        for other in self.definitions:
            same = (other.url, other.org, other.key, other.arch)
            if same == (found.url, found.org, found.key, found.arch):
                found.file.add(
                    f"service {found.url} {found.version} ({found.arch}) is defined twice "
                    f"(first in {other.file.path})"
                )
                return
        self.definitions.append(found)

    def _resolve(
        self,
        file: HznFile,
        url: str,
        org: str,
        arch: str,
        versions: list[Any],
        path: KeyPath,
        missing: list[tuple[KeyPath, str]] | None = None,
    ) -> dict[str, _Definition]:
        """The definition each architecture deploys for a service reference: where several
        versions are allowed (serviceVersions), the highest one that has a definition.
        (The agbot tries them in priority order and falls back on failure; placed plans
        with the newest.) An arch of "" or "*" means each node's own
        (agreementbot/agreementworker.go), so every architecture with a definition."""
        wanted: dict[tuple[int, int, int], str] = {}
        for index, choice in enumerate(versions):
            where = (*path, "serviceVersions", index)
            if not isinstance(choice, dict):
                file.add(f"expected an object with a version, got {_kind(choice)}", where)
                continue
            text = _text(file, choice, "version", where, required=True)
            key = _version(file, text, (*where, "version"))
            if key is not None:
                wanted[key] = text
        if not versions:
            file.add("serviceVersions is empty; it needs at least one version", path)
        if not wanted:
            return {}
        chosen: dict[str, _Definition] = {}
        for definition in self.definitions:
            if definition.url != url or (definition.org and definition.org != org):
                continue
            if definition.key not in wanted or arch not in ("", "*", definition.arch):
                continue
            best = chosen.get(definition.arch)
            if best is None or definition.key > best.key:
                chosen[definition.arch] = definition
        if not chosen:
            names = ", ".join(sorted(wanted.values()))
            on = f" for arch {arch}" if arch not in ("", "*") else ""
            message = (
                f"no service definition for {org}/{url} version {names}{on}; give its "
                "`hzn exchange service publish` file or the output of "
                "`hzn exchange service list -l`"
            )
            if missing is not None:
                missing.append((path, message))
            else:
                file.add(message, path)
        return dict(sorted(chosen.items()))

    def _runs_on_clusters(self, url: str, org: str, arch: str, versions: list[Any]) -> bool | None:
        """Whether a definition of any listed version (of any arch for "" or "*") has a
        clusterDeployment; None when there is no definition at all (reported already)."""
        wanted = {
            parse_version(choice["version"])
            for choice in versions
            if isinstance(choice, dict) and isinstance(choice.get("version"), str)
        }
        found = [
            definition
            for definition in self.definitions
            if definition.url == url
            and (not definition.org or definition.org == org)
            and definition.key in wanted
            and arch in ("", "*", definition.arch)
        ]
        if not found:
            return None
        return any("cluster" in definition.runs_on for definition in found)

    def _service(self, definition: _Definition, org: str, policy: bool = False) -> dict[str, Any]:
        """The native service; with its service policy for a deployment policy's service
        (`policy`): anax merges the service policy into the deployment policy's side
        (compcheck/policy_check.go CheckPolicyCompatiblility,
        MergeFullServicePolicyToBusinessPolicy) and judges a pattern's services on
        privilege, namespace and user input alone (compcheck/comp_check.go
        deployCompatible)."""
        service: dict[str, Any] = {
            "url": definition.url,
            "org": definition.org or org,
            "version": definition.version,
            "arch": definition.arch,
        }
        if definition.namespace:
            service["namespace"] = definition.namespace
        service["privileged"] = definition.privileged
        service["runs_on"] = definition.runs_on
        if policy and definition.properties:
            service["properties"] = definition.properties
        if policy and definition.constraints:
            service["constraints"] = definition.constraints
        requires = self._dependencies(definition)
        if requires:
            service["requires"] = requires
        return service

    def _required_service(self, definition: _Definition, org: str) -> dict[str, Any]:
        """A dependency as the native spec writes it: what decides where it can run (its
        own service policy plays no part: anax merges only the top service's)."""
        service: dict[str, Any] = {
            "url": definition.url,
            "org": definition.org or org,
            "version": definition.version,
            "arch": definition.arch,
            "privileged": definition.privileged,
            "runs_on": definition.runs_on,
        }
        return service

    def _service_policies(self, files: list[HznFile]) -> None:
        """Each service policy, given to the service defined beside it: the service
        `hzn exchange service addpolicy` names, or `publish --service-policy-file` adds it
        to."""
        for file in files:
            owners = [
                d for d in self.definitions if d.publish and d.file.folder.path == file.folder.path
            ]
            if not owners:
                file.add(
                    "which service's policy is this? A service policy belongs to the service "
                    f"defined beside it, and {file.folder.path} holds no service definition "
                    "(hzn exchange service addpolicy names the service)"
                )
                continue
            properties = _properties(file, file.data, (), "service").entries
            constraints = _constraints(file, file.data, ())
            for definition in owners:
                if definition.policy is not None:
                    file.add(
                        f"service {definition.name} already has the policy {definition.policy.path}"
                    )
                    continue
                definition.policy = file
                definition.properties = list(properties.values())
                definition.constraints = constraints

    def _dependencies(
        self, definition: _Definition, chain: tuple[int, ...] = ()
    ) -> list[dict[str, Any]]:
        """The services a definition requires, each with its own, as the exchange resolves
        them (exchange.GetHTTPServiceDefResolverHandler: the highest version in the range,
        of the arch named; placed takes an empty or `*` arch as the requiring service's)."""
        done = self.required.get(id(definition))
        if done is not None:
            return done
        file = definition.file
        found: list[dict[str, Any]] = []
        if definition.requires and definition.runs_on == ["cluster"] and definition.publish:
            file.add(
                "'requiredServices' is not supported for cluster type service (hzn exchange "
                "service publish refuses it)",
                (*definition.path, "requiredServices"),
            )
            definition.requires = []
        for dependency in definition.requires:
            arch = dependency.arch if dependency.arch not in ("", "*") else definition.arch
            chosen = self._required(dependency, arch)
            if chosen is None:
                file.add(
                    f"requires {dependency.org}/{dependency.url} {dependency.written} for arch "
                    f"{arch}, which no file given defines: give its folder too, a tree that "
                    "holds both, or `hzn exchange service list -l` output (hzn looks in the "
                    "exchange)",
                    dependency.path,
                )
                continue
            if id(chosen) in (*chain, id(definition)):
                file.add(
                    f"requires {chosen.name} {chosen.version}, which requires "
                    f"{definition.name} in turn",
                    dependency.path,
                )
                continue
            if chosen.runs_on == ["cluster"] and definition.publish:
                file.add(
                    f"the required service {chosen.name} {chosen.version} has the wrong "
                    "service type: cluster (hzn exchange service publish refuses it: "
                    "common/service_file.go ValidateService)",
                    dependency.path,
                )
                continue
            service = self._required_service(chosen, dependency.org)
            requires = self._dependencies(chosen, (*chain, id(definition)))
            if requires:
                service["requires"] = requires
            found.append(service)
        self.required[id(definition)] = found
        return found

    def _required(self, dependency: _Dependency, arch: str) -> _Definition | None:
        best = None
        for candidate in self.definitions:
            if (
                candidate.url == dependency.url
                and candidate.org in ("", dependency.org)
                and candidate.arch == arch
                and dependency.versions.contains(candidate.key)
                and (best is None or candidate.key > best.key)
            ):
                best = candidate
        return best

    # -- workloads -----------------------------------------------------------------------

    def _name(self, file: HznFile, base: str, arch: str, several: bool) -> str:
        name = f"{base}-{arch}" if several else base
        if file.folder.label:
            name = f"{file.folder.label}-{name}"  # several folders: whose file it is
        name = re.sub(r"[\s/]+", "-", name.strip()) or "policy"
        first = self.workload_names.get(name)
        if first is not None:
            file.add(
                f"a workload named {quoted(name)} comes from {first.path} already; rename a file"
            )
        self.workload_names[name] = file
        return name

    def _policy(self, file: HznFile) -> list[dict[str, Any]]:
        data = file.data
        service = _mapping(file, data, "service", ())
        path: KeyPath = ("service",)
        url = _text(file, service, "name", path, required=True)
        org = _text(file, service, "org", path, required=True)
        arch = _text(file, service, "arch", path)
        namespace = _text(file, service, "clusterNamespace", path)
        versions = _list(file, service, "serviceVersions", path)
        properties = _properties(file, data, (), "deployment").entries
        constraints = _constraints(file, data, ())
        if file.problems or not url:
            return []
        chosen = self._resolve(file, url, org, arch, versions, path)
        if namespace and self._runs_on_clusters(url, org, arch, versions) is False:
            # hzn exchange deployment addpolicy refuses it
            # (cli/exchange/business.go ValidateServiceClusterNS).
            file.add(
                f"clusterNamespace should not be set for device service {org}/{url} with "
                f"arch {arch}: no version the policy names has a clusterDeployment (hzn "
                "exchange deployment addpolicy refuses it)",
                (*path, "clusterNamespace"),
            )
            return []
        workloads = []
        for service_arch, definition in chosen.items():
            workload: dict[str, Any] = {
                "name": self._name(file, _stem(file.path), service_arch, len(chosen) > 1),
                "mode": "every",
            }
            if properties:
                workload["properties"] = list(properties.values())
            if constraints:
                workload["constraints"] = constraints
            if namespace:
                workload["cluster_namespace"] = namespace
            workload["service"] = self._service(definition, org, policy=True)
            workloads.append(workload)
        return workloads

    def _pattern_ids(self, files: list[HznFile]) -> dict[int, str]:
        """Each pattern's id, org/name as nodes name it (the name defaults to the file's,
        as `hzn exchange pattern publish -p` would give it)."""
        ids: dict[int, str] = {}
        seen: dict[str, HznFile] = {}
        for file in files:
            name = _text(file, file.data, "name", ()) or _stem(file.path)
            org = _text(file, file.data, "org", ())
            pattern_id = f"{org}/{name}" if org else name
            if '"' in pattern_id:
                file.add("a pattern name may not contain a double quote", ("name",))
            if pattern_id in seen:
                # Publishing both replaces the first in the exchange (PatternPublish updates
                # a pattern that exists): which one stands depends on the order. The
                # examples keep a pattern for one arch and one for all under one name.
                self.notices.append(
                    Notice(
                        "pattern-given-twice",
                        f"pattern {pattern_id} is both {seen[pattern_id].path} and "
                        f"{file.path}; the exchange keeps the one published last, and placed "
                        "plans each as its own workload",
                    )
                )
            seen.setdefault(pattern_id, file)
            ids[id(file)] = pattern_id
        self.check()
        return ids

    def _pattern(self, file: HznFile, pattern_id: str) -> list[dict[str, Any]]:
        data = file.data
        namespace = _text(file, data, "clusterNamespace", ())
        # Each node takes the pattern's services of its own arch
        # (compcheck/userinput_check.go getWorkloadsFromPattern), so the pattern becomes one
        # workload per arch, each with the services that arch runs.
        by_arch: dict[str, list[dict[str, Any]]] = {}
        on_clusters: list[bool | None] = []
        missing: list[tuple[KeyPath, str]] = []
        for index, reference in enumerate(_list(file, data, "services", ())):
            path: KeyPath = ("services", index)
            if not isinstance(reference, dict):
                file.add(f"expected an object, got {_kind(reference)}", path)
                continue
            url = _text(file, reference, "serviceUrl", path, required=True)
            org = _text(file, reference, "serviceOrgid", path, required=True)
            arch = _text(file, reference, "serviceArch", path)
            versions = _list(file, reference, "serviceVersions", path)
            if not url:
                continue
            for service_arch, definition in self._resolve(
                file, url, org, arch, versions, path, missing
            ).items():
                by_arch.setdefault(service_arch, []).append(self._service(definition, org))
            on_clusters.append(self._runs_on_clusters(url, org, arch, versions))
        if missing and not by_arch:
            for path, message in missing:
                file.add(message, path)
        for path, message in missing if by_arch else ():
            # A pattern for all architectures (the examples' pattern-all-arches.json) lists
            # each arch's definition; hzn takes them from the exchange, where the service
            # was published once per arch. The architectures given are planned.
            self.notices.append(
                Notice(
                    "service-definition-missing",
                    f"{file.path}: {dotted(path)}: {message}; the pattern is planned for "
                    f"the architectures that have one ({', '.join(sorted(by_arch))})",
                )
            )
        if namespace and on_clusters and not any(on_clusters) and None not in on_clusters:
            # hzn exchange pattern publish refuses it
            # (cli/exchange/pattern.go PatternPublish, HasClusterTypeService).
            file.add(
                "'clusterNamespace' is specified, but no service has a clusterDeployment "
                "(hzn exchange pattern publish refuses it)",
                ("clusterNamespace",),
            )
        if file.problems:
            return []
        workloads = []
        for arch, services in sorted(by_arch.items()):
            workload: dict[str, Any] = {
                "name": self._name(file, _stem(file.path), arch, len(by_arch) > 1),
                "mode": "every",
                "pattern": True,
                "properties": [{"name": PATTERN_PROPERTY, "value": pattern_id}],
                "constraints": [f'{PATTERN_PROPERTY} == "{pattern_id}"'],
            }
            if namespace:
                workload["cluster_namespace"] = namespace
            workload["services"] = services
            workloads.append(workload)
        return workloads


def _quiet(file: HznFile) -> HznFile:
    """The same document, its problems kept apart (they are reported by the full pass)."""
    return HznFile(file.path, file.data, file.sources, file.folder)


def _policy_node(name: str) -> str | None:
    """NODE from NODE.node.policy.json."""
    suffix = ".node.policy.json"
    if not name.endswith(suffix):
        return None
    return name[: -len(suffix)] or None


def _stem(path: Path) -> str:
    """A file's name as the workload's: web.deployment.policy.json -> web."""
    name = path.name.removesuffix(".json")
    for suffix in (".deployment.policy", ".policy", ".pattern"):
        if name.endswith(suffix) and len(name) > len(suffix):
            return name.removesuffix(suffix)
    return name


def _pattern_for(named: str, patterns: dict[int, str]) -> str:
    """The id of the pattern a node names (org/name; a pattern file without an org matches
    on the name), or the node's text when no file gives that pattern."""
    for pattern_id in patterns.values():
        if pattern_id == named or (
            "/" not in pattern_id and named.rpartition("/")[2] == pattern_id
        ):
            return pattern_id
    return named


def _builtin_text(
    policy: HznFile | None, builtins: dict[str, tuple[Any, KeyPath]], name: str
) -> str:
    if policy is None or name not in builtins:
        return ""
    value, where = builtins[name]
    if not isinstance(value, str):
        policy.add(f"{name} must be text, got {_kind(value)}", where)
        return ""
    return value


def _builtin_number(
    policy: HznFile | None, builtins: dict[str, tuple[Any, KeyPath]], name: str
) -> float | int | None:
    if policy is None or name not in builtins:
        return None
    value, where = builtins[name]
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        policy.add(f"{name} must be a number of at least 0, got {_kind(value)}", where)
        return None
    return value


def _flag(policy: HznFile | None, builtins: dict[str, tuple[Any, KeyPath]], name: str) -> bool:
    if policy is None or name not in builtins:
        return False
    value, where = builtins[name]
    if not isinstance(value, bool):
        policy.add(f"{name} must be true or false, got {_kind(value)}", where)
        return False
    return value


# -- entry points ------------------------------------------------------------------------


def _name_of(paths: list[Path]) -> str:
    first = paths[0].resolve()
    return first.name if first.is_dir() else first.parent.name or first.stem


def convert_openhorizon(
    paths: list[Path], notices: list[Notice] | None = None, force: bool = False
) -> dict[str, Any]:
    """The native spec document (plain data) that the hzn documents at `paths` describe;
    what they warn about is added to `notices`. `force` reads keys hzn does not know as
    hzn does, each a warning (`--force`)."""
    converter = _Converter(read_all(paths), force)
    document = converter.convert(_name_of(paths))
    if notices is not None:
        notices.extend(converter.notices)
    return document


def dump_native(document: dict[str, Any], notices: Sequence[Notice] = ()) -> str:
    """The native document as YAML, as `placed convert` prints it, the files' warnings
    first as comments."""
    header = (
        "# The native placed spec of a set of Open Horizon files, written by placed convert.\n"
        "# Convert again after changing those files rather than editing this one.\n"
    )
    for notice in notices:
        text = " ".join(notice.message.split())  # one comment line each
        header += f"# warning [{notice.code}]: {text}\n"
    return header + yaml.dump(
        document,
        Dumper=_Dumper,
        sort_keys=False,
        allow_unicode=True,
        default_flow_style=False,
        width=100,
    )


class _Dumper(yaml.SafeDumper):
    # A definition shared by several workloads would otherwise come out as &id001 anchors.
    def ignore_aliases(self, data: Any) -> bool:
        return True


def load_openhorizon(paths: list[Path], force: bool = False) -> list[Spec]:
    """The hzn documents at `paths` as a spec, through the native pipeline; `force` as
    convert_openhorizon takes it."""
    notices: list[Notice] = []
    text = dump_native(convert_openhorizon(paths, notices, force))
    source = str(paths[0])
    try:
        return [
            dataclasses.replace(spec, notices=(*notices, *spec.notices))
            for spec in load_specs_text(text, source)
        ]
    except SpecError as error:
        # The files themselves were checked above; what the native checks still find is in
        # the converted spec, so the message sends the reader to it.
        raise SpecError(
            f"{source} (as converted; see `placed convert {source}`)", error.problems
        ) from None
