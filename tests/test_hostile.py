"""Hostile and huge input (issue 8): every file in tests/data/hostile/ through every command
that reads it, each in its own process under 1 GiB of address space and 10 s of CPU time,
held to tests/data/hostile/expectations.yaml (exit code, message, file:line:column, text
printed literally, and never a traceback); then random bytes and random YAML structures
through the loader, and a few through the CLI.

Each command runs in a process forked from one that has imported placed (see ZYGOTE),
one per CPU at a time, all started when the first case asks for its result: a small case
then costs about 0.05 s rather than the 0.6 s of a fresh interpreter, and the corpus's
time is that of its slow inputs. A case the code does not pass yet is in STILL_FAILING,
with what it does instead, and is marked xfail(strict): when a fix makes it pass, the
strict mark fails the test and says to remove its entry.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from placed.spec import SpecError, load_specs, load_specs_text

HOSTILE = Path(__file__).resolve().parent / "data" / "hostile"
EXPECTATIONS: list[dict[str, Any]] = yaml.safe_load(
    (HOSTILE / "expectations.yaml").read_text(encoding="utf-8")
)["inputs"]

MEMORY_LIMIT = 1024**3  # bytes of address space per command
TIMEOUT = 10.0  # seconds of CPU per command (RLIMIT_CPU: SIGXCPU past it)
# The wall-clock deadline only catches a command that waits instead of working: the budget
# is CPU time, which other jobs on a loaded machine do not inflate as they do the clock.
WALL_TIMEOUT = 60.0
COMMANDS = {
    "spec": ("plan", "check", "validate", "simulate", "explain"),
    "openhorizon": ("plan", "check", "validate", "convert"),
    "props": ("expr",),
}
ENTRY_KEYS = {
    "file", "kind", "about", "generated", "special", "exit", "message", "position",
    "max_stderr", "literal", "no_control", "quiet", "down", "unit", "expression",
    "expression_file", "commands",
}  # fmt: skip
COMMAND_KEYS = {"exit", "message", "position", "max_stderr", "literal", "no_control", "quiet"}

# A fresh process per command, as a user runs it: the limit is set by the child itself,
# first thing, rather than in preexec_fn, since the cases run from several threads and
# preexec_fn is not safe when the parent has threads.
CHILD = (
    "import resource, sys\n"
    f"resource.setrlimit(resource.RLIMIT_AS, ({MEMORY_LIMIT}, {MEMORY_LIMIT}))\n"
    f"resource.setrlimit(resource.RLIMIT_CPU, ({TIMEOUT:.0f}, {TIMEOUT + 1:.0f}))\n"
    "sys.argv[0] = 'placed'\n"
    "from placed.cli.main import run\n"
    "run()\n"
)

# Importing placed takes about 0.5 s of the 0.6 s a small command takes, and the corpus
# has hundreds of cases; so they run in processes forked from a "zygote" that has imported
# placed.cli.main once. The zygote reads one request per line ({argv, cwd, out, err}),
# forks, and the child changes directory, limits its memory, points its standard streams
# at files and runs the command as the `placed` script would (an exception that escapes
# prints its traceback and exits 1, as the interpreter does); the zygote kills it at the
# timeout and answers with the exit code (negative: the signal) or null for a timeout.
# test_zygote_answers_as_a_fresh_process holds the two ways to the same result.
ZYGOTE = f"""
import json, os, resource, signal, sys, time, traceback
from placed.cli.main import run

def child(request):
    code = 1
    try:
        os.chdir(request["cwd"])
        resource.setrlimit(resource.RLIMIT_AS, ({MEMORY_LIMIT}, {MEMORY_LIMIT}))
        resource.setrlimit(resource.RLIMIT_CPU, ({TIMEOUT:.0f}, {TIMEOUT + 1:.0f}))
        for fd, path, mode in ((0, os.devnull, os.O_RDONLY),
                               (1, request["out"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC),
                               (2, request["err"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC)):
            opened = os.open(path, mode, 0o600)
            os.dup2(opened, fd)
            os.close(opened)
        sys.argv = ["placed", *request["argv"]]
        try:
            run()
            code = 0
        except SystemExit as exit:
            if exit.code is None or isinstance(exit.code, int):
                code = exit.code or 0
            else:
                print(exit.code, file=sys.stderr)
        except BaseException:
            traceback.print_exc()
        sys.stdout.flush()
        sys.stderr.flush()
    except BaseException:
        traceback.print_exc()
    os._exit(code)

for line in iter(sys.stdin.readline, ""):
    request = json.loads(line)
    sys.stdout.flush()
    pid = os.fork()
    if pid == 0:
        child(request)
    deadline = time.monotonic() + request["timeout"]
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            code = os.waitstatus_to_exitcode(status)
            break
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            code = None
            break
        time.sleep(0.002)
    print(json.dumps({{"code": code}}), flush=True)
"""


def failing(reason: str, *files: str, commands: tuple[str, ...] = ()) -> dict[tuple[str, str], str]:
    """STILL_FAILING entries: each file with the given commands (all of its kind's when
    none are given), for `reason`."""
    kinds = {entry["file"]: entry.get("kind", "spec") for entry in EXPECTATIONS}
    return {
        (file, command): f"issue 8: {reason}"
        for file in files
        for command in commands or COMMANDS[kinds[file]]
    }


# (file, command) -> what it does today instead of what expectations.yaml asks: each is
# marked xfail(strict=True). Remove an entry (or a file from a group) once it passes.
STILL_FAILING: dict[tuple[str, str], str] = {}


# -- the cases -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Case:
    entry: int  # index into EXPECTATIONS
    command: str

    @property
    def input(self) -> dict[str, Any]:
        return EXPECTATIONS[self.entry]

    @property
    def file(self) -> str:
        return str(self.input["file"])

    @property
    def id(self) -> str:
        return f"{self.file}-{self.command}"

    def expect(self, key: str, default: Any = None) -> Any:
        """The expectation `key` for this command: its own, else the input's."""
        own = self.input.get("commands", {}).get(self.command, {})
        return own.get(key, self.input.get(key, default))


def all_cases() -> list[Case]:
    return [
        Case(index, command)
        for index, entry in enumerate(EXPECTATIONS)
        for command in COMMANDS[entry.get("kind", "spec")]
    ]


def parametrized() -> list[Any]:
    params = []
    for case in all_cases():
        reason = STILL_FAILING.get((case.file, case.command))
        # A strict xfail that passes fails the run showing this reason: say what to do.
        reason = reason and f"{reason} [XPASS: remove its entry from STILL_FAILING]"
        marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
        params.append(pytest.param(case, id=case.id, marks=marks))
    return params


def test_expectations_are_well_formed() -> None:
    """Every key is known, every file exists (or is generated), every command is real, and
    every STILL_FAILING entry names a case."""
    make = load_make()
    files = [entry["file"] for entry in EXPECTATIONS]
    assert len(files) == len(set(files)), "an input is listed twice"
    for entry in EXPECTATIONS:
        name = entry["file"]
        assert set(entry) <= ENTRY_KEYS, (name, set(entry) - ENTRY_KEYS)
        assert entry.get("kind", "spec") in COMMANDS, name
        assert "exit" in entry, name
        assert entry.get("about"), name
        for command, own in entry.get("commands", {}).items():
            assert command in COMMANDS[entry.get("kind", "spec")], (name, command)
            assert set(own) <= COMMAND_KEYS, (name, command, set(own) - COMMAND_KEYS)
        if entry.get("special"):
            assert entry["special"] in ("zero", "fifo", "oversize"), name
        elif entry.get("generated"):
            assert name in make.GENERATED, name
        else:
            assert (HOSTILE / name).exists(), name
        if "expression_file" in entry:
            assert entry["expression_file"] in make.GENERATED, name
    # Every file kept here is an input (make.py, this list and .gitattributes aside).
    kept = {p.name for p in HOSTILE.iterdir()} - {"make.py", "expectations.yaml", ".gitattributes"}
    kept -= {"__pycache__"}
    assert kept <= set(files), f"files with no expectation: {sorted(kept - set(files))}"
    ids = {(case.file, case.command) for case in all_cases()}
    assert set(STILL_FAILING) <= ids, sorted(set(STILL_FAILING) - ids)


# -- running them --------------------------------------------------------------------------


def load_make() -> ModuleType:
    spec = importlib.util.spec_from_file_location("hostile_make", HOSTILE / "make.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses and the like look modules up there
    spec.loader.exec_module(module)
    return module


@dataclass(frozen=True, slots=True)
class Outcome:
    argv: list[str]
    returncode: int | None  # None: timed out
    stdout: str
    stderr: str
    seconds: float


def environment() -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        # Wide enough that rich never folds a reason, so a literal is found whole; how
        # tables look when piped is issue 8's item 5, tested elsewhere.
        COLUMNS="1000",
        LINES="50",
        TERM="dumb",
        NO_COLOR="1",
        LC_ALL="C.UTF-8",
        PYTHONIOENCODING="utf-8",
        # OpenBLAS reserves address space per thread; on a machine with many CPUs that
        # alone could approach the limit.
        OPENBLAS_NUM_THREADS="1",
        OMP_NUM_THREADS="1",
    )
    env.pop("PYTHONWARNINGS", None)
    return env


def fresh(argv: list[str], cwd: Path) -> Outcome:
    """`placed ARGV` in a new interpreter, as a user runs it."""
    start = time.monotonic()
    try:
        done = subprocess.run(
            [sys.executable, "-c", CHILD, *argv],
            cwd=cwd,
            env=environment(),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=WALL_TIMEOUT,
        )
    except subprocess.TimeoutExpired as expired:
        return Outcome(argv, None, _text(expired.stdout), _text(expired.stderr), WALL_TIMEOUT)
    seconds = time.monotonic() - start
    return Outcome(argv, done.returncode, _text(done.stdout), _text(done.stderr), seconds)


class Zygote:
    """A process that has imported placed and forks one child per command (see ZYGOTE)."""

    def __init__(self, scratch: Path) -> None:
        self.scratch = scratch
        self.process = subprocess.Popen(
            [sys.executable, "-c", ZYGOTE],
            env=environment(),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )

    def run(self, argv: list[str], cwd: Path) -> Outcome:
        assert self.process.stdin is not None and self.process.stdout is not None
        out, err = self.scratch / "stdout", self.scratch / "stderr"
        request = {"argv": argv, "cwd": str(cwd), "out": str(out), "err": str(err)}
        start = time.monotonic()
        self.process.stdin.write(json.dumps({**request, "timeout": WALL_TIMEOUT}) + "\n")
        self.process.stdin.flush()
        reply = self.process.stdout.readline()
        seconds = time.monotonic() - start
        if not reply:
            raise RuntimeError(f"the zygote died (exit {self.process.wait()})")
        code = json.loads(reply)["code"]
        return Outcome(argv, code, _text(out.read_bytes()), _text(err.read_bytes()), seconds)

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait(timeout=10)


class Runner:
    """Runs the selected cases in a pool (one zygote per worker), once each, and hands out
    their outcomes."""

    def __init__(self, cases: list[Case], generated: Path) -> None:
        self.make = load_make()
        self.generated = generated
        self.make.write(generated)
        self.local = threading.local()
        self.zygotes: list[Zygote] = []
        self.lock = threading.Lock()
        cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 2
        self.pool = ThreadPoolExecutor(max_workers=max(2, cpus))
        self.futures: dict[str, Future[Outcome]] = {
            case.id: self.pool.submit(self.run, case) for case in cases
        }

    def outcome(self, case: Case) -> Outcome:
        with self.lock:
            if case.id not in self.futures:  # not selected at the start (e.g. a rerun)
                self.futures[case.id] = self.pool.submit(self.run, case)
        return self.futures[case.id].result()

    def zygote(self) -> Zygote:
        zygote: Zygote | None = getattr(self.local, "zygote", None)
        if zygote is None:
            scratch = Path(tempfile.mkdtemp(dir=self.generated, prefix="zygote-"))
            zygote = self.local.zygote = Zygote(scratch)
            with self.lock:
                self.zygotes.append(zygote)
        return zygote

    @contextlib.contextmanager
    def path(self, case: Case) -> Iterator[Path]:
        special = case.input.get("special")
        if special:
            with (
                tempfile.TemporaryDirectory(dir=self.generated) as scratch,
                self.make.special(special, Path(scratch)) as path,
            ):
                yield path
        elif case.input.get("generated"):
            yield self.generated / case.file
        else:
            yield HOSTILE / case.file

    def argv(self, case: Case, name: str) -> list[str]:
        command = case.command
        if command == "simulate":
            return [command, name, "--down", str(case.input.get("down", "x"))]
        if command == "explain":
            return [command, name, str(case.input.get("unit", "x/0"))]
        if command == "expr":
            expression = case.input.get("expression", 'purpose == "[/x]"')
            if "expression_file" in case.input:
                source = self.generated / case.input["expression_file"]
                expression = source.read_text(encoding="utf-8")
            return [command, expression, "--props", f"@{name}"]
        return [command, name]

    def invocation(self, case: Case, path: Path) -> tuple[list[str], Path]:
        """The arguments and working directory: beside the file, named bare, so that
        messages read "FILE:L:C" (a device such as /dev/zero keeps its full path)."""
        if path.parent == Path("/dev"):
            return self.argv(case, str(path)), HOSTILE
        return self.argv(case, path.name), path.parent

    def run(self, case: Case) -> Outcome:
        with self.path(case) as path:
            argv, cwd = self.invocation(case, path)
            return self.zygote().run(argv, cwd)

    def close(self) -> None:
        self.pool.shutdown(wait=True, cancel_futures=True)
        for zygote in self.zygotes:
            zygote.close()


def _text(data: bytes | str | None) -> str:
    if data is None:
        return ""
    if isinstance(data, str):
        return data
    return data.decode("utf-8", errors="backslashreplace")


@pytest.fixture(scope="session")
def runner(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Runner]:
    # Only the cases this session selected (-k, a node id) are started.
    selected = [
        case
        for item in request.session.items
        if isinstance(item, pytest.Function)
        and item.originalname == "test_hostile_input"
        and hasattr(item, "callspec")
        and isinstance(case := item.callspec.params["case"], Case)
    ]
    runner = Runner(selected, tmp_path_factory.mktemp("hostile"))
    yield runner
    runner.close()


# -- judging them --------------------------------------------------------------------------

CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\x9b]")


def complaints(case: Case, outcome: Outcome) -> list[str]:
    """What is wrong with `outcome`, in words (empty when it is as expected)."""
    out, err = outcome.stdout, outcome.stderr
    if outcome.returncode is None or outcome.returncode == -signal.SIGXCPU:
        return [f"timeout: more than {TIMEOUT:g} s of CPU, or no answer in {WALL_TIMEOUT:g} s"]
    found: list[str] = []
    for stream, text in (("stderr", err), ("stdout", out)):
        if "Traceback" in text:
            last = text.strip().splitlines()[-1][:300]
            kind = "memory" if "MemoryError" in text else "traceback"
            found.append(f"{kind} on {stream}: {last}")
    if found:
        return found
    if outcome.returncode < 0:
        return [f"killed by signal {-outcome.returncode}; stderr: {err[-300:]!r}"]
    wanted = case.expect("exit")
    allowed = wanted if isinstance(wanted, list) else [wanted]
    code = outcome.returncode
    if code not in allowed:
        said = (err or out).strip()[:300]
        found.append(f"exit {code}, expected {' or '.join(map(str, allowed))}: {said!r}")
        return found
    name = Path(outcome.argv[1] if case.command != "expr" else outcome.argv[3][1:]).name
    if code == 2:
        if not err.strip():
            found.append("exit 2 with nothing on stderr")
        message = case.expect("message")
        if message is not None and str(message) not in err.replace(name, ""):
            found.append(f"stderr lacks {message!r}: {err[:300]!r}")
        position = case.expect("position")
        where = rf"{re.escape(name)}:\d+:\d+" if position is True else None
        if isinstance(position, str):
            where = rf"{re.escape(name)}:{re.escape(position)}\b"
        if where and not re.search(where, err):
            shown = f"{name}:{position}" if isinstance(position, str) else f"{name}:LINE:COLUMN"
            found.append(f"stderr lacks the position {shown}: {err[:300]!r}")
    elif not out.strip() and not case.expect("quiet"):
        found.append(f"exit {code} with nothing on stdout; stderr: {err[:300]!r}")
    limit = case.expect("max_stderr")
    if limit is not None and len(err) > limit:
        found.append(f"stderr is {len(err):,} characters, more than {limit:,}")
    stream = err if code == 2 else out
    for literal in case.expect("literal", []):
        if literal not in stream:
            found.append(
                f"{'stderr' if code == 2 else 'stdout'} lacks {literal!r} verbatim: "
                f"{stream[:500]!r}"
            )
    control = CONTROL.search(out) or CONTROL.search(err)
    if case.expect("no_control") and control is not None:
        found.append(f"a raw control character {control.group()!r} reaches the terminal")
    return found


@pytest.mark.parametrize("case", parametrized())
def test_hostile_input(case: Case, runner: Runner) -> None:
    outcome = runner.outcome(case)
    problems = complaints(case, outcome)
    assert not problems, (
        f"placed {' '.join(a[:60] for a in outcome.argv)} ({case.input['about']}):\n  "
        + "\n  ".join(problems)
    )


FIDELITY = [
    ("markup.yaml", "plan"),
    ("markup.yaml", "check"),
    ("binary.png", "validate"),
    ("alias-bomb.yaml", "plan"),
    ("props-huge-int.yaml", "expr"),
]


@pytest.mark.parametrize(("file", "command"), FIDELITY, ids=[f"{f}-{c}" for f, c in FIDELITY])
def test_zygote_answers_as_a_fresh_process(file: str, command: str, runner: Runner) -> None:
    """The corpus runs in processes forked from one that imported placed beforehand; a few
    of its cases, run in a fresh interpreter, must give the same exit code and output."""
    (case,) = [c for c in all_cases() if (c.file, c.command) == (file, command)]
    forked = runner.outcome(case)
    argv, cwd = runner.invocation(case, HOSTILE / file)
    alone = fresh(argv, cwd)
    assert (alone.returncode, alone.stdout, alone.stderr) == (
        forked.returncode,
        forked.stdout,
        forked.stderr,
    )


# -- random input ----------------------------------------------------------------------------

# The hypothesis tests below stop drawing new work after this many seconds each (the
# examples left then pass at once), so that a slow CI runner stays bounded; examples are
# drawn from a fixed seed (derandomize), so a failure is the same on every run.
BUDGET = 10.0 if os.environ.get("CI") else 15.0

KEYS = [
    "version", "name", "inventory", "workloads", "settings", "default_mode", "id", "kind",
    "tags", "anti_tags", "hard_affinity", "hard_anti_affinity", "soft_affinity",
    "soft_anti_affinity", "properties", "constraints", "scope", "namespace", "arch",
    "hardware_id", "kubernetes_version", "capacity", "status", "children", "units", "mode",
    "resources", "service", "services", "pattern", "cluster_namespace", "distinct",
    "max_load", "url", "org", "privileged", "runs_on", "value", "type", "cpu", "memory",
]  # fmt: skip
HOSTILE_TEXT = [
    "[/x]", "h[red]2", "[/green]", "[bold]", "x == 1", "cpu <", "((a", "a, b", "", " ", "up",
    "down", "every", "mapping", "allocation", "rack", "target", "version", "list of strings",
    "int", "1.2.3", "[1.0,2.0)", "\x1b[31m", "café", "\u202e", "2024-01-01", "0x1F", "no",
    "~", "null", "NaN", ".inf", "9" * 40,
]  # fmt: skip
hostile_text = st.sampled_from(HOSTILE_TEXT)
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**30), max_value=10**30),
    st.floats(allow_nan=True, allow_infinity=True),
    hostile_text,
    st.text(max_size=8),
)
structures = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(st.sampled_from(KEYS) | st.text(max_size=4), inner, max_size=5),
    ),
    max_leaves=25,
)
documents = st.one_of(
    structures,
    st.fixed_dictionaries(
        {},
        optional={
            "inventory": st.lists(
                st.dictionaries(st.sampled_from(KEYS), structures, max_size=6), max_size=3
            ),
            "workloads": st.lists(
                st.dictionaries(st.sampled_from(KEYS), structures, max_size=6), max_size=3
            ),
            "settings": st.dictionaries(st.sampled_from(KEYS), structures, max_size=2),
            "name": hostile_text,
            "version": st.sampled_from([1, 2, "1", None]),
        },
    ),
)


def render(document: Any, style: str) -> str:
    if style == "json":
        return json.dumps(document)
    if style == "flow":
        return yaml.safe_dump(document, default_flow_style=True, allow_unicode=True)
    return yaml.safe_dump(document, allow_unicode=True)


def loads_or_refuses(load: Any, *args: Any) -> None:
    """`load(*args)` returns specs or raises SpecError with positioned problems; any other
    exception fails the test."""
    try:
        specs = load(*args)
    except SpecError as error:
        assert error.problems
        assert all(problem.message for problem in error.problems)
        error.render()
        return
    assert isinstance(specs, list)


class Budget:
    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.start: float | None = None

    def spent(self) -> bool:
        now = time.monotonic()
        if self.start is None:
            self.start = now
        return now - self.start > self.seconds


_structure_budget = Budget(BUDGET)
_text_budget = Budget(BUDGET)
_bytes_budget = Budget(BUDGET)


@settings(
    max_examples=300,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(documents, st.sampled_from(["block", "flow", "json"]))
def test_random_structures_load_or_fail_cleanly(document: Any, style: str) -> None:
    if _structure_budget.spent():
        return
    loads_or_refuses(load_specs_text, render(document, style), "fuzz.yaml")


# Lines random texts are made of: pieces of specs, and of hostile ones.
LINES = [
    "inventory:", "workloads:", "  - id: a", "  - {id: b, tags: [x]}", "    children:",
    "      - &a {id: c}", "  - *a", "  - name: w", "    units: 99999999999999999999", "---",
    "- [", "{", "? [a]", ": b", "? [a, b]\n: c", "\t", "!!python/none", "!!binary x",
    "%YAML 1.1", "'", '"\\ud800"', "  - {name: w, mode: mapping}", "  - id: 0x1F",
    "  - {id: h, capacity: {cpu: " + "9" * 5000 + "}}", "    tags: " + "[" * 1100,
    "    tags: " + "[" * 50 + "a" + "]" * 50, "    properties: {cpu: [1, 2]}",
    "    constraints: ['" + "(" * 2000 + "a == 1" + ")" * 2000 + "']",
]  # fmt: skip


@settings(max_examples=300, deadline=None, derandomize=True)
@given(
    st.one_of(st.text(max_size=200), st.lists(st.sampled_from(LINES), max_size=12).map("\n".join))
)
def test_random_text_loads_or_fails_cleanly(text: str) -> None:
    if _text_budget.spent():
        return
    loads_or_refuses(load_specs_text, text, "fuzz.yaml")


@settings(max_examples=200, deadline=None, derandomize=True)
@given(st.binary(max_size=300), st.sampled_from([b"", b"inventory:\n  - id: a\n"]))
def test_random_bytes_load_or_fail_cleanly(data: bytes, prefix: bytes) -> None:
    if _bytes_budget.spent():
        return
    with tempfile.TemporaryDirectory() as scratch:
        path = Path(scratch) / "fuzz.yaml"
        path.write_bytes(prefix + data)
        loads_or_refuses(load_specs, path)


# Specs that load more often than random structures do, so that the commands get as far
# as printing: names, ids and tags from the hostile texts.
words = hostile_text | st.text(min_size=1, max_size=6)
specs = st.fixed_dictionaries(
    {
        "name": words,
        "inventory": st.lists(
            st.fixed_dictionaries({"id": words, "tags": st.lists(words, max_size=3)}),
            min_size=1,
            max_size=3,
        ),
        "workloads": st.lists(
            st.fixed_dictionaries(
                {"name": words, "tags": st.lists(words, max_size=3), "mode": st.just("mapping")}
            ),
            max_size=2,
        ),
    }
)


@settings(max_examples=8, deadline=None, derandomize=True)
@given(
    specs | documents,
    st.sampled_from(["block", "json"]),
    st.sampled_from(["validate", "plan", "check"]),
)
@example(
    {"name": "[/green]", "inventory": [{"id": "h[red]2", "tags": ["[/x]"]}], "workloads": []},
    "block",
    "validate",
)
def test_random_structures_through_the_cli(document: Any, style: str, command: str) -> None:
    """A few random documents through the real command, each in a fresh process: exit 0,
    1 or 2 with something said, never a traceback."""
    with tempfile.TemporaryDirectory() as scratch:
        path = Path(scratch) / "fuzz.yaml"
        path.write_text(render(document, style), encoding="utf-8")
        outcome = fresh([command, path.name], Path(scratch))
    out, err = outcome.stdout, outcome.stderr
    assert outcome.returncode is not None, f"no answer within {WALL_TIMEOUT:g} s"
    assert "Traceback" not in err + out, err
    assert outcome.returncode in (0, 1, 2), (outcome.returncode, err)
    assert (err if outcome.returncode == 2 else out).strip()
