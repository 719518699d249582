"""The block reader (plain block YAML read a line at a time) against libyaml's events:
whatever the block reader accepts, the events read as the same data; whatever it does
not, it leaves to them. Texts are written here in the styles an inventory script uses
and in many it does not (compact lists, odd indentation, quoting, comments, flow
collections), then broken a character at a time.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from placed.spec import load_specs_text
from placed.spec import source as spec_source


def events(text: str) -> list[Any] | None:
    """What the events path reads, or None where it gives up (the careful path reads it)."""
    loader = spec_source._BASE_LOADER(text)
    try:
        return spec_source._read_events(loader.get_event)
    except (spec_source._NotFast, yaml.YAMLError, RecursionError):
        return None
    finally:
        loader.dispose()


def assert_alike(text: str) -> bool:
    """The block reader's data is the events' (types too: True is not 1); True if the
    block reader read the text."""
    block = spec_source._block_yaml(text)
    if block is None:
        return False
    expected = events(text)
    assert expected is not None, f"the block reader read what the events refuse:\n{text}"
    assert block == expected and repr(block) == repr(expected), text
    return True


INVENTORY = """\
name: load-3
inventory:
  - id: "z000"
    kind: "zone"
    tags: ["zone0"]
    children:
      - id: "r00000"
        kind: "rack"
        tags: ["rack0"]
        children:
          - id: "h000000"
            kind: "host"
            tags: ["tag000", "tag004", "tag017"]
            properties:
              purpose: "lab"
              gpu: false
              arch: "amd64"
              agentVersion: "2.3.1"
              features: "tpu,gps"
            capacity: {cpu: 8, memory: 64}
          - id: "h000001"
            kind: "host"
            tags: []
            properties:
              purpose: "prod"
              gpu: true
            capacity: {cpu: 16, memory: 128.5}
workloads:
  - {name: "web", units: 20, tags: ["tag000", "tag001"], resources: {cpu: 2}}
  - {name: "inference", units: 10, constraints: ["purpose == \\"lab\\" && gpu == true"]}
  - {name: "agent", mode: "every", constraints: "arch == \\"amd64\\""}
"""

HAND_WRITTEN = """\
# A fleet written by hand: compact lists, plain values, comments and blank lines.
name: edge
settings: {default_mode: allocation}

inventory:
- id: site-a
  kind: site
  tags: [north, 'lab-one', "x"]
  children:
  - id: a/1
    tags:
    - gpu
    - camera
    properties: {purpose: lab, version: 2.3.1, count: 017, day: "2024-01-02"}
    capacity:
        cpu: 4
        memory: 1_024
  # a comment between items
  - id: a/2
    status: down
workloads:
  - name: web
    units: 3
    tags: [gpu]
""".replace("site-a\n", "site-a   \n")  # trailing spaces


def test_an_inventory_scripts_yaml_is_read_by_the_block_reader() -> None:
    assert assert_alike(INVENTORY)
    assert assert_alike(HAND_WRITTEN)
    # A list item's keys stand where its first key does, however far from the dash.
    assert assert_alike("x:\n-   a: 1\n    b: [2]\n-  c: 3\n   d:\n   - 4\n")


def test_a_line_read_again_gives_values_of_its_own() -> None:
    """Each distinct line is worked out once, yet every list and mapping read from a
    repeated line is a new one: changing one host's changes no other's."""
    text = "hosts:\n" + "".join(
        f'  - id: "h{i}"\n    tags: ["a", "b"]\n    marks: [x, 2]\n'
        "    capacity: {cpu: 4, memory: 16}\n    nested: [[1], {k: v}]\n"
        for i in range(3)
    )
    assert assert_alike(text)
    read = spec_source._block_yaml(text)
    assert read is not None
    first, second, third = read[0]["hosts"]
    for key in ("tags", "marks", "capacity", "nested"):
        assert first[key] == second[key] == third[key]
        assert first[key] is not second[key] and second[key] is not third[key]
    first["tags"].append("c")
    first["capacity"]["cpu"] = 8
    first["nested"][0].append(2)
    assert second["tags"] == ["a", "b"] and second["capacity"]["cpu"] == 4
    assert second["nested"] == [[1], {"k": "v"}]


def test_a_spec_loads_alike_through_either_read(monkeypatch: pytest.MonkeyPatch) -> None:
    assert spec_source._block_yaml(HAND_WRITTEN) is not None
    fast = load_specs_text(HAND_WRITTEN, "spec.yaml")
    monkeypatch.setattr(spec_source, "_block_yaml", lambda text: None)
    assert load_specs_text(HAND_WRITTEN, "spec.yaml") == fast


LEFT_TO_THE_EVENTS = {
    "empty value": "a:\nb: 1\n",
    "empty value at the end": "a: 1\nb:\n",
    "comment after a value": "a: 1 # one\n",
    "tab": "a:\n\tb: 1\n",
    "carriage return": "a: 1\r\nb: 2\r\n",
    "control character in a comment": "a: 1\n# \x01\nb: 2\n",
    "delete character in a comment": "a: 1 \n#\x7f\n",
    "not ascii": "a: café\n",
    "two documents": "a: 1\n---\nb: 2\n",
    "document start": "---\na: 1\n",
    "anchor and alias": "a: &x 1\nb: *x\n",
    "tag": "a: !!str 1\n",
    "quoted key": '"a": 1\n',
    "number key": "1: a\n",
    "boolean key": "yes: a\n",
    "merge key": "<<: {a: 1}\n",
    "duplicate key": "a: 1\na: 2\n",
    "duplicate flow key": "a: {b: 1, b: 2}\n",
    "a value over two lines": "a: one\n  two\n",
    "block scalar": "a: |\n  text\n",
    "plain value with a space": "a: b c\n",
    "plain value with a colon": "a: 12:30\n",
    "flow over two lines": "a: [1,\n  2]\n",
    "trailing comma": "a: [1, 2,]\n",
    "escape": 'a: "\\x41"\n',
    "list at the top": "- a\n- b\n",
    "list in a list": "a:\n  - - 1\n",
    "long integer": "a: 1234567890123456789\n",
    "less indented than the first line": "  a: 1\nb: 2\n",
    "indentation between two blocks": "a:\n    b: 1\n  c: 2\n",
    "a key under a list item's column": "a:\n  - b: 1\n   c: 2\n",
    "a list item's keys out of line": "x:\n-   a: 1\n  b: 2\n",
    "long key": "k" * 1025 + ": 1\n",
    "long flow key": "a: {" + "k" * 1025 + ": 1}\n",
    "empty file": "",
    "only a comment": "# nothing\n",
}


@pytest.mark.parametrize("name", sorted(LEFT_TO_THE_EVENTS))
def test_what_the_block_reader_does_not_read_is_left_to_the_events(name: str) -> None:
    assert spec_source._block_yaml(LEFT_TO_THE_EVENTS[name]) is None


def test_values_past_the_bound_are_left_to_the_events(monkeypatch: pytest.MonkeyPatch) -> None:
    spec = "a:\n" + "".join(f"  - {{id: h{i}}}\n" for i in range(20))
    assert spec_source._block_yaml(spec) is not None
    monkeypatch.setattr(spec_source, "MAX_EXPANDED", 50)
    assert spec_source._block_yaml(spec) is None


def test_nesting_past_the_bound_is_left_to_the_events(monkeypatch: pytest.MonkeyPatch) -> None:
    spec = "a:\n" + "".join("  " * i + f"k{i}:\n" for i in range(1, 8)) + "  " * 8 + "v: 1\n"
    assert spec_source._block_yaml(spec) is not None
    monkeypatch.setattr(spec_source, "MAX_DEPTH", 10)
    assert spec_source._block_yaml(spec) is None
    flow = "a: " + "[" * 8 + "]" * 8 + "\n"
    assert spec_source._block_yaml(flow) is None


# -- random documents, written in random block styles, then broken ----------------------

_WORDS = ["a", "b", "yes", "No", "on", "1", "0x1F", "017", "1_000", "~", "null", "", "1.5"]
_WORDS += [".inf", "-.5", "-7", "+3", "2024-01-01", "1:30", "a b", "-x", "- a", "a: b", "#"]
_WORDS += ["x#y", "[x]", "{x}", "a,b", "it's", 'say "hi"', "back\\slash", "tab\there"]
_WORDS += ["line\nbreak", "9" * 19, "2.3.1", "a/b", "a.b", "_k", "x-y", "<<", "*a", "&a"]
_KEYS = ["id", "kind", "tags", "a", "b", "x-y", "a.b", "_k", "yes", "1", "a b", "<<", "k:"]

_scalars = st.one_of(
    st.sampled_from(_WORDS),
    st.integers(-(10**19), 10**19),
    st.booleans(),
    st.none(),
    st.floats(allow_nan=False),
)
_documents = st.recursive(
    _scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(st.sampled_from(_KEYS), inner, max_size=4),
    ),
    max_leaves=30,
)


class Writer:
    """Writes a value as block YAML, each choice of style drawn from `draw`."""

    def __init__(self, draw: Any) -> None:
        self.draw = draw
        self.lines: list[str] = []

    def choose(self, *options: Any) -> Any:
        return self.draw(st.sampled_from(options))

    def word(self, *options: str) -> str:
        return str(self.choose(*options))

    def scalar(self, value: Any) -> str:
        if isinstance(value, str):
            how = self.choose("plain", "double", "single")
            if how == "plain":
                return value
            if how == "double":
                return json.dumps(value)
            return "'" + value.replace("'", "''") + "'"
        if value is None:
            return self.word("~", "null", "")
        if isinstance(value, bool):
            return self.word(str(value).lower(), str(value))
        return repr(value)

    def flow(self, value: Any) -> str:
        comma = self.word(", ", ",", " , ")
        if isinstance(value, dict):
            inner = comma.join(f"{self.key(k)}: {self.flow(v)}" for k, v in value.items())
            return self.word("{" + inner + "}", "{ " + inner + " }")
        if isinstance(value, list):
            return "[" + comma.join(self.flow(v) for v in value) + "]"
        return self.scalar(value)

    def key(self, key: str) -> str:
        return self.scalar(key) if self.choose(True, False, False) else key

    def line(self, text: str) -> None:
        if self.choose(False, False, False, True):
            self.lines.append(self.choose("", "   ", "# note", "  # note"))
        self.lines.append(text + self.choose("", "", " "))

    def block(self, value: Any, indent: int, lead: str = "") -> None:
        """`lead`: the dash (and spaces) the first line of `value` starts with."""
        pad = " " * indent
        if isinstance(value, dict) and value:
            first = True
            for key, item in value.items():
                start = (pad + lead) if first else " " * (indent + len(lead))
                first = False
                inner = indent + len(lead)
                if isinstance(item, dict | list) and item and self.choose(True, False):
                    self.line(f"{start}{self.key(key)}:")
                    if isinstance(item, list) and self.choose(True, False):
                        self.block(item, inner)  # the list at its key's column
                    else:
                        self.block(item, inner + self.choose(1, 2, 4))
                else:
                    self.line(f"{start}{self.key(key)}: {self.flow(item)}")
        elif isinstance(value, list) and value and not lead:
            for item in value:
                dash = self.choose("- ", "- ", "-   ")
                if isinstance(item, dict | list) and item and self.choose(True, False):
                    self.block(item, indent, dash)
                else:
                    self.line(f"{pad}{dash}{self.flow(item)}")
        else:
            self.line(f"{pad}{lead}{self.flow(value)}")

    def document(self, value: Any) -> str:
        self.block(value, self.choose(0, 0, 2))
        return "\n".join(self.lines) + self.word("\n", "", "\n\n")


_BREAKS = [" ", "  ", "#", ":", "-", "- ", "\t", "'", '"', "&", "*", "!", "[", "]", ",", "\n"]
_BREAKS += ["{", "}", "?", "|", ">", "\\", "~", "é", "\r", "---\n", "a: 1\n", "  - x\n"]


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data(), st.dictionaries(st.sampled_from(_KEYS), _documents, min_size=1, max_size=4))
def test_random_block_documents_read_alike(data: Any, document: dict[str, Any]) -> None:
    text = Writer(data.draw).document(document)
    assert_alike(text)
    lines = text.splitlines(keepends=True)
    twice = data.draw(st.integers(0, max(0, len(lines) - 1)))
    assert_alike("".join([*lines[: twice + 1], *lines[twice:]]))  # often a duplicate key
    for _ in range(data.draw(st.integers(0, 3))):
        at = data.draw(st.integers(0, len(text)))
        text = text[:at] + data.draw(st.sampled_from(_BREAKS)) + text[at:]
        assert_alike(text)


def test_random_documents_are_mostly_read_by_the_block_reader() -> None:
    """The comparison above compares something: documents of the kinds of keys and values
    an inventory has (text keys, plain and quoted values) are read by the block reader."""
    read = 0

    @settings(max_examples=200, deadline=None, database=None, derandomize=True)
    @given(st.data())
    def write(data: Any) -> None:
        nonlocal read
        value = data.draw(
            st.recursive(
                st.sampled_from(["a", "b", "2.3.1", "h-001", 17, 1.5, True]),
                lambda inner: st.one_of(
                    st.lists(inner, min_size=1, max_size=3),
                    st.dictionaries(st.sampled_from(["id", "kind", "tags"]), inner, min_size=1),
                ),
                max_leaves=12,
            )
        )
        text = Writer(data.draw).document({"inventory": value})
        read += assert_alike(text)

    write()
    assert read >= 100, read
