"""Token text: `plc_<accessor>_<secret>`. Pure functions, no I/O.

The accessor names the row; only the sha256 of the secret is stored, and it is compared
in constant time, so neither a copy of the database nor a timing probe yields a usable
token. A 256-bit random secret needs no slow hash: there is nothing to guess.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import string
from dataclasses import dataclass
from datetime import datetime

PREFIX = "plc"
ACCESSOR_BYTES = 8  # 16 hex digits: unique enough to name a row, not a secret
SECRET_BYTES = 32
_ACCESSOR_CHARS = frozenset(string.hexdigits.lower())
_SECRET_CHARS = frozenset(string.ascii_letters + string.digits + "-_")


@dataclass(frozen=True, slots=True)
class TokenText:
    accessor: str
    secret: str

    def __str__(self) -> str:
        return f"{PREFIX}_{self.accessor}_{self.secret}"


def new_token() -> TokenText:
    return TokenText(secrets.token_hex(ACCESSOR_BYTES), secrets.token_urlsafe(SECRET_BYTES))


def hash_secret(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def parse(text: str) -> TokenText | None:
    """The parts of a token, or None when the text is not one. The accessor is hex and
    holds no underscore, so the secret (URL-safe base64, which may) is the rest."""
    prefix, _, rest = text.strip().partition("_")
    accessor, _, secret = rest.partition("_")
    if prefix != PREFIX or len(accessor) != 2 * ACCESSOR_BYTES or not secret:
        return None
    if not set(accessor) <= _ACCESSOR_CHARS or not set(secret) <= _SECRET_CHARS:
        return None
    return TokenText(accessor, secret)


def verify(
    secret: str,
    stored_sha256: str,
    now: datetime,
    expires: datetime | None = None,
    revoked: datetime | None = None,
) -> bool:
    """Whether `secret` matches the stored hash and the token is live at `now`."""
    matches = hmac.compare_digest(hash_secret(secret), stored_sha256)
    # The hash is compared even for a dead token, so its state does not show in the time.
    return matches and revoked is None and (expires is None or now < expires)
