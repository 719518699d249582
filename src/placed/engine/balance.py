"""Bounded-load mapping: `max_load` caps every target at max_load times the mean load.

Plain mapping gives each unit the first target of its rendezvous ranking. That owner is a
pure function of (unit, live targets), and it is the only kind that moves nothing but a
lost target's units for every possible loss: such a function must follow a fixed ranking
per unit. With unit keys hashed independently, the loads are then counts of independent
draws, whatever the rankings: with 1,000 units per target the fullest of 100 targets
averages 8% over the mean and passes 10% about one time in thirteen.

A workload with `max_load` trades purity after a change for a hard cap:

- A plan is the unit-proposing stable assignment (Gale and Shapley) in which every
  target holds at most `cap` units, units rank targets by rendezvous weight and a full
  target keeps the units that weigh most for it. It is unique, so it does not depend on
  the order anything is listed in, and a unit whose first choice has room gets it, so
  where nothing is full the result is the plain mapping.
- A change (targets down or up) is a repair of the current owners, never a fresh plan:
  units of a lost target go to the best target of their ranking that has room; a
  target that joins takes the units that now rank it first, and then the surplus of
  targets over the new cap. So a loss moves exactly the lost units and a join moves
  units only to the joining targets, and no target ends over the cap (unless the
  joining targets are full themselves, which rounding alone can cause).

The price: after several changes the owners depend on the order the changes came in.
Rounds of proposals are numpy over (units x candidate targets) weight blocks; no Python
loop runs over targets. The last, long chains of a tight cap (one unit bumping the next)
go one proposal at a time, each unit keeping its next few choices at hand.
"""

from __future__ import annotations

import heapq
import math

import numpy as np
from numpy.typing import NDArray

from placed.engine.selection import U64, rendezvous_weights, unit_blocks

Positions = NDArray[np.intp]
UNPLACED = -1


def load_cap(units: int, targets: int, max_load: float) -> int:
    """The most units one target may hold: max_load x the mean, rounded down, but never
    below the mean rounded up (or the units would not fit)."""
    mean = units / targets
    # The epsilon keeps 1.1 x 1000 (1100.0000000000002 or 1099.9999999999998) at 1100.
    return max(math.ceil(mean), math.floor(max_load * mean + 1e-9))


def first_choices(unit_hashes: U64, target_hashes: U64) -> tuple[Positions, U64]:
    """Each unit's top target (an index into target_hashes) and its weight there."""
    owners = np.empty(unit_hashes.size, dtype=np.intp)
    weights = np.empty(unit_hashes.size, dtype=np.uint64)
    for rows in unit_blocks(unit_hashes.size, target_hashes.size):
        block = rendezvous_weights(unit_hashes[rows], target_hashes)
        best = np.argmax(block, axis=1)
        owners[rows] = best
        weights[rows] = block[np.arange(best.size), best]
    return owners, weights


# "No choice made yet": every target comes after it in a ranking.
_BEFORE_ALL = np.uint64(np.iinfo(np.uint64).max)


def _next_choice(
    unit_hashes: U64,
    target_hashes: U64,
    after_weight: U64,
    after_target: Positions,
    allowed: NDArray[np.bool_],
) -> tuple[Positions, U64]:
    """Each unit's next allowed target in its ranking, after the one it was turned away
    by (weight after_weight at target after_target; UNPLACED for none yet), or UNPLACED
    when it has run out. A ranking orders targets by weight, heaviest first, and equal
    weights by target index: one pass over the block, no sort."""
    owners = np.full(unit_hashes.size, UNPLACED, dtype=np.intp)
    weights = np.zeros(unit_hashes.size, dtype=np.uint64)
    columns = np.flatnonzero(allowed)
    for rows in unit_blocks(unit_hashes.size, columns.size):
        block = rendezvous_weights(unit_hashes[rows], target_hashes[columns])
        last = after_weight[rows][:, None]
        later = (block < last) | (
            (block == last) & (columns[None, :] > after_target[rows][:, None])
        )
        masked = np.where(later, block, np.uint64(0))
        best = np.argmax(masked, axis=1)
        line = np.arange(best.size)
        # A zero maximum is either "nothing left" or (one chance in 2**64) a real weight 0.
        zero = masked[line, best] == 0
        if zero.any():
            best[zero] = np.argmax(later[zero] & (block[zero] == 0), axis=1)
        found = later[line, best]
        owners[rows.start + line[found]] = columns[best[found]]
        weights[rows.start + line[found]] = block[line[found], best[found]]
    return owners, weights


def _keep_strongest(
    owners: Positions, weights: U64, limit: NDArray[np.intp], among: Positions | None = None
) -> Positions:
    """Units to turn away: for each target t, all but the limit[t] heaviest units that name
    t in `owners` (ties, which need equal 64-bit weights, go to the lower unit). Only the
    units `among` are looked at (default all); entries equal to UNPLACED are ignored."""
    present = np.flatnonzero(owners != UNPLACED) if among is None else among
    present = present[owners[present] != UNPLACED]
    if present.size == 0:
        return np.asarray(present, dtype=np.intp)
    order: Positions = present[np.lexsort((present, ~weights[present], owners[present]))]
    grouped = owners[order]
    first_of_group = np.searchsorted(grouped, grouped, side="left")
    place_in_group = np.arange(order.size) - first_of_group
    turned_away: Positions = order[place_in_group >= limit[grouped]]
    return turned_away


def stable_assignment(unit_hashes: U64, target_hashes: U64, cap: int) -> Positions:
    """The unit-proposing stable assignment with at most `cap` units per target: each
    unit's owner, an index into target_hashes."""
    return stable_assignment_passes(unit_hashes, target_hashes, cap)[0]


def stable_assignment_passes(
    unit_hashes: U64, target_hashes: U64, cap: int
) -> tuple[Positions, NDArray[np.bool_]]:
    """stable_assignment, and which units a full target sent past their first choice.

    Rounds of deferred acceptance: every unit turned away proposes to the next target of
    its ranking, and every target offered a unit keeps the `cap` heaviest of the units
    it holds or is offered. Needs cap x targets >= units.
    """
    targets = target_hashes.size
    if cap * targets < unit_hashes.size:
        raise ValueError(f"{unit_hashes.size} units do not fit {targets} targets of {cap}")
    owners, weights = first_choices(unit_hashes, target_hashes)
    limit = np.full(targets, cap, dtype=np.intp)
    everywhere = np.ones(targets, dtype=bool)
    touched = np.zeros(targets, dtype=bool)
    # Deferred acceptance never takes a unit back to a target that turned it away, so a
    # unit turned away once is off its first choice for good.
    passed = np.zeros(unit_hashes.size, dtype=bool)
    among: Positions | None = None
    while True:
        rejected = _keep_strongest(owners, weights, limit, among)
        passed[rejected] = True
        if rejected.size == 0:
            return owners, passed
        if rejected.size <= _TAIL:
            # The last rounds are long chains of one unit bumping the next: one proposal
            # at a time is far cheaper there than a round over whole arrays each.
            _propose_one_at_a_time(
                rejected, owners, weights, unit_hashes, target_hashes, cap, passed
            )
            return owners, passed
        owners[rejected], weights[rejected] = _next_choice(
            unit_hashes[rejected], target_hashes, weights[rejected], owners[rejected], everywhere
        )
        # Only targets offered a unit this round can turn anyone away next round.
        touched[:] = False
        touched[owners[rejected]] = True
        among = np.flatnonzero(touched[owners])


# Below this many units turned away in a round, the rest of the assignment proposes one
# unit at a time (the result is the same: deferred acceptance does not depend on order).
_TAIL = 4096
# How many of its next choices a unit turned away in the one-at-a-time phase keeps at hand.
_LOOKAHEAD = 16


def _propose_one_at_a_time(
    waiting: Positions,
    owners: Positions,
    weights: U64,
    unit_hashes: U64,
    target_hashes: U64,
    cap: int,
    passed: NDArray[np.bool_],
) -> None:
    """Finish deferred acceptance with a queue: `waiting` units were just turned away by
    owners[u] at weights[u]. Each target's holders sit in a heap, lightest on top."""
    holders: dict[int, list[tuple[int, int]]] = {}
    order = np.argsort(owners, kind="stable")
    sorted_owners = owners[order]
    is_waiting = np.zeros(owners.size, dtype=bool)
    is_waiting[waiting] = True

    def heap(target: int) -> list[tuple[int, int]]:
        found = holders.get(target)
        if found is None:
            lo, hi = np.searchsorted(sorted_owners, [target, target + 1])
            members = [int(u) for u in order[lo:hi] if not is_waiting[u]]
            # Lightest first; among equal weights the higher unit is the lighter.
            found = [(int(weights[u]), -u) for u in members]
            heapq.heapify(found)
            holders[target] = found
        return found

    upcoming: dict[int, list[tuple[int, int]]] = {}

    def next_choice(unit: int) -> tuple[int, int]:
        queue = upcoming.get(unit)
        if not queue:
            queue = upcoming[unit] = _choices_after(
                int(unit_hashes[unit]), target_hashes, int(weights[unit]), int(owners[unit])
            )
        return queue.pop()

    pending = [int(u) for u in waiting]
    while pending:
        unit = pending.pop()
        target, weight = next_choice(unit)
        owners[unit], weights[unit] = target, weight
        held = heap(target)
        if len(held) < cap:
            heapq.heappush(held, (weight, -unit))
        elif (weight, -unit) > held[0]:
            bumped = -heapq.heapreplace(held, (weight, -unit))[1]
            passed[bumped] = True
            pending.append(bumped)
        else:
            pending.append(unit)


def _choices_after(
    unit_hash: int, target_hashes: U64, after_weight: int, after_target: int
) -> list[tuple[int, int]]:
    """The next _LOOKAHEAD (target, weight) of one unit's ranking after the given choice,
    last first so that list.pop() gives the next."""
    row = rendezvous_weights(np.array([unit_hash], dtype=np.uint64), target_hashes)[0]
    columns = np.arange(row.size)
    last = np.uint64(after_weight)
    later = np.flatnonzero((row < last) | ((row == last) & (columns > after_target)))
    if later.size > _LOOKAHEAD:
        later = later[np.argpartition(~row[later], _LOOKAHEAD - 1)[:_LOOKAHEAD]]
    ranked = later[np.lexsort((later, ~row[later]))]
    return [(int(t), int(row[t])) for t in ranked[::-1]]


def _fill(
    units: Positions,
    owners: Positions,
    unit_hashes: U64,
    target_hashes: U64,
    allowed: NDArray[np.bool_],
    cap: int,
) -> Positions:
    """Place `units` (now unowned) where there is room, without displacing anyone.

    Each round every waiting unit offers itself to the next allowed target of its
    ranking; a target takes the heaviest offers that fit its room. Returns the units
    that ran out of allowed targets (none when the allowed targets have room for all).
    Writes into `owners`.
    """
    after_weight = np.full(units.size, _BEFORE_ALL, dtype=np.uint64)
    after_target = np.full(units.size, UNPLACED, dtype=np.intp)
    waiting = np.arange(units.size)
    stranded: list[Positions] = []
    while waiting.size:
        held = owners[owners != UNPLACED]
        room = cap - np.bincount(held, minlength=target_hashes.size)
        offers, weights = _next_choice(
            unit_hashes[units[waiting]],
            target_hashes,
            after_weight[waiting],
            after_target[waiting],
            allowed,
        )
        out_of_targets = offers == UNPLACED
        stranded.append(units[waiting[out_of_targets]])
        turned_away = _keep_strongest(offers, weights, np.maximum(room, 0))
        accepted = np.ones(waiting.size, dtype=bool)
        accepted[turned_away] = False
        accepted &= ~out_of_targets
        owners[units[waiting[accepted]]] = offers[accepted]
        retry = ~accepted & ~out_of_targets
        after_weight[waiting[retry]] = weights[retry]
        after_target[waiting[retry]] = offers[retry]
        waiting = waiting[retry]
    return np.concatenate(stranded) if stranded else np.empty(0, dtype=np.intp)


def repair(
    unit_hashes: U64,
    target_hashes: U64,
    previous: Positions,
    joined: NDArray[np.bool_],
    cap: int,
) -> Positions:
    """New owners after a change, moving as few units as the cap allows.

    previous: each unit's owner as an index into target_hashes (the candidates now), or
    UNPLACED where its owner is gone. joined: the candidates that were not candidates
    before. Units move only off lost targets, or onto joined ones.
    """
    owners = previous.copy()
    if joined.any():
        # A joining target takes the units that now rank it first, heaviest first.
        staying = np.flatnonzero(owners != UNPLACED)
        top, weights = first_choices(unit_hashes[staying], target_hashes)
        offers = np.where(joined[top], top, UNPLACED)
        limit = np.where(joined, cap, 0).astype(np.intp)
        turned_away = _keep_strongest(offers, weights, limit)
        taken = offers != UNPLACED
        taken[turned_away] = False
        owners[staying[taken]] = offers[taken]
    lost = np.flatnonzero(owners == UNPLACED)
    everywhere = np.ones(target_hashes.size, dtype=bool)
    _fill(lost, owners, unit_hashes, target_hashes, everywhere, cap)
    if joined.any():
        _shed_surplus(owners, unit_hashes, target_hashes, joined, cap)
    return owners


def _shed_surplus(
    owners: Positions, unit_hashes: U64, target_hashes: U64, joined: NDArray[np.bool_], cap: int
) -> None:
    """Targets over the (now lower) cap pass their lightest units to joining targets."""
    units = np.arange(owners.size)
    weights = np.empty(owners.size, dtype=np.uint64)
    for rows in unit_blocks(owners.size, target_hashes.size):
        block = rendezvous_weights(unit_hashes[rows], target_hashes)
        weights[rows] = block[np.arange(block.shape[0]), owners[rows]]
    limit = np.where(joined, np.iinfo(np.intp).max, cap).astype(np.intp)
    surplus = _keep_strongest(owners, weights, limit)
    if surplus.size == 0:
        return
    was = owners[surplus]
    owners[surplus] = UNPLACED
    stranded = _fill(units[surplus], owners, unit_hashes, target_hashes, joined, cap)
    # Joining targets too full to take them (rounding can do that): they stay put.
    back = np.isin(surplus, stranded)
    owners[surplus[back]] = was[back]


def choice_ranks(
    unit_hashes: U64, target_hashes: U64, owners: Positions, only: NDArray[np.bool_] | None = None
) -> Positions:
    """How many targets each unit ranks above its owner (0: it has its first choice).
    With `only`, the others are taken to have their first choice and are not computed."""
    ranks = np.zeros(owners.size, dtype=np.intp)
    units = np.arange(owners.size) if only is None else np.flatnonzero(only)
    columns = np.arange(target_hashes.size)[None, :]
    for rows in unit_blocks(units.size, target_hashes.size):
        picked = units[rows]
        block = rendezvous_weights(unit_hashes[picked], target_hashes)
        held = block[np.arange(block.shape[0]), owners[picked]][:, None]
        above = (block > held) | ((block == held) & (columns < owners[picked][:, None]))
        ranks[picked] = np.count_nonzero(above, axis=1)
    return ranks


def ranked_above(
    unit_hashes: U64, target_hashes: U64, owners: Positions, units: Positions, limit: int
) -> NDArray[np.intp]:
    """For each of `units`, the first `limit` targets of its ranking that come before its
    owner (indices, best first), padded with UNPLACED: one row per unit."""
    found = np.full((units.size, limit), UNPLACED, dtype=np.intp)
    columns = np.arange(target_hashes.size)[None, :]
    for rows in unit_blocks(units.size, target_hashes.size):
        picked = units[rows]
        block = rendezvous_weights(unit_hashes[picked], target_hashes)
        line = np.arange(block.shape[0])[:, None]
        held = block[line[:, 0], owners[picked]][:, None]
        above = (block > held) | ((block == held) & (columns < owners[picked][:, None]))
        masked = np.where(above, block, np.uint64(0))
        take = min(limit, target_hashes.size)
        if take < target_hashes.size:
            best = np.argpartition(~masked, take - 1, axis=1)[:, :take]
        else:
            best = np.broadcast_to(columns, block.shape).copy()
        # Heaviest first, equal weights by target index: the ranking's order.
        order = np.lexsort((best, ~masked[line, best]), axis=1)
        best = np.take_along_axis(best, order, axis=1)[:, :limit]
        best = np.where(above[line, best], best, UNPLACED)
        found[rows, : best.shape[1]] = best
    return found
