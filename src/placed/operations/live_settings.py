"""A setting of the whole world changed as a delta on the live world (operations/replica.py):
CloudStack's implicit.dedication.enable, or the controller's heartbeat and guard
settings.

Neither moves a unit of a world where no unit waits and every unit fits where it runs:
implicit dedication off stops new implicit dedications and keeps the existing ones
(they are rows, released when their host's last VM leaves), and on, it gives hosts only
to units still to place. So the delta writes the setting, the rules' revision and its
event, and gives each tenant's request the new value (what its next units are judged
by); the heartbeat settings change no plan at all (the controller reads them at its next
sweep). A value the settings' schema refuses goes to the general path, which answers it.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from placed.engine.planner import Planner
from placed.model import Spec, Workload
from placed.model.tenancy import Tenancy
from placed.policy.dedication import Tenant
from placed.spec.schema import SettingsSpec
from placed.store import events
from placed.store.claims import Actor
from placed.store.world import Snapshot

IMPLICIT = "implicit_dedication"
# The controller's settings of the whole world, judged together (a timeout at least 3
# heartbeats long).
CONTROLLER_SETTINGS = (
    "heartbeat_interval_s",
    "heartbeat_timeout_s",
    "disruption_guard_min_targets",
)


@dataclass(frozen=True, slots=True)
class Resetting:
    """PUT /v1/settings/{key}: the value asked, and the caller as the rules read it."""

    key: str
    value: bool | float | int | str
    principal: str


@dataclass(frozen=True, slots=True)
class Reset:
    """The setting's value now (as the schema reads it) and before."""

    key: str
    value: Any
    was: Any

    @property
    def changed(self) -> bool:
        return bool(self.value != self.was)

    def answer(self, revision: int) -> dict[str, Any]:
        return {
            "key": self.key,
            "value": self.value,
            "changed": self.changed,
            "revision": revision,
            "changes": [],
            "incompatible": [],
        }

    def event(self, actor: Actor) -> events.Pending:
        return events.Pending(
            "setting.changed",
            self.key,
            actor_accessor=actor.accessor,
            actor_role=actor.role,
            request_id=actor.request_id,
            details={"key": self.key, "value": self.value, "was": self.was},
        )


def judge(spec: Spec, snapshot: Snapshot, asked: Resetting) -> Reset | None:
    """The change as the route's general path reads it, or None when only that path can
    take it (a value the schema refuses, a caller the rules do not know as root)."""
    key, value = asked.key, asked.value
    if key == IMPLICIT:
        who = (spec.tenancy or Tenancy()).principal(asked.principal)
        if not isinstance(value, bool) or who is None or who.role != "root-admin":
            return None
        return Reset(key, value, spec.settings.implicit_dedication)
    fields = SettingsSpec.model_fields
    if key not in fields or key not in CONTROLLER_SETTINGS or isinstance(value, bool | str):
        return None
    now = {k: snapshot.settings.get(k, fields[k].default) for k in CONTROLLER_SETTINGS if k != key}
    try:
        checked = SettingsSpec.model_validate({**now, key: value})
    except ValidationError:
        return None
    return Reset(key, getattr(checked, key), snapshot.settings.get(key, fields[key].default))


def stored(spec: Spec, snapshot: Snapshot, planner: Planner, reset: Reset, number: int) -> Spec:
    """The cached world once the setting is stored at revision `number`: the snapshot's
    settings and rules revision, and (implicit dedication) the world's settings and
    each tenant's request, in the planner's workloads (the explainer's too: one dict)
    and in the spec returned."""
    snapshot.settings[reset.key] = reset.value
    snapshot.rules_revision = number
    if reset.key != IMPLICIT:
        return spec
    changed: dict[str, Workload] = {}
    for name, workload in planner.workloads.items():
        tenant = workload.request(Tenant)
        if isinstance(tenant, Tenant) and tenant.implicit_enabled != reset.value:
            request = dataclasses.replace(tenant, implicit_enabled=bool(reset.value))
            changed[name] = dataclasses.replace(
                workload,
                requests=tuple(request if r is tenant else r for r in workload.requests),
            )
    planner.workloads.update(changed)
    after = dataclasses.replace(
        spec,
        settings=dataclasses.replace(spec.settings, implicit_dedication=bool(reset.value)),
        workloads=tuple(changed.get(w.name, w) for w in spec.workloads),
    )
    planner.spec = after
    return after
