"""A setting of the whole world changed (PUT /v1/settings/{key}): implicit dedication
(CloudStack's implicit.dedication.enable) and the controller's heartbeat and guard
settings. A document's settings are not here: each governs only its own document's
workloads, and is set by applying that document."""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from placed.model.dedications import DedicationError
from placed.operations import cloudstack, placing
from placed.operations.errors import Invalid, NotFound, Where
from placed.operations.live_settings import CONTROLLER_SETTINGS, Resetting
from placed.operations.replica import ReplicaWorld
from placed.operations.store import Store
from placed.spec.schema import SettingsSpec
from placed.store import world
from placed.store.claims import Actor, Extra
from placed.store.world import Snapshot

# The settings PUT /v1/settings/{key} changes, and what each is: the whole world's, the
# root-admin's. A document's settings (world.DOCUMENT_SETTINGS) are not here: each
# governs only its own document's workloads, and is set by applying that document.
SETTINGS = {
    "implicit_dedication": "CloudStack's implicit.dedication.enable: a dedicated request "
    "that finds no dedicated host takes an empty, undedicated one for its account.",
    **{key: str(SettingsSpec.model_fields[key].description) for key in CONTROLLER_SETTINGS},
}


def put_setting(
    engine: Store,
    key: str,
    value: bool | float | str,
    principal: str,
    actor: Actor,
    report: placing.Reporter = placing.silent,
    replica: ReplicaWorld | None = None,
) -> dict[str, Any]:
    """Change one setting of the whole world. With `replica`, a delta on its live world
    when it can be one (operations/live_settings.py)."""
    if key in world.DOCUMENT_SETTINGS:
        raise Invalid(
            f"{key} is a document's setting, not the world's: it governs only the workloads "
            "of the document that names it; set it in that document's settings: and apply "
            f"the document. The world's settings are {', '.join(SETTINGS)}",
            "document-setting",
            [Where(f"{key} is a document's setting", parameter="path.key")],
        )
    if key not in SETTINGS:
        raise NotFound(f"no setting {key!r}; the settings are {', '.join(SETTINGS)}")
    if key == "implicit_dedication" and not isinstance(value, bool):
        raise _bad_value(key, "must be true or false")
    if replica is not None:
        fast = replica.reset(engine, Resetting(key, value, principal), actor, report)
        if fast is not None:
            return fast
    if key != "implicit_dedication":
        return _put_world_setting(engine, key, value, actor, report)
    enabled = bool(value)  # checked above: true or false

    def prepare(snapshot: Snapshot) -> placing.Prepared:
        cloud = cloudstack.cloud_of(snapshot)
        who = cloudstack.principal_of(cloud, principal)
        was = cloud.implicit_enabled
        try:
            cloud.set_implicit(who, enabled)
        except DedicationError as error:
            raise cloudstack.problem(error) from None
        after = snapshot.copy()
        if was != value:
            after.settings[key] = value
        prepared = placing.plan(snapshot, after)
        if was != value:
            prepared.extra.append(
                Extra("setting.changed", key, details={"key": key, "value": value, "was": was})
            )
        prepared.data["changed"] = was != value
        return prepared

    committed = placing.transact(engine, prepare, actor, report=report)
    return {
        "key": key,
        "value": value,
        "changed": committed.prepared.data["changed"],
        "revision": committed.revision,
        "changes": placing.moves_document(committed.prepared.moves),
        "incompatible": committed.prepared.data.get("incompatible", []),
    }


def _bad_value(key: str, detail: str) -> Invalid:
    return Invalid(f"{key}: {detail}", where=[Where(detail, pointer="/value")])


def _put_world_setting(
    engine: Store,
    key: str,
    value: bool | float | str,
    actor: Actor,
    report: placing.Reporter = placing.silent,
) -> dict[str, Any]:
    """A heartbeat or guard setting: checked with the others as a spec's `settings:` is
    (a timeout at least 3 heartbeats long), stored in the same transaction as a plan of
    the world (which it leaves as it was: the controller reads it at its next sweep)."""
    if isinstance(value, bool | str):
        raise _bad_value(key, "must be a number")

    def prepare(snapshot: Snapshot) -> placing.Prepared:
        fields = SettingsSpec.model_fields
        now = {k: snapshot.settings.get(k, fields[k].default) for k in SETTINGS if k != key}
        try:
            checked = SettingsSpec.model_validate({**now, key: value})
        except ValidationError as error:
            raise _bad_value(key, "; ".join(e["msg"] for e in error.errors())) from None
        was = snapshot.settings.get(key, fields[key].default)
        wanted = getattr(checked, key)
        after = snapshot.copy()
        if was != wanted:
            after.settings[key] = wanted
        prepared = placing.plan(snapshot, after)
        if was != wanted:
            prepared.extra.append(
                Extra("setting.changed", key, details={"key": key, "value": wanted, "was": was})
            )
        prepared.data.update(changed=was != wanted, value=wanted)
        return prepared

    committed = placing.transact(engine, prepare, actor, report=report)
    return {
        "key": key,
        "value": committed.prepared.data["value"],
        "changed": committed.prepared.data["changed"],
        "revision": committed.revision,
        "changes": placing.moves_document(committed.prepared.moves),
        "incompatible": committed.prepared.data.get("incompatible", []),
    }
