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
        # Every key in every warning, null where it does not apply: a program reads
        # warning["unit"] without asking first whether it is there.
        return {
            "code": self.code,
            "message": self.message,
            "workload": self.workload,
            "unit": self.unit,
            "target": self.target,
        }
