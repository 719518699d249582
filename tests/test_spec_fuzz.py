"""Random documents, near-valid and not: loading gives a Spec or a SpecError, nothing else,
and every problem has a position inside the text."""

from __future__ import annotations

import json
from typing import Any

import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from placed.engine.planner import Planner
from placed.engine.report import plan_document
from placed.spec import SpecError, load_spec_text

KEYS = [
    "id", "kind", "tags", "anti_tags", "hard_affinity", "soft_affinity", "properties",
    "constraints", "scope", "namespace", "capacity", "status", "children", "name", "units",
    "mode", "resources", "service", "services", "pattern", "cluster_namespace", "url",
    "value", "type", "tag", "hard-affinity", "max_load",
]  # fmt: skip
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 5),
    # inf and nan too: YAML spells them .inf and .nan, and they once crashed a plan.
    st.floats(width=16),
    st.sampled_from(["a", "b", "rack10", "up", "down", "every", "mapping", "x == 1", "cpu <",
                     "version", "int", "ns", "a, b", ""]),
)  # fmt: skip
values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.dictionaries(st.sampled_from(KEYS), inner, max_size=4),
    ),
    max_leaves=12,
)
documents = st.fixed_dictionaries(
    {},
    optional={
        "inventory": st.lists(
            st.dictionaries(st.sampled_from(KEYS), values, max_size=5), max_size=3
        ),
        "workloads": st.lists(
            st.dictionaries(st.sampled_from(KEYS), values, max_size=5), max_size=3
        ),
        "settings": st.dictionaries(st.sampled_from(["default_mode", "mode"]), values, max_size=2),
        "version": st.sampled_from([1, 2, "1"]),
    },
)


@settings(max_examples=400, deadline=None)
@given(documents, st.booleans())
def test_random_documents_load_cleanly_or_fail_cleanly(
    document: dict[str, Any], as_json: bool
) -> None:
    text = json.dumps(document) if as_json else yaml.safe_dump(document)
    lines = text.count("\n") + 1
    try:
        spec = load_spec_text(text, "fuzz.yaml")
    except SpecError as error:
        assert error.problems
        for problem in error.problems:
            assert problem.message
            if problem.position is not None:
                assert 1 <= problem.position.line <= lines
        return
    # What loads must also plan without error.
    plan_document(Planner(spec).plan())
