"""The `spread`, `near` and `avoid` sections of a workload: its topology spread terms and
its affinity to other workloads' units, read into the spread and affinity families'
requests."""

from __future__ import annotations

import difflib
from collections.abc import Collection, Sequence

from placed.model import AffinityTerm, Avoid, Mode, Near, Spread, SpreadTerm
from placed.policy.distinct import TARGET_LEVEL
from placed.spec.collect import Collector
from placed.spec.schema import AffinitySpec, SpreadSpec, WorkloadSpec
from placed.spec.source import Path


def _each(terms: object, where: Path) -> list[tuple[Path, object]]:
    """(path, term) of each term of a key that takes one mapping or a list of them."""
    if isinstance(terms, list):
        return [((*where, i), term) for i, term in enumerate(terms)]
    return [(where, terms)]


def _level(level: str, where: Path, out: Collector, kinds: set[str]) -> bool:
    levels = sorted(kinds | {TARGET_LEVEL})
    if level in levels:
        return True
    close = difflib.get_close_matches(level, levels, n=1, cutoff=0.6)
    hint = f"did you mean {close[0]!r}? " if close else ""
    out.add(
        f"no location in the inventory is of kind {level!r}; {hint}levels: {', '.join(levels)}",
        where,
    )
    return False


def _weight(term: SpreadSpec | AffinitySpec, where: Path, out: Collector) -> int:
    if term.weight is not None and term.mode == "hard":
        out.add(
            "weight ranks a preferred term; a hard one is a rule (set mode: preferred, or "
            "drop weight)",
            (*where, "weight"),
        )
    return term.weight or 1


def _allocation_only(key: str, mode: Mode, where: Path, out: Collector) -> bool:
    if mode == "allocation":
        return True
    out.add(
        f"{key} places the units of an allocation workload; this one is in {mode} mode "
        "(mapping owners follow the hash and every mode puts one unit on each target)",
        where,
    )
    return False


def spread(
    spec: WorkloadSpec, mode: Mode, path: Path, out: Collector, kinds: set[str]
) -> Spread | None:
    if spec.spread is None:
        return None
    where = (*path, "spread")
    if not _allocation_only("spread", mode, where, out):
        return None
    terms = []
    for at, term in _each(spec.spread, where):
        assert isinstance(term, SpreadSpec)
        weight = _weight(term, at, out)
        if _level(term.over, (*at, "over"), out, kinds):
            terms.append(SpreadTerm(term.over, term.max_skew, term.mode, weight))
    return Spread(tuple(terms)) if terms else None


def affinity(
    spec: WorkloadSpec, mode: Mode, path: Path, out: Collector, kinds: set[str]
) -> list[Near | Avoid]:
    found: list[Near | Avoid] = []
    for key, kind in (("near", Near), ("avoid", Avoid)):
        written = getattr(spec, key)
        if written is None:
            continue
        where = (*path, key)
        if not _allocation_only(key, mode, where, out):
            continue
        terms = []
        for at, term in _each(written, where):
            assert isinstance(term, AffinitySpec)
            weight = _weight(term, at, out)
            if _level(term.level, (*at, "level"), out, kinds):
                terms.append(AffinityTerm(term.workload, term.level, term.mode, weight))
        if terms:
            found.append(kind(tuple(terms)))
    return found


def check_workloads(specs: Sequence[WorkloadSpec], names: Collection[str], out: Collector) -> None:
    """Each near and avoid term names a workload of the spec."""
    known = sorted(names)
    for i, spec in enumerate(specs):
        for key in ("near", "avoid"):
            written = getattr(spec, key)
            if written is None:
                continue
            for at, term in _each(written, ("workloads", i, key)):
                assert isinstance(term, AffinitySpec)
                if term.workload in names:
                    continue
                close = difflib.get_close_matches(term.workload, known, n=1, cutoff=0.6)
                hint = f"; did you mean {close[0]!r}?" if close else ""
                out.add(f"no workload is named {term.workload!r}{hint}", (*at, "workload"))
