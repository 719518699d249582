"""A native spec's `to:` stays linear in units: every unit placed beside another
workload's units reads that workload's unit list, which must be built once, not once per
unit (5,000 units `to: [base]` took 21 s when it was rebuilt each time). Counted, not
timed: the calls that number a unit grow with the units, not with their square."""

from __future__ import annotations

import pytest

from placed.spec import load_spec_text
from placed.spec.juju import files


def spec(units: int, running: int) -> str:
    inventory = "".join(f"  - {{id: m{i}, capacity: {{cpu: 1000}}}}\n" for i in range(10))
    runs = "".join(f"  - {{unit: base/{i}, target: m{i % 10}}}\n" for i in range(running))
    runs += "".join(f"  - {{unit: solo/{i}, target: m{i % 10}}}\n" for i in range(running))
    return (
        f"inventory:\n{inventory}running:\n{runs}workloads:\n"
        f"  - {{name: base, units: {units + running}}}\n"
        f"  - {{name: w, units: {units}, to: [base]}}\n"
        f"  - {{name: v, units: {units}, to: [solo]}}\n"
        f"  - {{name: u, units: {units}, to: [base/1, 'lxd:base']}}\n"
    )


def numbering_calls(units: int, running: int, monkeypatch: pytest.MonkeyPatch) -> int:
    calls = 0
    number = files.unit_number

    def counted(unit: str) -> int:
        nonlocal calls
        calls += 1
        return number(unit)

    with monkeypatch.context() as patched:
        patched.setattr(files, "unit_number", counted)
        loaded = load_spec_text(spec(units, running))
    directed = {w.name: w for w in loaded.workloads}
    assert directed["w"].units == units  # every unit of w has its plan beside a base unit
    return calls


def test_units_beside_another_workload_are_numbered_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    small = numbering_calls(100, 50, monkeypatch)
    large = numbering_calls(400, 200, monkeypatch)
    # Linear: four times the units, about four times the calls (quadratic gave sixteen).
    assert large <= 5 * small, (small, large)


def test_the_unit_list_is_built_once_per_workload() -> None:
    service = files.Service(
        name="base",
        path=("workloads", 0),
        units=3,
        existing=["base/0", "base/4"],
        entries=[],
        has_to=False,
        constraints=None,
        subordinate=False,
        series=None,
    )
    names = service.unit_names()
    assert names == ("base/0", "base/4", "base/5", "base/6", "base/7")
    assert service.unit_names() is names


def test_a_valid_native_spec_with_to_never_composes_positions(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Positions come from the file's node tree, composed only when a problem needs one:
    # seconds for 100,000 targets, which a valid `to:` must not pay for.
    from placed.spec import source

    composed = 0
    compose = source._compose

    def counted(text: str, where: str) -> list[object]:
        nonlocal composed
        composed += 1
        return compose(text, where)  # type: ignore[return-value]

    monkeypatch.setattr(source, "_compose", counted)
    for text in (spec(20, 5), spec(20, 5).replace("{", "{ ").replace("}", " }")):
        load_spec_text(text)
    json_text = (
        '{"inventory": [{"id": "m0"}, {"id": "m1"}], "workloads": '
        '[{"name": "w", "units": 2, "to": ["m1", "lxd:m0"]}]}'
    )
    load_spec_text(json_text)
    assert composed == 0
