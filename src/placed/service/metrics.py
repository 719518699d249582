"""Prometheus metrics of one app: its own registry (never the process-wide default, so
several apps in one process, as in the tests, count apart), labelled by route template
and never by raw path, so label values stay few whatever clients send."""

from __future__ import annotations

from collections.abc import Mapping

from fastapi import APIRouter, Request, Response
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.exposition import generate_latest

from placed.service.auth import public

# A request no route matched: one label value for all of them.
UNMATCHED = "<unmatched>"
# Any other method is one value too, so an invented method cannot add label values.
METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})


class HttpMetrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self._unplaced_seen: set[str] = set()
        self.requests = Counter(
            "placed_http_requests",
            "HTTP requests answered, by method, route template and status code.",
            ["method", "route", "code"],
            registry=self.registry,
        )
        self.duration = Histogram(
            "placed_http_request_duration_seconds",
            "Time to answer an HTTP request, by method and route template.",
            ["method", "route"],
            registry=self.registry,
        )

        self.schedule_attempts = Counter(
            "placed_schedule_attempts",
            "Claims planned, by result: placed, unplaceable or conflict (gave up).",
            ["result"],
            registry=self.registry,
        )
        self.scheduling_duration = Histogram(
            "placed_scheduling_attempt_duration_seconds",
            "Time to plan and commit one change of the world.",
            registry=self.registry,
        )
        self.claim_conflicts = Counter(
            "placed_claim_conflicts",
            "Commits that found a row changed since it was read: retried, or gave_up "
            "(a 409 claim-conflict).",
            ["outcome"],
            registry=self.registry,
        )
        self.moves = Counter(
            "placed_rebalance_moves",
            "Units that changed place, by reason (the event kind).",
            ["reason"],
            registry=self.registry,
        )
        self.targets = Gauge(
            "placed_targets",
            "Targets by liveness (up, down, unknown: never heartbeated), from the leader "
            "only: the other replicas leave it out.",
            ["liveness"],
            registry=self.registry,
        )
        self.unplaced_units = Gauge(
            "placed_unplaced_units",
            "Units the world's last plan on this replica left without a place, by the "
            "filter that rejected the most targets for each (none: no target at all).",
            ["filter"],
            registry=self.registry,
        )
        self.auth_failures = Counter(
            "placed_auth_failures",
            "Requests that presented a token that is not live (answered 401).",
            registry=self.registry,
        )
        self.leader = Gauge(
            "placed_leader",
            "1 while this replica holds the controller's lease, else 0.",
            registry=self.registry,
        )
        self.forwarded = Counter(
            "placed_forwarded_writes",
            "Writes this replica forwarded to the lease holder, by outcome: answered (the "
            "leader's answer, whatever its status), unreachable (never sent: not "
            "committed) or lost (sent, no answer: it may have been committed).",
            ["outcome"],
            registry=self.registry,
        )
        self.forwarded_received = Counter(
            "placed_forwarded_writes_received",
            "Writes another replica forwarded to this one, answered here.",
            registry=self.registry,
        )

    def liveness(self, counts: dict[str, int] | None) -> None:
        """The leader's count of targets per liveness; None: not the leader (no series)."""
        self.targets.clear()
        for state, count in sorted((counts or {}).items()):
            self.targets.labels(state).set(count)

    def committed(self, conflicts: int, kinds: list[str], seconds: float) -> None:
        """One change committed after `conflicts` retries, with these unit events."""
        if conflicts:
            self.claim_conflicts.labels("retried").inc(conflicts)
        for kind in kinds:
            self.moves.labels(kind).inc()
        self.scheduling_duration.observe(seconds)

    def unplaced(self, by_filter: Mapping[str, int]) -> None:
        """The unplaced units as a whole world's plan left them (filters it no longer
        names go to 0, so a gauge never stays up on an old count)."""
        for labels in list(self._unplaced_seen - set(by_filter)):
            self.unplaced_units.labels(labels).set(0)
        for name, count in by_filter.items():
            self.unplaced_units.labels(name).set(count)
        self._unplaced_seen |= set(by_filter)

    def observe(self, method: str, route: str, code: int, seconds: float) -> None:
        method = method if method in METHODS else "other"
        self.requests.labels(method, route, str(code)).inc()
        self.duration.labels(method, route).observe(seconds)

    def exposition(self) -> bytes:
        return generate_latest(self.registry)


router = APIRouter()


@router.get(
    "/metrics",
    response_class=Response,
    responses={200: {"content": {CONTENT_TYPE_LATEST: {}}, "description": "Prometheus text."}},
    summary="Metrics in Prometheus' text format",
    dependencies=[public()],
)
def metrics(request: Request) -> Response:
    found: HttpMetrics = request.app.state.metrics
    return Response(found.exposition(), media_type=CONTENT_TYPE_LATEST)
