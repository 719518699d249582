"""Juju files through the CLI: detection, --status, --format changes, errors at their
line, and the native spec untouched."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from placed.cli.main import app

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def invoke(*args: str) -> tuple[int, str, str]:
    done = CliRunner().invoke(app, list(args))
    return done.exit_code, done.stdout, done.stderr


def test_changes_read_like_a_juju_dry_run() -> None:
    code, out, _ = invoke("plan", str(EXAMPLES / "juju-deployer.yaml"), "-f", "changes")
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == "- deploy application wordpress"
    # A machine is added before the unit that needs it, and a container before its unit.
    assert lines.index("- add new machine 1") < lines.index(
        "- add unit wordpress/0 to new machine 1"
    )
    assert "- add unit mysql/0 to machine 0" in lines
    container = lines.index("- add lxc container 1/lxc/0 on new machine 1")
    assert lines[container + 1] == "- add unit redis-server/0 to container 1/lxc/0"
    assert "- add unit serenade/0 to container 3/lxc/0" in lines


def test_changes_is_for_plan_only() -> None:
    code, _, err = invoke("check", str(EXAMPLES / "juju-deployer.yaml"), "-f", "changes")
    assert code == 2 and "'changes' is not one of 'table', 'wide', 'json', 'yaml'" in err


def test_a_bundle_with_status_resolves_against_what_runs(tmp_path: Path) -> None:
    bundle = tmp_path / "bundle.yaml"
    bundle.write_text(
        "applications:\n"
        "  wordpress: {charm: wordpress, num_units: 3}\n"
        "  cache: {charm: memcached, num_units: 2, to: ['lxd:wordpress/0', 'wordpress/1']}\n"
        "machines: {}\n"
    )
    status = tmp_path / "status.yaml"
    status.write_text(
        "machines:\n"
        '  "0": {}\n'
        '  "4":\n'
        "    containers:\n"
        "      4/lxd/0: {}\n"
        "applications:\n"
        "  wordpress:\n"
        "    units:\n"
        "      wordpress/0: {machine: '4'}\n"
        "      wordpress/1: {machine: '0'}\n"
    )
    code, out, err = invoke("plan", str(bundle), "--status", str(status), "-f", "json")
    assert code == 0, err
    where = {p["unit"]: p["target"] for p in json.loads(out)["placements"]}
    # Existing units stay and are not planned again; one unit is added, numbered after.
    assert where == {"wordpress/2": "5", "cache/0": "4/lxd/1", "cache/1": "0"}


def test_errors_of_a_juju_file_are_reported_together_at_their_lines(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "web:\n"
        "  services:\n"
        "    mysql: {to: 0}\n"
        "    wordpress:\n"
        "      to: [mysql, 'docker:0', nosuch]\n"
        "      constraints: mem=lots\n"
    )
    code, out, _ = invoke("validate", str(bad), "-f", "json")
    assert code == 2
    errors = {(e["line"], e["column"]): e["message"] for e in json.loads(out)["errors"]}
    assert "nested placement" in errors[(5, 12)]
    assert "docker" in errors[(5, 19)]
    assert "nosuch" in errors[(5, 31)]
    assert any(line == 6 and "mem" in message for (line, _), message in errors.items())


def test_input_format_juju_forces_the_reader(tmp_path: Path) -> None:
    native = str(EXAMPLES / "ironic-affinity.yaml")
    code, _, err = invoke("validate", "--input-format", "juju", native)
    assert code == 2 and "not a Juju file" in err
    code, out, _ = invoke(
        "validate", "-f", "json", "--input-format", "juju", str(EXAMPLES / "juju-deployer.yaml")
    )
    assert code == 0 and json.loads(out)["workloads"] == 5


def test_explain_shows_the_directive_each_target_was_judged_by() -> None:
    code, out, _ = invoke("explain", str(EXAMPLES / "juju-deployer.yaml"), "ceph/1", "-f", "json")
    assert code == 0, out
    data = json.loads(out)
    assert data["target"] == "2"
    rows = {row["target"]: row for row in data["targets"]}
    assert rows["2"]["compatible"] is True
    [reason] = rows["0"]["reasons"]
    assert reason == {
        "filter": "directive",
        "message": "is not 2, where ceph/1 is directed (to wordpress)",
    }


def test_a_bundle_asking_for_too_many_units_is_refused_at_once(tmp_path: Path) -> None:
    # 3 services of 100,000 units each: the per-service bound holds, the total does not.
    services = "".join(f"  s{i}: {{charm: x, num_units: 100000}}\n" for i in range(3))
    bundle = tmp_path / "huge.yaml"
    bundle.write_text(f"applications:\n{services}machines: {{}}\n")
    code, _, err = invoke("validate", str(bundle))
    assert code == 2
    assert "300,000 units together" in err and "at most 200,000" in err


NATIVE = """
inventory:
  - id: z1
    kind: zone
    children:
      - {id: h1, properties: {cores: 8, mem: 16384}, tags: [ssd]}
      - {id: h2, properties: {cores: 4, mem: 8192}}
      - {id: h3, properties: {cores: 16, mem: 65536}, tags: [ssd]}
running:
  - {unit: db/0, target: h3}
workloads:
  - name: web
    units: 3
    to: ["db/0", "lxd:h2"]
    juju_constraints: "cores=8 tags=ssd"
  - name: db
    units: 2
"""


def test_a_native_spec_takes_directives_and_juju_constraints(tmp_path: Path) -> None:
    spec = tmp_path / "native.yaml"
    spec.write_text(NATIVE)
    code, out, err = invoke("plan", str(spec), "-f", "json")
    assert code == 0, err
    data = json.loads(out)
    where = {p["unit"]: p["target"] for p in data["placements"]}
    assert where["web/0"] == "h3"  # beside the running db/0
    assert where["web/1"] == "h2/lxd/0"  # a new container on h2
    # Default placement over existing targets, filtered by the service's constraints:
    # not h2 (4 cores, no ssd), not the container made for web/1.
    assert where["web/2"] in {"h1", "h3"}
    assert set(where) == {"web/0", "web/1", "web/2", "db/1"}  # db/0 runs already
    assert [t["id"] for t in data["new_targets"]] == ["h2/lxd/0"]
