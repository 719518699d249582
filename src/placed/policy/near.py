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
from collections import Counter, defaultdict
from collections.abc import Iterable

# At most this many candidates (the ones sharing the most pairs) are compared in full.
LIMIT = 32


def _pairs(word: str) -> set[str]:
    padded = f"^{word}$"
    return {padded[i : i + 2] for i in range(len(padded) - 1)}


class NearIndex:
    def __init__(self, words: Iterable[str]) -> None:
        self.words = sorted(set(words))
        self._by_pair: dict[str, list[int]] = defaultdict(list)
        for position, word in enumerate(self.words):
            for pair in _pairs(word):
                self._by_pair[pair].append(position)

    def close(self, word: str, n: int = 3, cutoff: float = 0.8) -> list[str]:
        """Like difflib.get_close_matches(word, words, n, cutoff), from the index."""
        mine = _pairs(word)
        shared: Counter[int] = Counter()
        common = 0
        for pair in mine:
            # A pair that half the vocabulary has tells nothing apart: skip it, and ask
            # that much less of a candidate below (every word may share it).
            found = self._by_pair.get(pair)
            if found is None:
                continue
            if len(found) <= max(64, len(self.words) // 2):
                shared.update(found)
            else:
                common += 1
        # Words whose ratio can reach the cutoff share at least this many of the pairs.
        least = max(1, int(len(mine) * cutoff) - 2 - common)
        candidates = [
            self.words[p]
            for p, count in shared.most_common(LIMIT * 4)
            if count >= least and abs(len(self.words[p]) - len(word)) <= max(2, len(word) // 3)
        ][:LIMIT]
        return difflib.get_close_matches(word, candidates, n=n, cutoff=cutoff)
