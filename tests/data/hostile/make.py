"""The hostile inputs too big to keep in the repository, written at test time.

`write(directory)` writes every file of GENERATED into `directory` (the test uses a
temporary one); `python tests/data/hostile/make.py DIR` does the same by hand, to try one
on the command line. Each generator returns the file's bytes; `expectations.yaml` says
what every command must do with each file, as it does for the files kept beside this one.

Three inputs are not files of fixed content, and `special(kind, directory)` makes them:
`zero` is /dev/zero (endless NUL bytes), `fifo` a named pipe a thread keeps writing
endless YAML into until the reader goes away (see `Endless`), and `oversize` a sparse file
of 1 GiB + 1 byte that costs no disk: a loader that reads it before looking at its size
runs out of the test's 1 GiB of memory.
"""

from __future__ import annotations

import contextlib
import errno
import os
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

MiB = 1024 * 1024
GiB = 1024 * MiB


def _deep_children(levels: int) -> bytes:
    """A chain of locations `levels` deep (the leaf is the only target), in flow style so
    that the file grows linearly, and one mapping workload `x` that lands on the leaf."""
    opening = "".join(f'{{"id": "l{i}", "kind": "k{i}", "children": [' for i in range(levels - 1))
    leaf = f'{{"id": "l{levels - 1}", "tags": ["a"]}}'
    closing = "]}" * (levels - 1)
    return (
        f"# A location tree {levels} levels deep.\n"
        f"inventory:\n  - {opening}{leaf}{closing}\n"
        "workloads:\n  - {name: x, mode: mapping, tags: [a]}\n"
    ).encode()


def _nested_lists(depth: int) -> str:
    return "[" * depth + "a" + "]" * depth


def _nested_mappings(depth: int) -> str:
    return "{a: " * depth + "1" + "}" * depth


def deep_lists() -> bytes:
    return (
        "# 10,000 nested lists where a tag list is expected.\n"
        "inventory:\n  - id: h1\n"
        f"    tags: {_nested_lists(10_000)}\n"
        "workloads: []\n"
    ).encode()


def deep_properties() -> bytes:
    return (
        "# Properties 10,000 mappings deep.\n"
        "inventory:\n  - id: h1\n"
        f"    properties: {{purpose: {_nested_mappings(10_000)}}}\n"
        "workloads: []\n"
    ).encode()


def deep_parens(depth: int) -> str:
    return "(" * depth + 'purpose == "x"' + ")" * depth


def deep_parens_spec() -> bytes:
    return (
        "# A constraint of 100,000 nested parentheses.\n"
        "inventory:\n  - id: h1\n    properties: {purpose: x}\n"
        "workloads:\n  - name: x\n    mode: mapping\n"
        f"    constraints: ['{deep_parens(100_000)}']\n"
    ).encode()


def long_value() -> bytes:
    value = "v" * MiB
    return (
        "# A property value of 1 MiB on one line: legal.\n"
        "inventory:\n  - id: h1\n"
        f"    properties: {{purpose: x, blob: {value}}}\n"
        "workloads:\n  - {name: x, mode: mapping}\n"
    ).encode()


def long_value_error() -> bytes:
    tag = "t" * MiB + " oops"
    return (
        "# A 1 MiB tag with a space at its end: the error quotes a short excerpt.\n"
        f"inventory:\n  - id: h1\n    tags: ['{tag}']\nworkloads: []\n"
    ).encode()


def long_key() -> bytes:
    return (
        f"# An unknown key of 1 MiB.\ninventory:\n  - id: h1\n    {'k' * MiB}: 1\nworkloads: []\n"
    ).encode()


def long_constraint() -> bytes:
    terms = " && ".join(f'purpose != "p{i}"' for i in range(2_000))
    return (
        "# A constraint of 2,000 ANDed terms on one line: legal.\n"
        "inventory:\n  - id: h1\n    properties: {purpose: x}\n"
        f"workloads:\n  - name: x\n    mode: mapping\n    constraints: ['{terms}']\n"
    ).encode()


def long_constraint_error() -> bytes:
    terms = " && ".join(f'purpose != "p{i}"' for i in range(10_000))
    return (
        "# A constraint of 200 KB with a mistake at its very end: the error quotes an excerpt.\n"
        "inventory:\n  - id: h1\n"
        f"workloads:\n  - name: x\n    mode: mapping\n    constraints: ['{terms} && cpu <']\n"
    ).encode()


def many_separators() -> bytes:
    return b"---\n" * 100_000


def many_documents() -> bytes:
    document = (
        "--- {{name: d{0}, inventory: [{{id: h1}}], workloads: [{{name: x, mode: mapping}}]}}\n"
    )
    return "".join(document.format(i) for i in range(1_000)).encode()


def many_errors() -> bytes:
    workloads = "".join(f"  - {{name: w{i}, tag: [a]}}\n" for i in range(5_000))
    return f"inventory:\n  - id: h1\nworkloads:\n{workloads}".encode()


def oh_deep() -> bytes:
    return (
        '{\n  "properties": [\n'
        f'    {{"name": "site", "value": {_nested_lists(10_000).replace("a", "1")}}}\n'
        '  ],\n  "constraints": []\n}\n'
    ).encode()


def props_deep() -> bytes:
    return f"purpose: {_nested_lists(10_000)}\n".encode()


def props_long() -> bytes:
    return f'purpose: "[/x]"\nblob: {"v" * MiB}\n'.encode()


def deep_parens_expression() -> bytes:
    # 60,000 levels: the whole expression is one command-line argument, and Linux takes
    # at most 128 KiB in one (MAX_ARG_STRLEN).
    return deep_parens(60_000).encode()


GENERATED: dict[str, Callable[[], bytes]] = {
    "deep-children.yaml": lambda: _deep_children(200),
    "deep-children-10000.yaml": lambda: _deep_children(10_000),
    "deep-lists.yaml": deep_lists,
    "deep-properties.yaml": deep_properties,
    "deep-parens.yaml": deep_parens_spec,
    "long-value.yaml": long_value,
    "long-value-error.yaml": long_value_error,
    "long-key.yaml": long_key,
    "long-constraint.yaml": long_constraint,
    "long-constraint-error.yaml": long_constraint_error,
    "many-separators.yaml": many_separators,
    "many-documents.yaml": many_documents,
    "many-errors.yaml": many_errors,
    "oh-deep.node.policy.json": oh_deep,
    "props-deep.yaml": props_deep,
    "props-long.yaml": props_long,
    "deep-parens.expr": deep_parens_expression,
}


def write(directory: Path) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    for name, make in GENERATED.items():
        (directory / name).write_bytes(make())


# -- inputs that are not ordinary files ---------------------------------------------------


class Endless:
    """A named pipe fed endless YAML (`inventory:` and then list items forever) by a
    thread, for as long as a reader holds it open: /dev/zero with text in it, so that a
    loader that reads to the end never gets there."""

    CHUNK = b"  - {id: h, tags: [a, b, c]}\n" * 4096

    def __init__(self, path: Path) -> None:
        self.path = path
        os.mkfifo(path)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._feed, daemon=True)
        self._thread.start()

    def _feed(self) -> None:
        while not self._stop.is_set():
            try:
                # Non-blocking: there is no reader yet (ENXIO) until the command opens it.
                fd = os.open(self.path, os.O_WRONLY | os.O_NONBLOCK)
            except OSError as error:
                if error.errno != errno.ENXIO:
                    raise
                self._stop.wait(0.01)
                continue
            os.set_blocking(fd, True)
            try:
                os.write(fd, b"inventory:\n")
                while not self._stop.is_set():
                    os.write(fd, self.CHUNK)
            except BrokenPipeError:
                pass  # the reader went away: ready for the next one
            finally:
                os.close(fd)

    def close(self) -> None:
        self._stop.set()
        # A writer blocked in write() needs its reader to go away: open and close the
        # read end, which also wakes one that is between open attempts.
        with contextlib.suppress(OSError):
            fd = os.open(self.path, os.O_RDONLY | os.O_NONBLOCK)
            os.close(fd)
        self._thread.join(timeout=5)


@contextlib.contextmanager
def special(kind: str, directory: Path) -> Iterator[Path]:
    """The path of one input that is not a file of fixed content (see the docstring)."""
    if kind == "zero":
        yield Path("/dev/zero")
    elif kind == "fifo":  # `directory` is the case's own
        path = directory / "endless.yaml"
        endless = Endless(path)
        try:
            yield path
        finally:
            endless.close()
            path.unlink()
    elif kind == "oversize":
        path = directory / "oversize.yaml"
        if not path.exists():
            with path.open("wb") as file:
                file.write(b"inventory:\n  - id: h1\n")
                file.truncate(GiB + 1)  # sparse: NUL bytes that take no disk
        yield path
    else:
        raise ValueError(f"no special input {kind!r}")


if __name__ == "__main__":
    target = Path(sys.argv[1] if len(sys.argv) > 1 else ".")
    write(target)
    print(f"wrote {len(GENERATED)} files into {target}")
