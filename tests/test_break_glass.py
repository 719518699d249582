"""Break-glass (issue 34): the last live root-admin token cannot be revoked, over the API
or on the database, and `placed token create|list|revoke --database URL` manages tokens
with no server and no token, for the operator who lost every one."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import httpx
from fastapi.testclient import TestClient
from sqlalchemy import select
from typer.testing import CliRunner, Result

from placed.cli.main import app as cli
from placed.store import accounts, domains, schema, tokens
from placed.store.credentials import parse
from placed.store.database import make_engine, reading, writing
from placed.store.tables import EventRow, Token, now
from tests.running_servers import serving, upgrade
from tests.service_support import bearer, issue, served, table_digest


def accessor(text: str) -> str:
    parts = parse(text)
    assert parts is not None
    return parts.accessor


def placed(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args))


def test_the_last_live_root_admin_token_cannot_be_revoked(database: str) -> None:
    app, root = served(database)
    client = TestClient(app, headers=bearer(root))
    # Neither an expired nor a revoked root-admin token keeps the service reachable.
    issue(app, "root-admin", expired=True)
    issue(app, "root-admin", revoked=True)
    before = table_digest(app.state.database)

    refused = client.delete(f"/v1/tokens/{accessor(root)}")
    assert refused.status_code == 409, refused.text
    assert refused.headers["content-type"] == "application/problem+json"
    body = refused.json()
    assert body["type"] == "urn:placed:problem:last-root-admin"
    assert accessor(root) in body["detail"] and "create another" in body["detail"]
    assert table_digest(app.state.database) == before, "a refused revoke wrote something"
    assert client.get("/v1/whoami").json()["role"] == "root-admin", "the token still works"

    # With a second live one, the first goes; then the second is the last.
    second = client.post("/v1/tokens", json={"role": "root-admin"}).json()["token"]
    assert client.delete(f"/v1/tokens/{accessor(root)}").status_code == 200
    assert client.get("/v1/whoami").status_code == 401
    itself = TestClient(app, headers=bearer(second)).delete(f"/v1/tokens/{accessor(second)}")
    assert itself.status_code == 409, itself.text
    assert itself.json()["type"] == "urn:placed:problem:last-root-admin"
    # Other roles' tokens are revoked as before.
    user = issue(app, "domain-admin", "ROOT")
    done = TestClient(app, headers=bearer(second)).delete(f"/v1/tokens/{accessor(user)}")
    assert done.status_code == 200, done.text


def test_the_openapi_document_lists_the_409(database: str) -> None:
    app, _ = served(database)
    operation = app.openapi()["paths"]["/v1/tokens/{accessor}"]["delete"]
    assert "409" in operation["responses"]
    assert "last-root-admin" in operation["description"]


def test_of_two_concurrent_revokes_of_the_last_two_root_admin_tokens_one_is_refused(
    database: str,
) -> None:
    """The check and the revoke are one transaction that locks the live root-admin rows:
    the second revoke waits for the first, then sees it, and is refused. Without the
    lock, on PostgreSQL's READ COMMITTED, both would count two and both would revoke."""
    schema.upgrade(database)
    engine = make_engine(database)
    try:
        with writing(engine) as session:
            first = tokens.create(session, "root-admin")[0].accessor
            second = tokens.create(session, "root-admin")[0].accessor
            for row in session.scalars(select(Token)):
                if row.accessor not in (first, second):
                    row.revoked = now()
        outcome: dict[str, Any] = {}

        def revoke_second() -> None:
            try:
                with writing(engine) as session:
                    outcome["second"] = tokens.revoke_keeping_a_root(session, second)
            except tokens.LastRootAdmin as error:
                outcome["second"] = error

        with writing(engine) as session:
            assert tokens.revoke_keeping_a_root(session, first) is not None
            other = threading.Thread(target=revoke_second)
            other.start()
            other.join(1.0)
            assert other.is_alive(), "the second revoke did not wait for the first"
        other.join(30)
        assert isinstance(outcome["second"], tokens.LastRootAdmin), outcome
        with reading(engine) as session:
            live = session.scalars(
                select(Token.accessor).where(Token.role == "root-admin", Token.revoked.is_(None))
            ).all()
        assert live == [second]
    finally:
        engine.dispose()


def test_a_token_made_on_the_database_works_on_the_running_server(database: str) -> None:
    """The operator lost every token while the service runs: `placed token create
    root-admin --database` makes one the server accepts, with no server call and no
    token; list and revoke work there too, keeping the last root-admin."""
    root = upgrade(database)
    engine = make_engine(database)
    with writing(engine) as session:
        domains.create(session, "eng")
        accounts.create(session, "acme", "eng")
    with serving(database) as [base]:
        made = placed("token", "create", "root-admin", "--database", database, "-d", "break-glass")
        assert made.exit_code == 0, made.output
        lines = made.stdout.splitlines()
        assert lines[-2].startswith("The token, shown only this once")
        new = lines[-1]
        assert httpx.get(f"{base}/v1/whoami", headers=bearer(new)).json()["role"] == "root-admin"

        user = placed(
            "token",
            "create",
            "user",
            "acme",
            "--expires-in",
            "1h",
            "--database",
            database,
            "-o",
            "json",
        )
        assert user.exit_code == 0, user.output
        user_row = json.loads(user.stdout)
        assert user_row["scope"] == "acme" and user_row["expires"] is not None
        answer = httpx.get(f"{base}/v1/whoami", headers=bearer(user_row["token"]))
        assert answer.json() == {"accessor": user_row["accessor"], "role": "user", "scope": "acme"}

        listed = placed("token", "list", "--database", database, "-o", "json")
        assert listed.exit_code == 0, listed.output
        items = json.loads(listed.stdout)["items"]
        assert [item["accessor"] for item in items] == [
            accessor(root),
            accessor(new),
            user_row["accessor"],
        ]
        assert all("token" not in item for item in items), "a secret in the list"
        # As the server lists them (the same shape, so scripts read either).
        online = httpx.get(f"{base}/v1/tokens", headers=bearer(new)).json()["items"]
        assert online == items

        revoked = placed("token", "revoke", root, "--database", database, "-o", "json")
        assert revoked.exit_code == 0, revoked.output
        assert json.loads(revoked.stdout)["revoked"] is not None
        last = placed("token", "revoke", accessor(new), "--database", database)
        assert last.exit_code == 2
        assert "last live root-admin token" in last.stderr
        # The server learns of the revoke within its trust window (2 s).
        deadline = time.monotonic() + 10
        while httpx.get(f"{base}/v1/whoami", headers=bearer(root)).status_code != 401:
            assert time.monotonic() < deadline, "the revoked token still works"
            time.sleep(0.2)
        assert httpx.get(f"{base}/v1/whoami", headers=bearer(new)).status_code == 200

    with reading(engine) as session:
        kinds = [
            (row.kind, row.subject, (row.details or {}).get("by"), row.account)
            for row in session.scalars(select(EventRow).order_by(EventRow.id))
            if row.kind.startswith("token.")
        ]
    engine.dispose()
    assert kinds[1:] == [
        ("token.created", accessor(new), "placed token create --database", None),
        ("token.created", user_row["accessor"], "placed token create --database", "acme"),
        ("token.revoked", accessor(root), "placed token revoke --database", None),
    ]


def test_offline_refuses_a_database_not_at_this_placeds_schema(tmp_path: Path) -> None:
    missing = f"sqlite:///{tmp_path / 'none.db'}"
    done = placed("token", "create", "root-admin", "--database", missing)
    assert done.exit_code == 2
    assert "the database is empty; run placed db upgrade" in done.stderr
    assert not (tmp_path / "none.db").exists(), "asking created the file"

    old = f"sqlite:///{tmp_path / 'old.db'}"
    head = schema.head()
    schema.upgrade(old, to="0002")
    assert head != "0002"
    for command in (["create", "root-admin"], ["list"], ["revoke", "f" * 16]):
        done = placed("token", *command, "--database", old)
        assert done.exit_code == 2, done.output
        assert f"the schema is at 0002, and this placed needs {head}" in done.stderr
        assert "Traceback" not in done.output


def test_offline_bad_input_is_a_one_line_error(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'placed.db'}"
    schema.upgrade(url)
    cases = [
        (["create", "user", "nobody"], "SCOPE: there is no account 'nobody'"),
        (["create", "root-admin", "acme"], "SCOPE: a root-admin token acts everywhere"),
        (["create", "user"], "SCOPE: a user token needs a scope"),
        (["create", "root-admin", "--expires-in", "11y"], "--expires-in: at most ten years"),
        (["revoke", "f" * 16], "no token 'ffffffffffffffff'"),
        (["list", "--server", "http://127.0.0.1:9"], "--database: works on the database"),
        (["list", "--token", "plc_x_y"], "give it or --token, not both"),
    ]
    engine = make_engine(url)
    before = table_digest(engine)
    for args, said in cases:
        done = placed("token", *args, "--database", url)
        assert done.exit_code == 2, (args, done.output)
        assert done.stderr.startswith("error: ") and said in done.stderr, (args, done.stderr)
    assert table_digest(engine) == before
    engine.dispose()


def test_the_help_shows_the_way_back_in() -> None:
    done = placed("token", "create", "--help")
    assert "placed token create root-admin" in done.stdout
    assert "--database sqlite:///placed.db" in done.stdout
