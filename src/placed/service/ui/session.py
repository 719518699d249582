"""The console's sign-in and its calls to the API.

The token a user signs in with is kept in an HttpOnly, SameSite=Strict cookie scoped to
/ui; every page calls the app's own /v1 routes in process (httpx over ASGI) with it as
the bearer, so a refusal is the API's own. A form that changes anything carries a CSRF
value derived from the token (a hash only the holder of the cookie can compute), and a
request whose Origin is another site's is refused before that.
"""

from __future__ import annotations

import hashlib
import hmac
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl

import httpx
from fastapi import Request

COOKIE = "placed_console"
MAX_FORM_BYTES = 64 * 1024
MAX_FIELD = 4096
# What a token may look like before it is worth asking the API about (auth.py parses it).
TOKEN_TEXT = re.compile(r"[A-Za-z0-9_\-]{1,255}")
INTERNAL = "http://placed.console"


def csrf_of(token: str) -> str:
    return hashlib.sha256(b"placed console csrf\0" + token.encode()).hexdigest()


def signed_in(request: Request) -> str | None:
    """The token of the cookie, when it looks like one."""
    token = request.cookies.get(COOKIE)
    return token if token and TOKEN_TEXT.fullmatch(token) else None


def same_origin(request: Request) -> bool:
    """No Origin (a browser sends one on every POST; a form-less client may not), or
    this very host's."""
    origin = request.headers.get("origin")
    if origin is None:
        return True
    host = request.headers.get("host", "")
    return origin in (f"http://{host}", f"https://{host}")


class FormError(Exception):
    """A form body the console does not read (too large, or not a form)."""


async def form(
    request: Request, max_bytes: int = MAX_FORM_BYTES, long: Mapping[str, int] | None = None
) -> dict[str, str]:
    """An urlencoded form, bounded: one value per name (the first), each at most
    MAX_FIELD characters, or as many as `long` gives its name (a pasted spec)."""
    kind = request.headers.get("content-type", "").split(";")[0].strip()
    if kind != "application/x-www-form-urlencoded":
        raise FormError("the console reads application/x-www-form-urlencoded forms only")
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > max_bytes:
            raise FormError(f"a form of at most {max_bytes:,} bytes")
    try:
        pairs = parse_qsl(body.decode(), keep_blank_values=True, max_num_fields=64)
    except (UnicodeDecodeError, ValueError) as error:
        raise FormError(f"not a form: {error}") from None
    found: dict[str, str] = {}
    for name, value in pairs:
        most = (long or {}).get(name, MAX_FIELD)
        if len(value) > most:
            raise FormError(f"{name}: at most {most:,} characters")
        found.setdefault(name, value)
    return found


def csrf_ok(token: str, fields: dict[str, str]) -> bool:
    return hmac.compare_digest(fields.get("csrf", ""), csrf_of(token))


@dataclass(frozen=True)
class Problem:
    """An API refusal as the page shows it."""

    status: int
    kind: str
    title: str
    detail: str


@dataclass(frozen=True)
class Answer:
    status: int
    data: Any
    problem: Problem | None


async def call(
    request: Request,
    token: str,
    method: str,
    path: str,
    params: Any = None,
    json: Any = None,
    timeout: float = 40.0,
    content: bytes | None = None,
    media_type: str | None = None,
) -> Answer:
    """The app's own API, in process, as the signed-in token; `content`: a body as it is
    (a spec document), of `media_type`."""
    # As the browser's address, not httpx's stand-in: a token that fails counts for it
    # (service/lockout.py).
    client = (request.client.host, request.client.port) if request.client else ("", 0)
    transport = httpx.ASGITransport(app=request.app, client=client)
    headers = {"Authorization": f"Bearer {token}"}
    if media_type is not None:
        headers["Content-Type"] = media_type
    request_id = request.headers.get("x-request-id")
    if request_id:
        headers["X-Request-Id"] = request_id
    async with httpx.AsyncClient(transport=transport, base_url=INTERNAL, timeout=timeout) as api:
        answer = await api.request(
            method, path, params=params, json=json, content=content, headers=headers
        )
    try:
        data = answer.json()
    except ValueError:
        data = None
    if answer.is_success:
        return Answer(answer.status_code, data, None)
    found = data if isinstance(data, dict) else {}
    kind = str(found.get("type", "")).removeprefix("urn:placed:problem:") or "error"
    return Answer(
        answer.status_code,
        data,
        Problem(
            answer.status_code,
            kind,
            str(found.get("title", answer.reason_phrase)),
            str(found.get("detail", answer.text[:500])),
        ),
    )
