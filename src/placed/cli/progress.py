"""A progress bar on stderr that appears only when the work takes more than a second."""

from __future__ import annotations

import time
from types import TracebackType

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeRemainingColumn,
)


class DelayedProgress:
    def __init__(
        self, description: str, delay: float = 1.0, console: Console | None = None
    ) -> None:
        self.description = description
        self.delay = delay
        self.console = console or Console(stderr=True)
        self.started = time.monotonic()
        self._bar: Progress | None = None
        self._task = TaskID(0)

    @property
    def shown(self) -> bool:
        return self._bar is not None

    def __call__(self, done: int, total: int) -> None:
        if self._bar is None:
            # Quick plans stay quiet; only a plan that has already run a second shows a bar.
            if time.monotonic() - self.started < self.delay or not self.console.is_terminal:
                return
            self._bar = Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeRemainingColumn(),
                console=self.console,
                transient=True,
            )
            self._bar.start()
            self._task = self._bar.add_task(self.description, total=total)
        self._bar.update(self._task, completed=done, total=total)

    def __enter__(self) -> DelayedProgress:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        if self._bar is not None:
            self._bar.stop()
