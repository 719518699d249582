"""Help is user-visible text: every command's --help renders (no markup, no traceback) at
80 columns without a word cut in two, and every example it shows runs as written."""

from __future__ import annotations

import itertools
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from placed.cli.main import app

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent


def commands() -> Iterator[tuple[str, ...]]:
    """The path of every command and subcommand, the root included."""
    stack: list[tuple[tuple[str, ...], Any]] = [((), typer.main.get_command(app))]
    while stack:
        path, command = stack.pop()
        yield path
        # A group (click's, as typer vendors it) has subcommands by name.
        for name, sub in getattr(command, "commands", {}).items():
            stack.append(((*path, name), sub))


def command_at(path: tuple[str, ...]) -> Any:
    command: Any = typer.main.get_command(app)
    for name in path:
        command = command.commands[name]
    return command


def source_words(command: Any) -> set[str]:
    texts = [command.help or ""]
    texts += [getattr(p, "help", None) or "" for p in command.params]
    return {word for text in texts for word in text.split()}


def help_of(path: tuple[str, ...], columns: int = 80) -> str:
    done = CliRunner().invoke(app, [*path, "--help"], env={"COLUMNS": str(columns)})
    assert done.exception is None or isinstance(done.exception, SystemExit), done.exception
    assert done.exit_code == 0, (path, done.output)
    return done.stdout


ALL = sorted(commands())


def test_the_command_tree_is_walked() -> None:
    names = {path[0] for path in ALL if path}
    assert {"plan", "check", "simulate", "dedications", "explain-spec"} <= names


@pytest.mark.parametrize("path", ALL, ids=lambda p: " ".join(p) or "placed")
def test_help_renders_whole_words_within_80_columns(path: tuple[str, ...]) -> None:
    columns = 80
    text = help_of(path, columns)
    assert "Traceback" not in text
    words = source_words(command_at(path))
    lines = text.splitlines()
    for line in lines:
        if not line.startswith("Usage:"):
            assert len(line) <= columns, (path, line)
    # A word cut at the end of a line would reappear whole once joined with the next.
    for this, following in itertools.pairwise(lines):
        if not this.split() or not following.split():
            continue
        tail, head = this.split()[-1], following.split()[0]
        if tail not in words:
            assert tail + head not in words, (path, this, following)


def test_help_text_with_brackets_is_text_not_markup() -> None:
    text = help_of(("dedications",))
    assert "RESOURCE=DOMAIN[/ACCOUNT]" in text


def examples(path: tuple[str, ...]) -> list[tuple[str, set[int]]]:
    """The commands under a help's Examples:, continuation lines joined, each with the exit
    codes it may end with: 0 or 1 (it ran; something unplaced, incompatible, a warning
    under --strict, or a grep that found nothing), or 2 where a comment before it says
    "exit code 2" (an example of an error)."""
    text = help_of(path, 200)
    found: list[tuple[str, set[int]]] = []
    inside, expected = False, {0, 1}
    for line in text.splitlines():
        if line.strip() == "Examples:":
            inside = True
            continue
        if inside and not line.startswith("    "):
            inside = False
        if not inside:
            continue
        if line.strip().startswith("#"):
            expected = {2} if "exit code 2" in line else {0, 1}
            continue
        if found and found[-1][0].endswith("\\"):
            found[-1] = (found[-1][0][:-1].rstrip() + " " + line.strip(), found[-1][1])
        else:
            found.append((line.strip(), expected))
            expected = {0, 1}
    return found


EXAMPLES = [(path, line, codes) for path in ALL for line, codes in examples(path)]


def test_every_command_shows_examples() -> None:
    shown = {path for path, _, _ in EXAMPLES}
    missing = [p for p in ALL if p and not command_at(p).hidden and p not in shown]
    assert not missing


@pytest.mark.parametrize(("path", "line", "codes"), EXAMPLES, ids=[line for _, line, _ in EXAMPLES])
def test_every_help_example_runs_as_written(
    path: tuple[str, ...], line: str, codes: set[int], tmp_path: Path
) -> None:
    # From a copy of the checkout's examples, so an example that writes a file writes it
    # there; `placed` is this environment's.
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    done = subprocess.run(
        ["bash", "-o", "pipefail", "-c", line],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode in codes, (line, done.returncode, done.stderr)
    if done.returncode == 2:
        assert done.stderr.startswith("error: "), done.stderr


def test_help_wraps_between_words_only() -> None:
    # Click's own wrapper would cut at the hyphen ("examples/ironic-") and cut a word
    # longer than the line; placed's keeps both whole.
    from typer._click.formatting import wrap_text

    text = "read examples/ironic-affinity.yaml then /a/very/long/path/that/cannot/fit/here ok"
    lines = wrap_text(text, 24).splitlines()
    assert "examples/ironic-affinity.yaml" in lines
    assert "/a/very/long/path/that/cannot/fit/here" in lines
    assert " ".join(lines) == text


def test_format_offers_only_what_the_command_prints() -> None:
    offered = {
        "plan": "table|wide|json|yaml|changes",
        "check": "table|wide|json|yaml",
        "simulate": "table|wide|json|yaml",
        "validate": "table|json|yaml",
        "dedications": "table|json|yaml",
        "expr": "table|json|yaml",
        "convert": "yaml|json",
    }
    for command, choices in offered.items():
        assert f"-f, -o, --format <{choices}>" in help_of((command,)), command
    done = CliRunner().invoke(app, ["validate", "examples/juju-deployer.yaml", "-o", "wide"])
    assert done.exit_code == 2 and "'wide' is not one of" in done.stderr
