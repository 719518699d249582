"""Where the shared corpora of the tools' real files are (see their README): the
directory PLACED_CORPORA names, else ../shared/corpora beside the repository, else
/work/shared/corpora. Tests read them there and never copy them into the project.

Under CI=true a missing corpus fails the test that needs it; elsewhere it skips, saying
which places were looked at."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from .conftest import ROOT, in_ci

DEFAULT = Path("/work/shared/corpora")


def places() -> list[Path]:
    """Where a corpus is looked for, in order."""
    found = []
    named = os.environ.get("PLACED_CORPORA")
    if named:
        found.append(Path(named))
    found.extend([ROOT.parent / "shared" / "corpora", DEFAULT])
    return list(dict.fromkeys(found))  # the same place once


def corpus(name: str) -> Path:
    """The corpus directory `name` (openhorizon-examples, juju-bundles...), or the test
    fails (CI) or skips (elsewhere) with where it was looked for."""
    for place in places():
        if (place / name).is_dir():
            return place / name
    looked = ", ".join(str(place / name) for place in places())
    message = f"corpus {name} not found (looked in {looked}; set PLACED_CORPORA)"
    if in_ci():
        pytest.fail(f"CI=true requires it: {message}")
    pytest.skip(message)
