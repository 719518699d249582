"""The corpora of real files the tools placed reads publish (../shared/corpora/, beside
the checkout; its README names each folder's source). They are read where they are,
never copied into the project.

Found by $PLACED_CORPORA, else `../shared/corpora` beside the repository, else
/work/shared/corpora. A missing corpus skips the tests that read it, with the reason;
under CI=true it fails them, so that CI never passes without having read it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def corpora_dir() -> Path | None:
    given = os.environ.get("PLACED_CORPORA")
    candidates = (
        [Path(given)]
        if given
        else [ROOT.parent / "shared" / "corpora", Path("/work/shared/corpora")]
    )
    return next((path for path in candidates if path.is_dir()), None)


def corpus(name: str) -> Path | None:
    """The folder of one corpus, or None when it is not there."""
    found = corpora_dir()
    folder = found / name if found is not None else None
    return folder if folder is not None and folder.is_dir() else None


def require(name: str) -> Path:
    """The folder of one corpus; a test that needs it is skipped without it (it fails
    under CI=true)."""
    folder = corpus(name)
    if folder is not None:
        return folder
    where = os.environ.get("PLACED_CORPORA") or f"{ROOT.parent / 'shared' / 'corpora'}"
    reason = f"the {name} corpus is not at {where} (set PLACED_CORPORA to its folder)"
    if os.environ.get("CI") == "true":
        pytest.fail(reason)
    pytest.skip(reason)
