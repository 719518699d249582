"""A group commit of new workloads and deleted ones (operations/replica.py): the revision,
each target's usage moved under the generation the caller saw, the workloads, units and
placements made or deleted, the events and the history, in the caller's transaction.

The statements are the driver's own SQL with every value already in the form the driver
takes (each column type's own bind processor, read once per dialect): SQLAlchemy's Core
statements cost more to build, compile and bind than the database takes to run them,
and a batch is committed many times a second. No statement needs another's answer (the
new revision, event ids and row ids are read back inside the database by subqueries),
so on PostgreSQL they go in one pipeline, one round trip instead of one each; SQLite
runs them one by one on the driver's cursor. Either way a driver's error
is SQLAlchemy's (an `IntegrityError`; a lost connection invalidates the pool and is
marked `connection_invalidated`), as anywhere else in the store.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Connection, Dialect, Table, exc

from placed.store import events, notify, statistics
from placed.store.tables import (
    EventRow,
    Placement,
    PlacementHistory,
    Setting,
    Workload,
    now,
    table_of,
)
from placed.store.world import CHANGED_SETTING, RULES_SETTING

# Rows per multi-row statement: far below SQLite's and PostgreSQL's bound parameters.
ROWS_PER_STATEMENT = 500
OFFERING_COLUMNS = ("name", "cpu", "memory", "disk", "dedicated", "implicit")
HISTORY_REASON = 255  # placement_history.reason's length
REVISION = "(SELECT value FROM revision WHERE id = 1)"
LAST_EVENT = "(SELECT last_event_id FROM revision WHERE id = 1)"


class Behind(Exception):
    """Another change committed after the revision the batch was decided on."""


class Stale(Exception):
    """A target changed since it was read (its generation, or no room left there), or
    a workload's name was taken meanwhile."""


@dataclass(frozen=True, slots=True)
class NewWorkload:
    name: str
    account: str | None
    spec: dict[str, Any]
    document: str | None
    event: events.Pending | None = None  # its workload.created, for the audit trail


@dataclass(frozen=True, slots=True)
class NewUnit:
    """A unit of a new workload, placed: its event and its history row."""

    name: str
    workload: str
    ordinal: int
    target_id: int
    reason: str
    event: events.Pending


@dataclass(frozen=True, slots=True)
class GoneWorkload:
    """A workload deleted, at the generation the caller saw (`Stale` if it moved on)."""

    id: int
    generation: int
    event: events.Pending  # its workload.deleted


@dataclass(frozen=True, slots=True)
class ChangedWorkload:
    """A workload whose spec changes (its count), at the generation the caller saw
    (`Stale` if it moved on); its generation is raised."""

    id: int
    generation: int
    spec: dict[str, Any]
    event: events.Pending  # its workload.changed


@dataclass(frozen=True, slots=True)
class GoneUnit:
    """A unit of a deleted workload: its placement (if any) and row go, with its event
    and its history row."""

    id: int
    name: str
    source: str | None  # the target it leaves
    reason: str
    event: events.Pending


@dataclass(frozen=True, slots=True)
class MovedUnit:
    """A unit that moves from one target to another (its own target left taking work),
    with its unit.moved event and its history row."""

    id: int
    name: str
    source: str
    destination_id: int
    reason: str
    event: events.Pending


@dataclass(frozen=True, slots=True)
class TargetState:
    """A target's new admin state, or (`liveness`) the controller's judgement of its
    heartbeats (its generation is raised by its guard), with the event that says why
    (target.down, target.up, target.maintenance)."""

    id: int
    admin_state: str
    event: events.Pending
    liveness: bool = False


@dataclass(frozen=True, slots=True)
class NewNode:
    """A location or a target new to the inventory (a live world's apply), as the general
    path writes it (store/definitions.py): its own keys, its parent by name, and for a
    target its admin state and capacity. Parents come before their children."""

    name: str
    parent: str | None
    kind: str
    tags: tuple[str, ...]
    spec: dict[str, Any]
    document: str | None
    target: bool = False
    admin_state: str = "up"
    capacity: tuple[tuple[str, float], ...] = ()


@dataclass(frozen=True, slots=True)
class Rededication:
    """A dedication row made (`made`), given another owner, or deleted (`gone`: a
    release, or one a wider dedication absorbs)."""

    resource: str
    kind: str
    domain: str
    account: str | None
    implicit: bool = False
    made: bool = False
    gone: bool = False


@dataclass(frozen=True, slots=True)
class Gone:
    """What a batch deletes or rewrites: workloads deleted, units removed (a deleted
    workload's, or those past a workload's new count), workloads whose spec changes,
    targets whose admin state changes and the units that move off them, and the usage
    of each target it frees or moves units between (written as is: a lowered `used`
    never meets `CHECK (used >= 0)` by a rounding's hair)."""

    workloads: Sequence[GoneWorkload] = ()
    units: Sequence[GoneUnit] = ()
    used: Sequence[tuple[int, str, float]] = ()
    changed: Sequence[ChangedWorkload] = ()
    states: Sequence[TargetState] = ()
    moved: Sequence[MovedUnit] = ()
    # Dedications made, changed or released, and the events of the change that are no
    # unit's, workload's or target state's (a dedication's).
    dedications: Sequence[Rededication] = ()
    notes: Sequence[events.Pending] = ()
    # Settings of the whole world put (key, value): rules every plan is judged by.
    settings: Sequence[tuple[str, Any]] = ()
    # Locations and targets new to the inventory.
    inventory: Sequence[NewNode] = ()
    # Service offerings new to the world (no workload names one yet), as dicts of their
    # columns (store/world.py reads them back so): rules every plan is judged by.
    offerings: Sequence[dict[str, Any]] = ()


NOTHING_GONE = Gone()


@dataclass(frozen=True, slots=True)
class Stored:
    revision: int
    workload_ids: dict[str, int]
    unit_ids: dict[str, int]
    events: list[events.Written]
    target_ids: dict[str, int] = field(default_factory=dict)  # those new to the inventory


Processor = Callable[[Any], Any]


@dataclass(frozen=True, slots=True)
class _Types:
    """The driver's parameter marker, and each typed column's bind processor."""

    marker: str
    placed_at: Processor
    history_at: Processor
    event_at: Processor
    spec: Processor  # workloads.spec
    details: Processor  # events.details
    setting: Processor  # settings.value


_TYPES: dict[tuple[str, str], _Types] = {}


def _types(dialect: Dialect) -> _Types:
    key = (dialect.name, dialect.paramstyle)
    found = _TYPES.get(key)
    if found is None:
        found = _TYPES[key] = _Types(
            "?" if dialect.paramstyle == "qmark" else "%s",
            _processor(table_of(Placement), "placed_at", dialect),
            _processor(table_of(PlacementHistory), "at", dialect),
            _processor(table_of(EventRow), "at", dialect),
            _processor(table_of(Workload), "spec", dialect),
            _processor(table_of(EventRow), "details", dialect),
            _processor(table_of(Setting), "value", dialect),
        )
    return found


def _processor(table: Table, column: str, dialect: Dialect) -> Processor:
    found = table.c[column].type.dialect_impl(dialect).bind_processor(dialect)
    return found if found is not None else _same


def _same(value: Any) -> Any:
    return value


def _chunks(rows: Sequence[Any]) -> list[Sequence[Any]]:
    return [rows[i : i + ROWS_PER_STATEMENT] for i in range(0, len(rows), ROWS_PER_STATEMENT)]


@dataclass
class _Statement:
    sql: str
    parameters: tuple[Any, ...] | list[tuple[Any, ...]]  # a list: one row each
    returns: bool = False  # rows to read back
    expect: int | None = None  # the rows it must change, else the batch is stale
    rows: list[tuple[Any, ...]] = field(default_factory=list)
    rowcount: int = -1


@dataclass
class _Plan:
    """The batch's statements, in the order they run."""

    revision: _Statement
    guards: list[_Statement]  # each must change the rows it expects, else `Stale`
    inventory: list[_Statement]  # the targets' returning (id, name)
    workloads: list[_Statement]  # returning (id, name)
    units: list[_Statement]  # returning (id, name)
    rest: list[_Statement]

    def statements(self) -> list[_Statement]:
        return [
            self.revision,
            *self.guards,
            *self.inventory,
            *self.workloads,
            *self.units,
            *self.rest,
        ]


def _plan(
    types: _Types,
    at: Any,
    seen: int,
    notifies: bool,
    guards: Sequence[tuple[int, int]],
    usage: Sequence[tuple[int, str, float]],
    workloads: Sequence[NewWorkload],
    units: Sequence[NewUnit],
    gone: Gone,
) -> _Plan:
    mark = types.marker
    # PostgreSQL takes a statement's many rows as arrays, one per column (one statement
    # to parse, plan and run, where a row each cost 20-40 us apiece in the pipeline);
    # SQLite runs a row each in its own C loop (executemany), at a few us a row.
    arrays = notifies

    def sql(text: str) -> str:
        # An array goes in the binary format: its text form quotes each element, which
        # took longer than the statement it fed.
        return text.replace("?::", "%b::").replace("?", mark)

    def rows(row: str, count: int) -> str:
        return ", ".join([sql(row)] * count)

    def marks(count: int) -> str:
        return ", ".join([mark] * count)

    written = _events(workloads, units, gone)
    revision = _Statement(
        sql(
            "UPDATE revision SET value = value + 1, last_event_id = last_event_id + ? "
            "WHERE id = 1 RETURNING value, last_event_id"
        ),
        (len(written),),
        returns=True,
    )
    # The revision row's lock, taken first by every writer, orders the writers: no two
    # wait on each other's targets, so one statement raises them all. The ids alone
    # first: SQLite reads a row value IN (VALUES ...) by scanning every target.
    # On PostgreSQL the pairs go as two arrays: a statement of a mark per value is one
    # psycopg parses anew for each length (4-5 ms for the 100 targets a drain touches).
    guarded = (
        [
            _Statement(
                sql(
                    "UPDATE targets AS t SET generation = t.generation + 1, "
                    f"revision = {REVISION} FROM unnest(?::int8[], ?::int8[]) "
                    "AS v(id, generation) WHERE t.id = ANY(?::int8[]) AND t.id = v.id "
                    "AND t.generation = v.generation"
                ),
                _keyed(_columns(sorted(guards), 2), 0),
                expect=len(guards),
            )
        ]
        if arrays and guards
        else [
            _Statement(
                sql(f"UPDATE targets SET generation = generation + 1, revision = {REVISION} ")
                + f"WHERE id IN ({marks(len(part))}) "
                + f"AND (id, generation) IN (VALUES {rows('(?, ?)', len(part))})",
                (*(id_ for id_, _ in part), *(value for guard in part for value in guard)),
                expect=len(part),
            )
            for part in _chunks(sorted(guards))
        ]
    )
    # A deleted workload at the generation seen: one changed since would take units
    # (and their usage) this batch never counted.
    dropped = sorted(gone.workloads, key=lambda w: w.id)
    guarded += (
        [
            _Statement(
                sql(
                    "DELETE FROM workloads AS w USING unnest(?::int8[], ?::int8[]) "
                    "AS v(id, generation) WHERE w.id = ANY(?::int8[]) AND w.id = v.id "
                    "AND w.generation = v.generation"
                ),
                _keyed(_columns([(w.id, w.generation) for w in dropped], 2), 0),
                expect=len(dropped),
            )
        ]
        if arrays and dropped
        else [
            _Statement(
                f"DELETE FROM workloads WHERE id IN ({marks(len(part))}) "
                + f"AND (id, generation) IN (VALUES {rows('(?, ?)', len(part))})",
                (*(w.id for w in part), *(v for w in part for v in (w.id, w.generation))),
                expect=len(part),
            )
            for part in _chunks(dropped)
        ]
    )
    guarded += [
        _Statement(
            sql(
                "UPDATE workloads SET spec = ?, generation = generation + 1, "
                f"revision = {REVISION} WHERE id = ? AND generation = ?"
            ),
            (types.spec(w.spec), w.id, w.generation),
            expect=1,
        )
        for w in gone.changed
    ]
    if usage:
        guarded.append(
            _Statement(
                sql(
                    "UPDATE target_resources AS r SET used = r.used + v.amount FROM "
                    "unnest(?::float8[], ?::int8[], ?::text[]) AS v(amount, target_id, name) "
                    "WHERE r.target_id = ANY(?::int8[]) AND r.target_id = v.target_id "
                    "AND r.name = v.name"
                ),
                _keyed(_columns(_summed(usage), 3), 1),
            )
            if arrays
            else _Statement(
                sql("UPDATE target_resources SET used = used + ? WHERE target_id = ? AND name = ?"),
                [(amount, target, resource) for target, resource, amount in usage],
            )
        )
    if gone.used:
        guarded.append(
            _Statement(
                sql(
                    "UPDATE target_resources AS r SET used = v.amount FROM "
                    "unnest(?::float8[], ?::int8[], ?::text[]) AS v(amount, target_id, name) "
                    "WHERE r.target_id = ANY(?::int8[]) AND r.target_id = v.target_id "
                    "AND r.name = v.name"
                ),
                _keyed(_columns(_last(gone.used), 3), 1),
            )
            if arrays
            else _Statement(
                sql("UPDATE target_resources SET used = ? WHERE target_id = ? AND name = ?"),
                [(amount, target, resource) for target, resource, amount in gone.used],
            )
        )
    for liveness, statement in (
        (False, "UPDATE targets SET admin_state = ? WHERE id = ?"),
        (True, "UPDATE target_liveness SET liveness = ? WHERE target_id = ?"),
    ):
        states = [(s.admin_state, s.id) for s in gone.states if s.liveness == liveness]
        if states:
            guarded.append(_Statement(sql(statement), states))
    guarded += _dedication_statements(sql, gone.dedications)
    if gone.offerings:
        guarded.append(
            _Statement(
                sql(
                    "INSERT INTO offerings (name, cpu, memory, disk, dedicated, implicit) "
                    "VALUES (?, ?, ?, ?, ?, ?)"
                ),
                [tuple(o[key] for key in OFFERING_COLUMNS) for o in gone.offerings],
            )
        )
    unit_ids = [u.id for u in gone.units]
    if arrays and unit_ids:
        guarded += [
            _Statement(sql("DELETE FROM placements WHERE unit_id = ANY(?::int8[])"), (unit_ids,)),
            _Statement(sql("DELETE FROM units WHERE id = ANY(?::int8[])"), (unit_ids,)),
        ]
    for part in [] if arrays else _chunks(unit_ids):
        guarded.append(
            _Statement(f"DELETE FROM placements WHERE unit_id IN ({marks(len(part))})", tuple(part))
        )
        guarded.append(
            _Statement(f"DELETE FROM units WHERE id IN ({marks(len(part))})", tuple(part))
        )
    inventory = _inventory_statements(sql, rows, types, gone.inventory)
    made = [
        _Statement(
            # An unknown account (or none) is NULL, as the general path stores it.
            "INSERT INTO workloads (name, account_id, spec, document, generation, revision) "
            "VALUES "
            + rows(f"(?, (SELECT id FROM accounts WHERE name = ?), ?, ?, 0, {REVISION})", len(part))
            + " RETURNING id, name",
            tuple(
                value for w in part for value in (w.name, w.account, types.spec(w.spec), w.document)
            ),
            returns=True,
        )
        for part in _chunks(workloads)
    ]
    placed = [
        _Statement(
            "INSERT INTO units (name, workload_id, ordinal) VALUES "
            + rows("(?, (SELECT id FROM workloads WHERE name = ?), ?)", len(part))
            + " RETURNING id, name",
            tuple(value for u in part for value in (u.name, u.workload, u.ordinal)),
            returns=True,
        )
        for part in _chunks(units)
    ]
    rest: list[_Statement] = []
    if written:
        placed_at, event_at, history_at = (
            types.placed_at(at),
            types.event_at(at),
            types.history_at(at),
        )
        # Event k of n takes id last - (n - 1 - k): the ids the revision handed out, in
        # `_events`' order (the units' events last), whose offsets history reads.
        first_unit = len(written) - len(units) - len(gone.units) - len(gone.moved)
        first_moved = first_unit + len(units) + len(gone.units)
        offsets = range(len(written) - 1, -1, -1)
        history = (
            [
                (u.name, None, u.event.target, u.reason, offsets[first_unit + k])
                for k, u in enumerate(units)
            ]
            + [
                (u.name, u.source, None, u.reason, offsets[first_unit + len(units) + k])
                for k, u in enumerate(gone.units)
                if u.source is not None
            ]
            + [
                (u.name, u.source, u.event.target, u.reason, offsets[first_moved + k])
                for k, u in enumerate(gone.moved)
            ]
        )
        if units:
            rest.append(
                _Statement(
                    sql(
                        "INSERT INTO placements (unit_id, target_id, placed_at, revision) "
                        f"SELECT u.id, v.target_id, ?, {REVISION} "
                        "FROM unnest(?::text[], ?::int8[]) AS v(name, target_id) "
                        "JOIN units AS u ON u.name = v.name"
                    ),
                    (placed_at, *_columns([(u.name, u.target_id) for u in units], 2)),
                )
                if arrays
                else _Statement(
                    sql(
                        "INSERT INTO placements (unit_id, target_id, placed_at, revision) "
                        f"VALUES ((SELECT id FROM units WHERE name = ?), ?, ?, {REVISION})"
                    ),
                    [(u.name, u.target_id, placed_at) for u in units],
                )
            )
        described = [
            (
                offset,
                e.actor_accessor,
                e.actor_role,
                e.kind,
                e.subject,
                e.target,
                e.workload,
                e.domain,
                e.account,
                e.request_id,
                types.details(dict(e.details)),
            )
            for offset, e in zip(offsets, written, strict=True)
        ]
        columns = (
            "id, at, actor_accessor, actor_role, kind, subject, target, workload, domain, "
            "account, request_id, details"
        )
        rest.append(
            _Statement(
                sql(
                    f"INSERT INTO events ({columns}) SELECT {LAST_EVENT} - v.k, ?, v.aa, v.ar, "
                    "v.kind, v.subject, v.target, v.workload, v.domain, v.account, v.rid, "
                    "v.details FROM unnest(?::int8[], ?::text[], ?::text[], ?::text[], "
                    "?::text[], ?::text[], ?::text[], ?::text[], ?::text[], ?::text[], "
                    "?::json[]) AS v(k, aa, ar, kind, subject, target, workload, domain, "
                    "account, rid, details)"
                ),
                (event_at, *_columns(described, 11)),
            )
            if arrays
            else _Statement(
                sql(
                    f"INSERT INTO events ({columns}) "
                    f"VALUES ({LAST_EVENT} - ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
                ),
                [(row[0], event_at, *row[1:]) for row in described],
            )
        )
        if history:
            kept = [
                (name, source, to, reason[:HISTORY_REASON], at_offset)
                for name, source, to, reason, at_offset in history
            ]
            rest.append(
                # WITH ORDINALITY: the rows take their ids in the batch's order.
                _Statement(
                    sql(
                        "INSERT INTO placement_history (unit_name, from_target, to_target, "
                        f"at, reason, event_id) SELECT v.name, v.source, v.dest, ?, v.reason, "
                        f"{LAST_EVENT} - v.k FROM unnest(?::text[], ?::text[], ?::text[], "
                        "?::text[], ?::int8[]) WITH ORDINALITY AS v(name, source, dest, reason, "
                        "k, n) ORDER BY v.n"
                    ),
                    (history_at, *_columns(kept, 5)),
                )
                if arrays
                else _Statement(
                    sql(
                        "INSERT INTO placement_history (unit_name, from_target, to_target, "
                        f"at, reason, event_id) VALUES (?, ?, ?, ?, ?, {LAST_EVENT} - ?)"
                    ),
                    [
                        (name, source, to, history_at, reason, k)
                        for name, source, to, reason, k in kept
                    ],
                )
            )
        if gone.moved:
            rest.append(
                _Statement(
                    sql(
                        f"UPDATE placements AS p SET target_id = v.target_id, placed_at = ?, "
                        f"revision = {REVISION} FROM unnest(?::int8[], ?::int8[]) "
                        "AS v(target_id, unit_id) WHERE p.unit_id = ANY(?::int8[]) "
                        "AND p.unit_id = v.unit_id"
                    ),
                    (
                        placed_at,
                        *_keyed(_columns([(u.destination_id, u.id) for u in gone.moved], 2), 1),
                    ),
                )
                if arrays
                else _Statement(
                    sql(
                        "UPDATE placements SET target_id = ?, placed_at = ?, "
                        f"revision = {REVISION} WHERE unit_id = ?"
                    ),
                    [(u.destination_id, placed_at, u.id) for u in gone.moved],
                )
            )
        # Another replica brings its world forward from the rows of new, deleted and
        # resized workloads, of targets' new states and of the units that moved, of
        # locations and targets added, and of dedications and settings (its
        # `_claims_since`); only a whole plan's change (operations/transactions.py) tells
        # it to read the whole world. A dedication or a setting changes a rule every plan
        # is judged by: a general path planned on the rules before it is stale too.
        rules = bool(gone.dedications or gone.settings or gone.offerings)
        changed = rules or any(
            (gone.workloads, gone.changed, gone.states, gone.moved, gone.inventory)
        )
        told = [
            (key, seen + 1)  # the batch's own revision: any other, and it is `Behind`
            for key, wanted in ((CHANGED_SETTING, changed), (RULES_SETTING, rules))
            if wanted
        ]
        put = [*gone.settings, *told]
        if put:
            rest.append(
                _Statement(
                    sql(
                        "INSERT INTO settings (key, value) VALUES (?, ?) ON CONFLICT (key) "
                        "DO UPDATE SET value = excluded.value"
                    ),
                    # Wrapped as store/settings.py wraps a value: a JSON document on every
                    # backend.
                    [(key, types.setting({"value": value})) for key, value in put],
                )
            )
        if notifies:
            rest.append(_Statement(sql("SELECT pg_notify(?, '')"), (notify.CHANNEL,)))
    return _Plan(revision, guarded, inventory, made, placed, rest)


def _inventory_statements(
    sql: Callable[[str], str],
    rows: Callable[[str, int], str],
    types: _Types,
    nodes: Sequence[NewNode],
) -> list[_Statement]:
    """New locations (a row each, in order: a parent is there before its children),
    then the new targets (returning their ids), their resources and liveness rows, with
    the values the general path gives them (store/definitions.py)."""
    statements: list[_Statement] = []
    locations = [n for n in nodes if not n.target]
    if locations:
        statements.append(
            _Statement(
                sql(
                    "INSERT INTO locations (name, parent_id, kind, tags, properties, spec, "
                    "document, revision) VALUES (?, (SELECT id FROM locations WHERE name = ?), "
                    f"?, ?, ?, ?, ?, {REVISION})"
                ),
                [
                    (
                        n.name,
                        n.parent,
                        n.kind,
                        types.spec(list(n.tags)),
                        types.spec({}),
                        types.spec(n.spec),
                        n.document,
                    )
                    for n in locations
                ],
            )
        )
    targets = [n for n in nodes if n.target]
    for part in _chunks(targets):
        statements.append(
            _Statement(
                "INSERT INTO targets (name, location_id, tags, properties, spec, document, "
                "admin_state, generation, revision) VALUES "
                + rows(
                    f"(?, (SELECT id FROM locations WHERE name = ?), ?, ?, ?, ?, ?, 0, {REVISION})",
                    len(part),
                )
                + " RETURNING id, name",
                tuple(
                    value
                    for n in part
                    for value in (
                        n.name,
                        n.parent,
                        types.spec([]),
                        types.spec({}),
                        types.spec(n.spec),
                        n.document,
                        n.admin_state,
                    )
                ),
                returns=True,
            )
        )
    resources = [(n.name, name, amount) for n in targets for name, amount in n.capacity]
    if resources:
        statements.append(
            _Statement(
                sql(
                    "INSERT INTO target_resources (target_id, name, capacity, used) "
                    "VALUES ((SELECT id FROM targets WHERE name = ?), ?, ?, 0.0)"
                ),
                resources,
            )
        )
    if targets:
        statements.append(
            _Statement(
                sql(
                    "INSERT INTO target_liveness (target_id, last_seen, liveness) "
                    "VALUES ((SELECT id FROM targets WHERE name = ?), NULL, 'unknown')"
                ),
                [(n.name,) for n in targets],
            )
        )
    return statements


def _columns(rows: Sequence[tuple[Any, ...]], width: int) -> tuple[list[Any], ...]:
    """`rows` as `width` columns: the arrays a statement over `unnest` takes."""
    return tuple([row[k] for row in rows] for k in range(width))


def _keyed(columns: tuple[list[Any], ...], key: int) -> tuple[list[Any], ...]:
    """`columns`, then column `key` again: a statement joins its rows to `unnest` of the
    columns by a key it also finds by `= ANY` of that column. PostgreSQL cannot see how
    few rows an `unnest` of a parameter yields, and joined by the key alone it hashed the
    whole table (4-5 ms for the 200 resources of a drain on 10,000 targets, against 0.3
    ms by the index)."""
    return (*columns, columns[key])


def _summed(usage: Sequence[tuple[int, str, float]]) -> list[tuple[float, int, str]]:
    """Amounts to add, one row per (target, resource): an UPDATE ... FROM changes a row
    once however many of its rows match, where one statement a row adds each."""
    found: dict[tuple[int, str], float] = {}
    for target, resource, amount in usage:
        found[(target, resource)] = found.get((target, resource), 0.0) + amount
    return [(amount, target, resource) for (target, resource), amount in found.items()]


def _last(used: Sequence[tuple[int, str, float]]) -> list[tuple[float, int, str]]:
    """Amounts to set, one row per (target, resource): the last given, as one statement
    a row leaves it."""
    found = {(target, resource): amount for target, resource, amount in used}
    return [(amount, target, resource) for (target, resource), amount in found.items()]


def _dedication_statements(
    sql: Callable[[str], str], changes: Sequence[Rededication]
) -> list[_Statement]:
    """Dedications deleted, made and given another owner, the owner named as the
    general path names it (store/definitions.py): its domain, and its account or NULL."""
    owner = "(SELECT id FROM domains WHERE name = ?), (SELECT id FROM accounts WHERE name = ?)"
    statements = [
        _Statement(sql("DELETE FROM dedications WHERE resource = ?"), [(d.resource,)])
        for d in changes
        if d.gone
    ]
    made = [d for d in changes if d.made and not d.gone]
    if made:
        statements.append(
            _Statement(
                sql(
                    "INSERT INTO dedications (resource, kind, domain_id, account_id, implicit, "
                    f"revision) VALUES (?, ?, {owner}, ?, {REVISION})"
                ),
                [(d.resource, d.kind, d.domain, d.account, d.implicit) for d in made],
            )
        )
    statements += [
        _Statement(
            sql(
                "UPDATE dedications SET domain_id = (SELECT id FROM domains WHERE name = ?), "
                "account_id = (SELECT id FROM accounts WHERE name = ?), implicit = ?, "
                f"revision = {REVISION} WHERE resource = ?"
            ),
            (d.domain, d.account, d.implicit, d.resource),
            expect=1,
        )
        for d in changes
        if not d.made and not d.gone
    ]
    return statements


def write(
    connection: Connection,
    seen: int,
    guards: Sequence[tuple[int, int]],
    usage: Sequence[tuple[int, str, float]],
    workloads: Sequence[NewWorkload],
    units: Sequence[NewUnit],
    gone: Gone = NOTHING_GONE,
) -> Stored:
    """Write the batch in `connection`'s transaction. `seen`: the revision it was decided
    on (`Behind` when the next one is not this batch's); `guards`: (target id,
    generation seen) of every target it places on or frees (`Stale` when one has moved
    on); `usage`: (target id, resource, amount) to add (`Stale` past capacity: the
    database's CHECK); `gone`: what it deletes, and the usage of the targets it frees
    (those are not in `usage`)."""
    dialect = connection.dialect
    at = now()
    plan = _plan(
        _types(dialect),
        at,
        seen,
        dialect.name == "postgresql",
        guards,
        usage,
        workloads,
        units,
        gone,
    )
    try:
        if dialect.name == "postgresql":
            _pipelined(connection, plan.statements())
        else:
            _one_by_one(connection, seen, plan)
    except exc.IntegrityError:
        # Past a target's capacity, or a name another replica's general path stored
        # first; a revision moved on is told first.
        if plan.revision.rows:
            _behind(seen, plan.revision)
        raise Stale("a target or a workload's name changed meanwhile") from None
    number, last = _behind(seen, plan.revision)
    for statement in plan.guards:
        _stale(statement)
    statistics.refresh(connection, len(units) + sum(1 for n in gone.inventory if n.target))
    workload_ids = {name: int(id_) for s in plan.workloads for id_, name in s.rows}
    target_ids = {name: int(id_) for s in plan.inventory for id_, name in s.rows}
    unit_ids = {name: int(id_) for s in plan.units for id_, name in s.rows}
    pending = _events(workloads, units, gone)
    first = last - len(pending) + 1
    written = [
        events.Written(
            first + k,
            at,
            p.actor_accessor,
            p.actor_role,
            p.kind,
            p.subject,
            p.target,
            p.workload,
            p.domain,
            p.account,
            p.request_id,
            dict(p.details),
        )
        for k, p in enumerate(pending)
    ]
    return Stored(
        number,
        {w.name: workload_ids[w.name] for w in workloads},
        {u.name: unit_ids[u.name] for u in units},
        written,
        target_ids,
    )


def _events(
    workloads: Sequence[NewWorkload], units: Sequence[NewUnit], gone: Gone
) -> list[events.Pending]:
    """The batch's events in id order: each new workload's, deleted one's and changed
    one's, each target's new state, then each unit's placement, each removal and each
    move (a change's cause before its units, as the general path writes them)."""
    return [
        *(w.event for w in workloads if w.event is not None),
        *(w.event for w in gone.workloads),
        *(w.event for w in gone.changed),
        *(t.event for t in gone.states),
        *gone.notes,
        *(u.event for u in units),
        *(u.event for u in gone.units),
        *(u.event for u in gone.moved),
    ]


def _behind(seen: int, revision: _Statement) -> tuple[int, int]:
    """The new revision and the last event id; `Behind` when another change came first."""
    number, last = (int(value) for value in revision.rows[0])
    if number - 1 != seen:
        raise Behind()
    return number, last


def _stale(statement: _Statement) -> None:
    if statement.expect is not None and statement.rowcount != statement.expect:
        raise Stale("a target's or a deleted workload's generation")


def _one_by_one(connection: Connection, seen: int, plan: _Plan) -> None:
    """Each statement in turn on the driver's cursor, stopping at the first sign that the
    batch is behind or stale (SQLite: no round trips to save, and SQLAlchemy's result
    objects, built for each statement, would cost more than SQLite takes to run it)."""
    raw = connection.connection.driver_connection
    assert raw is not None
    cursor = raw.cursor()
    dbapi = connection.dialect.loaded_dbapi
    statements = plan.statements()
    try:
        for statement in statements:
            if isinstance(statement.parameters, list):
                cursor.executemany(statement.sql, statement.parameters)
            else:
                cursor.execute(statement.sql, statement.parameters)
            _read(statement, cursor)
            if statement is plan.revision:
                _behind(seen, statement)
            _stale(statement)
    except dbapi.Error as error:
        raise _as_sqlalchemy(connection, error, statements) from error
    finally:
        cursor.close()


def _read(statement: _Statement, result: Any) -> None:
    if statement.returns:
        statement.rows = [tuple(row) for row in result.fetchall()]
    statement.rowcount = int(result.rowcount)


def _pipelined(connection: Connection, statements: list[_Statement]) -> None:
    """Every statement in one psycopg pipeline: sent together, answered together."""
    raw = connection.connection.driver_connection
    assert raw is not None
    cursors: list[Any] = []
    dbapi = connection.dialect.loaded_dbapi
    try:
        with raw.pipeline():
            for statement in statements:
                cursor = raw.cursor()
                if isinstance(statement.parameters, list):
                    cursor.executemany(statement.sql, statement.parameters)
                else:
                    cursor.execute(statement.sql, statement.parameters)
                cursors.append(cursor)
    except dbapi.Error as error:
        # What ran before the error has its answer (the revision's, to tell a batch
        # behind from a stale one).
        if cursors:
            with contextlib.suppress(dbapi.Error):
                _read(statements[0], cursors[0])
        raise _as_sqlalchemy(connection, error, statements) from error
    for statement, cursor in zip(statements, cursors, strict=True):
        _read(statement, cursor)


def _as_sqlalchemy(
    connection: Connection, error: Any, statements: list[_Statement]
) -> exc.StatementError:
    """A driver's error as SQLAlchemy raises it. A lost connection is left to
    SQLAlchemy to find (its next statement fails the same way), which invalidates the
    pool and marks the error `connection_invalidated`, as for any other statement."""
    dialect = connection.dialect
    raw = connection.connection.dbapi_connection
    if dialect.is_disconnect(error, raw, None):
        connection.exec_driver_sql("SELECT 1")  # raises the lost connection's error
    wrapped: exc.StatementError = exc.DBAPIError.instance(
        statements[0].sql, None, error, dialect.loaded_dbapi.Error, dialect=dialect
    )
    return wrapped
