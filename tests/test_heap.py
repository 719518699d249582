"""engine/heap.py: free heap pages are handed back after a big build only, and only where
the C library can (glibc's malloc_trim)."""

from __future__ import annotations

from placed.engine import heap


def test_a_small_build_trims_nothing() -> None:
    assert heap.give_back(heap.TRIM_FROM_TARGETS - 1) is False


def test_a_big_build_trims_where_the_c_library_can() -> None:
    # Linux with glibc (CI, the benchmark machine): trimmed; elsewhere nothing is done.
    assert heap.give_back(heap.TRIM_FROM_TARGETS) is (heap._malloc_trim() is not None)
