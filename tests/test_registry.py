"""The registry is the one list of families: the pipeline, the reference and the README's
table all follow it."""

from __future__ import annotations

import re
from pathlib import Path

from placed.engine.planner import Planner
from placed.engine.reference import ReferenceJudge
from placed.policy.base import Filter, Scorer
from placed.policy.registry import FAMILIES, markdown_table
from placed.spec import load_spec_text

README = (Path(__file__).resolve().parent.parent / "README.md").read_text()


def test_the_readme_table_is_the_registry() -> None:
    block = re.search(
        r"<!-- filters: generated from the registry -->\n(.*?)\n<!-- end of filters -->",
        README,
        re.S,
    )
    assert block is not None, "the README lost its table of filters"
    assert block.group(1) == markdown_table(), (
        "README's table of filters is out of date: paste `python -m placed.policy.registry`"
    )


def test_pipeline_and_reference_run_the_registry_in_order() -> None:
    planner = Planner(load_spec_text("inventory: [{id: a}]"))
    declared = [f.name for family in FAMILIES for f in family.filter_types]
    assert [f.name for f in planner.pipeline.filters] == declared
    assert [f.name for f in ReferenceJudge(planner.index).filters] == declared
    scorers = [s.name for family in FAMILIES for s in family.scorer_types]
    assert [s.name for s in planner.pipeline.scorers] == scorers


def test_names_are_unique_and_every_filter_explains_itself() -> None:
    kinds: list[type[Filter] | type[Scorer]] = []
    for family in FAMILIES:
        kinds += [*family.filter_types, *family.scorer_types]
    names = [kind.name for kind in kinds]
    assert len(names) == len(set(names))
    assert len({family.name for family in FAMILIES}) == len(FAMILIES)
    for family in FAMILIES:
        own: list[type[Filter] | type[Scorer]] = [*family.filter_types, *family.scorer_types]
        for kind in own:
            assert kind.summary and not kind.summary.endswith(".")
