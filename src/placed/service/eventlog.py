"""Each committed event as a log line (SERVICE.md, "Events"): JSON with every field for
a log pipeline (`placed serve --log-format json`: the line's fields, service/logs.py), or
one readable line."""

from __future__ import annotations

import logging
from collections.abc import Iterable

from placed.store import events

log = logging.getLogger("placed.events")


def emit(rows: Iterable[events.Recorded], as_json: bool) -> None:
    """Call after the commit: a rolled-back change logs nothing."""
    for row in rows:
        where = f" on {row.target}" if row.target else ""
        # The JSON formatter (service/logs.py) writes `fields` as the line's own keys.
        extra = {"fields": events.view(row)} if as_json else None
        log.info("event %d %s %s%s", row.id, row.kind, row.subject, where, extra=extra)
