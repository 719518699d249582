"""The README's console walk-through, as written (issue 19): its shell lines run in a
temporary directory against a real `placed serve` on a free loopback port, then each of
its numbered browser steps is taken in a real browser (Debian's Chromium). Both are read
from README.md, so a step the README adds, drops or changes changes what runs here, and
a step this file cannot take fails it: the README cannot drift from the console.

What is adapted, and only this: `make demo` (a fresh clone's setup, which this checkout
has done: the temporary directory links to its .venv, examples and tests), and port 8700
(a free port instead, so a server already running there is never the one tested)."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import httpx
import pytest
from playwright import sync_api

from tests.running_servers import free_port
from tests.test_console import CHROMIUM, checked

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()
TOKEN = re.compile(r"plc_[A-Za-z0-9_\-]+")


def section() -> str:
    found = re.search(r"^### The web console\n(.*?)^### ", README, re.S | re.M)
    assert found is not None, "README has no '### The web console' section"
    return found.group(1)


def shell_lines() -> list[str]:
    """The `$ ` lines of the section's first ```text block, continuations joined, each
    without its comment."""
    block = re.search(r"```text\n(.*?)```", section(), re.S)
    assert block is not None, "the console section has no ```text block of shell steps"
    joined = block.group(1).replace("\\\n", " ")
    lines = []
    for line in joined.splitlines():
        if not line.startswith("$ "):
            continue
        command = re.sub(r"\s+#\s.*$", "", line[2:]).strip()
        shlex.split(command)  # a line bash could not read fails here, with its text
        lines.append(command)
    assert lines, "no $ lines in the console section's ```text block"
    return lines


@dataclass
class Step:
    number: int
    text: str
    keyword: str  # the first bold phrase
    values: list[str]  # the `quoted` values, in order


def browser_steps() -> list[Step]:
    """The section's numbered list (1. ... 2. ...), each item with its wrapped lines."""
    steps: list[Step] = []
    for match in re.finditer(r"^(\d+)\. (.*?)(?=^\d+\. |^\S|\Z)", section(), re.S | re.M):
        text = " ".join(match.group(2).split())
        bold = re.search(r"\*\*(.+?)\*\*", text)
        assert bold is not None, f"step {match.group(1)} names no action in bold: {text}"
        values = re.findall(r"`([^`]+)`", text)
        steps.append(Step(int(match.group(1)), text, bold.group(1).rstrip(":"), values))
    assert [s.number for s in steps] == list(range(1, len(steps) + 1)), steps
    assert steps, "the console section has no numbered browser steps"
    return steps


@dataclass
class Session:
    """The shell steps' state: the directory, environment, what each command printed and
    the server started in the background."""

    where: Path
    port: int
    env: dict[str, str]
    printed: dict[str, str] = field(default_factory=dict)
    server: subprocess.Popen[str] | None = None
    log: IO[str] | None = None

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def adapt(self, line: str) -> str:
        line = line.replace(":8700", f":{self.port}")
        return re.sub(r"^placed serve\b", f"placed serve --port {self.port}", line)

    def run(self, line: str) -> None:
        if line.startswith("make demo"):
            # A fresh clone's setup; what follows `&&` (the venv's activation) still runs.
            rest = line.partition("&&")[2].strip()
            assert rest == ". .venv/bin/activate", line
            self.env["PATH"] = f"{self.where / '.venv' / 'bin'}{os.pathsep}{self.env['PATH']}"
            self.env["VIRTUAL_ENV"] = str(self.where / ".venv")
            return
        export = re.fullmatch(r"export (\w+)=(\S+)", line)
        if export is not None:
            name, value = export.groups()
            if value == "plc_...":  # "the token placed db upgrade printed"
                value = self.token_of("placed db upgrade")
            self.env[name] = value
            return
        command = self.adapt(line)
        if command.endswith(" &"):
            assert self.server is None, "one server in the background"
            self.log = tempfile.TemporaryFile(mode="w+")  # noqa: SIM115 - closed by stop()
            self.server = subprocess.Popen(
                ["bash", "-c", "exec " + command[:-2]],
                cwd=self.where,
                env=self.env,
                stdout=self.log,
                stderr=subprocess.STDOUT,
                text=True,
            )
            self.wait_ready()
            return
        done = subprocess.run(
            ["bash", "-c", command],
            cwd=self.where,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, f"$ {line}\n{done.stdout}\n{done.stderr}"
        self.printed[line] = done.stdout + done.stderr

    def wait_ready(self) -> None:
        for _ in range(300):
            assert self.server is not None and self.server.poll() is None, self.logged()
            try:
                if httpx.get(self.base + "/readyz", timeout=1).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            subprocess.run(["sleep", "0.1"], check=True)
        raise AssertionError(f"placed serve never became ready\n{self.logged()}")

    def logged(self) -> str:
        if self.log is None:
            return ""
        self.log.seek(0)
        return self.log.read()

    def token_of(self, command: str) -> str:
        """The token the shell line `command` printed."""
        lines = [line for line in self.printed if line.startswith(command)]
        assert lines, f"no shell line {command!r} ran before its token was asked for"
        found = TOKEN.findall(self.printed[lines[0]])
        assert found, f"$ {lines[0]} printed no token: {self.printed[lines[0]]}"
        return str(found[0])

    def stop(self) -> None:
        if self.server is not None and self.server.poll() is None:
            self.server.terminate()
            self.server.wait(timeout=30)
        logged = self.logged()
        if self.log is not None:
            self.log.close()
        assert "Traceback" not in logged, logged


@pytest.fixture(scope="module")
def session(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Session]:
    where = tmp_path_factory.mktemp("readme-console")
    for name in (".venv", "examples", "tests"):
        (where / name).symlink_to(ROOT / name)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PLACED_")}
    port = free_port()
    env["PLACED_URL"] = f"http://127.0.0.1:{port}"
    found = Session(where, port, env)
    try:
        for line in shell_lines():
            found.run(line)
        assert found.server is not None, "the README's shell steps start no `placed serve &`"
        assert (where / "placed.db").exists(), "placed db upgrade made no placed.db here"
        yield found
    finally:
        found.stop()


@pytest.fixture(scope="module")
def page(session: Session) -> Iterator[Any]:
    assert CHROMIUM.exists(), "no /usr/bin/chromium: `make test` installs Debian's chromium"
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=str(CHROMIUM), headless=True, args=["--no-sandbox"]
        )
        context = browser.new_context(base_url=session.base, bypass_csp=True)
        opened = context.new_page()
        opened.set_default_timeout(15_000)
        yield opened
        browser.close()


def follow(page: Any, locator: Any) -> None:
    """Click, and wait for the page it leads to (a form's answer is a page)."""
    with page.expect_navigation():
        locator.click()


def outcome(page: Any) -> str:
    """What the last change said: done, or the API's refusal."""
    page.locator(".done, .problem").first.wait_for()
    return str(page.locator(".done, .problem").first.inner_text())


def sign_in(page: Any, session: Session, step: Step) -> None:
    command, header = step.values
    if page.locator("header button", has_text="Sign out").count():
        page.get_by_role("button", name="Sign out").click()
    page.goto("/ui/login")
    page.get_by_label("Token").fill(session.token_of(command))
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(re.compile(r"/ui/fleet"))
    assert page.locator("header .who").inner_text().startswith(header)


def fleet(page: Any, session: Session, step: Step) -> None:
    page.get_by_role("link", name="Fleet").click()
    page.wait_for_url(re.compile(r"/ui/fleet"))
    chart = page.locator("table.usage")
    values = list(step.values)
    while values:
        name = values.pop(0)
        zone = chart.get_by_role("rowheader", name=name, exact=True)
        if zone.count():
            assert re.search(r"\d+ / \d+ \(\d+%\)", zone.locator("xpath=..").inner_text())
            continue
        badge = values.pop(0)
        row = page.get_by_role("row").filter(
            has=page.get_by_role("rowheader", name=re.compile(rf"^{re.escape(name)}\b"))
        )
        row.get_by_text(badge).wait_for()  # the badges arrive after the page
    checked(page, "readme-fleet")


def workload(page: Any, session: Session, step: Step) -> None:
    name, level, reason = step.values
    page.get_by_role("link", name="Workloads").click()
    page.get_by_role("link", name=name, exact=True).click()
    page.wait_for_url(re.compile(rf"/ui/workloads/{re.escape(name)}"))
    page.locator("select[name=level]").select_option(level)
    page.get_by_role("button", name="Show").click()
    page.wait_for_url(re.compile(rf"level={level}"))
    assert page.locator("table.spread tbody tr").count() > 0
    checked(page, "readme-workload")
    page.get_by_role("link", name="Its units").click()
    page.get_by_role("row").filter(has_text="pending").first.get_by_role("link").click()
    page.wait_for_url(re.compile(r"/ui/units/"))
    assert reason in page.locator("#where").inner_text()


def dedicate(page: Any, session: Session, step: Step) -> None:
    resource, domain, said = step.values
    follow(page, page.get_by_role("link", name="Admin"))
    form = page.locator("form[action='/ui/admin/dedicate']")
    form.get_by_label("Resource").fill(resource)
    form.get_by_label("Domain").fill(domain)
    follow(page, form.get_by_role("button", name="Dedicate"))
    assert said in outcome(page)
    checked(page, f"readme-dedicate-{step.number}")


def offering(page: Any, session: Session, step: Step) -> None:
    name, said = step.values[0], step.values[-1]
    follow(page, page.get_by_role("link", name="Admin"))
    row = page.get_by_role("row").filter(has=page.get_by_role("rowheader", name=name))
    follow(page, row.get_by_role("button"))
    assert said in outcome(page)
    checked(page, f"readme-offering-{step.number}")


ACTIONS: dict[str, Callable[[Any, Session, Step], None]] = {
    "Sign in": sign_in,
    "Fleet": fleet,
    "Workload": workload,
    "Dedicate": dedicate,
    "Offering": offering,
}


def test_the_readmes_steps_are_all_steps_this_test_can_take() -> None:
    steps = browser_steps()
    unknown = [s.text for s in steps if s.keyword not in ACTIONS]
    assert not unknown, f"README console steps this test cannot take: {unknown}"
    assert {s.keyword for s in steps} == set(ACTIONS), "an action the README no longer names"
    lines = shell_lines()
    assert any(line.startswith("placed db upgrade") for line in lines), lines
    assert any(line.startswith("placed serve") for line in lines), lines


def test_the_readmes_console_steps_as_written(session: Session, page: Any) -> None:
    for step in browser_steps():
        ACTIONS[step.keyword](page, session, step)
    # The refusals left the world as the root's steps made it.
    root = {"Authorization": f"Bearer {session.token_of('placed db upgrade')}"}
    listed = httpx.get(session.base + "/v1/dedications", headers=root).json()["items"]
    owners = {(d["resource"], d["domain"]) for d in listed}
    for step in browser_steps():
        if step.keyword == "Dedicate":
            resource, domain, said = step.values
            assert ((resource, domain) in owners) == ("dedicated" in said), (step.text, owners)
