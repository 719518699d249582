"""A client of `placed serve` (synchronous, over httpx): what the online CLI commands
call. Every method answers the parsed JSON document; every failure, the server's problem
documents and a server that cannot be reached alike, is a `ClientError`."""

from __future__ import annotations

import os
import re
import ssl
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import httpx

from placed import __version__
from placed.tlsfiles import TlsFileError, load_authorities, load_identity

URL_ENVIRONMENT = "PLACED_URL"
TOKEN_ENVIRONMENT = "PLACED_TOKEN"
CA_CERT_ENVIRONMENT = "PLACED_CA_CERT"
CLIENT_CERT_ENVIRONMENT = "PLACED_CLIENT_CERT"
CLIENT_KEY_ENVIRONMENT = "PLACED_CLIENT_KEY"
DEFAULT_URL = "http://127.0.0.1:8700"
TIMEOUT_S = 30.0
PROBLEM_PREFIX = "urn:placed:problem:"


@dataclass(frozen=True, slots=True)
class ProblemError:
    """One entry of a problem document's `errors`: where (a JSON pointer or a query
    parameter; a line and column in the file the body was read from, if known) and what."""

    detail: str
    key: str | None = None
    file: str | None = None
    line: int | None = None
    column: int | None = None

    def __str__(self) -> str:
        place = self.key or ""
        if self.file is not None:
            place = f"{self.file}:{self.line}:{self.column}" + (f": {place}" if place else "")
        return f"{place}: {self.detail}" if place else self.detail


class ClientError(Exception):
    """A request that did not succeed. `status` is None when no answer came (the server
    cannot be reached, or answered something that is not HTTP); `kind` is the problem's
    kind (`forbidden`, ...) or a kind of our own (`unreachable`, `bad-answer`)."""

    def __init__(
        self,
        status: int | None,
        kind: str,
        detail: str,
        problem: dict[str, Any] | None = None,
        errors: Sequence[ProblemError] = (),
    ) -> None:
        super().__init__(detail)
        self.status = status
        self.kind = kind
        self.detail = detail
        self.problem = problem
        self.errors = errors  # the problem's `errors`, each at its place

    def __str__(self) -> str:
        return self.detail


def client_tls(
    ca_cert: str | None = None,
    client_cert: str | None = None,
    client_key: str | None = None,
    names: tuple[str, str, str] = ("--ca-cert", "--client-cert", "--client-key"),
) -> ssl.SSLContext | None:
    """The TLS a client speaks to an https:// server: the server's certificate verified
    with the CAs of `ca_cert` (a PEM bundle; without one, httpx's usual CAs), and the
    client's own certificate and key presented to a server that asks (placed serve
    --tls-client-ca). None when no file is given: httpx's defaults. A file that is not
    what it should be is a `TlsFileError` naming it by its name in `names`."""
    if client_key is not None and client_cert is None:
        raise TlsFileError(names[2], f"give {names[1]} FILE too: the key is of a certificate")
    if ca_cert is None and client_cert is None:
        return None
    if ca_cert is None:
        context = httpx.create_ssl_context()
    else:
        # The bundle given replaces the usual CAs (as curl's --cacert): a private CA's
        # server is trusted for what that CA signed, and nothing else is.
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        load_authorities(context, ca_cert, names[0])
    if client_cert is not None:
        load_identity(context, client_cert, client_key, names[1], names[2])
    return context


class Client:
    """`tls`: the TLS to speak to an https:// server (client_tls); None, httpx's."""

    def __init__(
        self,
        server: str,
        token: str | None,
        timeout: float = TIMEOUT_S,
        tls: ssl.SSLContext | None = None,
    ) -> None:
        self.server = server.rstrip("/")
        try:
            url = httpx.URL(self.server)
        except httpx.InvalidURL:
            url = None
        if url is None or url.scheme not in ("http", "https") or not url.host:
            raise ClientError(
                None, "invalid-url", f"{server!r} is not a URL of placed (http://HOST:PORT)"
            )
        self.token = token
        headers = {"User-Agent": f"placed/{__version__}"}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        self._http = httpx.Client(
            base_url=self.server,
            headers=headers,
            timeout=timeout,
            verify=True if tls is None else tls,
        )

    @classmethod
    def from_options(
        cls,
        server: str | None,
        token: str | None,
        timeout: float = TIMEOUT_S,
        ca_cert: str | None = None,
        client_cert: str | None = None,
        client_key: str | None = None,
    ) -> Client:
        """The server, token and TLS files given, else $PLACED_URL (default
        http://127.0.0.1:8700), $PLACED_TOKEN, $PLACED_CA_CERT, $PLACED_CLIENT_CERT and
        $PLACED_CLIENT_KEY. A TLS file that is not what it should be is a
        `TlsFileError` naming its option, or its variable when it came from one."""
        chosen = server or os.environ.get(URL_ENVIRONMENT) or DEFAULT_URL
        files, names = [], []
        for given, option, variable in (
            (ca_cert, "--ca-cert", CA_CERT_ENVIRONMENT),
            (client_cert, "--client-cert", CLIENT_CERT_ENVIRONMENT),
            (client_key, "--client-key", CLIENT_KEY_ENVIRONMENT),
        ):
            found = given or os.environ.get(variable) or None
            files.append(found)
            names.append(f"${variable}" if found and not given else option)
        tls = client_tls(files[0], files[1], files[2], (names[0], names[1], names[2]))
        return cls(chosen, token or os.environ.get(TOKEN_ENVIRONMENT) or None, timeout, tls)

    def extend_timeout(self, seconds: float) -> None:
        """Wait at least this long for each answer (a long poll's, a slow server's)."""
        self._http.timeout = httpx.Timeout(max(seconds, self._http.timeout.read or 0.0))

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def request(
        self,
        method: str,
        path: str,
        json: Any = None,
        params: dict[str, Any] | None = None,
        content: bytes | str | None = None,
        headers: dict[str, str] | None = None,
        body_file: str | None = None,
    ) -> dict[str, Any]:
        """One request; the answer's JSON document (an empty dict for an empty body).
        `body_file`: the file the body was read from, which a problem's line and column
        are of (its errors then read FILE:LINE:COLUMN, as placed plan prints them)."""
        try:
            answer = self._http.request(
                method, path, json=json, params=params, content=content, headers=headers
            )
        except httpx.TimeoutException:
            raise ClientError(
                None, "unreachable", f"placed at {self.server} did not answer in time"
            ) from None
        except httpx.TransportError as error:
            raise ClientError(None, "unreachable", _unreachable(error, self.server)) from None
        return _document(answer, self.server, body_file)

    # Tokens

    def create_token(
        self,
        role: str,
        scope: str | None = None,
        description: str = "",
        expires_in_s: int | None = None,
    ) -> dict[str, Any]:
        body: dict[str, Any] = {"role": role, "scope": scope, "description": description}
        if expires_in_s is not None:
            body["expires_in_s"] = expires_in_s
        return self.request("POST", "/v1/tokens", json=body)

    def list_tokens(self) -> dict[str, Any]:
        return self.request("GET", "/v1/tokens")

    def revoke_token(self, accessor: str) -> dict[str, Any]:
        return self.request("DELETE", f"/v1/tokens/{_segment(accessor)}")

    # The world

    def apply(
        self,
        text: str,
        source: str,
        dry_run: bool = False,
        prune: bool = False,
        expected_revision: int | None = None,
        shown_as: str | None = None,
    ) -> dict[str, Any]:
        """Apply a spec file's text (native, or a Juju file): the plan and the changes.
        `shown_as`: the file as the user named it, in the errors' FILE:LINE:COLUMN."""
        params: dict[str, Any] = {"source": source}
        if dry_run:
            params["dry_run"] = "true"
        if prune:
            params["prune"] = "true"
        if expected_revision is not None:
            params["expected_revision"] = expected_revision
        return self.request(
            "POST",
            "/v1/apply",
            content=text.encode(),
            params=params,
            headers={"Content-Type": "application/yaml"},
            body_file=shown_as or source,
        )

    def listed(
        self, path: str, params: dict[str, Any] | None = None, most: int = 10_000
    ) -> list[dict[str, Any]]:
        """Every item of a paged list (at most `most`), page after page."""
        items: list[dict[str, Any]] = []
        query = dict(params or {})
        while len(items) < most:
            query["limit"] = min(1000, most - len(items))
            page = self.request("GET", path, params=query)
            found = page.get("items") or []
            items.extend(found)
            cursor = page.get("next_cursor")
            # Names page by the last one seen (null: no more); events by id (no new one).
            if not found or cursor is None or cursor == query.get("after"):
                break
            query["after"] = cursor
        return items[:most]

    def target(self, name: str) -> dict[str, Any]:
        return self.request("GET", f"/v1/targets/{_path(name)}")

    def workload(self, name: str) -> dict[str, Any]:
        return self.request("GET", f"/v1/workloads/{_segment(name)}")

    def unit(self, name: str) -> dict[str, Any]:
        return self.request("GET", f"/v1/units/{_path(name)}")

    def set_state(self, name: str, state: str, reason: str = "") -> dict[str, Any]:
        """Take a target down or bring it up: the moves."""
        return self.request("POST", f"/v1/targets/{_path(name)}/{state}", json={"reason": reason})

    def replace(self, name: str, dry_run: bool = False) -> dict[str, Any]:
        """Move a workload's units that no longer fit where they run: the moves."""
        params = {"dry_run": "true"} if dry_run else None
        return self.request("POST", f"/v1/workloads/{_segment(name)}/replace", params=params)

    def drain(self, name: str, reason: str = "", dry_run: bool = False) -> dict[str, Any]:
        """Put a target into maintenance and move its units off: the moves and refusals."""
        params = {"dry_run": "true"} if dry_run else None
        return self.request(
            "POST", f"/v1/targets/{_path(name)}/drain", json={"reason": reason}, params=params
        )

    def drain_all(
        self, names: Sequence[str], reason: str = "", dry_run: bool = False
    ) -> dict[str, Any]:
        """Several targets into maintenance in one change: no unit leaving one lands on
        another. The moves and refusals."""
        params = {"dry_run": "true"} if dry_run else None
        body = {"targets": list(names), "reason": reason}
        return self.request("POST", "/v1/targets:drain", json=body, params=params)

    def simulate(
        self,
        down: list[str] | None = None,
        up: list[str] | None = None,
        migrate: list[tuple[str, str]] | None = None,
    ) -> dict[str, Any]:
        """What would move if `down` failed and `up` came up (one simulation), or the VMs
        of `migrate` (unit, host) moved: `placed simulate`'s document and the `revision`
        it read. Nothing changes."""
        body: dict[str, Any] = {"down": list(down or []), "up": list(up or [])}
        if migrate:
            body["migrate"] = [{"unit": unit, "target": target} for unit, target in migrate]
        return self.request("POST", "/v1/simulate", json=body)

    def set_states(
        self,
        down: list[str] | None = None,
        up: list[str] | None = None,
        reason: str = "",
        expected_revision: int | None = None,
    ) -> dict[str, Any]:
        """Take several targets down and others up in one change (root admins), refused
        (409 revision-changed) when `expected_revision` is no longer the world's."""
        params = {"expected_revision": expected_revision} if expected_revision is not None else None
        body = {"down": list(down or []), "up": list(up or []), "reason": reason}
        return self.request("POST", "/v1/targets:batch", json=body, params=params)

    def heartbeat(self, name: str) -> dict[str, Any]:
        return self.request("POST", f"/v1/targets/{_path(name)}/heartbeat")


def _path(text: str) -> str:
    """A name that may hold / (a container 1/lxc/0, a unit web/0) as the route takes it:
    its slashes kept, every other reserved character quoted."""
    return quote(text, safe="/")


def _segment(text: str) -> str:
    """One path segment, so a name holding / or ? stays one."""
    return quote(text, safe="")


# OpenSSL's verify codes for a certificate whose issuer is not among the CAs trusted:
# unable to get the issuer (2, 20), cannot verify the leaf (21), self-signed (18, 19).
UNKNOWN_ISSUER = {2, 18, 19, 20, 21}
HOST_MISMATCH = {62, 64}  # X509_V_ERR_HOSTNAME_MISMATCH, X509_V_ERR_IP_ADDRESS_MISMATCH


def _unreachable(error: httpx.TransportError, server: str) -> str:
    """Why no answer came, with what to do where TLS is why: the server's certificate
    not trusted or not for this host, TLS to a plain HTTP server or the other way round,
    or a server that asks for a client certificate and was not given one it trusts."""
    cause: BaseException | None = error
    while cause is not None and not isinstance(cause, ssl.SSLError):
        cause = cause.__cause__ or cause.__context__
    https = server.startswith("https:")
    if isinstance(cause, ssl.SSLCertVerificationError):
        why = str(cause.verify_message).rstrip(".")
        if cause.verify_code in HOST_MISMATCH:
            return (
                f"the certificate of placed at {server} is not for this host ({why}): "
                "use a name or address in --server that the certificate was made for"
            )
        text = f"the certificate of placed at {server} is not trusted ({why})"
        if cause.verify_code in UNKNOWN_ISSUER:
            text += f": give the CA that signed it, --ca-cert FILE (or ${CA_CERT_ENVIRONMENT})"
        return text
    if isinstance(cause, ssl.SSLError) and cause.reason == "WRONG_VERSION_NUMBER":
        return f"placed at {server} does not answer in TLS: is it plain HTTP (http://)?"
    text = f"cannot reach placed at {server}: {_reason(error)}"
    if isinstance(error, httpx.RemoteProtocolError) or isinstance(cause, ssl.SSLError):
        # A server that requires client certificates closes the connection on a client
        # without one it trusts, and says nothing a client can read about why.
        if https:
            text += (
                " (a server that asks for client certificates does this when it is given"
                " none it trusts: --client-cert FILE --client-key FILE)"
            )
        else:
            text += " (is it serving HTTPS? then https://)"
    return text


def _reason(error: httpx.TransportError) -> str:
    """The OS's words, as "connection refused" (httpx passes on "[Errno 111] ...")."""
    text = re.sub(r"^\[Errno -?\d+\]\s*", "", str(error).strip()) or type(error).__name__
    return text[:1].lower() + text[1:].rstrip(".")


def _problem_error(error: dict[str, Any], body_file: str | None) -> ProblemError:
    line, column = error.get("line"), error.get("column")
    located = body_file is not None and isinstance(line, int) and isinstance(column, int)
    key = error.get("pointer") or error.get("parameter")
    return ProblemError(
        str(error.get("detail", "")),
        str(key) if key else None,
        body_file if located else None,
        line if located else None,
        column if located else None,
    )


def _document(answer: httpx.Response, server: str, body_file: str | None = None) -> dict[str, Any]:
    try:
        data = answer.json() if answer.content else {}
    except ValueError:
        data = None
    if answer.is_success and isinstance(data, dict):
        return data
    if answer.is_success:
        raise ClientError(
            answer.status_code,
            "bad-answer",
            f"{server} answered {answer.status_code} with something that is not a JSON "
            "document (is it placed?)",
        )
    if isinstance(data, dict) and str(data.get("type", "")).startswith(PROBLEM_PREFIX):
        kind = str(data["type"]).removeprefix(PROBLEM_PREFIX)
        detail = str(data.get("detail") or data.get("title") or kind)
        errors = data.get("errors")
        listed = [
            _problem_error(e, body_file)
            for e in (errors if isinstance(errors, list) else [])
            if isinstance(e, dict)
        ]
        where = "; ".join(str(e) for e in listed)
        if listed and all(e.detail == detail for e in listed):
            detail = where  # the detail again, at its place: say it once
        elif where:
            detail = f"{detail}: {where}"
        raise ClientError(answer.status_code, kind, detail, data, listed)
    raise ClientError(
        answer.status_code,
        "bad-answer",
        f"{server} answered {answer.status_code} {answer.reason_phrase} (is it placed?)",
    )
