"""Warnings users see beside results: something worked, but maybe not as meant."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Notice:
    code: str  # stable, for programs: "fewer-target-units", "tag-matches-nothing"...
    message: str
    workload: str | None = None
    unit: str | None = None
    target: str | None = None

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"code": self.code, "message": self.message}
        for key in ("workload", "unit", "target"):
            value = getattr(self, key)
            if value is not None:
                data[key] = value
        return data
