"""Hypothesis strategies: random inventories and workloads built straight into the model."""

from __future__ import annotations

from hypothesis import strategies as st

from placed.model import (
    Agent,
    Inventory,
    Location,
    Mode,
    Service,
    Settings,
    Spec,
    TagRules,
    Workload,
    validate_properties,
)
from placed.model.inventory import Scope
from placed.policy.deployment import Deployment
from placed.policy.distinct import Distinct
from placed.policy.tags import Tagged

TAGS = [f"t{i}" for i in range(8)]
tag_sets = st.frozensets(st.sampled_from(TAGS), max_size=4)
NAMESPACES = ["ns1", "ns2", None]
CONSTRAINTS = [
    'purpose == "lab"',
    "cpu >= 2",
    "purpose != prod",
    "gpu == true",
    'zone in "east,west"',
    "openhorizon.kubernetesNamespace == ns1",
    "openhorizon.cpu > 1 OR purpose == lab",
    "openhorizon.service.version in [1.0.0,2.0.0)",
    "placed.rack == rack0",
]
property_maps = st.dictionaries(
    st.sampled_from(["purpose", "cpu", "gpu", "zone"]),
    st.one_of(
        st.sampled_from(["lab", "prod", "east", "west", "east,west"]),
        st.integers(0, 4),
        st.booleans(),
    ),
    max_size=3,
).map(validate_properties)
constraint_lists = st.lists(st.sampled_from(CONSTRAINTS), max_size=2).map(tuple)


@st.composite
def agents(draw: st.DrawFn) -> Agent:
    scopes: list[Scope] = ["device", "device", "cluster", "namespace"]
    scope = draw(st.sampled_from(scopes))
    namespace = None if scope == "device" else draw(st.sampled_from(NAMESPACES))
    return Agent(scope=scope, namespace=namespace, arch=draw(st.sampled_from([None, "amd64"])))


@st.composite
def services(draw: st.DrawFn) -> Service:
    return Service(
        url="svc",
        version=draw(st.sampled_from(["", "1.2.0", "2.0.0"])),
        arch=draw(st.sampled_from(["", "", "*", "amd64", "arm64"])),
        namespace=draw(st.sampled_from(NAMESPACES)),
        properties=draw(property_maps),
        constraints=draw(constraint_lists),
        privileged=draw(st.booleans()),
        runs_on=draw(st.sampled_from([("device", "cluster"), ("device",), ("cluster",)])),
    )


@st.composite
def leaves(draw: st.DrawFn, ident: str) -> Location:
    return Location(
        id=ident,
        kind="conductor",
        tags=draw(tag_sets),
        rules=TagRules(
            hard_affinity=draw(st.frozensets(st.sampled_from(TAGS), max_size=2)),
            hard_anti_affinity=draw(st.frozensets(st.sampled_from(TAGS), max_size=2)),
            soft_affinity=draw(tag_sets),
            soft_anti_affinity=draw(tag_sets),
        ),
        capacity=draw(st.one_of(st.none(), st.fixed_dictionaries({"cpu": st.integers(0, 4)}))),
        status=draw(st.sampled_from(["up", "up", "up", "down"])),
        properties=draw(property_maps),
        constraints=draw(constraint_lists),
        agent=draw(agents()),
    )


@st.composite
def inventories(draw: st.DrawFn, min_targets: int = 0, max_targets: int = 10) -> Inventory:
    count = draw(st.integers(min_targets, max_targets))
    targets = [draw(leaves(f"c{i}")) for i in range(count)]
    # Some targets sit in a rack that adds a tag and a rule, to exercise inheritance.
    racks = draw(st.integers(0, 2))
    roots: list[Location] = []
    for r in range(racks):
        members = tuple(targets[r :: racks + 1])
        if members:
            roots.append(
                Location(
                    id=f"rack{r}",
                    kind="rack",
                    tags=draw(tag_sets),
                    rules=TagRules(
                        hard_anti_affinity=draw(st.frozensets(st.sampled_from(TAGS), max_size=1))
                    ),
                    children=members,
                )
            )
    placed_ids = {leaf.id for root in roots for leaf in root.children}
    roots.extend(t for t in targets if t.id not in placed_ids)
    # Sometimes the racks sit in a zone, so that `distinct` has a level above the rack
    # that not every target has.
    if len(roots) > 1 and draw(st.booleans()):
        roots = [Location(id="zone0", kind="zone", children=tuple(roots[:2])), *roots[2:]]
    return Inventory.from_roots(tuple(roots))


@st.composite
def workloads(draw: st.DrawFn, name: str, modes: tuple[Mode, ...]) -> Workload:
    mode = draw(st.sampled_from(modes))
    resources = (
        {}
        if mode == "mapping"
        else draw(st.one_of(st.just({}), st.fixed_dictionaries({"cpu": st.integers(0, 2)})))
    )
    pattern = draw(st.booleans())
    found = tuple(draw(st.lists(services(), max_size=2 if pattern else 1)))
    distinct = (
        draw(st.sampled_from([None, None, "rack", "zone", "conductor", "target"]))
        if mode == "allocation"
        else None
    )
    # Bounded mapping needs more units than targets before a cap binds.
    max_load = draw(st.sampled_from([None, 1.0, 1.25, 1.5])) if mode == "mapping" else None
    requests: list[object] = [
        Tagged(draw(st.frozensets(st.sampled_from(TAGS), max_size=5))),
        Deployment(
            properties=draw(property_maps),
            constraints=draw(constraint_lists),
            services=found,
            pattern=pattern,
            cluster_namespace=draw(st.sampled_from(NAMESPACES)),
        ),
    ]
    if distinct:
        requests.append(Distinct(distinct))
    return Workload(
        name=name,
        units=draw(st.integers(1, 12 if max_load is not None else 4)),
        mode=mode,
        resources=resources,
        max_load=max_load,
        requests=tuple(requests),
    )


@st.composite
def specs(
    draw: st.DrawFn,
    modes: tuple[Mode, ...] = ("allocation", "mapping", "every"),
    min_targets: int = 0,
) -> Spec:
    inventory = draw(inventories(min_targets=min_targets))
    count = draw(st.integers(1, 5))
    loads = tuple(draw(workloads(f"w{i}", modes)) for i in range(count))
    return Spec(inventory, loads, Settings())
