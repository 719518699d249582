"""Spec file -> validated model. Every problem found names its place in the file."""

from __future__ import annotations

import datetime
import difflib
import itertools
import math
import re
import sys
import types
import typing
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path as FilePath
from typing import Any, Literal

from pydantic import BaseModel, TypeAdapter, ValidationError

from placed.collector import without_cycle_collection
from placed.model import Inventory, Location, Running, Settings, Spec, TagRules, Workload
from placed.model.dedications import Dedication, Event, Offering
from placed.model.storage import Storage
from placed.model.tenancy import Tenancy
from placed.policy.affinity import mirror_avoids
from placed.policy.tags import Tagged
from placed.spec import affinity, cloudstack, distinct, openhorizon
from placed.spec.collect import Collector
from placed.spec.errors import MAX_LISTED, Problem, SourcePosition, SpecError, quoted
from placed.spec.juju import native
from placed.spec.juju.files import NotJuju, Status, looks_like_juju_text, read_juju
from placed.spec.schema import (
    MAX_TOTAL_UNITS,
    LocationSpec,
    OfferingSpec,
    SpecDocument,
    WorkloadSpec,
)
from placed.spec.source import Path, SourceMap, dotted, parse, read_bounded

Reader = Literal["auto", "native", "juju"]


def load_spec(path: str | FilePath) -> Spec:
    """The one spec in a file (a file of several documents is an error here)."""
    specs = load_specs(path)
    if len(specs) > 1:
        raise SpecError(str(path), [Problem(f"holds {len(specs)} documents; expected one")])
    return specs[0]


def load_specs(
    path: str | FilePath,
    reader: Reader = "auto",
    status: Status | None = None,
    overlays: Sequence[tuple[str, str]] = (),
    force: bool = False,
) -> list[Spec]:
    """Every spec in a file: a file may hold several YAML documents separated by `---`,
    each a complete, independent spec (several scenarios side by side). A Juju bundle or
    deployer file is read as the specs it describes (`reader` "auto" tells them apart;
    `status` is what already runs, from `juju status --format yaml`; `force`: its keys
    the tool does not know are warnings, as `juju deploy` ignores them)."""
    source = str(path)
    try:
        text = read_bounded(str(path), source)
    except FileNotFoundError:
        raise SpecError(source, [Problem("no such file")]) from None
    except IsADirectoryError:
        raise SpecError(source, [Problem("is a directory, not a spec file")]) from None
    except OSError as error:
        raise SpecError(source, [Problem(f"cannot read: {error.strerror or error}")]) from None
    return load_specs_text(text, source, reader, status, overlays, force)


def load_spec_text(text: str, source: str = "<spec>") -> Spec:
    specs = load_specs_text(text, source)
    if len(specs) > 1:
        raise SpecError(source, [Problem(f"holds {len(specs)} documents; expected one")])
    return specs[0]


def load_spec_data(data: Any, source: str = "<spec>") -> Spec:
    """A spec from data already parsed (a service's rows read back as a document): the
    same schema and rules as a file, with problems located by key path only."""
    with without_cycle_collection():
        return _document(data, SourceMap(), source)


def load_workload(
    spec: WorkloadSpec,
    settings: Settings,
    kinds: set[str],
    tenancy: Tenancy | None = None,
    offerings: Sequence[Offering] = (),
    storage: Storage | None = None,
    dedications: Sequence[Dedication] = (),
) -> Workload:
    """One workload on its own, for a world that is already loaded (`kinds`: the kinds
    its inventory uses; `tenancy`, `offerings`, `storage` and `dedications`: its
    CloudStack sections, for a workload with an account: a tenant's VM gets its disk,
    the pools it may use and the private zones), read as the whole spec's loader reads
    it. Not for a Juju directive or constraint (those read the whole spec)."""
    problems: list[Problem] = []
    out = Collector(SourceMap(), problems)
    workload = _workload(spec, settings, (), out, kinds)
    if spec.account is not None or spec.offering is not None:
        if tenancy is None:
            problems.append(Problem("a workload with an account needs the world's tenancy"))
        else:
            table = {
                o.name: OfferingSpec(
                    name=o.name,
                    cpu=o.cpu,
                    memory=o.memory,
                    disk=o.disk,
                    dedicated=o.dedicated,
                    implicit="preferred" if o.implicit == "preferred" else "strict",
                )
                for o in offerings
            }
            workload = cloudstack.tenant_workload(spec, workload, tenancy, table, settings, (), out)
            disks = {o.name: o.disk for o in offerings}
            [workload] = cloudstack.with_storage([workload], storage, disks, dedications)
    if problems:
        raise SpecError("request", problems)
    return workload


def workload_errors(error: ValidationError) -> tuple[list[tuple[str, str]], int]:
    """A workload's schema errors (`WorkloadSpec`: a request's body) as the spec reader
    words them, one per mistake (a value that fits no branch of a union is one, and a
    branch's name never shows in its place): (JSON pointer, words) each, at most
    MAX_LISTED, and how many more."""
    inside = ("workloads", 0)  # where a workload sits in a document, for the words
    errors = _one_per_mistake([{**e, "loc": (*inside, *e["loc"])} for e in error.errors()])
    sources = SourceMap()
    listed = [
        (
            "".join(f"/{part}" for part in tuple(e["loc"])[len(inside) :]),
            _problem(e, sources).message,
        )
        for e in errors[:MAX_LISTED]
    ]
    return listed, max(0, len(errors) - MAX_LISTED)


def load_directed(
    spec: WorkloadSpec,
    workload: Workload,
    named: Sequence[tuple[WorkloadSpec, Workload]],
    target_ids: set[str],
    running: tuple[Running, ...],
) -> Workload:
    """A workload with a Juju directive (`to:`), `workload` as `load_workload` read it,
    for a world that is already loaded: its directives read against the workloads its
    entries may name (`named`: each one's spec and model as `load_workload` reads them),
    their `running` units and the inventory's targets, as the whole spec's loader reads
    them (spec/juju/native.py)."""
    problems: list[Problem] = []
    out = Collector(SourceMap(), problems)
    read = native.directed_workloads(
        [*(s for s, _ in named), spec], [*(w for _, w in named), workload], target_ids, running, out
    )
    if problems:
        raise SpecError("request", problems)
    return next(w for w in read if w.name == workload.name)


def parse_documents(text: str, source: str = "<spec>") -> list[SpecDocument]:
    """The native documents of `text` as the schema reads them, each valid (call after
    `load_specs_text` has accepted the text: it reports the problems)."""
    return [SpecDocument.model_validate(data) for data, _ in parse(text, source)]


def load_specs_text(
    text: str,
    source: str = "<spec>",
    reader: Reader = "auto",
    status: Status | None = None,
    overlays: Sequence[tuple[str, str]] = (),
    force: bool = False,
) -> list[Spec]:
    """`overlays`: (text, source) of bundle overlays to merge (`--overlay`); `force`: a
    Juju file's unknown keys are warnings (`--force`)."""
    with without_cycle_collection():
        if reader == "juju" or (reader == "auto" and looks_like_juju_text(text)):
            try:
                return read_juju(text, source, status, overlays=overlays, force=force)
            except NotJuju:
                if reader == "juju" or overlays:
                    raise
        if overlays:
            raise SpecError(
                source, [Problem("--overlay merges into a Juju bundle; this is not one")]
            )
        return _load_specs_text(text, source)


def load_changes_text(
    text: str, source: str = "<spec>", world: dict[str, Any] | None = None
) -> list[Spec]:
    """Documents that change a world that is already there (the service's apply): like
    a spec file, but a document may leave the inventory out (only workloads, say), and
    the sections of `world` (its tenancy, offerings) stand in for those a document
    leaves out, so a workload may name an account the world has. Problems keep their
    line and column: only keys the document does not have are added."""
    with without_cycle_collection():
        if looks_like_juju_text(text):
            try:
                return read_juju(text, source)
            except NotJuju:
                pass
        return _load_specs_text(text, source, need_inventory=False, world=world)


def _stored_tenancy(section: Any) -> Tenancy | None:
    """The stored world's tenancy section as a tree (the store wrote it valid; anything
    else counts as none, and the documents' own checks stand alone)."""
    if section is None:
        return None
    try:
        document = SpecDocument.model_validate({"tenancy": section})
    except ValidationError:
        return None
    return cloudstack.tenancy(document, Collector(SourceMap(), []))


def _joined_offerings(before: Any, added: Any) -> Any:
    """The offerings of both, a later one replacing an earlier one of its name (the later
    document's first, at their own indexes)."""
    if not isinstance(before, list) or not isinstance(added, list):
        return added
    try:
        names = {o.get("name") for o in added if isinstance(o, dict)}
    except TypeError:  # a name that is not one: the document's check says so
        return added
    return added + [o for o in before if not (isinstance(o, dict) and o.get("name") in names)]


def _load_specs_text(
    text: str, source: str, need_inventory: bool = True, world: dict[str, Any] | None = None
) -> list[Spec]:
    documents = parse(text, source)
    # A change's document stands on the world as the documents before it in the body leave
    # it (the service applies them in order): the tenancy and offerings of the stored
    # world and of those documents are there for its workloads, as merging makes them.
    known: Tenancy | None = None
    if world is not None:
        known = _stored_tenancy(world.get("tenancy"))
        offerings = world.get("offerings")
        for data, _ in documents:
            if not isinstance(data, dict):
                continue
            if "offerings" in data:
                # Its own offerings first, at the indexes its lines are found by.
                offerings = data["offerings"] = _joined_offerings(offerings, data["offerings"])
            elif offerings is not None:
                data["offerings"] = offerings
    # The data was read here, for this load alone (the world's sections hold no inventory).
    owned = "inventory" not in (world or {})
    specs = []
    for data, sources in documents:
        spec = _document(data, sources, source, need_inventory, owned, known)
        if world is not None and spec.tenancy is not None:
            known = spec.tenancy
        specs.append(spec)
    problems = []
    first: dict[str, SourceMap] = {}
    for spec, (data, sources) in zip(specs, documents, strict=True):
        earlier = first.setdefault(spec.name, sources)
        if earlier is sources:
            continue
        line = (earlier.value(("name",)) or earlier.value(()) or SourcePosition(1, 1)).line
        if "name" in data:
            message = f"duplicate document name {spec.name!r} (first at line {line})"
        else:
            message = (
                f"this document has no name, so it is named {spec.name!r} after the file, "
                f"like the document at line {line}"
            )
        problems.append(
            Problem(
                f"{message}; the documents in one file need distinct names",
                "name" if "name" in data else "",
                sources.value(("name",)),
            )
        )
    if problems:
        raise SpecError(source, problems)
    return specs


def _document(
    data: Any,
    sources: SourceMap,
    source: str,
    need_inventory: bool = True,
    owned: bool = False,
    known: Tenancy | None = None,
) -> Spec:
    """`owned`: the data was read for this load alone, and its inventory may be dropped
    as it is built. `known`: the tenancy the document adds to (`cloudstack.tenancy`)."""
    if not isinstance(data, dict):
        position = sources.value(())
        raise SpecError(
            source,
            [
                Problem(
                    f"the spec must be a mapping with an inventory, got {_kind(data)}",
                    position=position,
                )
            ],
        )
    # An empty file, {} and a spec that forgot its inventory are one mistake.
    missing = (
        [
            Problem(
                "the spec is empty; it needs at least an inventory"
                if not data
                else "the spec has no inventory; it needs at least an inventory (a list of "
                "locations)",
                position=sources.value(()) or SourcePosition(1, 1),
            )
        ]
        if "inventory" not in data and need_inventory
        else []
    )
    chunked = _inventory_chunks(data) if owned and not missing else None
    if chunked is not None:
        spine, siblings, chunks, _kept = chunked  # _kept: alive until the model holds them
        try:
            head = SpecDocument.model_validate({**data, "inventory": []})
            # Each spine location without its children, and how many it has.
            spine_specs = [
                (LocationSpec.model_validate({**node, "children": []}), len(node["children"]))
                for node in spine
            ]
        except ValidationError:
            pass  # the whole document's errors, as below
        else:
            try:
                return _build(
                    head, sources, source, _validated_chunks(siblings, chunks), spine_specs, known
                )
            except _ChunkInvalid:
                pass  # its locations are left as placeholders: the others' errors, as below
    try:
        document = SpecDocument.model_validate(data)
    except ValidationError as error:
        errors = _one_per_mistake(error.errors())
        listed = [*missing, *(_problem(e, sources) for e in errors[:MAX_LISTED])]
        raise SpecError(source, listed, max(0, len(errors) - MAX_LISTED)) from None
    if missing:
        raise SpecError(source, missing)
    return _build(document, sources, source, known=known)


# Reading a large inventory, the plain data the file was read into and the schema's
# objects made from it are garbage once the model is built. Built all at once, the
# model's objects sit among that garbage, and the allocator cannot give back a page that
# any of them holds (100,000 targets kept 3.4 KiB each where 1.8 live). Validated and
# built some 20,000 locations at a time, each chunk's plain data dropped once built,
# the garbage at any moment is one chunk, and the next chunk's objects reuse its memory.
_CHUNK_LOCATIONS = 20_000
_PLACEHOLDER: dict[str, Any] = {"id": "placeholder"}  # a location that validates
_LOCATIONS: TypeAdapter[list[LocationSpec]] = TypeAdapter(list[LocationSpec])


class _ChunkInvalid(Exception):
    """A chunk of the inventory the schema refuses: the whole document is validated
    again (its built chunks, which had no error, as placeholders) for its errors."""


# How many single roots (a root whose only child has children...) the chunks may lie under.
_SPINE_MOST = 100


def _inventory_chunks(
    data: dict[str, Any],
) -> tuple[list[dict[str, Any]], list[Any], list[range], list[str]] | None:
    """Where the inventory is cut into chunks: the spine, the chain of single locations
    above the first list of several (none if the inventory itself has several roots: a
    fleet under one root is chunked below it); that list; consecutive ranges of it of
    about _CHUNK_LOCATIONS locations each; and the fresh copies of the texts to keep
    while it is built (_fresh_strings). None where there is one chunk or the inventory is
    not a list of mappings (the schema reports that)."""
    siblings = data.get("inventory")
    spine: list[dict[str, Any]] = []
    while (
        isinstance(siblings, list)
        and len(siblings) == 1
        and isinstance(siblings[0], dict)
        and isinstance(siblings[0].get("children"), list)
        and len(spine) < _SPINE_MOST
    ):
        spine.append(siblings[0])
        siblings = siblings[0]["children"]
    if not isinstance(siblings, list) or len(siblings) < 2:
        return None
    chunks: list[range] = []
    named: list[dict[str, Any]] = []  # the locations with an id
    texts: set[Any] = set()  # their kinds, tags and rule tags
    for node in spine:
        _add_location_texts(node, named, texts)
    start = count = 0
    for index, root in enumerate(siblings):
        if not isinstance(root, dict):
            return None
        stack = [root]
        while stack:
            node = stack.pop()
            count += 1
            _add_location_texts(node, named, texts)
            children = node.get("children")
            if isinstance(children, list):
                stack.extend(child for child in children if isinstance(child, dict))
        if count >= _CHUNK_LOCATIONS:
            chunks.append(range(start, index + 1))
            start, count = index + 1, 0
    if start < len(siblings):
        chunks.append(range(start, len(siblings)))
    if len(chunks) < 2:
        return None
    return spine, siblings, chunks, _fresh_strings(named, texts)


def _add_location_texts(node: dict[str, Any], named: list[dict[str, Any]], texts: set[Any]) -> None:
    if type(node.get("id")) is str:
        named.append(node)
    kind = node.get("kind")
    if type(kind) is str:
        texts.add(kind)
    _add_texts(texts, node.get("tags"))
    if not _RULE_KEYS.isdisjoint(node):
        for key in _RULE_KEYS:
            _add_texts(texts, node.get(key))


# Tag rule lists: most locations have none of them.
_RULE_KEYS = frozenset(
    {"anti_tags", "hard_affinity", "hard_anti_affinity", "soft_affinity", "soft_anti_affinity"}
)


def _fresh_strings(named: list[dict[str, Any]], texts: set[Any]) -> list[str]:
    """Copies of the texts that the model keeps, every copy made before any original is
    let go: the copies sit together in memory of their own, where the strings read
    would hold a block or two in every page of the read, and keep the whole page from
    being reused. Each id in `named` is replaced by its copy; each of `texts` (kinds,
    tags, rule tags: the model interns them) has its copy interned, and the copies are
    returned, to be kept alive until the model holds them."""
    copies = [node["id"].encode().decode() for node in named]
    kept = [sys.intern(text.encode().decode()) for text in texts if type(text) is str]
    for node, copy in zip(named, copies, strict=True):
        node["id"] = copy
    return kept


def _add_texts(texts: set[Any], values: Any) -> None:
    if type(values) is list:
        try:
            texts.update(values)
        except TypeError:  # a mapping in a list of tags: the schema reports it
            texts.update(value for value in values if type(value) is str)


def _validated_chunks(
    inventory: list[Any], chunks: list[range]
) -> Iterator[Iterator[tuple[int, LocationSpec]]]:
    """Each chunk's roots validated, as (index, spec); a chunk's plain data is dropped
    (a placeholder left in its place) once the next is asked for."""
    for chunk in chunks:
        try:
            specs = _LOCATIONS.validate_python(inventory[chunk.start : chunk.stop])
        except ValidationError:
            raise _ChunkInvalid from None
        yield zip(chunk, specs, strict=True)
        del specs
        inventory[chunk.start : chunk.stop] = [_PLACEHOLDER] * len(chunk)


# A union's branches show in pydantic's error locations as a last part such as `str` or
# `list[str]`; a value that fits no branch is one mistake, not one per branch.
_BRANCH = re.compile(r"^(str|int|float|bool|list\[.*\]|dict\[.*\])$")
_BRANCH_WORDS = {
    "str": "a string",
    "int": "an integer",
    "float": "a number",
    "bool": "a boolean",
    "list[str]": "a list of strings",
}


# A key that takes one mapping or a list of them (`spread`, `near`, `avoid`) shows in
# error locations as a branch named after the model (`SpreadSpec`, `list[SpreadSpec]`).
_ONE_OR_MANY = re.compile(r"^(?:list\[)?([A-Z]\w*Spec)\]?$")


def _one_shape(errors: list[Any]) -> list[Any]:
    """The errors of the branch whose shape the value has (a mapping, or a list), with the
    branch left out of their locations; a value of neither shape is one mistake."""
    branches: dict[tuple[Any, ...], dict[str, list[tuple[int, Any]]]] = {}
    for position, error in enumerate(errors):
        loc = tuple(error["loc"])
        for i, part in enumerate(loc):
            if isinstance(part, str) and _ONE_OR_MANY.match(part):
                branch = "list" if part.startswith("list[") else "one"
                branches.setdefault(loc[:i], {}).setdefault(branch, []).append((position, i))
                break
    if not branches:
        return errors
    replaced: dict[int, Any] = {}
    for where, found in branches.items():
        deep = {
            branch: [(p, i) for p, i in entries if len(errors[p]["loc"]) > i + 1]
            for branch, entries in found.items()
        }
        keep = next((branch for branch in ("one", "list") if deep.get(branch)), None)
        for branch, entries in found.items():
            for p, i in entries:
                replaced[p] = None
                if branch == keep and len(errors[p]["loc"]) > i + 1:
                    loc = tuple(errors[p]["loc"])
                    replaced[p] = {**errors[p], "loc": (*loc[:i], *loc[i + 1 :])}
        if keep is None:
            first = min(p for entries in found.values() for p, _ in entries)
            replaced[first] = {
                "type": "union_type",
                "loc": where,
                "input": errors[first].get("input"),
                "wanted": ["a mapping", "a list of mappings"],
            }
    out = []
    for position, error in enumerate(errors):
        if position in replaced:
            if replaced[position] is not None:
                out.append(replaced[position])
        else:
            out.append(error)
    return out


def _one_per_mistake(errors: list[Any]) -> list[Any]:
    errors = _one_shape(errors)
    merged: dict[tuple[Any, ...], dict[str, Any]] = {}
    out: list[Any] = []
    for error in errors:
        loc = tuple(error["loc"])
        if loc and isinstance(loc[-1], str) and _BRANCH.match(loc[-1]):
            where = loc[:-1]
            wanted = _BRANCH_WORDS.get(loc[-1], loc[-1])
            found = merged.get(where)
            if found is None:
                found = merged[where] = {
                    "type": "union_type",
                    "loc": where,
                    "input": error.get("input"),
                    "wanted": [wanted],
                }
                out.append(found)
            elif wanted not in found["wanted"]:
                found["wanted"].append(wanted)
            continue
        out.append(error)
    return out


# -- pydantic errors in words ---------------------------------------------------------


def _kind(value: Any) -> str:
    names = {bool: "a boolean", int: "an integer", float: "a number", str: "a string"}
    if isinstance(value, datetime.date):
        return f"a date ({value.isoformat()})"
    if value is None:
        return "nothing (null)"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    return f"{names.get(type(value), type(value).__name__)} {quoted(value)}"


def _model_at(path: Path) -> type[BaseModel] | None:
    model: type[BaseModel] = SpecDocument
    for part in path:
        if isinstance(part, int):
            continue
        field = model.model_fields.get(part)
        if field is None:
            return None
        inner = _unwrap(field.annotation)
        if inner is None:
            return None
        model = inner
    return model


def _unwrap(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    if typing.get_origin(annotation) in (list, typing.Union, types.UnionType):
        for arg in typing.get_args(annotation):
            found = _unwrap(arg)
            if found is not None:
                return found
    return None


def _problem(error: Any, sources: SourceMap) -> Problem:
    loc: Path = tuple(error["loc"])
    kind, value = error["type"], error.get("input")
    key = dotted(loc)
    if kind == "extra_forbidden":
        name = str(loc[-1])
        model = _model_at(loc[:-1])
        allowed = sorted(model.model_fields) if model else []
        close = difflib.get_close_matches(name.replace("-", "_"), allowed, n=1, cutoff=0.6)
        hint = f"; did you mean {close[0]!r}?" if close else f"; allowed keys: {', '.join(allowed)}"
        return Problem(f"unknown key {quoted(name)}{hint}", key, sources.key(loc))
    position = sources.value(loc)
    if kind == "union_type":
        wanted = " or ".join(error["wanted"])
        return Problem(f"expected {wanted}, got {_kind(value)}", key, position)
    if kind == "value_error":
        # Our own validators' words (an invisible character in an id, ...).
        return Problem(str(error["ctx"]["error"]), key, position)
    if kind == "string_type" and not isinstance(value, str | list | dict) and value is not None:
        text = sources.scalar_text(loc)
        # Only where YAML changed what was written (0x1F, 2024-01-01, yes): 17 is plain.
        if text is not None and (text != str(value) or isinstance(value, datetime.date | bool)):
            return Problem(
                f"expected a string, but YAML reads {text} as {_kind(value)}; write it in "
                f'quotes ("{text}")',
                key,
                position,
            )
    if kind == "literal_error" and isinstance(value, str) and value.strip().isdigit():
        return Problem(f"write {value.strip()} without quotes: it is a number", key, position)
    if loc and loc[-1] == "[key]":
        # A mapping key the schema refused (an empty resource name): name the mapping.
        what = "may not be empty" if kind == "string_too_short" else error["msg"]
        return Problem(f"a name in this mapping {what}", dotted(loc[:-2]), position)
    if kind == "missing":
        return Problem(f"missing required key {loc[-1]!r}", dotted(loc[:-1]), position)
    if kind == "list_type":
        example = " (write tags as a YAML list, e.g. [rack10, network1])" if _is_tags(loc) else ""
        return Problem(f"expected a list, got {_kind(value)}{example}", key, position)
    if kind == "string_pattern_mismatch":
        if _is_tags(loc[:-1]):
            return Problem(
                f"tag {quoted(value)} contains a comma or a space; write each tag as its own list "
                "item, e.g. [rack10, network1]",
                key,
                position,
            )
        what = "spaces" if loc and loc[-1] in ("id", "target") else "spaces or slashes"
        return Problem(f"{quoted(value)} may not contain {what}", key, position)
    if kind == "string_too_short":
        return Problem("may not be empty", key, position)
    if kind in {"string_type", "int_type", "float_type", "bool_type", "dict_type", "model_type"}:
        wanted = {
            "string_type": "a string",
            "int_type": "an integer",
            "float_type": "a number",
            "bool_type": "a boolean",
            "dict_type": "a mapping",
            "model_type": "a mapping",
        }[kind]
        return Problem(f"expected {wanted}, got {_kind(value)}", key, position)
    if kind == "property_type":
        return Problem(
            f"expected a string, a number, a boolean or a list of strings, got {_kind(value)}",
            key,
            position,
        )
    if kind == "greater_than_equal":
        return Problem(f"must be at least {error['ctx']['ge']}, got {quoted(value)}", key, position)
    if kind == "less_than_equal":
        if loc and loc[-1] == "units":
            return Problem(
                f"{value:,} units; placed takes at most {error['ctx']['le']:,} per workload "
                "(split it into several workloads)",
                key,
                position,
            )
        return Problem(f"must be at most {error['ctx']['le']}, got {quoted(value)}", key, position)
    if kind == "finite_number":
        return Problem(f"must be a finite number, got {quoted(value)}", key, position)
    if kind == "literal_error":
        allowed = error.get("ctx", {}).get("expected", "")
        close = (
            difflib.get_close_matches(value, re.findall(r"'([^']*)'", allowed), n=1, cutoff=0.6)
            if isinstance(value, str)
            else []
        )
        hint = f"; did you mean {close[0]!r}?" if close else ""
        return Problem(f"got {quoted(value)}; expected one of {allowed}{hint}", key, position)
    return Problem(f"{error['msg']} (got {_kind(value)})", key, position)


def _is_tags(path: Path) -> bool:
    return (
        bool(path)
        and isinstance(path[-1], str)
        and (path[-1] == "tags" or path[-1].endswith("affinity") or path[-1] == "anti_tags")
    )


# -- document -> model ----------------------------------------------------------------


_NO_RULES = TagRules()


def _build(
    document: SpecDocument,
    sources: SourceMap,
    source: str,
    chunks: Iterator[Iterator[tuple[int, LocationSpec]]] | None = None,
    spine: Sequence[tuple[LocationSpec, int]] = (),
    known: Tenancy | None = None,
) -> Spec:
    """`chunks`: the inventory's roots, validated a chunk at a time (else the document's);
    or, with a `spine` (single locations, each the only child of the one before, validated
    without their children), the children of the spine's last."""
    problems: list[Problem] = []
    out = Collector(sources, problems)
    seen: dict[str, Path] = {}
    capacities = _Capacities()

    # A spine location's children, as (how many, (index, spec) each), in place of its own.
    given: dict[int, tuple[int, Iterable[tuple[int, LocationSpec]]]] = {}

    def location(spec: LocationSpec, path: Path) -> Location:
        found = given.get(id(spec)) if given else None
        count, children_specs = found or (len(spec.children), enumerate(spec.children))
        first = seen.get(spec.id)
        if first is not None:
            line = sources.value((*first, "id"))
            where = f" (first at line {line.line})" if line else ""
            problems.append(
                Problem(
                    f"duplicate target id {spec.id!r}{where}; "
                    "ids must be unique across the inventory",
                    dotted((*path, "id")),
                    sources.value((*path, "id")),
                )
            )
        else:
            seen[spec.id] = path
        if spec.capacity is not None and count:
            problems.append(
                Problem(
                    "capacity belongs on targets (locations without children); "
                    f"{spec.id!r} has {count} children",
                    dotted((*path, "capacity")),
                    sources.value((*path, "capacity")),
                )
            )
        capacity = (
            capacities.get(spec.capacity, (*path, "capacity"), out)
            if spec.capacity is not None
            else None
        )
        children = tuple(location(child, (*path, "children", i)) for i, child in children_specs)
        # Most locations have no tag rules: one shared empty value saves five sets each.
        rules = (
            TagRules(
                hard_affinity=_interned(spec.hard_affinity),
                hard_anti_affinity=_interned(spec.hard_anti_affinity) | _interned(spec.anti_tags),
                soft_affinity=_interned(spec.soft_affinity),
                soft_anti_affinity=_interned(spec.soft_anti_affinity),
            )
            if spec.hard_affinity
            or spec.hard_anti_affinity
            or spec.anti_tags
            or spec.soft_affinity
            or spec.soft_anti_affinity
            else _NO_RULES
        )
        return Location(
            id=spec.id,
            kind=sys.intern(spec.kind),  # kinds repeat: one string each
            tags=_interned(spec.tags),
            properties=openhorizon.properties(spec.properties, (*path, "properties"), "node", out),
            constraints=(
                openhorizon.constraints(spec.constraints, (*path, "constraints"), out)
                if spec.constraints
                else ()
            ),
            agent=openhorizon.agent(spec, path, out),
            rules=rules,
            capacity=capacity,
            status=spec.status,
            children=children,
        )

    if chunks is None:
        chunks = iter([enumerate(document.inventory)])
    if spine:
        for (outer, _), (inner, _) in itertools.pairwise(spine):
            given[id(outer)] = (1, ((0, inner),))
        last, count = spine[-1]
        given[id(last)] = (count, itertools.chain.from_iterable(chunks))
        roots: tuple[Location, ...] = (location(spine[0][0], ("inventory", 0)),)
    else:
        roots = tuple(location(root, ("inventory", i)) for chunk in chunks for i, root in chunk)
    kinds = {node.kind for root in roots for node in root.walk()}
    settings = Settings(
        default_mode=document.settings.default_mode,
        implicit_dedication=document.settings.implicit_dedication,
        now=document.settings.now,
    )
    names: dict[str, int] = {}
    workloads = []
    for i, spec in enumerate(document.workloads):
        path: Path = ("workloads", i)
        if spec.name in names:
            problems.append(
                Problem(
                    f"duplicate workload name {spec.name!r} "
                    f"(first is workloads[{names[spec.name]}])",
                    dotted((*path, "name")),
                    sources.value((*path, "name")),
                )
            )
        names.setdefault(spec.name, i)
        workloads.append(_workload(spec, settings, path, out, kinds))
    affinity.check_workloads(document.workloads, names, out)
    total = sum(w.units for w in workloads if w.mode != "every")
    if total > MAX_TOTAL_UNITS:
        out.add(
            f"the workloads ask for {total:,} units together; placed plans at most "
            f"{MAX_TOTAL_UNITS:,} per spec",
            ("workloads",),
        )
    tenants = None
    if cloudstack.uses_tenancy(document):
        tenants = cloudstack.tenancy(document, out, known)
        workloads = cloudstack.tenant_workloads(document, workloads, tenants, settings, out)
    inventory = Inventory.from_roots(roots)
    if document.running or any(
        w.to is not None or w.juju_constraints or w.new_machines for w in document.workloads
    ):
        ids = {target.id for target in inventory.targets}
        running = native.running_units(document.running, ids, out)
        workloads = native.directed_workloads(document.workloads, workloads, ids, running, out)
    else:
        running = ()
    dedications: tuple[Dedication, ...] = ()
    events: tuple[Event, ...] = ()
    storage = None
    if tenants is not None and not problems:
        located, dedications, events, storage = cloudstack.apply_dedications(
            document, roots, tenants, workloads, running, out
        )
        if located is not roots:
            roots, inventory = located, Inventory.from_roots(located)
        disks = {o.name: o.disk for o in document.offerings}
        workloads = cloudstack.with_storage(workloads, storage, disks, dedications)
    if problems:
        raise SpecError(source, problems)
    name = document.name or FilePath(source).stem
    return Spec(
        inventory,
        tuple(mirror_avoids(workloads)),
        settings,
        source,
        name,
        running,
        tenancy=tenants,
        dedications=dedications,
        events=events,
        offerings=tuple(
            Offering(o.name, o.cpu, o.memory, o.disk, o.dedicated, o.implicit)
            for o in document.offerings
        ),
        storage=storage,
    )


def _interned(tags: list[str]) -> frozenset[str]:
    if len(tags) < 5:
        return frozenset(map(sys.intern, tags))
    # Through a dict: a set built from one is sized for its length, where one grown item
    # by item takes twice the table (5 or 6 tags: 728 bytes, not 472).
    return frozenset(dict.fromkeys(map(sys.intern, tags)))


class _Capacities:
    """One dict per distinct capacity: a fleet has a few dozen shapes of host, and no one
    changes a location's capacity once it is read (targets only read it)."""

    def __init__(self) -> None:
        self._shared: dict[tuple[tuple[str, float], ...], dict[str, float]] = {}

    def get(self, capacity: dict[str, float], path: Path, out: Collector) -> dict[str, float]:
        """The shared dict of `capacity`'s shape, its amounts checked once per shape
        (a shape with a problem is checked, and reported, wherever it stands)."""
        key = tuple(capacity.items())
        found = self._shared.get(key)
        if found is None:
            found = dict(capacity)
            problems = len(out.problems)
            _check_amounts(capacity, "capacity", path, out)
            if len(out.problems) == problems:
                self._shared[key] = found
        return found


def _workload(
    spec: WorkloadSpec, settings: Settings, path: Path, out: Collector, kinds: set[str]
) -> Workload:
    sources, problems = out.sources, out.problems
    mode = spec.mode or settings.default_mode
    if mode == "every" and "units" in spec.model_fields_set:
        out.add(
            "an every-mode workload runs one unit on every compatible target, so it takes "
            "no units; drop units (or use mode: allocation for a fixed number)",
            (*path, "units"),
        )
    if mode == "mapping" and spec.resources:
        problems.append(
            Problem(
                "a mapping workload consumes no capacity, so it cannot request resources; "
                "use mode: allocation",
                dotted((*path, "resources")),
                sources.value((*path, "resources")),
            )
        )
    _check_amounts(spec.resources, "resource", (*path, "resources"), out)
    if spec.max_load is not None and mode != "mapping":
        out.add(
            f"max_load balances mapping workloads; this one is in {mode} mode "
            "(set mode: mapping, or drop max_load)",
            (*path, "max_load"),
        )
    return Workload(
        name=spec.name,
        units=spec.units,
        mode=mode,
        resources=dict(spec.resources),
        max_load=spec.max_load,
        # Each family's section of the workload, read by that family's spec module.
        requests=tuple(
            found
            for found in (
                Tagged(frozenset(spec.tags)) if spec.tags else None,
                openhorizon.deployment(spec, path, out),
                distinct.request(spec, mode, path, out, kinds),
                affinity.spread(spec, mode, path, out, kinds),
                *affinity.affinity(spec, mode, path, out, kinds),
            )
            if found is not None
        ),
    )


def _check_amounts(amounts: dict[str, float], what: str, path: Path, out: Collector) -> None:
    # inf and nan parse as YAML floats; inf - 1 is still inf, so they would break the
    # arithmetic of capacity (and nan every comparison) rather than mean "unlimited".
    infinite = [
        f"{name} ({amount})" for name, amount in amounts.items() if not math.isfinite(amount)
    ]
    if infinite:
        out.add(f"{what} amounts must be finite numbers: {', '.join(infinite)}", path)
    negative = [name for name, amount in amounts.items() if math.isfinite(amount) and amount < 0]
    if negative:
        out.add(f"{what} amounts may not be negative: {', '.join(negative)}", path)
