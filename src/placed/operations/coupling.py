"""How the live world's workloads are tied to each other, which says what a change can be a
delta for (operations/replica.py): a delete, a count change or a move of a workload's units
is what a whole plan makes of it only when no other workload's verdicts read it.

A `Coupling` is read from the world when it is built, and changed by a claim that reads
others (`with_reader`), so that a change judged after such a claim in the same batch is
judged by what that claim made of the world, not by what the world was before it."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from placed.model import Spec

# The fields that make a workload read more than itself: a Juju directive, constraint or
# machine, near or avoid (the workloads they name, and avoid's mirrored terms), an Open
# Horizon service or pattern.
READS_OTHERS = (
    "near",
    "avoid",
    "to",
    "juju_constraints",
    "new_machines",
    "service",
    "services",
    "pattern",
)
# Those a workload may hold and still be free for deltas (`Coupling.free`): they name
# workloads that exist, whose units' places the plan state counts (near, avoid).
NAMING = ("near", "avoid")
# Those a claim may hold and still be a delta: a Juju directive (`to:`) too, read against
# the workloads it names (spec.load.load_directed); a claim whose directive would make a
# machine or a container, or fall back with a warning, plans whole. Juju constraints, new
# machines and Open Horizon's services and patterns read the whole spec.
CLAIMABLE = (*NAMING, "to")
# A reader's fields that name others by a pattern, not by name.
_PATTERNS = ("pattern",)
_SEPARATORS = re.compile(r"[\s:/,=@]+")


@dataclass(frozen=True, slots=True)
class Coupling:
    # Every workload is an allocation with no reference to another (near, avoid, Juju's
    # directives: a deletion can change their verdicts).
    plain: bool = True
    # What a target's change of state can be a delta for: every workload plain (above)
    # but these mapping ones, in the spec's order, whose owners are derived from which
    # targets are up alone (none asks for resources, and the world has no tenancy:
    # nothing a unit elsewhere takes changes their verdicts; one with max_load is
    # assigned afresh). None: some workload is neither.
    mapped: tuple[str, ...] | None = ()
    # Every-mode workloads (a unit on each target that takes them) beside `mapped`.
    every: tuple[str, ...] = ()
    # In a world of allocations only, some of which read others: the readers, and every
    # name their references could mean (`referenced`, over-approximated: a pattern means
    # all). A change of a workload no reader names, every unit fitting, is what a whole
    # plan makes of it: no verdict of another reads where its units run, and what runs
    # stays. One that reads others by more than names (`directed`: a Juju directive may
    # have made machines for it) plans whole. A reader deleted stays in these until the
    # world is built again: an over-approximation, never a name missed.
    readers: frozenset[str] | None = None
    referenced: frozenset[str] | None = frozenset()
    directed: frozenset[str] = frozenset()

    @staticmethod
    def of(spec: Spec, stored: Mapping[str, dict[str, Any]], modes: Iterable[str]) -> Coupling:
        """The coupling of a world: its spec, each workload's stored spec (by name) and
        each workload's mode."""
        allocations = all(mode == "allocation" for mode in modes)
        plain = allocations and not any(reads_others(s) for s in stored.values())
        fleet = ((), ()) if plain else _fleet(spec, stored)
        mapped, every = fleet if fleet is not None else (None, ())
        readers, referenced = _readers(stored) if allocations else (None, None)
        directed = frozenset(n for n, s in stored.items() if not names_others(s))
        return Coupling(plain, mapped, every, readers, referenced, directed)

    def free(self, workload: str, fitting: bool, leaving: bool = False) -> bool:
        """Whether a delete, a count change or a move of `workload`'s units is a delta:
        the world is plain; or every unit fits (`fitting`) and the workload is an
        allocation of a world whose other workloads are `mapped` ones, or one that no
        reader names and that reads others by name at most (`readers`). `leaving`: its
        units only leave (a delete), which a Juju directive of its own does not read (the
        machines and containers made for them stay, as a whole plan keeps them)."""
        if self.plain:
            return True
        if not fitting:
            return False
        if self.mapped is not None:
            # Room it frees may give an every-mode workload a unit: the change checks
            # (ReplicaWorld._every_gains), and takes no room (a count cut, a delete).
            return workload not in self.mapped and workload not in self.every
        referenced = self.referenced
        return (
            self.readers is not None
            and referenced is not None
            and workload not in referenced
            and (leaving or workload not in self.directed)
        )

    def with_reader(self, name: str, stored: dict[str, Any]) -> Coupling:
        """This coupling once allocation workload `name`, whose stored spec reads others
        as a claim may (`CLAIMABLE`), is in the world."""
        readers = None if self.readers is None else self.readers | {name}
        referenced = self.referenced
        if readers is not None and referenced is not None:
            named: set[str] = set()
            for key in READS_OTHERS:
                named.update(names_in(stored.get(key)))
            referenced = referenced | named
        directed = self.directed if names_others(stored) else self.directed | {name}
        # A reader makes the world neither plain nor a fleet (`_fleet`).
        return dataclasses.replace(
            self,
            plain=False,
            mapped=None,
            every=(),
            readers=readers,
            referenced=referenced,
            directed=directed,
        )


def given(value: Any) -> bool:
    """Whether a field holds anything: `to: 0` does (machine 0), `pattern: false` and an
    empty list do not."""
    return value is not None and value is not False and value != [] and value != ""


def reads_others(stored: Mapping[str, Any]) -> bool:
    """Whether a stored workload (its row's spec, or a request's fields) reads others."""
    return any(given(stored.get(key)) for key in READS_OTHERS)


def names_others(stored: Mapping[str, Any]) -> bool:
    """Whether it reads others by name alone (`NAMING`), if at all."""
    return not any(given(stored.get(key)) for key in READS_OTHERS if key not in NAMING)


def claimable(stored: Mapping[str, Any]) -> bool:
    """Whether it reads others by what a claim on the live world reads (`CLAIMABLE`)."""
    return not any(given(stored.get(key)) for key in READS_OTHERS if key not in CLAIMABLE)


def _readers(
    stored: Mapping[str, dict[str, Any]],
) -> tuple[frozenset[str] | None, frozenset[str] | None]:
    """`Coupling.readers` and `referenced` of a world of allocations; `referenced` None
    when a reader names others by a pattern."""
    readers: set[str] = set()
    named: set[str] = set()
    for name, spec in stored.items():
        if not reads_others(spec):
            continue
        readers.add(name)
        if any(given(spec.get(key)) for key in _PATTERNS):
            return frozenset(readers), None
        for key in READS_OTHERS:
            named.update(names_in(spec.get(key)))
    return frozenset(readers), frozenset(named)


def names_in(value: Any) -> set[str]:
    """Every name a reference could mean: each string whole, and each piece of it
    between separators (`lxd:mysql/0` is lxd, mysql and 0)."""
    found: set[str] = set()
    pending = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, dict):
            pending.extend(item.values())  # its keys are the spec's fields
        elif isinstance(item, list | tuple):
            pending.extend(item)
        elif item is not None:
            text = str(item)
            found.add(text)
            found.update(piece for piece in _SEPARATORS.split(text) if piece)
    return found


def _fleet(
    spec: Spec, stored: Mapping[str, dict[str, Any]]
) -> tuple[tuple[str, ...], tuple[str, ...]] | None:
    """`Coupling.mapped` and `every` of a world that is not plain."""
    if spec.tenancy is not None or any(reads_others(s) for s in stored.values()):
        return None
    mapped: list[str] = []
    every: list[str] = []
    for workload in spec.workloads:
        if workload.mode == "mapping" and not any(workload.resources.values()):
            mapped.append(workload.name)
        elif workload.mode == "every":
            every.append(workload.name)
        elif workload.mode != "allocation":
            return None
    return tuple(mapped), tuple(every)


__all__ = [
    "CLAIMABLE",
    "NAMING",
    "READS_OTHERS",
    "Coupling",
    "claimable",
    "given",
    "names_in",
    "names_others",
    "reads_others",
]
