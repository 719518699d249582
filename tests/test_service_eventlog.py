"""Every committed event is a log line; JSON with every field under --log-format json."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from placed.service import create_app
from placed.service.logs import JsonFormatter
from placed.store import schema
from placed.store.database import make_engine

# What the log adds to an event's own fields on its line.
LOG_KEYS = {"level", "logger", "message"}
IRONIC = Path(__file__).resolve().parent.parent / "examples" / "ironic-service.yaml"


def test_each_event_is_one_json_log_line_and_counted(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    url = f"sqlite:///{tmp_path / 'placed.db'}"
    token = schema.upgrade(url).root_token
    engine = make_engine(url)
    client = TestClient(create_app(database=engine, log_json=True))
    client.headers["authorization"] = f"Bearer {token}"
    with caplog.at_level(logging.INFO, logger="placed.events"):
        applied = client.post(
            "/v1/apply", content=IRONIC.read_text(), headers={"content-type": "application/yaml"}
        )
        assert applied.status_code == 200
        down = client.post("/v1/targets/conductor1/down")
        assert down.status_code == 200
        refused = client.post("/v1/targets/nowhere/down")
        assert refused.status_code == 404
    lines = [
        json.loads(JsonFormatter().format(r)) for r in caplog.records if r.name == "placed.events"
    ]
    assert all(line["level"] == "info" and line["logger"] == "placed.events" for line in lines)
    lines = [{k: v for k, v in line.items() if k not in LOG_KEYS} for line in lines]
    stored = client.get("/v1/events", params={"after": 1}).json()["items"]
    # One line per committed event, the same fields as GET /v1/events; none for the 404.
    assert lines == stored
    kinds = {line["kind"] for line in lines}
    # The units' moves, and the audit trail of what the apply created (operations/audit.py).
    assert kinds - {"unit.placed", "target.down", "unit.moved"} == {
        "target.created",
        "workload.created",
        "setting.changed",
        "document.applied",
    }, kinds
    assert all(line["request_id"] for line in lines)
    metrics = client.get("/metrics").text
    assert 'placed_rebalance_moves_total{reason="unit.moved"} 3.0' in metrics
    assert 'placed_rebalance_moves_total{reason="unit.placed"} 3.0' in metrics
    engine.dispose()


def test_unplaced_units_are_a_gauge_by_the_filter_that_rejected_most(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'placed.db'}"
    root = schema.upgrade(url).root_token
    assert root is not None
    client = TestClient(
        create_app(database=make_engine(url)), headers={"Authorization": f"Bearer {root}"}
    )
    small = """
name: small
inventory:
  - {id: h1, capacity: {cpu: 2}}
  - {id: h2, capacity: {cpu: 2}, tags: [ssd]}
workloads:
  - {name: big, units: 2, resources: {cpu: 8}}
"""
    answer = client.post("/v1/apply", content=small, headers={"content-type": "application/yaml"})
    assert answer.status_code == 200, answer.text
    assert len(answer.json()["unplaced"]) == 2
    assert 'placed_unplaced_units{filter="capacity"} 2.0' in client.get("/metrics").text
    # A host that fits them: the gauge goes to zero, not away.
    grown = small.replace("{cpu: 2}, tags", "{cpu: 16}, tags")
    answer = client.post("/v1/apply", content=grown, headers={"content-type": "application/yaml"})
    assert answer.status_code == 200 and not answer.json()["unplaced"], answer.text
    assert 'placed_unplaced_units{filter="capacity"} 0.0' in client.get("/metrics").text
