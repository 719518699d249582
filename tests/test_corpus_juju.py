"""The OpenStack charmers' published bundles (../shared/corpora/juju-bundles/), read as
`juju deploy` reads them: every bundle validates with --force, each key juju's bundle
schema does not know a warning at its file, line and column; without --force the same
keys are refused, with the message that says what --force does. Each overlay is merged
into its bundle as `juju deploy --overlay` merges it.

A bundle listed in REFUSED is one that Juju refuses too, whatever --force: it is refused
here with exactly the errors its entry gives."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from placed.cli.main import app
from tests.corpora import corpus, require

NAME = "juju-bundles"
FOUND = corpus(NAME)
BUNDLES = sorted(FOUND.rglob("bundle.yaml")) if FOUND is not None else []

# Bundles Juju refuses too, with why, and a pattern every one of their errors matches.
REFUSED: dict[str, tuple[str, str]] = {
    # Its machines say series: jammy (copied from the jammy bundle) under a default series
    # of kinetic: a unit goes only on a machine of its own series (juju/juju state
    # assignToMachine), so ceph-osd and nova-compute have nowhere to go.
    "development/openstack-telemetry-kinetic-zed/bundle.yaml": (
        "machines of series jammy for applications of series kinetic",
        r"machine \d is declared with series jammy and [\w-]+ deploys kinetic",
    ),
}

WARNING = re.compile(r"^(?P<file>.+?):(?P<line>\d+):(?P<column>\d+): (?P<key>[^ ]+): ")


def name_of(path: Path) -> str:
    assert FOUND is not None
    return path.relative_to(FOUND).as_posix()


def validate(*args: str) -> tuple[int, dict[str, Any], str]:
    done = CliRunner().invoke(app, ["validate", "--format", "json", *args])
    data = json.loads(done.stdout) if done.stdout.strip() else {}
    return done.exit_code, data, done.stderr


def key_warnings(document: dict[str, Any]) -> list[tuple[str, int, int, str]]:
    """Each unknown-key warning as (file, line, column, dotted key)."""
    found = []
    for warning in document["warnings"]:
        if warning["code"] != "unknown-key":
            continue
        where = WARNING.match(warning["message"])
        assert where is not None, warning["message"]
        found.append((where["file"], int(where["line"]), int(where["column"]), where["key"]))
    return found


def assert_at_their_keys(found: list[tuple[str, int, int, str]]) -> None:
    """Each position is where its key is written: the text there is the key."""
    for file, line, column, key in found:
        text = Path(file).read_text(encoding="utf-8").splitlines()[line - 1][column - 1 :]
        assert text.lstrip("'\"").startswith(key.rsplit(".", 1)[-1]), (file, line, key)


def test_the_corpus_is_there() -> None:
    folder = require(NAME)
    assert BUNDLES, f"no bundle.yaml under {folder}"


@pytest.mark.parametrize("bundle", BUNDLES, ids=name_of)
def test_every_bundle_reads_as_juju_deploy_force_reads_it(bundle: Path) -> None:
    code, document, err = validate("--force", str(bundle))
    refused = REFUSED.get(name_of(bundle))
    if refused is not None:
        assert code == 2 and not document["valid"], err
        messages = [e["message"] for e in document["errors"]]
        assert messages and all(re.search(refused[1], m) for m in messages), messages
        return
    assert code == 0, err
    assert document["valid"] and document["workloads"] > 0
    assert_at_their_keys(key_warnings(document))


@pytest.mark.parametrize("bundle", [b for b in BUNDLES if name_of(b) not in REFUSED], ids=name_of)
def test_without_force_the_same_keys_are_refused_saying_what_force_does(bundle: Path) -> None:
    _, forced, _ = validate("--force", str(bundle))
    warned = {(f, line, column, key) for f, line, column, key in key_warnings(forced)}
    code, document, err = validate(str(bundle))
    if not warned:
        assert code == 0, err
        return
    assert code == 2, err
    first, *rest = document["errors"]
    assert (
        first["line"] is None and "--force reads the file as juju deploy does" in (first["message"])
    )
    assert f"{len(warned)} key" in first["message"]
    refused = {(e["file"], e["line"], e["column"], e["key"]) for e in rest}
    assert refused == warned


def overlay_pairs() -> list[tuple[Path, Path]]:
    """(bundle, overlay): an overlay beside a bundle is that bundle's; one in an overlays/
    folder is for the stable bundle its name begins with. The corpus keeps the upstream
    repository's symbolic links as files that hold the link's target: such a file stands
    for its target, as juju deploy --overlay reads it through the link."""
    if FOUND is None:
        return []
    stable = [d.name for d in (FOUND / "stable").iterdir() if (d / "bundle.yaml").is_file()]
    pairs: list[tuple[Path, Path]] = []
    for overlay in sorted(FOUND.rglob("*overlay*.yaml")):
        text = overlay.read_text(encoding="utf-8")
        target = (overlay.parent / text).resolve() if "\n" not in text else overlay
        if overlay.parent.name == "overlays":
            base = max(
                (d for d in stable if overlay.name.startswith(f"{d}-")), key=len, default=None
            )
            if base is not None:
                pairs.append((FOUND / "stable" / base / "bundle.yaml", target))
        else:
            assert target.is_file(), overlay
            pairs.append((overlay.parent / "bundle.yaml", target))
    return pairs


PAIRS = overlay_pairs()


def test_every_overlay_is_merged_into_some_bundle() -> None:
    require(NAME)
    assert FOUND is not None
    every = {p.resolve() for p in FOUND.rglob("*overlay*.yaml") if "\n" in p.read_text()}
    assert every and every == {overlay.resolve() for _, overlay in PAIRS}


@pytest.mark.parametrize(
    ("bundle", "overlay"),
    PAIRS,
    ids=[f"{name_of(o)}->{name_of(b)}" for b, o in PAIRS],
)
def test_every_overlay_merges_as_juju_deploy_overlay_merges_it(bundle: Path, overlay: Path) -> None:
    code, document, err = validate("--force", str(bundle), "--overlay", str(overlay))
    assert code == 0, err
    found = key_warnings(document)
    assert_at_their_keys(found)
    # The overlay's own keys are told at the overlay, not at the bundle.
    own = {key for file, _, _, key in found if Path(file).resolve() == overlay.resolve()}
    top = overlay.read_text(encoding="utf-8")
    if re.search(r"^variables:", top, re.MULTILINE):
        assert "variables" in own
