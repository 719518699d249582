"""Progress on stderr that appears only when the work takes more than a second."""

from __future__ import annotations

import threading
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
from rich.status import Status


class DelayedProgress:
    def __init__(
        self,
        description: str,
        delay: float = 1.0,
        console: Console | None = None,
        redirect: bool = True,
    ) -> None:
        self.description = description
        # Whether print() and stray writes to sys.stdout and sys.stderr go above the bar.
        # Output written while the bar runs (check's streamed rows) must not: a bar on
        # stderr would carry stdout's text to stderr's file.
        self.redirect = redirect
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
                redirect_stdout=self.redirect,
                redirect_stderr=self.redirect,
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


class DelayedStatus:
    """A spinner on stderr saying what is being done, shown only once the work has taken
    `delay` seconds. Reading a large spec is a few long calls (libyaml composes a whole
    document in one) with nothing to count, so a timer thread starts the spinner."""

    def __init__(
        self, description: str, delay: float = 1.0, console: Console | None = None
    ) -> None:
        self.description = description
        self.delay = delay
        self.console = console or Console(stderr=True)
        self._lock = threading.Lock()
        self._done = False
        self._status: Status | None = None
        self._timer: threading.Timer | None = None

    @property
    def shown(self) -> bool:
        return self._status is not None

    def _show(self) -> None:
        with self._lock:
            if not self._done:
                self._status = self.console.status(self.description)
                self._status.start()

    def __enter__(self) -> DelayedStatus:
        if self.console.is_terminal:
            self._timer = threading.Timer(self.delay, self._show)
            self._timer.daemon = True
            self._timer.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        with self._lock:
            self._done = True
            if self._timer is not None:
                self._timer.cancel()
            if self._status is not None:
                self._status.stop()
