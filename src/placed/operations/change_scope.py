"""The one rule every change meets before it commits: everything it creates, modifies or
deletes is in the caller's scope.

The rule reads the change's diff (the world before it against the world it leaves), never
the request that asked for it, so no route can ask for more than its caller may have by
saying it another way: a prune naming another tenant's document, a `?source=` that names
it, a workload renamed into another account. `placing.transact` applies it to every
change it commits, and the replica's claim path to the one workload a claim creates.

What a scoped caller may touch (SERVICE.md, "Roles and tokens"): a user, the workloads of
its own account; a domain-admin, those of the accounts of its domain and every domain
below it; either of them, the machines a plan makes for such a workload (Juju's new
machines and containers). Targets, locations, tenancy, offerings, dedications, storage
and settings are the root-admin's. An agent changes nothing here (its heartbeat is a
liveness row, not a change of the world).

Tokens are objects of the scope they act for, and the same rule holds for them: a
domain-admin creates, lists and revokes domain-admin tokens of its subtree's domains and
user tokens of their accounts; every other token (an agent's, a root-admin's) is the
root-admin's (`TokenReach`, used by every token route).

Units that the scheduler moves as a consequence (a pending unit of another account placed
in the room a deletion freed) are not the caller's diff: no caller names them, and each
is recorded as an event of its own.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from placed.operations.errors import Conflict, Forbidden
from placed.operations.scopes import below
from placed.store import definitions
from placed.store.claims import Actor
from placed.store.world import Snapshot

ROOT_ADMIN = "root-admin"
DOMAIN_ADMIN = "domain-admin"
USER = "user"
# Changes no token asks for: the controller's sweeps, and placed's own callers (tests,
# benchmarks, the CLI against a database) that hold no token.
UNSCOPED = frozenset({ROOT_ADMIN, "controller", None})

CREATED, CHANGED, DELETED = "created", "changed", "deleted"


@dataclass(frozen=True, slots=True)
class Touched:
    """One object a change creates, changes or deletes. `accounts`: for a workload (and
    a machine made for one), the accounts that own it before and after the change."""

    kind: str  # workload, target, location, domain, account, offering, dedication, ...
    name: str
    how: str  # created, changed, deleted
    accounts: tuple[str | None, ...] = ()

    @property
    def tenant_owned(self) -> bool:
        return self.kind == "workload" or (self.kind == "target" and bool(self.accounts))


def reach_of(actor: Actor, snapshot: Snapshot) -> set[str] | None:
    """The accounts whose objects `actor` may change in `snapshot`'s tenancy: None for
    every object (a root-admin, the controller), empty for none (an agent)."""
    if actor.role in UNSCOPED:
        return None
    if actor.role == USER:
        return {actor.scope} if actor.scope else set()
    if actor.role == DOMAIN_ADMIN and actor.scope:
        domains = below(snapshot.domains, actor.scope)
        return {account for account, home in snapshot.accounts.items() if home in domains}
    return set()


@dataclass(frozen=True, slots=True)
class TokenReach:
    """The tokens a caller may create, list and revoke: `everything` for a root-admin."""

    everything: bool
    domains: frozenset[str] = frozenset()
    accounts: frozenset[str] = frozenset()

    def holds(self, role: str, scope: str | None) -> bool:
        if self.everything:
            return True
        if role == DOMAIN_ADMIN:
            return scope in self.domains
        if role == USER:
            return scope in self.accounts
        return False


def token_reach(
    actor: Actor, parents: Mapping[str, str | None], homes: Mapping[str, str]
) -> TokenReach:
    """What `actor` reaches of the tokens, given the domain tree (`parents`: domain ->
    parent) and each account's domain (`homes`)."""
    if actor.role == ROOT_ADMIN:
        return TokenReach(everything=True)
    if actor.role != DOMAIN_ADMIN or not actor.scope:
        return TokenReach(everything=False)
    domains = below(parents, actor.scope)
    accounts = {account for account, home in homes.items() if home in domains}
    return TokenReach(False, frozenset(domains), frozenset(accounts))


def _same(a: Any, b: Any) -> bool:
    # A change copies the snapshot's containers but shares their values: most entries
    # are the very same object, and identity is the cheap test at 10,000 targets.
    return a is b or a == b


def _keyed(entries: list[dict[str, Any]], key: str) -> dict[str, dict[str, Any]]:
    return {str(entry.get(key)): entry for entry in entries}


def _compared(kind: str, before: Mapping[str, Any], after: Mapping[str, Any]) -> Iterator[Touched]:
    for name, value in before.items():
        if name not in after:
            yield Touched(kind, name, DELETED)
        elif not _same(value, after[name]):
            yield Touched(kind, name, CHANGED)
    for name in after:
        if name not in before:
            yield Touched(kind, name, CREATED)


def touched(
    before: Snapshot,
    after: Snapshot,
    made_for: Mapping[str, str] | None = None,
    only: Collection[str] | None = None,
) -> Iterator[Touched]:
    """What `after` creates, changes and deletes of `before`: workloads first (the
    objects a tenant may change), then the world's. `made_for`: the targets the change's
    plan made, each with the workload it was made for. `only`: the only workloads `after`
    may define otherwise (a live world's delta; definitions.write), None: any."""
    made = made_for or {}
    workloads: set[str] = set()
    names = after.workload_specs if only is None else [n for n in only if n in after.workloads]
    for name in names:
        spec = after.workload_specs[name]
        row = after.workloads[name]
        old = before.workloads.get(name)
        if old is None:
            workloads.add(name)
            yield Touched("workload", name, CREATED, (row.account,))
        elif (
            not _same(before.workload_specs.get(name), spec)
            or old.account != row.account
            or old.document != row.document
        ):
            workloads.add(name)
            yield Touched("workload", name, CHANGED, (old.account, row.account))
    for name in before.workloads if only is None else only:
        old = before.workloads.get(name)
        if old is not None and name not in after.workloads:
            yield Touched("workload", name, DELETED, (old.account,))
    # A machine made for a workload this change does not touch (another's pending unit
    # that now finds its place) is the scheduler's consequence, as a moved unit is.
    if made or not definitions.same_inventory(before, after):
        yield from _nodes(
            before, after, {t: w for t, w in made.items() if w in workloads}, set(made)
        )
    yield from _compared("domain", before.domains, after.domains)
    yield from _compared("account", before.accounts, after.accounts)
    yield from _compared(
        "offering", _keyed(before.offerings, "name"), _keyed(after.offerings, "name")
    )
    # An implicit dedication is the scheduler's consequence of a claim (a tenant's VM
    # took an empty host), as a moved unit is: only the admin's are the admin's.
    yield from _compared(
        "dedication",
        _keyed([d for d in before.dedications if not d.get("implicit")], "resource"),
        _keyed([d for d in after.dedications if not d.get("implicit")], "resource"),
    )
    yield from _compared("storage pool", _keyed(before.storage, "id"), _keyed(after.storage, "id"))
    yield from _compared("setting", before.settings, after.settings)


def _nodes(
    before: Snapshot, after: Snapshot, made: Mapping[str, str], consequences: set[str]
) -> Iterator[Touched]:
    for name, own in after.nodes.items():
        kind = "target" if name in after.targets or name in before.targets else "location"
        if name not in before.nodes:
            if name in consequences and name not in made:
                continue
            workload = made.get(name)
            row = after.workloads.get(workload) if workload is not None else None
            yield Touched(kind, name, CREATED, (row.account,) if row is not None else ())
            continue
        was, now = before.targets.get(name), after.targets.get(name)
        if (
            not _same(before.nodes[name], own)
            or before.parents.get(name) != after.parents.get(name)
            or before.node_documents.get(name) != after.node_documents.get(name)
            or (was is None) != (now is None)
            or (
                was is not None
                and now is not None
                and (was.capacity != now.capacity or was.admin_state != now.admin_state)
            )
        ):
            yield Touched(kind, name, CHANGED)
    for name in before.nodes:
        if name not in after.nodes:
            kind = "target" if name in before.targets else "location"
            yield Touched(kind, name, DELETED)


def _allowed(item: Touched, reach: set[str]) -> bool:
    if not item.tenant_owned:
        return False
    return all(account is not None and account in reach for account in item.accounts)


def refusal(actor: Actor, item: Touched, reach: set[str]) -> Forbidden:
    """The 403 for the first object out of scope. A workload of an account out of the
    caller's reach is not named: the answer must not tell a tenant what another has."""
    if item.kind == "workload" and any(a not in reach for a in item.accounts if a is not None):
        what = "a workload outside this token's scope"
    elif item.kind == "workload":
        what = f"workload {item.name!r}, which would belong to no account of this token's"
    else:
        what = f"{item.kind} {item.name!r}, which only a root-admin may change"
    verb = {CREATED: "create", CHANGED: "change", DELETED: "delete"}[item.how]
    return Forbidden(
        f"a {actor.role} token may change only "
        + ("its own account's workloads" if actor.role == USER else "its domains' workloads")
        + f"; this change would {verb} {what}, and nothing was changed",
        "out-of-scope",
    )


def check(
    actor: Actor,
    before: Snapshot,
    after: Snapshot,
    made_for: Mapping[str, str] | None = None,
) -> None:
    """Raise a refusal (Forbidden) naming the first object the change touches out of `actor`'s
    scope; nothing for an unscoped caller."""
    if actor.role not in UNSCOPED:
        check_items(actor, before, touched(before, after, made_for))


def check_items(actor: Actor, before: Snapshot, items: Iterable[Touched]) -> None:
    """`check` for a change whose diff its path knows already (a claim's new workload)."""
    reach = reach_of(actor, before)
    if reach is None:
        return
    for item in items:
        if not _allowed(item, reach):
            raise refusal(actor, item, reach)


def hidden(actor: Actor, before: Snapshot, name: str) -> bool:
    """Whether workload `name` exists and is out of `actor`'s view."""
    row = before.workloads.get(name)
    if row is None:
        return False
    reach = reach_of(actor, before)
    return reach is not None and row.account not in reach


def name_taken(name: str) -> Conflict:
    """A workload name another account holds, answered to a scoped caller that does not
    see it: it says nothing of whose it is or what it runs. Workload names are one
    namespace across accounts, so that the name is taken is all it can tell."""
    return Conflict(
        f"the workload name {name!r} cannot be used: workload names are unique across "
        "every account; choose another",
        "name-taken",
    )
