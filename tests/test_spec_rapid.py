"""The rapidyaml route (spec/rapid.py) against libyaml's event path: on generated YAML
(plain and quoted scalars of every kind YAML 1.1 and 1.2 read differently, block and flow
collections, unicode, comments, anchors, tags, several documents), ryml either declines
or gives exactly what the event path gives, type for type (True is not 1, 1.0 is not 1),
key order included; where the event path declines too, the careful path is the reference.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from placed.spec import load_specs_text, rapid
from placed.spec import source as spec_source

pytest.importorskip("ryml")


@pytest.fixture(autouse=True)
def one_thread(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Threads other tests leave running would make ryml step aside everywhere."""
    if "threads" not in request.node.name:
        monkeypatch.setattr(rapid, "alone", lambda: True)


def typed(value: Any) -> Any:
    """The value with every type spelled out, so that equality compares types too."""
    if isinstance(value, dict):
        return ("map", [(typed(k), typed(v)) for k, v in value.items()])
    if isinstance(value, list):
        return ("seq", [typed(v) for v in value])
    if isinstance(value, float) and value != value:
        return ("float", "nan")
    return (type(value).__name__, value)


def reference(text: str) -> list[Any] | None:
    """What placed reads without ryml: the event path, else the careful one (None: an error)."""
    read = spec_source._event_yaml(text)
    if read is not None:
        return read
    try:
        roots = spec_source._compose(text, "t.yaml")
        return [spec_source._convert(root, "t.yaml") for root in roots] or None
    except (spec_source.SpecError, RecursionError):
        return None


def check(text: str) -> bool:
    """ryml's answer equals the reference, or ryml declined; True when ryml answered."""
    fast = spec_source._rapid_yaml(text, smallest=0)
    if fast is None:
        return False
    expected = reference(text)
    assert expected is not None, f"ryml read what placed refuses:\n{text}"
    assert typed(fast) == typed(expected), text
    return True


# Plain scalars YAML 1.1 (PyYAML) and 1.2 (ryml) may read apart, and ordinary ones.
TRICKY = [
    *str.split("yes Yes YES no No NO on On ON off Off OFF y Y n N true True TRUE false False"),
    *str.split("FALSE ~ null Null NULL 0x1F 0x_1f 0o17 017 08 0b101 1_000 1:20 1:20.5 190:20:30"),
    *str.split("1.5 -.5 +.5 .5 1. -1. 1e3 1.5e3 1.5e+3 1.5E-3 .5e+3 -0 +12 -12 0 00 00.5 01.5"),
    *str.split(".inf -.inf +.inf .Inf .NaN .nan .NAN -0.0 0.0 3.0 10 -10.25 123456789012345678"),
    *str.split("1234567890123456789 99999999999999999999 2024-01-01 2001-12-14t21:59:43.10-05:00"),
    *str.split("2001-12-14 =  << h000001 tag001 2.5.1 lidar,gps x:y a#b a-b -x ./x é 日本 null_x"),
    "2001-12-14 21:59:43.10 -5",
    "a b",
    "trailing",
    "1 2",
    "yes no",
]
IDENTIFIERS = st.from_regex(r"[a-zA-Z][a-zA-Z0-9_.,:/ -]{0,8}[a-z0-9]", fullmatch=True)
# Mostly ordinary words, so that many documents hold no tricky one and ryml answers them.
WORDS = st.one_of(st.sampled_from(TRICKY), IDENTIFIERS, IDENTIFIERS, IDENTIFIERS, IDENTIFIERS)
TEXTS = WORDS | st.text(
    st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=8
)


@st.composite
def scalar(draw: st.DrawFn) -> str:
    """A scalar as written: plain (a word), double-quoted (with escapes) or single-quoted."""
    style = draw(st.sampled_from(["plain", "plain", "double", "single", "ascii"]))
    if style == "plain":
        return draw(WORDS)
    value = draw(TEXTS)
    if style == "single":
        return "'" + value.replace("'", "''") + "'"
    return json.dumps(value, ensure_ascii=style == "ascii")


def keys() -> st.SearchStrategy[str]:
    return scalar()


NODES = st.recursive(
    scalar(),
    lambda children: (
        st.lists(children, max_size=4).map(lambda items: ("seq", items))
        | st.lists(st.tuples(keys(), children), max_size=4).map(lambda pairs: ("map", pairs))
    ),
    max_leaves=20,
)


def flow(node: Any) -> str:
    if isinstance(node, str):
        return node
    kind, items = node
    if kind == "seq":
        return "[" + ", ".join(flow(item) for item in items) + "]"
    return "{" + ", ".join(f"{k}: {flow(v)}" for k, v in items) + "}"


def block(node: Any, indent: int, draw: st.DrawFn) -> list[str]:
    """Lines of the node in block style, collections sometimes in flow style."""
    pad = " " * indent
    if isinstance(node, str) or not node[1] or draw(st.integers(0, 4)) == 0:
        return [pad + flow(node)]
    kind, items = node
    lines: list[str] = []
    for item in items:
        key, value = item if kind == "map" else (None, item)
        lead = f"{pad}{key}:" if kind == "map" else f"{pad}-"
        if isinstance(value, str) or not value[1]:
            comment = draw(st.sampled_from(["", "", "  # note"]))
            lines.append(f"{lead} {flow(value)}{comment}")
        else:
            lines.append(lead)
            lines.extend(block(value, indent + 2, draw))
    return lines


@st.composite
def documents(draw: st.DrawFn) -> str:
    root = draw(NODES)
    text = "\n".join(block(root, 0, draw)) + "\n"
    # Mostly none, so that many documents reach ryml; each a feature ryml must decline.
    extras = ["anchor", "tag", "alias", "multi", "tab", "block"]
    extra = draw(st.sampled_from(["", *[""] * 8, *extras]))
    if extra == "anchor":
        text = text.replace(": ", ": &a ", 1)
    elif extra == "tag":
        text = text.replace(": ", ": !!str ", 1)
    elif extra == "alias":
        text = text.replace(": ", ": &a ", 1) + "z: *a\n"
    elif extra == "multi":
        text = f"---\n{text}---\n{text}"
    elif extra == "tab":
        text = text.replace(" ", "\t", 1)
    elif extra == "block":
        text = text + "z: |\n  x\n  y\n"
    return text


@settings(max_examples=600, deadline=None, suppress_health_check=list(HealthCheck))
@given(documents())
def test_ryml_reads_as_the_event_path_or_declines(text: str) -> None:
    check(text)


@pytest.mark.parametrize("word", TRICKY)
@pytest.mark.parametrize("form", ["a: {}\n", "- {}\n", "[{}]\n", "{}: x\n", "a: [b, {}]\n"])
def test_each_tricky_plain_scalar(word: str, form: str) -> None:
    check(form.format(word))
    check(form.format(json.dumps(word)))
    check(form.format("'" + word.replace("'", "''") + "'"))


READ = [
    "a: 1\nb: [x, 'y', \"z\"]\nc: {d: 2.5, e: true}\n",
    'a: "purpose == \\"lab\\" && gpu != true"\nb: [2.3.0, x]\n',
    "a:\n  - \n  - x\nb:\n",
    "- {name: web, units: 20, tags: [tag000, tag001]}\n",
    "a: x # comment\n# whole line\nb: 'it''s'\n",
    'a: "uni \\u00e9 \\t tab"\n',
    "a: -1\nb: 0\nc: 123456789012345678\n",
]


@pytest.mark.parametrize("text", READ)
def test_ryml_answers_the_usual_shapes(text: str) -> None:
    # These must take the fast route: were ryml to decline them, a large inventory with
    # an expression would read at the event path's speed again.
    assert check(text), "ryml should have read this"


DECLINED = [
    "a: &x 1\nb: *x\n",  # an alias: ryml writes it as its text
    "a: !!str 1\n",  # a tag: ryml drops it
    "a: 1\na: 2\n",  # a duplicate key
    "---\na: 1\n---\nb: 2\n",  # several documents
    "a:\tb\n",  # a tab: PyYAML and ryml read it apart
    "a: yes\n",  # YAML 1.1's boolean
    "a: -.5\n",  # a number ryml rewrites (-0.5) that PyYAML reads as text
    "a: 1e3\n",  # text to PyYAML, a number to ryml
    "1: a\n",  # a key that is not text
    "a: 1234567890123456789\n",  # too many digits
    "a: [1, 2\n",  # not YAML at all
    "a: |\n  x\n",  # a block scalar
    "a: '\u2028'\n",  # a line break to PyYAML only
    "<<: {a: 1}\n",  # a merge key
    "a: ''\n",  # empty text (JSON no longer tells it from an empty plain key)
    "[" * 100 + "]" * 100 + "\n",  # deeper than ryml's emitter goes
]


@pytest.mark.parametrize("text", DECLINED)
def test_ryml_declines(text: str) -> None:
    assert spec_source._rapid_yaml(text, smallest=0) is None


def test_small_files_and_threads_keep_the_event_path() -> None:
    text = "a: 1\n"
    assert spec_source._rapid_yaml(text) is None  # below RAPID_FROM
    assert spec_source._rapid_yaml(text, smallest=0) == [{"a": 1}]
    found: list[Any] = []
    if not rapid.alone():
        pytest.skip("another test left a thread running")
    assert spec_source._rapid_yaml(text, smallest=0) == [{"a": 1}]
    read = spec_source._rapid_yaml
    worker = threading.Thread(target=lambda: found.append(read(text, smallest=0)))
    worker.start()
    worker.join()
    assert found == [None]  # stderr is silenced only with one thread


def test_a_large_file_reads_through_ryml_with_its_errors_placed() -> None:
    hosts = "".join(
        f"  - id: h{i:06d}\n    tags: [t{i % 7}]\n    capacity: {{cpu: {i % 64 + 1}}}\n"
        for i in range(8000)
    )
    text = f"inventory:\n{hosts}"
    assert len(text) >= rapid.RAPID_FROM
    assert spec_source._rapid_yaml(text) is not None
    (spec,) = load_specs_text(text + "workloads: [{name: w, units: 2}]\n", "big.yaml")
    assert len(spec.inventory.targets) == 8000
    # An error found after the read still has its line and column.
    broken = text.replace("cpu: 17}", "cpu: lots}", 1)
    with pytest.raises(spec_source.SpecError) as caught:
        load_specs_text(broken, "big.yaml")
    line = broken[: broken.index("lots")].count("\n") + 1
    assert f"big.yaml:{line}:" in caught.value.render()


def test_ryml_errors_stay_off_stderr() -> None:
    code = (
        "from placed.spec import source as spec_source\n"
        "assert spec_source._rapid_yaml('a: [1, 2\\n' * 2, smallest=0) is None\n"
        "print('done')\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.stdout == "done\n"
    assert done.stderr == ""
