"""Gathering problems with their place in the file, so that all are reported at once."""

from __future__ import annotations

from placed.spec.errors import MAX_LISTED, Problem
from placed.spec.source import Path, SourceMap, dotted


class Collector:
    """Gathers problems with their positions, so that every problem is reported at once."""

    def __init__(self, sources: SourceMap, problems: list[Problem]) -> None:
        self.sources = sources
        self.problems = problems

    def add(self, message: str, path: Path, key: bool = False, code: str = "") -> None:
        position = None
        if len(self.problems) < MAX_LISTED:  # past them, a problem is counted, not placed
            position = self.sources.key(path) if key else self.sources.value(path)
        self.problems.append(Problem(message, dotted(path), position, code=code))

    def add_inside(self, message: str, path: Path, offset: int) -> None:
        """A problem at character `offset` of the text value at `path`."""
        position = None
        if len(self.problems) < MAX_LISTED:
            position = self.sources.inside(path, offset) or self.sources.value(path)
        self.problems.append(Problem(message, dotted(path), position))
