"""Juju placement directives (deployer and bundle style) and Juju constraint strings:
valid entries parse to typed values that render back to themselves, invalid ones are
errors with a plain message and the column of the mistake, and no text at all makes the
parsers raise anything else."""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from placed.spec.juju import (
    ConstraintError,
    Directive,
    DirectiveError,
    DirectivesError,
    JujuConstraints,
    NewMachine,
    OnMachine,
    ProviderPlacement,
    Style,
    UnitConstraints,
    WithUnit,
    parse_bundle,
    parse_constraints,
    parse_deployer,
    parse_entry,
    parse_to,
)

PARSE = {"deployer": parse_deployer, "bundle": parse_bundle}


def short(value: object) -> str | None:
    """Test ids: long texts cut short."""
    return value[:30] if isinstance(value, str) else None


# ---------------------------------------------------------------- valid entries

# (text, value, canonical text)
DEPLOYER_VALID: list[tuple[str, Directive, str]] = [
    ("0", OnMachine("0"), "0"),
    ("7", OnMachine("7"), "7"),
    ("123456789", OnMachine("123456789"), "123456789"),
    ("kvm:0", OnMachine("0", "kvm"), "kvm:0"),
    ("lxd:12", OnMachine("12", "lxd"), "lxd:12"),
    ("lxc:mysql", WithUnit("mysql", None, "lxc", ordinal=True), "lxc:mysql"),
    ("wordpress", WithUnit("wordpress", ordinal=True), "wordpress"),
    ("lxc:wordpress=2", WithUnit("wordpress", 2, "lxc", ordinal=True), "lxc:wordpress=2"),
    ("wordpress=0", WithUnit("wordpress", 0, ordinal=True), "wordpress=0"),
    ("redis-server", WithUnit("redis-server", ordinal=True), "redis-server"),
    ("mysql-b2=10", WithUnit("mysql-b2", 10, ordinal=True), "mysql-b2=10"),
    ("a1-2b-c", WithUnit("a1-2b-c", ordinal=True), "a1-2b-c"),
    # A service may be called zone or maas; only zone=/maas= are provider placements.
    ("zone", WithUnit("zone", ordinal=True), "zone"),
    ("zone=us-east-1a", ProviderPlacement("zone", "us-east-1a"), "zone=us-east-1a"),
    ("zone=cluster1/host2", ProviderPlacement("zone", "cluster1/host2"), "zone=cluster1/host2"),
    ("maas=node1.maas", ProviderPlacement("maas", "node1.maas"), "maas=node1.maas"),
    (
        "constraints: cpu-cores=8 mem=16G",
        UnitConstraints(JujuConstraints(cores=8, mem=16384)),
        "constraints: cores=8 mem=16384M",
    ),
    (
        "constraints: maas-name=xyz",
        UnitConstraints(JujuConstraints(maas_name="xyz")),
        "constraints: maas-name=xyz",
    ),
    (
        "constraints:cores=2",
        UnitConstraints(JujuConstraints(cores=2)),
        "constraints: cores=2",
    ),
]

BUNDLE_VALID: list[tuple[str, Directive, str]] = [
    ("3", OnMachine("3"), "3"),
    ("0", OnMachine("0"), "0"),
    ("kvm:2", OnMachine("2", "kvm"), "kvm:2"),
    ("new", NewMachine(), "new"),
    ("lxd:new", NewMachine("lxd"), "lxd:new"),
    ("kvm:new", NewMachine("kvm"), "kvm:new"),
    ("mysql/0", WithUnit("mysql", 0), "mysql/0"),
    ("lxd:wordpress/1", WithUnit("wordpress", 1, "lxd"), "lxd:wordpress/1"),
    ("lxc:wordpress/999999999", WithUnit("wordpress", 999999999, "lxc"), "lxc:wordpress/999999999"),
    ("wordpress", WithUnit("wordpress"), "wordpress"),
    ("lxd:mysql", WithUnit("mysql", None, "lxd"), "lxd:mysql"),
    ("zone=europe-west1-b", ProviderPlacement("zone", "europe-west1-b"), "zone=europe-west1-b"),
    ("maas=node-7", ProviderPlacement("maas", "node-7"), "maas=node-7"),
    (
        "constraints: tags=ssd zones=a,b",
        UnitConstraints(JujuConstraints(tags=("ssd",), zones=("a", "b"))),
        "constraints: tags=ssd zones=a,b",
    ),
]


@pytest.mark.parametrize(("text", "value", "canonical"), DEPLOYER_VALID, ids=short)
def test_deployer_valid(text: str, value: Directive, canonical: str) -> None:
    assert parse_deployer(text) == value
    assert str(value) == canonical
    assert parse_deployer(canonical) == value


@pytest.mark.parametrize(("text", "value", "canonical"), BUNDLE_VALID, ids=short)
def test_bundle_valid(text: str, value: Directive, canonical: str) -> None:
    assert parse_bundle(text) == value
    assert str(value) == canonical
    assert parse_bundle(canonical) == value


def test_bare_service_is_ordinal_in_deployer_style_only() -> None:
    # Deployer pairs a bare service's units by position; a bundle takes the next unit.
    assert parse_deployer("mysql") == WithUnit("mysql", None, None, ordinal=True)
    assert parse_bundle("mysql") == WithUnit("mysql", None, None, ordinal=False)


@pytest.mark.parametrize(("text", "portable"), [("0", True), ("lxc:0", True), ("1", False)])
def test_only_machine_zero_is_portable(text: str, portable: bool) -> None:
    directive = parse_deployer(text)
    assert isinstance(directive, OnMachine)
    assert directive.portable is portable


def test_values_are_frozen() -> None:
    directive = parse_bundle("mysql/0")
    assert isinstance(directive, WithUnit)
    with pytest.raises(AttributeError):
        directive.service = "x"  # type: ignore[misc]


# ---------------------------------------------------------------- invalid entries

# (text, column, fragment of the message)
COMMON_INVALID: list[tuple[str, int, str]] = [
    ("", 1, "empty"),
    ("   ", 1, "empty"),
    ("\t", 1, "empty"),
    ("a:b:c", 4, "only one ':'"),
    ("lxc:", 5, "nothing follows 'lxc:'"),
    (":mysql", 1, "nothing comes before ':'"),
    ("docker:mysql", 1, "unknown container kind 'docker'; use lxc, lxd or kvm"),
    ("LXC:mysql", 1, "lower case"),
    ("zone:us-east-1a", 1, "zone=NAME"),
    ("01", 1, "no leading zeros"),
    ("007", 1, "write 7, not 007"),
    ("1234567890", 1, "at most 9 digits"),
    ("0=1", 2, "a machine has no units"),
    ("0/1", 2, "lxd:0"),
    ("MySQL", 1, "lower case"),
    ("my_sql", 3, "'_' cannot appear"),
    ("mysql-2", 6, "needs a letter"),
    ("mysql-", 6, "needs a letter"),
    ("a--b", 2, "needs a letter"),
    ("-mysql", 1, "start with a lower-case letter"),
    ("2mysql", 1, "start with a lower-case letter"),
    ("lxc: mysql", 5, "no blanks"),
    (" 0", 1, "no blanks"),
    ("0 ", 2, "no blanks"),
    ("lxc:wordpress,wordpress", 14, "command line"),
    ("wörd", 2, "'ö' cannot appear"),
    ("lxc:zone=us-east-1a", 1, "a container kind cannot come before zone="),
    ("zone=", 6, "nothing follows 'zone='"),
    ("maas=", 6, "nothing follows 'maas='"),
    ("zone=us east", 8, "no blanks"),
    ("zone=a:b", 7, "is not an availability zone"),
    ("maas=-node", 6, "is not a MAAS node name"),
    ("maas=a/b", 7, "is not a MAAS node name"),
    ("Constraints: mem=1G", 1, "lower case"),
    ("constraints:", 13, "at least one key=value"),
    ("constraints:   ", 16, "at least one key=value"),
    ("constraints: arch=", 14, "at least one key=value"),
    ("constraints: mem=lots", 18, "'lots' is not a size for mem"),
    ("constraints: cores=-1", 20, "is not a count for cores"),
    ("constraints: foo=1", 14, "unknown constraint 'foo'"),
    ("constraints: mem=1G mem=2G", 21, "given twice"),
    ("lxc:constraints: mem=1G", 17, "no blanks"),
    ("x" * 1001, 1001, "longer than 1000 characters"),
]

DEPLOYER_INVALID: list[tuple[str, int, str]] = [
    ("=x", 2, "an index after '=' must be a number, as in wordpress=2"),
    ("=-1", 2, "an index after '=' must be a number"),
    ("=2", 1, "nothing names the service before '='"),
    ("wordpress=", 11, "nothing follows '='"),
    ("wordpress=x", 11, "must be a number"),
    ("wordpress=-1", 11, "must be a number"),
    ("wordpress=1.5", 11, "must be a number"),
    ("svc=02", 5, "no leading zeros"),
    ("svc=1234567890", 5, "at most 9 digits"),
    ("svc=1=2", 5, "must be a number"),
    ("wordpress/2", 10, "bundle style"),
    ("svc/01", 4, "bundle style"),
    ("new", 1, "'new' is bundle style"),
    ("lxd:new", 5, "'new' is bundle style"),
    ("new/2", 1, "'new' is bundle style"),
    ("lxc:=2", 5, "nothing names the service"),
]

BUNDLE_INVALID: list[tuple[str, int, str]] = [
    ("mysql/", 7, "nothing follows '/'"),
    ("mysql/x", 7, "a unit number after '/' must be a number, as in wordpress/2"),
    ("mysql/-1", 7, "must be a number"),
    ("svc/01", 5, "no leading zeros"),
    ("svc/1234567890", 5, "at most 9 digits"),
    ("svc/1/2", 5, "must be a number"),
    ("/2", 1, "nothing names the service before '/'"),
    ("lxd:/2", 5, "nothing names the service"),
    ("wordpress=2", 10, "deployer style"),
    ("=x", 1, "deployer style"),
    ("new/2", 4, "'new' takes no '/N'"),
    ("new=2", 4, "'new' takes no '=N'"),
    ("lxd:new/0", 8, "'new' takes no '/N'"),
]


def _check_error(style: Style, text: str, column: int, fragment: str) -> DirectiveError:
    with pytest.raises(DirectiveError) as caught:
        PARSE[style](text)
    error = caught.value
    assert fragment in error.message, error.message
    assert error.column == column, error.message
    assert error.text == text
    assert f"(column {column})" in str(error)
    return error


@pytest.mark.parametrize(
    ("text", "column", "fragment"), COMMON_INVALID + DEPLOYER_INVALID, ids=short
)
def test_deployer_invalid(text: str, column: int, fragment: str) -> None:
    _check_error("deployer", text, column, fragment)


@pytest.mark.parametrize(("text", "column", "fragment"), COMMON_INVALID + BUNDLE_INVALID, ids=short)
def test_bundle_invalid(text: str, column: int, fragment: str) -> None:
    _check_error("bundle", text, column, fragment)


def test_the_issue_wording() -> None:
    error = _check_error("deployer", "=x", 2, "")
    assert error.message == (
        "'=x' is not a placement: an index after '=' must be a number, as in wordpress=2"
    )


def test_long_entry_is_quoted_as_an_excerpt() -> None:
    text = "lxc:" + "a" * 5000
    error = _check_error("bundle", text, 1001, "longer than 1000")
    assert len(error.message) < 200
    assert "5004 characters" in error.message


# ---------------------------------------------------------------- YAML values


@pytest.mark.parametrize(
    ("value", "style", "expected"),
    [
        (0, "deployer", OnMachine("0")),
        (3, "bundle", OnMachine("3")),
        (999999999, "deployer", OnMachine("999999999")),
        ("lxc:mysql", "deployer", WithUnit("mysql", None, "lxc", ordinal=True)),
        ("mysql/1", "bundle", WithUnit("mysql", 1)),
    ],
)
def test_entry_values(value: object, style: Style, expected: Directive) -> None:
    assert parse_entry(value, style) == expected


@pytest.mark.parametrize(
    ("value", "fragment"),
    [
        (True, "boolean true"),
        (False, "boolean false"),
        (1.5, "number 1.5"),
        (float("nan"), "number nan"),
        (None, "empty"),
        (-1, "cannot be negative"),
        (10**9, "at most 9 digits"),
        pytest.param(10**5000, "at most 9 digits", id="10**5000"),
        ({"a": 1}, "not a mapping"),
        ([1], "may not nest"),
        (b"0", "not a bytes"),
    ],
)
def test_entry_values_that_are_not_placements(value: object, fragment: str) -> None:
    styles: tuple[Style, ...] = ("deployer", "bundle")
    for style in styles:
        with pytest.raises(DirectiveError) as caught:
            parse_entry(value, style)
        assert fragment in caught.value.message
        assert caught.value.column == 1


def test_unknown_style_is_a_programming_error() -> None:
    with pytest.raises(ValueError, match="unknown placement style"):
        parse_entry("0", "juju")  # type: ignore[arg-type]


SEED = """
mysql:
  to: 0
redis-server:
  units: 3
  to: [lxc:wordpress, wordpress]
ceph:
  to: [wordpress, wordpress, wordpress, wordpress]
serenade:
  to: lxc:wordpress=2
mongodb:
  to: [1, 2, 3]
wordpress:
  units: 3
  to: ["constraints: maas-name=xyz", "constraints: cpu-cores=8"]
"""


def test_the_seed_deployer_file() -> None:
    services = yaml.safe_load(SEED)
    parsed = {name: parse_to(service.get("to"), "deployer") for name, service in services.items()}
    assert parsed["mysql"] == [OnMachine("0")]
    assert parsed["redis-server"] == [
        WithUnit("wordpress", None, "lxc", ordinal=True),
        WithUnit("wordpress", ordinal=True),
    ]
    assert len(parsed["ceph"]) == 4
    assert parsed["serenade"] == [WithUnit("wordpress", 2, "lxc", ordinal=True)]
    assert [d.portable for d in parsed["mongodb"] if isinstance(d, OnMachine)] == [False] * 3
    assert parsed["wordpress"] == [
        UnitConstraints(JujuConstraints(maas_name="xyz")),
        UnitConstraints(JujuConstraints(cores=8)),
    ]


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (None, []),
        ([], []),
        ("new", [NewMachine()]),
        (0, [OnMachine("0")]),
        (("lxd:new", "mysql/0"), [NewMachine("lxd"), WithUnit("mysql", 0)]),
    ],
)
def test_parse_to(value: Any, expected: list[Directive]) -> None:
    assert parse_to(value, "bundle") == expected


def test_parse_to_reports_every_bad_entry() -> None:
    with pytest.raises(DirectivesError) as caught:
        parse_to(["0", "a:b:c", "new", True, "docker:0", "mysql=1"], "bundle")
    errors = caught.value.errors
    assert [index for index, _ in errors] == [1, 3, 4, 5]
    assert all(isinstance(error, DirectiveError) for _, error in errors)
    assert errors[0][1].column == 4
    assert str(caught.value).startswith("4 bad placements in to:")
    assert "to[4]: 'docker:0'" in str(caught.value)


def test_parse_to_scalar_error_is_entry_zero() -> None:
    with pytest.raises(DirectivesError) as caught:
        parse_to("lxc:", "deployer")
    assert [index for index, _ in caught.value.errors] == [0]
    assert str(caught.value).startswith("1 bad placement in to:")


# ---------------------------------------------------------------- constraints

CONSTRAINTS_VALID: list[tuple[str, JujuConstraints, str | None]] = [
    ("", JujuConstraints(), ""),
    ("   ", JujuConstraints(), ""),
    ("cores=8", JujuConstraints(cores=8), "cores=8"),
    ("cpu-cores=8", JujuConstraints(cores=8), "cores=8"),
    ("cores=08", JujuConstraints(cores=8), "cores=8"),
    ("cores=0", JujuConstraints(cores=0), "cores=0"),
    ("cpu-power=100", JujuConstraints(cpu_power=100), "cpu-power=100"),
    ("mem=2048", JujuConstraints(mem=2048), "mem=2048M"),
    ("mem=512M", JujuConstraints(mem=512), "mem=512M"),
    ("mem=16G", JujuConstraints(mem=16384), "mem=16384M"),
    ("mem=1.5G", JujuConstraints(mem=1536), "mem=1536M"),
    # Juju rounds a fraction of a MiB up.
    ("mem=1.1G", JujuConstraints(mem=1127), "mem=1127M"),
    ("mem=.5G", JujuConstraints(mem=512), "mem=512M"),
    ("mem=0.5M", JujuConstraints(mem=1), "mem=1M"),
    ("root-disk=1T", JujuConstraints(root_disk=1024**2), "root-disk=1048576M"),
    ("root-disk=1P", JujuConstraints(root_disk=1024**3), "root-disk=1073741824M"),
    ("arch=amd64", JujuConstraints(arch="amd64"), "arch=amd64"),
    ("arch=arm64 ", JujuConstraints(arch="arm64"), "arch=arm64"),
    # An empty value is unset.
    ("arch= mem=1G", JujuConstraints(mem=1024), "mem=1024M"),
    ("tags=", JujuConstraints(), ""),
    ("tags=ssd,^virtual", JujuConstraints(tags=("ssd", "^virtual")), "tags=ssd,^virtual"),
    ("spaces=db,^dmz", JujuConstraints(spaces=("db", "^dmz")), "spaces=db,^dmz"),
    ("zones=us-east-1a,us-east-1b", JujuConstraints(zones=("us-east-1a", "us-east-1b")), None),
    ("instance-type=m5.large", JujuConstraints(instance_type="m5.large"), None),
    ("instance-type=Standard_D2s_v3", JujuConstraints(instance_type="Standard_D2s_v3"), None),
    ("maas-name=xyz", JujuConstraints(maas_name="xyz"), None),
    ("virt-type=kvm", JujuConstraints(virt_type="kvm"), None),
    ("container=lxd", JujuConstraints(container="lxd"), None),
    ("container=none", JujuConstraints(container="none"), None),
    ("root-disk-source=volume", JujuConstraints(root_disk_source="volume"), None),
    (
        "root-disk-source=my\\ datastore",
        JujuConstraints(root_disk_source="my datastore"),
        "root-disk-source=my\\ datastore",
    ),
    ("allocate-public-ip=true", JujuConstraints(allocate_public_ip=True), None),
    ("allocate-public-ip=false", JujuConstraints(allocate_public_ip=False), None),
    ("allocate-public-ip=0", JujuConstraints(allocate_public_ip=False), "allocate-public-ip=false"),
    (
        "nested-virtualization=True",
        JujuConstraints(nested_virtualization=True),
        "nested-virtualization=true",
    ),
    ("image-id=ubuntu-22", JujuConstraints(image_id="ubuntu-22"), None),
    ("instance-role=auto", JujuConstraints(instance_role="auto"), None),
    # Kubernetes affinity tags, as COS Lite's three-nodes overlay writes them.
    (
        "tags=anti-pod.app.kubernetes.io/name=loki,anti-pod.topology-key=kubernetes.io/hostname",
        JujuConstraints(
            tags=(
                "anti-pod.app.kubernetes.io/name=loki",
                "anti-pod.topology-key=kubernetes.io/hostname",
            )
        ),
        None,
    ),
    ("tags=pod.app=web,^node.disk=", JujuConstraints(tags=("pod.app=web", "^node.disk=")), None),
    (
        "zones=a mem=4G  arch=amd64\tcores=2",
        JujuConstraints(arch="amd64", cores=2, mem=4096, zones=("a",)),
        "arch=amd64 cores=2 mem=4096M zones=a",
    ),
]


@pytest.mark.parametrize(("text", "value", "canonical"), CONSTRAINTS_VALID, ids=short)
def test_constraints_valid(text: str, value: JujuConstraints, canonical: str | None) -> None:
    assert parse_constraints(text) == value
    rendered = str(value)
    assert rendered == (text.strip() if canonical is None else canonical)
    assert parse_constraints(rendered) == value


def test_constraint_signs() -> None:
    parsed = parse_constraints("tags=ssd,^virtual,gpu spaces=^dmz")
    assert parsed.tags_included == ("ssd", "gpu")
    assert parsed.tags_excluded == ("virtual",)
    assert parsed.spaces_included == ()
    assert parsed.spaces_excluded == ("dmz",)
    assert parse_constraints("").is_empty
    assert not parsed.is_empty


CONSTRAINTS_INVALID: list[tuple[str, int, str]] = [
    ("mem=lots", 5, "'lots' is not a size for mem"),
    ("mem=16g", 5, "suffixes are upper case: 16G"),
    ("mem=-1G", 5, "not a size"),
    ("mem=1e3", 5, "not a size"),
    ("mem=inf", 5, "not a size"),
    ("mem=1.5.2G", 5, "not a size"),
    ("mem=1234567890123456789", 5, "more than 18 digits"),
    ("mem=999999999999999999P", 5, "more than Juju can hold"),
    ("cores=-1", 7, "'-1' is not a count for cores"),
    ("cores=1.5", 7, "not a count"),
    ("cores=1234567890123456789", 7, "more than 18 digits"),
    ("cpu-power=x", 11, "not a count for cpu-power"),
    ("cores=1 cores=2", 9, "'cores' is given twice"),
    ("cores=1 cpu-cores=2", 9, "cpu-cores is another name for cores"),
    ("arch= arch=amd64", 7, "given twice"),
    ("memory=1G", 1, "did you mean 'mem'?"),
    ("mem=1G Cores=2", 8, "unknown constraint 'Cores'"),
    ("bogus=1", 1, "known keys: allocate-public-ip, arch,"),
    ("mem", 1, "write key=value"),
    ("mem=1G cores", 8, "write key=value"),
    ("=1", 1, "no key before '='"),
    ("arch=x86", 6, "unknown architecture 'x86'"),
    ("container=docker", 11, "unknown container kind 'docker'"),
    ("allocate-public-ip=yes", 20, "allocate-public-ip takes true or false"),
    ("tags=a,,b", 8, "an empty name in tags"),
    ("tags=a,", 8, "an empty name in tags"),
    ("tags=a;b", 7, "';' cannot appear in a tag"),
    ("tags=^", 6, "'^' needs a name after it, as in tags=^virtual"),
    ("zones=^a", 7, "zones cannot exclude"),
    ("spaces=DB", 8, "'D' cannot appear in a space name"),
    ("spaces=db-", 8, "is not a space name"),
    ("spaces=a,^b--c", 11, "is not a space name"),
    ("maas-name=a:b", 12, "':' cannot appear in a MAAS node name"),
    ("virt-type=-x", 11, "is not a virtualisation type"),
    ("instance-type=a\\b", 16, "a backslash in instance-type only escapes a blank"),
    ("instance-type=a\x07b", 16, "unprintable"),
    ("tags=a\\ b", 7, "blanks cannot appear in a tag"),
    ("tags=a/b", 7, "'/' cannot appear in a tag"),
    ("tags=pod.a=b=c", 13, "an affinity tag is KEY=VALUE with a single '='"),
    ("tags=ssd,=x", 10, "'' is not a label"),
    ("tags=pod.a=b;c", 13, "';' cannot appear in a label value"),
    ("x" * 5000, 4097, "longer than 4096 characters"),
]


@pytest.mark.parametrize(("text", "column", "fragment"), CONSTRAINTS_INVALID, ids=short)
def test_constraints_invalid(text: str, column: int, fragment: str) -> None:
    with pytest.raises(ConstraintError) as caught:
        parse_constraints(text)
    error = caught.value
    assert fragment in error.message, error.message
    assert error.column == column, error.message
    assert error.text == text
    assert len(error.message) < 400


# ---------------------------------------------------------------- properties

ENTRY_TEXT = st.one_of(
    st.text(max_size=40),
    st.from_regex(
        r"\A(?:(?:lxc|lxd|kvm|docker|LXC|zone|constraints|):)?"
        r"(?:[a-z0-9-]{0,12}|[0-9]{0,11}|new|zone|maas|Constraints: [a-z=0-9 ]{0,12})"
        r"(?:[=/][-a-z0-9:=/.^ ]{0,11})?\Z",
        fullmatch=True,
    ),
    st.from_regex(r"\Aconstraints:[ ]?(?:[a-z-]{1,12}=[-a-zA-Z0-9.,^\\ ]{0,8} ?){0,3}\Z"),
)

CONSTRAINT_TEXT = st.one_of(
    st.text(max_size=60),
    st.from_regex(
        r"\A(?:(?:arch|cores|cpu-cores|cpu-power|mem|root-disk|tags|zones|spaces|container"
        r"|allocate-public-ip|instance-type|maas-name|virt-type|foo)=[-a-zA-Z0-9.,^\\ _:]{0,10}"
        r"[ \t]{0,2}){0,4}\Z",
        fullmatch=True,
    ),
)


@settings(max_examples=300, deadline=None)
@given(
    value=st.one_of(ENTRY_TEXT, st.integers(), st.booleans(), st.floats(), st.none()),
    style=st.sampled_from(["deployer", "bundle"]),
)
def test_entries_parse_or_fail_cleanly(value: object, style: Style) -> None:
    try:
        directive = parse_entry(value, style)
    except DirectiveError as error:
        assert error.message
        if isinstance(value, str):
            assert 1 <= error.column <= len(value) + 1
        return
    assert PARSE[style](str(directive)) == directive


@settings(max_examples=300, deadline=None)
@given(text=CONSTRAINT_TEXT)
def test_constraints_parse_or_fail_cleanly(text: str) -> None:
    try:
        constraints = parse_constraints(text)
    except ConstraintError as error:
        assert error.message
        assert 1 <= error.column <= len(text) + 1
        return
    assert parse_constraints(str(constraints)) == constraints


@settings(max_examples=300, deadline=None)
@given(
    container=st.sampled_from([None, "lxc", "lxd", "kvm"]),
    service=st.from_regex(r"\A[a-z][a-z0-9]{0,5}(?:-[a-z0-9]{0,3}[a-z][a-z0-9]{0,3}){0,2}\Z"),
    index=st.one_of(st.none(), st.integers(min_value=0, max_value=999_999_999)),
    ordinal=st.booleans(),
)
def test_every_unit_placement_round_trips(
    container: Any, service: str, index: int | None, ordinal: bool
) -> None:
    # `new` is a new machine, and deployer `zone=N` a zone, not units of those services.
    assume(service != "new")
    assume(not (ordinal and index is not None and service in ("zone", "maas")))
    directive = WithUnit(service, index, container, ordinal)
    style: Style = "deployer" if ordinal else "bundle"
    assert PARSE[style](str(directive)) == directive
