"""The rendezvous weights over blocks equal the one-pair finalizer the reference uses,
whichever way the block is built (premixed sides skip the finalizer's first step)."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from placed.engine.selection import (
    mix64_int,
    premixed,
    premixed_weights_into,
    rendezvous_weight,
    rendezvous_weights,
    stable_hash64,
    stable_hashes,
)

HASHES = st.lists(st.integers(min_value=0, max_value=(1 << 64) - 1), min_size=1, max_size=12)


@given(HASHES, HASHES)
def test_block_weights_equal_the_finalizer_of_each_pair(
    units: list[int], targets: list[int]
) -> None:
    unit_hashes = np.array(units, dtype=np.uint64)
    target_hashes = np.array(targets, dtype=np.uint64)
    expected = np.array([[mix64_int(u ^ t) for t in targets] for u in units], dtype=np.uint64)
    assert (rendezvous_weights(unit_hashes, target_hashes) == expected).all()
    out = np.empty(expected.shape, dtype=np.uint64)
    scratch = np.empty_like(out)
    built = premixed_weights_into(premixed(unit_hashes), premixed(target_hashes), out, scratch)
    assert built is out
    assert (out == expected).all()


def test_weights_by_name_are_the_blocks() -> None:
    units, targets = ["node1/0", "web/12"], ["conductor1", "conductor2", "h-0007"]
    block = rendezvous_weights(stable_hashes(units), stable_hashes(targets))
    assert block.tolist() == [[rendezvous_weight(u, t) for t in targets] for u in units]


@given(st.lists(st.text(max_size=40), max_size=20))
def test_hashes_of_many_keys_are_each_keys_hash(keys: list[str]) -> None:
    found = stable_hashes(keys)
    assert found.dtype == np.uint64 and found.flags.writeable
    assert found.tolist() == [stable_hash64(key) for key in keys]
