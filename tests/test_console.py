"""The web console at /ui (issue 19) in a real browser: Playwright driving Debian's
Chromium (/usr/bin/chromium, installed by `make test`; never a browser download) against
a real `placed serve` on SQLite with examples/cloudstack-dedication.yaml applied and a
workload too large for its shared hosts. Each page is checked with axe-core (vendored in
tests/vendor/axe-core) for serious or critical violations, and screenshotted into
test-artifacts/console/."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright import sync_api

from tests.running_servers import replicas, upgrade

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = Path("/usr/bin/chromium")
AXE = ROOT / "tests" / "vendor" / "axe-core" / "axe.min.js"
ARTIFACTS = ROOT / "test-artifacts" / "console"


class Fleet:
    def __init__(self, base: str, root: str, user: str) -> None:
        self.base = base
        self.root = root
        self.user = user

    def api(
        self, method: str, path: str, headers: dict[str, str] | None = None, **kwargs: Any
    ) -> httpx.Response:
        sent = {"Authorization": f"Bearer {self.root}", **(headers or {})}
        return httpx.request(method, self.base + path, headers=sent, timeout=30, **kwargs)


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fleet]:
    url = f"sqlite:///{tmp_path_factory.mktemp('console') / 'placed.db'}"
    root = upgrade(url)
    with replicas(url) as servers:
        base = servers[0].base
        found = Fleet(base, root, "")
        for path in (
            ROOT / "examples" / "cloudstack-dedication.yaml",
            ROOT / "tests" / "data" / "console-pending.yaml",
        ):
            done = found.api(
                "POST",
                "/v1/apply",
                content=path.read_bytes(),
                headers={"content-type": "application/yaml"},
            )
            assert done.status_code == 200, done.text
        made = found.api("POST", "/v1/tokens", json={"role": "user", "scope": "U2"})
        assert made.status_code == 201, made.text
        found.user = made.json()["token"]
        yield found


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    assert CHROMIUM.exists(), "no /usr/bin/chromium: `make test` installs Debian's chromium"
    with sync_api.sync_playwright() as playwright:
        launched = playwright.chromium.launch(
            executable_path=str(CHROMIUM), headless=True, args=["--no-sandbox"]
        )
        yield launched
        launched.close()


@pytest.fixture
def page(browser: Any, fleet: Fleet) -> Iterator[Any]:
    # The console's CSP allows no inline script; axe is injected by the test alone.
    context = browser.new_context(base_url=fleet.base, bypass_csp=True)
    opened = context.new_page()
    opened.set_default_timeout(15_000)
    yield opened
    context.close()


def sign_in(page: Any, token: str) -> None:
    page.goto("/ui/login")
    page.get_by_label("Token").fill(token)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(re.compile(r"/ui/fleet"))


def checked(page: Any, name: str) -> None:
    """A screenshot of the page as it is, and axe-core finding nothing serious on it."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)
    page.add_script_tag(content=AXE.read_text())
    found = page.evaluate(
        "async () => (await axe.run(document, {resultTypes: ['violations']})).violations"
        ".map(v => ({id: v.id, impact: v.impact, help: v.help,"
        " nodes: v.nodes.map(n => n.target.join(' ')).slice(0, 5)}))"
    )
    bad = [v for v in found if v["impact"] in ("serious", "critical")]
    assert not bad, f"{name}: {bad}"


def test_the_axe_check_finds_a_serious_violation(page: Any, fleet: Fleet) -> None:
    """The check itself can fail: a page with an unlabelled image is caught."""
    page.goto("/ui/login")
    page.evaluate(
        "() => { const i = document.createElement('img'); i.src = '/nothing.png';"
        " document.querySelector('main').append(i); }"
    )
    with pytest.raises(AssertionError, match="image-alt"):
        checked(page, "axe-self-check")


def test_sign_in_refuses_a_bad_token_and_takes_a_good_one(page: Any, fleet: Fleet) -> None:
    page.goto("/ui/fleet")
    page.wait_for_url(re.compile(r"/ui/login"))
    checked(page, "login")
    page.get_by_label("Token").fill("plc_0000000000000000_" + "x" * 43)
    page.get_by_role("button", name="Sign in").click()
    assert "401 unauthenticated" in page.locator(".problem").inner_text()
    sign_in(page, fleet.root)
    assert page.locator("header .who").inner_text().startswith("Signed in: root-admin (")
    cookie = next(c for c in page.context.cookies() if c["name"] == "placed_console")
    assert cookie["httpOnly"] and cookie["sameSite"] == "Strict"


def test_the_fleet_shows_the_tree_usage_and_inherited_owners(page: Any, fleet: Fleet) -> None:
    sign_in(page, fleet.root)
    tree = page.get_by_role("navigation", name="Location tree")
    assert tree.get_by_role("link", name="z2").is_visible()
    row = page.get_by_role("row").filter(has=page.get_by_role("rowheader", name=re.compile("H4a")))
    # The owners arrive after the page is drawn (/ui/fleet/owners).
    row.get_by_text("owner: D2 / A13, inherited from z2").wait_for()
    assert tree.get_by_text("owner: D2 / A13").is_visible()
    text = row.inner_text()
    assert "owner: D2 / A13, inherited from z2" in text
    assert re.search(r"cpu\s+1 / 4 \(25%\)", text), text
    # An implicit dedication (U14's VM took the empty H33a) has its badge, said in words.
    implicit = page.get_by_role("row").filter(
        has=page.get_by_role("rowheader", name=re.compile("H33a"))
    )
    assert "owner: D2 / U14 (implicit dedication" in implicit.inner_text()
    # The usage per zone: capacity against use over the zone's targets in service, the
    # numbers beside each bar, as GET /v1/usage sums them.
    usage = fleet.api("GET", "/v1/usage", params={"level": "zone"}).json()["items"]
    chart = page.locator("table.usage")
    for zone in usage:
        line = chart.get_by_role("row").filter(
            has=page.get_by_role("rowheader", name=zone["name"], exact=True)
        )
        shown = line.inner_text()
        assert f"{zone['up']} in service" in shown, shown
        for resource, use in zone["resources"].items():
            numbers = f"{use['used']:g} / {use['capacity']:g}"
            assert re.search(rf"{resource}\s+{re.escape(numbers)} \(", shown), shown
    checked(page, "fleet")
    # Filter by owner, server-side: only z2's hosts are left.
    page.get_by_label("Owner").fill("D2/A13")
    page.get_by_role("button", name="Filter").click()
    page.wait_for_url(re.compile(r"owner=D2"))
    targets = page.locator("section[aria-labelledby=targets-title]")
    names = targets.locator("tbody th[scope=row]").all_inner_texts()
    assert names and all(n.split()[0] in ("H4a", "H4b") for n in names), names
    # An account's filter finds the host it holds implicitly too (no dedication row).
    page.get_by_label("Owner").fill("D2/U14")
    page.get_by_role("button", name="Filter").click()
    page.wait_for_url(re.compile(r"owner=D2%2FU14"))
    names = targets.locator("tbody th[scope=row]").all_inner_texts()
    assert [n.split()[0] for n in names] == ["H33a"], names
    page.get_by_label("Owner").fill("D2/A13")
    page.get_by_label("Status").select_option("maintenance")
    page.get_by_role("button", name="Filter").click()
    page.wait_for_url(re.compile(r"state=maintenance"))
    assert "No target matches." in targets.locator("tbody").inner_text()


def test_a_pending_unit_says_why(page: Any, fleet: Fleet) -> None:
    sign_in(page, fleet.root)
    page.get_by_role("link", name="Workloads").click()
    row = page.get_by_role("row").filter(has=page.get_by_role("link", name="big-u2"))
    assert "pending" in row.inner_text()
    checked(page, "workloads")
    row.get_by_role("link", name="big-u2").click()
    page.wait_for_url(re.compile(r"/ui/workloads/big-u2"))
    # Its spread: a bar per place of the chosen level, with its count.
    for level in ("zone", "cluster", "target"):
        page.locator("select[name=level]").select_option(level)
        page.get_by_role("button", name="Show").click()
        page.wait_for_url(re.compile(rf"level={level}"))
        spread = fleet.api("GET", "/v1/workloads/big-u2/spread", params={"level": level})
        expected = [(i["name"], str(i["units"])) for i in spread.json()["items"]]
        shown = [
            (r.locator("th").inner_text(), r.locator("td").first.inner_text())
            for r in page.locator("table.spread tbody tr").all()
        ]
        assert shown == expected and expected, (shown, expected)
        pending = spread.json()["pending"]
        assert (
            pending > 0
            and f"{pending} pending" in page.locator("table.spread caption").inner_text()
        )
    checked(page, "workload-spread")
    page.get_by_role("link", name="Its units").click()
    page.wait_for_url(re.compile(r"workload=big-u2"))
    checked(page, "placements")
    pending = page.get_by_role("row").filter(has_text="pending").first
    unit = pending.get_by_role("link").inner_text()
    pending.get_by_role("link").click()
    page.wait_for_url(re.compile(r"/ui/units/"))
    summary = page.locator("#where").inner_text()
    assert "Pending: placed nowhere." in summary
    # The kube-style summary, as the API explains the unit (placed describe unit's).
    explained = fleet.api("GET", f"/v1/units/{unit}").json()["explanation"]
    assert explained["summary"] in summary
    assert "0/13 targets available" in summary
    rows = page.locator("table.explanation tbody tr")
    assert rows.count() == 13
    checked(page, "unit-pending")
    page.locator("select[name=reason]").select_option(index=1)
    page.get_by_role("button", name="Filter").click()
    page.wait_for_url(re.compile(r"reason="))
    assert 0 < page.locator("table.explanation tbody tr").count() < 13


def test_an_implicit_dedication_is_listed_and_its_unit_page_says_chosen(
    page: Any, fleet: Fleet
) -> None:
    """U14's VM took the empty H33a: the admin list shows that host's dedication as
    implicit (a row, as GET /v1/dedications lists it), and the unit's page explains the
    VM as chosen there, as its placement says, never refused by the dedication."""
    sign_in(page, fleet.root)
    page.get_by_role("link", name="Admin").click()
    page.wait_for_url(re.compile(r"/ui/admin"))
    row = page.get_by_role("row").filter(has=page.get_by_role("rowheader", name="H33a"))
    row.wait_for()
    cells = row.locator("td").all_inner_texts()
    assert cells[:4] == ["host", "D2", "U14", "implicit"], cells
    page.goto("/ui/units/dedicated-a14/0")
    assert "Runs on H33a." in page.locator("#where").inner_text()
    verdict = page.locator("table.explanation tr").filter(
        has=page.get_by_role("rowheader", name="H33a", exact=True)
    )
    text = verdict.inner_text()
    assert "chosen" in text and "dedication" not in text, text
    checked(page, "unit-implicit")


def test_dedicate_as_root_and_be_refused_as_a_user(page: Any, fleet: Fleet) -> None:
    sign_in(page, fleet.root)
    page.get_by_role("link", name="Admin").click()
    form = page.locator("form[action='/ui/admin/dedicate']")
    form.get_by_label("Resource").fill("H4a")
    form.get_by_label("Domain").fill("D2")
    form.get_by_label("Account").fill("A13")
    form.get_by_role("button", name="Dedicate").click()
    problem = page.locator(".problem")
    problem.wait_for()
    assert "409 ancestor-dedicated" in problem.inner_text()
    form.get_by_label("Resource").fill("H22a")
    form.get_by_label("Domain").fill("SD1")
    form.get_by_label("Account").fill("")
    form.get_by_role("button", name="Dedicate").click()
    page.locator(".done").wait_for()
    assert "H22a is dedicated" in page.locator(".done").inner_text()
    assert page.get_by_role("rowheader", name="H22a").is_visible()
    checked(page, "admin")
    listed = fleet.api("GET", "/v1/dedications").json()["items"]
    assert any(d["resource"] == "H22a" and d["domain"] == "SD1" for d in listed)
    # A user sees the same form; the API refuses it, and the page says so.
    page.get_by_role("button", name="Sign out").click()
    sign_in(page, fleet.user)
    assert page.locator("header .who").inner_text().startswith("Signed in: user of U2 (")
    page.get_by_role("link", name="Admin").click()
    form = page.locator("form[action='/ui/admin/dedicate']")
    form.get_by_label("Resource").fill("H2b")
    form.get_by_label("Domain").fill("D2")
    form.get_by_role("button", name="Dedicate").click()
    page.locator(".problem").wait_for()
    assert "403 forbidden" in page.locator(".problem").inner_text()
    checked(page, "admin-refused")
    listed = fleet.api("GET", "/v1/dedications").json()["items"]
    assert not any(d["resource"] == "H2b" for d in listed)
    # Release, as root, from the table.
    page.get_by_role("button", name="Sign out").click()
    sign_in(page, fleet.root)
    page.get_by_role("link", name="Admin").click()
    page.get_by_role("button", name="Release H22a").click()
    page.locator(".done").wait_for()
    assert "H22a is released" in page.locator(".done").inner_text()


def test_what_if_previews_a_target_down_and_changes_nothing_until_confirmed(
    page: Any, fleet: Fleet
) -> None:
    sign_in(page, fleet.root)
    before = fleet.api("GET", "/v1/placements", params={"target": "H33b"}).json()["items"]
    assert before
    page.goto("/ui/whatif?target=H33b")
    page.get_by_role("button", name="Preview the targets").click()
    preview = page.locator("#preview")
    preview.wait_for()
    assert "Dry run: nothing has changed" in preview.inner_text()
    moved = {b["unit"] for b in before}
    shown = set(preview.locator("tbody tr td:nth-child(2)").all_inner_texts())
    assert moved <= shown, (moved, shown)
    checked(page, "whatif-preview")
    still = fleet.api("GET", "/v1/targets/H33b").json()
    assert still["admin_state"] == "up"
    assert fleet.api("GET", "/v1/placements", params={"target": "H33b"}).json()["items"] == before
    page.get_by_role("button", name="Confirm: take H33b down").click()
    page.locator("#done").wait_for()
    assert fleet.api("GET", "/v1/targets/H33b").json()["admin_state"] == "down"
    checked(page, "whatif-done")
    assert fleet.api("POST", "/v1/targets/H33b/up").status_code == 200


def test_an_event_arrives_in_the_feed(page: Any, fleet: Fleet) -> None:
    sign_in(page, fleet.root)
    page.get_by_role("link", name="Events").click()
    page.wait_for_url(re.compile(r"/ui/events"))
    checked(page, "events")
    page.wait_for_timeout(500)  # the first long poll is out
    made = fleet.api("POST", "/v1/targets/H2a/down", json={"reason": "watched"})
    assert made.status_code == 200, made.text
    arrived = page.locator("#feed li").filter(has_text="target.down").filter(has_text="H2a")
    arrived.wait_for(timeout=25_000)
    # Newest first: it is at the top.
    assert "H2a" in page.locator("#feed li").first.inner_text()
    checked(page, "events-arrived")
    assert fleet.api("POST", "/v1/targets/H2a/up").status_code == 200


def test_a_change_without_the_csrf_value_is_refused(fleet: Fleet) -> None:
    with httpx.Client(base_url=fleet.base) as client:
        signed = client.post("/ui/login", data={"token": fleet.root})
        assert signed.status_code == 303
        # Without JavaScript the owners are a link away, drawn in the page itself.
        plain = client.get("/ui/fleet", params={"under": "z2"}).text
        assert "inherited from z2" not in plain and "owners=1" in plain
        inline = client.get("/ui/fleet", params={"under": "z2", "owners": "1"}).text
        assert "owner: D2 / A13, inherited from z2" in inline
        answer = client.post("/ui/admin/dedicate", data={"resource": "H2a", "domain": "D2"})
        assert answer.status_code == 403
        assert "CSRF" in answer.text
        foreign = client.post(
            "/ui/admin/dedicate",
            data={"resource": "H2a", "domain": "D2", "csrf": "x"},
            headers={"Origin": "https://evil.example"},
        )
        assert foreign.status_code == 403
    listed = fleet.api("GET", "/v1/dedications").json()["items"]
    assert not any(d["resource"] == "H2a" for d in listed)


def test_user_text_is_escaped(page: Any, fleet: Fleet) -> None:
    sign_in(page, fleet.root)
    page.goto("/ui/placements?workload=%3Cscript%3Ewindow.pwned%3D1%3C%2Fscript%3E")
    assert page.get_by_label("Workload").input_value() == "<script>window.pwned=1</script>"
    assert page.evaluate("() => window.pwned === undefined")
    assert page.locator("main script").count() == 0


def test_the_keyboard_reaches_everything_with_focus_drawn(page: Any, fleet: Fleet) -> None:
    sign_in(page, fleet.root)
    page.keyboard.press("Tab")
    focused = page.evaluate(
        "() => { const e = document.activeElement; const s = getComputedStyle(e);"
        " return {text: e.textContent.trim(), outline: s.outlineStyle, width: s.outlineWidth}; }"
    )
    assert focused["text"] == "Skip to content"
    assert focused["outline"] != "none" and focused["width"] != "0px", focused
    # Tab on through the navigation to the Fleet link, and follow it by keyboard.
    names = []
    for _ in range(8):
        page.keyboard.press("Tab")
        names.append(page.evaluate("() => document.activeElement.textContent.trim()"))
    assert names[:6] == ["Fleet", "Workloads", "Placements", "Events", "What-if", "Admin"]
    page.keyboard.press("Shift+Tab")
    page.keyboard.press("Shift+Tab")
    page.keyboard.press("Enter")
    page.wait_for_url(re.compile(r"/ui/admin"))


def test_a_drain_is_previewed_with_what_stays(page: Any, fleet: Fleet) -> None:
    sign_in(page, fleet.root)
    page.goto("/ui/whatif?target=H4a")
    page.get_by_label("drain it (maintenance)").check()
    page.get_by_role("button", name="Preview the targets").click()
    preview = page.locator("#preview")
    preview.wait_for()
    assert "Dry run: nothing has changed" in preview.inner_text()
    assert "Preview: H4a maintenance" in preview.inner_text()
    expected = fleet.api("POST", "/v1/targets/H4a/drain", params={"dry_run": "true"}).json()
    for gone in expected["moves"]:
        assert gone["unit"] in preview.inner_text()
    for stays in expected["refused"]:
        assert stays["unit"] in preview.inner_text()
    assert expected["moves"] or expected["refused"]
    checked(page, "whatif-drain")
    assert fleet.api("GET", "/v1/targets/H4a").json()["admin_state"] == "up"


def test_admin_shows_offerings_and_changes_an_owner(page: Any, fleet: Fleet) -> None:
    sign_in(page, fleet.root)
    page.get_by_role("link", name="Admin").click()
    offering = page.get_by_role("row").filter(
        has=page.get_by_role("rowheader", name="dedicated-small")
    )
    assert offering.locator("td").nth(3).inner_text().startswith("yes")
    shared = page.get_by_role("row").filter(has=page.get_by_role("rowheader", name="shared-small"))
    assert shared.locator("td").nth(3).inner_text() == "no"
    made = fleet.api("POST", "/v1/dedications", json={"resource": "H3a", "domain": "SD2"})
    assert made.status_code == 201, made.text
    form = page.locator("form[action='/ui/admin/owner']")
    form.get_by_label("Dedicated resource").fill("H3a")
    form.get_by_label("New domain").fill("SD3")
    form.get_by_role("button", name="Change owner").click()
    page.locator(".done").wait_for()
    assert "H3a has a new owner" in page.locator(".done").inner_text()
    listed = fleet.api("GET", "/v1/dedications").json()["items"]
    assert any(d["resource"] == "H3a" and d["domain"] == "SD3" for d in listed)
    # A refusal of the rules comes back as it is: c3 is SD2's, below it SD1 may not own.
    form = page.locator("form[action='/ui/admin/owner']")
    form.get_by_label("Dedicated resource").fill("H3a")
    form.get_by_label("New domain").fill("SD1")
    form.get_by_role("button", name="Change owner").click()
    page.locator(".problem").wait_for()
    assert "409" in page.locator(".problem").inner_text()
    checked(page, "admin-owner")
    assert fleet.api("DELETE", "/v1/dedications/H3a").status_code == 200


def test_an_offerings_dedicated_flag_is_toggled_by_root_and_refused_to_a_user(
    page: Any, fleet: Fleet
) -> None:
    made = fleet.api("POST", "/v1/offerings", json={"name": "console-medium", "cpu": 2})
    assert made.status_code == 201, made.text

    def flag() -> bool:
        listed = fleet.api("GET", "/v1/offerings").json()["items"]
        return bool(next(o for o in listed if o["name"] == "console-medium")["dedicated"])

    sign_in(page, fleet.root)
    page.get_by_role("link", name="Admin").click()
    page.get_by_role("button", name="Make dedicated console-medium").click()
    page.locator(".done").wait_for()
    assert "offering console-medium is dedicated" in page.locator(".done").inner_text()
    row = page.get_by_role("row").filter(has=page.get_by_role("rowheader", name="console-medium"))
    assert row.locator("td").nth(3).inner_text() == "yes"
    assert flag() is True
    checked(page, "admin-offering")
    page.get_by_role("button", name="Sign out").click()
    sign_in(page, fleet.user)
    page.get_by_role("link", name="Admin").click()
    page.get_by_role("button", name="Make shared console-medium").click()
    page.locator(".problem").wait_for()
    assert "403 forbidden" in page.locator(".problem").inner_text()
    assert flag() is True
    events = fleet.api("GET", "/v1/events", params={"kind": "offering.", "limit": 100}).json()
    # The fleet's own apply made its offerings too (their audit events): this one's.
    assert [e["kind"] for e in events["items"] if e["subject"] == "console-medium"] == [
        "offering.created",
        "offering.updated",
    ]


def test_tokens_are_made_shown_once_and_revoked(page: Any, fleet: Fleet) -> None:
    sign_in(page, fleet.root)
    page.get_by_role("link", name="Tokens").click()
    form = page.locator("form[action='/ui/tokens/create']")
    form.locator("select[name=role]").select_option("user")
    form.get_by_label("Scope").fill("U2")
    form.get_by_label("Description").fill("<b>from the console</b>")
    form.get_by_role("button", name="Create").click()
    secret = page.locator("#made code.secret").inner_text()
    assert secret.startswith("plc_")
    accessor = secret.split("_")[1]
    row = page.get_by_role("row").filter(has=page.get_by_role("rowheader", name=accessor))
    assert "<b>from the console</b>" in row.inner_text()  # text, never markup
    checked(page, "tokens")
    headers = {"Authorization": f"Bearer {secret}"}
    assert httpx.get(fleet.base + "/v1/placements", headers=headers).status_code == 200
    row.get_by_role("button", name=f"Revoke {accessor}").click()
    page.get_by_text(f"{accessor} is revoked").wait_for()
    assert page.locator("#made").count() == 0  # the secret is not shown again
    assert httpx.get(fleet.base + "/v1/placements", headers=headers).status_code == 401
    # A user manages no tokens: the API's 403, on the page.
    page.get_by_role("button", name="Sign out").click()
    sign_in(page, fleet.user)
    page.goto("/ui/tokens")
    assert "403 forbidden" in page.locator(".problem").inner_text()


EDIT = """version: 1
name: whatif-edit
workloads:
  - {name: edit-a1, account: A1, offering: dedicated-small, units: 2}
"""


def placements_of(fleet: Fleet, workload: str) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = fleet.api(
        "GET", "/v1/placements", params={"workload": workload, "limit": 1000}
    ).json()["items"]
    return found


def test_a_policy_edit_is_previewed_with_its_picture_then_applied(page: Any, fleet: Fleet) -> None:
    sign_in(page, fleet.root)
    page.get_by_role("link", name="What-if").click()
    page.wait_for_url(re.compile(r"/ui/whatif"))
    # A file is read into the form in the browser (whatif.js), shown once the page (here
    # swapped in by htmx) has it.
    page.get_by_label("Or read it from a file").set_input_files(
        files=[{"name": "edit.yaml", "mimeType": "application/yaml", "buffer": EDIT.encode()}]
    )
    page.get_by_text("Read edit.yaml").wait_for()
    assert page.get_by_label("Spec document").input_value() == EDIT
    page.get_by_role("button", name="Preview the edit").click()
    preview = page.locator("#edit-preview")
    preview.wait_for()
    expected = fleet.api(
        "POST",
        "/v1/apply",
        params={"dry_run": "true", "source": "console"},
        content=EDIT.encode(),
        headers={"content-type": "application/yaml"},
    ).json()
    assert "Dry run: nothing has changed" in preview.inner_text()
    # The whole world is planned again: the pending units of big-u2 may change too.
    rows = preview.locator("table.diff tbody tr")
    assert rows.count() == len(expected["changes"])
    placed = [m for m in expected["changes"] if m["workload"] == "edit-a1"]
    assert len(placed) == 2
    for move in placed:
        row = rows.filter(has_text=move["unit"])
        assert row.locator("td").nth(0).inner_text().startswith("+")
        assert row.locator("td").nth(3).inner_text() == move["to"]
    # The picture: the target they land on, in its zone, and an arrow from nowhere to it
    # labelled with how many land there.
    svg = preview.locator("figure svg")
    assert svg.get_attribute("role") == "img"
    drawn = svg.text_content()
    target = placed[0]["to"]
    landing = [m for m in expected["changes"] if m["to"] == target and m["from"] is None]
    assert target in drawn and "zone z1" in drawn and f"{len(landing)} in" in drawn
    arrow = preview.locator("figure svg g").filter(
        has=page.locator("title", has_text=f"from (nowhere) to {target}:")
    )
    assert arrow.locator("path[marker-end]").count() == 1
    assert arrow.locator("text").text_content() == str(len(landing))
    checked(page, "whatif-edit-preview")
    assert placements_of(fleet, "edit-a1") == []  # nothing changed yet
    # By keyboard: the picture's scrolling region takes focus (drawn), then Confirm.
    region = preview.get_by_role("region", name="The picture (scrolls)")
    region.focus()
    page.keyboard.press("Tab")
    focused = page.evaluate(
        "() => { const e = document.activeElement; const s = getComputedStyle(e);"
        " return {text: e.textContent.trim(), outline: s.outlineStyle}; }"
    )
    assert re.fullmatch(r"Confirm: apply it at revision \d+", focused["text"]), focused
    assert focused["outline"] != "none", focused
    page.keyboard.press("Enter")
    applied = page.locator("#applied")
    applied.wait_for()
    assert "Applied whatif-edit" in applied.inner_text()
    assert applied.locator("figure svg").count() == 1
    assert {p["target"] for p in placements_of(fleet, "edit-a1")} == {target}
    checked(page, "whatif-edit-applied")
    assert fleet.api("DELETE", "/v1/workloads/edit-a1").status_code == 200


def test_a_stale_preview_is_refused_and_previewed_again(page: Any, fleet: Fleet) -> None:
    sign_in(page, fleet.root)
    page.goto("/ui/whatif")
    page.get_by_label("Spec document").fill(EDIT.replace("edit-a1", "stale-a1"))
    page.get_by_role("button", name="Preview the edit").click()
    page.locator("#edit-preview").wait_for()
    seen = page.locator("#edit-preview [role=status]").inner_text()
    # Someone else changes the world after the preview.
    assert fleet.api("POST", "/v1/targets/H2a/down").status_code == 200
    assert fleet.api("POST", "/v1/targets/H2a/up").status_code == 200
    page.get_by_role("button", name=re.compile("Confirm: apply it")).click()
    problem = page.locator(".problem").first
    problem.wait_for()
    assert "409 revision-changed" in problem.inner_text()
    assert "nothing was applied" in page.locator("#again").inner_text()
    assert placements_of(fleet, "stale-a1") == []
    assert fleet.api("GET", "/v1/workloads/stale-a1").status_code == 404
    checked(page, "whatif-stale")
    page.get_by_role("button", name="Preview again").click()
    page.locator("#edit-preview").wait_for()
    fresh = page.locator("#edit-preview [role=status]").inner_text()
    assert fresh != seen and "Dry run: nothing has changed" in fresh
    assert fleet.api("GET", "/v1/workloads/stale-a1").status_code == 404


def test_a_spec_error_is_shown_at_its_line_as_text(page: Any, fleet: Fleet) -> None:
    sign_in(page, fleet.root)
    page.goto("/ui/whatif")
    bad = (
        "version: 1\nname: whatif-bad\nworkloads:\n"
        '  - {name: "<img src=x onerror=window.pwned=1>", units: two}\n'
    )
    page.get_by_label("Spec document").fill(bad)
    page.get_by_role("button", name="Preview the edit").click()
    errors = page.locator("#errors")
    errors.wait_for()
    expected = fleet.api(
        "POST",
        "/v1/apply",
        params={"dry_run": "true"},
        content=bad.encode(),
        headers={"content-type": "application/yaml"},
    ).json()["errors"]
    assert expected and expected[0]["line"] == 4
    shown = errors.inner_text()
    for error in expected:
        assert f"line {error['line']}, column {error['column']}" in shown
        assert error["detail"] in shown
    assert "<img src=x onerror=window.pwned=1>" in shown  # the line, as text
    assert page.locator("main img").count() == 0
    assert page.evaluate("() => window.pwned === undefined")
    assert "422 invalid-spec" in page.locator(".problem").first.inner_text()
    # The spec stays in the form, to be fixed there.
    assert page.get_by_label("Spec document").input_value().rstrip("\n") == bad.rstrip("\n")
    checked(page, "whatif-spec-error")


def test_several_targets_are_previewed_at_once_then_confirmed(page: Any, fleet: Fleet) -> None:
    sign_in(page, fleet.root)
    page.goto("/ui/whatif")
    leaving = {p["unit"] for t in ("H33a", "H33b") for p in placements_on(fleet, t)}
    assert leaving
    page.get_by_label("Targets, one a line").fill("H33b\nH33a\n")
    page.get_by_role("button", name="Preview the targets").click()
    preview = page.locator("#preview")
    preview.wait_for()
    assert "Preview: H33b, H33a down" in preview.inner_text()
    units = preview.locator("table.diff tbody tr td:nth-child(2)").all_inner_texts()
    assert leaving <= set(units)
    destinations = set(preview.locator("table.diff tbody tr td:nth-child(4)").all_inner_texts())
    assert not destinations & {"H33a", "H33b"}  # nothing lands on the other one going down
    notes = preview.locator("figure svg text").all_text_contents()
    assert len([n for n in notes if n.startswith("goes down")]) == 2, notes
    checked(page, "whatif-several")
    assert fleet.api("GET", "/v1/targets/H33a").json()["admin_state"] == "up"
    page.get_by_role("button", name="Confirm: take 2 targets down").click()
    done = page.locator("#done")
    done.wait_for()
    assert "H33b, H33a are down" in done.inner_text()
    for name in ("H33a", "H33b"):
        assert fleet.api("GET", f"/v1/targets/{name}").json()["admin_state"] == "down"
    checked(page, "whatif-several-done")
    back = fleet.api("POST", "/v1/targets:batch", json={"up": ["H33a", "H33b"]})
    assert back.status_code == 200, back.text


def placements_on(fleet: Fleet, target: str) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = fleet.api(
        "GET", "/v1/placements", params={"target": target, "limit": 1000}
    ).json()["items"]
    return found


def test_several_targets_are_drained_at_once_and_a_stale_confirm_is_refused(
    page: Any, fleet: Fleet
) -> None:
    pair = ("H1a", "H111a")
    alone = fleet.api("POST", "/v1/targets/H1a/drain", params={"dry_run": "true"}).json()
    assert "H111a" in {m["to"] for m in alone["moves"]}  # alone, its units go next door
    before = {t: placements_on(fleet, t) for t in pair}
    sign_in(page, fleet.root)
    page.goto("/ui/whatif")
    page.get_by_label("Targets, one a line").fill("H1a\nH111a\n")
    page.get_by_label("drain it (maintenance)").check()
    page.get_by_role("button", name="Preview the targets").click()
    preview = page.locator("#preview")
    preview.wait_for()
    assert "Preview: H1a, H111a maintenance" in preview.inner_text()
    assert "Dry run: nothing has changed" in preview.inner_text()
    units = set(preview.locator("table.diff tbody tr td:nth-child(2)").all_inner_texts())
    assert {p["unit"] for p in before["H1a"]} <= units
    destinations = set(preview.locator("table.diff tbody tr td:nth-child(4)").all_inner_texts())
    assert destinations and not destinations & set(pair)  # neither takes the other's
    notes = preview.locator("figure svg text").all_text_contents()
    assert len([n for n in notes if n.startswith("goes into maintenance")]) == 2, notes
    checked(page, "whatif-drain-several")
    # Someone else changes the world after the preview: the confirmation is refused.
    assert fleet.api("POST", "/v1/targets/H2a/down").status_code == 200
    assert fleet.api("POST", "/v1/targets/H2a/up").status_code == 200
    page.get_by_role("button", name="Confirm: drain 2 targets").click()
    problem = page.locator(".problem").first
    problem.wait_for()
    assert "409 revision-changed" in problem.inner_text()
    assert "nothing was applied" in page.locator("#again").inner_text()
    for name in pair:
        assert fleet.api("GET", f"/v1/targets/{name}").json()["admin_state"] == "up"
        assert placements_on(fleet, name) == before[name]
    checked(page, "whatif-drain-stale")
    page.get_by_role("button", name="Preview again").click()
    preview.wait_for()
    assert "Preview: H1a, H111a maintenance" in preview.inner_text()
    page.get_by_role("button", name="Confirm: drain 2 targets").click()
    done = page.locator("#done")
    done.wait_for()
    assert "H1a, H111a are in maintenance" in done.inner_text()
    for name in pair:
        assert fleet.api("GET", f"/v1/targets/{name}").json()["admin_state"] == "maintenance"
        assert placements_on(fleet, name) == []
    checked(page, "whatif-drain-several-done")
    # As it was: both up, and the units back where they ran.
    assert fleet.api("POST", "/v1/targets:batch", json={"up": list(pair)}).status_code == 200
    for placement in before["H1a"]:
        back = fleet.api("POST", f"/v1/units/{placement['unit']}/migrate", json={"target": "H1a"})
        assert back.status_code == 200, back.text


def test_targets_down_and_others_up_in_one_preview_then_confirmed(page: Any, fleet: Fleet) -> None:
    assert fleet.api("POST", "/v1/targets/H2a/down").status_code == 200
    try:
        sign_in(page, fleet.root)
        page.goto("/ui/whatif")
        page.get_by_label("Targets, one a line").fill("H33a\n")
        page.get_by_label("And bring up, in the same simulation").fill("H2a\n")
        page.get_by_role("button", name="Preview the targets").click()
        preview = page.locator("#preview")
        preview.wait_for()
        assert "Preview: H33a down, H2a up" in preview.inner_text()
        # The preview is POST /v1/simulate's: the same moves, at the same revision.
        expected = fleet.api("POST", "/v1/simulate", json={"down": ["H33a"], "up": ["H2a"]})
        assert expected.status_code == 200, expected.text
        found = expected.json()
        assert f"at revision {found['revision']}" in preview.inner_text()
        units = preview.locator("table.diff tbody tr td:nth-child(2)").all_inner_texts()
        assert sorted(units) == sorted(m["unit"] for m in found["changes"]) and units
        notes = preview.locator("figure svg text").all_text_contents()
        assert any(n.startswith("goes down") for n in notes), notes
        checked(page, "whatif-mixed")
        assert fleet.api("GET", "/v1/targets/H33a").json()["admin_state"] == "up"
        assert fleet.api("GET", "/v1/targets/H2a").json()["admin_state"] == "down"
        page.get_by_role("button", name="Confirm: take H33a down and bring H2a up").click()
        done = page.locator("#done")
        done.wait_for()
        assert "H33a down, H2a up (revision" in done.inner_text()
        assert fleet.api("GET", "/v1/targets/H33a").json()["admin_state"] == "down"
        assert fleet.api("GET", "/v1/targets/H2a").json()["admin_state"] == "up"
        checked(page, "whatif-mixed-done")
    finally:
        back = fleet.api("POST", "/v1/targets:batch", json={"up": ["H33a", "H2a"]})
        assert back.status_code == 200, back.text


def test_a_stale_down_preview_is_refused_and_previewed_again(page: Any, fleet: Fleet) -> None:
    sign_in(page, fleet.root)
    page.goto("/ui/whatif?target=H33b")
    page.get_by_role("button", name="Preview the targets").click()
    page.locator("#preview").wait_for()
    seen = page.locator("#preview [role=status]").inner_text()
    assert fleet.api("POST", "/v1/targets/H2a/down").status_code == 200
    assert fleet.api("POST", "/v1/targets/H2a/up").status_code == 200
    page.get_by_role("button", name="Confirm: take H33b down").click()
    problem = page.locator(".problem").first
    problem.wait_for()
    assert "409 revision-changed" in problem.inner_text()
    assert "nothing was applied" in page.locator("#again").inner_text()
    assert fleet.api("GET", "/v1/targets/H33b").json()["admin_state"] == "up"
    checked(page, "whatif-targets-stale")
    page.get_by_role("button", name="Preview again").click()
    page.locator("#preview").wait_for()
    fresh = page.locator("#preview [role=status]").inner_text()
    assert fresh != seen and "Dry run: nothing has changed" in fresh


def test_a_user_previews_its_own_moves_and_may_not_confirm(page: Any, fleet: Fleet) -> None:
    mine = {
        p["unit"]
        for p in fleet.api("GET", "/v1/placements", params={"limit": 1000}).json()["items"]
        if p.get("account") == "U2" and p.get("target")
    }
    assert mine
    host = next(
        p["target"]
        for p in fleet.api("GET", "/v1/placements", params={"limit": 1000}).json()["items"]
        if p["unit"] in mine
    )
    # With H33a too, which runs other accounts' VMs.
    down = sorted({host, "H33a"})
    everything = fleet.api("POST", "/v1/simulate", json={"down": down}).json()
    theirs = [m for m in everything["changes"] if m["unit"] not in mine]
    sign_in(page, fleet.user)
    page.goto("/ui/whatif")
    page.get_by_label("Targets, one a line").fill("\n".join(down))
    page.get_by_role("button", name="Preview the targets").click()
    preview = page.locator("#preview")
    preview.wait_for()
    units = set(preview.locator("table.diff tbody tr td:nth-child(2)").all_inner_texts())
    shown = {m["unit"] for m in everything["changes"] if m["unit"] in mine}
    assert units == shown and shown, (units, shown)
    text = preview.inner_text()
    for move in theirs:
        assert move["unit"] not in text
    assert theirs  # the host runs other accounts' VMs too: counted, never named
    assert f"{len(theirs)} of other accounts' not shown" in text, text
    assert "Only a root admin can make this change" in text
    assert preview.get_by_role("button", name=re.compile("Confirm")).count() == 0
    checked(page, "whatif-user-preview")
    assert all(fleet.api("GET", f"/v1/targets/{t}").json()["admin_state"] == "up" for t in down)
