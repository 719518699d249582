"""`placed simulate` on Juju files: machines and containers the plan made can fail or come
back, and the units on them are placed again as the directives say (or stay unplaced,
with the reason), never a traceback."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from placed.cli.main import app

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"

BUNDLE = """\
series: jammy
applications:
  mysql: {charm: mysql, num_units: 1, to: ["0"]}
  wordpress: {charm: wordpress, num_units: 2, to: ["lxd:0", "1"]}
  haproxy: {charm: haproxy, num_units: 1, to: ["lxd:wordpress/1"]}
machines:
  "0": {}
  "1": {constraints: mem=4G}
"""


def simulate(path: Path | str, *args: str) -> tuple[int, dict[str, Any], str]:
    done = CliRunner().invoke(app, ["simulate", str(path), *args, "--format", "json"])
    assert done.exception is None or isinstance(done.exception, SystemExit), done.exception
    return done.exit_code, json.loads(done.stdout), done.stderr


def moves(data: dict[str, Any]) -> dict[str, tuple[str | None, str | None]]:
    return {m["unit"]: (m["from"], m["to"]) for m in data["moves"]}


@pytest.fixture
def bundle(tmp_path: Path) -> Path:
    path = tmp_path / "bundle.yaml"
    path.write_text(BUNDLE)
    return path


@pytest.fixture(params=["deployer", "native"])
def deployer(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    """The deployer example, as written and as the native spec convert writes."""
    source = EXAMPLES / "juju-deployer.yaml"
    if request.param == "deployer":
        return source
    done = CliRunner().invoke(app, ["convert", str(source)])
    assert done.exit_code == 0, done.stderr
    path = tmp_path / "native.yaml"
    path.write_text(done.stdout)
    return path


def test_a_new_machine_that_fails_takes_its_units_and_containers_to_another(
    deployer: Path,
) -> None:
    code, data, _ = simulate(deployer, "--down", "1")
    assert code == 0
    # Machine 1 was made for wordpress/0; ceph/0 sat beside it, redis-server/0 in a
    # container on it. wordpress/0 gets the next new machine, and the others follow it.
    assert data["down"] == ["1", "1/lxc/0"]
    assert moves(data) == {
        "wordpress/0": ("1", "6"),
        "ceph/0": ("1", "6"),
        "redis-server/0": ("1/lxc/0", "6/lxc/0"),
    }


def test_a_failed_container_is_replaced_on_the_same_machine(deployer: Path) -> None:
    code, data, _ = simulate(deployer, "--down", "1/lxc/0")
    assert code == 0
    assert moves(data) == {"redis-server/0": ("1/lxc/0", "1/lxc/1")}


def test_a_unit_directed_to_a_failed_machine_stays_unplaced_with_the_reason(
    deployer: Path,
) -> None:
    code, data, _ = simulate(deployer, "--down", "0")
    assert code == 1
    assert moves(data) == {"mysql/0": ("0", None)}
    (unplaced,) = data["unplaced"]
    assert unplaced["unit"] == "mysql/0"
    assert "where mysql/0 is directed" in unplaced["summary"]


def test_a_machine_that_is_up_already_says_so(deployer: Path) -> None:
    code, data, _ = simulate(deployer, "--up", "0")
    assert code == 0
    assert data["moves"] == [] and data["already_up"] == ["0"]


def test_bundle_machines_and_containers(bundle: Path) -> None:
    code, data, _ = simulate(bundle, "--down", "0/lxd/0")
    assert code == 0
    assert moves(data) == {"wordpress/0": ("0/lxd/0", "0/lxd/1")}

    # No container is made on a machine that is down: the unit says why it waits.
    code, data, _ = simulate(bundle, "--down", "0")
    assert code == 1
    assert moves(data) == {"mysql/0": ("0", None), "wordpress/0": ("0/lxd/0", None)}
    assert not any(t["id"].startswith("0/") for t in data.get("new_targets", []))

    code, data, _ = simulate(bundle, "--up", "0")
    assert code == 0 and data["already_up"] == ["0", "0/lxd/0"]


def test_an_unknown_machine_is_an_error_naming_the_option(bundle: Path) -> None:
    code, data, err = simulate(bundle, "--down", "7")
    assert code == 2
    (error,) = data["errors"]
    assert error["key"] == "--down"
    assert "7" in error["message"] and "Traceback" not in err


def test_units_that_already_run_move_when_their_machine_fails() -> None:
    # Against juju status the bundle has nothing left to place; what runs on machine 1
    # (wordpress/1 on it, haproxy/0 in its container) is placed again: new machines.
    bundle = EXAMPLES / "juju-bundle.yaml"
    status = EXAMPLES / "juju-bundle-status.yaml"
    code, data, _ = simulate(bundle, "--status", str(status), "--down", "1")
    assert code == 0
    assert data["down"] == ["1", "1/lxd/0"]
    assert moves(data) == {"wordpress/1": ("1", "2"), "haproxy/0": ("1/lxd/0", "3")}
    assert data["units_before"] == 2 and data["units"] == 2
    code, data, _ = simulate(bundle, "--status", str(status), "--up", "0")
    assert code == 0 and data["moves"] == [] and data["already_up"] == ["0", "0/lxd/0"]


def test_running_vms_on_a_failed_host_are_placed_again_under_the_same_rules() -> None:
    code, data, _ = simulate(EXAMPLES / "cloudstack-dedication.yaml", "--down", "H1a")
    assert code == 0
    moved = moves(data)
    assert set(moved) == {"dedicated-a1/0", "dedicated-a1/1"}
    # Still inside what A1's domain may use (p1's hosts), never on H1a.
    assert all(src == "H1a" and dst not in (None, "H1a") for src, dst in moved.values())
