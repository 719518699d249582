"""--force: a Juju file read as `juju deploy` reads it. Keys juju's bundle schema does not
know are ignored, each a warning at its file, line and column, and placement goes on;
without --force they are errors, told with what --force would do. Nothing else changes:
every other mistake is still an error."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from placed.cli.main import app
from placed.spec.juju.files import read_juju

BUNDLE = """\
name: web-stack
series: jammy
variables:
  mem: &mem mem=2G
applications:
  db:
    charm: mysql
    num_units: 1
    contstraints: *mem
  web:
    charm: wordpress
    num_units: 1
    constraints: *mem
    to: ["0"]
machines:
  "0": {}
"""


def invoke(*args: str) -> tuple[int, str, str]:
    done = CliRunner().invoke(app, list(args))
    return done.exit_code, done.stdout, done.stderr


def write(tmp_path: Path, text: str, name: str = "bundle.yaml") -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def test_without_force_the_keys_are_refused_saying_what_juju_deploy_and_force_do(
    tmp_path: Path,
) -> None:
    path = write(tmp_path, BUNDLE)
    code, _, err = invoke("validate", path)
    assert code == 2
    lines = err.splitlines()
    assert lines[0].startswith(f"error: {path}: 3 keys the bundle schema does not know")
    assert "juju deploy ignores such keys" in lines[0]
    assert "--force reads the file as juju deploy does" in lines[0]
    assert f"{path}:1:1: name: unknown bundle key 'name'" in err
    assert f"{path}:3:1: variables: unknown bundle key 'variables'" in err
    assert f"{path}:9:5: applications.db.contstraints: db: unknown application key" in err
    assert "did you mean 'constraints'?" in err


def test_with_force_each_key_is_a_warning_at_its_line_and_placement_goes_on(
    tmp_path: Path,
) -> None:
    path = write(tmp_path, BUNDLE)
    code, out, err = invoke("validate", "--force", path, "-f", "json")
    assert code == 0, err
    warnings = json.loads(out)["warnings"]
    assert [w["code"] for w in warnings] == ["unknown-key"] * 3
    messages = [w["message"] for w in warnings]
    assert messages[0] == (
        f"{path}:1:1: name: unknown bundle key 'name' (juju/charm bundledata.go "
        "BundleData); ignored, as juju deploy ignores it"
    )
    assert messages[1].startswith(f"{path}:3:1: variables: ")
    # The did-you-mean stays, the list of every key does not.
    assert messages[2] == (
        f"{path}:9:5: applications.db.contstraints: db: unknown application key "
        "'contstraints' (juju/charm bundledata.go ApplicationSpec); did you mean "
        "'constraints'?; ignored, as juju deploy ignores it"
    )
    code, out, err = invoke("plan", "--force", path, "-f", "json")
    assert code == 0, err
    plan = json.loads(out)
    assert {p["unit"]: p["target"] for p in plan["placements"]} == {"db/0": "1", "web/0": "0"}
    assert len(plan["warnings"]) == 3
    # The misspelt key is ignored, as Juju ignores it: db's new machine has no
    # constraints, where web's own (spelt right, through the same anchor) are read.
    assert [(t["for"], t["constraints"]) for t in plan["new_targets"]] == [("db/0", "")]
    code, out, _ = invoke("convert", "--force", path, "-f", "json")
    workloads = {w["name"]: w for w in json.loads(out)["workloads"]}
    assert "juju_constraints" not in workloads["db"]
    assert workloads["web"]["juju_constraints"] == "mem=2048M"


def test_the_warnings_fail_validate_strict_as_every_warning_does(tmp_path: Path) -> None:
    path = write(tmp_path, BUNDLE)
    code, out, _ = invoke("validate", "--force", "--strict", path)
    assert code == 1
    assert out.count("warning [unknown-key]") == 3


def test_force_leaves_every_other_mistake_an_error(tmp_path: Path) -> None:
    path = write(tmp_path, BUNDLE.replace('to: ["0"]', 'to: ["0", "nowhere"]'))
    code, _, err = invoke("validate", "--force", path)
    assert code == 2
    assert "too many units specified in unit placement" in err
    assert "unknown" not in err and "--force" not in err


def test_an_overlays_keys_are_told_at_the_overlay(tmp_path: Path) -> None:
    path = write(tmp_path, BUNDLE)
    overlay = write(
        tmp_path, "variables:\n  x: &x 1\napplications:\n  web:\n    num_units: 2\n", "o.yaml"
    )
    code, out, err = invoke("validate", "--force", path, "--overlay", overlay, "-f", "json")
    assert code == 0, err
    messages = [w["message"] for w in json.loads(out)["warnings"]]
    assert f"{overlay}:1:1: variables: unknown bundle key 'variables'" in messages[0]
    assert len(messages) == 4
    code, _, err = invoke("validate", path, "--overlay", overlay)
    assert code == 2 and "4 keys the bundle schema does not know" in err
    assert f"{overlay}:1:1: variables:" in err


def test_a_deployer_file_reads_with_force_too(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "prod:\n  series: trusty\n  owner: ops\n  services:\n    mysql: {num_units: 1}\n"
        "staging:\n  services:\n    mysql: {num_units: 1, nmu_units: 2}\n",
    )
    code, _, err = invoke("validate", path)
    assert code == 2 and "2 keys the file format does not know" in err
    assert "--force reads the file with each a warning" in err
    specs = read_juju(Path(path).read_text(), path, force=True)
    # Each deployment's warnings are its own.
    by_name = {s.name: [n.message for n in s.notices] for s in specs}
    assert by_name["prod"] == [
        f"{path}:3:3: prod.owner: prod: unknown deployment key 'owner' "
        "(juju-deployer deployer/config.py ConfigStack, "
        "deployer/deployment.py Deployment); ignored (--force)"
    ]
    assert len(by_name["staging"]) == 1 and "did you mean 'num_units'?" in by_name["staging"][0]


def test_convert_tells_what_force_ignored_on_stderr(tmp_path: Path) -> None:
    path = write(tmp_path, BUNDLE)
    code, out, err = invoke("convert", "--force", path)
    assert code == 0, err
    assert out.startswith("# The native")
    assert err.count("warning [unknown-key]") == 3


def test_force_is_an_option_of_a_spec_file(tmp_path: Path) -> None:
    code, _, err = invoke("simulate", "--force", "--down", "1")
    assert code == 2 and err.startswith("error: --force: an option of a spec file")


def test_a_native_specs_unknown_keys_stay_errors_with_force(tmp_path: Path) -> None:
    path = write(tmp_path, "inventory: [{id: a, kind: host}]\nworkloads: []\nspread: 1\n")
    code, _, err = invoke("validate", "--force", path)
    assert code == 2 and "spread" in err


# The shape of COS Lite's three-nodes overlay: a Kubernetes bundle scaled to three units,
# each kept off the others' hosts by pod anti-affinity tags.
K8S_BUNDLE = """\
bundle: kubernetes
name: observability
applications:
  loki:
    charm: loki-k8s
    scale: 1
"""
TAGS = "anti-pod.app.kubernetes.io/name=loki,anti-pod.topology-key=kubernetes.io/hostname"
ANTI_AFFINITY = f"""\
applications:
  loki:
    scale: 3
    constraints: tags={TAGS}
"""


def test_a_kubernetes_overlay_with_affinity_tags_is_read(tmp_path: Path) -> None:
    bundle = write(tmp_path, K8S_BUNDLE)
    overlay = write(tmp_path, ANTI_AFFINITY, "three-nodes.yaml")
    code, out, err = invoke("plan", "--force", bundle, "--overlay", overlay, "--format", "json")
    assert code == 0, err
    placements = json.loads(out)["placements"]
    assert sorted(p["unit"] for p in placements) == ["loki/0", "loki/1", "loki/2"]
    # A tag with two '=' is what juju's Kubernetes provider refuses: "invalid affinity
    # constraints".
    write(tmp_path, ANTI_AFFINITY.replace("name=loki", "name=loki=x"), "three-nodes.yaml")
    code, _, err = invoke("validate", "--force", bundle, "--overlay", overlay)
    assert code == 2
    assert "an affinity tag is KEY=VALUE with a single '='" in err
