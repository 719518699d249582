"""The keys each Open Horizon document may hold (issue 15): those placed reads, and those
the real tool accepts that placed ignores, both taken from the json tags of the anax Go
structs that hzn unmarshals the document into. A key in neither set is an error with a
did-you-mean, as in native specs: hzn itself ignores unknown keys (Go's encoding/json), so
a misspelt `constriants` would otherwise vanish without a word.

Keys are checked in every object placed reads; what an ignored key holds (a userInput
list, a nodeHealth object, a deployment's containers) is not looked into.

Go's encoding/json matches a key to a field ignoring case (`Constraints` fills
`constraints`); placed asks for the exact spelling and names it, so such a key is an
error that says what hzn would have read.

`python -m placed.spec.hzn_keys` prints the README's table.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from placed.spec.errors import quoted


@dataclass(frozen=True)
class Keys:
    """One object of an hzn document: the anax struct it is read into, the keys placed
    reads, the keys it accepts and ignores, and the objects nested under read keys
    ("object" for one, "list" for a list of them)."""

    struct: str
    read: tuple[str, ...]
    ignored: tuple[str, ...] = ()
    nested: Mapping[str, tuple[str, Keys]] = field(default_factory=dict)
    # For the check of each of many thousand node list entries.
    names: frozenset[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "names", frozenset(self.known))

    @property
    def known(self) -> tuple[str, ...]:
        return (*self.read, *self.ignored)


PROPERTY = Keys("externalpolicy.Property", ("name", "value", "type"))
EXTERNAL_POLICY = Keys(
    "externalpolicy.ExternalPolicy",
    ("properties", "constraints"),
    nested={"properties": ("list", PROPERTY)},
)
_POLICY_CHOICE = Keys("businesspolicy.WorkloadChoice", ("version",), ("priority", "upgradePolicy"))
SERVICE_REF = Keys(
    "businesspolicy.ServiceRef",
    ("name", "org", "arch", "clusterNamespace", "serviceVersions"),
    ("nodeHealth",),
    nested={"serviceVersions": ("list", _POLICY_CHOICE)},
)
DEPLOYMENT_POLICY = Keys(
    "businesspolicy.BusinessPolicy",
    ("service", "properties", "constraints"),
    ("owner", "label", "description", "userInput", "secretBinding"),
    nested={"service": ("object", SERVICE_REF), "properties": ("list", PROPERTY)},
)
NODE_POLICY = Keys(
    "exchangecommon.NodePolicy; exchange.ExchangeNodePolicy adds the last two",
    ("properties", "constraints", "deployment"),
    ("label", "description", "management", "nodePolicyVersion", "lastUpdated"),
    nested={"properties": ("list", PROPERTY), "deployment": ("object", EXTERNAL_POLICY)},
)
_PATTERN_CHOICE = Keys(
    "common.ServiceChoiceFile",
    ("version",),
    ("priority", "upgradePolicy", "deployment_overrides", "deployment_overrides_signature"),
)
_PATTERN_SERVICE = Keys(
    "common.ServiceReferenceFile",
    ("serviceUrl", "serviceOrgid", "serviceArch", "serviceVersions"),
    ("agreementLess", "dataVerification", "nodeHealth"),
    nested={"serviceVersions": ("list", _PATTERN_CHOICE)},
)
PATTERN = Keys(
    "common.PatternFile",
    ("name", "org", "clusterNamespace", "services"),
    ("label", "description", "public", "agreementProtocols", "userInput", "secretBinding"),
    nested={"services": ("list", _PATTERN_SERVICE)},
)
_SERVICE_IGNORED = (
    "label",
    "description",
    "public",
    "documentation",
    "sharable",
    "matchHardware",
    "userInput",
    "deploymentSignature",
    "clusterDeploymentSignature",
    # Not a field since anax 959faa55 (2019, "Remove the torrent and image store support")
    # and still in older publish files, which hzn reads, ignoring it.
    "imageStore",
)
_DEPENDENCY = Keys(
    "exchangecommon.ServiceDependency", ("url", "org", "version", "versionRange", "arch")
)
_SERVICE_READ = (
    "org",
    "url",
    "version",
    "arch",
    "deployment",
    "clusterDeployment",
    "requiredServices",
)
SERVICE = Keys(
    "common.ServiceFile",
    _SERVICE_READ,
    _SERVICE_IGNORED,
    nested={"requiredServices": ("list", _DEPENDENCY)},
)
LISTED_SERVICE = Keys(
    "exchange.ServiceDefinition",
    tuple(key for key in _SERVICE_READ if key != "org"),
    ("owner", *_SERVICE_IGNORED, "lastUpdated"),
    nested={"requiredServices": ("list", _DEPENDENCY)},
)
SERVICE_POLICY = Keys(
    "exchangecommon.ServicePolicy",
    ("properties", "constraints"),
    ("label", "description"),
    nested={"properties": ("list", PROPERTY)},
)
# The registration input file, `hzn register -f`, `hzn deploycheck -u`: placed accepts it
# and reads none of it (user input does not decide where a service goes). Two forms
# (common/userinput_file.go): this object (UserInputFile_Old) or a list of USER_INPUT.
_GLOBAL_SET = Keys("common.GlobalSet", (), ("type", "service_specs", "variables"))
_MICRO_WORK = Keys("common.MicroWork", (), ("org", "url", "versionRange", "variables"))
USER_INPUT_FILE = Keys(
    "common.UserInputFile",
    (),
    ("global", "services"),
    nested={"global": ("list", _GLOBAL_SET), "services": ("list", _MICRO_WORK)},
)
_INPUT = Keys("policy.Input", (), ("name", "value"))
USER_INPUT = Keys(
    "policy.UserInput",
    (),
    ("serviceOrgid", "serviceUrl", "serviceArch", "serviceVersionRange", "inputs"),
    nested={"inputs": ("list", _INPUT)},
)
# hzn.json (cli/cliconfig/config.go HorizonCliConfig): every key sets a variable.
CONFIG = Keys(
    "cliconfig.HorizonCliConfig",
    (
        "MetadataVars",
        "HZN_EXCHANGE_USER_AUTH",
        "HZN_EXCHANGE_NODE_AUTH",
        "HZN_ORG_ID",
        "HZN_LANG",
        "HORIZON_URL",
        "HZN_EXCHANGE_URL",
        "HZN_HTTP_RETRIES",
        "HZN_HTTP_RETRY_INTERVAL",
        "HZN_FSS_CSSURL",
        "HZN_AGBOT_URL",
        "HZN_PRIVATE_KEY_FILE",
        "HZN_PUBLIC_KEY_FILE",
        "HZN_DEVICE_ID",
        "HZN_NODE_ID",
        "HZN_PATTERN",
        "HZN_DEV_FSS_IMAGE_REPO",
        "HZN_DEV_FSS_IMAGE_TAG",
        "HZN_DEV_FSS_CSS_PORT",
        "HZN_DEV_FSS_MONGO_IMAGE",
        "HZN_DEV_FSS_WORKING_DIR",
        "HZN_REGISTER_HTTP_TIMEOUT",
    ),
)
NODE = Keys(
    "exchange.Device",
    ("nodeType", "clusterNamespace", "isNamespaceScoped", "pattern", "arch"),
    (
        "token",
        "name",
        "owner",
        "registeredServices",
        "msgEndPoint",
        "softwareVersions",
        "lastHeartbeat",
        "publicKey",
        "userInput",
        "heartbeatIntervals",
        "ha_group",
        "lastUpdated",
    ),
)

# Each document placed reads: its name in messages and the README, the hzn command it comes
# from, and its keys. The node list and the service list are maps of id -> entry.
FORMATS: dict[str, tuple[str, str, Keys]] = {
    "deployment-policy": (
        "deployment policy",
        "hzn exchange deployment addpolicy",
        DEPLOYMENT_POLICY,
    ),
    "node-policy": (
        "node policy",
        "hzn policy new / update, hzn exchange node addpolicy",
        NODE_POLICY,
    ),
    "pattern": ("pattern", "hzn exchange pattern publish", PATTERN),
    "service": ("service definition", "hzn exchange service publish", SERVICE),
    "services": ("service list entry", "hzn exchange service list -l", LISTED_SERVICE),
    "service-policy": (
        "service policy",
        "hzn exchange service addpolicy, hzn deploycheck --service-pol",
        SERVICE_POLICY,
    ),
    "nodes": ("node list entry", "hzn exchange node list -l", NODE),
    "config": ("hzn.json", "its variables substituted into the other files", CONFIG),
    "user-input": ("user input", "hzn register -f, hzn deploycheck -u", USER_INPUT_FILE),
    "user-inputs": ("user input, list form", "hzn register -f, hzn deploycheck -u", USER_INPUT),
}
ENTRIES = {"services", "nodes"}  # shapes whose top level maps an id to an entry
LISTS = {"user-inputs"}  # shapes whose top level is a list of entries


def unknown_keys(shape: str, data: Any) -> Iterator[tuple[str, tuple[str | int, ...]]]:
    """(message, path of the key) for each key of a document of this shape that the real
    tool does not know."""
    _, _, keys = FORMATS[shape]
    if shape in ENTRIES:
        if isinstance(data, dict):
            for key, entry in data.items():
                yield from _walk(keys, entry, (key,))
    elif shape in LISTS:
        if isinstance(data, list):
            for index, entry in enumerate(data):
                yield from _walk(keys, entry, (index,))
    else:
        yield from _walk(keys, data, ())


def unknown_keys_of(keys: Keys, data: Any) -> Iterator[tuple[str, tuple[str | int, ...]]]:
    """unknown_keys for one object described by `keys`."""
    yield from _walk(keys, data, ())


def _walk(
    keys: Keys, data: Any, path: tuple[str | int, ...]
) -> Iterator[tuple[str, tuple[str | int, ...]]]:
    if not isinstance(data, dict):
        return  # the typed checks say what is wrong with it
    if not keys.names.issuperset(data):
        for key in data:
            if key not in keys.names:
                yield _message(str(key), keys), (*path, key)
    for key, (kind, inner) in keys.nested.items():
        value = data.get(key)
        if kind == "object":
            yield from _walk(inner, value, (*path, key))
        elif isinstance(value, list):
            for index, item in enumerate(value):
                yield from _walk(inner, item, (*path, key, index))


_CASE_VARIANT = "since Go's encoding/json matches keys ignoring case"


def is_case_variant(message: str) -> bool:
    """Whether an unknown-key message is for a key hzn reads as another (its case aside)."""
    return _CASE_VARIANT in message


def _message(key: str, keys: Keys) -> str:
    folded = [k for k in keys.known if k.casefold() == key.casefold()]
    if folded:
        return (
            f"unknown key {quoted(key)}; did you mean {quoted(folded[0])}? (hzn would read it "
            f"as {folded[0]}, {_CASE_VARIANT}; placed "
            "asks for the exact spelling)"
        )
    close = difflib.get_close_matches(key, keys.known, n=1, cutoff=0.6)
    hint = (
        f"; did you mean {quoted(close[0])}?"
        if close
        else f"; {keys.struct} has " + ", ".join(keys.known)
    )
    return f"unknown key {quoted(key)}{hint}"


def markdown_table() -> str:
    """The README's table: per document and object, the keys placed reads and those it
    accepts and ignores."""
    lines = [
        "| document (hzn command) | object (anax struct) | read by placed | accepted, ignored |",
        "|---|---|---|---|",
    ]
    for name, command, keys in FORMATS.values():
        for where, found in _objects(keys, ""):
            lines.append(
                f"| {name} ({command}) | {where or 'top level'} ({found.struct}) | "
                f"{', '.join(f'`{k}`' for k in found.read) or '—'} | "
                f"{', '.join(f'`{k}`' for k in found.ignored) or '—'} |"
            )
    return "\n".join(lines)


def _objects(keys: Keys, where: str) -> Iterator[tuple[str, Keys]]:
    yield where, keys
    for key, (kind, inner) in keys.nested.items():
        inside = f"{where}.{key}" if where else key
        yield from _objects(inner, f"{inside}[]" if kind == "list" else inside)


if __name__ == "__main__":
    print(markdown_table())
