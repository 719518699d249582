"""Tag rule rows kept sparse (a large inventory) sum to what the dense rows sum to."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from placed.model import TagRules, Target
from placed.policy.tags import TagColumns

TAGS = [f"t{i}" for i in range(6)]
tag_sets = st.frozensets(st.sampled_from(TAGS), max_size=4)


@st.composite
def targets(draw: st.DrawFn) -> list[Target]:
    count = draw(st.integers(1, 12))
    return [
        Target(
            id=f"h{i}",
            kind="host",
            tags=draw(tag_sets),
            properties={},
            rules=TagRules(draw(tag_sets), draw(tag_sets), draw(tag_sets), draw(tag_sets)),
            capacity={},
            up=True,
        )
        for i in range(count)
    ]


@settings(max_examples=200, deadline=None)
@given(targets(), tag_sets)
def test_sparse_rows_sum_as_dense_rows(inventory: list[Target], workload: frozenset[str]) -> None:
    dense, sparse = TagColumns(inventory), TagColumns(inventory, dense_cells=-1)
    assert dense.scoring.dense and not sparse.scoring.dense
    for name in ("forbidding", "requiring", "scoring"):
        want = getattr(dense, name).total(dense.codes(workload))
        got = getattr(sparse, name).total(sparse.codes(workload))
        assert np.array_equal(np.asarray(want, np.int64), np.asarray(got, np.int64)), name
