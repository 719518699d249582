"""Near misses among many names, in about linear time: "did you mean" for a vocabulary
of tens of thousands.

difflib.get_close_matches compares a word with every candidate (a SequenceMatcher each),
so a thousand unknown tags against five thousand known ones is five million comparisons.
Here candidates come from an index of character pairs (bigrams): only words of a
similar length that share enough pairs with the word are compared at all, and at most
LIMIT of them. A pair of words that difflib would rate above the cutoff shares most of
its pairs, so the answers are the same for the near misses that matter.
"""

from __future__ import annotations

import difflib
from collections import defaultdict
from collections.abc import Iterable

import numpy as np
from numpy.typing import NDArray

# At most this many candidates (the ones sharing the most pairs) are compared in full.
LIMIT = 32


def _pairs(word: str) -> set[str]:
    padded = f"^{word}$"
    return {padded[i : i + 2] for i in range(len(padded) - 1)}


class NearIndex:
    def __init__(self, words: Iterable[str]) -> None:
        self.words = sorted(set(words))
        self._folded: dict[str, str] = {}
        for word in self.words:
            self._folded.setdefault(word.casefold(), word)
        by_pair: dict[str, list[int]] = defaultdict(list)
        for position, word in enumerate(self.words):
            for pair in _pairs(word):
                by_pair[pair].append(position)
        self._by_pair: dict[str, NDArray[np.int32]] = {
            pair: np.array(found, dtype=np.int32) for pair, found in by_pair.items()
        }
        self._lengths = np.array([len(word) for word in self.words], dtype=np.int32)

    def same_but_case(self, word: str) -> str | None:
        """A word of the index that differs from `word` only in case (GPU for gpu)."""
        other = self._folded.get(word.casefold())
        return other if other is not None and other != word else None

    def close(self, word: str, n: int = 3, cutoff: float = 0.8) -> list[str]:
        """Like difflib.get_close_matches(word, words, n, cutoff), from the index."""
        mine = _pairs(word)
        found: list[NDArray[np.int32]] = []
        common = 0
        for pair in mine:
            # A pair that half the vocabulary has tells nothing apart: skip it, and ask
            # that much less of a candidate below (every word may share it).
            positions = self._by_pair.get(pair)
            if positions is None:
                continue
            if len(positions) <= max(64, len(self.words) // 2):
                found.append(positions)
            else:
                common += 1
        if not found:
            return difflib.get_close_matches(word, [], n=n, cutoff=cutoff)
        # How many pairs each word shares with this one: one pass over the index's lists.
        shared = np.bincount(np.concatenate(found), minlength=len(self.words))
        # Words whose ratio can reach the cutoff share at least this many of the pairs.
        least = max(1, int(len(mine) * cutoff) - 2 - common)
        near_length = np.abs(self._lengths - len(word)) <= max(2, len(word) // 3)
        eligible = np.flatnonzero((shared >= least) & near_length)
        best = eligible[np.argsort(-shared[eligible], kind="stable")[:LIMIT]]
        candidates = [self.words[p] for p in best.tolist()]
        return difflib.get_close_matches(word, candidates, n=n, cutoff=cutoff)
