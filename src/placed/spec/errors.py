"""Errors that point at the spec: file:line:column and the key at fault."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class SourcePosition:
    line: int  # 1-based
    column: int  # 1-based


@dataclass(frozen=True, slots=True)
class Problem:
    message: str
    key: str = ""  # dotted path such as inventory[0].children[1].tags
    position: SourcePosition | None = None
    file: str = ""  # another file than the error's source (a bundle's --overlay)


class SpecError(Exception):
    """The spec cannot be used. Carries every problem found, each with its place."""

    def __init__(self, source: str, problems: list[Problem]) -> None:
        self.source = source
        self.problems = problems
        super().__init__(self.render())

    def render(self, limit: int = 10) -> str:
        lines = []
        for problem in self.problems[:limit]:
            where = problem.file or self.source
            if problem.position is not None:
                where += f":{problem.position.line}:{problem.position.column}"
            key = f" {problem.key}:" if problem.key else ""
            lines.append(f"{where}:{key} {problem.message}")
        hidden = len(self.problems) - limit
        if hidden > 0:
            lines.append(f"... and {hidden} more problem{'s' if hidden > 1 else ''}")
        return "\n".join(lines)


EXCERPT = 60  # characters of a value an error quotes


def quoted(value: object) -> str:
    """`value` as an error quotes it: repr, cut to an excerpt when long, so a 1 MB value
    makes a one-line message."""
    text = repr(value)
    if len(text) <= EXCERPT + 20:
        return text
    length = len(value) if isinstance(value, str | bytes | list | dict) else len(text)
    return f"{text[:EXCERPT]}... ({length:,} characters)"
