"""Giving the C heap's free memory back to the system after a big build.

Building the index of a big fleet (the families' columns, tag rows, constraint columns)
makes and drops large temporaries: dict tables grown by doubling, lists of a few hundred
thousand entries, arrays. glibc serves most of them from its heap once an earlier large
block was freed (its mmap threshold rises to that block's size), and a heap keeps the
pages of the holes they leave: at 100,000 targets about 290 bytes a target stayed
resident, free but not given back. `malloc_trim(0)` hands those pages back (they are
mapped again, zeroed, if the heap grows into them). Elsewhere than glibc nothing is
done: the memory is reused by the process, only not returned.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import sys
from collections.abc import Callable

# Below this many targets the temporaries are small and the trim not worth its walk.
TRIM_FROM_TARGETS = 10_000


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    if not sys.platform.startswith("linux"):
        return None
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name or "libc.so.6")
        trim: Callable[[int], int] = libc.malloc_trim  # glibc only (musl has none)
    except (OSError, AttributeError):
        return None
    return trim


def give_back(targets: int) -> bool:
    """After building for `targets` targets: whether free heap pages were handed back."""
    if targets < TRIM_FROM_TARGETS:
        return False
    trim = _malloc_trim()
    if trim is None:
        return False
    trim(0)
    return True
