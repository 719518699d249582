"""Claims without overcommit (SERVICE.md): two real `placed serve` processes on one
database, 400 concurrent one-unit claims for the last 100 units of capacity. Exactly 100
are accepted, each persisted; usage equals capacity; every refusal is a 409 problem."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
from sqlalchemy import func, select

from placed.store.database import make_engine, reading
from placed.store.tables import Placement, TargetResource, Workload
from tests.running_servers import serving, upgrade

CLAIMS = 400
FREE = 100
CLIENTS = 48

SPEC = """
name: racks
inventory:
  - id: rack1
    kind: rack
    children:
      - {id: h1, capacity: {cpu: 60}}
      - {id: h2, capacity: {cpu: 60}}
workloads:
  # Takes 20 of the 120: 100 are left for the claims.
  - name: base
    units: 2
    resources: {cpu: 10}
"""


def test_400_claims_for_100_places_on_two_servers(database: str) -> None:
    token = upgrade(database)
    headers = {"authorization": f"Bearer {token}"}
    with serving(database, count=2) as bases:
        applied = httpx.post(
            f"{bases[0]}/v1/apply",
            content=SPEC,
            headers={**headers, "content-type": "application/yaml"},
            timeout=60,
        )
        assert applied.status_code == 200, applied.text

        def claim(i: int) -> httpx.Response:
            with httpx.Client(base_url=bases[i % 2], headers=headers, timeout=120) as client:
                return client.post(
                    "/v1/workloads", json={"name": f"vm{i}", "resources": {"cpu": 1}}
                )

        with ThreadPoolExecutor(CLIENTS) as pool:
            answers = list(pool.map(claim, range(CLAIMS)))
    statuses = [answer.status_code for answer in answers]
    assert not [s for s in statuses if s >= 500], [a.text for a in answers if a.status_code >= 500]
    accepted = [i for i, answer in enumerate(answers) if answer.status_code == 201]
    refused = [answer for answer in answers if answer.status_code != 201]
    assert len(accepted) == FREE, sorted(set(statuses))
    for answer in refused:
        assert answer.status_code == 409, answer.text
        assert answer.headers["content-type"] == "application/problem+json"
        assert answer.json()["type"] in (
            "urn:placed:problem:unplaceable",
            "urn:placed:problem:claim-conflict",
        )
    engine = make_engine(database)
    try:
        with reading(engine) as session:
            used = session.execute(
                select(func.sum(TargetResource.used), func.sum(TargetResource.capacity))
            ).one()
            names = set(session.scalars(select(Workload.name)))
            placed = session.scalar(select(func.count()).select_from(Placement))
    finally:
        engine.dispose()
    assert tuple(used) == (120.0, 120.0)
    assert names == {"base", *(f"vm{i}" for i in accepted)}
    assert placed == 2 + FREE


@pytest.fixture(autouse=True)
def _bounded() -> None:
    """(The claims are bounded by count; the servers by their own timeouts.)"""
