"""The dedication filters keep masks that depend on the owners alone (the hosts an
account's dedications cover, those nobody owns) and whether any zone is dedicated in
their plan state, until an owner or a zone column changes. A running cloud changes both
on the state it keeps: after every operation, the filters' verdicts on that state (its
kept masks asked before the operation) must be those of a fresh copy of it, which keeps
nothing yet."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from placed.engine.cloud import Cloud
from placed.model.dedications import DedicationError
from placed.model.tenancy import ROOT_ADMIN
from placed.policy.dedication import (
    DedicationFilter,
    DedicationState,
    Tenant,
    ZoneFilter,
    zone_columns,
)
from placed.spec import load_spec_text
from tests.test_dedication_properties import operations, spec_text, worlds


def verdicts(cloud: Cloud, tenants: list[Tenant], state: Any) -> list[list[bool]]:
    dedication = DedicationFilter(tuple(cloud.spec.inventory.targets))
    zones = ZoneFilter()
    found = []
    for tenant in tenants:
        found.append(dedication.keep(tenant, state).tolist())
        found.append(zones.keep(tenant, state).tolist())
    return found


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_kept_dedication_masks_follow_a_running_clouds_changes(data: st.DataObject) -> None:
    world = data.draw(worlds())
    cloud = Cloud(load_spec_text(spec_text(world), "random.yaml"))
    tenants = [
        cloud._tenant(account, cloud._offering(offering))
        for account in world["accounts"]
        for offering in ("ded", "shared")
    ]
    for operation in data.draw(operations(world)):
        verdicts(cloud, tenants, cloud.state)  # the state keeps its masks from here
        kind = operation[0]
        try:
            if kind in ("dedicate", "update"):
                _, resource, (domain, account) = operation
                if account is not None:
                    domain = world["accounts"][account]
                getattr(cloud, kind)(ROOT_ADMIN, resource, domain, account)
            elif kind == "release":
                cloud.release(ROOT_ADMIN, operation[1])
            else:
                _, account, dedicated = operation
                cloud.deploy(ROOT_ADMIN, account, "ded" if dedicated else "shared")
        except DedicationError:
            pass
        state = cloud.state
        assert verdicts(cloud, tenants, state) == verdicts(cloud, tenants, state.fork()), operation
        kept = state.family_state(DedicationState)
        owner, in_force = zone_columns(state, ())
        assert kept.zone_flags(state, ()) == (bool(np.any(owner)), bool(np.any(in_force)))
