"""The service's store: SQLAlchemy 2 tables (`tables`), one repository module per noun,
engines from a URL (`database`), Alembic migrations and their API (`schema`), and token
text (`credentials`, pure). Imports no web framework and nothing from the CLI."""
