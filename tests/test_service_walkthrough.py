"""The README's first session with placed serve, run as written: `placed db upgrade`,
`placed serve`, `placed apply` of the Ironic example, `placed get placements`, conductor1
down and up, `placed get events`, `placed describe unit`. Each command's output holds
the lines the README shows (but times, which differ each run)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from tests.running_servers import serving, upgrade

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d|token\.created")


def session() -> list[tuple[str, list[str]]]:
    """(command, the output lines the README shows) of the walkthrough block."""
    text = (ROOT / "README.md").read_text()
    block = text.split("<!-- walkthrough -->\n```text\n", 1)[1].split("```", 1)[0]
    steps: list[tuple[str, list[str]]] = []
    for line in block.splitlines():
        if line.startswith("$ "):
            steps.append((line[2:].split("#", 1)[0].strip(), []))
        elif steps and line != "..." and not TIME.search(line):
            steps[-1][1].append(line)
    return steps


def test_the_readme_session_runs_as_written(tmp_path: Path) -> None:
    steps = session()
    assert [command.split()[1] for command, _ in steps[:3]] == [
        "db",
        "serve",
        "PLACED_TOKEN=plc_...",
    ]
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"}
    env.pop("PLACED_DATABASE_URL", None)
    upgraded = subprocess.run(
        ["placed", "db", "upgrade"], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert upgraded.returncode == 0, upgraded.stderr
    token = re.search(r"plc_\S+", upgraded.stdout)
    assert token is not None, upgraded.stdout
    # `placed serve &`: the server of the session, on a free port (PLACED_URL names it).
    database = f"sqlite:///{tmp_path / 'placed.db'}"
    with serving(database) as (base,):
        env.update(PLACED_URL=base, PLACED_TOKEN=token.group(0))
        for command, shown in steps[3:]:
            assert command.startswith("placed "), command
            done = subprocess.run(
                command.split(), cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
            )
            assert done.returncode == 0, (command, done.stderr)
            printed = done.stdout.splitlines()
            for line in shown:
                assert line in printed, (command, line, done.stdout)


def test_open_horizon_files_apply_as_placed_plan_reads_them(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'placed.db'}"
    token = upgrade(url)
    env = {**os.environ, "PLACED_TOKEN": token}
    planned = subprocess.run(
        ["placed", "plan", str(ROOT / "examples" / "openhorizon"), "-o", "json"],
        env={**env, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"},
        capture_output=True,
        text=True,
    )
    expected = {p["unit"]: p["target"] for p in json.loads(planned.stdout)["placements"]}
    assert expected
    with serving(url) as (base,):
        done = subprocess.run(
            [str(BIN / "placed"), "apply", str(ROOT / "examples" / "openhorizon"), "-o", "json"],
            env={**env, "PLACED_URL": base},
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        answer = json.loads(done.stdout)
        assert {p["unit"]: p["target"] for p in answer["placements"]} == expected


ZONES = """
name: zones
inventory:
  - id: z1
    kind: zone
    children:
      - id: r1
        kind: rack
        tags: [fast]
        children:
          - {id: h1, kind: host, capacity: {cpu: 2}}
  - id: z2
    kind: zone
    children:
      - {id: h2, kind: host, capacity: {cpu: 2}}
"""


def test_get_locations_prints_the_tree_as_a_table_and_as_json(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'placed.db'}"
    token = upgrade(url)
    (tmp_path / "zones.yaml").write_text(ZONES)
    env = {**os.environ, "PLACED_TOKEN": token, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"}
    with serving(url) as (base,):
        env["PLACED_URL"] = base

        def placed(*arguments: str) -> str:
            done = subprocess.run(
                ["placed", *arguments], cwd=tmp_path, env=env, capture_output=True, text=True
            )
            assert done.returncode == 0, (arguments, done.stderr)
            return done.stdout

        placed("apply", "zones.yaml")
        assert [line.split() for line in placed("get", "locations").splitlines()] == [
            ["name", "kind", "parent"],
            ["r1", "rack", "z1"],
            ["z1", "zone", "-"],
            ["z2", "zone", "-"],
        ]

        def names(*filters: str) -> list[str]:
            found = json.loads(placed("get", "targets", *filters, "-o", "json"))["items"]
            return [t["name"] for t in found]

        # The API's filters, from the CLI.
        assert names() == ["h1", "h2"]
        assert names("--under", "r1") == ["h1"]
        assert names("--under", "r1", "--under", "z2") == ["h1", "h2"]
        placed("target", "down", "h2")
        assert names("--state", "down") == ["h2"]
        assert names("--under", "z1", "--state", "down") == []
        assert [line.split() for line in placed("get", "locations", "-o", "wide").splitlines()][
            1
        ] == ["r1", "rack", "z1", "fast"]
        assert json.loads(placed("get", "locations", "-o", "json")) == {
            "items": [
                {"name": "r1", "kind": "rack", "parent": "z1", "tags": ["fast"]},
                {"name": "z1", "kind": "zone", "parent": None, "tags": []},
                {"name": "z2", "kind": "zone", "parent": None, "tags": []},
            ]
        }


BROKEN = """name: broken
inventory:
  - {id: h9, kind: host, capacity: {cpu: 2}}
workloads:
  - name: w
    constraints: ["cpu >>= 2"]
"""


def test_apply_of_several_files_says_which_were_applied_and_where_one_is_wrong(
    tmp_path: Path,
) -> None:
    """Each file is its own transaction: when the second is refused, the first is in the
    store, and the user is told so (its plan, and a note), with the refused file's error
    at FILE:LINE:COLUMN as placed plan gives it."""
    url = f"sqlite:///{tmp_path / 'placed.db'}"
    token = upgrade(url)
    (tmp_path / "zones.yaml").write_text(ZONES)
    (tmp_path / "broken.yaml").write_text(BROKEN)
    env = {**os.environ, "PLACED_TOKEN": token, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"}
    with serving(url) as (base,):
        env["PLACED_URL"] = base

        def placed(*arguments: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
            return subprocess.run(
                ["placed", *arguments],
                cwd=tmp_path,
                env=env,
                capture_output=True,
                text=True,
                input=stdin,
            )

        offline = placed("plan", "broken.yaml")
        assert offline.returncode == 2 and "broken.yaml:6:24:" in offline.stderr
        done = placed("apply", "zones.yaml", "broken.yaml", "zones.yaml")
        assert done.returncode == 2, done.stderr
        shown = re.search(r"^revision (\d+)$", done.stdout, re.MULTILINE)  # zones.yaml's plan
        assert shown is not None, done.stdout
        note = (
            f"zones.yaml applied at revision {shown[1]}; "
            "broken.yaml and the files after it not applied"
        )
        assert note in done.stderr, done.stderr
        assert "broken.yaml:6:24: /workloads/0/constraints/0: invalid constraint" in done.stderr
        assert (
            "h1" in placed("get", "targets").stdout and "h9" not in placed("get", "targets").stdout
        )
        data = placed("apply", "zones.yaml", "broken.yaml", "-o", "json")
        assert data.returncode == 2
        # stdout stays one document: the error's, located as placed validate locates one.
        assert json.loads(data.stdout) == {
            "valid": False,
            "errors": [
                {
                    "file": "broken.yaml",
                    "line": 6,
                    "column": 24,
                    "key": "/workloads/0/constraints/0",
                    "message": json.loads(data.stdout)["errors"][0]["message"],
                }
            ],
        }
        assert "unknown operator '>>='" in json.loads(data.stdout)["errors"][0]["message"]
        # `-` is standard input, as placed plan reads it; its errors are at <stdin>.
        piped = placed("apply", "-", stdin=BROKEN)
        assert piped.returncode == 2 and "<stdin>:6:24: /workloads/0/constraints" in piped.stderr
        fixed = placed("apply", "-", stdin=BROKEN.replace(">>=", ">="))
        assert fixed.returncode == 0, fixed.stderr
        assert "h9" in placed("get", "targets").stdout
        twice = placed("apply", "-", "-")
        assert twice.returncode == 2 and "read once" in twice.stderr


def test_get_dedications_and_offerings_list_what_the_api_lists(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'placed.db'}"
    token = upgrade(url)
    env = {**os.environ, "PLACED_TOKEN": token, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"}
    with serving(url) as (base,):
        env["PLACED_URL"] = base

        def placed(*arguments: str) -> subprocess.CompletedProcess[str]:
            return subprocess.run(
                ["placed", *arguments], cwd=tmp_path, env=env, capture_output=True, text=True
            )

        assert (
            placed("apply", str(ROOT / "examples" / "cloudstack-dedication.yaml")).returncode == 0
        )
        rows = [line.split() for line in placed("get", "dedications").stdout.splitlines()]
        assert rows[0] == ["resource", "kind", "domain", "account", "dedication"]
        assert ["z2", "zone", "D2", "A13", "explicit"] in rows[1:]
        assert ["p1", "pod", "D1", "-", "explicit"] in rows[1:]
        pods = json.loads(placed("get", "dedications", "--kind", "pod", "-o", "json").stdout)
        assert {d["resource"] for d in pods["items"]} == {"p1", "p2"}
        # The filters are the API's: its refusal of a bad one is the CLI's, exit 2.
        bad = placed("get", "dedications", "--kind", "nope")
        assert bad.returncode == 2 and "query.kind: no resources of kind 'nope'" in bad.stderr
        # Times to the second in every table, as the events table shows them.
        wide = placed("get", "placements", "-o", "wide").stdout.splitlines()
        assert wide[0].split()[3:5] == ["placed", "at"]
        assert all(re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d", r.split()[3]) for r in wide[1:])
        offerings = [line.split() for line in placed("get", "offerings").stdout.splitlines()]
        assert offerings == [
            ["name", "cpu", "memory", "disk", "dedicated"],
            ["dedicated-small", "1", "2", "20", "yes", "(strict)"],
            ["shared-small", "1", "2", "20", "no"],
        ]
