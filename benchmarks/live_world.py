"""The live world's stateful tests (tests/test_live_world.py), run longer than `make test`
runs them: random claims, deletes, count changes, targets down, up and drained and the
document applied again; conductors lost and back in a mapping fleet and nodes in an
edge fleet (every-mode workloads), and racks of hosts added to a cloud, with allocations
claimed and deleted among them. The live state, in the replica that made the changes and
in another on the same store, is checked against a plan from scratch of the stored rows
after every step.

    .venv/bin/python benchmarks/live_world.py [--examples 100]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from harness import progress

CHECKOUT = Path(__file__).resolve().parent.parent
TESTS = [
    "tests/test_live_world.py::test_random_claims_and_deletes_keep_the_live_world_the_stored_one",
    "tests/test_live_world.py::test_random_conductors_lost_and_back_keep_the_live_world_the_stored_one",
    "tests/test_live_world.py::test_random_edge_nodes_lost_and_back_keep_the_live_world_the_stored_one",
    "tests/test_live_world.py::test_random_hosts_added_lost_and_back_keep_the_live_world_the_stored_one",
]
QUICK, FULL = 2, 100  # examples of 12 steps each (make test runs 12 itself)


@dataclass
class LiveWorld:
    examples: int
    seconds: float
    ok: bool
    output: str


def run(quick: bool, examples: int | None = None) -> LiveWorld:
    examples = examples or (QUICK if quick else FULL)
    progress(f"live world: the stateful tests, {examples} examples of 12 steps each")
    started = time.perf_counter()
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:warnings",
            "-p",
            "no:cacheprovider",
            *TESTS,
        ],
        cwd=CHECKOUT,
        env={**os.environ, "PLACED_LIVE_EXAMPLES": str(examples)},
        capture_output=True,
        text=True,
        check=False,
    )
    seconds = time.perf_counter() - started
    return LiveWorld(examples, seconds, done.returncode == 0, (done.stdout + done.stderr)[-3000:])


def section(found: LiveWorld) -> list[str]:
    lines = [
        "## The live world's stateful tests (issue 35)",
        "",
        f"{found.examples} random sequences of 12 steps for each test (claims, deletes, count "
        "changes, targets down, up and drained, dedications, settings, documents applied; "
        "conductors lost and back in a mapping fleet and an edge fleet; racks of hosts "
        "added), the live state, in the replica that made the changes and in another, "
        "checked against a plan from scratch of the stored rows after each step: "
        + ("**passed**" if found.ok else "**FAILED**")
        + f" in {found.seconds:.0f} s.",
        "",
    ]
    if not found.ok:
        lines += ["```", found.output, "```", ""]
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=FULL)
    args = parser.parse_args(argv)
    found = run(quick=False, examples=args.examples)
    print("\n".join(section(found)))
    return 0 if found.ok else 1


if __name__ == "__main__":
    sys.exit(main())
