"""Service offerings, read back as `model.dedications.Offering`."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from placed.model.dedications import Offering
from placed.store.tables import OfferingRow


def save(session: Session, offering: Offering) -> None:
    row = session.scalar(select(OfferingRow).where(OfferingRow.name == offering.name))
    if row is None:
        row = OfferingRow(name=offering.name)
        session.add(row)
    row.cpu, row.memory, row.disk = offering.cpu, offering.memory, offering.disk
    row.dedicated, row.implicit = offering.dedicated, offering.implicit
    session.flush()


def listed(session: Session) -> list[Offering]:
    rows = session.scalars(select(OfferingRow).order_by(OfferingRow.name)).all()
    return [
        Offering(row.name, row.cpu, row.memory, row.disk, row.dedicated, row.implicit)
        for row in rows
    ]
