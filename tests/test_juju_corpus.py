"""The Juju corpus (tests/data/juju/cases.yaml, its README says how a case reads): each
deployer file or bundle is planned as `placed plan` reads it, and every unit must land
where Juju would put it, with the warnings and errors the case lists."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from placed.engine.outcomes import PlanResult
from placed.engine.planner import Planner
from placed.engine.reference import reference_plan
from placed.model.juju_constraints import JujuConstraints, parse_constraints
from placed.spec import SpecError, load_specs_text
from placed.spec.errors import Problem
from placed.spec.juju.convert import dump_juju_native, native_document
from placed.spec.juju.files import read_juju, read_status

CORPUS = Path(__file__).resolve().parent / "data" / "juju" / "cases.yaml"
CASES: list[dict[str, Any]] = yaml.safe_load(CORPUS.read_text(encoding="utf-8"))["cases"]

# Warning codes of the corpus -> placed's notice codes.
WARNING_CODES = {
    "past": {"fewer-target-units"},
    "absent": {"fewer-target-units", "directive-fallback"},
    "no-machine": {"directive-fallback"},
    "extra": {"extra-directives"},
}

# Cases whose outcome placed does not produce yet, with what differs: each is a strict
# xfail, so a fix that makes one pass says to remove it.
KNOWN_GAPS: dict[str, str] = {}


def _plan(case: dict[str, Any]) -> tuple[list[PlanResult], Any]:
    status = read_status(case["status"], "status.yaml") if case.get("status") else None
    specs = read_juju(case["spec"], "spec.yaml", status)
    if case.get("deployment"):
        specs = [s for s in specs if s.name == case["deployment"]]
    return [Planner(spec).plan() for spec in specs], status


def _machine(location: str) -> str:
    return location.split("/", 1)[0]


def _check_units(case: dict[str, Any], result: PlanResult, existing: set[str]) -> list[str]:
    wrong: list[str] = []
    got = {p.unit: p.target for p in result.placements}
    unplaced = [u.unit for u in result.unplaced]
    if unplaced:
        wrong.append(f"unplaced: {unplaced} ({result.unplaced[0].summary})")
    expected: dict[str, str] = {str(k): str(v) for k, v in case["expect"].get("units", {}).items()}
    if set(got) != set(expected):
        wrong.append(f"units added: {sorted(got)}, expected {sorted(expected)}")
    # "new:A" placeholders: one machine per letter, each a machine that did not exist.
    letters: dict[str, str] = {}
    for unit, want in expected.items():
        have = got.get(unit)
        if have is None:
            continue
        if want.startswith("new:"):
            letter, _, rest = want[4:].partition("/")
            machine = _machine(have)
            other = letters.setdefault(letter, machine) != machine or machine in existing
            if other or (rest and have.split("/", 1)[1:] != [rest]):
                wrong.append(f"{unit}: on {have}, expected {want}")
        elif have != want:
            wrong.append(f"{unit}: on {have}, expected {want}")
    if len(set(letters.values())) != len(letters):
        wrong.append(f"placeholders share machines: {letters}")
    return wrong


def _location_of(unit: str, result: PlanResult, case: dict[str, Any], status: Any) -> str | None:
    for placement in result.placements:
        if placement.unit == unit:
            return placement.target
    if status is not None:
        for units in status.units.values():
            if unit in units:
                found: str | None = units[unit]
                return found
    return None


def _check_groups(case: dict[str, Any], result: PlanResult, status: Any) -> list[str]:
    wrong = []
    for key, same in (("same_machine", lambda t: t), ("same_host", _machine)):
        for group in case["expect"].get(key, []):
            places = {same(_location_of(u, result, case, status) or "?") for u in group}
            if len(places) != 1:
                wrong.append(f"{key} {group}: on {places}")
    return wrong


def _check_warnings(case: dict[str, Any], result: PlanResult) -> list[str]:
    expected = case["expect"].get("warnings")
    if expected is None:
        return []
    directive_codes = {"fewer-target-units", "directive-fallback", "extra-directives"}
    found = [w for w in result.warnings if w.code in directive_codes]
    wrong = []
    unmatched = list(found)
    for want in expected:
        reasons = want["reason"] if isinstance(want["reason"], list) else [want["reason"]]
        codes = set().union(*(WARNING_CODES[r] for r in reasons))
        match = next(
            (
                w
                for w in unmatched
                if w.code in codes
                and (
                    w.unit == want.get("unit") if "unit" in want else w.workload == want["service"]
                )
            ),
            None,
        )
        if match is None:
            wrong.append(f"no {reasons} warning for {want}")
        else:
            unmatched.remove(match)
    if unmatched:
        wrong.append(f"unexpected warnings: {[w.message for w in unmatched]}")
    return wrong


def _check_portable(case: dict[str, Any], result: PlanResult) -> list[str]:
    expected = case["expect"].get("non_portable")
    if expected is None:
        return []
    flagged = {w.workload for w in result.warnings if w.code == "non-portable-machine"}
    return [] if flagged == set(expected) else [f"non-portable {flagged}, expected {expected}"]


def _same_constraints(have: str, want: str) -> bool:
    def parsed(text: str) -> JujuConstraints:
        return parse_constraints(text) if text.strip() else JujuConstraints()

    return parsed(have) == parsed(want)


def _check_constraints(case: dict[str, Any], result: PlanResult) -> list[str]:
    wrong = []
    made = {m.target.id: m for m in result.new_targets}
    where = {p.unit: p.target for p in result.placements}
    declared = {
        t.id: str(t.properties["juju.constraints"].value)
        for t in result.spec.inventory.targets
        if "juju.constraints" in t.properties
    }
    for unit, want in (case["expect"].get("constraints") or {}).items():
        target = where.get(unit)
        have = made[target].constraints if target in made else declared.get(target or "", "")
        if not _same_constraints(have, str(want or "")):
            wrong.append(f"{unit}: machine constraints {have!r}, expected {want!r}")
    for unit, values in (case["expect"].get("constraint_values") or {}).items():
        target = where.get(unit)
        have = made[target].constraints if target in made else declared.get(target or "", "")
        parsed = parse_constraints(have) if have else JujuConstraints()
        for key, value in values.items():
            field = {"cpu-cores": "cores", "root-disk": "root_disk", "cpu-power": "cpu_power"}.get(
                key, key.replace("-", "_")
            )
            got = getattr(parsed, field, None)
            if isinstance(value, list):
                got = list(got or [])
            if got != value:
                wrong.append(f"{unit}: {key} is {got!r}, expected {value!r}")
    return wrong


def _check_series(case: dict[str, Any], result: PlanResult) -> list[str]:
    wrong = []
    targets = {m.target.id: m.target for m in result.new_targets}
    targets.update({t.id: t for t in result.spec.inventory.targets})
    for unit, want in (case["expect"].get("series") or {}).items():
        placement = next(p for p in result.placements if p.unit == unit)
        target = targets[_machine(placement.target)]
        have = target.properties.get("series")
        if have is None or have.value != want:
            wrong.append(f"{unit}: series {have and have.value!r}, expected {want!r}")
    return wrong


def _concerns(problem: Problem, subject: str) -> bool:
    """Whether a problem is about that service (or bundle machine): named in its key
    (applications.mysql.to[3]) or at the start of its message."""
    parts = re.split(r"[.\[\]]", problem.key)
    return (
        subject in parts
        or problem.message.startswith(f"{subject}:")
        or f"machine {subject} " in problem.message
    )


def _says(problem: Problem, texts: list[str]) -> bool:
    return any(str(text).lower() in problem.message.lower() for text in texts)


def _check_errors(case: dict[str, Any], error: SpecError) -> list[str]:
    wrong = []
    problems = list(error.problems)
    for want in case["error"]:
        subject = str(want.get("service") or want.get("machine"))
        texts = want.get("contains_any") or [want["contains"]]
        match = next((p for p in problems if _concerns(p, subject) and _says(p, texts)), None)
        if match is None:
            wrong.append(f"no error about {subject} containing {texts}")
        else:
            problems.remove(match)
    return wrong


def _params() -> list[Any]:
    params = []
    for case in CASES:
        marks = []
        if case["name"] in KNOWN_GAPS:
            marks.append(pytest.mark.xfail(strict=True, reason=KNOWN_GAPS[case["name"]]))
        params.append(pytest.param(case, id=case["name"], marks=marks))
    return params


def test_the_corpus_is_large_and_well_formed() -> None:
    names = [case["name"] for case in CASES]
    assert len(names) == len(set(names))
    assert len(CASES) >= 60
    assert sum("error" in case for case in CASES) >= 25
    assert {case["style"] for case in CASES} == {"deployer", "bundle"}
    assert set(KNOWN_GAPS) <= set(names)


@pytest.mark.parametrize("case", _params())
def test_juju_case(case: dict[str, Any]) -> None:
    if "error" in case:
        with pytest.raises(SpecError) as caught:
            _plan(case)
        wrong = _check_errors(case, caught.value)
        assert not wrong, "\n".join([*wrong, caught.value.render(50)])
        return
    results, status = _plan(case)
    assert len(results) == 1, [r.spec.name for r in results]
    [result] = results
    existing = {t.id for t in result.spec.inventory.targets}
    wrong = [
        *_check_units(case, result, existing),
        *_check_groups(case, result, status),
        *_check_warnings(case, result),
        *_check_portable(case, result),
        *_check_constraints(case, result),
        *_check_series(case, result),
    ]
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize(
    "case",
    [pytest.param(c, id=c["name"]) for c in CASES if "expect" in c and not c.get("deployment")],
)
def test_convert_gives_a_native_spec_that_plans_the_same(case: dict[str, Any]) -> None:
    results, _ = _plan(case)
    [result] = results
    native = dump_juju_native(native_document(result.spec))
    [again] = load_specs_text(native, "converted.yaml")
    replanned = Planner(again).plan()
    assert {p.unit: p.target for p in replanned.placements} == {
        p.unit: p.target for p in result.placements
    }, native
    assert not replanned.unplaced


@pytest.mark.parametrize(
    "case",
    [
        pytest.param(c, id=c["name"])
        for c in CASES
        if "expect" in c and not c.get("status") and not c.get("deployment")
    ],
)
def test_the_reference_places_every_unit_where_the_fast_path_does(case: dict[str, Any]) -> None:
    # The directive's one-target rule (its `judge`), one target at a time, as the fast
    # path's masks: the same machines, containers and new machines.
    results, _ = _plan(case)
    [result] = results
    reference = reference_plan(result.spec)
    assert {o.unit: o.target for o in reference} == {p.unit: p.target for p in result.placements}
