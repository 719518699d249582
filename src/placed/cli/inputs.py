"""What the commands read: spec files, standard input (`-`), several files as one.

Several native spec files are read as if concatenated with `---`: their documents are
planned side by side and need distinct names (a document without a `name` is named
after its file). Standard input is read once, so `-` may appear once; it holds a native
spec (Open Horizon's files are told apart by their names and shapes, which a stream has
not).
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

from placed.model import Spec
from placed.spec import SpecError, hzn_keys, load_specs, load_specs_text
from placed.spec.errors import Problem, SourcePosition
from placed.spec.hzn import load_openhorizon, looks_like_openhorizon
from placed.spec.juju.files import Status
from placed.spec.load import Reader
from placed.spec.source import MAX_BYTES, SourceMap, decode, dotted, parse, read_bounded

STDIN = "-"
STDIN_SOURCE = "<stdin>"


class InputFormat(StrEnum):
    native = "native"
    openhorizon = "openhorizon"
    juju = "juju"
    auto = "auto"


def is_stdin(path: Path | str) -> bool:
    return str(path) == STDIN


def read_stdin(source: str = STDIN_SOURCE) -> str:
    """Standard input as text, bounded and decoded as a spec file is (raises SpecError)."""
    stream = getattr(sys.stdin, "buffer", None)
    # Read one byte past the limit: a stream has no size to check first.
    data = stream.read(MAX_BYTES + 1) if stream is not None else sys.stdin.read(MAX_BYTES + 1)
    if len(data) > MAX_BYTES:
        limit = MAX_BYTES // (1024 * 1024)
        message = f"standard input holds more than {limit} MiB, the most placed reads"
        raise SpecError(source, [Problem(message)])
    return decode(data, source) if isinstance(data, bytes) else str(data)


def read_specs(
    paths: list[Path],
    input_format: InputFormat,
    status: Status | None = None,
    overlays: Sequence[tuple[str, str]] = (),
    force: bool = False,
) -> list[Spec]:
    """The specs the inputs hold, native, Juju or Open Horizon (raises SpecError).
    `status` is what already runs (`juju status --format yaml`); `force` reads the
    unknown keys of a Juju file or of Open Horizon's files as warnings (`--force`)."""
    stdin = [p for p in paths if is_stdin(p)]
    if len(stdin) > 1:
        raise SpecError(STDIN, [Problem("standard input (-) can be read only once")])
    if stdin and input_format is InputFormat.openhorizon:
        raise SpecError(
            STDIN,
            [
                Problem(
                    "standard input holds a native spec; give Open Horizon's files as "
                    "paths (their names say which node a policy is for)"
                )
            ],
        )
    if not stdin and (
        input_format is InputFormat.openhorizon
        or (
            input_format is InputFormat.auto and _sniffable(paths) and looks_like_openhorizon(paths)
        )
    ):
        return load_openhorizon(paths, force)
    _once(paths)
    specs: list[Spec] = []
    first: dict[str, tuple[int, str]] = {}
    for i, path in enumerate(paths):
        reader: Reader = (
            "juju"
            if input_format is InputFormat.juju
            else "native"
            if input_format is InputFormat.native
            else "auto"
        )
        found = (
            load_specs_text(read_stdin(), STDIN_SOURCE, reader, status, overlays, force)
            if is_stdin(path)
            else load_specs(path, reader, status, overlays, force)
        )
        # Documents of one file have distinct names already (the loader checks).
        duplicates = []
        for document in found:
            earlier = first.setdefault(document.name, (i, document.source))
            if earlier[0] != i:
                message = (
                    f"duplicate document name {document.name!r} (first in {earlier[1]}); "
                    "documents read together need distinct names"
                )
                duplicates.append(Problem(message, "name", _name_position(document)))
        if duplicates:
            raise SpecError(found[0].source, duplicates)
        specs.extend(found)
    return specs


def _sniffable(paths: list[Path]) -> bool:
    """Whether the paths may be looked into to tell Open Horizon's files: regular files and
    directories only. A device or a pipe (/dev/zero, a FIFO) is read once, as a native
    spec, by the bounded reader."""
    try:
        return all(path.is_file() or path.is_dir() for path in paths)
    except OSError:
        return False


def _once(paths: list[Path]) -> None:
    """A file named twice would plan its documents twice, under the same names."""
    seen: set[Path] = set()
    for path in paths:
        if is_stdin(path):
            continue
        try:
            key = path.resolve()
        except (OSError, RuntimeError):
            key = path
        if key in seen:
            message = (
                "given twice: a native spec is one file, read once; several files are "
                "planned side by side (Open Horizon's files are read together with "
                "--input-format openhorizon)"
            )
            raise SpecError(str(path), [Problem(message)])
        seen.add(key)


def _name_position(document: Spec) -> SourcePosition | None:
    """Where the document's `name:` value is, found only for this error message."""
    if document.source == STDIN_SOURCE:
        return None  # read already, and gone
    try:
        documents = parse(read_bounded(document.source, document.source), document.source)
    except (OSError, SpecError):
        return None
    for data, sources in documents:
        if isinstance(data, dict) and data.get("name") == document.name:
            return sources.value(("name",))
    return None


@dataclass(frozen=True, slots=True)
class Props:
    """--props as read: the data, where it came from, and where each part stands."""

    data: Any
    source: str
    sources: SourceMap | None = None
    # Where each property's value stands, when the data was rebuilt from a node policy.
    paths: dict[str, tuple[str | int, ...]] = dataclasses.field(default_factory=dict)

    def position(self, name: str) -> SourcePosition | None:
        """Where the property `name` is given (its value), when it is known."""
        if self.sources is None:
            return None
        if name in self.paths:
            return self.sources.value(self.paths[name])
        if isinstance(self.data, dict):
            return self.sources.value((name,))
        if isinstance(self.data, list):
            for i, item in enumerate(self.data):
                if isinstance(item, dict) and item.get("name") == name:
                    return self.sources.value((i, "value") if "value" in item else (i,))
        return None


def read_props(text: str) -> Props:
    """--props (text, @FILE or @-) as data (raises SpecError). A file or standard input
    is read as a spec file is: bounded, decoded, parsed with positions."""
    source = "--props"
    if text.startswith("@"):
        source = text[1:]
        if is_stdin(source):
            source = STDIN_SOURCE
            text = read_stdin(source)
        else:
            try:
                text = read_bounded(source, source)
            except OSError as error:
                raise SpecError(
                    f"--props {source}", [Problem(f"cannot read: {error.strerror or error}")]
                ) from None
    if all(not line.strip() or line.lstrip().startswith("#") for line in text.splitlines()):
        return Props({}, source)
    try:
        documents = parse(text, source)
    except SpecError as error:
        # --props is often JSON: say that either is welcome.
        problems = [
            dataclasses.replace(
                p, message=p.message.replace("not valid YAML", "not valid JSON or YAML", 1)
            )
            for p in error.problems
        ]
        raise SpecError(error.source, problems) from None
    if len(documents) > 1:
        raise SpecError(
            source, [Problem(f"holds {len(documents)} YAML documents; properties are one")]
        )
    data, sources = documents[0]
    if _is_node_policy(data):
        return _node_policy_props(data, source, sources)
    return Props(data, source, sources)


def _is_node_policy(data: Any) -> bool:
    """Whether --props is a node policy as `hzn policy list` prints it
    (exchangecommon.NodePolicy: properties, constraints, deployment, management) rather than
    properties themselves (no property's value is a list of objects or an object)."""
    if not isinstance(data, dict):
        return False
    top, deployment = data.get("properties"), data.get("deployment")
    return (isinstance(top, list) and all(isinstance(p, dict) for p in top)) or (
        isinstance(deployment, dict) and isinstance(deployment.get("properties"), list | None)
    )


def _node_policy_props(data: dict[str, Any], source: str, sources: SourceMap) -> Props:
    """A node policy's properties as its deployment policy sees them: the top level's, the
    `deployment` section's over them (exchangecommon/nodepolicy.go GetDeploymentPolicy)."""
    misspelt = [
        Problem(message, dotted(path), sources.key(path))
        for message, path in hzn_keys.unknown_keys("node-policy", data)
    ]
    if misspelt:
        raise SpecError(source, misspelt)
    merged: dict[str, dict[str, Any]] = {}
    paths: dict[str, tuple[str | int, ...]] = {}
    deployment = data.get("deployment")
    sections: list[tuple[tuple[str, ...], Any]] = [((), data.get("properties"))]
    if isinstance(deployment, dict):
        sections.append((("deployment",), deployment.get("properties")))
    for prefix, found in sections:
        for index, item in enumerate(found or []):
            where: tuple[str | int, ...] = (*prefix, "properties", index)
            if not isinstance(item, dict) or not isinstance(item.get("name"), str):
                raise SpecError(
                    source,
                    [
                        Problem(
                            "expected a property {name, value, type}",
                            dotted(where),
                            sources.value(where),
                        )
                    ],
                )
            merged[item["name"]] = item
            paths[item["name"]] = (*where, "value") if "value" in item else where
    return Props(list(merged.values()), source, sources, paths)
