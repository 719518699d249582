"""Where the CLI writes: the consoles, a closed pipe, and errors in the format asked for.

A reader that stops early (`placed plan big.yaml | head -1`) closes the pipe; the rest
of the output goes nowhere, quietly, and the command still exits with the code its
result gives (1 for unplaced units stays 1). rich would exit 1 itself, and click too,
so the break is caught here first.

With `--format json` (or yaml) an error goes to stdout as data, in the shape `placed
validate` always used: `{"valid": false, "errors": [{file, line, column, key,
message}]}`, as well as to stderr for people; the exit code is 2 either way.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, NoReturn

import typer
import yaml
from rich.console import Console
from rich.text import Text

from placed.cli.grid import printable
from placed.spec import SpecError

EXIT_OK, EXIT_FAILED, EXIT_INVALID = 0, 1, 2


class Format(StrEnum):
    table = "table"
    wide = "wide"
    json = "json"
    yaml = "yaml"
    changes = "changes"  # plan only: the steps Juju would run

    @property
    def data(self) -> bool:
        """json or yaml: for programs."""
        return self in (Format.json, Format.yaml)


class PipeClosed(Exception):
    """The reader of stdout went away."""


class _Console(Console):
    def on_broken_pipe(self) -> None:
        # rich would exit 1 here, which reads as "something is unplaced". stdout's
        # reader is gone: stop writing (guarded() sees to the rest); stderr's: go on
        # quietly, the exit code still tells.
        self.quiet = True
        if not self.stderr:
            raise PipeClosed


out: Console = _Console(highlight=False, soft_wrap=False)
err: Console = _Console(stderr=True, highlight=False)

# The format of the running command, so an error deep inside reports in it.
error_format: ContextVar[Format] = ContextVar("error_format", default=Format.table)


def _silence_stdout() -> None:
    """Send whatever is still buffered for stdout, and all that follows, to /dev/null,
    so the interpreter's last flush does not complain about the pipe either."""
    out.quiet = True
    try:
        fileno = sys.stdout.fileno()
    except (OSError, ValueError, AttributeError):
        return  # not a real file (a test's capture): nothing will flush into a pipe
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, fileno)
    os.close(devnull)


@contextmanager
def guarded() -> Iterator[None]:
    """Write the command's output inside this; a closed pipe ends the output quietly."""
    try:
        yield
        sys.stdout.flush()
    except (BrokenPipeError, PipeClosed):
        _silence_stdout()


def write(text: str) -> None:
    """Text as is to stdout: no markup, no wrapping, no measuring."""
    out.file.write(text)


def dump(data: Any, fmt: Format) -> str:
    """Data as JSON (non-ASCII characters kept as they are) or YAML."""
    if fmt is Format.json:
        return json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True)


@dataclass(frozen=True, slots=True)
class Error:
    """One problem, as `validate --format json` reports it."""

    message: str
    file: str | None = None
    line: int | None = None
    column: int | None = None
    key: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "file": self.file,
            "line": self.line,
            "column": self.column,
            "key": self.key,
            "message": self.message,
        }


def fail(text: str, errors: list[Error] | None = None) -> NoReturn:
    """Exit 2 with `text` on stderr and, for json or yaml, `errors` as data on stdout."""
    fmt = error_format.get()
    if fmt.data:
        found = errors if errors is not None else [Error(text)]
        with guarded():
            write(dump({"valid": False, "errors": [e.to_dict() for e in found]}, fmt))
    # The message quotes the spec, whose [brackets] are not markup (so a Text, not a
    # string), and maybe control characters, which must not reach the terminal raw.
    shown = "\n".join(printable(line) for line in text.split("\n"))
    err.print(Text.assemble(("error:", "bold red"), " ", shown), soft_wrap=True)
    raise typer.Exit(EXIT_INVALID)


def spec_errors(error: SpecError) -> list[Error]:
    return [
        Error(
            problem.message,
            file=problem.file or error.source,
            line=problem.position.line if problem.position else None,
            column=problem.position.column if problem.position else None,
            key=problem.key or None,
        )
        for problem in error.problems
    ]


def fail_spec(error: SpecError) -> NoReturn:
    fail(error.render(), spec_errors(error))


def fail_at(source: str, message: str, key: str | None = None) -> NoReturn:
    """An error about a whole input (no line): `source: message`. Named by an option
    rather than a file (`fail_at("--as", ..., "--as")`), it is that option's error."""
    if key is not None and source == key:
        fail_option(key, message)
    fail(f"{source}: {message}", [Error(message, file=source, key=key)])


def fail_option(option: str, message: str) -> NoReturn:
    """An error in a command-line argument: it names the option (or argument), not a
    file, for people and in the data (`key`)."""
    fail(f"{option}: {message}", [Error(message, key=option)])
