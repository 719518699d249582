"""Seed 000's two examples, as the README runs them: every outcome the seed states."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from placed.cli.main import app

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def plan(name: str, *more: str) -> tuple[int, dict[str, Any]]:
    result = CliRunner().invoke(app, ["plan", str(EXAMPLES / name), "-f", "json", *more])
    return result.exit_code, json.loads(result.stdout)


def test_the_deployer_example_plans_as_the_seed_says() -> None:
    code, data = plan("juju-deployer.yaml")
    assert code == 0
    where = {p["unit"]: p["target"] for p in data["placements"]}
    container = {p["unit"]: p.get("container") for p in data["placements"]}
    wordpress = [where[f"wordpress/{i}"] for i in range(3)]
    assert len(set(wordpress)) == 3 and "0" not in wordpress  # three new machines
    # "The only machine id supported is machine 0": mysql is on it.
    assert where["mysql/0"] == "0"
    # redis-server/0 in a new lxc container on wordpress/0's machine...
    assert where["redis-server/0"] == f"{wordpress[0]}/lxc/0"
    assert container["redis-server/0"] == "lxc"
    # ...redis-server/1 hulk smash onto wordpress/1, redis-server/2 a machine of its own.
    assert where["redis-server/1"] == wordpress[1]
    assert where["redis-server/2"] not in {*wordpress, "0"}
    # ceph/0..2 with wordpress/0..2; ceph/3 on a separate machine, with a warning.
    assert [where[f"ceph/{i}"] for i in range(3)] == wordpress
    assert where["ceph/3"] not in {*wordpress, "0", where["redis-server/2"]}
    [warning] = [w for w in data["warnings"] if w.get("unit") == "ceph/3"]
    assert warning["code"] == "fewer-target-units"
    assert "to wordpress" in warning["message"] and "new machine" in warning["message"]
    # serenade in a container on the machine of wordpress's unit of index 2.
    assert where["serenade/0"] == f"{wordpress[2]}/lxc/0"
    # New machines and containers are listed, each with the unit it was made for.
    made = {t["id"]: t for t in data["new_targets"]}
    assert made[f"{wordpress[0]}/lxc/0"]["parent"] == wordpress[0]
    assert made[where["ceph/3"]]["for"] == "ceph/3"
    assert len(data["warnings"]) == 1


def test_the_proposed_example_plans_as_the_seed_says() -> None:
    code, data = plan("juju-proposed.yaml")
    assert code == 0
    where = {p["unit"]: p["target"] for p in data["placements"]}
    # mongodb on machines 1, 2, 3, each flagged non-portable.
    assert [where[f"mongodb/{i}"] for i in range(3)] == ["1", "2", "3"]
    flagged = [w["unit"] for w in data["warnings"] if w["code"] == "non-portable-machine"]
    assert flagged == ["mongodb/0", "mongodb/1", "mongodb/2"]
    # wordpress/0 and /1 with their own constraints, wordpress/2 with the service's (none).
    made = {t["for"]: t for t in data["new_targets"]}
    assert made["wordpress/0"]["constraints"] == "maas-name=xyz"
    assert made["wordpress/1"]["constraints"] == "cores=8"
    assert made["wordpress/2"]["constraints"] == ""
    assert len({where[f"wordpress/{i}"] for i in range(3)} | {"1", "2", "3"}) == 6


def test_validate_portable_refuses_other_machines() -> None:
    runner = CliRunner()
    proposed = str(EXAMPLES / "juju-proposed.yaml")
    done = runner.invoke(app, ["validate", proposed])
    assert done.exit_code == 0 and "non-portable-machine" in done.stdout
    # --portable: an error at each entry, as the charm store's validation makes it.
    done = runner.invoke(app, ["validate", proposed, "--portable", "-f", "json"])
    assert done.exit_code == 2
    errors = json.loads(done.stdout)["errors"]
    assert [(e["line"], e["column"]) for e in errors] == [(8, 12), (8, 15), (8, 18)]
    assert all("only machine 0 is portable" in e["message"] for e in errors)
    done = runner.invoke(app, ["validate", str(EXAMPLES / "juju-deployer.yaml"), "--portable"])
    assert done.exit_code == 0, done.stdout
