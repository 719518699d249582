"""`placed serve --log-format json`: every line the server writes is one JSON object,
uvicorn's included, for a log pipeline.

One stdlib `logging.Formatter` (no dependency) formats every record: `time` (UTC, ISO
8601), `level`, `logger`, `message`, the record's `extra` fields (a `fields` mapping is
merged at the top: an event's own fields, an access line's), and a traceback as one
`exception` string, so a traceback is one line too. The logging configuration is a
`logging.config.dictConfig` dictionary, uvicorn's `log_config` format: every handler on
stderr, uvicorn's loggers and placed's through it.
"""

from __future__ import annotations

import json
import logging
import logging.config
import sys
import threading
from datetime import UTC, datetime
from types import TracebackType
from typing import Any

# What every LogRecord has: anything else on a record came from `extra=`.
_STANDARD = frozenset(logging.LogRecord("", 0, "", 0, "", None, None).__dict__) | {
    "message",
    "asctime",
    "taskName",
    "color_message",  # uvicorn's message again, with terminal colours
}


class JsonFormatter(logging.Formatter):
    """A record as one line of JSON."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        for key, value in record.__dict__.items():
            if key in _STANDARD:
                continue
            if key == "fields" and isinstance(value, dict):
                line.update(value)
            else:
                line[key] = value
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        elif record.exc_text:
            line["exception"] = record.exc_text
        if record.stack_info:
            line["stack"] = self.formatStack(record.stack_info)
        return json.dumps(line, default=str, ensure_ascii=False)


def json_logging(level: int) -> dict[str, Any]:
    """The dictConfig of `placed serve --log-format json`: every logger, uvicorn's and
    placed's, at `level`, as JSON lines on stderr."""
    handler = {"class": "logging.StreamHandler", "formatter": "json", "stream": "ext://sys.stderr"}
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {"json": {"()": f"{__name__}.JsonFormatter"}},
        "handlers": {"json": handler},
        "root": {"handlers": ["json"], "level": "WARNING"},
        "loggers": {
            # Each through the root's one handler: a line is written once.
            "uvicorn": {"handlers": [], "level": level, "propagate": True},
            "uvicorn.error": {"handlers": [], "level": level, "propagate": True},
            "uvicorn.access": {"handlers": [], "level": level, "propagate": True},
            "placed": {"handlers": [], "level": level, "propagate": True},
        },
    }


def use_json(level: int) -> None:
    """Every log line as JSON from now on, warnings and uncaught exceptions (in any
    thread) included: an exception that escapes is logged, not printed as a bare
    traceback."""
    logging.config.dictConfig(json_logging(level))
    logging.captureWarnings(True)
    crashed = logging.getLogger("placed.crash")

    def thread_died(args: threading.ExceptHookArgs) -> None:
        if args.exc_type is SystemExit:
            return
        where = args.thread.name if args.thread else "?"
        error = args.exc_value or args.exc_type()
        crashed.error("thread %s died", where, exc_info=(args.exc_type, error, args.exc_traceback))

    def died(kind: type[BaseException], value: BaseException, tb: TracebackType | None) -> None:
        if issubclass(kind, KeyboardInterrupt):
            sys.__excepthook__(kind, value, tb)
            return
        crashed.critical("placed serve stopped on an error", exc_info=(kind, value, tb))

    threading.excepthook = thread_died
    sys.excepthook = died
