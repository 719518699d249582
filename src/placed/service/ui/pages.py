"""The console's pages. Each handler reads or changes the world only through the app's
own /v1 API as the signed-in token (session.call), and shows what it answers: a refusal
is the API's problem, with its status, kind and detail."""

from __future__ import annotations

import hashlib
from importlib import resources
from typing import Any
from urllib.parse import quote, urlencode

from fastapi import APIRouter, Depends, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from jinja2 import Environment, FileSystemLoader, StrictUndefined
from markupsafe import Markup, escape

from placed.collector import without_cycle_collection
from placed.service.auth import public
from placed.service.ui import charts, fleet, picture, whatif
from placed.service.ui.session import (
    COOKIE,
    MAX_FORM_BYTES,
    TOKEN_TEXT,
    Answer,
    FormError,
    Problem,
    call,
    csrf_of,
    csrf_ok,
    form,
    same_origin,
    signed_in,
)

HERE = resources.files("placed.service.ui")
STATIC = {
    "htmx.min.js": "text/javascript",
    "htmx.LICENSE": "text/plain",
    "console.css": "text/css",
    "whatif.js": "text/javascript",
}
PAGE = 50
# What-if's actions: each a /v1/targets/NAME/<action> route that takes dry_run.
ACTIONS = {"down": "take it down", "up": "bring it up", "drain": "drain it (maintenance)"}
MAX_LOCATION_PAGES = 20  # 20,000 locations: a tree far past any fleet's
EVENT_WAIT_S = 20
SECURITY = {
    # Scripts and styles from this origin only: user text can never run as code.
    "Content-Security-Policy": "default-src 'self'; frame-ancestors 'none'; "
    "form-action 'self'; base-uri 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
}

templates = Environment(
    loader=FileSystemLoader(str(HERE / "templates")),
    autoescape=True,
    undefined=StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
)
# An element id for any name (names may hold any character an id may not).
templates.filters["key"] = lambda name: hashlib.sha256(str(name).encode()).hexdigest()[:16]


async def _who(request: Request) -> None:
    """Which token is signed in, for the header: the API's own answer (GET /v1/whoami)."""
    token = signed_in(request)
    quiet = request.url.path.startswith("/ui/static/") or request.url.path == "/ui/events/feed"
    if token is not None and not quiet:
        found = await call(request, token, "GET", "/v1/whoami")
        request.state.console_who = found.data if found.problem is None else None


router = APIRouter(prefix="/ui", dependencies=[public(), Depends(_who)], include_in_schema=False)


def render(
    request: Request, name: str, status: int = 200, token: str | None = None, **values: Any
) -> HTMLResponse:
    values.setdefault("title", "placed")
    page = templates.get_template(name).render(
        path=request.url.path,
        csrf=csrf_of(token) if token else "",
        signed_in=token is not None,
        who=getattr(request.state, "console_who", None),
        **values,
    )
    return HTMLResponse(page, status_code=status, headers=SECURITY)


def to_login(request: Request, why: str = "") -> Response:
    target = "/ui/login" + (f"?{urlencode({'why': why})}" if why else "")
    answer = RedirectResponse(target, status_code=303, headers=SECURITY)
    if why:
        answer.delete_cookie(COOKIE, path="/ui")
    return answer


def refused(request: Request, token: str, problem: Problem, name: str = "problem.html") -> Response:
    """A refusal of the API, on a page of its own status; a token the API no longer
    takes signs out."""
    if problem.status == 401:
        return to_login(request, f"signed out: {problem.detail}")
    return render(request, name, problem.status, token, problem=problem, title=problem.title)


async def everything(request: Request, token: str, path: str, pages: int) -> Answer:
    """Every page of a listing, at most `pages` of 1,000."""
    items: list[Any] = []
    after: str | None = None
    for _ in range(pages):
        params: dict[str, Any] = {"limit": 1000}
        if after is not None:
            params["after"] = after
        answer = await call(request, token, "GET", path, params=params)
        if answer.problem is not None:
            return answer
        items.extend(answer.data["items"])
        after = answer.data.get("next_cursor")
        if after is None:
            break
    return Answer(200, {"items": items, "complete": after is None}, None)


def text(request: Request, name: str, limit: int = 255) -> str:
    value = request.query_params.get(name, "")
    return value[:limit]


@router.get("/static/{name}")
async def static(name: str) -> Response:
    if name not in STATIC:
        return Response("not found", status_code=404, media_type="text/plain")
    body = (HERE / "static" / name).read_bytes()
    return Response(
        body,
        media_type=STATIC[name],
        headers={"Cache-Control": "max-age=3600", "X-Content-Type-Options": "nosniff"},
    )


@router.get("")
async def home(request: Request) -> Response:
    return RedirectResponse("/ui/fleet", status_code=303)


@router.get("/login")
async def login_page(request: Request) -> Response:
    return render(request, "login.html", why=text(request, "why", 600), problem=None)


@router.post("/login")
async def login(request: Request) -> Response:
    if not same_origin(request):
        problem = Problem(403, "forbidden", "Forbidden", "a sign-in from another site")
        return render(request, "login.html", 403, why="", problem=problem)
    try:
        fields = await form(request)
    except FormError as error:
        problem = Problem(400, "invalid-request", "Bad request", str(error))
        return render(request, "login.html", 400, why="", problem=problem)
    token = fields.get("token", "").strip()
    if not TOKEN_TEXT.fullmatch(token):
        problem = Problem(422, "invalid-request", "Not a token", "a token is plc_ then letters")
        return render(request, "login.html", 422, why="", problem=problem)
    # Any read every console role may make: the API says whether the token is live.
    answer = await call(request, token, "GET", "/v1/locations", params={"limit": 1})
    if answer.problem is not None:
        return render(request, "login.html", answer.status, why="", problem=answer.problem)
    done = RedirectResponse("/ui/fleet", status_code=303, headers=SECURITY)
    done.set_cookie(
        COOKIE,
        token,
        httponly=True,
        samesite="strict",
        path="/ui",
        secure=request.url.scheme == "https",
    )
    return done


@router.post("/logout")
async def logout(request: Request) -> Response:
    answer = RedirectResponse("/ui/login", status_code=303, headers=SECURITY)
    answer.delete_cookie(COOKIE, path="/ui")
    return answer


async def acting(
    request: Request, max_bytes: int = MAX_FORM_BYTES, long: dict[str, int] | None = None
) -> tuple[str, dict[str, str]] | Response:
    """The token and the form of a POST that changes something, or the answer that
    refuses it (not signed in, another site, no CSRF value, not a form)."""
    token = signed_in(request)
    if token is None:
        return to_login(request)
    if not same_origin(request):
        problem = Problem(403, "forbidden", "Forbidden", "a change sent from another site")
        return render(request, "problem.html", 403, token, problem=problem, title="Forbidden")
    try:
        fields = await form(request, max_bytes, long)
    except FormError as error:
        problem = Problem(400, "invalid-request", "Bad request", str(error))
        return render(request, "problem.html", 400, token, problem=problem, title="Bad request")
    if not csrf_ok(token, fields):
        problem = Problem(
            403, "forbidden", "Forbidden", "the form's CSRF value is missing or wrong"
        )
        return render(request, "problem.html", 403, token, problem=problem, title="Forbidden")
    return token, fields


# Fleet


@router.get("/fleet")
async def fleet_page(request: Request) -> Response:
    """The usage per zone, the tree and one page of targets. Owners come from /v1/owners
    for the page's targets (and the dedications' rows, for the tree and the filter by
    owner): the page asks for them after it is drawn (/ui/fleet/owners), unless it
    filters by owner or is asked for them inline (`owners=1`, the link for a browser
    without JavaScript)."""
    token = signed_in(request)
    if token is None:
        return to_login(request)
    inline = bool(text(request, "owner")) or text(request, "owners") == "1"
    return await _fleet(request, token, inline, "fleet.html")


@router.get("/fleet/owners")
async def fleet_owners(request: Request) -> Response:
    """The owner badges of the same page, each swapped into its place by id."""
    token = signed_in(request)
    if token is None:
        return Response(status_code=204)
    return await _fleet(request, token, True, "fleet_owners.html")


async def _fleet(request: Request, token: str, with_owners: bool, name: str) -> Response:
    under = text(request, "under")
    owner = text(request, "owner")
    state = text(request, "state", 16)
    after = text(request, "after")
    places = await everything(request, token, "/v1/locations", MAX_LOCATION_PAGES)
    if places.problem is not None:
        return refused(request, token, places.problem)
    dedications: list[dict[str, Any]] = []
    held: list[str] = []
    if owner:  # the filter needs the dedications: /v1/owners lists them from their rows
        # The rows include the hosts an account holds implicitly (`implicit` too).
        account = owner.partition("/")[2]
        wanted_held = {"account": account} if account else None
        owned_answer = await call(request, token, "GET", "/v1/owners", params=wanted_held)
        if owned_answer.problem is not None:
            return refused(request, token, owned_answer.problem)
        dedications = owned_answer.data["dedications"]
        held = [str(host) for host in owned_answer.data.get("implicit", [])]
    parents = {str(row["name"]): row.get("parent") for row in places.data["items"]}
    wanted: list[str] | None = [under] if under else []
    if owner:
        mine = [str(row["resource"]) for row in dedications if fleet.owner_key(row) == owner]
        mine += [host for host in held if host not in mine]
        wanted = await _both(request, token, under, mine, parents)
    if wanted is not None and len(wanted) > 100:
        problem = Problem(422, "invalid-request", "Too many places", "narrow the filter")
        return refused(request, token, problem)
    params: list[tuple[str, str | int]] = [("limit", PAGE)]
    params.extend(("under", name) for name in wanted or ())
    if state:
        params.append(("state", state))
    if after:
        params.append(("after", after))
    if wanted is None:  # the owner owns nothing there: no target to ask for
        found = Answer(200, {"items": [], "next_cursor": None}, None)
    else:
        found = await call(request, token, "GET", "/v1/targets", params=params)
    if found.problem is not None:
        return refused(request, token, found.problem)
    # The owners of just this page's targets, and the tree's own (GET /v1/owners: the
    # rows of these targets and the dedications, at any fleet size).
    badges: dict[str, fleet.Owner] = {}
    owned: dict[str, Any] = {}
    if with_owners:
        asked = [("target", str(t["name"])) for t in found.data["items"]]
        owners_answer = await call(request, token, "GET", "/v1/owners", params=asked)
        if owners_answer.problem is not None:
            return refused(request, token, owners_answer.problem)
        badges = {str(row["target"]): fleet.owner_row(row) for row in owners_answer.data["items"]}
        owned = {str(row["resource"]): row for row in owners_answer.data["dedications"]}
    rows = []
    for target in found.data["items"]:
        rows.append(
            {
                "target": target,
                "path": list(reversed(fleet.chain(target.get("parent"), parents))),
                "owner": badges.get(target["name"]),
                "bars": fleet.bars(target),
            }
        )
    usage: dict[str, Any] = {"usage_level": "zone", "zones": [], "usage_problem": None}
    if name == "fleet.html":
        used = await call(request, token, "GET", "/v1/usage", params={"level": "zone"})
        if used.problem is not None:
            usage["usage_problem"] = used.problem
        else:
            usage["zones"] = charts.zones(used.data["items"])
    roots = fleet.tree(places.data["items"], owned)
    keep = {"under": under, "owner": owner, "state": state}
    chosen = {k: v for k, v in keep.items() if v}
    following = found.data.get("next_cursor")
    page_of = {**chosen, **({"after": after} if after else {})}
    return render(
        request,
        name,
        token=token,
        title="Fleet",
        roots=roots,
        options=fleet.flat(roots),
        rows=rows,
        chosen=keep,
        with_owners=with_owners,
        owners_link="/ui/fleet/owners?" + urlencode(page_of),
        inline_link="/ui/fleet?" + urlencode({**page_of, "owners": "1"}),
        complete=places.data["complete"],
        next_link=("/ui/fleet?" + urlencode({**chosen, "after": following}) if following else None),
        first_link="/ui/fleet?" + urlencode(chosen) if after else None,
        **usage,
    )


async def _both(
    request: Request, token: str, under: str, mine: list[str], parents: dict[str, Any]
) -> list[str] | None:
    """The places whose targets are both below `under` (when given) and the owner's:
    in a tree, one of two such places is below the other. No place: no target."""
    if not mine:
        return None
    if not under:
        return mine
    chains: dict[str, list[str]] = {}
    for resource in mine:
        if resource in parents:
            chains[resource] = fleet.chain(resource, parents)
        else:  # a host: its chain starts at its location
            found = await call(request, token, "GET", f"/v1/targets/{quote(resource, safe='')}")
            above = found.data.get("parent") if found.problem is None else None
            chains[resource] = [resource, *fleet.chain(above, parents)]
    if any(resource in fleet.chain(under, parents) for resource in mine):
        return [under]
    return [resource for resource in mine if under in chains[resource]] or None


# Workloads and placements


@router.get("/workloads")
async def workloads_page(request: Request) -> Response:
    token = signed_in(request)
    if token is None:
        return to_login(request)
    params: dict[str, Any] = {"limit": PAGE}
    after = text(request, "after")
    if after:
        params["after"] = after
    found = await call(request, token, "GET", "/v1/workloads", params=params)
    if found.problem is not None:
        return refused(request, token, found.problem)
    following = found.data.get("next_cursor")
    return render(
        request,
        "workloads.html",
        token=token,
        title="Workloads",
        workloads=found.data["items"],
        next_link="/ui/workloads?" + urlencode({"after": following}) if following else None,
    )


def _no_level(problem: Problem | None) -> bool:
    """A level the inventory does not have (a 404 invalid-parameter, not the workload's
    own 404 not-found): the page says so, or falls back to targets."""
    return problem is not None and problem.kind == "invalid-parameter"


@router.get("/workloads/{name}")
async def workload_page(request: Request, name: str) -> Response:
    """One workload, and how its units spread over a level the inventory has (GET
    /v1/workloads/NAME/spread: one grouped query)."""
    token = signed_in(request)
    if token is None:
        return to_login(request)
    found = await call(request, token, "GET", f"/v1/workloads/{quote(name, safe='')}")
    if found.problem is not None:
        return refused(request, token, found.problem)
    level = text(request, "level", 64) or "zone"
    path = f"/v1/workloads/{quote(name, safe='')}/spread"
    spread = await call(request, token, "GET", path, params={"level": level})
    problem = spread.problem
    if _no_level(problem) and level != "zone":
        assert problem is not None
        problem = Problem(problem.status, problem.kind, "No such level", problem.detail)
    elif _no_level(problem):
        # No zones: the first level there is (the answer names them), else targets.
        spread = await call(request, token, "GET", path, params={"level": "target"})
        level, problem = "target", spread.problem
    if problem is not None and not _no_level(problem):
        return refused(request, token, problem)
    data: dict[str, Any] = (
        spread.data if problem is None else {"levels": [], "items": [], "pending": 0}
    )
    return render(
        request,
        "workload.html",
        problem.status if problem is not None else 200,
        token,
        title=f"Workload {name}",
        workload=found.data,
        level=level,
        levels=data.get("levels", []),
        spread=data,
        bars=charts.spread(data.get("items", [])),
        problem=problem,
    )


@router.get("/placements")
async def placements_page(request: Request) -> Response:
    token = signed_in(request)
    if token is None:
        return to_login(request)
    chosen = {"workload": text(request, "workload"), "target": text(request, "target")}
    params: dict[str, Any] = {"limit": PAGE, **{k: v for k, v in chosen.items() if v}}
    after = text(request, "after")
    if after:
        params["after"] = after
    found = await call(request, token, "GET", "/v1/placements", params=params)
    if found.problem is not None:
        return refused(request, token, found.problem)
    following = found.data.get("next_cursor")
    keep = {k: v for k, v in chosen.items() if v}
    return render(
        request,
        "placements.html",
        token=token,
        title="Placements",
        placements=found.data["items"],
        chosen=chosen,
        next_link="/ui/placements?" + urlencode({**keep, "after": following})
        if following
        else None,
        quote=quote,
    )


@router.get("/units/{unit:path}")
async def unit_page(request: Request, unit: str) -> Response:
    token = signed_in(request)
    if token is None:
        return to_login(request)
    # The document holds a verdict per target (10,000 dicts and more on a large fleet),
    # none in a cycle: collected as the page is made, they would be kept into the oldest
    # generation, and each of its collections walks the replica's whole world in memory
    # (a sixth of a second). Freed when the page is made, they are never collected.
    with without_cycle_collection():
        return await _unit_page(request, token, unit)


async def _unit_page(request: Request, token: str, unit: str) -> Response:
    found = await call(request, token, "GET", f"/v1/units/{quote(unit, safe='/')}")
    if found.problem is not None:
        return refused(request, token, found.problem)
    explanation = found.data.get("explanation")
    reason = text(request, "reason", 64)
    verdicts = explanation["targets"] if explanation else []
    filters = sorted({r["filter"] for v in verdicts for r in v["reasons"]})
    if reason:
        verdicts = [v for v in verdicts if any(r["filter"] == reason for r in v["reasons"])]
    return render(
        request,
        "unit.html",
        token=token,
        title=f"Unit {unit}",
        unit=found.data,
        explanation=explanation,
        verdicts=verdicts,
        rows=verdict_rows(verdicts, explanation) if explanation else Markup(),
        filters=filters,
        reason=reason,
    )


def verdict_rows(verdicts: list[dict[str, Any]], explanation: dict[str, Any]) -> Markup:
    """The rows of the unit's table of targets, each as a loop of the template would
    write it, every value escaped: made here because the template's own loop took a
    third of a second for 10,000 targets, a pending unit's page on a large fleet."""
    chosen = explanation["target"] if explanation["placed"] else None
    rows = []
    for verdict in verdicts:
        target = verdict["target"]
        if chosen is not None and target == chosen:
            mark = "<strong>chosen</strong>"
        else:
            mark = "yes" if verdict["compatible"] else "no"
        score = escape(f"{verdict['score']:g}") if verdict["compatible"] else "-"
        reasons = "; ".join(
            f"{escape(r['filter'])}: {escape(r['message'])}" for r in verdict["reasons"]
        )
        rows.append(
            f'  <tr>\n    <th scope="row">{escape(target)}</th>\n    <td>{mark}</td>\n'
            f"    <td>{score}</td>\n    <td>{reasons or '-'}</td>\n  </tr>\n"
        )
    return Markup("".join(rows))


# Events


def event_filters(request: Request) -> dict[str, str]:
    found = {
        "kind": text(request, "kind", 64),
        "subject": text(request, "subject"),
        "actor": text(request, "actor", 32),
    }
    return {k: v for k, v in found.items() if v}


@router.get("/events")
async def events_page(request: Request) -> Response:
    token = signed_in(request)
    if token is None:
        return to_login(request)
    chosen = event_filters(request)
    found = await call(
        request, token, "GET", "/v1/events", params={**chosen, "limit": PAGE, "latest": True}
    )
    if found.problem is not None:
        return refused(request, token, found.problem)
    items = found.data["items"]
    last = items[-1]["id"] if items else 0
    return render(
        request,
        "events.html",
        token=token,
        title="Events",
        events=list(reversed(items)),
        chosen=chosen,
        poll="/ui/events/feed?" + urlencode({**chosen, "after": last}),
    )


@router.get("/events/feed")
async def events_feed(request: Request) -> Response:
    """One long poll: the events after `after`, as rows for the top of the feed, and the
    poller that asks again from the last of them."""
    token = signed_in(request)
    if token is None:
        return Response(status_code=204)
    chosen = event_filters(request)
    try:
        after = max(0, min(int(text(request, "after", 20) or 0), 2**62))
    except ValueError:
        after = 0
    found = await call(
        request,
        token,
        "GET",
        "/v1/events",
        params={**chosen, "after": after, "limit": PAGE, "wait": EVENT_WAIT_S},
    )
    if found.problem is not None:
        # A refused poll stops polling; the page says why once reloaded.
        return Response(status_code=204)
    items = found.data["items"]
    last = items[-1]["id"] if items else after
    return render(
        request,
        "events_feed.html",
        token=token,
        events=list(reversed(items)),
        poll="/ui/events/feed?" + urlencode({**chosen, "after": last}),
    )


# What-if


def _whatif(request: Request, token: str, status: int = 200, **values: Any) -> HTMLResponse:
    values.setdefault("targets", text(request, "target"))
    values.setdefault("action", "down")
    values.setdefault("up", "")
    values.setdefault("preview", None)
    values.setdefault("done", None)
    values.setdefault("problem", None)
    values.setdefault("errors", [])
    values.setdefault("spec", "")
    values.setdefault("source", "console")
    values.setdefault("prune", False)
    values.setdefault("edit", None)
    values.setdefault("route", "targets")
    values.setdefault("applied", None)
    values.setdefault("again", False)
    values.setdefault("picture", None)
    return render(
        request,
        "whatif.html",
        status,
        token,
        title="What-if",
        actions=ACTIONS,
        spec_limit=whatif.spec_limit(request.app.state.max_body_bytes),
        max_body=request.app.state.max_body_bytes,
        max_targets=whatif.MAX_TARGETS,
        **values,
    )


@router.get("/whatif")
async def whatif_page(request: Request) -> Response:
    token = signed_in(request)
    if token is None:
        return to_login(request)
    return _whatif(request, token)


async def _picture(
    request: Request, token: str, moves: list[dict[str, Any]], changing: dict[str, str]
) -> picture.Picture | None:
    """The moves drawn by zone: each involved target's zone from /v1/targets (at most
    100 names a call) and the location tree."""
    if not moves:
        return None
    involved = sorted(
        {str(m[k]) for m in moves for k in ("from", "to") if m.get(k)} | set(changing)
    )
    places = await everything(request, token, "/v1/locations", MAX_LOCATION_PAGES)
    located: dict[str, str | None] = {}
    # Past the picture's own bound it is drawn by zone: ask about that many targets at most.
    for first in range(0, min(len(involved), 10 * picture.MAX_TARGETS), 100):
        chunk = involved[first : first + 100]
        found = await call(
            request,
            token,
            "GET",
            "/v1/targets",
            params=[("limit", 1000), *(("under", name) for name in chunk)],
        )
        if found.problem is None:
            wanted = set(chunk)
            located.update(
                (t["name"], t.get("parent")) for t in found.data["items"] if t["name"] in wanted
            )
    rows = places.data["items"] if places.problem is None else []
    parents = {str(r["name"]): r.get("parent") for r in rows}
    kinds = {str(r["name"]): str(r["kind"]) for r in rows}
    zones = {name: picture.zone_of(name, parents, kinds, located) for name in involved}
    return picture.draw(moves, zones, changing)


@router.post("/whatif")
async def whatif_targets(request: Request) -> Response:
    """Targets down, up or drained. `confirm` absent: the dry run (nothing changes);
    present: the change itself, refused if the world changed since the dry run's
    revision."""
    most = whatif.MAX_TARGETS * 256
    acted = await acting(request, whatif.TARGETS_FORM_BYTES, {"targets": most, "up": most})
    if isinstance(acted, Response):
        return acted
    token, fields = acted
    listed = fields.get("targets", fields.get("target", ""))
    targets = whatif.names(listed)
    action = fields.get("action", "down")
    also_up = whatif.names(fields.get("up", ""))
    keep: dict[str, Any] = {
        "targets": "\n".join(targets),
        "action": action,
        "up": "\n".join(also_up),
    }
    wrong = ""
    if action not in ACTIONS or not (targets or (also_up and action != "drain")):
        wrong = "one target or more, one a line, and an action"
    elif len(targets) > whatif.MAX_TARGETS or len(also_up) > whatif.MAX_TARGETS:
        wrong = f"at most {whatif.MAX_TARGETS:,} targets at once"
    elif any(len(name) > 255 for name in [*targets, *also_up]):
        wrong = "a target's name is at most 255 characters"
    elif action == "drain" and also_up:
        wrong = "a drain is previewed alone: leave the targets to bring up empty"
    elif fields.get("confirm") == "yes" and seen_revision(fields) is None:
        # A confirmation is of what a preview showed, at the revision it saw: without
        # one, nothing says the world is still the one shown.
        wrong = "confirm a preview: preview it first"
    if wrong:
        problem = Problem(422, "invalid-request", "Unprocessable", wrong)
        return _whatif(request, token, 422, problem=problem, **keep)
    confirm = fields.get("confirm") == "yes"
    params: dict[str, Any] = {"dry_run": not confirm}
    if action == "drain":
        # All at once, at the preview's revision: a world changed since is a 409.
        if confirm:
            params["expected_revision"] = seen_revision(fields)
        answer = await call(
            request,
            token,
            "POST",
            "/v1/targets:drain",
            params=params,
            json={"targets": targets, "reason": "from the console" if confirm else ""},
        )
    else:
        down = targets if action == "down" else []
        up = [*(targets if action == "up" else []), *also_up]
        answer = await _down_up(request, token, down, up, confirm, seen_revision(fields))
    if answer.problem is not None:
        if answer.problem.status == 401:
            return to_login(request, f"signed out: {answer.problem.detail}")
        return _whatif(
            request,
            token,
            answer.status,
            problem=answer.problem,
            errors=whatif.spec_errors(answer.data, ""),
            again=confirm and answer.problem.kind == "revision-changed",
            **keep,
        )
    data = answer.data
    data["heading"] = whatif.heading([t["target"] for t in data["targets"]])
    changing = {t["target"]: t["admin_state"] for t in data["targets"] if t["changed"]}
    drawn = await _picture(request, token, data["moves"], changing)
    key = "done" if confirm else "preview"
    return _whatif(request, token, picture=drawn, **keep, **{key: data})


def seen_revision(fields: dict[str, str]) -> int | None:
    """The revision a confirmed preview saw (the form's hidden field), or None."""
    seen = fields.get("revision", "")
    return int(seen) if seen.isdigit() and len(seen) < 20 else None


async def _down_up(
    request: Request, token: str, down: list[str], up: list[str], confirm: bool, seen: int | None
) -> Answer:
    """Targets down and others up in one simulation: previewed with POST /v1/simulate
    (any signed-in role, its own accounts' moves only), confirmed with POST
    /v1/targets:batch (root admins) at the revision the preview saw."""
    if not confirm:
        answer = await call(request, token, "POST", "/v1/simulate", json={"down": down, "up": up})
        if answer.problem is not None:
            return answer
        return Answer(answer.status, _as_preview(answer.data), None)
    params: dict[str, Any] = {}
    if seen is not None:
        params["expected_revision"] = seen
    answer = await call(
        request,
        token,
        "POST",
        "/v1/targets:batch",
        params=params,
        json={"down": down, "up": up, "reason": "from the console"},
    )
    if answer.problem is None and down and up:
        answer.data["title"] = _title(down, up)
    return answer


def _title(down: list[str], up: list[str]) -> str:
    """ "H1, H2 down, H3 up": what a preview or a change does."""
    parts = [f"{whatif.heading(down)} down"] if down else []
    return ", ".join([*parts, *([f"{whatif.heading(up)} up"] if up else [])])


def _as_preview(data: dict[str, Any]) -> dict[str, Any]:
    """A simulation in the shape of a batch's answer, for one template. The confirm form
    carries the targets simulate named (a location stands for its targets), so the
    change is the one previewed."""
    already = {*data["already_down"], *data["already_up"]}
    states = [*((name, "down") for name in data["down"]), *((name, "up") for name in data["up"])]
    hidden = dict(data["hidden"])
    hidden["moves"] = hidden.pop("changes", 0)
    return {
        **data,
        # What confirming writes, as the batch's dry run said before (simulate's own
        # `moves` compare two plans and may miss a pending unit the change places).
        "moves": data["changes"],
        "hidden": hidden,
        "targets": [
            {"target": name, "admin_state": state, "changed": name not in already}
            for name, state in states
        ],
        "title": _title(data["down"], data["up"]),
        "confirm_down": "\n".join(data["down"]),
        "confirm_up": "\n".join(data["up"]),
    }


@router.post("/whatif/apply")
async def whatif_apply(request: Request) -> Response:
    """A policy edit: the spec pasted (or read from a file in the browser) previewed with
    POST /v1/apply?dry_run=true, and applied on `confirm` at the revision the preview
    saw, so that a world changed since is refused (409) rather than applied unseen."""
    limit = whatif.spec_limit(request.app.state.max_body_bytes)
    # The field may run past `limit`: the page then says the bound, not "a bad form".
    acted = await acting(request, whatif.SPEC_FORM_BYTES, {"spec": whatif.SPEC_FORM_BYTES})
    if isinstance(acted, Response):
        return acted
    token, fields = acted
    spec = fields.get("spec", "")
    source = fields.get("source", "").strip()[:255] or "console"
    prune = fields.get("prune") == "yes"
    keep: dict[str, Any] = {"spec": spec, "source": source, "prune": prune}
    size = len(spec.encode())
    if size > limit:
        problem = Problem(
            413,
            "body-too-large",
            "Too large",
            f"the spec is {size:,} bytes; the console takes at most {limit:,} "
            "(placed apply or POST /v1/apply take more)",
        )
        return _whatif(request, token, 413, problem=problem, **{**keep, "spec": ""})
    if not spec.strip():
        problem = Problem(422, "invalid-request", "Unprocessable", "paste a spec document")
        return _whatif(request, token, 422, problem=problem, **keep)
    confirm = fields.get("confirm") == "yes"
    params: dict[str, Any] = {"dry_run": not confirm, "prune": prune, "source": source}
    seen = fields.get("revision", "")
    if confirm:
        if not seen.isdigit():
            problem = Problem(
                422, "invalid-request", "Unprocessable", "confirm a preview: preview it first"
            )
            return _whatif(request, token, 422, problem=problem, **keep)
        params["expected_revision"] = int(seen)
    answer = await _apply(request, token, spec, params)
    if answer.problem is not None:
        if answer.problem.status == 401:
            return to_login(request, f"signed out: {answer.problem.detail}")
        return _whatif(
            request,
            token,
            answer.status,
            problem=answer.problem,
            errors=whatif.spec_errors(answer.data, spec),
            again=confirm and answer.problem.kind == "revision-changed",
            route="spec",
            **keep,
        )
    drawn = await _picture(request, token, answer.data["changes"], {})
    key = "applied" if confirm else "edit"
    return _whatif(request, token, picture=drawn, **keep, **{key: answer.data})


async def _apply(request: Request, token: str, spec: str, params: dict[str, Any]) -> Answer:
    """POST /v1/apply with the spec as its body: YAML, which JSON is too."""
    return await call(
        request,
        token,
        "POST",
        "/v1/apply",
        params=params,
        content=spec.encode(),
        media_type="application/yaml",
        timeout=120.0,
    )


# Admin: dedications


async def _admin(request: Request, token: str, status: int = 200, **values: Any) -> Response:
    found = await call(request, token, "GET", "/v1/dedications")
    if found.problem is not None:
        return refused(request, token, found.problem)
    offered = await call(request, token, "GET", "/v1/offerings")
    if offered.problem is not None:
        return refused(request, token, offered.problem)
    values.setdefault("problem", None)
    values.setdefault("done", None)
    values.setdefault("form", {"resource": "", "domain": "", "account": ""})
    return render(
        request,
        "admin.html",
        status,
        token,
        title="Admin",
        dedications=found.data["items"],
        offerings=offered.data["items"],
        **values,
    )


@router.get("/admin")
async def admin_page(request: Request) -> Response:
    token = signed_in(request)
    if token is None:
        return to_login(request)
    return await _admin(request, token)


@router.post("/admin/dedicate")
async def dedicate(request: Request) -> Response:
    acted = await acting(request)
    if isinstance(acted, Response):
        return acted
    token, fields = acted
    body = {k: fields.get(k, "").strip()[:255] for k in ("resource", "domain", "account")}
    payload: dict[str, str] = {k: v for k, v in body.items() if v}
    answer = await call(request, token, "POST", "/v1/dedications", json=payload)
    if answer.problem is not None:
        if answer.problem.status == 401:
            return to_login(request, f"signed out: {answer.problem.detail}")
        return await _admin(request, token, answer.status, problem=answer.problem, form=body)
    return await _admin(request, token, done=f"{body['resource']} is dedicated")


@router.post("/admin/release")
async def release(request: Request) -> Response:
    acted = await acting(request)
    if isinstance(acted, Response):
        return acted
    token, fields = acted
    resource = fields.get("resource", "").strip()[:255]
    answer = await call(request, token, "DELETE", f"/v1/dedications/{quote(resource, safe='')}")
    if answer.problem is not None:
        if answer.problem.status == 401:
            return to_login(request, f"signed out: {answer.problem.detail}")
        return await _admin(request, token, answer.status, problem=answer.problem)
    return await _admin(request, token, done=f"{resource} is released")


@router.post("/admin/owner")
async def change_owner(request: Request) -> Response:
    """A dedication given to another owner in one step (PATCH), as CloudStack cannot."""
    acted = await acting(request)
    if isinstance(acted, Response):
        return acted
    token, fields = acted
    body = {k: fields.get(k, "").strip()[:255] for k in ("resource", "domain", "account")}
    owner = {"domain": body["domain"], "account": body["account"] or None}
    answer = await call(
        request,
        token,
        "PATCH",
        f"/v1/dedications/{quote(body['resource'], safe='')}",
        json=owner,
    )
    if answer.problem is not None:
        if answer.problem.status == 401:
            return to_login(request, f"signed out: {answer.problem.detail}")
        return await _admin(request, token, answer.status, problem=answer.problem)
    return await _admin(request, token, done=f"{body['resource']} has a new owner")


@router.post("/admin/offering")
async def offering_flag(request: Request) -> Response:
    """An offering's dedicated flag turned on or off (PATCH /v1/offerings/NAME)."""
    acted = await acting(request)
    if isinstance(acted, Response):
        return acted
    token, fields = acted
    name = fields.get("offering", "").strip()[:255]
    dedicated = fields.get("dedicated") == "yes"
    answer = await call(
        request,
        token,
        "PATCH",
        f"/v1/offerings/{quote(name, safe='')}",
        json={"dedicated": dedicated},
    )
    if answer.problem is not None:
        if answer.problem.status == 401:
            return to_login(request, f"signed out: {answer.problem.detail}")
        return await _admin(request, token, answer.status, problem=answer.problem)
    how = "dedicated" if dedicated else "not dedicated"
    moved = len(answer.data.get("changes", []))
    done = f"offering {name} is {how}" + (f"; {moved} unit(s) moved or placed" if moved else "")
    return await _admin(request, token, done=done)


# Tokens


ROLES = ("root-admin", "domain-admin", "user", "agent")


async def _tokens(request: Request, token: str, status: int = 200, **values: Any) -> Response:
    found = await call(request, token, "GET", "/v1/tokens")
    values.setdefault("problem", None)
    values.setdefault("made", None)
    values.setdefault("done", None)
    listing = found.data["items"] if found.problem is None else []
    if found.problem is not None:
        if found.problem.status == 401:
            return to_login(request, f"signed out: {found.problem.detail}")
        values["problem"] = values["problem"] or found.problem
        status = found.problem.status if status == 200 else status
    return render(
        request, "tokens.html", status, token, title="Tokens", tokens=listing, roles=ROLES, **values
    )


@router.get("/tokens")
async def tokens_page(request: Request) -> Response:
    token = signed_in(request)
    if token is None:
        return to_login(request)
    return await _tokens(request, token)


@router.post("/tokens/create")
async def create_token(request: Request) -> Response:
    acted = await acting(request)
    if isinstance(acted, Response):
        return acted
    token, fields = acted
    body: dict[str, Any] = {
        "role": fields.get("role", "")[:32],
        "description": fields.get("description", "").strip()[:255],
    }
    if fields.get("scope", "").strip():
        body["scope"] = fields["scope"].strip()[:255]
    answer = await call(request, token, "POST", "/v1/tokens", json=body)
    if answer.problem is not None:
        if answer.problem.status == 401:
            return to_login(request, f"signed out: {answer.problem.detail}")
        return await _tokens(request, token, answer.status, problem=answer.problem)
    return await _tokens(request, token, made=answer.data)


@router.post("/tokens/revoke")
async def revoke_token(request: Request) -> Response:
    acted = await acting(request)
    if isinstance(acted, Response):
        return acted
    token, fields = acted
    accessor = fields.get("accessor", "").strip()[:64]
    answer = await call(request, token, "DELETE", f"/v1/tokens/{quote(accessor, safe='')}")
    if answer.problem is not None:
        if answer.problem.status == 401:
            return to_login(request, f"signed out: {answer.problem.detail}")
        return await _tokens(request, token, answer.status, problem=answer.problem)
    return await _tokens(request, token, done=f"{accessor} is revoked")
