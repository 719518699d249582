from __future__ import annotations

from pathlib import Path

import pytest

from placed.model import Spec
from placed.spec import load_specs

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"


@pytest.fixture(scope="session")
def ironic_specs() -> dict[str, Spec]:
    return {spec.name: spec for spec in load_specs(EXAMPLES / "ironic-affinity.yaml")}
