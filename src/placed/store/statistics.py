"""The query planner's picture of the tables, brought up to date after a change that grew
them by thousands of rows.

PostgreSQL plans each statement from statistics that autovacuum refreshes a minute or
more after a table grows. Until then, a world of 10,000 targets applied to an empty
database looks like a few hundred rows, and a batch that touches 100 of them was planned
as a scan of the whole table with a hash join: a drain's commit took 4-5 ms a statement
where the index takes 0.3 ms. SQLite plans from its indexes alone (it keeps no statistics
unless asked), so there is nothing to refresh there.
"""

from __future__ import annotations

from sqlalchemy import Connection

# The tables a large apply grows, and that the commits of claims, moves and drains join
# to by key.
GROWN = (
    "locations",
    "targets",
    "target_resources",
    "target_liveness",
    "workloads",
    "units",
    "placements",
)
GROWTH = 1000  # rows made by one change, from which the statistics are refreshed


def refresh(connection: Connection, made: int) -> None:
    """ANALYZE the tables that grow when a change made `made` rows or more (PostgreSQL;
    nothing on SQLite), in the change's own transaction: its rows are counted, and the
    commits after it are planned on them. Tens of milliseconds at 10,000 targets and
    30,000 units, once per large change."""
    if made >= GROWTH and connection.dialect.name == "postgresql":
        connection.exec_driver_sql(f"ANALYZE {', '.join(GROWN)}")
