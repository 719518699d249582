"""placed serve over TLS (README: "TLS"), with a CA and certificates the test makes
(trustme): the Python client and the CLI trust it with --ca-cert and not without; with
--tls-client-ca a client needs a certificate that CA signed; the console's cookie is
Secure over HTTPS; and a wrong file is a CLI error naming its option, exit 2."""

from __future__ import annotations

import http.server
import json
import re
import ssl
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
import trustme
from typer.testing import CliRunner

from placed.cli.main import app
from placed.client import Client, ClientError, client_tls
from tests.running_servers import Replica, running, upgrade
from tests.service_support import served


@dataclass(frozen=True)
class Pki:
    """The files of a test's PKI: the CA, the server's certificate and key (for
    127.0.0.1), a client's signed by the same CA, and a stranger's signed by another."""

    folder: Path

    def __getitem__(self, name: str) -> str:
        return str(self.folder / name)


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    folder = tmp_path_factory.mktemp("pki")
    ca, other = trustme.CA(), trustme.CA()
    ca.cert_pem.write_to_path(str(folder / "ca.pem"))
    issued = {
        "server": ca.issue_cert("127.0.0.1"),
        "client": ca.issue_cert("agent-1.example"),
        "stranger": other.issue_cert("agent-1.example"),
    }
    for name, cert in issued.items():
        cert.cert_chain_pems[0].write_to_path(str(folder / f"{name}.pem"))
        cert.private_key_pem.write_to_path(str(folder / f"{name}.key"))
    (folder / "junk.pem").write_text("not a certificate\n")
    return Pki(folder)


def trusting(pki: Pki, cert: str | None = None) -> ssl.SSLContext:
    identity = (pki[f"{cert}.pem"], pki[f"{cert}.key"]) if cert else (None, None)
    context = client_tls(pki["ca.pem"], *identity)
    assert context is not None
    return context


@dataclass(frozen=True)
class Running:
    server: Replica
    token: str


@pytest.fixture(scope="module")
def https(pki: Pki, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    url = f"sqlite:///{tmp_path_factory.mktemp('https') / 'placed.db'}"
    token = upgrade(url)
    args = ("--tls-cert", pki["server.pem"], "--tls-key", pki["server.key"])
    with running([Replica(url, {}, args, trusting(pki))]) as (server,):
        yield Running(server, token)


@pytest.fixture(scope="module")
def mutual(pki: Pki, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    url = f"sqlite:///{tmp_path_factory.mktemp('mutual') / 'placed.db'}"
    token = upgrade(url)
    args: tuple[str, ...] = ("--tls-cert", pki["server.pem"], "--tls-key", pki["server.key"])
    args += ("--tls-client-ca", pki["ca.pem"])
    with running([Replica(url, {}, args, trusting(pki, "client"))]) as (server,):
        yield Running(server, token)


def cli(*args: str) -> tuple[int, str, str]:
    done = CliRunner().invoke(app, list(args), env={"PLACED_TOKEN": "", "PLACED_CA_CERT": ""})
    assert done.exception is None or isinstance(done.exception, SystemExit), done.exception
    assert "Traceback" not in done.stdout + done.stderr
    return done.exit_code, done.stdout, done.stderr


def test_serve_says_it_listens_on_https(https: Running) -> None:
    assert https.server.base.startswith("https://")
    said = f"listening on {https.server.base} (the console: {https.server.base}/ui)"
    assert said in https.server.stderr()


def test_the_client_talks_to_it_with_the_ca(pki: Pki, https: Running) -> None:
    with Client(https.server.base, https.token, tls=trusting(pki)) as client:
        assert client.listed("/v1/targets") == []
        assert client.list_tokens()["items"]
    # Plain HTTP on the same port gets no answer.
    with pytest.raises(httpx.TransportError):
        httpx.get(f"http://127.0.0.1:{https.server.port}/healthz", timeout=5)


def test_the_client_without_the_ca_does_not_trust_it(https: Running) -> None:
    with Client(https.server.base, https.token) as client, pytest.raises(ClientError) as caught:
        client.listed("/v1/targets")
    assert caught.value.status is None
    assert str(caught.value) == (
        f"the certificate of placed at {https.server.base} is not trusted (unable to get "
        "local issuer certificate): give the CA that signed it, --ca-cert FILE (or "
        "$PLACED_CA_CERT)"
    )


def test_the_cli_talks_to_it_with_the_ca(pki: Pki, https: Running) -> None:
    reach = ("--server", https.server.base, "--token", https.token)
    code, out, _ = cli("get", "targets", *reach, "--ca-cert", pki["ca.pem"], "-o", "json")
    assert code == 0 and json.loads(out) == {"items": []}
    code, out, _ = cli("token", "list", *reach, "--ca-cert", pki["ca.pem"], "-o", "json")
    assert code == 0 and json.loads(out)["items"][0]["role"] == "root-admin"
    done = CliRunner().invoke(
        app, ["get", "targets", *reach], env={"PLACED_CA_CERT": pki["ca.pem"]}
    )
    assert done.exit_code == 0 and done.stdout == "no targets\n"


def test_the_cli_without_the_ca_is_refused_with_what_to_do(pki: Pki, https: Running) -> None:
    code, out, err = cli("get", "targets", "--server", https.server.base, "--token", https.token)
    assert code == 2 and out == ""
    assert err.startswith(f"error: the certificate of placed at {https.server.base} is not ")
    assert "--ca-cert FILE" in err
    # A CA that did not sign it is no better.
    with_other = ("--ca-cert", pki["stranger.pem"])
    code, _, err = cli("get", "targets", "--server", https.server.base, *with_other)
    assert code == 2 and "is not trusted" in err


def test_a_name_the_certificate_is_not_for_is_refused(pki: Pki, https: Running) -> None:
    localhost = https.server.base.replace("127.0.0.1", "localhost")
    code, _, err = cli("get", "targets", "--server", localhost, "--ca-cert", pki["ca.pem"])
    assert code == 2
    assert f"the certificate of placed at {localhost} is not for this host" in err


class Quiet(http.server.BaseHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        """Nothing on stderr, which the CLI's runner reads as the command's."""


def test_https_to_a_plain_server_says_so(pki: Pki) -> None:
    # Any plain HTTP server will do: what is tested is the client's reading of it.
    plain = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Quiet)
    threading.Thread(target=plain.serve_forever, daemon=True).start()
    try:
        base = f"https://127.0.0.1:{plain.server_address[1]}"
        code, _, err = cli("get", "targets", "--server", base, "--ca-cert", pki["ca.pem"])
        assert code == 2
        assert (
            err == f"error: placed at {base} does not answer in TLS: is it plain HTTP (http://)?\n"
        )
        # It does answer over HTTP (its 501), so the refusal was TLS's.
        assert httpx.get(base.replace("https:", "http:")).status_code == 501
    finally:
        plain.shutdown()
        plain.server_close()


def test_client_certificates_are_required_with_a_client_ca(pki: Pki, mutual: Running) -> None:
    reach = ("--server", mutual.server.base, "--token", mutual.token, "--ca-cert", pki["ca.pem"])
    code, _, err = cli("get", "targets", *reach)
    assert code == 2
    assert "--client-cert FILE --client-key FILE" in err
    # One signed by another CA is refused as well.
    stranger = ("--client-cert", pki["stranger.pem"], "--client-key", pki["stranger.key"])
    assert cli("get", "targets", *reach, *stranger)[0] == 2
    signed = ("--client-cert", pki["client.pem"], "--client-key", pki["client.key"])
    code, out, err = cli("get", "targets", *reach, *signed, "-o", "json")
    assert (code, json.loads(out)) == (0, {"items": []}), err
    from_environment = {
        "PLACED_CLIENT_CERT": pki["client.pem"],
        "PLACED_CLIENT_KEY": pki["client.key"],
    }
    done = CliRunner().invoke(app, ["get", "targets", *reach], env=from_environment)
    assert done.exit_code == 0 and done.stdout == "no targets\n", done.stderr
    # The probes too need one (as every route does: the handshake comes first).
    with pytest.raises(httpx.TransportError):
        httpx.get(f"{mutual.server.base}/healthz", verify=trusting(pki), timeout=5)
    answer = httpx.get(f"{mutual.server.base}/healthz", verify=trusting(pki, "client"))
    assert answer.status_code == 200


def test_the_client_presents_its_certificate(pki: Pki, mutual: Running) -> None:
    tls = client_tls(pki["ca.pem"], pki["client.pem"], pki["client.key"])
    with Client(mutual.server.base, mutual.token, tls=tls) as client:
        assert client.listed("/v1/targets") == []
    with (
        Client(mutual.server.base, mutual.token, tls=trusting(pki)) as client,
        pytest.raises(ClientError) as caught,
    ):
        client.listed("/v1/targets")
    assert caught.value.status is None and "--client-cert" in str(caught.value)


def login_cookie(answer: httpx.Response) -> str:
    assert answer.status_code == 303, answer.text
    cookie = answer.headers["set-cookie"]
    assert cookie.startswith("placed_console=")
    return cookie


def test_the_console_cookie_is_secure_over_https(pki: Pki, https: Running) -> None:
    answer = httpx.post(
        f"{https.server.base}/ui/login",
        data={"token": https.token},
        headers={"Origin": https.server.base},
        verify=trusting(pki),
    )
    attributes = {part.strip().lower() for part in login_cookie(answer).split(";")}
    assert {"secure", "httponly", "samesite=strict"} <= attributes


def test_the_console_cookie_is_not_secure_over_http(tmp_path: Path) -> None:
    console, root = served(f"sqlite:///{tmp_path / 'placed.db'}")
    from fastapi.testclient import TestClient

    answer = TestClient(console).post("/ui/login", data={"token": root}, follow_redirects=False)
    attributes = {part.strip().lower() for part in login_cookie(answer).split(";")}
    assert "httponly" in attributes and "secure" not in attributes


@pytest.mark.parametrize(
    ("files", "option", "message"),
    [
        (("--tls-key", "server.key"), "--tls-key", "give --tls-cert too"),
        (("--tls-client-ca", "ca.pem"), "--tls-client-ca", "over TLS only: give --tls-cert"),
        (("--tls-cert", "nope.pem", "--tls-key", "server.key"), "--tls-cert", "cannot read"),
        (("--tls-cert", "server.pem", "--tls-key", "nope.key"), "--tls-key", "cannot read"),
        (("--tls-cert", "junk.pem", "--tls-key", "server.key"), "--tls-cert", "no PEM cert"),
        (("--tls-cert", "server.pem", "--tls-key", "junk.pem"), "--tls-key", "no private key"),
        (("--tls-cert", "server.pem"), "--tls-cert", "holds no private key: give --tls-key"),
        (("--tls-cert", "server.pem", "--tls-key", "client.key"), "--tls-key", "is not the key"),
        (
            ("--tls-cert", "server.pem", "--tls-key", "server.key", "--tls-client-ca", "junk.pem"),
            "--tls-client-ca",
            "holds no PEM certificate",
        ),
    ],
)
def test_serve_refuses_tls_files_that_are_not_so(
    pki: Pki, files: tuple[str, ...], option: str, message: str
) -> None:
    args = [pki[word] if not word.startswith("--") else word for word in files]
    # Checked before the database: this one does not exist, and is not the error.
    code, _, err = cli("serve", "--database", "sqlite:///no/such/dir.db", *args)
    assert code == 2, err
    assert err.startswith(f"error: {option}: ") and message in err, err


def test_an_encrypted_key_is_refused_not_prompted_for(pki: Pki, tmp_path: Path) -> None:
    from cryptography.hazmat.primitives import serialization

    key = serialization.load_pem_private_key(Path(pki["server.key"]).read_bytes(), None)
    locked = tmp_path / "locked.key"
    locked.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.BestAvailableEncryption(b"secret"),
        )
    )
    args = ("--tls-cert", pki["server.pem"], "--tls-key", str(locked))
    code, _, err = cli("serve", "--database", "sqlite:///no/such/dir.db", *args)
    assert code == 2 and err.startswith("error: --tls-key: ") and "unencrypted" in err


@pytest.mark.parametrize(
    ("files", "option", "message"),
    [
        (("--ca-cert", "nope.pem"), "--ca-cert", "cannot read"),
        (("--ca-cert", "junk.pem"), "--ca-cert", "holds no PEM certificate"),
        (("--client-key", "client.key"), "--client-key", "give --client-cert FILE too"),
        (("--client-cert", "client.pem"), "--client-cert", "give --client-key FILE"),
        (("--client-cert", "client.pem", "--client-key", "server.key"), "--client-key", "not the"),
    ],
)
def test_the_cli_refuses_tls_files_that_are_not_so(
    pki: Pki, files: tuple[str, ...], option: str, message: str
) -> None:
    args = [pki[word] if not word.startswith("--") else word for word in files]
    # Checked before any connection: nothing listens on port 9.
    code, out, err = cli("get", "targets", "--server", "https://127.0.0.1:9", *args, "-o", "json")
    assert code == 2
    assert err.startswith(f"error: {option}: ") and message in err, err
    assert json.loads(out)["errors"][0]["key"] == option


def test_a_file_from_the_environment_is_named_by_its_variable(pki: Pki) -> None:
    done = CliRunner().invoke(
        app,
        ["get", "targets", "--server", "https://127.0.0.1:9"],
        env={"PLACED_CA_CERT": pki["nope.pem"]},
    )
    assert done.exit_code == 2
    assert re.match(r"error: \$PLACED_CA_CERT: cannot read .*nope\.pem", done.stderr)


def test_the_cli_names_the_clients_variables() -> None:
    # The CLI's help names them without importing the client (httpx) to start.
    from placed import client
    from placed.cli import token

    names = ("CA_CERT_ENVIRONMENT", "CLIENT_CERT_ENVIRONMENT", "CLIENT_KEY_ENVIRONMENT")
    assert [getattr(token, n) for n in names] == [getattr(client, n) for n in names]
