"""The app's route table puts the hot route (claims) first: every request
must reach the route it reached with the routes in the order the modules declare them."""

from __future__ import annotations

import re
from typing import Any

from fastapi.routing import APIRoute
from starlette.routing import BaseRoute, Match

from placed.service.app import HOT_PATHS, create_app, declared_routes, is_hot

METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE", "HEAD")
# Names a path parameter takes: plain, with a slash (a `:path` parameter takes it), and
# ones that spell another route's tail, so a pattern that could swallow a longer path
# is tried on one.
NAMES = ("h1", "rack/h1", "h1/down", "h1/heartbeat", "z1/r2/h3/up", "w/0")


def _paths(template: str) -> set[str]:
    found = {template}
    for _ in range(3):
        found = {re.sub(r"\{[^}]+\}", name, path, count=1) for path in found for name in NAMES}
    return found


def _resolve(routes: list[BaseRoute], method: str, path: str) -> Any:
    """What Starlette's router picks: the first full match, else the first partial one."""
    scope = {"type": "http", "method": method, "path": path, "root_path": "", "headers": []}
    partial = None
    for route in routes:
        match, _ = route.matches(scope)
        if match is Match.FULL:
            return route
        if match is Match.PARTIAL and partial is None:
            partial = route
    return partial


def test_hot_routes_are_first_and_requests_reach_the_same_route() -> None:
    app = create_app()
    table = list(app.router.routes)
    declared = declared_routes(app)
    assert sorted(map(id, table)) == sorted(map(id, declared))
    hot = [route for route in table if isinstance(route, APIRoute) and is_hot(route)]
    assert {route.path for route in hot} == set(HOT_PATHS)
    assert table[: len(hot)] == hot
    templates = {getattr(route, "path", "") for route in declared} - {""}
    checked = 0
    for template in sorted(templates):
        for path in sorted(_paths(template)):
            for method in METHODS:
                assert _resolve(table, method, path) is _resolve(declared, method, path), (
                    method,
                    path,
                )
                checked += 1
    assert checked > 500  # every route, several names each


def test_moving_the_heartbeat_first_would_be_caught() -> None:
    """The check above can fail: GET /v1/targets/{name:path} also matches a heartbeat's
    path, so a PUT there, refused as a partial match, would be refused by the heartbeat's
    route (Allow: POST) instead of the target's (Allow: GET) with the heartbeat first."""
    app = create_app()
    declared = declared_routes(app)
    heartbeat = next(r for r in declared if getattr(r, "path", "").endswith("/heartbeat"))
    path = "/v1/targets/h1/heartbeat"
    moved = [heartbeat, *(r for r in declared if r is not heartbeat)]
    assert _resolve(declared, "PUT", path) is not heartbeat
    assert _resolve(moved, "PUT", path) is heartbeat
