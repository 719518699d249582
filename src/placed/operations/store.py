"""The handle the service holds to the store and passes to operations, never looking
inside: one per app (`context.store`), the same for every operation."""

from __future__ import annotations

from typing import TypeAlias

from sqlalchemy import Engine

Store: TypeAlias = Engine
