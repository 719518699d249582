"""Primary storage pools (seed 004, requirement 8): zone-wide or cluster-wide, each with a
capacity, dedicable like hosts. A VM's disk goes to a pool reachable from its host (a
zone-wide pool from every host of the zone, a cluster-wide one from the cluster's)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from placed.model.dedications import Owner


@dataclass(frozen=True, slots=True)
class StoragePool:
    id: str
    scope: Literal["zone", "cluster"]
    at: str  # the zone or cluster it serves
    capacity: float  # GB


@dataclass(frozen=True, eq=False)
class Storage:
    """A spec's pools, the hosts each reaches, and the owner of each (the dedication in
    force when the spec was read). Compared by identity: requests carry it, and hashing
    every pool for each lookup would cost more than the lookup."""

    pools: tuple[StoragePool, ...]
    reach: tuple[frozenset[str], ...]  # per pool, the ids of the hosts it serves
    owners: tuple[Owner | None, ...]
    # Per pool, whether the dedication in force is its zone's (a private zone's pools
    # serve every VM of its owner, as its hosts do).
    private: tuple[bool, ...] = ()

    def index(self, pool: str) -> int | None:
        for i, found in enumerate(self.pools):
            if found.id == pool:
                return i
        return None
