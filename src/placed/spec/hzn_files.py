"""Which Open Horizon files placed reads, and how it reads each one (issue 38): as hzn reads
it, its comments removed and its `$VAR`s substituted (placed.spec.hzn_config), each
problem then reported at its line and column in the file as written, naming the variables
its value came from.

The paths given are files, folders or trees, in any number:

- a folder (a directory holding .json files) is read as a whole: every .json file in it,
  `hzn.json` giving its variables only;
- a tree (a directory holding no .json file) is every hzn project beneath it: each folder
  holding a `service.definition.json`, which is how hzn recognises a project's folder
  (`cli/cliconfig` `GetProjectConfigFile`). A dependency defined in another project of the
  tree is found there, as hzn finds it in the exchange.

Each file takes the variables of its own folder's hzn.json.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from placed.spec.collect import Collector
from placed.spec.errors import Problem, SourcePosition, SpecError
from placed.spec.hzn_config import (
    CONFIG_NAME,
    Configuration,
    Expanded,
    Variables,
    blank_comments,
    expand,
    text_offset,
)
from placed.spec.source import MAX_DIGITS, SourceMap, decode, too_deep, too_long_number
from placed.spec.source import Path as KeyPath

# Bounds on what is read: hzn files are small; a node list of many thousand nodes is a few
# megabytes.
MAX_FILE_BYTES = 32 * 1024 * 1024
MAX_FILES = 1000
MAX_TOTAL_BYTES = 256 * 1024 * 1024
MAX_FOLDERS_WALKED = 10_000  # directories a tree's walk looks into
SERVICE_DEFINITION = "service.definition.json"  # cliconfig.DEV_SERVICE_DEFINITION_FILE


def fail(source: str, message: str, position: SourcePosition | None = None) -> SpecError:
    return SpecError(source, [Problem(message, position=position)])


# -- where each problem stands in the file as written ------------------------------------


class WrittenSources(SourceMap):
    """A SourceMap of the substituted text that answers with places in the text as
    written (a `$VAR` and its value differ in length)."""

    def __init__(self, expanded: Expanded) -> None:
        super().__init__(text=expanded.text)
        self.expanded = expanded

    def value(self, path: KeyPath) -> SourcePosition | None:
        return self.expanded.written_position(super().value(path))

    def key(self, path: KeyPath) -> SourcePosition | None:
        return self.expanded.written_position(super().key(path))

    def inside(self, path: KeyPath, offset: int) -> SourcePosition | None:
        return self.expanded.written_position(super().inside(path, offset))

    def _scalar(self, path: KeyPath, key: bool) -> bool:
        return key or self.scalar_text(path) is not None

    def note(self, path: KeyPath, key: bool = False) -> str:
        """What the variables behind the value (or key) at `path` were, if any."""
        if not self.expanded.substitutions:
            return ""
        extent = super().extent(path, key)
        if extent is None or not self._scalar(path, key):
            return ""  # a problem with a whole object or list is not its variables
        start, end = (text_offset(self.expanded.text, position) for position in extent)
        found = self.expanded.within(start, max(end, start + 1))
        return self.expanded.describe(found) if found else ""


class _Noting(Collector):
    """Problems with the variables their values came from."""

    def __init__(self, sources: WrittenSources, problems: list[Problem]) -> None:
        super().__init__(sources, problems)
        self.written = sources

    def add(self, message: str, path: KeyPath, key: bool = False, code: str = "") -> None:
        super().add(_noted(message, self.written.note(path, key)), path, key, code)

    def add_inside(self, message: str, path: KeyPath, offset: int) -> None:
        super().add_inside(_noted(message, self.written.note(path)), path, offset)


def _noted(message: str, note: str) -> str:
    return f"{message} ({note})" if note else message


@dataclass(frozen=True)
class Folder:
    path: Path
    label: str  # names this folder's workloads when several folders are read
    variables: Variables


@dataclass
class HznFile:
    path: Path
    data: Any
    sources: WrittenSources
    folder: Folder
    problems: list[Problem] = field(default_factory=list)

    @property
    def source(self) -> str:
        return str(self.path)

    @property
    def out(self) -> Collector:
        return _Noting(self.sources, self.problems)

    def add(self, message: str, path: KeyPath = (), key: bool = False) -> None:
        self.out.add(message, path, key)

    def at(self, path: KeyPath) -> SourcePosition | None:
        return self.sources.value(path)

    @property
    def undefined(self) -> list[str]:
        return self.sources.expanded.undefined()


# -- which files -------------------------------------------------------------------------


def _documents(directory: Path) -> list[Path]:
    """A folder's .json files but hzn.json, which only gives the others their variables."""
    try:
        return sorted(
            p
            for p in directory.iterdir()
            if p.suffix == ".json" and p.name != CONFIG_NAME and p.is_file()
        )
    except OSError as error:
        raise fail(str(directory), f"cannot read: {error.strerror or error}") from None


def _projects(tree: Path) -> Iterator[Path]:
    """Every folder beneath `tree` holding a service definition, in name order; hidden
    directories (.git) are not looked into, and a directory linked twice is walked once."""
    seen: set[str] = set()
    for walked, (root, directories, files) in enumerate(os.walk(tree, followlinks=True), 1):
        if walked > MAX_FOLDERS_WALKED:
            raise fail(str(tree), f"holds more than {MAX_FOLDERS_WALKED} directories")
        real = os.path.realpath(root)
        if real in seen:
            directories[:] = []
            continue
        seen.add(real)
        directories[:] = sorted(d for d in directories if not d.startswith("."))
        if SERVICE_DEFINITION in files:
            yield Path(root)


def gather(paths: list[Path]) -> list[tuple[Path, list[Path]]]:
    """(folder, its files to read) for the paths given: folders whole, trees as their
    projects, files by the folder they are in."""
    if not paths:
        raise fail("<openhorizon>", "no files given")
    folders: dict[Path, list[Path]] = {}
    seen: dict[Path, Path] = {}

    def add(folder: Path, files: list[Path], given: Path) -> None:
        for file in files:
            key = _resolved(file)
            if key in seen:
                raise fail(str(given), f"{file} is given twice (also as {seen[key]})")
            seen[key] = given
        folders.setdefault(folder, []).extend(files)

    for path in paths:
        if not path.is_dir():
            add(path.parent, [path], path)
            continue
        documents = _documents(path)
        if documents:
            add(path, documents, path)
            continue
        projects = list(_projects(path))
        if not projects:
            what = (
                f"holds only {CONFIG_NAME}, which gives variables to the files beside it"
                if (path / CONFIG_NAME).is_file()
                else "holds no .json file"
            )
            raise fail(
                str(path),
                f"{what}, and no folder beneath holds a {SERVICE_DEFINITION} (an hzn "
                "project); give a folder of hzn files, the files, or a tree of projects",
            )
        for project in projects:
            add(project, _documents(project), path)
    count = sum(len(files) for files in folders.values())
    if count > MAX_FILES:
        raise fail(str(paths[0]), f"{count} files; at most {MAX_FILES} are read")
    return list(folders.items())


def _resolved(path: Path) -> Path:
    try:
        return path.resolve()
    except (OSError, RuntimeError):
        return path


def label(folder: Path) -> str:
    """A folder as its workloads' names begin when several are read: an hzn project's
    `horizon` folder by the project's name (helloworld/horizon -> helloworld)."""
    whole = folder.absolute()
    name = whole.resolve().name if folder.name in ("", ".", "..") else whole.name
    parent = whole.parent.name
    if name == "horizon":
        return parent or name
    if name.startswith("horizon"):
        return f"{parent}-{name}" if parent else name
    return name


# -- reading -----------------------------------------------------------------------------


class LongNumber(Exception):
    def __init__(self, number: str) -> None:
        self.number = number


def bounded_int(number: str) -> int:
    if len(number.lstrip("-")) > MAX_DIGITS:
        raise LongNumber(number)
    return int(number)


def read(path: Path, folder: Folder, budget: list[int]) -> HznFile:
    """One file as hzn reads it: comments removed, variables substituted, then JSON."""
    source = str(path)
    try:
        # Read, not stat: a device or a pipe has no size until it is read (/dev/zero).
        with path.open("rb") as handle:
            raw = handle.read(MAX_FILE_BYTES + 1)
    except FileNotFoundError:
        raise fail(source, "no such file") from None
    except IsADirectoryError:
        raise fail(source, "is a directory; give one directory, or files") from None
    except OSError as error:
        raise fail(source, f"cannot read: {error.strerror or error}") from None
    if len(raw) > MAX_FILE_BYTES:
        raise fail(source, f"is larger than {MAX_FILE_BYTES} bytes, the most read from one file")
    budget[0] -= len(raw)
    if budget[0] < 0:
        raise fail(source, f"the files together exceed {MAX_TOTAL_BYTES} bytes")
    expanded = expand(blank_comments(decode(raw, source)), folder.variables)
    text = expanded.text
    try:
        data = json.loads(text, parse_int=bounded_int)
    except json.JSONDecodeError as error:
        written = expanded.written_position(SourcePosition(error.lineno, error.colno))
        offset = error.pos
        inside = [s for s in expanded.substitutions if s.at[0] <= offset < max(s.at[1], offset)]
        note = f" (where a variable's value stands: {expanded.describe(inside)})" if inside else ""
        raise fail(source, f"not valid JSON: {error.msg}{note}", written) from None
    except LongNumber as error:
        raise too_long_number(text, error.number, source) from None
    except RecursionError:
        raise too_deep(text, source) from None
    # Positions are found only when a problem asks for one.
    return HznFile(path, data, WrittenSources(expanded), folder)


def read_all(paths: list[Path], configuration: Configuration | None = None) -> list[HznFile]:
    """Every file the paths name, each with its folder's variables."""
    gathered = gather(paths)
    configuration = configuration or Configuration()
    labels = _labels([folder for folder, _ in gathered])
    budget = [MAX_TOTAL_BYTES]
    found: list[HznFile] = []
    for (directory, files), name in zip(gathered, labels, strict=True):
        folder = Folder(directory, name, configuration.for_folder(directory))
        found.extend(read(path, folder, budget) for path in files)
    return found


def _labels(folders: list[Path]) -> list[str]:
    """Empty for one folder (its workloads keep their files' names), else each folder's
    label."""
    if len(folders) <= 1:
        return [""] * len(folders)
    return [label(folder) for folder in folders]


def has_documents(path: Path) -> bool:
    """Whether a directory is one placed reads as Open Horizon's: a folder of .json files
    (or of hzn.json alone), or a tree with an hzn project beneath."""
    try:
        if any(p.suffix == ".json" and p.is_file() for p in path.iterdir()):
            return True
        return next(_projects(path), None) is not None
    except (OSError, SpecError):
        return False  # the native reader says what is wrong with the directory
