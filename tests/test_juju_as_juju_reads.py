"""Issue 15, points 2 and 3, through the CLI: misspelt keys of Juju files are errors at
their line with a did-you-mean (keys Juju accepts and placed ignores are fine), and Juju
files are read as Juju reads them (detection, the verifier's rules, check and validate
agreeing with plan, lxd:new constraints, --portable with every other error, re-planning
against the model's own status)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from placed.cli.main import app
from placed.spec.juju.files import KEY_TABLES

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def invoke(*args: str) -> tuple[int, str, str]:
    done = CliRunner().invoke(app, list(args))
    return done.exit_code, done.stdout, done.stderr


def write(tmp_path: Path, text: str, name: str = "file.yaml") -> str:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


# -- point 2: misspelt keys ---------------------------------------------------------

MISSPELT_BUNDLE = """\
applications:
  mysql:
    charm: cs:mysql
    num_unit: 2
    contraints: mem=4G
    optoins: {max-connections: 10}
"""


def test_misspelt_bundle_keys_are_errors_with_did_you_mean(tmp_path: Path) -> None:
    path = write(tmp_path, MISSPELT_BUNDLE)
    code, _, err = invoke("validate", path)
    assert code == 2
    assert f"{path}:4:5:" in err and "did you mean 'num_units'?" in err
    assert f"{path}:5:5:" in err and "did you mean 'constraints'?" in err
    assert f"{path}:6:5:" in err and "did you mean 'options'?" in err
    assert "Traceback" not in err


def test_misspelt_deployer_keys_are_errors(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "prod:\n  series: trusty\n  servics: {}\n  services:\n    mysql:\n      num_unit: 1\n",
    )
    code, _, err = invoke("plan", path)
    assert code == 2
    assert f"{path}:3:3:" in err and "did you mean 'services'?" in err
    assert f"{path}:6:7:" in err and "did you mean 'num_units'?" in err


def test_keys_juju_accepts_and_placed_ignores_are_fine(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """\
description: every key Juju's bundledata.go knows
tags: [db]
series: jammy
saas:
  remote: {url: "admin/default.mysql"}
relations: [[wordpress, mysql]]
applications:
  mysql:
    charm: cs:mysql
    channel: stable
    revision: 3
    num_units: 1
    options: {max-connections: 10}
    annotations: {gui-x: "1"}
    bindings: {"": alpha}
    storage: {data: 10G}
    devices: {gpu: 1,nvidia.com/gpu}
    resources: {image: 2}
    plan: default
    trust: true
  wordpress:
    charm: cs:wordpress
    num_units: 1
    to: ["lxd:mysql/0"]
---
applications:
  mysql:
    offers:
      db: {endpoints: [db], acl: {admin: admin}}
    exposed-endpoints:
      "": {expose-to-cidrs: [10.0.0.0/8]}
""",
    )
    code, out, err = invoke("validate", "--strict", path)
    assert code == 0, err
    assert "ok bundle" in out


def test_the_key_tables_name_their_upstream_source() -> None:
    for tables in KEY_TABLES.values():
        for table in tables:
            assert table.source and not set(table.used) & set(table.ignored)


# -- point 3: read as Juju reads them -------------------------------------------------


def test_deployer_file_with_series_before_services_is_detected(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "prod:\n  series: trusty\n  services:\n    mysql:\n      num_units: 1\n      to: 0\n",
    )
    code, out, err = invoke("plan", path, "-f", "json")
    assert code == 0, err
    assert json.loads(out)["placements"][0]["target"] == "0"


def test_top_level_services_is_a_bundle(tmp_path: Path) -> None:
    # A bundle must declare machine 0 (Juju 2+, juju-deployer 0.11's version 4).
    path = write(tmp_path, "services:\n  mysql:\n    num_units: 1\n    to: [0]\n")
    code, _, err = invoke("plan", path)
    assert code == 2 and "machine 0 is not declared under machines:" in err
    path = write(
        tmp_path,
        "services:\n  mysql:\n    num_units: 1\n  wp:\n    num_units: 1\n    to: [lxd:mysql/0]\n",
        "ok.yaml",
    )
    code, out, err = invoke("plan", path, "-f", "json")
    assert code == 0, err
    where = {p["unit"]: p["target"] for p in json.loads(out)["placements"]}
    assert where == {"mysql/0": "0", "wp/0": "0/lxd/0"}


def test_force_machine_is_honoured(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "prod:\n  services:\n    mysql:\n      force-machine: 0\n    web:\n      num_units: 1\n",
    )
    code, out, err = invoke("plan", path, "-f", "json")
    assert code == 0, err
    where = {p["unit"]: p["target"] for p in json.loads(out)["placements"]}
    assert where["mysql/0"] == "0"


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (
            "applications:\n  web:\n    num_units: 2\n    to: [0, 1, new]\nmachines:\n  0:\n  1:\n",
            "too many units specified in unit placement",
        ),
        (
            "applications:\n  web:\n    num_units: 1\n    to: [0, nosuch]\nmachines:\n  0:\n",
            "not defined in this bundle (nosuch)",
        ),
        (
            "applications:\n  db:\n    num_units: 2\n  app:\n    num_units: 1\n    to: [db/3]\n",
            "so there is no db/3",
        ),
        (
            "series: focal\napplications:\n  db:\n    num_units: 1\n    to: [0]\n"
            "machines:\n  0: {series: jammy}\n",
            "declared with series jammy and db deploys focal",
        ),
    ],
)
def test_bundle_verifier_rules(tmp_path: Path, spec: str, message: str) -> None:
    code, _, err = invoke("plan", write(tmp_path, spec))
    assert code == 2 and message in err, err


def test_check_agrees_with_plan_on_the_deployer_example() -> None:
    code, out, err = invoke("check", str(EXAMPLES / "juju-deployer.yaml"), "-f", "json")
    assert code == 0, err
    rows = {row["workload"]: row for row in json.loads(out)["workloads"]}
    assert rows["mysql"]["compatible_targets"] == 1
    assert rows["mysql"]["targets"][0] == {**rows["mysql"]["targets"][0], "compatible": True}


def test_a_bundle_without_machines_validates_strictly(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "applications:\n  db:\n    num_units: 2\n  wp:\n    num_units: 1\n    to: [lxd:db/0]\n",
    )
    code, out, err = invoke("validate", "--strict", path)
    assert code == 0, out + err
    code, _, err = invoke("check", path)
    assert code == 0, err


def test_lxd_new_carries_the_application_constraints(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "applications:\n  db:\n    num_units: 1\n    constraints: mem=8G\n    to: [lxd:new]\n",
    )
    code, out, _ = invoke("plan", path, "-f", "changes")
    assert code == 0
    assert "- add new machine 0 with constraints mem=8192M" in out.splitlines()


def test_portable_reports_machines_with_every_other_error(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "prod:\n  services:\n    db:\n      num_units: 1\n      to: [1]\n"
        "    web:\n      to: [nosuch]\n",
    )
    code, _, err = invoke("validate", "--portable", path)
    assert code == 2
    assert "names machine 1; only machine 0 is portable" in err
    assert "no service named 'nosuch'" in err


def test_replanning_against_the_models_own_status_changes_nothing(tmp_path: Path) -> None:
    bundle = write(
        tmp_path,
        "applications:\n  db:\n    num_units: 2\n    to: [0, lxd:1]\n"
        "  web:\n    num_units: 1\n    to: [db/0]\nmachines:\n  0:\n  1:\n",
    )
    status = write(
        tmp_path,
        "machines:\n  '0': {}\n  '1': {containers: {1/lxd/0: {}}}\n"
        "applications:\n  db:\n    units:\n      db/0: {machine: '0'}\n"
        "      db/1: {machine: 1/lxd/0}\n"
        "  web:\n    units:\n      web/0: {machine: '0'}\n",
        "status.yaml",
    )
    code, out, err = invoke("plan", bundle, "--status", status, "-f", "changes")
    assert code == 0, err
    assert [line for line in out.splitlines() if "add" in line] == []


def test_an_unmappable_declared_machine_is_a_warning_not_an_idle_machine(
    tmp_path: Path,
) -> None:
    bundle = write(
        tmp_path, "applications:\n  db:\n    num_units: 1\n    to: [0]\nmachines:\n  0:\n"
    )
    # db/0 runs, but with no machine yet: nothing tells which machine bundle machine 0 is.
    status = write(tmp_path, "applications:\n  db:\n    units:\n      db/0: {}\n", "status.yaml")
    code, out, err = invoke("plan", bundle, "--status", status, "-f", "json")
    assert code == 0, err
    document = json.loads(out)
    assert document["new_targets"] == []
    assert [w["code"] for w in document["warnings"]] == ["unmapped-machine"]


def test_the_readme_renders_every_key_table() -> None:
    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text()
    section = readme[readme.index("#### Keys") : readme.index("#### Rules")]
    for tables in KEY_TABLES.values():
        for table in tables:
            for key in (*table.used, *table.ignored):
                assert key in section, (table.part, key)


OVERLAY_BASE = """\
applications:
  db:
    charm: cs:mysql
    num_units: 1
  legacy:
    charm: cs:legacy
    num_units: 1
  web:
    charm: cs:wordpress
    num_units: 1
    to: ["lxd:db/0"]
"""


def test_overlay_file_is_merged_as_juju_deploy_overlay_merges_it(tmp_path: Path) -> None:
    base = write(tmp_path, OVERLAY_BASE)
    overlay = write(
        tmp_path,
        "applications:\n  db:\n    num_units: 2\n    constraints: mem=4G\n  legacy:\n",
        "overlay.yaml",
    )
    for command in ("plan", "check", "validate"):
        code, out, err = invoke(command, base, "--overlay", overlay, "-f", "json")
        assert code == 0, (command, err)
    code, out, err = invoke("convert", base, "--overlay", overlay)
    assert code == 0, err
    assert "legacy" not in out and "units: 2" in out
    code, out, _ = invoke("plan", base, "--overlay", overlay, "-f", "json")
    document = json.loads(out)
    where = {p["unit"]: p["target"] for p in document["placements"]}
    # db has two units with the overlay's constraints, legacy is gone, web keeps its to:.
    assert where == {"db/0": "0", "db/1": "1", "web/0": "0/lxd/0"}
    assert {t["constraints"] for t in document["new_targets"] if t["kind"] == "machine"} == {
        "mem=4096M"
    }


def test_several_documents_of_one_bundle_file_are_one_bundle(tmp_path: Path) -> None:
    path = write(tmp_path, OVERLAY_BASE + "---\napplications:\n  legacy:\n")
    code, out, err = invoke("plan", path, "-f", "json")
    assert code == 0, err
    units = {p["unit"] for p in json.loads(out)["placements"]}
    assert units == {"db/0", "web/0"}


def test_overlay_errors_name_the_overlay_file(tmp_path: Path) -> None:
    base = write(tmp_path, OVERLAY_BASE)
    overlay = write(
        tmp_path, "applications:\n  web:\n    to: [lxd:nosuch/0]\n    num_unit: 2\n", "o.yaml"
    )
    code, _, err = invoke("validate", base, "--overlay", overlay)
    assert code == 2
    assert f"{overlay}:4:5:" in err and "did you mean 'num_units'?" in err
    assert f"{overlay}:3:10:" in err and "nosuch" in err
    # simulate reads the overlay before it looks at what goes down.
    code, _, err = invoke("simulate", base, "--overlay", overlay, "--down", "0")
    assert code == 2 and f"{overlay}:4:5:" in err
    code, _, err = invoke("plan", str(EXAMPLES / "juju-deployer.yaml"), "--overlay", overlay)
    assert code == 2 and "--overlay merges into a bundle" in err
