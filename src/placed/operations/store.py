"""The handle the service holds to the store and passes to operations, never looking
inside: one per app (`context.store`), the same for every operation. `Address` is where
that store is, for a process that opens its own (operations/batch_commits.py);
`StoreFailure` what any operation raises when the database is away or ended the session
(whatever was in flight rolled back)."""

from __future__ import annotations

from typing import TypeAlias

from sqlalchemy import URL, Engine
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session

Store: TypeAlias = Engine
Address: TypeAlias = URL
StoreFailure: TypeAlias = SQLAlchemyError
# An open transaction on the store, as store/database.py's `reading` gives one: what a
# service module already holding one (the replica's refresh) passes on to the store's
# reads, never looking inside.
Transaction: TypeAlias = Session
