"""`placed serve --log-format json`'s formatter in process: a traceback is one JSON
object, and extra fields are the line's own keys (the subprocess side is in
test_service_connections.py)."""

from __future__ import annotations

import io
import json
import logging

from placed.service.logs import JsonFormatter


def test_a_traceback_is_one_json_line() -> None:
    sink = io.StringIO()
    handler = logging.StreamHandler(sink)
    handler.setFormatter(JsonFormatter())
    logger = logging.getLogger("placed.test_logs")
    logger.addHandler(handler)
    logger.propagate = False
    try:
        try:
            _ = 1 / 0
        except ZeroDivisionError:
            logger.exception("request %s failed", "abc")
        logger.warning("with fields", extra={"fields": {"status": 500}, "url": "http://x"})
    finally:
        logger.removeHandler(handler)
    lines = sink.getvalue().splitlines()
    assert len(lines) == 2
    failed, fielded = (json.loads(line) for line in lines)
    assert failed["level"] == "error" and failed["logger"] == "placed.test_logs"
    assert failed["message"] == "request abc failed"
    assert failed["exception"].startswith("Traceback (most recent call last):")
    assert "ZeroDivisionError: division by zero" in failed["exception"]
    assert failed["time"].endswith("+00:00")
    assert fielded["status"] == 500 and fielded["url"] == "http://x"
    assert "fields" not in fielded and "color_message" not in fielded
