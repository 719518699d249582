"""Bounded-load mapping: `max_load` caps every target at max_load times the mean load.

Plain mapping gives each unit the first target of its rendezvous ranking. That owner is a
pure function of (unit, live targets), and it is the only kind that moves nothing but a
lost target's units for every possible loss: such a function must follow a fixed ranking
per unit. The loads are then the counts of independent draws: with 1,000 units per
target the fullest of 100 targets averages 8% over the mean and passes 10% about one
time in thirteen, whatever the hash.

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
Everything here is numpy over (units x candidate targets) weight blocks; no Python loop
runs over targets, and the loops over rounds end after a handful of rounds.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

from placed.engine.selection import U64, rendezvous_weights

Positions = NDArray[np.intp]
# Weight blocks are (batch x candidates) uint64; this many units per block keeps a block
# of 10,000 candidates under a gigabyte and of 100 candidates near 6 MB.
_BATCH = 8192
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
    for start in range(0, unit_hashes.size, _BATCH):
        block = rendezvous_weights(unit_hashes[start : start + _BATCH], target_hashes)
        best = np.argmax(block, axis=1)
        owners[start : start + best.size] = best
        weights[start : start + best.size] = block[np.arange(best.size), best]
    return owners, weights


def _ranked_choice(
    unit_hashes: U64, target_hashes: U64, ranks: Positions, allowed: NDArray[np.bool_]
) -> tuple[Positions, U64]:
    """Each unit's choice at `ranks` (0 = best) among the allowed targets, or UNPLACED
    for a unit that has run out of allowed targets."""
    owners = np.full(unit_hashes.size, UNPLACED, dtype=np.intp)
    weights = np.zeros(unit_hashes.size, dtype=np.uint64)
    columns = np.flatnonzero(allowed)
    for start in range(0, unit_hashes.size, _BATCH):
        block = rendezvous_weights(unit_hashes[start : start + _BATCH], target_hashes[columns])
        order = np.argsort(~block, axis=1, kind="stable")  # ~w sorts weights descending
        rank = ranks[start : start + block.shape[0]]
        inside = rank < columns.size
        rows = np.flatnonzero(inside)
        picked = order[rows, rank[rows]]
        owners[start + rows] = columns[picked]
        weights[start + rows] = block[rows, picked]
    return owners, weights


def _keep_strongest(owners: Positions, weights: U64, limit: NDArray[np.intp]) -> Positions:
    """Units to turn away: for each target t, all but the limit[t] heaviest units of those
    in `owners` that name t (ties, which need equal 64-bit weights, go to the lower unit).
    Entries equal to UNPLACED are ignored."""
    present = np.flatnonzero(owners != UNPLACED)
    if present.size == 0:
        return present
    order = present[np.lexsort((present, ~weights[present], owners[present]))]
    grouped = owners[order]
    first_of_group = np.searchsorted(grouped, grouped, side="left")
    place_in_group = np.arange(order.size) - first_of_group
    return order[place_in_group >= limit[grouped]]


def stable_assignment(unit_hashes: U64, target_hashes: U64, cap: int) -> Positions:
    """The unit-proposing stable assignment with at most `cap` units per target.

    Rounds of deferred acceptance: every unit turned away proposes to the next target of
    its ranking, and every target keeps the `cap` heaviest of the units it holds or is
    offered. Needs cap x targets >= units.
    """
    targets = target_hashes.size
    if cap * targets < unit_hashes.size:
        raise ValueError(f"{unit_hashes.size} units do not fit {targets} targets of {cap}")
    owners, weights = first_choices(unit_hashes, target_hashes)
    ranks = np.zeros(unit_hashes.size, dtype=np.intp)
    limit = np.full(targets, cap, dtype=np.intp)
    everywhere = np.ones(targets, dtype=bool)
    while True:
        rejected = _keep_strongest(owners, weights, limit)
        if rejected.size == 0:
            return owners
        ranks[rejected] += 1
        owners[rejected], weights[rejected] = _ranked_choice(
            unit_hashes[rejected], target_hashes, ranks[rejected], everywhere
        )


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
    ranks = np.zeros(units.size, dtype=np.intp)
    waiting = np.arange(units.size)
    stranded: list[Positions] = []
    while waiting.size:
        held = owners[owners != UNPLACED]
        room = cap - np.bincount(held, minlength=target_hashes.size)
        offers, weights = _ranked_choice(
            unit_hashes[units[waiting]], target_hashes, ranks[waiting], allowed
        )
        out_of_targets = offers == UNPLACED
        stranded.append(units[waiting[out_of_targets]])
        turned_away = _keep_strongest(offers, weights, np.maximum(room, 0))
        accepted = np.ones(waiting.size, dtype=bool)
        accepted[turned_away] = False
        accepted &= ~out_of_targets
        owners[units[waiting[accepted]]] = offers[accepted]
        waiting = waiting[~accepted & ~out_of_targets]
        ranks[waiting] += 1
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
    for start in range(0, owners.size, _BATCH):
        block = rendezvous_weights(unit_hashes[start : start + _BATCH], target_hashes)
        rows = np.arange(block.shape[0])
        weights[start : start + rows.size] = block[rows, owners[start : start + rows.size]]
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


def choice_ranks(unit_hashes: U64, target_hashes: U64, owners: Positions) -> Positions:
    """How many targets each unit ranks above its owner (0: it has its first choice)."""
    ranks = np.empty(owners.size, dtype=np.intp)
    for start in range(0, owners.size, _BATCH):
        block = rendezvous_weights(unit_hashes[start : start + _BATCH], target_hashes)
        rows = np.arange(block.shape[0])
        held = block[rows, owners[start : start + rows.size]]
        ranks[start : start + rows.size] = np.count_nonzero(block > held[:, None], axis=1)
    return ranks


def ranked_above(unit_hash: int, target_hashes: U64, owner: int, limit: int) -> list[int]:
    """The targets (indices) one unit ranks above its owner, best first, at most `limit`."""
    row = rendezvous_weights(np.array([unit_hash], dtype=np.uint64), target_hashes)[0]
    order = np.argsort(~row, kind="stable")
    above = order[row[order] > row[owner]]
    return [int(i) for i in above[:limit]]
