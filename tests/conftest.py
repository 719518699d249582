from __future__ import annotations

import os
import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from sqlalchemy import create_engine
from sqlalchemy.engine import make_url
from sqlalchemy.exc import OperationalError

from placed.model import Spec
from placed.spec import load_specs

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"


@pytest.fixture(scope="session")
def ironic_specs() -> dict[str, Spec]:
    return {spec.name: spec for spec in load_specs(EXAMPLES / "ironic-affinity.yaml")}


# The service's store runs on SQLite and on the PostgreSQL at 127.0.0.1:5432. Outside CI
# a PostgreSQL test may skip when that server is down; with CI=true it must fail, both
# here (the fixture) and for any other skip of a test marked `postgres` (the hook).
POSTGRES_URL = os.environ.get(
    "PLACED_TEST_POSTGRES_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test"
)


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() in ("true", "1", "yes")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    outcome = yield
    report = outcome.get_result()  # type: ignore[attr-defined]
    if report.skipped and in_ci() and item.get_closest_marker("postgres") is not None:
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else report.longrepr
        report.outcome = "failed"
        report.longrepr = f"CI=true: a PostgreSQL test must run, and this one skipped: {reason}"


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def database(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """The URL of a fresh, empty database: a SQLite file, or a PostgreSQL database of
    its own (a random name, dropped afterwards, so runs repeat and never share)."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'placed.db'}"
        return
    with fresh_postgres() as url:
        yield url


@pytest.fixture
def postgres_database() -> Iterator[str]:
    """A fresh PostgreSQL database, for what only PostgreSQL has (mark the test
    `postgres`, so CI fails rather than skips it)."""
    with fresh_postgres() as url:
        yield url


@contextmanager
def fresh_postgres() -> Iterator[str]:
    admin = create_engine(
        POSTGRES_URL, isolation_level="AUTOCOMMIT", connect_args={"connect_timeout": 3}
    )
    name = f"placed_test_{secrets.token_hex(6)}"
    try:
        with admin.connect() as connection:
            connection.exec_driver_sql(f'CREATE DATABASE "{name}"')
    except OperationalError as error:
        admin.dispose()
        message = f"PostgreSQL at {POSTGRES_URL} is unreachable: {str(error.orig).strip()}"
        if in_ci():
            pytest.fail(f"CI=true requires it: {message}")
        pytest.skip(message)
    try:
        yield make_url(POSTGRES_URL).set(database=name).render_as_string(hide_password=False)
    finally:
        with admin.connect() as connection:
            connection.exec_driver_sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.dispose()


@contextmanager
def another_database(database: str, tmp_path: Path, name: str = "another.db") -> Iterator[str]:
    """A new, empty database of the same kind as `database` (a SQLite file `name` in
    `tmp_path`, or a fresh PostgreSQL database)."""
    if database.startswith("sqlite"):
        yield f"sqlite:///{tmp_path / name}"
        return
    with fresh_postgres() as url:
        yield url
