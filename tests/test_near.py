"""The near-miss index answers as difflib does, for the typos "did you mean" is for."""

from __future__ import annotations

import difflib

from hypothesis import given, settings
from hypothesis import strategies as st

from placed.policy.near import NearIndex

words = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789-", min_size=3, max_size=14)


@settings(max_examples=200, deadline=None)
@given(st.lists(words, min_size=1, max_size=60, unique=True), st.data())
def test_a_typo_of_a_known_word_finds_what_difflib_finds(
    vocabulary: list[str], data: st.DataObject
) -> None:
    word = data.draw(st.sampled_from(vocabulary))
    position = data.draw(st.integers(0, len(word) - 1))
    typo = word[:position] + data.draw(st.sampled_from("xyz")) + word[position + 1 :]
    expected = difflib.get_close_matches(typo, sorted(vocabulary), n=1, cutoff=0.8)
    assert NearIndex(vocabulary).close(typo, n=1, cutoff=0.8) == expected


def test_the_examples_users_see() -> None:
    index = NearIndex(["datacenter1", "rack10", "network1", "network3"])
    assert index.close("datacentre1") == ["datacenter1"]
    assert index.close("rack1O", n=1) == ["rack10"]
    assert index.close("zzzz") == []


def test_a_vocabulary_that_shares_most_pairs_still_finds_the_near_miss() -> None:
    # Every word shares ^r, ra, ac, ck: the index skips those pairs and must not then
    # demand them of the candidates (found by the benchmark: rackq12 found nothing).
    vocabulary = [f"rack{i}" for i in range(500)]
    for typo in ("rackq12", "rac12", "rack1o2", "rxck250"):
        expected = difflib.get_close_matches(typo, sorted(vocabulary), n=1, cutoff=0.8)
        assert NearIndex(vocabulary).close(typo, n=1, cutoff=0.8) == expected, typo


def test_a_tag_that_differs_only_in_case_is_named() -> None:
    index = NearIndex(["GPU", "rack10"])
    assert index.same_but_case("gpu") == "GPU"
    assert index.same_but_case("GPU") is None  # itself is no near miss
    assert index.same_but_case("Rack10") == "rack10"
    assert index.same_but_case("fpga") is None


def test_lint_says_did_you_mean_for_a_case_slip() -> None:
    from placed.policy.tags import Tags
    from placed.spec import load_spec_text

    spec = load_spec_text(
        "inventory:\n  - {id: h1, tags: [GPU]}\n"
        "workloads:\n  - {name: w, mode: mapping, tags: [gpu]}\n"
    )
    [notice] = Tags().lint(spec)
    assert notice.code == "tag-matches-nothing"
    assert "did you mean 'GPU'" in notice.message
