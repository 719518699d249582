"""Targets going down and coming up over the API commit each unit from where the store
has it. A simulation compares two plans of the world, and its first plan, made from
scratch, may place units the store holds pending (room that an earlier change, judging
in its own order, did not find). Committing the simulation's own moves then counted
those units in a target's usage without placing them, and the next change that moved
them was stale on every try: `target down` answered 409 claim-conflict to a lone admin.
"""

from __future__ import annotations

from typing import Any

from fastapi.testclient import TestClient

from tests import row_invariants
from tests.conftest import EXAMPLES
from tests.service_support import client_of, served

PENDING = EXAMPLES.parent / "tests" / "data" / "console-pending.yaml"


def apply(client: TestClient, path: Any) -> None:
    answer = client.post(
        "/v1/apply",
        content=path.read_bytes(),
        headers={"content-type": "application/yaml"},
    )
    assert answer.status_code == 200, answer.text


def change(client: TestClient, target: str, action: str) -> list[tuple[str, Any, Any]]:
    answer = client.post(f"/v1/targets/{target}/{action}", json={"reason": "a test"})
    assert answer.status_code == 200, answer.text
    return [(m["unit"], m["from"], m["to"]) for m in answer.json()["moves"]]


def test_down_and_up_keep_usage_and_placements_together(database: str) -> None:
    app, root = served(database)
    client = client_of(app, root)
    apply(client, EXAMPLES / "cloudstack-dedication.yaml")
    apply(client, PENDING)
    engine = app.state.database

    def rows_agree() -> None:
        assert row_invariants.broken_rows(row_invariants.read_rows(engine)) == []

    # Both shared hosts down, then up again: the units that return are placed in an
    # order of their own, which a plan from scratch need not repeat.
    for target in ("H33a", "H33b"):
        change(client, target, "down")
        rows_agree()
    for target in ("H33a", "H33b"):
        change(client, target, "up")
        rows_agree()
    # Every unit the usage counts is placed, and the store agrees with a plan of the
    # world: the next change finds nothing stale.
    moves = change(client, "H33a", "down")
    rows_agree()
    assert moves and all(source == "H33a" for _, source, _ in moves), moves
    change(client, "H33a", "up")
    rows_agree()
    placed = {
        item["unit"]: item.get("target") for item in client.get("/v1/placements").json()["items"]
    }
    stored = sum(1 for target in placed.values() if target == "H33a")
    assert stored > 0, placed
