"""`placed db upgrade` and `placed db current` as a user meets them, and the rule that
PostgreSQL tests never skip under CI=true."""

from __future__ import annotations

import os
import re
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from placed.cli.main import app
from placed.store import tokens
from placed.store.database import make_engine, reading

ROOT = Path(__file__).resolve().parent.parent
TOKEN = re.compile(r"^plc_[0-9a-f]{16}_[A-Za-z0-9_-]+$", re.M)


def test_upgrade_prints_the_root_token_once(database: str) -> None:
    runner = CliRunner()
    first = runner.invoke(app, ["db", "upgrade", "--database", database])
    assert first.exit_code == 0, first.output
    shown = TOKEN.findall(first.stdout)
    assert len(shown) == 1
    assert "shown only this once" in first.stdout
    second = runner.invoke(app, ["db", "upgrade", "--database", database])
    assert second.exit_code == 0, second.output
    assert not TOKEN.findall(second.stdout) and "plc_" not in second.stdout
    assert "at head" in second.stdout
    engine = make_engine(database)
    try:
        with reading(engine) as session:
            row = tokens.authenticate(session, shown[0])
            assert row is not None and row.role == "root-admin"
    finally:
        engine.dispose()
    done = runner.invoke(app, ["db", "current", "--database", database])
    assert (done.exit_code, done.stdout.strip()) == (0, "0007 (head)")


def test_the_default_database_is_placed_db_here_or_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("PLACED_DATABASE_URL", raising=False)
    runner = CliRunner()
    done = runner.invoke(app, ["db", "current"])
    assert done.exit_code == 0 and done.stdout.startswith("none (empty database")
    assert not (tmp_path / "placed.db").exists()  # asking creates nothing
    assert runner.invoke(app, ["db", "upgrade"]).exit_code == 0
    assert (tmp_path / "placed.db").exists()
    monkeypatch.setenv("PLACED_DATABASE_URL", f"sqlite:///{tmp_path / 'other.db'}")
    done = runner.invoke(app, ["db", "upgrade"])
    assert done.exit_code == 0 and "other.db" in done.stdout and TOKEN.search(done.stdout)


@pytest.mark.parametrize(
    ("url", "message", "commands"),
    [
        ("nonsense", "'nonsense' is not a database URL", ("upgrade", "current")),
        ("mysql://u@h/db", "mysql: unsupported database", ("upgrade", "current")),
        (
            "postgresql+psycopg://postgres:hunter2@127.0.0.1:1/x",
            "connection",
            ("upgrade", "current"),
        ),
        # `current` of a file that does not exist is "none", wherever it would be.
        ("sqlite:////no/such/directory/x.db", "unable to open database file", ("upgrade",)),
    ],
)
def test_a_database_that_cannot_be_used_is_a_clear_error(
    url: str, message: str, commands: tuple[str, ...]
) -> None:
    for command in commands:
        done = CliRunner().invoke(app, ["db", command, "--database", url])
        assert done.exit_code == 2, done.output
        assert done.exception is None or isinstance(done.exception, SystemExit)
        assert done.stderr.startswith("error: ") and message in done.stderr, done.stderr
        assert "Traceback" not in done.output and "hunter2" not in done.output


def test_a_file_that_is_no_database_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "notes.db").write_text("not a database\n")
    done = CliRunner().invoke(
        app, ["db", "upgrade", "--database", f"sqlite:///{tmp_path}/notes.db"]
    )
    assert done.exit_code == 2 and "file is not a database" in done.stderr


def test_a_schema_from_a_newer_placed_is_a_clear_error(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/placed.db"
    assert CliRunner().invoke(app, ["db", "upgrade", "--database", url]).exit_code == 0
    with sqlite3.connect(tmp_path / "placed.db") as connection:
        connection.execute("UPDATE alembic_version SET version_num = 'ffff'")
    for command in ("upgrade", "current"):
        done = CliRunner().invoke(app, ["db", command, "--database", url])
        assert done.exit_code == 2, done.output
        assert "at revision ffff, which this placed does not know" in done.stderr


def _pytest(args: list[str], cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args],
        cwd=cwd,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )


def test_under_ci_an_unreachable_postgresql_fails_instead_of_skipping() -> None:
    test = "tests/test_store.py::test_an_empty_database_has_no_revision[postgresql]"
    down = {"PLACED_TEST_POSTGRES_URL": "postgresql+psycopg://postgres@127.0.0.1:1/test"}
    outside = _pytest([test], ROOT, CI="", **down)
    assert outside.returncode == 0 and "1 skipped" in outside.stdout, outside.stdout
    inside = _pytest([test], ROOT, CI="true", **down)
    assert inside.returncode == 1 and "1 failed" in inside.stdout, inside.stdout
    assert "CI=true requires it" in inside.stdout


def test_under_ci_any_skip_of_a_postgres_test_fails(tmp_path: Path) -> None:
    # The hook, apart from the fixture: a postgres-marked test that skips for any reason.
    (tmp_path / "conftest.py").write_text((ROOT / "tests" / "conftest.py").read_text())
    (tmp_path / "test_skip.py").write_text(
        "import pytest\n\n@pytest.mark.postgres\ndef test_x():\n    pytest.skip('no server')\n"
    )
    args = ["-o", "markers=postgres: x", "test_skip.py"]
    assert _pytest(args, tmp_path, CI="").returncode == 0
    inside = _pytest(args, tmp_path, CI="true")
    assert inside.returncode == 1 and "a PostgreSQL test must run" in inside.stdout, inside.stdout


def test_the_cli_names_the_stores_environment_variable_and_loads_no_store_to_start() -> None:
    import subprocess
    import sys

    from placed.cli import db
    from placed.store import database

    assert db.ENVIRONMENT == database.ENVIRONMENT
    # An offline command never pays for SQLAlchemy, Alembic, the web framework or the
    # HTTP client.
    done = subprocess.run(
        [sys.executable, "-c", "import sys, placed.cli.main; print(sorted(sys.modules))"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    loaded = done.stdout
    heavy_modules = ("sqlalchemy", "alembic", "fastapi", "uvicorn", "httpx", "placed.store")
    for heavy in (f"'{name}'" for name in (*heavy_modules, "placed.client")):
        assert heavy not in loaded, heavy
