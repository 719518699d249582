"""What went wrong below a request that is no fault of the request's route: the store's
connection lost under it, or text the database cannot store. The request context
middleware (service/middleware.py) asks here how to answer an exception it caught."""

from __future__ import annotations

from sqlalchemy import exc

from placed.operations.batch_commits import Lost


def lost_connection(error: Exception) -> str | None:
    """The first line of why, when `error` is the store's connection lost under the
    request (the server restarted, an operator's `pg_terminate_backend`, the commit
    process gone): a change may or may not have been stored. None for any other error."""
    if isinstance(error, exc.DBAPIError) and error.connection_invalidated:
        cause: object = error.orig or error
    elif isinstance(error, Lost):
        cause = error
    else:
        return None
    first = str(cause).strip().splitlines()
    return first[0] if first else "?"


def nul_in_text(error: Exception) -> bool:
    """Whether the database refused a text for holding a NUL character, which no database
    stores (PostgreSQL rolls the transaction back)."""
    if not isinstance(error, exc.DataError):
        return False
    text = str(error.orig or error)
    return "NUL (0x00)" in text or "\\u0000" in text
