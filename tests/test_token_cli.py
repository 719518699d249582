"""`placed token` as an operator runs it: against a real `placed serve` on loopback."""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
import yaml

from placed.cli import token as token_cli
from placed.client import DEFAULT_URL, TOKEN_ENVIRONMENT, URL_ENVIRONMENT, Client, ClientError
from placed.store import accounts, domains
from placed.store.database import make_engine, writing

from .test_service_serve import BIN, free_port

TOKEN = re.compile(r"plc_[0-9a-f]{16}_[A-Za-z0-9_-]+")


@dataclass(frozen=True)
class Server:
    url: str
    root: str


def placed(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    # Neither the caller's PLACED_URL nor PLACED_TOKEN: each test says what it uses.
    base = {k: v for k, v in os.environ.items() if k not in (URL_ENVIRONMENT, TOKEN_ENVIRONMENT)}
    return subprocess.run(
        [str(BIN / "placed"), *args],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
        env={**base, **env},
    )


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    database = f"sqlite:///{tmp_path_factory.mktemp('token-cli') / 'placed.db'}"
    upgraded = placed("db", "upgrade", "--database", database)
    assert upgraded.returncode == 0, upgraded.stderr
    found = TOKEN.search(upgraded.stdout)
    assert found is not None, upgraded.stdout
    engine = make_engine(database)
    with writing(engine) as session:
        domains.create(session, "eng")
        accounts.create(session, "acme", "eng")
    engine.dispose()
    port = free_port()
    process = subprocess.Popen(
        [
            *(str(BIN / "placed"), "serve", "--port", str(port), "--log-level", "warning"),
            *("--database", database),
        ],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and process.poll() is None:
            try:
                httpx.get(f"{url}/healthz", timeout=2)
                break
            except httpx.TransportError:
                time.sleep(0.1)
        assert process.poll() is None, process.stderr.read() if process.stderr else ""
        yield Server(url, found.group(0))
    finally:
        process.terminate()
        try:
            process.communicate(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.communicate()


def test_create_list_and_revoke_a_user_token(server: Server) -> None:
    env = {URL_ENVIRONMENT: server.url, TOKEN_ENVIRONMENT: server.root}
    created = placed("token", "create", "user", "acme", "-d", "CI of acme", "-o", "json", **env)
    assert created.returncode == 0, created.stderr
    made = json.loads(created.stdout)
    assert (made["role"], made["scope"], made["description"]) == ("user", "acme", "CI of acme")
    assert TOKEN.fullmatch(made["token"])
    secret = made["token"].split("_", 2)[2]

    # A table for people, with the text once at the end.
    shown = placed("token", "create", "user", "acme", "--expires-in", "90d", **env)
    assert shown.returncode == 0, shown.stderr
    assert "shown only this once" in shown.stdout
    assert TOKEN.fullmatch(shown.stdout.strip().splitlines()[-1])

    table = placed("token", "list", **env)
    assert table.returncode == 0, table.stderr
    lines = table.stdout.splitlines()
    assert lines[0].split() == [
        *("accessor", "role", "scope", "created", "expires", "revoked", "description")
    ]
    row = next(line for line in lines if line.startswith(made["accessor"]))
    assert row.split()[1:3] == ["user", "acme"] and "CI of acme" in row
    assert secret not in table.stdout

    listed = placed("token", "list", "-o", "json", "--server", server.url, "--token", server.root)
    assert listed.returncode == 0, listed.stderr
    items = json.loads(listed.stdout)["items"]
    assert made["accessor"] in [item["accessor"] for item in items]
    assert all("token" not in item for item in items) and secret not in listed.stdout
    as_yaml = placed("token", "list", "-o", "yaml", **env)
    assert yaml.safe_load(as_yaml.stdout)["items"] == items

    # The whole token names its accessor too.
    revoked = placed("token", "revoke", made["token"], **env)
    assert revoked.returncode == 0, revoked.stderr
    assert revoked.stdout.startswith(f"Revoked token {made['accessor']} at ")
    again = placed("token", "revoke", made["accessor"], "-o", "json", **env)
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["revoked"]

    # From then on the server refuses it: one line, exit 2.
    refused = placed("token", "list", "--token", made["token"], "--server", server.url)
    assert refused.returncode == 2
    expected = f"error: placed at {server.url} answered 401 (unauthenticated): "
    assert refused.stderr.startswith(expected), refused.stderr
    assert "Traceback" not in refused.stderr and len(refused.stderr.splitlines()) == 1


def test_what_the_server_refuses_is_a_one_line_error_and_exit_2(server: Server) -> None:
    env = {URL_ENVIRONMENT: server.url}
    missing = placed("token", "list", **env)
    assert missing.returncode == 2
    assert "(give --token or set $PLACED_TOKEN)" in missing.stderr
    user = json.loads(
        placed(
            "token", "create", "user", "acme", "-o", "json", **env, PLACED_TOKEN=server.root
        ).stdout
    )["token"]
    forbidden = placed("token", "create", "agent", "h1", **env, PLACED_TOKEN=user)
    assert forbidden.returncode == 2
    assert "answered 403 (forbidden)" in forbidden.stderr
    unknown = placed("token", "create", "user", "nobody", **env, PLACED_TOKEN=server.root)
    assert unknown.returncode == 2
    assert "/scope: there is no account 'nobody'" in unknown.stderr
    as_json = placed("token", "revoke", "f" * 16, "-o", "json", **env, PLACED_TOKEN=server.root)
    assert as_json.returncode == 2 and "no token 'ffffffffffffffff'" in as_json.stderr
    for stderr in (missing.stderr, forbidden.stderr, unknown.stderr, as_json.stderr):
        assert stderr.startswith("error: ") and len(stderr.splitlines()) == 1, stderr


def test_an_unreachable_server_is_a_message_naming_it_and_exit_2() -> None:
    done = placed("token", "list", "--server", "http://127.0.0.1:9", "--token", "plc_x")
    assert done.returncode == 2
    assert done.stderr == "error: cannot reach placed at http://127.0.0.1:9: connection refused\n"
    as_json = placed("token", "list", "-o", "json", PLACED_URL="http://127.0.0.1:9")
    assert as_json.returncode == 2
    assert json.loads(as_json.stdout)["valid"] is False
    bad = placed("token", "list", "--server", "127.0.0.1:8700")
    assert bad.returncode == 2 and bad.stderr.startswith("error: --server: ")
    duration = placed("token", "create", "user", "acme", "--expires-in", "soon")
    assert duration.returncode == 2 and duration.stderr.startswith("error: --expires-in: ")


def test_the_client_reads_its_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(URL_ENVIRONMENT, raising=False)
    monkeypatch.delenv(TOKEN_ENVIRONMENT, raising=False)
    default = Client.from_options(None, None)
    assert (default.server, default.token) == (DEFAULT_URL, None)
    monkeypatch.setenv(URL_ENVIRONMENT, "http://127.0.0.1:9/")
    monkeypatch.setenv(TOKEN_ENVIRONMENT, "plc_a_b")
    chosen = Client.from_options(None, None)
    assert (chosen.server, chosen.token) == ("http://127.0.0.1:9", "plc_a_b")
    given = Client.from_options("http://example.invalid", "plc_c_d")
    assert (given.server, given.token) == ("http://example.invalid", "plc_c_d")
    with pytest.raises(ClientError) as error:
        chosen.list_tokens()
    assert (error.value.status, error.value.kind) == (None, "unreachable")
    assert str(error.value) == "cannot reach placed at http://127.0.0.1:9: connection refused"
    # The CLI's names for them are the client's (it does not import the client to start).
    assert (token_cli.URL_ENVIRONMENT, token_cli.TOKEN_ENVIRONMENT, token_cli.DEFAULT_URL) == (
        URL_ENVIRONMENT,
        TOKEN_ENVIRONMENT,
        DEFAULT_URL,
    )


def test_durations() -> None:
    assert token_cli.seconds_of("3600") == 3600
    assert token_cli.seconds_of("90d") == 90 * 86400
    assert token_cli.seconds_of("2w") == 14 * 86400
    assert token_cli.seconds_of("12H") == 12 * 3600
    for bad in ("", "soon", "0", "-5m", "1.5h", "3 days"):
        assert token_cli.seconds_of(bad) is None, bad


def test_a_problem_answer_becomes_a_client_error_with_its_kind(tmp_path: Path) -> None:
    def answer(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/v1/tokens":
            return httpx.Response(
                422,
                json={
                    "type": "urn:placed:problem:invalid-scope",
                    "status": 422,
                    "title": "Unprocessable Entity",
                    "detail": "there is no account 'x'",
                    "request_id": "r1",
                    "errors": [{"pointer": "/scope", "detail": "there is no account 'x'"}],
                },
            )
        if request.url.path == "/html":
            return httpx.Response(502, text="<html>bad gateway</html>")
        return httpx.Response(200, text="not json")

    client = Client("http://placed.test", "plc_a_b")
    client._http = httpx.Client(base_url=client.server, transport=httpx.MockTransport(answer))
    with pytest.raises(ClientError) as refused:
        client.create_token("user", "x")
    assert (refused.value.status, refused.value.kind) == (422, "invalid-scope")
    assert refused.value.problem is not None and refused.value.problem["request_id"] == "r1"
    assert str(refused.value) == "/scope: there is no account 'x'"
    with pytest.raises(ClientError) as gateway:
        client.request("GET", "/html")
    assert (gateway.value.status, gateway.value.kind) == (502, "bad-answer")
    with pytest.raises(ClientError) as garbled:
        client.request("GET", "/other")
    assert garbled.value.kind == "bad-answer"
