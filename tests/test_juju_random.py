"""Random deployer files and bundles through the reader and the planner: every one gives a
plan (each unit placed, or unplaced with a summary) or a clean SpecError, never another
exception; and a plan never puts two units' containers under one name."""

from __future__ import annotations

from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from placed.engine.planner import Planner
from placed.spec import SpecError
from placed.spec.juju.files import read_juju

APPS = ["web", "db", "cache", "queue"]
KINDS = ["", "lxc:", "lxd:", "kvm:", "docker:"]
PLANNED: list[int] = []  # files that planned (not refused), to see both paths are taken


def entry() -> st.SearchStrategy[Any]:
    target = st.one_of(
        st.sampled_from([*APPS, "nosuch", "new", "0", "1", "2", "7", "01", "", "=x", "a:b:c"]),
        st.builds(lambda a, n: f"{a}/{n}", st.sampled_from(APPS), st.integers(0, 4)),
        st.builds(lambda a, n: f"{a}={n}", st.sampled_from(APPS), st.integers(-1, 4)),
        st.sampled_from(
            ["zone=z1", "maas=node1", "constraints: cores=2 mem=1G", "constraints: x=1"]
        ),
    )
    text = st.builds(lambda k, t: f"{k}{t}", st.sampled_from(KINDS), target)
    return st.one_of(text, st.integers(-1, 5), st.booleans(), st.none())


def application(style: str) -> st.SearchStrategy[dict[str, Any]]:
    # Bundles count units with num_units; deployer files with num_units or the seed's units.
    units = "num_units" if style == "bundle" else "units"
    return st.fixed_dictionaries(
        {},
        optional={
            "charm": st.just("cs:x"),
            units: st.integers(0, 4),
            "to": st.one_of(entry(), st.lists(entry(), max_size=5)),
            "constraints": st.sampled_from(["cores=2", "mem=2G arch=amd64", "mem=lots", ""]),
        },
    )


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.sampled_from(["bundle", "deployer"]),
    st.dictionaries(st.sampled_from(APPS), st.none(), min_size=1, max_size=4),
    st.data(),
)
def test_random_juju_files_plan_or_fail_cleanly(
    style: str, names: dict[str, None], data: st.DataObject
) -> None:
    apps = {name: data.draw(application(style)) for name in names}
    if style == "bundle":
        machines = data.draw(st.dictionaries(st.sampled_from(["0", "1", "2", "x"]), st.none()))
        document: dict[str, Any] = {"applications": apps, "machines": machines}
    else:
        document = {"env": {"services": apps}}
    text = yaml.safe_dump(document)
    try:
        specs = read_juju(text, "random.yaml")
    except SpecError as error:
        assert error.problems and all(p.message for p in error.problems)
        return
    PLANNED.append(len(specs))
    for spec in specs:
        result = Planner(spec).plan()
        units = [o.unit for o in result.outcomes]
        assert len(units) == len(set(units))
        assert sum(w.units for w in spec.workloads) == len(units)
        made = [m.target.id for m in result.new_targets]
        assert len(made) == len(set(made)), made
        for unplaced in result.unplaced:
            assert unplaced.summary


def test_random_files_are_not_all_refused() -> None:
    # Run after the random test in this module: a generator that only made invalid files
    # would test nothing of the planner.
    assert PLANNED, "no random Juju file was valid"
