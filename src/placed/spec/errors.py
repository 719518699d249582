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
    # What kind of problem, where a reader treats a kind apart: "unknown-key" in a Juju
    # file, a warning instead under --force.
    code: str = ""


# The problems of a spec listed, each with its place: finding a place costs (the file
# is read again as a node tree), and a spec with a mistake in each of 100,000 targets
# says no more with all of them. Past it, they are counted (SpecError.more).
MAX_LISTED = 100


class SpecError(Exception):
    """The spec cannot be used. Carries the problems found, each with its place, and how
    many more were found past those (`more`: the schema's errors past MAX_LISTED)."""

    def __init__(self, source: str, problems: list[Problem], more: int = 0) -> None:
        self.source = source
        self.problems = problems
        self.more = more
        super().__init__(self.render())

    @property
    def count(self) -> int:
        """Every problem found, listed or not."""
        return len(self.problems) + self.more

    def render(self, limit: int = 10) -> str:
        lines = []
        for problem in self.problems[:limit]:
            where = problem.file or self.source
            if problem.position is not None:
                where += f":{problem.position.line}:{problem.position.column}"
            key = f" {problem.key}:" if problem.key else ""
            lines.append(f"{where}:{key} {problem.message}")
        hidden = len(self.problems[limit:]) + self.more
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
