"""`placed token`: create, list and revoke the tokens of a running `placed serve`, or,
with `--database`, on its database directly (cli/token_offline.py)."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer

from placed.cli.grid import Cell, Grid, show
from placed.cli.output import (
    Error,
    Format,
    dump,
    error_format,
    fail,
    fail_option,
    guarded,
    out,
    write,
)

if TYPE_CHECKING:
    from placed.client import Client, ClientError

# httpx (through placed.client) and the store are imported by the commands, not here:
# every offline command starts through this module (cli/db.py says why).
URL_ENVIRONMENT = "PLACED_URL"  # placed.client.URL_ENVIRONMENT (a test holds them)
TOKEN_ENVIRONMENT = "PLACED_TOKEN"
CA_CERT_ENVIRONMENT = "PLACED_CA_CERT"
CLIENT_CERT_ENVIRONMENT = "PLACED_CLIENT_CERT"
CLIENT_KEY_ENVIRONMENT = "PLACED_CLIENT_KEY"
DEFAULT_URL = "http://127.0.0.1:8700"

app = typer.Typer(
    help="The tokens of a running placed serve: create one (its text is shown once), list "
    "them without secrets, revoke one. A root-admin manages every token; a domain-admin "
    "those of its domain, the domains below it and their accounts. The last live "
    "root-admin token cannot be revoked.\n\n"
    "Lost every token? --database URL works on the database itself, with no server and "
    "no token.\n\n"
    "Unreachable server or refused token: a one-line message and exit code 2.\n\n"
    "\b\n"
    "Examples:\n"
    "  placed token create --help\n"
    "  # exit code 2: nothing listens on port 9\n"
    "  placed token list --server http://127.0.0.1:9\n"
    "  placed db upgrade && placed token list --database sqlite:///placed.db\n",
    no_args_is_help=True,
    rich_markup_mode=None,
)


class Role(StrEnum):
    root_admin = "root-admin"
    domain_admin = "domain-admin"
    user = "user"
    agent = "agent"


class DataFormat(StrEnum):
    table = "table"
    json = "json"
    yaml = "yaml"


ServerOption = Annotated[
    str | None,
    typer.Option(
        "--server",
        help=f"The URL of placed serve. Default: ${URL_ENVIRONMENT}, else {DEFAULT_URL}.",
        metavar="URL",
        show_default=False,
    ),
]
TokenOption = Annotated[
    str | None,
    typer.Option(
        "--token",
        help=f"The token to act with (plc_...). Default: ${TOKEN_ENVIRONMENT}. It shows in "
        f"the process list: prefer ${TOKEN_ENVIRONMENT}.",
        metavar="TOKEN",
        show_default=False,
    ),
]
CaCertOption = Annotated[
    str | None,
    typer.Option(
        "--ca-cert",
        help="For an https:// server: trust its certificate if a CA of this PEM file "
        f"signed it, instead of the usual CAs. Default: ${CA_CERT_ENVIRONMENT}.",
        metavar="FILE",
        show_default=False,
    ),
]
ClientCertOption = Annotated[
    str | None,
    typer.Option(
        "--client-cert",
        help="The certificate (PEM) to present to a server that asks for one (placed "
        f"serve --tls-client-ca). Default: ${CLIENT_CERT_ENVIRONMENT}.",
        metavar="FILE",
        show_default=False,
    ),
]
ClientKeyOption = Annotated[
    str | None,
    typer.Option(
        "--client-key",
        help="The --client-cert's private key (PEM, unencrypted). Default: "
        f"${CLIENT_KEY_ENVIRONMENT}, else the key in --client-cert's file.",
        metavar="FILE",
        show_default=False,
    ),
]
DatabaseOption = Annotated[
    str | None,
    typer.Option(
        "--database",
        help="Work on the database directly, with no server and no token (the way back "
        "in when every token is lost): sqlite:///FILE or "
        "postgresql+psycopg://USER@HOST:PORT/NAME, at this placed's schema. Not with "
        "--server or --token.",
        metavar="URL",
        show_default=False,
    ),
]
FormatOption = Annotated[
    DataFormat,
    typer.Option(
        "--format",
        "-f",
        "-o",
        help="table for people (plain aligned columns when piped); json or yaml for "
        'programs (errors too, as {"valid": false, "errors": [...]}).',
    ),
]

DURATION = re.compile(r"(\d+)([smhdwy]?)")
SECONDS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400, "y": 365 * 86400}


def seconds_of(text: str) -> int | None:
    """`90d`, `12h`, `30m`, `3600` (seconds), `1y`: seconds; None when not a duration."""
    found = DURATION.fullmatch(text.strip().lower())
    if found is None or int(found.group(1)) == 0:
        return None
    return int(found.group(1)) * SECONDS[found.group(2)]


def _begin(chosen: DataFormat) -> Format:
    fmt = Format(chosen.value)
    error_format.set(fmt)
    return fmt


@dataclass(frozen=True, slots=True)
class Reach:
    """How an online command reaches placed serve: its options as given (None: the
    environment's, else the default; Client.from_options)."""

    server: str | None
    token: str | None
    ca_cert: str | None = None
    client_cert: str | None = None
    client_key: str | None = None


def offline(database: str | None, server: str | None, token: str | None) -> str | None:
    """The database to work on (--database) rather than a server; None: a server."""
    if database is None:
        return None
    if server is not None or token is not None:
        given = "--server" if server is not None else "--token"
        fail_option(
            "--database",
            f"works on the database with no server and no token: give it or {given}, not both",
        )
    return database


@contextmanager
def connected(reach: Reach) -> Iterator[Client]:
    """A client of the server; any failure of the block is a one-line error, exit 2."""
    from placed.client import Client, ClientError
    from placed.tlsfiles import TlsFileError

    try:
        client = Client.from_options(
            reach.server,
            reach.token,
            ca_cert=reach.ca_cert,
            client_cert=reach.client_cert,
            client_key=reach.client_key,
        )
    except ClientError as error:
        fail_option("--server", error.detail)
    except TlsFileError as error:
        fail_option(error.option, error.message)
    try:
        with client:
            yield client
    except ClientError as error:
        refused(error, client)


def refused(error: ClientError, client: Client) -> NoReturn:
    if error.status is None:
        fail(error.detail)
    text = f"placed at {client.server} answered {error.status} ({error.kind}): {error.detail}"
    if error.kind == "unauthenticated" and not client.token:
        text += f" (give --token or set ${TOKEN_ENVIRONMENT})"
    fail(text, _problem_errors(error))


def _problem_errors(error: ClientError) -> list[Error] | None:
    """The problem's errors as `placed validate -o json` gives a spec's: each at its file,
    line and column (where the body came from a file), its pointer as the key."""
    found = [Error(e.detail, e.file, e.line, e.column, e.key) for e in error.errors]
    return found or None


def _emit(data: dict[str, Any], fmt: Format, table: Callable[[dict[str, Any]], None]) -> None:
    with guarded():
        if fmt.data:
            write(dump(data, fmt))
        else:
            table(data)


def _moment(text: Any) -> str:
    """An ISO time from the server, to the second (a table's width)."""
    if not text:
        return "never"
    return str(text).replace("T", " ").split(".")[0].removesuffix("Z") + "Z"


def _created_table(data: dict[str, Any]) -> None:
    rows: list[Sequence[Cell]] = [
        ("accessor", str(data.get("accessor", ""))),
        ("role", str(data.get("role", ""))),
        ("scope", str(data.get("scope") or "-")),
        ("description", str(data.get("description") or "-")),
        ("created", _moment(data.get("created"))),
        ("expires", _moment(data.get("expires"))),
    ]
    show(out, Grid(("field", "value"), rows))
    write("The token, shown only this once (only a hash of its secret is stored):\n")
    write(f"{data.get('token', '')}\n")


def _list_table(data: dict[str, Any]) -> None:
    items = data.get("items") or []
    if not items:
        write("no tokens\n")
        return
    rows: list[Sequence[Cell]] = [
        (
            str(item.get("accessor", "")),
            str(item.get("role", "")),
            str(item.get("scope") or "-"),
            _moment(item.get("created")),
            _moment(item.get("expires")),
            _moment(item.get("revoked")) if item.get("revoked") else "-",
            str(item.get("description") or ""),
        )
        for item in items
    ]
    columns = ("accessor", "role", "scope", "created", "expires", "revoked", "description")
    show(out, Grid(columns, rows))


@app.command()
def create(
    role: Annotated[
        Role, typer.Argument(help="The token's role.", metavar="ROLE", show_default=False)
    ],
    scope: Annotated[
        str | None,
        typer.Argument(
            help="What it acts for: a domain-admin's domain, a user's account, an agent's "
            "target (by name). None for a root-admin.",
            metavar="SCOPE",
            show_default=False,
        ),
    ] = None,
    description: Annotated[
        str, typer.Option("--description", "-d", help="A note for people (who, what for).")
    ] = "",
    expires_in: Annotated[
        str | None,
        typer.Option(
            "--expires-in",
            help="How long it works: 3600 (seconds), 30m, 12h, 90d, 2w, 1y; at most ten "
            "years. Default: until revoked.",
            metavar="DURATION",
            show_default=False,
        ),
    ] = None,
    server: ServerOption = None,
    token: TokenOption = None,
    ca_cert: CaCertOption = None,
    client_cert: ClientCertOption = None,
    client_key: ClientKeyOption = None,
    database: DatabaseOption = None,
    format_choice: FormatOption = DataFormat.table,
) -> None:
    """Create a token and print it, once: the server keeps only a hash of its secret.
    With --database, on the database itself (no server, no token needed): the way back
    in for an operator who lost every token.

    \b
    Examples:
      # exit code 2: it needs a running placed serve; nothing listens on port 9
      placed token create user acme --description "CI of acme" \\
          --server http://127.0.0.1:9
      # exit code 2: nothing listens on port 9
      PLACED_URL=http://127.0.0.1:9 placed token create domain-admin eng \\
          --expires-in 90d
      # exit code 2: not a duration
      placed token create user acme --expires-in soon
      # offline, on the database (as placed db upgrade made it)
      placed db upgrade && placed token create root-admin \\
          --database sqlite:///placed.db \\
          --description "break-glass, after every token was lost"
    """
    fmt = _begin(format_choice)
    seconds = seconds_of(expires_in) if expires_in is not None else None
    if expires_in is not None and seconds is None:
        fail_option(
            "--expires-in", f"{expires_in!r} is not a duration (3600, 30m, 12h, 90d, 2w, 1y)"
        )
    if (url := offline(database, server, token)) is not None:
        from placed.cli import token_offline

        data = token_offline.create(url, role.value, scope, description, seconds)
    else:
        with connected(Reach(server, token, ca_cert, client_cert, client_key)) as client:
            data = client.create_token(role.value, scope, description, seconds)
    _emit(data, fmt, _created_table)


@app.command(name="list")
def list_tokens(
    server: ServerOption = None,
    token: TokenOption = None,
    ca_cert: CaCertOption = None,
    client_cert: ClientCertOption = None,
    client_key: ClientKeyOption = None,
    database: DatabaseOption = None,
    format_choice: FormatOption = DataFormat.table,
) -> None:
    """List the tokens this token manages (a root-admin: all of them), oldest first,
    without their secrets; with --database, every token of the database.

    \b
    Examples:
      # exit code 2: needs a running placed serve; nothing listens on port 9
      placed token list --server http://127.0.0.1:9 -o json
      placed db upgrade && placed token list --database sqlite:///placed.db
    """
    fmt = _begin(format_choice)
    if (url := offline(database, server, token)) is not None:
        from placed.cli import token_offline

        data = token_offline.listed(url)
    else:
        with connected(Reach(server, token, ca_cert, client_cert, client_key)) as client:
            data = client.list_tokens()
    _emit(data, fmt, _list_table)


@app.command()
def revoke(
    accessor: Annotated[
        str,
        typer.Argument(
            help="The token's accessor (plc_<accessor>_..., or as placed token list shows it).",
            metavar="ACCESSOR",
            show_default=False,
        ),
    ],
    server: ServerOption = None,
    token: TokenOption = None,
    ca_cert: CaCertOption = None,
    client_cert: ClientCertOption = None,
    client_key: ClientKeyOption = None,
    database: DatabaseOption = None,
    format_choice: FormatOption = DataFormat.table,
) -> None:
    """Revoke a token: from now on the server refuses it. Revoking a revoked token
    changes nothing; a token may revoke itself; the last live root-admin token cannot be
    revoked (create another first). json and yaml print the token's row.

    \b
    Examples:
      # exit code 2: needs a running placed serve; nothing listens on port 9
      placed token revoke 0123456789abcdef --server http://127.0.0.1:9
      # exit code 2: placed db upgrade made no token 0123456789abcdef
      placed db upgrade && placed token revoke 0123456789abcdef \\
          --database sqlite:///placed.db
    """
    fmt = _begin(format_choice)
    if (url := offline(database, server, token)) is not None:
        from placed.cli import token_offline

        data = token_offline.revoke(url, _accessor(accessor))
    else:
        with connected(Reach(server, token, ca_cert, client_cert, client_key)) as client:
            data = client.revoke_token(_accessor(accessor))

    def sentence(row: dict[str, Any]) -> None:
        write(f"Revoked token {row.get('accessor', accessor)} at {_moment(row.get('revoked'))}.\n")

    _emit(data, fmt, sentence)


def _accessor(text: str) -> str:
    """A whole token given instead of its accessor counts as its accessor."""
    parts = text.strip().split("_")
    return parts[1] if len(parts) >= 3 and parts[0] == "plc" else text.strip()
