"""Seed 004's use cases through the CLI, on spec files built from
examples/cloudstack-dedication.yaml (the seed's domain tree and topology): each asserts
the placement, the refusal or the error the seed states. The same rules run step by step
through the Python API in tests/test_cloudstack_corpus.py."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from placed.cli.main import app
from tests.test_readme import readme_commands

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "cloudstack-dedication.yaml"
BASE: dict[str, Any] = yaml.safe_load(EXAMPLE.read_text(encoding="utf-8"))
P1 = {"H1a", "H1b", "H11a", "H111a"}
P2 = {"H2a", "H2b", "H22a"}
Z2 = {"H4a", "H4b"}


def spec(
    tmp_path: Path,
    dedications: list[dict[str, Any]],
    workloads: list[dict[str, Any]],
    implicit: bool = True,
) -> str:
    document = {
        **BASE,
        "dedications": dedications,
        "workloads": workloads,
        "settings": {"implicit_dedication": implicit},
        "running": [],
    }
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(document, sort_keys=False), encoding="utf-8")
    return str(path)


def vm(name: str, account: str, units: int = 1, dedicated: bool = True) -> dict[str, Any]:
    offering = "dedicated-small" if dedicated else "shared-small"
    return {"name": name, "account": account, "offering": offering, "units": units}


def plan(path: str) -> tuple[int, dict[str, Any]]:
    done = CliRunner().invoke(app, ["plan", path, "-f", "json"])
    return done.exit_code, json.loads(done.stdout)


def hosts(data: dict[str, Any], workload: str) -> set[str]:
    return {p["target"] for p in data["placements"] if p["workload"] == workload}


def test_domain_level_1_root_admin_dedicates_to_any_domain(tmp_path: Path) -> None:
    path = spec(
        tmp_path,
        [
            {"resource": "p1", "domain": "D1"},
            {"resource": "c2", "domain": "SD1"},
            {"resource": "H3a", "domain": "SD3"},
            {"resource": "c4", "domain": "SD12"},
        ],
        [],
    )
    done = CliRunner().invoke(app, ["dedications", path, "-f", "json"])
    assert done.exit_code == 0, done.stdout
    own = {row["resource"]: row["domain"] for row in json.loads(done.stdout)["dedications"]}
    assert own == {"p1": "D1", "c2": "SD1", "H3a": "SD3", "c4": "SD12"}


def test_domain_level_2_a_pods_clusters_follow_it(tmp_path: Path) -> None:
    path = spec(tmp_path, [{"resource": "p1", "domain": "D1"}], [])
    done = CliRunner().invoke(app, ["dedications", path, "-f", "json", "--coverage"])
    assert done.exit_code == 0, done.stdout
    rows = {row["resource"]: row for row in json.loads(done.stdout)["coverage"]}
    for cluster in ("c1", "c11", "c111"):
        assert rows[cluster]["domain"] == "D1"
        assert rows[cluster]["inherited_from"] == "p1"
    assert rows["p1"]["inherited_from"] is None
    assert "c2" not in rows  # p2 is nobody's


def test_domain_level_3_subdomain_users_deploy_in_the_parents_pod(tmp_path: Path) -> None:
    path = spec(
        tmp_path,
        [{"resource": "p1", "domain": "D1"}],
        [vm("sd1", "A3"), vm("sd2", "A5"), vm("sd3", "U8")],
    )
    code, data = plan(path)
    assert code == 0
    for name in ("sd1", "sd2", "sd3"):
        assert hosts(data, name) <= P1


def test_domain_level_4_a_cluster_carved_out_for_sd3(tmp_path: Path) -> None:
    dedications = [{"resource": "p1", "domain": "D1"}, {"resource": "c11", "domain": "SD3"}]
    # D1, SD1 and SD2 fill what they may use of p1: never c11.
    others = [vm("d1", "A1", 3), vm("sd1", "A3", 3), vm("sd2", "A5", 3)]
    code, data = plan(spec(tmp_path, dedications, [*others, vm("sd3", "A7", 4)]))
    assert code == 0
    for name in ("d1", "sd1", "sd2"):
        assert "H11a" not in hosts(data, name)
    # SD3 uses c11, and its ancestors' p1 too (the seed's "verify": yes, a child uses
    # what its parents have).
    assert "H11a" in hosts(data, "sd3")


def test_domain_level_5_sibling_and_other_domains_cannot_use_sd1s_pod(tmp_path: Path) -> None:
    dedications = [{"resource": "p2", "domain": "SD1"}]
    workloads = [vm("sd11", "A9"), vm("sd12", "A11"), vm("d2", "A13"), vm("sd1", "A3")]
    code, data = plan(spec(tmp_path, dedications, workloads, implicit=False))
    assert code == 1
    assert hosts(data, "sd1") <= P2
    unplaced = {u["workload"]: u for u in data["unplaced"]}
    assert set(unplaced) == {"sd11", "sd12", "d2"}
    assert unplaced["d2"]["filtered"] == {"dedication": 13}
    assert "implicit dedication is off" in unplaced["d2"]["summary"]


def test_domain_level_6_a_pod_in_a_zone_dedicated_elsewhere_is_refused_at_its_line(
    tmp_path: Path,
) -> None:
    path = spec(
        tmp_path, [{"resource": "z1", "domain": "D2"}, {"resource": "p1", "domain": "D1"}], []
    )
    done = CliRunner().invoke(app, ["validate", path, "-f", "json"])
    assert done.exit_code == 2
    [error] = json.loads(done.stdout)["errors"]
    assert error["key"] == "dedications[1]"
    assert error["message"].startswith("ancestor-dedicated: zone z1 is dedicated to domain D2")
    assert error["line"] is not None


def test_domain_level_7_a_child_uses_the_parents_never_the_reverse(tmp_path: Path) -> None:
    dedications = [{"resource": "p1", "domain": "D1"}, {"resource": "p2", "domain": "SD1"}]
    path = spec(tmp_path, dedications, [vm("child", "A3"), vm("parent", "A1")])
    done = CliRunner().invoke(app, ["check", path, "-f", "json"])
    compatible = {
        w["workload"]: {t["target"] for t in w["targets"] if t["compatible"]}
        for w in json.loads(done.stdout)["workloads"]
    }
    assert compatible["child"] == P1 | P2  # SD1's own pod, and its parent D1's
    assert compatible["parent"] == P1  # never its child's


def test_account_level_1_and_2_only_that_account(tmp_path: Path) -> None:
    dedications = [{"resource": "c1", "domain": "D1", "account": "A1"}]
    workloads = [vm("a1", "A1", 2), vm("u2", "U2"), vm("a3", "A3"), vm("a13", "A13")]
    code, data = plan(spec(tmp_path, dedications, workloads, implicit=False))
    assert hosts(data, "a1") <= {"H1a", "H1b"}
    assert {u["workload"] for u in data["unplaced"]} == {"u2", "a3", "a13"}
    assert code == 1


def test_vm_deployment_1_exhausted_dedication_takes_an_empty_shared_host(tmp_path: Path) -> None:
    # A1's one dedicated host holds 4 small VMs; the fifth takes an empty shared host.
    dedications = [{"resource": "H1a", "domain": "D1", "account": "A1"}]
    code, data = plan(spec(tmp_path, dedications, [vm("a1", "A1", 5)]))
    assert code == 0
    landed = [p["target"] for p in data["placements"]]
    assert landed[:4] == ["H1a"] * 4 and landed[4] != "H1a"
    [made] = data["dedications_created"]
    assert made == {"resource": landed[4], "domain": "D1", "account": "A1", "implicit": True}
    assert "implicit-dedication" in [e["kind"] for e in data["events"]]


def test_vm_deployment_2_own_vms_first_then_empty_hosts(tmp_path: Path) -> None:
    # b: no dedications at all, so the first VM makes an empty host the account's; the
    # second joins it (a: a host with the account's VMs before an empty one).
    code, data = plan(spec(tmp_path, [], [vm("a3", "A3", 2)]))
    assert code == 0
    first, second = (p["target"] for p in data["placements"])
    assert first == second
    assert [d["resource"] for d in data["dedications_created"]] == [first]


def test_vm_deployment_3_other_accounts_cannot_use_an_implicit_host(tmp_path: Path) -> None:
    code, data = plan(spec(tmp_path, [], [vm("a3", "A3"), vm("a5", "A5"), vm("u4", "U4")]))
    assert code == 0
    places = [hosts(data, name) for name in ("a3", "a5", "u4")]
    assert len(set().union(*places)) == 3  # each account took a host of its own
    assert len(data["dedications_created"]) == 3


def test_vm_deployment_3_a_host_taken_implicitly_stays_taken_once_its_vm_runs(
    tmp_path: Path,
) -> None:
    """The next plan reads the VM as running and the dedication it made as stored
    (`running:` and an `implicit` dedication, as the service's world has them): the
    host is still its account's, so another account's shared VMs are kept off, and its
    own dedicated VMs go there first."""
    code, first = plan(spec(tmp_path, [], [vm("a3", "A3")]))
    assert code == 0 and first["dedications_created"]
    (made,) = first["dedications_created"]
    (taken,) = hosts(first, "a3")
    assert made == {"resource": taken, "domain": "SD1", "account": "A3", "implicit": True}
    path = spec(
        tmp_path,
        [made],
        [vm("a3", "A3", units=2), vm("u4", "U4", dedicated=False, units=8)],
    )
    document = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    document["running"] = [{"unit": "a3/0", "target": taken}]
    Path(path).write_text(yaml.safe_dump(document, sort_keys=False), encoding="utf-8")
    code, again = plan(path)
    assert code == 0
    assert taken not in hosts(again, "u4"), again["placements"]
    assert hosts(again, "a3") == {taken}  # its second VM joins it: own hosts first
    assert again["dedications_created"] == []  # nothing new was taken


def test_vm_deployment_4_without_the_flag_never_on_a_dedicated_pod(tmp_path: Path) -> None:
    dedications = [{"resource": p, "domain": "D1"} for p in ("p1", "p2", "p3")]
    code, data = plan(spec(tmp_path, dedications, [vm("shared", "A1", 3, dedicated=False)]))
    assert code == 0
    assert hosts(data, "shared") <= Z2


def test_a_zone_dedicated_to_a_domain_admits_all_its_vms_flagged_or_not(tmp_path: Path) -> None:
    # The design's Current Scenario: only users of the domain (or a subdomain) create
    # guests in a dedicated zone, with or without the dedicated offering; a pod dedicated
    # inside it still needs the offering.
    dedications = [
        {"resource": "z1", "domain": "D1"},
        {"resource": "p1", "domain": "SD1"},
        {"resource": "z2", "domain": "D2"},
    ]
    workloads = [
        vm("d1", "A1", 6, dedicated=False),
        vm("sd3", "A7", 6, dedicated=False),
        vm("d2", "A13", 2, dedicated=False),
    ]
    code, data = plan(spec(tmp_path, dedications, workloads))
    assert code == 0, data["unplaced"]
    rest_of_z1 = P2 | {"H3a", "H3b", "H33a", "H33b"}
    assert hosts(data, "d1") <= rest_of_z1
    assert hosts(data, "sd3") <= rest_of_z1
    assert hosts(data, "d2") <= Z2


def test_vm_deployment_5_every_zone_closed_fails_as_zone_closed(tmp_path: Path) -> None:
    dedications = [
        {"resource": "z1", "domain": "D2"},
        {"resource": "z2", "domain": "D2", "account": "A13"},
    ]
    code, data = plan(spec(tmp_path, dedications, [vm("shared", "A1", dedicated=False)]))
    assert code == 1
    [unplaced] = data["unplaced"]
    assert unplaced["summary"] == (
        "0/13 targets available: 11 are in zone z1, dedicated to domain D2 and closed to "
        "domain D1, 2 are in zone z2, dedicated to account A13 and closed to account A1"
    )
    assert unplaced["filtered"] == {"zone-dedication": 13}
    [failed] = [e for e in data["events"] if e["subject"] == "shared/0"]
    assert failed["kind"] == "zone-closed"
    assert failed["details"]["account"] == "A1"


def test_vm_deployment_5_no_host_fails_with_a_summary(tmp_path: Path) -> None:
    dedications = [{"resource": p, "domain": "D1"} for p in ("p1", "p2", "p3")]
    dedications.append({"resource": "z2", "domain": "D2"})
    code, data = plan(spec(tmp_path, dedications, [vm("shared", "A1", dedicated=False)]))
    assert code == 1
    [unplaced] = data["unplaced"]
    assert unplaced["summary"] == (
        "0/13 targets available: 11 are dedicated to domain D1, 2 are in zone z2, dedicated "
        "to domain D2 and closed to domain D1"
    )
    [failed] = [e for e in data["events"] if e["subject"] == "shared/0"]
    assert failed["kind"] == "placement-failed"


def test_requirement_5_and_guideline_2_fail_with_an_event_when_implicit_is_off(
    tmp_path: Path,
) -> None:
    dedications = [{"resource": "H1a", "domain": "D1", "account": "A1"}]
    code, data = plan(spec(tmp_path, dedications, [vm("a1", "A1", 5)], implicit=False))
    assert code == 1
    [unplaced] = data["unplaced"]
    assert "insufficient" in unplaced["summary"] or "cpu" in unplaced["summary"]
    assert "implicit dedication is off" in unplaced["summary"]
    failed = [e for e in data["events"] if e["kind"] == "placement-failed"]
    assert failed and "implicit dedication is off" in failed[0]["details"]["why"]


def test_guideline_1_dedicated_resources_only_with_the_flag(tmp_path: Path) -> None:
    dedications = [{"resource": p, "domain": "D1"} for p in ("p1", "p2", "p3")]
    workloads = [vm("flag", "A1", 2), vm("noflag", "A1", 2, dedicated=False)]
    code, data = plan(spec(tmp_path, dedications, workloads))
    assert hosts(data, "flag") <= P1 | P2 | {"H3a", "H3b", "H33a", "H33b"}
    assert hosts(data, "noflag") <= Z2
    assert code == 0


@pytest.mark.parametrize(
    ("dedications", "kind"),
    [
        ([{"resource": "p1", "domain": "D1"}, {"resource": "p1", "domain": "D1"}], "already"),
        ([{"resource": "c11", "domain": "SD3"}, {"resource": "p1", "domain": "D2"}], "descendant"),
        ([{"resource": "c1", "domain": "D1", "account": "A3"}], "invalid-parameter"),
        ([{"resource": "p9", "domain": "D1"}], "invalid-parameter"),
    ],
)
def test_illegal_dedications_fail_the_file(
    tmp_path: Path, dedications: list[dict[str, Any]], kind: str
) -> None:
    done = CliRunner().invoke(app, ["plan", spec(tmp_path, dedications, []), "-f", "json"])
    assert done.exit_code == 2
    [error] = json.loads(done.stdout)["errors"]
    assert kind in error["message"]


def test_check_explains_a_dedication_rejection_with_where_it_comes_from(tmp_path: Path) -> None:
    dedications = [{"resource": "p1", "domain": "D1"}, {"resource": "c11", "domain": "SD3"}]
    done = CliRunner().invoke(
        app, ["check", spec(tmp_path, dedications, [vm("d1", "A1")]), "-f", "json"]
    )
    [workload] = json.loads(done.stdout)["workloads"]
    rows = {row["target"]: row for row in workload["targets"]}
    [reason] = rows["H11a"]["reasons"]
    assert reason["filter"] == "dedication"
    assert reason["message"] == (
        "is dedicated to another tenant (domain SD3, inherited from cluster c11)"
    )


CLOUD = """
tenancy:
  domains:
    D1: {accounts: [A1], children: {SD1: {accounts: [A3]}}}
    D2: {accounts: [A13]}
inventory:
  - id: z1
    kind: zone
    children:
      - {id: p1, kind: pod, children: [{id: H1a, kind: host, capacity: {cpu: 4}},
                                       {id: H1b, kind: host, capacity: {cpu: 4}}]}
      - {id: p2, kind: pod, children: [{id: H2a, kind: host, capacity: {cpu: 4}},
                                       {id: H2b, kind: host, capacity: {cpu: 4}}]}
offerings:
  - {name: ded, cpu: 1, dedicated: true}
  - {name: shared, cpu: 1}
dedications:
  - {resource: p1, domain: D1}
running:
  - {unit: web/0, target: H1a}
  - {unit: db/0, target: H2a}
workloads:
  - {name: web, account: A3, offering: ded}
  - {name: db, account: A13, offering: shared}
"""


def test_requirement_7_migration_off_the_accounts_resources_fails(tmp_path: Path) -> None:
    path = tmp_path / "cloud.yaml"
    path.write_text(CLOUD, encoding="utf-8")
    args = ["simulate", str(path), "-f", "json", "--targets", "web/0"]
    moves = ["--migrate", "web/0=H1b", "--migrate", "web/0=H2b", "--migrate", "db/0=H1a"]
    done = CliRunner().invoke(app, [*args, *moves])
    assert done.exit_code == 1  # something was refused
    data = json.loads(done.stdout)
    assert data["migrated"] == [{"unit": "web/0", "from": "H1a", "to": "H1b"}]
    refused = {(r["unit"], r["to"]): r for r in data["refused"]}
    assert refused[("web/0", "H2b")]["kind"] == "migration-refused"
    # Refused, web/0 stays where the move before took it: `from` says so.
    assert refused[("web/0", "H2b")]["from"] == "H1b"
    assert "not dedicated to A3's domain chain" in refused[("web/0", "H2b")]["why"]
    assert "db/0 is not a dedicated VM" in refused[("db/0", "H1a")]["why"]
    assert [e["kind"] for e in data["events"]] == ["migration-refused"] * 2
    # After the legal move, web/0 may go back to H1a only (p2 is nobody's).
    assert data["targets"] == {"web/0": ["H1a"]}


def test_requirement_8_a_dedicated_pool_serves_its_owner_only(tmp_path: Path) -> None:
    # The example's pools: ps-c1 (cluster c1) dedicated to D1, ps-z1 zone-wide and shared.
    done = CliRunner().invoke(app, ["plan", str(EXAMPLE), "-f", "json"])
    assert done.exit_code == 0
    pool = {p["unit"]: p["pool"] for p in json.loads(done.stdout)["placements"]}
    assert pool["dedicated-a1/1"] == "ps-c1"  # A1 (D1) on c1: the pool dedicated to D1
    assert pool["shared-u2/1"] == "ps-z1"  # a shared VM never on a dedicated pool
    # With ps-z1 too small, a shared VM on a host that reaches only it has nowhere to go.
    document = {
        **BASE,
        "storage": [
            {"id": "ps-z1", "scope": "zone", "at": "z1", "capacity": 5},
            {"id": "ps-c1", "scope": "cluster", "at": "c1", "capacity": 500},
        ],
        "dedications": [
            {"resource": "z2", "domain": "D2"},
            {"resource": "ps-c1", "domain": "D1", "account": "A1"},
        ],
        "workloads": [vm("shared", "U2", dedicated=False)],
        "running": [],
    }
    path = tmp_path / "pools.yaml"
    path.write_text(yaml.safe_dump(document, sort_keys=False), encoding="utf-8")
    code, data = plan(str(path))
    assert code == 1
    [unplaced] = data["unplaced"]
    assert "reach no storage pool with 20 GB free that U2 may use" in unplaced["summary"]


def test_maintenance_replaces_a_hosts_vms_under_the_same_rules(tmp_path: Path) -> None:
    path = tmp_path / "cloud.yaml"
    path.write_text(CLOUD, encoding="utf-8")
    args = ["simulate", str(path), "-f", "json"]
    # web/0 (a dedicated VM of A3, SD1) leaves H1a for the other host of D1's p1; then
    # H1b too: nothing dedicated is left, so an empty shared host becomes A3's.
    done = CliRunner().invoke(app, [*args, "--maintenance", "H1a", "--maintenance", "H1b"])
    assert done.exit_code == 0, done.stdout
    data = json.loads(done.stdout)
    assert data["migrated"] == [
        {"unit": "web/0", "from": "H1a", "to": "H1b"},
        {"unit": "web/0", "from": "H1b", "to": "H2b"},
    ]
    assert [e["kind"] for e in data["events"]] == ["implicit-dedication"]
    # db/0 (shared) can go nowhere else: H2b is A3's now, p1 is D1's.
    done = CliRunner().invoke(
        app, [*args, "--maintenance", "H1a", "--maintenance", "H1b", "--maintenance", "H2a"]
    )
    assert done.exit_code == 1
    [refused] = json.loads(done.stdout)["refused"]
    assert refused["unit"] == "H2a" and refused["kind"] == "no-capacity"


def dedications(*args: str) -> tuple[int, str]:
    done = CliRunner().invoke(app, ["dedications", str(EXAMPLE), *args])
    return done.exit_code, done.stdout + done.stderr


def test_requirement_1_root_dedicates_a_zone_pod_cluster_or_host() -> None:
    # Operations run dedicate, update, release: H2a inside SD1's p2, z2 to all of D2.
    code, out = dedications(
        "--dedicate", "p3=D1", "--dedicate", "H2a=SD1", "--update", "z2=D2", "-f", "json"
    )
    assert code == 0, out
    kinds = {d["resource"]: d["kind"] for d in json.loads(out)["dedications"]}
    assert {kinds["z2"], kinds["p3"], kinds["H2a"], kinds["c11"]} == {
        "zone", "pod", "host", "cluster"
    }  # fmt: skip


@pytest.mark.parametrize("principal", ["domain-admin:D1", "user:A1", "domain-admin:SD3", "user:U8"])
def test_user_permissions_1_and_3_only_root_dedicates_releases_or_updates(principal: str) -> None:
    for operation in (["--dedicate", "H3a=D1"], ["--release", "p1"], ["--update", "p2=SD2"]):
        code, out = dedications("--as", principal, *operation)
        assert code == 2 and "permission-denied" in out, (principal, operation, out)


def test_user_permissions_2_and_3_users_see_what_is_theirs_to_use() -> None:
    # A user of SD3 may use SD3's c11, SD2's c3, SD1's p2 and D1's p1: all listed;
    # A13's z2 and nothing of D2's is.
    code, out = dedications("--as", "user:A7", "-f", "json")
    assert code == 0
    assert {d["resource"] for d in json.loads(out)["dedications"]} == {
        "p1", "c11", "p2", "c3", "ps-c1"
    }  # fmt: skip
    code, out = dedications("--as", "user:U14", "-f", "json")
    assert {d["resource"] for d in json.loads(out)["dedications"]} == set()  # z2 is A13's


def test_requirement_2_the_offering_says_whether_dedication_is_required(tmp_path: Path) -> None:
    # The same account, two offerings: one lands on its dedicated cluster, one beside it.
    dedications = [{"resource": "c1", "domain": "D1", "account": "A1"}]
    workloads = [vm("flag", "A1"), vm("noflag", "A1", dedicated=False)]
    code, data = plan(spec(tmp_path, dedications, workloads))
    assert code == 0
    assert hosts(data, "flag") <= {"H1a", "H1b"}
    assert not hosts(data, "noflag") & {"H1a", "H1b"}


def test_requirement_3_only_the_domains_vms_under_a_dedicated_zone(tmp_path: Path) -> None:
    dedications = [{"resource": "z1", "domain": "SD1"}]
    workloads = [vm("sd2", "A5", 4), vm("d2", "A13"), vm("d1", "A1")]
    code, data = plan(spec(tmp_path, dedications, workloads, implicit=False))
    assert hosts(data, "sd2") and hosts(data, "sd2") <= P1 | P2 | {"H3a", "H3b", "H33a", "H33b"}
    assert {u["workload"] for u in data["unplaced"]} == {"d2", "d1"}  # D1 is SD1's parent
    assert code == 1


def test_requirement_4_only_flagged_vms_use_dedicated_resources(tmp_path: Path) -> None:
    dedications = [{"resource": "p1", "domain": "D1"}, {"resource": "p2", "domain": "D1"}]
    code, data = plan(spec(tmp_path, dedications, [vm("shared", "A1", 8, dedicated=False)]))
    assert code == 0
    assert not hosts(data, "shared") & (P1 | P2)


def test_requirement_6_implicit_dedication_finds_a_new_unused_host(tmp_path: Path) -> None:
    code, data = plan(spec(tmp_path, [], [vm("a7", "A7", 5)]))  # 4 fit on one host
    assert code == 0
    made = [d["resource"] for d in data["dedications_created"]]
    assert len(made) == 2 and len(set(made)) == 2  # a second unused host when the first is full
    assert hosts(data, "a7") == set(made)
    assert all(d["account"] == "A7" and d["implicit"] for d in data["dedications_created"])


# -- CloudStack as CloudStack behaves ---------------------------------------------------


def test_the_readme_lists_the_commands_it_promises() -> None:
    # tests/test_readme.py runs every command of the README as written.
    commands = [c for c, _ in readme_commands() if "cloudstack-dedication" in c]
    assert len(commands) >= 10
    for needed in ("--migrate", "--targets", "--maintenance", "--coverage", "--account"):
        assert any(needed in command for command in commands), needed


def json_of(*args: str) -> bytes:
    done = CliRunner().invoke(app, [*args, "--format", "json"])
    assert done.exit_code in (0, 1), done.stdout + done.stderr
    return done.stdout_bytes


@pytest.mark.parametrize(
    "args",
    [
        ("plan", str(EXAMPLE)),
        ("simulate", str(EXAMPLE), "--migrate", "dedicated-a1/0=H4a", "--targets", "shared-u2/0"),
        ("simulate", str(EXAMPLE), "--migrate", "shared-u2/0=H1a", "--maintenance", "H1a"),
    ],
    ids=["plan", "migrate", "maintenance"],
)
def test_json_is_the_same_bytes_on_every_run_with_the_specs_clock(args: tuple[str, ...]) -> None:
    first, second = json_of(*args), json_of(*args)
    assert first == second
    events = json.loads(first)["events"]
    assert events and {e["time"] for e in events} == {"2026-12-01T09:00:00+00:00"}


def test_without_settings_now_events_have_no_time(tmp_path: Path) -> None:
    path = spec(tmp_path, [{"resource": "p1", "domain": "D1"}], [vm("a1", "A1")])
    first, second = json_of("plan", path), json_of("plan", path)
    assert first == second
    events = json.loads(first)["events"]
    assert events and all(e["time"] is None for e in events)


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ('"yesterday"', "'yesterday' is not an ISO-8601 time: write one as 2026-12-01T09:00:00Z"),
        ("2026-12-01", "2026-12-01 is a date, not a time: write 2026-12-01T00:00:00Z"),
        ('"2026-12-01T09:00:00"', "2026-12-01T09:00:00 has no UTC offset"),
        ("12", "settings.now"),
    ],
)
def test_settings_now_must_be_an_iso_time_with_its_offset(
    tmp_path: Path, value: str, message: str
) -> None:
    path = tmp_path / "spec.yaml"
    text = EXAMPLE.read_text(encoding="utf-8")
    path.write_text(text.replace('now: "2026-12-01T09:00:00Z"', f"now: {value}"))
    done = CliRunner().invoke(app, ["validate", str(path)])
    assert done.exit_code == 2
    assert "Traceback" not in done.stderr
    line = 1 + text.splitlines().index(
        next(row for row in text.splitlines() if row.lstrip().startswith("now:"))
    )
    assert f"{path}:{line}:" in done.stderr
    assert message in " ".join(done.stderr.split())


def test_an_unquoted_yaml_time_is_taken(tmp_path: Path) -> None:
    path = tmp_path / "spec.yaml"
    text = EXAMPLE.read_text(encoding="utf-8")
    path.write_text(text.replace('now: "2026-12-01T09:00:00Z"', "now: 2026-12-01T10:00:00+01:00"))
    events = json.loads(json_of("plan", str(path)))["events"]
    assert {e["time"] for e in events} == {"2026-12-01T10:00:00+01:00"}


def failures(data: dict[str, Any]) -> dict[str, str]:
    return {
        e["subject"]: e["kind"]
        for e in data["events"]
        if e["kind"] in ("placement-failed", "zone-closed")
    }


def test_every_failed_request_records_an_event_whatever_its_mode(tmp_path: Path) -> None:
    # Every host full of D2's VMs: a strict request, a preferred one after its fall-back
    # to shared hosts, and an unflagged one all fail, and each unit says so.
    document = {
        **BASE,
        "dedications": [],
        "offerings": [
            *BASE["offerings"],
            {
                "name": "preferred",
                "cpu": 1,
                "memory": 2,
                "dedicated": True,
                "implicit": "preferred",
            },
            {"name": "big", "cpu": 4, "memory": 8},
        ],
        "workloads": [
            {"name": "fill", "account": "A13", "offering": "big", "units": 13},
            vm("strict", "A1", 2),
            {"name": "pref", "account": "A1", "offering": "preferred", "units": 2},
            vm("shared", "A1", 2, dedicated=False),
        ],
        "running": [],
    }
    path = tmp_path / "full.yaml"
    path.write_text(yaml.safe_dump(document, sort_keys=False), encoding="utf-8")
    code, data = plan(str(path))
    assert code == 1
    assert {u["unit"] for u in data["unplaced"]} == {
        f"{w}/{i}" for w in ("strict", "pref", "shared") for i in (0, 1)
    }
    assert failures(data) == {
        f"{w}/{i}": "placement-failed" for w in ("strict", "pref", "shared") for i in (0, 1)
    }
    failed = [e for e in data["events"] if e["subject"] == "pref/0"]
    assert failed[0]["details"]["offering"] == "preferred"
    assert failed[0]["details"]["why"].startswith("0/13 targets available")


def test_a_failed_maintenance_records_its_event(tmp_path: Path) -> None:
    # web/0 runs on H1a, the only host dedicated to A1 with room; implicit dedication off.
    document = {
        **BASE,
        "settings": {"implicit_dedication": False, "now": "2026-12-01T09:00:00Z"},
        "dedications": [{"resource": "c1", "domain": "D1", "account": "A1"}],
        "offerings": [
            *BASE["offerings"],
            {"name": "big", "cpu": 4, "memory": 8, "dedicated": True},
        ],
        "workloads": [vm("web", "A1"), {"name": "fill", "account": "A1", "offering": "big"}],
        "running": [{"unit": "web/0", "target": "H1a"}, {"unit": "fill/0", "target": "H1b"}],
    }
    path = tmp_path / "maintenance.yaml"
    path.write_text(yaml.safe_dump(document, sort_keys=False), encoding="utf-8")
    done = CliRunner().invoke(app, ["simulate", str(path), "--maintenance", "H1a", "-f", "json"])
    assert done.exit_code == 1, done.stdout + done.stderr
    data = json.loads(done.stdout)
    assert data["migrated"] == []
    [refused] = data["refused"]
    assert refused["kind"] == "no-capacity"
    [event] = data["events"]
    assert event["kind"] == "maintenance-failed"
    assert event["subject"] == "H1a"
    assert event["details"]["vm"] == "web/0"
    assert event["time"] == "2026-12-01T09:00:00+00:00"


def test_maintenance_of_a_host_without_vms_says_so() -> None:
    done = CliRunner().invoke(app, ["simulate", str(EXAMPLE), "--maintenance", "H2b"])
    assert done.exit_code == 0
    assert "host H2b runs no VMs: maintenance moves nothing" in done.stdout
    data = json.loads(json_of("simulate", str(EXAMPLE), "--maintenance", "H2b"))
    assert data["notes"] == ["host H2b runs no VMs: maintenance moves nothing"]
    assert data["migrated"] == [] and data["refused"] == []


def test_the_examples_running_vms_migrate_and_list_their_targets() -> None:
    data = json.loads(
        json_of(
            "simulate",
            str(EXAMPLE),
            "--migrate",
            "dedicated-a1/0=H1b",
            "--migrate",
            "dedicated-a1/0=H4a",
            "--targets",
            "dedicated-a7/0",
        )
    )
    assert data["migrated"] == [{"unit": "dedicated-a1/0", "from": "H1a", "to": "H1b"}]
    [refused] = data["refused"]
    assert "zone z2 is dedicated to account A13: not available for account A1" in refused["why"]
    # A7 (SD3) may use c11 (SD3's), c3 (SD2's), p2 (SD1's) and the rest of p1 (D1's).
    assert set(data["targets"]["dedicated-a7/0"]) == {"H1a", "H1b", "H111a", "H3a", "H3b"} | P2


@pytest.mark.parametrize(
    ("args", "flag", "named"),
    [
        (("--kind", "hosts"), "--kind", "cluster, host, pod, pool, zone"),
        (("--domain", "D9"), "--domain", "D1, D2, ROOT, SD1, SD11, SD12, SD2, SD3"),
        (("--account", "A7"), "--account", "A7 is in SD3"),
        (("--account", "A7", "--domain", "D1"), "--account", "it is in domain SD3"),
    ],
)
def test_listing_filters_that_name_nothing_are_errors(
    args: tuple[str, ...], flag: str, named: str
) -> None:
    code, out = dedications(*args)
    assert code == 2
    assert f"error: {flag}: invalid-parameter:" in out
    assert named in " ".join(out.split())


def test_listing_an_account_with_its_domain() -> None:
    code, out = dedications("--domain", "D2", "--account", "A13", "-f", "json")
    assert code == 0
    assert [d["resource"] for d in json.loads(out)["dedications"]] == ["z2"]


def test_explain_of_a_vm_on_the_host_it_took_says_chosen_there() -> None:
    """The issue's contradiction: `placed explain` judged U14's VM in the state before
    implicit dedication gave it H33a ("H33a chosen - dedication: is not dedicated to
    U14's domain chain"); it is judged where its placement came from."""
    example = Path(__file__).parent.parent / "examples" / "cloudstack-dedication.yaml"
    done = CliRunner().invoke(app, ["explain", str(example), "dedicated-a14/0", "--format", "json"])
    assert done.exit_code == 0, done.output
    found = json.loads(done.stdout)
    assert found["target"] == "H33a"
    assert found["reason"].startswith("implicit dedication: ")
    verdicts = {v["target"]: v for v in found["targets"]}
    assert (verdicts["H33a"]["compatible"], verdicts["H33a"]["reasons"]) == (True, [])
    # The hosts that refused it still say why, as they did.
    assert [r["filter"] for r in verdicts["H33b"]["reasons"]] == ["dedication"]
