"""The `distinct` section of a workload: which topology level its units spread over."""

from __future__ import annotations

import difflib

from placed.model import Mode
from placed.policy.distinct import TARGET_LEVEL, Distinct
from placed.spec.collect import Collector
from placed.spec.schema import WorkloadSpec
from placed.spec.source import Path


def request(
    spec: WorkloadSpec, mode: Mode, path: Path, out: Collector, kinds: set[str]
) -> Distinct | None:
    if spec.distinct is None:
        return None
    where = (*path, "distinct")
    if mode != "allocation":
        out.add(
            f"distinct spreads the units of an allocation workload; this one is in {mode} "
            "mode (mapping owners follow the hash and every mode already puts one unit "
            "per target)",
            where,
        )
        return None
    levels = sorted(kinds | {TARGET_LEVEL})
    if spec.distinct not in levels:
        close = difflib.get_close_matches(spec.distinct, levels, n=1, cutoff=0.6)
        hint = f"did you mean {close[0]!r}? " if close else ""
        out.add(
            f"no location in the inventory is of kind {spec.distinct!r}; {hint}"
            f"levels: {', '.join(levels)}",
            where,
        )
        return None
    return Distinct(spec.distinct)
