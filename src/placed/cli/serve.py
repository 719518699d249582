"""placed serve: the HTTP service (uvicorn running the app factory)."""

from __future__ import annotations

import errno
import socket
from enum import StrEnum
from typing import Annotated

import typer

from placed.cli.db import DatabaseOption
from placed.cli.output import err, fail, fail_option


class LogFormat(StrEnum):
    text = "text"
    json = "json"


class LogLevel(StrEnum):
    critical = "critical"
    error = "error"
    warning = "warning"
    info = "info"
    debug = "debug"
    trace = "trace"


def serve(
    host: Annotated[
        str, typer.Option("--host", help="The address to listen on (0.0.0.0 for every one).")
    ] = "127.0.0.1",
    port: Annotated[
        int, typer.Option("--port", min=1, max=65535, help="The TCP port to listen on.")
    ] = 8700,
    log_level: Annotated[
        LogLevel, typer.Option("--log-level", help="How much the server logs.")
    ] = LogLevel.info,
    log_format: Annotated[
        LogFormat,
        typer.Option(
            "--log-format",
            help="Events as readable lines, or as one JSON object per line for a log "
            "pipeline (every field: id, time, actor, kind, subject, target, workload, "
            "domain, account, request id, details).",
        ),
    ] = LogFormat.text,
    database: DatabaseOption = None,
) -> None:
    """Serve placed's HTTP API until stopped (Ctrl-C or SIGTERM).

    GET /healthz and /readyz for probes, /metrics for Prometheus, POST /v1/plan plans a
    spec as placed plan does and answers its JSON document, /v1/tokens manages tokens
    (placed token); every /v1 route needs a token (Authorization: Bearer plc_...).
    Errors are RFC 9457 problem documents. The OpenAPI schema is at /openapi.json, and
    the web console at /ui (sign in with a token).
    Every server runs a controller; the one holding the lease (GET /v1/leader) takes
    down targets whose heartbeats stopped and moves their units (README: "Heartbeats,
    the controller and the lease"). It
    refuses to start on a database whose schema is not this placed's (run placed db
    upgrade), and /readyz answers 503 while the database cannot be reached or its
    schema is old.

    \b
    Examples:
      placed serve --help
      # exit code 2: a database without placed's schema (placed db upgrade first)
      placed serve --database sqlite:///empty.db
      # exit code 2: an address this machine does not have
      placed db upgrade --database sqlite:///ready.db > /dev/null && \\
          placed serve --database sqlite:///ready.db --host 192.0.2.1
    """
    # The store and the web framework load only when the server starts (cli/db.py: why).
    from placed.store.database import StoreError, database_url
    from placed.store.schema import require_current

    url = database_url(database)
    try:
        require_current(url)
    except StoreError as error:
        fail_option("--database", str(error))
    from placed.service.controller import Fault, Options

    try:
        controlling, fault = Options.from_environment(), Fault.from_environment()
    except ValueError as error:
        fail(str(error))
    # Bound here, not by uvicorn, so a port in use is a clear error and exit 2 rather
    # than a log line; uvicorn imports only once the socket is ours.
    listening = _listen(host, port)
    bound, bound_port = listening.getsockname()[:2]
    shown = f"[{bound}]" if ":" in bound else bound
    err.print(
        f"placed serve: listening on http://{shown}:{bound_port} "
        f"(the console: http://{shown}:{bound_port}/ui)",
        markup=False,
        soft_wrap=True,
    )
    import uvicorn

    from placed.service.app import create_app

    def ready() -> str | None:
        """None when the database answers with this placed's schema, else why not."""
        try:
            require_current(url)
        except StoreError as error:
            return str(error)
        return None

    from placed.store.database import make_engine

    _log_events(log_level, log_format)
    app = create_app(
        database=make_engine(url),
        readiness=ready,
        log_json=log_format is LogFormat.json,
        controlling=controlling,
        fault=fault,
        commit_process=True,
    )
    # uvicorn writes its access lines at info: below that level they are never shown,
    # and skipping them spares each request the formatting.
    shown_access = log_level in (LogLevel.info, LogLevel.debug, LogLevel.trace)
    config = uvicorn.Config(app, log_level=log_level.value, access_log=shown_access)
    uvicorn.Server(config).run(sockets=[listening])


def _log_events(level: LogLevel, form: LogFormat) -> None:
    """placed's own log lines (an event per line) on stderr, beside uvicorn's."""
    import logging

    handler = logging.StreamHandler()
    shape = "%(message)s" if form is LogFormat.json else "%(levelname)s:     %(message)s"
    handler.setFormatter(logging.Formatter(shape))
    logger = logging.getLogger("placed")
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG if level in (LogLevel.debug, LogLevel.trace) else level.upper())
    logger.propagate = False


def _listen(host: str, port: int) -> socket.socket:
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
    except socket.gaierror as error:
        fail_option("--host", f"cannot resolve {host!r}: {error.strerror}")
    listening = socket.socket(family, kind, proto)
    try:
        listening.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listening.bind(address)
        listening.listen(2048)
    except OSError as error:
        listening.close()
        if error.errno == errno.EADDRINUSE:
            fail_option("--port", f"{host}:{port} is already in use")
        fail_option("--host", f"cannot listen on {host}:{port}: {error.strerror or error}")
    listening.set_inheritable(True)
    return listening
