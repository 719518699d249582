"""The spec's CloudStack sections (seed 004): `tenancy`, `offerings`, `dedications`,
and a workload's `account` and `offering`.

The dedications are applied in order through the rules of model/dedications.py, as the
root admin, exactly as a script or the service would apply them: an illegal one fails the
file with the rule's message at its line and column. The dedication in force then rides
on each location (nearest wins), and each workload with an account carries a `Tenant`
request (policy/dedication.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from placed.model import Location, Running, Settings, Workload
from placed.model.dedications import Dedication, DedicationError, Dedications, Event, Topology
from placed.model.storage import Storage, StoragePool
from placed.model.tenancy import ROOT, ROOT_ADMIN, Tenancy
from placed.policy.dedication import ZONE, Tenant
from placed.spec.collect import Collector
from placed.spec.errors import quoted
from placed.spec.schema import DomainSpec, OfferingSpec, SpecDocument, WorkloadSpec
from placed.spec.source import Path


def uses_tenancy(document: SpecDocument) -> bool:
    return bool(
        document.tenancy
        or document.offerings
        or document.dedications
        or document.storage
        or any(w.account or w.offering for w in document.workloads)
    )


def tenancy(document: SpecDocument, out: Collector, known: Tenancy | None = None) -> Tenancy:
    """The document's domain tree and accounts. `known`: the tree the document adds to (a
    stored world's, for the service's apply): a domain may be named again under its own
    parent and an account again in its own domain, as merging them changes nothing."""
    parents: dict[str, str | None] = dict(known.parents) if known is not None else {ROOT: None}
    accounts: dict[str, str] = dict(known.accounts) if known is not None else {}
    section = document.tenancy
    if section is None:
        return known if known is not None else Tenancy(parents, accounts)
    declared: set[str] = set()  # the domains this document names
    listed: set[str] = set()  # the accounts it names

    def add_accounts(names: list[str], domain: str, path: Path) -> None:
        for i, account in enumerate(names):
            if account in listed or accounts.get(account, domain) != domain:
                out.add(
                    f"account {account} is already in domain {accounts[account]}; an account "
                    "belongs to exactly one domain",
                    (*path, i),
                )
            else:
                accounts[account] = domain
                listed.add(account)

    add_accounts(section.accounts, ROOT, ("tenancy", "accounts"))
    # Breadth first, without recursion: a domain tree may be deep.
    pending: list[tuple[str, str, DomainSpec, Path]] = [
        (name, ROOT, child, ("tenancy", "domains", name)) for name, child in section.domains.items()
    ]
    while pending:
        name, parent, spec, path = pending.pop(0)
        if name in declared or name == ROOT:
            out.add(
                f"domain {name} appears twice in the tree; domain names are unique", path, key=True
            )
            continue
        if name in parents and parents[name] != parent:
            out.add(
                f"domain {name} is already under {parents[name]}, not {parent}; a domain has "
                "one parent",
                path,
                key=True,
            )
            continue
        declared.add(name)
        parents[name] = parent
        add_accounts(spec.accounts, name, (*path, "accounts"))
        pending.extend(
            (child, name, body, (*path, "children", child)) for child, body in spec.children.items()
        )
    return Tenancy(parents, accounts)


def apply_dedications(
    document: SpecDocument,
    roots: tuple[Location, ...],
    tenants: Tenancy,
    workloads: Sequence[Workload],
    running: Sequence[Running],
    out: Collector,
) -> tuple[tuple[Location, ...], tuple[Dedication, ...], tuple[Event, ...], Storage | None]:
    """The spec's dedications applied through the rules, the locations carrying the
    dedication in force, and the storage pools with theirs."""
    accounts_of = {w.name: t.account for w in workloads if (t := w.request(Tenant)) is not None}
    on_host: dict[str, list[str]] = {}
    for unit in running:
        account = accounts_of.get(unit.workload)
        if account is not None:
            on_host.setdefault(unit.target, []).append(account)
    found = pools(document, roots, out)
    topology = Topology.of_roots(roots, [(p.id, "pool", p.at) for p in found])
    now = document.settings.now
    rules = Dedications(tenants, topology, lambda host: on_host.get(host, ()), lambda: now)
    for i, entry in enumerate(document.dedications):
        try:
            rules.dedicate(ROOT_ADMIN, entry.resource, entry.domain, entry.account, entry.implicit)
        except DedicationError as error:
            out.add(f"{error.kind}: {error.message}", ("dedications", i))
    items = rules.items
    located = {k: v for k, v in items.items() if topology.kinds.get(k) != "pool"}
    return (
        _with_dedications(roots, located) if located else roots,
        tuple(items.values()),
        tuple(rules.events),
        storage(found, rules) if document.storage else None,
    )


def pools(document: SpecDocument, roots: tuple[Location, ...], out: Collector) -> list[StoragePool]:
    """The spec's storage pools, each at a zone or cluster of the inventory."""
    kinds = {node.id: node.kind for root in roots for node in root.walk()}
    found: list[StoragePool] = []
    seen: set[str] = set()
    for i, pool in enumerate(document.storage):
        where: Path = ("storage", i)
        if pool.id in kinds or pool.id in seen:
            out.add(f"{quoted(pool.id)} is already the id of a location or pool", (*where, "id"))
            continue
        if kinds.get(pool.at) != pool.scope:
            what = f"a {kinds[pool.at]}" if pool.at in kinds else "not in the inventory"
            out.add(
                f"a {pool.scope}-wide pool is at a {pool.scope}; {quoted(pool.at)} is {what}",
                (*where, "at"),
            )
            continue
        seen.add(pool.id)
        found.append(StoragePool(pool.id, pool.scope, pool.at, pool.capacity))
    return found


def storage(found: list[StoragePool], rules: Dedications) -> Storage:
    """The pools, the hosts each reaches (every target under its zone or cluster), and the
    dedication in force on each."""
    reach = tuple(
        frozenset(
            n
            for n in rules.topology.below(p.at)
            if rules.topology.is_leaf(n) and rules.topology.kinds.get(n) != "pool"
        )
        for p in found
    )
    in_force = [rules.owner(p.id)[0] for p in found]
    owners = tuple(d.owner if d is not None else None for d in in_force)
    private = tuple(d is not None and d.kind == ZONE for d in in_force)
    return Storage(tuple(found), reach, owners, private)


def with_storage(
    workloads: list[Workload],
    found: Storage | None,
    offerings: dict[str, float],
    dedications: Sequence[Dedication] = (),
) -> list[Workload]:
    """Each tenant's VMs with their disk and the pools it may go to, and the zones
    dedicated (a private zone admits or refuses a VM before any host is looked at)."""
    zones = tuple((d.resource, d.owner) for d in dedications if d.kind == ZONE)
    if found is None and not zones:
        return workloads
    result = []
    for workload in workloads:
        tenant = workload.request(Tenant)
        if tenant is None:
            result.append(workload)
            continue
        request = replace(tenant, zones=zones)
        if found is not None:
            disk = offerings.get(tenant.offering, 0.0)
            request = replace(request, disk=disk, storage=found)
        requests = tuple(request if r is tenant else r for r in workload.requests)
        result.append(replace(workload, requests=requests))
    return result


def _with_dedications(
    roots: tuple[Location, ...], items: dict[str, Dedication]
) -> tuple[Location, ...]:
    """The tree again, each dedicated location carrying its dedication (post-order,
    without recursion)."""
    built: dict[int, Location] = {}
    stack: list[tuple[Location, bool]] = [(root, False) for root in roots]
    while stack:
        location, ready = stack.pop()
        if not ready:
            stack.append((location, True))
            stack.extend((child, False) for child in location.children)
            continue
        children = tuple(built[id(child)] for child in location.children)
        built[id(location)] = replace(
            location, children=children, dedication=items.get(location.id)
        )
    return tuple(built[id(root)] for root in roots)


def tenant_workloads(
    document: SpecDocument,
    workloads: list[Workload],
    tenants: Tenancy,
    settings: Settings,
    out: Collector,
) -> list[Workload]:
    """Each workload with an account: its Tenant request, and its offering's resources."""
    offerings: dict[str, OfferingSpec] = {}
    for i, offering in enumerate(document.offerings):
        if offering.name in offerings:
            out.add(f"duplicate offering name {quoted(offering.name)}", ("offerings", i, "name"))
        offerings.setdefault(offering.name, offering)
    result = []
    for i, (spec, workload) in enumerate(zip(document.workloads, workloads, strict=True)):
        result.append(
            tenant_workload(spec, workload, tenants, offerings, settings, ("workloads", i), out)
        )
    return result


def tenant_workload(
    spec: WorkloadSpec,
    workload: Workload,
    tenants: Tenancy,
    offerings: dict[str, OfferingSpec],
    settings: Settings,
    path: Path,
    out: Collector,
) -> Workload:
    if spec.account is None and spec.offering is None:
        return workload
    if spec.account is None:
        out.add(
            "an offering is for a tenant's VMs: give the workload an account", (*path, "offering")
        )
        return workload
    domain = tenants.domain_of(spec.account)
    if domain is None:
        known = ", ".join(sorted(tenants.accounts)[:10]) or "none (add a tenancy: section)"
        out.add(
            f"no account {quoted(spec.account)} in the tenancy (accounts: {known})",
            (*path, "account"),
        )
        return workload
    offering = offerings.get(spec.offering) if spec.offering is not None else None
    if spec.offering is not None and offering is None:
        known = ", ".join(sorted(offerings)) or "none (add an offerings: section)"
        out.add(f"no offering {quoted(spec.offering)} (offerings: {known})", (*path, "offering"))
        return workload
    if workload.mode != "allocation":
        out.add(
            f"a tenant's VMs are allocation units; this workload is in {workload.mode} mode",
            (*path, "account"),
        )
    resources = dict(workload.resources)
    dedicated, implicit = False, "strict"
    if offering is not None:
        if resources:
            out.add(
                "the offering says what each VM takes; drop resources (or the offering)",
                (*path, "resources"),
            )
        resources = {
            name: amount
            for name, amount in (("cpu", offering.cpu), ("memory", offering.memory))
            if amount
        }
        dedicated, implicit = offering.dedicated, offering.implicit
    request = Tenant(
        account=spec.account,
        domain=domain,
        chain=tuple(tenants.chain(domain)),
        dedicated=dedicated,
        implicit="preferred" if implicit == "preferred" else "strict",
        implicit_enabled=settings.implicit_dedication,
        offering=spec.offering or "",
        time=settings.now,
    )
    return replace(workload, resources=resources, requests=(*workload.requests, request))
