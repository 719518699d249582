"""Dedication rules (seed 004), in one place: dedicate, release, update and list, each
taking the principal who acts and either applying completely or changing nothing.

A dedication gives a resource (a zone, pod, cluster or host) to a domain, or to one
account of that domain. It covers everything below the resource, except what carries a
dedication of its own, which carves itself out (the seed's c11 dedicated to SD3 inside
p1 dedicated to D1: D1, SD1 and SD2 lose c11). Who may use what: a domain-level
dedication serves the domain and its subdomains (a child uses its parent's, never the
reverse), an account-level one that account alone.

The checks, in order, each with a stable error kind:

- only a root admin dedicates, releases or updates (`permission-denied`);
- the resource, domain and account exist, and the account is in that very domain
  (`invalid-parameter`);
- a resource has at most one dedication, even to the same owner (`already-dedicated`);
- below a dedicated ancestor, only inside that ancestor's domain's subtree, and never
  below an account's dedication (`ancestor-dedicated`: the seed's "check the zone first");
- every dedication already below must belong inside the new owner
  (`descendant-conflict`);
- no host under it may run VMs of accounts the new owner does not cover
  (`host-has-foreign-vms`);
- releasing what is not dedicated is an error (`not-dedicated`); release evicts nothing.

Every change is an event (time, actor, kind, subject, details). The time comes from a
clock the caller gives (a spec's `settings.now`), None when there is none: the same spec
gives the same events, byte for byte.
"""

from __future__ import annotations

from collections.abc import Callable, Container, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from placed.model.tenancy import ROOT_ADMIN, Principal, Tenancy

# The error kinds, stable for programs (the API maps them to problem documents).
PERMISSION_DENIED = "permission-denied"
INVALID_PARAMETER = "invalid-parameter"
ALREADY_DEDICATED = "already-dedicated"
ANCESTOR_DEDICATED = "ancestor-dedicated"
DESCENDANT_CONFLICT = "descendant-conflict"
HOST_HAS_FOREIGN_VMS = "host-has-foreign-vms"
NOT_DEDICATED = "not-dedicated"
NO_CAPACITY = "no-capacity"
ZONE_CLOSED = "zone-closed"  # the VM's owner may not use the zone (dedicated to others)
MIGRATION_REFUSED = "migration-refused"

Clock = Callable[[], "str | None"]


def no_clock() -> str | None:
    return None


class DedicationError(Exception):
    """A refused operation; nothing changed. `kind` is stable, `message` for people, and
    `parameter` names the argument at fault when one is (a listing's kind, domain or
    account); `conflict`: the arguments are each fine and disagree with each other (an
    account with no domain, or another domain than its own), rather than one naming
    nothing there is."""

    def __init__(
        self, kind: str, message: str, parameter: str | None = None, conflict: bool = False
    ) -> None:
        self.kind = kind
        self.message = message
        self.parameter = parameter
        self.conflict = conflict
        super().__init__(message)


@dataclass(frozen=True, slots=True)
class Owner:
    """Who a dedication gives a resource to."""

    domain: str
    account: str | None = None
    implicit: bool = False  # made by implicit dedication (a host the account took)

    def __str__(self) -> str:
        return f"account {self.account}" if self.account else f"domain {self.domain}"


def covers(owner: Owner, account: str, chain: Container[str]) -> bool:
    """Who may use what a dedication holds, the one rule every reader asks (the plan's
    filters, the rules here, the listings and the scoping queries): an account
    dedication its own account alone, a domain dedication every account of that domain
    or one below it (`chain`: the account's domain up to ROOT; a child uses its
    parent's, never the reverse). Implicit or explicit makes no difference."""
    if owner.account is not None:
        return owner.account == account
    return owner.domain in chain


@dataclass(frozen=True, slots=True)
class Dedication:
    resource: str
    kind: str  # zone, pod, cluster, host...
    owner: Owner

    def to_dict(self) -> dict[str, Any]:
        return {
            "resource": self.resource,
            "kind": self.kind,
            "domain": self.owner.domain,
            "account": self.owner.account or None,  # a domain's dedication: null
            "implicit": self.owner.implicit,
        }


@dataclass(frozen=True, slots=True)
class Offering:
    """A service offering: what each VM takes, and whether it asks for dedication (and
    may fall back to shared hosts: implicit "preferred")."""

    name: str
    cpu: float = 0.0
    memory: float = 0.0
    disk: float = 0.0
    dedicated: bool = False
    implicit: str = "strict"


@dataclass(frozen=True, slots=True)
class Event:
    time: str | None  # ISO-8601, from the caller's clock; None without one
    actor: str
    kind: str  # dedication-created, dedication-released, dedication-updated, ...
    subject: str
    details: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "time": self.time,
            "actor": self.actor,
            "kind": self.kind,
            "subject": self.subject,
            "details": dict(self.details),
        }


def require_root(principal: Principal, what: str) -> None:
    """Seed 004's user permissions: what only a root admin may do."""
    if principal.role != "root-admin":
        raise DedicationError(
            PERMISSION_DENIED, f"only a root admin may {what}; {principal} may not"
        )


@dataclass(frozen=True, slots=True)
class Topology:
    """Each dedicable resource's kind and parent (None at the top), and its children."""

    kinds: Mapping[str, str]
    parents: Mapping[str, str | None]
    children: Mapping[str, tuple[str, ...]]

    @staticmethod
    def of(nodes: Iterable[tuple[str, str, str | None]]) -> Topology:
        """From (id, kind, parent id) triples, parents before children."""
        kinds: dict[str, str] = {}
        parents: dict[str, str | None] = {}
        children: dict[str, list[str]] = {}
        for node_id, kind, parent in nodes:
            kinds[node_id] = kind
            parents[node_id] = parent
            if parent is not None:
                children.setdefault(parent, []).append(node_id)
        return Topology(kinds, parents, {k: tuple(v) for k, v in children.items()})

    @staticmethod
    def of_roots(
        roots: Iterable[Any], more: Iterable[tuple[str, str, str | None]] = ()
    ) -> Topology:
        """From an inventory's location trees (each with id, kind and children), and more
        nodes after them (storage pools below their zone or cluster)."""
        nodes: list[tuple[str, str, str | None]] = []
        stack: list[tuple[Any, str | None]] = [(root, None) for root in reversed(list(roots))]
        while stack:
            location, parent = stack.pop()
            nodes.append((location.id, location.kind, parent))
            stack.extend((child, location.id) for child in reversed(location.children))
        return Topology.of([*nodes, *more])

    def ancestors(self, resource: str) -> Iterator[str]:
        """Its parent, grandparent... (not itself)."""
        current = self.parents.get(resource)
        while current is not None:
            yield current
            current = self.parents.get(current)

    def below(self, resource: str) -> Iterator[str]:
        """Everything under it (not itself), without recursion."""
        stack = list(self.children.get(resource, ()))
        while stack:
            node = stack.pop()
            yield node
            stack.extend(self.children.get(node, ()))

    def is_leaf(self, resource: str) -> bool:
        return not self.children.get(resource)


class Dedications:
    """The dedications of one cloud, changed only through the rules below."""

    def __init__(
        self,
        tenancy: Tenancy,
        topology: Topology,
        accounts_on: Callable[[str], Iterable[str]] = lambda host: (),
        clock: Clock = no_clock,
    ) -> None:
        self.tenancy = tenancy
        self.topology = topology
        self.accounts_on = accounts_on  # the accounts whose VMs run on a host
        self.clock = clock
        self.items: dict[str, Dedication] = {}
        self.events: list[Event] = []

    # -- who owns what ----------------------------------------------------------------

    def owner(self, resource: str) -> tuple[Dedication | None, bool]:
        """The dedication in force on a resource (its own, else its nearest dedicated
        ancestor's), and whether it is inherited."""
        own = self.items.get(resource)
        if own is not None:
            return own, False
        for ancestor in self.topology.ancestors(resource):
            found = self.items.get(ancestor)
            if found is not None:
                return found, True
        return None, False

    def covers(self, owner: Owner, account: str) -> bool:
        """`covers` for an account of this tenancy (its domain chain read here)."""
        domain = self.tenancy.domain_of(account)
        chain = () if domain is None else tuple(self.tenancy.chain(domain))
        return covers(owner, account, chain)

    def _inside(self, inner: Owner, outer: Owner) -> bool:
        """Whether a dedication to `inner` may sit below one to `outer` (or be replaced by
        it): the same account, or a domain within the outer domain's subtree."""
        if outer.account is not None:
            return inner.account == outer.account
        return self.tenancy.within(inner.domain, outer.domain)

    # -- the operations ---------------------------------------------------------------

    def dedicate(
        self,
        principal: Principal,
        resource: str,
        domain: str,
        account: str | None = None,
        implicit: bool = False,
    ) -> Dedication:
        self._root(principal, "dedicate")
        owner = self._owner(domain, account, implicit)
        self._resource(resource)
        if implicit and (
            account is None
            or not self.topology.is_leaf(resource)
            or self.topology.kinds[resource] == "pool"
        ):
            # What a plan makes: an empty host, for the account whose VM took it.
            raise DedicationError(
                INVALID_PARAMETER,
                f"an implicit dedication gives a host to an account; {self._name(resource)}"
                + ("" if account else " names no account"),
            )
        if resource in self.items:
            found = self.items[resource]
            raise DedicationError(
                ALREADY_DEDICATED,
                f"{self._name(resource)} is already dedicated to {found.owner}; release it "
                "or update the dedication",
            )
        self._check(resource, owner)
        dedication = Dedication(resource, self.topology.kinds[resource], owner)
        self._absorb(principal, resource, owner)
        self.items[resource] = dedication
        self._event(principal, "dedication-created", resource, dedication.to_dict())
        return dedication

    def release(self, principal: Principal, resource: str) -> Dedication:
        self._root(principal, "release")
        self._resource(resource)
        found = self.items.get(resource)
        if found is None:
            inherited, _ = self.owner(resource)
            hint = (
                f" (it is covered by {inherited.resource}'s dedication to {inherited.owner})"
                if inherited is not None
                else ""
            )
            raise DedicationError(NOT_DEDICATED, f"{self._name(resource)} is not dedicated{hint}")
        del self.items[resource]
        self._event(principal, "dedication-released", resource, found.to_dict())
        return found

    def update(
        self, principal: Principal, resource: str, domain: str, account: str | None = None
    ) -> Dedication:
        self._root(principal, "update")
        owner = self._owner(domain, account, False)
        self._resource(resource)
        found = self.items.get(resource)
        if found is None:
            raise DedicationError(NOT_DEDICATED, f"{self._name(resource)} is not dedicated")
        # Judged as if the old dedication were gone, and put back if refused.
        del self.items[resource]
        try:
            self._check(resource, owner)
        except DedicationError:
            self.items[resource] = found
            raise
        updated = replace(found, owner=owner)
        # An update is a release and a dedication in one step: what the dedication would
        # absorb, it absorbs (else an account's dedication could sit above its own).
        self._absorb(principal, resource, owner)
        self.items[resource] = updated
        self._event(
            principal,
            "dedication-updated",
            resource,
            {**updated.to_dict(), "was": found.to_dict()},
        )
        return updated

    def list(
        self,
        principal: Principal = ROOT_ADMIN,
        kind: str | None = None,
        domain: str | None = None,
        account: str | None = None,
    ) -> list[Dedication]:
        """The dedications the principal may see (a root admin all; others those that
        apply to their own domain chain and account), filtered. An account is named
        inside its domain, as CloudStack's listDedicated* commands ask ("Please specify
        the domain id of the account"): an account without its domain, or with another
        domain, is refused rather than read as a filter that matches nothing."""
        if kind is not None and kind not in set(self.topology.kinds.values()):
            known = ", ".join(sorted(set(self.topology.kinds.values())))
            raise DedicationError(
                INVALID_PARAMETER, f"no resources of kind {kind!r}; the kinds are {known}", "kind"
            )
        if domain is not None and not self.tenancy.has_domain(domain):
            known = ", ".join(sorted(self.tenancy.parents))
            raise DedicationError(
                INVALID_PARAMETER, f"no domain named {domain!r}; the domains are {known}", "domain"
            )
        if account is not None:
            home = self.tenancy.domain_of(account)
            if domain is None:
                raise DedicationError(
                    INVALID_PARAMETER,
                    f"give the domain of account {account!r} too: an account is named inside "
                    f"its domain ({account} is in {home})"
                    if home
                    else f"no account named {account!r}",
                    "account",
                    conflict=home is not None,
                )
            if home != domain:
                where = f"it is in domain {home}" if home else "there is no such account"
                raise DedicationError(
                    INVALID_PARAMETER,
                    f"account {account!r} is not in domain {domain}: {where}",
                    "account",
                    conflict=home is not None,
                )
        seen = [d for d in self.items.values() if self._visible(principal, d)]
        return [
            d
            for d in seen
            if (kind is None or d.kind == kind)
            and (domain is None or d.owner.domain == domain)
            and (account is None or d.owner.account == account)
        ]

    def _absorb(self, principal: Principal, resource: str, owner: Owner) -> None:
        """As CloudStack does (the seed is silent): a dedication below to the very same
        owner is absorbed into the wider one, after every check has passed; a host the
        account took by implicit dedication too (the same owner, however it got it)."""
        same = (owner.domain, owner.account)
        absorbed = [
            node
            for node in self.topology.below(resource)
            if (below := self.items.get(node)) is not None
            and (below.owner.domain, below.owner.account) == same
        ]
        for node in absorbed:
            self._event(principal, "dedication-released", node, self.items.pop(node).to_dict())

    # -- the checks -------------------------------------------------------------------

    def _visible(self, principal: Principal, dedication: Dedication) -> bool:
        """What applies to the principal: a domain dedication in its domain's chain; an
        account dedication of its own account (a user), or of an account of its own
        domain (that domain's admin)."""
        if principal.role == "root-admin":
            return True
        owner = dedication.owner
        if owner.account is not None:
            if principal.role == "user":
                return principal.account == owner.account
            return principal.domain == owner.domain
        return principal.domain is not None and self.tenancy.within(principal.domain, owner.domain)

    @staticmethod
    def _root(principal: Principal, what: str) -> None:
        require_root(principal, f"{what} resources")

    def _owner(self, domain: str, account: str | None, implicit: bool) -> Owner:
        if not self.tenancy.has_domain(domain):
            raise DedicationError(INVALID_PARAMETER, f"no domain named {domain!r}")
        if account is not None:
            home = self.tenancy.domain_of(account)
            if home is None:
                raise DedicationError(INVALID_PARAMETER, f"no account named {account!r}")
            if home != domain:
                raise DedicationError(
                    INVALID_PARAMETER,
                    f"account {account} is in domain {home}, not {domain}; give its own domain",
                )
        return Owner(domain, account, implicit)

    def _resource(self, resource: str) -> None:
        if resource not in self.topology.kinds:
            raise DedicationError(INVALID_PARAMETER, f"no zone, pod, cluster or host {resource!r}")

    def _name(self, resource: str) -> str:
        return f"{self.topology.kinds.get(resource, 'resource')} {resource}"

    def _check(self, resource: str, owner: Owner) -> None:
        for ancestor in self.topology.ancestors(resource):
            found = self.items.get(ancestor)
            if found is None:
                continue
            if found.owner.account is not None:
                raise DedicationError(
                    ANCESTOR_DEDICATED,
                    f"{self._name(ancestor)} is dedicated to {found.owner}; nothing below an "
                    "account's dedication can be dedicated again",
                )
            if not self._inside(owner, found.owner):
                raise DedicationError(
                    ANCESTOR_DEDICATED,
                    f"{self._name(ancestor)} is dedicated to {found.owner}; below it only "
                    f"domain {found.owner.domain} or its subdomains can be given resources, "
                    f"not {owner}",
                )
            break  # the nearest dedicated ancestor decides
        for node in self.topology.below(resource):
            found = self.items.get(node)
            if found is not None and not self._inside(found.owner, owner):
                raise DedicationError(
                    DESCENDANT_CONFLICT,
                    f"{self._name(node)} below it is dedicated to {found.owner}, which is not "
                    f"within {owner}; release or update it first",
                )
        hosts = (
            [resource]
            if self.topology.is_leaf(resource)
            else [n for n in self.topology.below(resource) if self.topology.is_leaf(n)]
        )
        for host in hosts:
            foreign = sorted(a for a in set(self.accounts_on(host)) if not self.covers(owner, a))
            if foreign:
                raise DedicationError(
                    HOST_HAS_FOREIGN_VMS,
                    f"host {host} runs VMs of account{'s' if len(foreign) > 1 else ''} "
                    f"{', '.join(foreign)}, which {owner} does not cover",
                )

    def _event(
        self, principal: Principal, kind: str, subject: str, details: Mapping[str, Any]
    ) -> None:
        self.events.append(Event(self.clock(), str(principal), kind, subject, details))
