"""Selection: highest score wins; ties go to the highest rendezvous weight.

The weight of (unit, target) is splitmix64(h(unit) ^ h(target)), with h a 64-bit BLAKE2b
of the key's UTF-8 bytes: stable across processes, platforms and Python versions (unlike
Python's `hash`). Rendezvous (highest-random-weight) hashing is the consistent hashing
the Ironic RFE asks for: each unit ranks targets on its own, so a target that leaves
moves only its own units and a target that joins takes only the units that now rank it
first, with no ring to rebuild.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator

import numpy as np
from numpy.typing import NDArray

_MASK = (1 << 64) - 1
_M1 = 0xBF58476D1CE4E5B9
_M2 = 0x94D049BB133111EB

U64 = NDArray[np.uint64]
# The finalizer's constants as numpy scalars, made once (a tie-break runs once per unit).
_S30, _S27, _S31 = np.uint64(30), np.uint64(27), np.uint64(31)
_U1, _U2 = np.uint64(_M1), np.uint64(_M2)
_max = np.maximum.reduce  # what ndarray.max() calls, without its Python wrapper


def stable_hash64(key: str) -> int:
    return int.from_bytes(hashlib.blake2b(key.encode(), digest_size=8).digest(), "little")


_UINT64_LE = np.dtype("<u8")


def stable_hashes(keys: list[str]) -> U64:
    """`stable_hash64` of each key: the digests joined and read as little-endian words at
    once, rather than an int made of each and the ints made into an array."""
    digests = b"".join([hashlib.blake2b(key.encode(), digest_size=8).digest() for key in keys])
    return np.frombuffer(digests, dtype=_UINT64_LE).astype(np.uint64)


def mix64(values: U64) -> U64:
    """splitmix64's finalizer over an array; uint64 arithmetic wraps modulo 2**64."""
    return _mix_in_place(values.astype(np.uint64, copy=True))


def _mix_in_place(z: U64, shifted: U64 | None = None) -> U64:
    # One scratch array for the shifts instead of a new temporary per step: on a block of
    # a million weights the allocations cost as much as the arithmetic.
    if shifted is None:
        shifted = np.empty_like(z)
    np.right_shift(z, _S30, out=shifted)
    z ^= shifted
    return _finish_in_place(z, shifted)


def _finish_in_place(z: U64, shifted: U64) -> U64:
    """The finalizer after its first xor-shift."""
    z *= _U1
    np.right_shift(z, _S27, out=shifted)
    z ^= shifted
    z *= _U2
    np.right_shift(z, _S31, out=shifted)
    z ^= shifted
    return z


def premixed(hashes: U64) -> U64:
    """The finalizer's first step on each hash alone. A shift distributes over xor, so
    (u ^ t) ^ ((u ^ t) >> 30) is premixed(u) ^ premixed(t): a block of weights built from
    two premixed sides skips two of the finalizer's passes over every cell, for two
    passes over each side."""
    return hashes ^ (hashes >> _S30)


def mix64_int(value: int) -> int:
    """The same finalizer on one Python int (the reference oracle uses this)."""
    z = value & _MASK
    z = ((z ^ (z >> 30)) * _M1) & _MASK
    z = ((z ^ (z >> 27)) * _M2) & _MASK
    return z ^ (z >> 31)


def rendezvous_weight(unit_key: str, target_id: str) -> int:
    return mix64_int(stable_hash64(unit_key) ^ stable_hash64(target_id))


def top_candidates(keep: NDArray[np.bool_], scores: NDArray[np.float64]) -> NDArray[np.intp]:
    """Positions of the feasible targets that share the highest score."""
    return top_and_feasible(keep, scores)[0]


def top_and_feasible(
    keep: NDArray[np.bool_], scores: NDArray[np.float64]
) -> tuple[NDArray[np.intp], int]:
    """`top_candidates`, and how many targets are feasible (a placement reports it)."""
    candidates: NDArray[np.intp] = keep.nonzero()[0]  # keep is one flat mask
    if candidates.size <= 1:
        return candidates, int(candidates.size)
    candidate_scores = scores[candidates]
    best: NDArray[np.intp] = candidates[candidate_scores == _max(candidate_scores)]
    return best, int(candidates.size)


def break_tie(unit_hash: int, top: NDArray[np.intp], target_premixed: U64) -> int:
    """The rendezvous winner among `top` for the unit: `target_premixed` holds every
    target's hash `premixed`, so that (as `premixed` says) only the unit's side and the
    finalizer's last steps remain."""
    if top.size == 1:
        return int(top[0])
    weights = target_premixed[top]  # a copy of the candidates', mixed in place
    z = np.uint64(unit_hash)
    weights ^= z ^ (z >> _S30)
    return int(top[_finish_in_place(weights, np.empty_like(weights)).argmax()])


# A weight block is (units x targets) uint64. About a million cells (8 MB) per block
# keeps memory flat whether a workload has 3 candidate targets or 10,000.
BLOCK_CELLS = 1 << 20


def unit_blocks(units: int, targets: int) -> Iterator[slice]:
    """Slices of the units small enough for one weight block over `targets` targets."""
    rows = max(1, BLOCK_CELLS // max(1, targets))
    for start in range(0, units, rows):
        yield slice(start, min(start + rows, units))


def rendezvous_weights(unit_hashes: U64, target_hashes: U64) -> U64:
    """The (units x targets) matrix of rendezvous weights."""
    z = premixed(unit_hashes)[:, None] ^ premixed(target_hashes)[None, :]
    return _finish_in_place(z, np.empty_like(z))


def premixed_weights_into(unit_premixed: U64, target_premixed: U64, out: U64, scratch: U64) -> U64:
    """The same matrix from both sides `premixed`, written into `out` with `scratch` for
    the shifts (both of that shape): blocks placed one after another reuse their memory
    instead of mapping fresh pages for every block."""
    np.bitwise_xor(unit_premixed[:, None], target_premixed[None, :], out=out)
    return _finish_in_place(out, scratch)
