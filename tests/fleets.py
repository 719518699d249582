"""Ironic-like fleets for the controller's tests: conductors that heartbeat and nodes in
mapping mode, whose conductor is a pure function of the live conductors."""

from __future__ import annotations

from typing import Any

import yaml


def conductors_spec(
    nodes: int,
    conductors: int = 4,
    on_first: bool = False,
    interval_s: float = 0.2,
    timeout_s: float = 1.0,
    settings: dict[str, Any] | None = None,
) -> str:
    """`nodes` mapping units over conductor1..N: each node prefers the conductor of its
    rack (every one conductor1's when `on_first`), and all share dc1, so any live
    conductor can take any node."""
    document: dict[str, Any] = {
        "version": 1,
        "name": "fleet",
        "settings": {
            "default_mode": "mapping",
            "heartbeat_interval_s": interval_s,
            "heartbeat_timeout_s": timeout_s,
            **(settings or {}),
        },
        "inventory": [
            {"id": f"conductor{k}", "kind": "conductor", "tags": [f"rack{k}", "dc1"]}
            for k in range(1, conductors + 1)
        ],
        "workloads": [
            {"name": f"node{i}", "tags": ["dc1", f"rack{1 if on_first else 1 + i % conductors}"]}
            for i in range(nodes)
        ],
    }
    return yaml.safe_dump(document, sort_keys=False)
