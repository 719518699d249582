"""placed serve: the HTTP service (uvicorn running the app factory)."""

from __future__ import annotations

import errno
import logging
import socket
from enum import StrEnum
from typing import Annotated, Any

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


# Connections and authentication (README: "Connections and timeouts"); defaults as the
# service modules hold them (service/connections.py, service/lockout.py).
HeaderTimeout = Annotated[
    float,
    typer.Option(
        "--header-timeout",
        min=0.1,
        help="Seconds a request's headers may take to arrive, from its first byte (a "
        "connection's opening, for its first request); a client still sending them is "
        "disconnected (slowloris).",
    ),
]
MaxConnsPerClient = Annotated[
    int,
    typer.Option(
        "--max-conns-per-client",
        min=0,
        help="Connections one client address may hold open at once (as Nomad's "
        "http_max_conns_per_client); one more is answered 429 too-many-connections and "
        "closed. 0: no limit (behind a proxy, every client has the proxy's address).",
    ),
]
GracefulTimeout = Annotated[
    float,
    typer.Option(
        "--graceful-timeout",
        min=0,
        help="Seconds a stop (SIGTERM, Ctrl-C) waits for requests in flight before it "
        "cancels them; long polls (GET /v1/events?wait=) answer at once.",
    ),
]
AuthFailuresPerMinute = Annotated[
    int,
    typer.Option(
        "--auth-failures-per-minute",
        min=0,
        help="An address that presents more tokens that are not live within a minute gets "
        "429 too-many-auth-failures with Retry-After on every request that needs a token, "
        "a valid one included, until a minute after those failures. 0: never.",
    ),
]
# TLS (README: "TLS"): uvicorn serves HTTPS with these; serve reads them first, so a
# wrong file is a CLI error naming its option rather than a traceback at startup.
TlsCert = Annotated[
    str | None,
    typer.Option(
        "--tls-cert",
        metavar="FILE",
        help="Serve HTTPS with this PEM certificate (its chain after it, if any). Without "
        "it, plain HTTP.",
        show_default=False,
    ),
]
TlsKey = Annotated[
    str | None,
    typer.Option(
        "--tls-key",
        metavar="FILE",
        help="The certificate's private key (PEM, not encrypted). Default: the key in "
        "--tls-cert's file.",
        show_default=False,
    ),
]
TlsClientCa = Annotated[
    str | None,
    typer.Option(
        "--tls-client-ca",
        metavar="FILE",
        help="Require every client to present a certificate signed by a CA of this PEM "
        "file (as Nomad's verify_https_client), probes included; a token is still needed.",
        show_default=False,
    ),
]
Advertise = Annotated[
    str | None,
    typer.Option(
        "--advertise",
        metavar="URL",
        help="Where the other replicas on the database reach this one (http(s)://HOST:PORT): "
        "while it holds the controller's lease they forward their writes there, so one "
        "process commits. Default: the address it listens on, or none when it listens on "
        "every address (0.0.0.0, ::), and then each replica commits its own writes.",
        show_default=False,
    ),
]


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
            help="Readable lines, or every line one JSON object for a log pipeline "
            "(time, level, logger, message and each line's own fields: an event's id, "
            "kind, subject, actor, request id, details...; a request's method, route, "
            "status, duration_ms, request id, accessor; a traceback as exception).",
        ),
    ] = LogFormat.text,
    header_timeout: HeaderTimeout = 10.0,
    max_conns_per_client: MaxConnsPerClient = 100,
    graceful_timeout: GracefulTimeout = 10.0,
    auth_failures_per_minute: AuthFailuresPerMinute = 30,
    tls_cert: TlsCert = None,
    tls_key: TlsKey = None,
    tls_client_ca: TlsClientCa = None,
    advertise: Advertise = None,
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

    With --tls-cert and --tls-key it serves HTTPS (clients: --ca-cert FILE), and with
    --tls-client-ca as well it asks every client for a certificate (clients:
    --client-cert FILE --client-key FILE).

    \b
    Examples:
      placed serve --help
      # exit code 2: no such certificate file
      placed serve --tls-cert no-such-cert.pem --tls-key no-such-key.pem
      # exit code 2: a database without placed's schema (placed db upgrade first)
      placed serve --database sqlite:///empty.db
      # exit code 2: an address this machine does not have
      placed db upgrade --database sqlite:///ready.db > /dev/null && \\
          placed serve --database sqlite:///ready.db --host 192.0.2.1
    """
    # The store and the web framework load only when the server starts (cli/db.py: why).
    tls = _tls(tls_cert, tls_key, tls_client_ca)
    if advertise is not None:
        advertise = _advertised(advertise)
    from placed.store.database import StoreError, database_url
    from placed.store.schema import require_current

    url = database_url(database)
    try:
        require_current(url)
    except StoreError as error:
        fail_option("--database", str(error))
    from placed.operations.sweeps import Fault
    from placed.service.controller import Options

    try:
        controlling, fault = Options.from_environment(), Fault.from_environment()
    except ValueError as error:
        fail(str(error))
    # Bound here, not by uvicorn, so a port in use is a clear error and exit 2 rather
    # than a log line; uvicorn imports only once the socket is ours.
    listening = _listen(host, port)
    bound, bound_port = listening.getsockname()[:2]
    shown = f"[{bound}]" if ":" in bound else bound
    _log_events(log_level, log_format)
    where = f"{'https' if tls else 'http'}://{shown}:{bound_port}"
    if advertise is None and bound not in WILDCARDS:
        advertise = where
    if log_format is LogFormat.json:
        started = logging.getLogger("placed.serve")
        started.info("listening on %s", where, extra={"url": where, "console": f"{where}/ui"})
    else:
        err.print(
            f"placed serve: listening on {where} (the console: {where}/ui)",
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

    from placed.service import connections
    from placed.store.database import make_engine

    # Access lines are written at info: below that level they are never shown, and
    # skipping them spares each request the formatting. In JSON, placed writes its own
    # (service/middleware.py: the route, request id and accessor uvicorn does not know).
    shown_access = log_level in (LogLevel.info, LogLevel.debug, LogLevel.trace)
    as_json = log_format is LogFormat.json
    app = create_app(
        database=make_engine(url),
        readiness=ready,
        log_json=as_json,
        controlling=controlling,
        fault=fault,
        commit_process=True,
        auth_failures_per_minute=auth_failures_per_minute,
        access_log=as_json and shown_access,
        advertise=advertise,
    )
    limits = connections.Limits(header_timeout, max_conns_per_client)
    config = uvicorn.Config(
        app,
        http=connections.protocol(limits),
        log_level=log_level.value,
        access_log=shown_access and not as_json,
        timeout_graceful_shutdown=graceful_timeout,  # type: ignore[arg-type]
        # JSON: logging is configured already (_log_events), and uvicorn's default
        # configuration would bring back its text lines.
        log_config=None if as_json else uvicorn.config.LOGGING_CONFIG,
        **tls,
    )
    connections.Server(config, app.state.event_bell).run(sockets=[listening])


# Addresses that listen on every interface: none of them is one another replica can reach.
WILDCARDS = ("0.0.0.0", "::")


def _advertised(given: str) -> str:
    """--advertise as the base URL forwarded writes go to (no trailing slash)."""
    from urllib.parse import urlsplit

    from placed.store.tables import ADDRESS_LENGTH

    try:
        parts = urlsplit(given.strip())
        parts.port  # noqa: B018 - raises ValueError for a port that is not one
    except ValueError as error:
        fail_option("--advertise", f"{given!r} is not a URL: {error}")
    if parts.scheme not in ("http", "https") or not parts.hostname:
        fail_option("--advertise", f"{given!r}: give http://HOST:PORT or https://HOST:PORT")
    if parts.query or parts.fragment or parts.username or parts.password:
        fail_option("--advertise", f"{given!r}: give only a scheme, a host, a port and a path")
    found = parts.geturl().rstrip("/")
    if len(found) > ADDRESS_LENGTH:
        fail_option("--advertise", f"at most {ADDRESS_LENGTH} characters")
    return found


def _tls(cert: str | None, key: str | None, client_ca: str | None) -> dict[str, Any]:
    """uvicorn's TLS settings for these files (none: plain HTTP), once each file is
    known to hold what its option says (uvicorn loads them again, itself)."""
    if cert is None:
        if key is not None:
            fail_option("--tls-key", "give --tls-cert too: the key is of a certificate")
        if client_ca is not None:
            fail_option(
                "--tls-client-ca",
                "client certificates are asked for over TLS only: give --tls-cert too",
            )
        return {}
    # ssl loads only for a server that serves TLS (cli/db.py: why the CLI imports late).
    import ssl

    from placed.tlsfiles import TlsFileError, load_authorities, load_identity

    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    try:
        load_identity(context, cert, key, "--tls-cert", "--tls-key")
        if client_ca is not None:
            load_authorities(context, client_ca, "--tls-client-ca")
    except TlsFileError as error:
        fail_option(error.option, error.message)
    settings: dict[str, Any] = {"ssl_certfile": cert, "ssl_keyfile": key}
    if client_ca is not None:
        settings |= {"ssl_ca_certs": client_ca, "ssl_cert_reqs": ssl.CERT_REQUIRED}
    return settings


def _log_events(level: LogLevel, form: LogFormat) -> None:
    """placed's own log lines (an event per line) on stderr, beside uvicorn's; in JSON,
    every line of the process (service/logs.py)."""
    shown = logging.DEBUG if level in (LogLevel.debug, LogLevel.trace) else level.upper()
    if form is LogFormat.json:
        from placed.service.logs import use_json

        use_json(logging.getLevelName(shown) if isinstance(shown, str) else shown)
        return
    handler = logging.StreamHandler()
    handler.setFormatter(logging.Formatter("%(levelname)s:     %(message)s"))
    logger = logging.getLogger("placed")
    logger.addHandler(handler)
    logger.setLevel(shown)
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
