"""Block placement: an allocation workload's units placed together, with the answer the
unit-by-unit loop gives.

Unit by unit, each unit takes the highest-scoring target that passes every filter, ties
going to its highest rendezvous weight (the lowest position among equal weights), and
takes capacity there. When every filter that reads the plan state is `local` (a landing
changes a verdict only where the unit landed) and every score is static, that loop is a
serial dictatorship: unit i takes its best target among those the units before it left
open. (It is also the stable assignment of engine/balance.py with every target
preferring earlier units rather than heavier ones.) What changes from one unit to the
next is only whether the target the last unit took still passes, so:

- the candidates are split into score tiers, best first and as needed; the first tier
  with an open target is the top, as it is for the loop when the better tiers have
  filled;
- the weights of a batch of units over the tier's open targets are one numpy block. A
  unit whose first choice in the block is still open when its turn comes takes it: the
  open targets then are a subset of those the block saw, so it is its best among them.
  Otherwise its best among the open ones is read from the same row;
- each filter's `tracker` says whether a target still passes after each landing, with
  the same float arithmetic as the consumer's reserve, and the capacity is reserved at
  the end one landing at a time per target (so 0.1 + 0.2 lands as it would unit by unit).

When no target is left open the remaining units go back to the loop, which judges them
one at a time (fallbacks, failure events and summaries as ever).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

import numpy as np
from numpy.typing import NDArray

from placed.engine.outcomes import Placement
from placed.engine.selection import (
    U64,
    premixed,
    premixed_weights_into,
    stable_hashes,
    top_candidates,
)
from placed.engine.state import PlanState
from placed.model import CONTAINER_KINDS, Workload
from placed.policy.base import UNCHANGED, BoolArray, FloatArray, Tracker

# Tests turn this off to compare block placement with the unit-by-unit loop.
ENABLED = True
# Cells (units x open targets) of one weight block: small enough to stay in cache.
_CELLS = 1 << 15
_MAX_BATCH = 256
# Score tiers found by a pass over the candidates each, before the rest are sorted.
_LAZY_TIERS = 4
# The tied targets a placement names: the loop's five, and a sixth that says "...".
_NAMED = 6

Positions = NDArray[np.intp]


def trackers(request: Any, state: PlanState) -> list[Tracker] | None:
    """The trackers of a compiled request's per-unit filters, or None when the workload
    cannot be placed in blocks (a filter that is not local, a score that reads the state,
    a consumer the trackers do not follow)."""
    if not ENABLED or request.dynamic:
        return None
    found: list[Tracker] = []
    followed = []
    for f, part in request.stepwise:
        if not f.local:
            return None
        tracker = f.tracker(part, state)
        if tracker is None:
            return None
        if tracker is not UNCHANGED:
            found.append(tracker)
        followed.append(f)
    if any(all(c is not f for f in followed) for c in request.consumers):
        return None
    return found


class _Tier:
    """The open targets of one score tier, and the names a placement reports as tied."""

    def __init__(self, positions: Positions, state: PlanState) -> None:
        self.positions = positions
        self.open = np.ones(positions.size, dtype=bool)
        self.left = int(positions.size)
        self.hashes = state.hashes[positions]
        self._state = state
        self._named: tuple[str, ...] = ()
        self._last = -1  # the tier index of the last named target
        self.tied: tuple[str, ...] = ()  # what a placement names as tied, as things stand
        self._seen: tuple[Positions, U64] | None = None
        self._name()

    def _name(self) -> None:
        first = np.flatnonzero(self.open[: self._scan()])[:_NAMED]
        if first.size < _NAMED:
            first = np.flatnonzero(self.open)[:_NAMED]
        self._named = tuple(self._state.target_id(int(p)) for p in self.positions[first])
        self._last = int(first[-1]) if first.size else -1
        self.tied = self._named if self.left > 1 else ()

    def _scan(self) -> int:
        # Where the first names usually are: a little past the last named target.
        return max(self._last + 1, 0) + 4 * _NAMED

    def seen(self) -> tuple[Positions, U64]:
        """The open targets' tier indices and `premixed` hashes (kept until a target
        closes)."""
        if self._seen is None:
            seen = np.flatnonzero(self.open)
            self._seen = (seen, premixed(self.hashes[seen]))
        return self._seen

    def close(self, index: int) -> None:
        self.open[index] = False
        self.left -= 1
        self._seen = None
        if index <= self._last or len(self._named) < _NAMED:
            self._name()
        elif self.left <= 1:
            self.tied = ()


def place(
    pipeline: Any,
    request: Any,
    workload: Workload,
    keys: list[str],
    state: PlanState,
    follow: list[Tracker],
) -> list[Placement]:
    """Place the leading units of `keys` while any target passes; returns their
    placements (the rest is the loop's)."""
    keep: BoolArray = pipeline.feasible(request, state)
    score: FloatArray = pipeline.scores(request, state)
    candidates = np.flatnonzero(keep)
    if candidates.size == 0:
        return []
    candidate_scores = score[candidates]
    if not np.isfinite(candidate_scores).all():
        return []  # a NaN ties with nothing: the loop's own comparisons decide
    tiers = _tiers(candidates, candidate_scores)
    first = next(tiers)
    feasible = int(candidates.size)
    total = state.size
    unit_hashes = premixed(stable_hashes(keys))
    name = workload.name
    landed: list[int] = []
    out: list[Placement] = []
    done, units = 0, len(keys)
    # As big as the first block needs, and never smaller than one row of any tier.
    cells = max(min(_CELLS, units * int(first.size)), feasible)
    buffer = np.empty(cells, dtype=np.uint64)
    scratch = np.empty(cells, dtype=np.uint64)
    known, base = state.index.targets, len(state.index)
    note, details, place_unit = state.note, state.details, state.place
    for positions in itertools.chain([first], tiers):
        tier = _Tier(positions, state)
        while done < units and tier.left:
            seen, seen_hashes = tier.seen()
            width = int(seen.size)
            rows = min(units - done, _MAX_BATCH, max(1, buffer.size // width))
            shape = (rows, width)
            weights = premixed_weights_into(
                unit_hashes[done : done + rows],
                seen_hashes,
                buffer[: rows * width].reshape(shape),
                scratch[: rows * width].reshape(shape),
            )
            chosen = seen[np.argmax(weights, axis=1)]
            firsts = chosen.tolist()
            first_positions = tier.positions[chosen].tolist()
            is_open = tier.open
            for row in range(rows):
                index = firsts[row]
                if is_open[index]:
                    position = first_positions[row]
                else:
                    still = np.flatnonzero(is_open[seen])
                    index = int(seen[still[int(np.argmax(weights[row, still]))]])
                    position = int(tier.positions[index])
                key = keys[done]
                target = known[position] if position < base else state.target(position)
                noted = note(key)
                via, said = ("policy", "") if noted is None else noted
                out.append(
                    Placement(
                        name,
                        key,
                        target.id,
                        float(score[position]),
                        feasible,
                        total,
                        tier.tied,
                        via,
                        container=target.kind if target.kind in CONTAINER_KINDS else None,
                        note=said,
                        details=tuple(details(key).items()),
                    )
                )
                place_unit(key, name, position)
                landed.append(position)
                done += 1
                fits = True
                for tracker in follow:
                    if not tracker.land(position):
                        fits = False
                if not fits:
                    tier.close(index)
                    feasible -= 1
                    if not tier.left:
                        break
        if done == units:
            break
    _reserve(pipeline, request, state, landed)
    return out


def _tiers(candidates: Positions, scores: FloatArray) -> Iterator[Positions]:
    """The candidates of each score tier, best first, each in ascending position: the
    first few found with a pass each (a workload seldom goes past its best tiers, and a
    pass is much cheaper than sorting a big fleet), the rest by one sort."""
    bound = float("inf")
    for _ in range(_LAZY_TIERS):
        below = scores < bound
        if not below.any():
            return
        bound = float(np.max(scores, where=below, initial=-np.inf))
        yield candidates[scores == bound]
    rest = scores < bound
    if not rest.any():
        return
    left, left_scores = candidates[rest], scores[rest]
    by_score = np.lexsort((left, -left_scores))
    ordered, ranked = left[by_score], left_scores[by_score]
    starts = np.flatnonzero(np.r_[True, ranked[1:] != ranked[:-1]]).tolist()
    for start, end in zip(starts, [*starts[1:], int(ranked.size)], strict=True):
        yield ordered[start:end]


def _reserve(pipeline: Any, request: Any, state: PlanState, landed: list[int]) -> None:
    """Take every landing's share, one landing at a time per target: the same
    subtractions, in the same order per target, as unit by unit."""
    if not landed:
        return
    positions, counts = np.unique(np.array(landed, dtype=np.intp), return_counts=True)
    for level in range(int(counts.max())):
        pipeline.reserve(request, state, positions[counts > level])


class Following:
    """Incremental selection for the units the loop judges one at a time: the verdicts of
    the static filters and of the `local` ones are kept across a workload's units, and
    after each landing only the target the unit took is looked at again; the filters
    that are not local (`distinct`) are judged in full for every unit, as before.

    When every filter that reads the state is local and every score that does is too
    (tenant-affinity), the scores and the top-scoring targets are kept as well (`ranked`):
    a landing rescores its own target and moves it in or out of the top, and only when
    the top empties are all targets ranked again. On a big fleet that is what a unit
    costs instead of several passes over every target."""

    def __init__(self, pipeline: Any, request: Any, state: PlanState) -> None:
        keep: BoolArray = pipeline.static_keep(request, state).copy()
        self._checks: list[tuple[Any, Any]] = []
        self._trackers: list[Tracker] = []
        for f, part in request.stepwise:
            tracker = f.tracker(part, state) if f.local else None
            if tracker is None:
                self._checks.append((f.keep, part))
                continue
            keep &= f.keep(part, state)
            if tracker is not UNCHANGED:
                self._trackers.append(tracker)
        self._keep = keep
        self.size = state.size
        self._ranks = not self._checks and all(s.local for s, _ in request.dynamic)
        if self._ranks:
            self._dynamic: list[tuple[Any, Any]] = request.dynamic
            self._base: FloatArray = pipeline.static_scores(request, state)
            # With a dynamic scorer a fresh array (rescored in place); without, the
            # compiled one, never written to.
            self._score: FloatArray = pipeline.scores(request, state)
            self._top = np.empty(0, dtype=np.intp)
            self._rank_all()
            # The landing not yet taken into the verdicts and scores: the loop reads
            # them for the unit's placement after it lands.
            self._landed = -1
            self._fits = True

    def feasible(self, state: PlanState) -> BoolArray:
        keep = self._keep.copy()
        for check, part in self._checks:
            keep &= check(part, state)
        return keep

    def ranked(self, state: PlanState) -> tuple[BoolArray, FloatArray, Positions] | None:
        """(the verdicts, the scores, the top-scoring targets) as the pipeline would give
        them now, or None when they are not kept (`feasible` and the full scores then)."""
        if not self._ranks:
            return None
        if self._landed >= 0:
            self._settle(self._landed, state)
            self._landed = -1
            if not self._ranks:
                return None
        return self._keep, self._score, self._top

    def land(self, position: int) -> None:
        """A unit lands at `position`; called before its share is reserved (a tracker
        reads what is free there the first time it is asked)."""
        fits = True
        for tracker in self._trackers:
            if not tracker.land(position):
                fits = False
        if self._ranks:
            self._landed, self._fits = position, fits
        elif not fits:
            self._keep[position] = False

    def _rank_all(self) -> None:
        top = top_candidates(self._keep, self._score)
        self._top = top
        self._best = float(self._score[top[0]]) if top.size else 0.0
        if self._best != self._best:  # NaN: only the pipeline's own comparisons decide
            self._ranks = False

    def _settle(self, position: int, state: PlanState) -> None:
        """Take the landing at `position` into the verdicts, its score and the top."""
        keep = self._keep
        if not self._fits:
            keep[position] = False
        score = self._score
        if self._dynamic:
            # The sum in the pipeline's order, so the same float as a full rescoring.
            found = float(self._base[position])
            for scorer, part in self._dynamic:
                found = found + scorer.score_at(part, state, position)
            if found != found:
                self._ranks = False
                return
            score[position] = found
        top = self._top
        at = int(np.searchsorted(top, position))
        present = at < top.size and int(top[at]) == position
        here = float(score[position])
        if keep[position] and here > self._best:
            self._top = np.array([position], dtype=np.intp)
            self._best = here
        elif keep[position] and here == self._best:
            if not present:
                self._top = np.insert(top, at, position)
        elif present:
            self._top = np.delete(top, at)
            if not self._top.size:
                self._rank_all()


def following(pipeline: Any, request: Any, state: PlanState) -> Following | None:
    """A Following for the request, or None when nothing would be saved (no local filter
    to keep) or the fast paths are off."""
    if not ENABLED or not any(f.local for f, _ in request.stepwise):
        return None
    return Following(pipeline, request, state)
