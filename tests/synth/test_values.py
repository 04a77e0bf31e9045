"""Plausible values (``values=`` of a tool): an argument fits the entity it goes with.

Each check reads the gold calls of a synthesized dataset as a researcher would and
flags the implausible value the old draws made: text typed into a video, a bid far
from the listing's price, an address that is not the person's, a dish the restaurant
does not serve. The checks replay each task's gold on its own initial state, so the
state a call saw is the one it is judged against.
"""

from __future__ import annotations

import datetime as dt
import itertools
import random
from collections.abc import Callable
from decimal import Decimal
from typing import Annotated, Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import prove_gym
from prove_gym.server import Bound, Entity, ToolContext
from prove_gym.synth import SynthConfig, SynthResult, synthesize
from prove_gym.task import GoldStep, Task
from prove_gym.workspace import Workspace

Visit = Callable[[Workspace, GoldStep], str | None]


def flagged(tasks: list[Task], server: str, visits: dict[str, Visit]) -> tuple[int, list[str]]:
    """Replay every task of ``server``: ``visits[tool]`` judges each gold call of ``tool``
    on the state right before it (a reason, or None). Returns (calls judged, findings)."""
    judged, found = 0, []
    for task in tasks:
        if task.server != server:
            continue
        with Workspace(task, prove_gym.get_registry()) as ws:
            for i, turn in enumerate(task.turns):
                for step in turn.steps:
                    visit = visits.get(step.name)
                    if visit is not None and not step.attempt and step.expect_error is None:
                        judged += 1
                        reason = visit(ws, step)
                        if reason is not None:
                            found.append(f"{task.id}: {step.name}{step.arguments}: {reason}")
                    ws.call(step.name, step.arguments, turn=i)
    return judged, found


@pytest.fixture(scope="module")
def tasks() -> list[Task]:
    """A few hundred tasks of the four servers with declared value sources."""
    servers = ("crm", "filesystem", "food_delivery", "marketplace", "travel_booking")
    result: SynthResult = synthesize(SynthConfig(servers=servers, n=400, seed=29, state_seeds=3))
    return result.tasks


# ----------------------------------------------------------------- file contents
BINARY = (".jpg", ".png", ".pdf", ".mp4", ".mp3", ".deb", ".pub")
CODE = {
    ".py": ("import ", "#", " = "),
    ".go": ("//", "import ", "const "),
    ".js": ("//", "const ", "console."),
}


def text_misfits_file(path: str, text: str) -> str | None:
    """Why ``text`` does not belong in the file at ``path`` (None when it does)."""
    ext = Bound({"path": path}).extension("path")
    if ext in BINARY or path.rsplit("/", 1)[-1] in ("HEAD", "id_ed25519"):
        return f"text typed into a {ext or 'binary'} file"
    code = CODE.get(ext)
    if code is not None and not any(mark in text for mark in code):
        return f"{text!r} is no {ext} source line"
    if ext not in CODE and text.startswith(("import ", "//", "const ")):
        return f"source code {text!r} in a {ext or 'plain'} file"
    return None


def _file_text(param: str) -> Visit:
    def visit(ws: Workspace, step: GoldStep) -> str | None:
        return text_misfits_file(str(step.arguments["path"]), str(step.arguments[param]))

    return visit


def test_the_implausible_file_text_check_catches_the_old_draws() -> None:
    assert text_misfits_file("~/Videos/lisbon-20260412.mp4", "import os") is not None
    assert text_misfits_file("~/notes/todo.md", "import os") is not None
    assert text_misfits_file("~/src/app.py", "import os") is None


def _line_text(param: str) -> Visit:
    def visit(ws: Workspace, step: GoldStep) -> str | None:
        path = str(step.arguments["path"])
        ext = Bound({"path": path}).extension("path")
        if ext in (".json", ".log"):
            return f"a line added to {path}, which is one document or a program's log"
        if (
            step.name == "insert_lines"
            and ext in CODE
            and not str(step.arguments[param]).startswith(("#", "//"))
        ):
            return f"code put at line {step.arguments['line_number']} of {path}, not a comment"
        return text_misfits_file(path, str(step.arguments[param]))

    return visit


def _new_file_text(ws: Workspace, step: GoldStep) -> str | None:
    path = str(step.arguments["path"])
    if any(f"/{media}/" in path for media in ("Pictures", "Music", "Videos")):
        paths = {r["path"] for r in ws.session("filesystem").list_entities("path")}
        if not any(p.endswith(path.lstrip("~")) for p in paths):
            return f"a new note among the media: {path}"
    return text_misfits_file(path, str(step.arguments["content"]))


def test_text_written_to_a_file_fits_its_type(tasks) -> None:
    judged, found = flagged(
        tasks,
        "filesystem",
        {
            "write_file": _new_file_text,
            "append_file": _line_text("content"),
            "insert_lines": _line_text("text"),
        },
    )
    assert judged >= 5, "too few file writes to judge"
    assert found == []


def test_no_line_is_added_to_a_json_document_and_a_note_is_filed_where_notes_go() -> None:
    from prove_plugins.filesystem.tools.editing import _new_file, line_for

    assert line_for("~/.config/Code/settings.json") == ()
    assert line_for("~/notes/todo.md") != ()
    srv = prove_gym.get_registry().get_server("filesystem")
    with srv.session(0, srv.default_size) as session:
        ctx = session.context()
        homes = {_new_file(ctx, random.Random(seed)).split("/")[1] for seed in range(60)}
    assert homes and not homes & {"Pictures", "Music", "Videos"}, homes


@pytest.mark.parametrize(
    ("path", "sortable", "separator"),
    [
        ("~/budget.csv", True, ","),
        ("/etc/passwd", True, ":"),
        ("~/notes.txt", True, None),
        ("~/.config/Code/settings.json", False, None),
        ("~/Projects/api/main.py", False, None),
        ("~/.gitignore", True, None),
    ],
)
def test_sort_is_asked_of_files_of_records_with_their_own_separator(
    path: str, sortable: bool, separator: str | None
) -> None:
    from prove_plugins.filesystem.tools.fitting import separator_for_file, sortable_file

    bound = Bound({"path": path})
    assert (sortable_file(None, random.Random(0), bound) == path) is sortable  # type: ignore[arg-type]
    folder = Bound({"path": path}, records={"path": {"type": "directory"}})
    assert sortable_file(None, random.Random(0), folder) is None  # type: ignore[arg-type]
    assert separator_for_file(None, random.Random(0), bound) == separator  # type: ignore[arg-type]


@given(st.sampled_from([".mp4", ".jpg", ".py", ".md", ".txt", ".log", ".xyz", ""]), st.integers())
def test_the_file_text_source_gives_binary_and_unknown_types_nothing(ext: str, seed: int) -> None:
    from prove_plugins.filesystem.tools.editing import text_for

    texts = text_for(f"~/x/file{ext}")
    if ext in (".mp4", ".jpg", ".xyz", ".log", ""):
        assert texts == ()
    else:
        text = random.Random(seed).choice(texts)
        assert text_misfits_file(f"~/x/file{ext}", text) is None


# ----------------------------------------------------------------- bids and offers
def _listing(ws: Workspace, step: GoldStep) -> dict[str, Any]:
    result = ws.session("marketplace").call(
        "get_listing", {"listing_id": step.arguments["listing_id"]}
    )
    assert result.ok, result
    return dict(result.content)


def bid_misfits(listing: dict[str, Any], amount: Any) -> str | None:
    """Why a bid is not one a buyer would place on ``listing`` (None when it is): below the
    minimum bid, or more than five increments above it."""
    low, step = Decimal(str(listing["minimum_bid"])), Decimal(str(listing["min_increment"]))
    bid = Decimal(str(amount))
    if not low <= bid <= low + 5 * step:
        return f"bid {bid} on a listing whose minimum bid is {low} (increment {step})"
    return None


def offer_misfits(listing: dict[str, Any], amount: Any) -> str | None:
    """Why an offer is not one a buyer would make: outside half to all of the price."""
    price, offer = Decimal(str(listing["price"])), Decimal(str(amount))
    if not price / 2 <= offer < price:
        return f"offer {offer} on a listing priced {price}"
    return None


def test_the_bid_check_catches_a_bid_far_from_the_price() -> None:
    book = {"minimum_bid": "36.00", "min_increment": "1.00", "price": "36.00"}
    assert bid_misfits(book, "184.20") is not None and bid_misfits(book, "37.00") is None
    assert offer_misfits(book, "12.00") is not None and offer_misfits(book, "30.00") is None


def test_bids_and_offers_are_near_the_listing_price(tasks) -> None:
    judged, found = flagged(
        tasks,
        "marketplace",
        {
            "place_bid": lambda ws, s: bid_misfits(_listing(ws, s), s.arguments["amount"]),
            "make_offer": lambda ws, s: offer_misfits(_listing(ws, s), s.arguments["offer_amount"]),
        },
    )
    assert judged >= 5, "too few bids and offers to judge"
    assert found == []


# ----------------------------------------------------------------- names and e-mails
def address_misfits(first: str, last: str, email: str, company: str | None = None) -> str | None:
    """Why ``email`` is not the address of ``first last`` (at ``company``), or None."""
    local, _, domain = email.casefold().partition("@")
    parts = ["".join(ch for ch in n.casefold() if ch.isalnum()) for n in (first, last)]
    if local.rstrip("0123456789") != ".".join(parts):
        return f"{first} {last} writes from {email}"
    if company is not None:
        letters = "".join(ch for ch in company.casefold() if ch.isalnum())
        if domain.split(".")[0] != letters:
            return f"{first} {last} of {company} writes from {email}"
    return None


def test_the_address_check_catches_a_name_that_is_not_the_address() -> None:
    assert address_misfits("Maria", "Becker", "tom.becker@gmail.com") is not None
    assert address_misfits("Priya", "Raman", "priya.raman@northpeak.io", "Lumen Analytics")
    assert (
        address_misfits("Priya", "Raman", "priya.raman2@lumenanalytics.com", "Lumen Analytics")
        is None
    )


def _account_name(ws: Workspace, account_id: str) -> str:
    result = ws.session("crm").call("get_account", {"account_id": account_id})
    assert result.ok, result
    return str(result.content["name"])


def _person(company: Callable[[Workspace, GoldStep], str | None]) -> Visit:
    def visit(ws: Workspace, step: GoldStep) -> str | None:
        a = step.arguments
        return address_misfits(a["first_name"], a["last_name"], a["email"], company(ws, step))

    return visit


def test_a_new_person_writes_from_their_own_address(tasks) -> None:
    judged, found = flagged(
        tasks,
        "crm",
        {
            "create_contact": _person(lambda ws, s: _account_name(ws, s.arguments["account_id"])),
            "create_lead": _person(lambda ws, s: s.arguments["company"]),
        },
    )
    more, found_too = flagged(
        tasks, "travel_booking", {"create_traveller": _person(lambda ws, s: None)}
    )
    assert judged + more >= 5, "too few new people to judge"
    assert found + found_too == []


# ----------------------------------------------------------------- dishes
def test_a_menu_search_asks_for_what_the_restaurant_serves(tasks) -> None:
    def visit(ws: Workspace, step: GoldStep) -> str | None:
        search = step.arguments.get("search")
        if search is None:
            return None
        result = ws.session("food_delivery").call("get_menu", dict(step.arguments))
        if not result.ok or not result.content["total"]:
            return f"{search!r} is on no dish of {step.arguments['restaurant_id']}"
        return None

    judged, found = flagged(tasks, "food_delivery", {"get_menu": visit})
    assert judged >= 3, "too few menu reads to judge"
    assert found == []


# ----------------------------------------------------------------- the author API
def test_a_value_source_sees_the_call_drawn_so_far_and_none_fails_the_draw() -> None:
    from prove_gym.synth.chains import PlannedStep
    from prove_gym.synth.grounding import Grounder, entity_index

    server = prove_gym.get_registry().get_server("marketplace")
    session = server.session(0, server.default_size)
    index = entity_index(session)
    spec = server.tools["place_bid"]
    listings = {r["listing_id"]: r for r in session.list_entities("listing")}
    auction = next(
        i for i, r in listings.items() if r["format"] == "auction" and r["status"] == "active"
    )
    ended = next(i for i, r in listings.items() if r["status"] == "awaiting_close")
    fixed = next(i for i, r in listings.items() if r["format"] != "auction")
    grounder = Grounder(session, index, random.Random(3))
    drawn = grounder.ground(PlannedStep(spec), [], {}, hints={"listing_id": auction})
    assert drawn.unresolved is None and drawn.sources["amount"] == "value"
    detail = session.call("get_listing", {"listing_id": auction}).content
    assert bid_misfits(detail, drawn.args["amount"]) is None
    # a fixed-price listing, or an auction past its close, takes no bid: the source says
    # so and the draw fails
    for listing in (fixed, ended):
        drawn = grounder.ground(PlannedStep(spec), [], {}, hints={"listing_id": listing})
        assert drawn.unresolved == "amount"


def test_values_are_declared_for_known_parameters_as_callables_and_alone() -> None:
    from prove_gym.server.tool import build_tool_spec

    def bid(ctx: ToolContext, listing_id: str, amount: float) -> dict:
        """Bid.

        Args:
            listing_id: The listing.
            amount: The bid.
        """
        return {}

    def near(ctx, rng, bound):
        return bound.args.get("listing_id")

    assert build_tool_spec(bid, values={"amount": near}).values == {"amount": near}
    with pytest.raises(TypeError, match="unknown arguments"):
        build_tool_spec(bid, values={"price": near})
    with pytest.raises(TypeError, match="not a callable"):
        build_tool_spec(bid, values={"amount": [1, 2]})  # type: ignore[dict-item]

    def bid_on(ctx: ToolContext, listing_id: Annotated[str, Entity("listing")]) -> dict:
        """Bid.

        Args:
            listing_id: The listing.
        """
        return {}

    # an identifier's source checks the id drawn from the state (keeps it, swaps it, or None)
    assert build_tool_spec(bid_on, values={"listing_id": near}).values == {"listing_id": near}
    with pytest.raises(TypeError, match="both examples= and values="):
        build_tool_spec(bid, examples={"amount": [1]}, values={"amount": near})


# ----------------------------------------------------------------- things that fit their entity
def test_a_new_listing_is_a_thing_of_its_category(tasks) -> None:
    from prove_plugins.marketplace.tools import NEW_TITLES

    def visit(ws: Workspace, step: GoldStep) -> str | None:
        title, category = step.arguments["title"], step.arguments["category"]
        return None if title in NEW_TITLES[category] else f"{title!r} listed in {category}"

    judged, found = flagged(tasks, "marketplace", {"create_listing": visit})
    assert judged >= 3, "too few new listings to judge"
    assert found == []


TEXT_TOOLS = ("grep", "read_lines", "delete_lines", "replace_in_file", "head", "tail", "sort")


def test_text_tools_ask_text_files_and_a_rename_keeps_the_kind(tasks) -> None:
    """grep, read_lines, delete_lines, replace_in_file (and head, tail, sort when they name
    lines or a column) are asked about text files only, at a line the file has; a folder
    is renamed to a folder's name and a file keeps its extension."""

    def on_text(step: GoldStep) -> str | None:
        named = step.name not in ("head", "tail", "sort") or any(
            k in step.arguments for k in ("lines", "field", "separator")
        )
        ext = Bound({"path": step.arguments["path"]}).extension("path")
        return f"a {ext} file is no text" if named and ext in BINARY else None

    def lines(ws: Workspace, step: GoldStep) -> str | None:
        total = ws.session("filesystem").call("wc", {"path": step.arguments["path"]})
        if total.ok and step.arguments["start"] > total.content["lines"]:
            return f"line {step.arguments['start']} of a {total.content['lines']}-line file"
        return on_text(step)

    def rename(ws: Workspace, step: GoldStep) -> str | None:
        paths = {r["path"]: r for r in ws.session("filesystem").list_entities("path")}
        kind = paths[step.arguments["path"]]["type"]
        new = Bound({"path": step.arguments["new_name"]}).extension("path")
        old = Bound({"path": step.arguments["path"]}).extension("path")
        if (kind == "directory" and new) or (kind == "file" and new != old):
            return f"a {kind} renamed to {step.arguments['new_name']!r}"
        if step.arguments["path"].rsplit("/", 1)[-1].startswith("."):
            return "a hidden entry renamed"
        return None

    visits: dict[str, Visit] = {name: lambda ws, s: on_text(s) for name in TEXT_TOOLS}
    visits.update(read_lines=lines, delete_lines=lines, rename=rename)
    judged, found = flagged(tasks, "filesystem", visits)
    assert judged >= 10, "too few text reads and renames to judge"
    assert found == []


def _draw(server: str, tool: str, seed: int, **hints: Any) -> Any:
    """One grounding of ``tool`` at state seed 0, with ``hints`` and every optional
    parameter wanted."""
    from prove_gym.synth.chains import PlannedStep
    from prove_gym.synth.grounding import Grounder, entity_index

    srv = prove_gym.get_registry().get_server(server)
    session = srv.session(0, srv.default_size)
    spec = srv.tools[tool]
    grounder = Grounder(session, entity_index(session), random.Random(seed))
    extra = [p.name for p in spec.params if not p.required]
    return session, grounder.ground(PlannedStep(spec), [], {}, extra=extra, hints=hints)


@pytest.mark.parametrize("seed", range(5))
def test_an_invoiced_customer_is_named_as_they_are(seed: int) -> None:
    """The customer name of an invoice is the name of the customer whose e-mail it goes to
    (not "Aisha Khan" for mary.parsons@gmail.com)."""
    session, drawn = _draw("payments", "create_invoice", seed)
    assert drawn.unresolved is None
    (customer,) = [
        r
        for r in session.list_entities("customer")
        if r["customer_email"] == drawn.args["customer_email"]
        and r["merchant_id"] == drawn.args["merchant_id"]
    ]
    assert drawn.args["customer_name"] == customer["name"]


@pytest.mark.parametrize("seed", range(5))
def test_a_new_list_is_named_for_what_it_holds_not_for_its_owner(seed: int) -> None:
    from prove_plugins.maps.tools import NEW_LIST_NAMES

    session, drawn = _draw("maps", "create_list", seed)
    assert drawn.unresolved is None and drawn.args["name"] in NEW_LIST_NAMES
    assert drawn.args["name"] not in {r.get("name") for r in session.list_entities("user")}


def test_income_is_never_filed_under_a_bill() -> None:
    """Income into a Bills or Everyday envelope fits nothing (the draw fails and is made
    again with another category); a paycheck is paycheck-sized."""
    from prove_plugins.budget.tools import OTHER_INCOME, PAY

    srv = prove_gym.get_registry().get_server("budget")
    cats = srv.session(0, srv.default_size).list_entities("category")
    bill = next(c["category_id"] for c in cats if c["group"] == "Bills")
    goal = next(c["category_id"] for c in cats if c["group"] == "Savings goals")
    _, drawn = _draw("budget", "add_income", 1, category_id=bill, payer="Acme Corp payroll")
    assert drawn.unresolved == "amount"
    _, drawn = _draw("budget", "add_income", 1, category_id=goal, payer="Acme Corp payroll")
    assert drawn.unresolved is None
    assert Decimal(str(drawn.args["amount"])) in [Decimal(str(v)) for v in PAY]
    _, drawn = _draw("budget", "add_income", 2, category_id=goal, payer="Tax refund")
    assert Decimal(str(drawn.args["amount"])) in [Decimal(str(v)) for v in OTHER_INCOME]


@pytest.mark.parametrize("seed", range(4))
def test_an_expense_is_paid_to_a_payee_of_its_category(seed: int) -> None:
    """budget-2038: "I spent 250.00 at Chipotle, put it under cat_024" (Home repairs), memo
    "Birthday dinner". The payee and memo fit the category; a Rent expense goes to the
    landlord of its bill; none is filed under Ready to Assign (the draw fails)."""
    from prove_plugins.budget.tools import CATEGORY_PAYEES

    srv = prove_gym.get_registry().get_server("budget")
    cats = srv.session(0, srv.default_size).list_entities("category")
    by_name = {c["name"]: c["category_id"] for c in cats}
    for name in ("Dining out", "Groceries", "Car insurance", "Home repairs", "Rent"):
        if name not in by_name:
            continue
        _, drawn = _draw("budget", "add_expense", seed, category_id=by_name[name])
        assert drawn.unresolved is None, name
        if name == "Rent":
            assert str(drawn.args["payee"]).endswith("Property Management"), drawn.args
        else:
            assert drawn.args["payee"] in CATEGORY_PAYEES[name], (name, drawn.args)
        if name in ("Car insurance", "Home repairs"):
            assert "memo" not in drawn.args  # "Birthday dinner" under a bill: never
    _, drawn = _draw("budget", "add_expense", seed, category_id=by_name["Ready to Assign"])
    assert drawn.unresolved == "payee"


# ----------------------------------------------------------------- prove_gym.synth/14
@pytest.mark.parametrize("seed", range(6))
def test_a_comment_answers_the_post_it_is_on(seed: int) -> None:
    """A comment fits the post's text: a suggestion under a post that asks for one,
    congratulations under news; never "Love this, congrats!" under a question."""
    from prove_plugins.social_media.tools import COMMENTS_FOR, OTHER_COMMENTS

    session, drawn = _draw("social_media", "comment_on_post", seed)
    assert drawn.unresolved is None
    post = session.call("get_post", {"post_id": drawn.args["post_id"]})
    text = f" {post.content['text'].lower()}"
    fits = next((c for words, c in COMMENTS_FOR if any(w in text for w in words)), OTHER_COMMENTS)
    assert drawn.args["text"] in fits, (text, drawn.args["text"])
    if "?" in text:
        assert "congrats" not in drawn.args["text"].lower()


@pytest.mark.parametrize("seed", range(6))
def test_a_scene_is_named_for_where_its_devices_are(seed: int) -> None:
    session, drawn = _draw("iot_devices", "create_scene", seed)
    assert drawn.unresolved is None
    rooms = {
        session.call("get_device", {"device_id": d}).content["room"]
        for d in drawn.args["device_ids"]
    }
    place = rooms.pop() if len(rooms) == 1 else "Home"
    assert drawn.args["name"].startswith(f"{place} "), (rooms, drawn.args)


@pytest.mark.parametrize("seed", range(6))
def test_an_automation_is_named_for_the_sensor_event_that_starts_it(seed: int) -> None:
    session, drawn = _draw("iot_devices", "create_automation", seed)
    assert drawn.unresolved is None
    sensor = session.call("get_device", {"device_id": drawn.args["sensor_id"]}).content
    name = drawn.args["name"]
    assert name.startswith(sensor["name"].removesuffix(" Sensor"))
    assert name.endswith(drawn.args["trigger"].replace("_", " ").split(" ")[-1])
    assert "Quiet hall" not in name


@pytest.mark.parametrize("seed", range(4))
def test_a_meeting_started_early_is_one_of_the_next_day_and_a_half(seed: int) -> None:
    from prove_plugins.video_meeting.tools import SOON_HOURS

    session, drawn = _draw("video_meeting", "start_meeting", seed)
    assert drawn.unresolved is None
    meeting = session.call("get_meeting", {"meeting_id": drawn.args["meeting_id"]}).content
    start = dt.datetime.fromisoformat(meeting["scheduled_start"])
    now = session.context().now
    assert meeting["status"] == "scheduled"
    assert now <= start < now + dt.timedelta(hours=SOON_HOURS), (now, start)


def test_a_file_is_moved_or_copied_where_its_kind_belongs(tasks) -> None:
    """mv and cp put a photo in Pictures, a note in Documents, anything in a backup, or
    keep it in its own folder's tree; a dotfile goes to a backup at most."""
    from prove_plugins.filesystem.tools.fitting import fitting_destination

    def visit(ws: Workspace, step: GoldStep) -> str | None:
        fit = fitting_destination(None, random.Random(0), Bound(step.arguments))
        return None if fit == step.arguments["destination"] else "does not belong there"

    judged, found = flagged(tasks, "filesystem", {"mv": visit, "cp": visit})
    assert judged >= 3, "too few moves and copies to judge"
    assert found == []


# ------------------------------------------------------- what a person responds to
def test_nobody_reacts_or_replies_to_their_own_message_or_asks_replies_of_a_new_one() -> None:
    from prove_plugins.team_chat.tools import (
        MESSAGE,
        message_of_someone_else,
        message_with_replies,
    )

    srv = prove_gym.get_registry().get_server("team_chat")
    with srv.session(0, srv.default_size) as session:
        rows = session.list_entities("message")
        mine = [str(r["message_id"]) for r in rows if r["mine"]]
        others = [str(r["message_id"]) for r in rows if not r["mine"] and not r["is_reply"]]
        assert mine and others, "the state has messages of mine and of others"
        ctx, rng = session.context(), random.Random(0)
        assert message_of_someone_else(ctx, rng, Bound({"message_id": mine[0]})) is None
        assert message_of_someone_else(ctx, rng, Bound({"message_id": others[0]})) == others[0]
        roots = [m for m in others if ctx.sql.one(MESSAGE, id=m).reply_count > 0]
        quiet = [m for m in others if ctx.sql.one(MESSAGE, id=m).reply_count == 0]
        assert roots and quiet, "the state has threads with and without replies"
        assert message_with_replies(ctx, rng, Bound({"message_id": roots[0]})) == roots[0]
        assert message_with_replies(ctx, rng, Bound({"message_id": quiet[0]})) is None
        for root in roots:  # the first of an active channel (an archived one is read-only)
            posted = session.call("reply_in_thread", {"message_id": root, "text": "On it."})
            if posted.ok:
                break
        assert posted.ok, posted
        new = str(posted.content["message_id"])
        # a reply just posted is mine and new: no +1 on it, no "what did people reply to it"
        ctx = session.context()
        assert message_of_someone_else(ctx, rng, Bound({"message_id": new})) is None
        assert message_with_replies(ctx, rng, Bound({"message_id": new})) is None


def test_nobody_likes_their_own_post_or_answers_a_newsletter() -> None:
    from prove_plugins.email.tools import AUTOMATED_SENDERS, message_from_a_person
    from prove_plugins.social_media.tools import POST, post_of_someone_else

    social = prove_gym.get_registry().get_server("social_media")
    with social.session(0, social.default_size) as session:
        ctx, rng = session.context(), random.Random(0)
        posts = [str(r["post_id"]) for r in session.list_entities("post")]
        authors = {p: ctx.sql.one(POST, id=p).author_id for p in posts}
        kept = {p for p in posts if post_of_someone_else(ctx, rng, Bound({"post_id": p}))}
        assert kept and kept != set(posts), "some posts are mine, some are others'"
        assert len({authors[p] for p in set(posts) - kept}) == 1, "only mine are left out"
    email = prove_gym.get_registry().get_server("email")
    with email.session(0, email.default_size) as session:
        ctx = session.context()
        rows = session.list_entities("message")
        kept = {
            str(r["message_id"]): message_from_a_person(
                ctx, rng, Bound({"message_id": r["message_id"]})
            )
            for r in rows
        }
        people = [
            r for r in rows if r["direction"] == "received" and r["sender"] not in AUTOMATED_SENDERS
        ]
        automated = [r for r in rows if r["sender"] in AUTOMATED_SENDERS]
        assert people and automated, "the state has mail from people and from newsletters"
        assert all(kept[str(r["message_id"])] is None for r in automated)
        assert any(kept[str(r["message_id"])] is not None for r in people)
        assert all(kept[str(r["message_id"])] is None for r in rows if r["direction"] == "sent")


def test_a_scene_saved_from_the_home_as_it_is_is_not_run_at_once() -> None:
    from prove_plugins.iot_devices.tools import scene_that_changes_something

    srv = prove_gym.get_registry().get_server("iot_devices")
    with srv.session(0, srv.default_size) as session:
        rng = random.Random(0)
        scenes = [str(r["scene_id"]) for r in session.list_entities("scene")]
        fits = [
            s
            for s in scenes
            if scene_that_changes_something(session.context(), rng, Bound({"scene_id": s}))
        ]
        assert fits, "a sampled scene changes something when run"
        shown = session.call("get_scene", {"scene_id": fits[0]})
        assert shown.ok, shown
        devices = sorted({a["device_id"] for a in shown.content["actions"]})
        made = session.call(
            "create_scene",
            {"home_id": shown.content["home_id"], "name": "As it is now", "device_ids": devices},
        )
        assert made.ok, made
        new = str(made.content["scene_id"])
        assert (
            scene_that_changes_something(session.context(), rng, Bound({"scene_id": new})) is None
        )
        ran = session.call("activate_scene", {"scene_id": fits[0]})
        if ran.ok:  # the old scene moved the devices: the new one would now change them back
            assert ran.content["changed_devices"]
            assert (
                scene_that_changes_something(session.context(), rng, Bound({"scene_id": new}))
                == new
            )


def test_no_gold_read_looks_into_something_just_made_and_finds_nothing() -> None:
    """maps-2030-00001: "Create a list called Sunday errands", then "Show me the places in
    the new list" (none: the user knows it); filesystem-2030-00044: mkdir, then find files
    in it. A read of an entity the conversation made that lists nothing is dropped."""
    from prove_gym.synth.generate import _lists_nothing

    result = synthesize(SynthConfig(servers=("maps", "filesystem"), n=160, seed=5))
    assert sum(n for k, n in result.drops.items() if k.startswith("empty_read_of_new:")) > 0
    registry = prove_gym.get_registry()
    found = []
    for task in result.tasks:
        srv = registry.get_server(task.server)
        with srv.session(task.seed, task.size) as initial:
            known = {
                kind: {str(v) for r in initial.list_entities(kind) for v in r.values()}
                for kind in {e.name for t in srv.tools.values() for e in t.entity_params.values()}
            }
        with Workspace(task, registry) as ws:
            for i, turn in enumerate(task.turns):
                for step in turn.steps:
                    out = ws.call(step.name, step.arguments, turn=i).result
                    spec = srv.tools[step.name]
                    if spec.writes or not out.ok or not _lists_nothing(out.content):
                        continue
                    for name, entity in spec.entity_params.items():
                        value = step.arguments.get(name)
                        if value is not None and str(value) not in known[entity.name]:
                            found.append(f"{task.id}: {step.name}({name}={value}) finds nothing")
    assert found == []


def test_no_message_is_read_after_the_gold_replied_to_it() -> None:
    """email-2030-00015: "reply to all on msg_00222: ... After that, what does email
    msg_00222 say?"; social_media-2036-00001: a comment on post_00192, then "What did
    people comment on post_00192?". A person reads before answering; such a gold is
    dropped."""
    # seed 5 until synth/16 moved its draws (0 such drops there since)
    result = synthesize(SynthConfig(servers=("email", "team_chat", "social_media"), n=240, seed=6))
    assert result.drops["read_after_reply"] > 0
    registry = prove_gym.get_registry()
    found = []
    for task in result.tasks:
        tools = registry.get_server(task.server).tools
        answered: set[tuple[str, str]] = set()
        for step in task.steps:
            spec = tools[step.name]
            ids = {
                (e.name, str(step.arguments[n]))
                for n, e in spec.entity_params.items()
                if isinstance(step.arguments.get(n), str)
            }
            if not spec.writes and ids & answered:
                found.append(f"{task.id}: {step.name}{step.arguments} after answering it")
            if spec.writes and step.name.split("_")[0] in ("reply", "forward", "comment"):
                answered |= ids
    assert found == []


def test_a_turn_says_who_the_user_is_once() -> None:
    """marketplace-2032-00014: "Cancel my listing lst_0077; I'm usr_036. ... I'm usr_036;
    place a bid of 67.50 on listing lst_0009." A later request of the turn drops the
    introduction an earlier one made."""
    result = synthesize(SynthConfig(servers=("marketplace",), n=150, seed=7))
    twice = []
    for task in result.tasks:
        for turn in task.turns:
            words = turn.user.replace(";", " ").replace(":", " ").replace(".", " ").split()
            said = [words[k + 1] for k in range(len(words) - 1) if words[k] == "I'm"]
            if len(said) != len(set(said)):
                twice.append(f"{task.id}: {turn.user}")
    assert twice == []


def test_only_an_open_limit_order_is_changed_and_by_a_cent() -> None:
    """trading (synth/15, seeds 2030 and 2034): "buy 10 AMZN at market. Then change the
    new order to 3 shares at 311.76": the market order filled at 221.55, so the change can
    only fail, at a price far from the market. Only a portfolio's open limit order is
    changed, to a price a cent further from the market and a smaller quantity."""
    from prove_plugins.trading.tools import new_limit_for, new_quantity_for, open_order

    srv = prove_gym.get_registry().get_server("trading")
    with srv.session(0, srv.default_size) as session:
        ctx, rng = session.context(), random.Random(0)
        orders = [str(r["order_id"]) for r in session.list_entities("order")]
        shown = {o: session.call("get_order", {"order_id": o}).content for o in orders}
        working = [o for o in orders if shown[o]["status"] in ("open", "partially_filled")
                   and shown[o]["limit_price"] is not None]  # fmt: skip
        assert working, "the state has open limit orders"
        o = working[0]
        placed = session.call(
            "place_market_order",
            {"portfolio_id": shown[o]["portfolio_id"], "symbol": shown[o]["symbol"],
             "side": "buy", "quantity": 1},
        )  # fmt: skip
        assert placed.ok and placed.content["status"] == "filled", placed
        ctx = session.context()
        assert open_order(ctx, rng, Bound({"order_id": placed.content["order_id"]})) is None
        assert open_order(ctx, rng, Bound({"order_id": o})) == o
        price = new_limit_for(ctx, rng, Bound({"order_id": o}))
        assert price is not None
        assert abs(price - Decimal(shown[o]["limit_price"])) <= Decimal("0.01")
        quantity = new_quantity_for(ctx, rng, Bound({"order_id": o}))
        assert (
            quantity is not None and shown[o]["filled_quantity"] < quantity <= shown[o]["quantity"]
        )


def test_a_text_tool_is_never_pointed_at_a_folder() -> None:
    """filesystem's shipped tasks (synth/15): "count the words in ~/Projects/todo-cli/docs",
    "show me that file" for a folder just moved, uniq of ~/Pictures/2023: each could only
    fail. A folder of the live state (one the conversation made too) takes no text tool;
    grep searches one only recursively."""
    from prove_plugins.filesystem.tools.fitting import (
        a_file,
        file_beside_first,
        text_choice,
        text_file,
    )

    srv = prove_gym.get_registry().get_server("filesystem")
    with srv.session(0, srv.default_size) as session:
        made = session.call("mkdir", {"path": "~/Documents/new-folder"})
        assert made.ok, made
        folder = str(made.content["path"])
        ctx, rng = session.context(), random.Random(0)
        assert text_file(ctx, rng, Bound({"path": folder})) is None
        pattern = text_choice(["TODO"])
        assert pattern(ctx, rng, Bound({"path": folder})) is None
        assert pattern(ctx, rng, Bound({"path": folder, "recursive": True})) == "TODO"
        files = [r["path"] for r in session.list_entities("path") if r.get("type") == "file"]
        text = next(p for p in files if p.endswith((".txt", ".md")))
        assert text_file(ctx, rng, Bound({"path": text})) == text
        assert a_file(ctx, rng, Bound({"path": folder})) is None  # no checksum of a folder
        assert a_file(ctx, rng, Bound({"path": text})) == text
        other = file_beside_first(ctx, rng, Bound({"path1": text, "path2": folder}))
        assert other != folder  # no diff against a folder (a project's .git)


def test_a_room_is_booked_for_the_dates_its_availability_was_checked_for(tasks) -> None:
    """travel_booking-2034-00030: "Which rooms does htl_009 have free from Nov 20 to Nov
    23?", then "Book room rm_0063 from Nov 18 to Nov 22": a call made on what a read found
    keeps the read's terms (``Grounder._terms``)."""
    checked = 0
    for task in tasks:
        steps = task.steps
        for k, step in enumerate(steps):
            if step.name != "book_hotel" or step.id is None:
                continue
            reads = [
                s
                for s in steps[:k]
                if s.name == "get_hotel_availability" and s.id in step.depends_on
            ]
            for read in reads:
                checked += 1
                for name in ("check_in", "check_out"):
                    assert step.arguments[name] == read.arguments[name], (task.id, name)
    assert checked > 0


@pytest.mark.parametrize("seed", range(3))
def test_no_weekly_bill_is_the_size_of_rent(seed: int) -> None:
    """budget-2034: "a weekly Chen Property Management bill of 2300.00". A bill's
    frequency fits its amount (``values={"frequency": ...}``)."""
    result = synthesize(SynthConfig(servers=("budget",), n=120, seed=seed))
    made = [
        s
        for t in result.tasks
        for s in t.steps
        if s.name == "create_recurring_expense" and s.expect_error is None
    ]
    assert made
    for s in made:
        if s.arguments["frequency"] == "weekly":
            assert Decimal(str(s.arguments["amount"])) <= 150, s.arguments


@pytest.mark.parametrize("seed", range(4))
def test_a_bill_costs_and_comes_as_bills_of_its_category_do(seed: int) -> None:
    """budget-2040-00032: "a monthly recurring expense of 174.76 for Mcguire Property
    Management in cat_001" (Rent). A bill's amount, payee and frequency fit its category:
    rent is a month's rent, paid monthly to a landlord; a subscription costs what a
    service costs, monthly."""
    from prove_plugins.budget.tools import RENT, STREAMING, _bill_amount

    srv = prove_gym.get_registry().get_server("budget")
    cats = srv.session(0, srv.default_size).list_entities("category")
    by_name = {c["name"]: c["category_id"] for c in cats}
    # the budget pays its rent already: no second rent bill (the draw fails), but the
    # amount a rent bill would take is a month's rent
    _, rent = _draw("budget", "create_recurring_expense", seed, category_id=by_name["Rent"])
    assert rent.unresolved == "payee", rent
    record = {"category_id": {"name": "Rent", "group": "Bills"}}
    amount = _bill_amount(None, random.Random(seed), Bound({}, record))  # type: ignore[arg-type]
    assert RENT[0] <= Decimal(str(amount)) <= RENT[1], amount
    _, sub = _draw("budget", "create_recurring_expense", seed, category_id=by_name["Subscriptions"])
    assert (sub.args["payee"], str(sub.args["amount"])) in STREAMING, sub.args
    assert sub.args["frequency"] == "monthly"


@pytest.mark.parametrize("seed", range(2))
def test_a_new_issue_is_titled_for_its_type_and_labels(seed: int) -> None:
    """issue_tracker-2040-00006: "Create an issue 'Checkout button does nothing on Safari'
    ... Label it with flaky-test." A new issue's title fits its type and each label."""
    from prove_plugins.issue_tracker.tools import NEW_ISSUES

    result = synthesize(SynthConfig(servers=("issue_tracker",), n=120, seed=seed))
    made = [s for t in result.tasks for s in t.steps if s.name == "create_issue"]
    assert made
    for s in made:
        types, labels = NEW_ISSUES[s.arguments["title"]]
        assert set(s.arguments.get("labels") or []) <= labels, s.arguments
        if "type" in s.arguments:
            assert s.arguments["type"] in types, s.arguments


def test_nothing_is_made_to_be_undone_or_received_at_once() -> None:
    """seed-2042 read: food_delivery "cus_0010 wants itm_0024 ... Clear cus_0010's cart,
    start over"; travel_booking "Book room rm_0167 ... on itn_0029. Cancel the same
    itinerary"; retail_chain "restock prd_0026 at str_008 ... mark the new restock order as
    received". Clearing a cart and cancelling an itinerary undo what the conversation put
    there (``inverse_of``); a transfer or restock order the conversation made has not
    arrived, so it is not received."""
    result = synthesize(
        SynthConfig(servers=("food_delivery", "travel_booking", "retail_chain"), n=240, seed=8)
    )
    received = 0
    for task in result.tasks:
        steps = {s.id: s for s in task.steps}
        for k, step in enumerate(task.steps):
            before = task.steps[:k]
            if step.name == "clear_cart":
                assert not any(
                    b.name == "add_to_cart"
                    and b.arguments["customer_id"] == step.arguments["customer_id"]
                    for b in before
                ), task.id
            if step.name == "cancel_itinerary":
                assert not any(
                    b.name in ("book_flight", "book_hotel")
                    and b.arguments.get("itinerary_id") == step.arguments["itinerary_id"]
                    for b in before
                ), task.id
            if step.name in ("receive_transfer", "receive_restock_order"):
                received += 1
                made = {steps[d].name for d in step.depends_on if d in steps}
                assert not made & {"create_transfer", "create_restock_order"}, task.id
    assert received > 10


def test_words_fit_the_values_they_go_with() -> None:
    """seed-2044 read: "give ord_00586 5 stars for the food ... comment: Missing the extra
    sauce."; "what flat dishes does that restaurant have?" (a flat white); "Plan a sprint
    'Q3 kickoff sprint' ... from December 1, 2026"; "start following usr_040. And then block
    usr_040". A comment says what the stars say, a menu search is for a dish, a kickoff is
    named for its quarter, and nobody follows someone only to block them."""
    import datetime as dt

    from prove_plugins.food_delivery.tools.orders import DELIVERY_COMPLAINTS, FOOD_COMPLAINTS

    result = synthesize(
        SynthConfig(servers=("food_delivery", "issue_tracker", "social_media"), n=300, seed=3)
    )
    seen = {"rate_order": 0, "get_menu": 0, "create_sprint": 0}
    for task in result.tasks:
        for k, step in enumerate(task.steps):
            args = step.arguments
            if step.name == "rate_order" and args.get("comment"):
                seen["rate_order"] += 1
                food, delivery = args["food_stars"], args["delivery_stars"]
                if args["comment"] in FOOD_COMPLAINTS:
                    assert food <= 3, args
                elif args["comment"] in DELIVERY_COMPLAINTS:
                    assert delivery <= 3, args
                else:
                    assert min(food, delivery) >= 4, args
            if step.name == "get_menu" and "search" in args:
                seen["get_menu"] += 1
                assert args["search"] not in ("flat", "cappuccino", "cola", "juice"), args
            if step.name == "create_sprint" and "kickoff" in args["name"]:
                seen["create_sprint"] += 1
                month = dt.date.fromisoformat(args["start_date"]).month
                assert args["name"].startswith(f"Q{(month - 1) // 3 + 1} "), args
            if step.name == "block_user":
                assert not any(
                    b.name == "follow_user" and b.arguments["user_id"] == args["user_id"]
                    for b in task.steps[:k]
                ), task.id
    assert seen["rate_order"] and seen["get_menu"], seen


def test_no_gold_read_asks_after_something_just_deleted() -> None:
    """calendar-2034-00013: "delete the first event in those results ... list the dates
    of evt_0488 from 18 June to 20 June" (none: it was just deleted); calendar-2036-00021:
    "When does evt_0128 happen ...?" right after deleting it. A read of an entity a
    ``delete_<kind>`` of the conversation ended is dropped."""
    from prove_gym.synth.lint import DESTROY_VERBS

    result = synthesize(SynthConfig(servers=("calendar", "crm"), n=160, seed=3))
    registry = prove_gym.get_registry()
    found, ended_any = [], 0
    for task in result.tasks:
        tools = registry.get_server(task.server).tools
        ended: set[tuple[str, str]] = set()
        with Workspace(task, registry) as ws:
            for i, turn in enumerate(task.turns):
                for step in turn.steps:
                    out = ws.call(step.name, step.arguments, turn=i).result
                    spec = tools[step.name]
                    ids = {
                        (e.name, str(step.arguments[n]))
                        for n, e in spec.entity_params.items()
                        if isinstance(step.arguments.get(n), str)
                    }
                    verb, *noun = step.name.split("_")
                    if spec.writes and out.ok and verb in DESTROY_VERBS:
                        ended |= {(k, v) for k, v in ids if k.split("_")[-1] in noun}
                        ended_any += 1
                    elif not spec.writes and out.ok and ids & ended:
                        found.append(f"{task.id}: {step.name}{step.arguments}")
    assert ended_any > 0 and found == []


def test_no_write_repeats_a_text_the_conversation_already_wrote() -> None:
    """issue_tracker-2036-00030: an issue created as 'Upgrade PostgreSQL to 16', then
    another renamed to the same title; filesystem-2036-00007: '## Notes' inserted at line
    1, then appended to the same note. A write draws no text an earlier call wrote
    (:data:`~prove_gym.synth.grounding.TEXT_FIELDS`)."""
    from prove_gym.synth.grounding import TEXT_FIELDS

    result = synthesize(SynthConfig(servers=("issue_tracker", "filesystem"), n=160, seed=4))
    registry = prove_gym.get_registry()
    checked, found = 0, []
    for task in result.tasks:
        tools = registry.get_server(task.server).tools
        written: set[str] = set()
        for step in task.steps:
            texts = {
                v for k, v in step.arguments.items() if k in TEXT_FIELDS and isinstance(v, str)
            }
            if tools[step.name].writes and texts:
                checked += 1
                if texts & written:
                    found.append(f"{task.id}: {step.name}{step.arguments}")
            written |= texts
    assert checked > 20 and found == []


def test_a_booking_is_moved_to_another_flight_of_its_route() -> None:
    """travel_booking-2036-00030: "quote changing booking fb_00109 to the same flight" it
    is on (shown as a failed call). A change or its quote, failed ones included, takes
    another flight of the booking's route (``another_flight_of_route``)."""
    result = synthesize(SynthConfig(servers=("travel_booking",), n=250, seed=2036))
    route = "SELECT id, origin, destination FROM flights WHERE id = ?"
    judged, found = 0, []
    for task in result.tasks:
        with Workspace(task, prove_gym.get_registry()) as ws:
            db = ws.session("travel_booking").raw_connection
            for i, turn in enumerate(task.turns):
                for step in turn.steps:
                    if step.name in ("quote_flight_change", "change_flight"):
                        judged += 1
                        (old,) = db.execute(
                            "SELECT flight_id FROM flight_bookings WHERE id = ?",
                            (step.arguments["flight_booking_id"],),
                        ).fetchone()
                        was = db.execute(route, (old,)).fetchone()
                        now = db.execute(route, (step.arguments["new_flight_id"],)).fetchone()
                        if now == was or now[1:] != was[1:]:
                            found.append(f"{task.id}: {step.name}{step.arguments}: {was} -> {now}")
                    ws.call(step.name, step.arguments, turn=i)
    assert judged > 0 and found == []


def test_no_line_is_added_to_a_record() -> None:
    """filesystem-2038-00007: "Remember to renew the passport before June." inserted at
    line 1 of tax-return-2024.txt. Nobody adds notes to a record (``RECORDS``)."""
    from prove_plugins.filesystem.tools.editing import line_for

    assert line_for("~/Documents/Finance/taxes/tax-return-2024.txt") == ()
    assert line_for("~/Documents/Work/lease-2025.txt") == ()
    assert line_for("~/Documents/notes.txt") != ()


def test_every_tool_that_reads_or_edits_lines_takes_its_path_from_a_text_file_source() -> None:
    """filesystem-1-00183 (the reward check's one judged-wrong trajectory at the maximum):
    "Print line 2 of that file" for the folder a `cp` had just copied into, a gold call that
    could only fail. Every tool that reads or edits a file's lines draws its path through
    ``text_file`` (a folder, or a photo, is never one)."""
    from prove_plugins.filesystem.tools.fitting import own_text_file, text_file

    tools = prove_gym.get_registry().get_server("filesystem").tools
    reads = ("cat", "head", "tail", "read_lines", "wc", "uniq")
    edits = ("append_file", "insert_lines", "delete_lines", "replace_in_file")
    assert {name for name in reads if tools[name].values.get("path") is not text_file} == set()
    # an edit takes a text file the user edits by hand (own_text_file calls text_file)
    assert {name for name in edits if tools[name].values.get("path") is not own_text_file} == set()


def test_a_new_mail_says_what_its_subject_is_about() -> None:
    """email-2038-00045: subject "Invoice for February", body "Hi, could we move our call to
    Thursday at 3pm?". A new mail's body is drawn for its subject (``body_for_subject``)."""
    from prove_plugins.email.tools import MESSAGES

    result = synthesize(SynthConfig(servers=("email",), n=150, seed=5))
    drafted = [s for t in result.tasks for s in t.steps if s.name == "create_draft"]
    assert drafted
    for step in drafted:
        bodies = MESSAGES.get(step.arguments.get("subject", ""))
        assert bodies is None or step.arguments["body"] in bodies, step.arguments


@pytest.mark.parametrize("seed", range(4))
def test_a_household_pays_each_bill_to_its_own_provider(seed: int) -> None:
    """seed-2044 read: an expense to Duke Energy in a budget whose electricity bills go to
    PG&E. A one-provider category's expense goes to the provider the budget already pays;
    no second bill is set up where the category has one (the draw fails)."""
    from prove_plugins.budget.tools import PAYEES_OF_CATEGORY

    srv = prove_gym.get_registry().get_server("budget")
    session = srv.session(0, srv.default_size)
    by_name = {c["name"]: c["category_id"] for c in session.list_entities("category")}
    ctx = session.context()
    for name in ("Electricity", "Internet", "Phone"):
        paid = {str(r.payee) for r in ctx.sql.all(PAYEES_OF_CATEGORY, category_id=by_name[name])}
        assert len(paid) == 1, (name, paid)  # the sampled household has one provider
        _, drawn = _draw("budget", "add_expense", seed, category_id=by_name[name])
        assert drawn.unresolved is None and {drawn.args["payee"]} == paid, (name, drawn.args)
    _, bill = _draw("budget", "create_recurring_expense", seed, category_id=by_name["Internet"])
    assert bill.args.get("category_id") != by_name["Internet"] or bill.unresolved == "payee"


def test_files_are_moved_by_a_pattern_of_one_type_that_belongs_there(tasks) -> None:
    """seed-2044 read: "Move all * files from ~/Projects/api/tests to ~/Pictures". A
    move by pattern takes the files of one type, into a folder where that type belongs."""
    from prove_plugins.filesystem.tools.fitting import is_keeping, keeps

    assert not is_keeping("~/Projects/photo-sorter")  # a project, not a "to-sort" folder

    def visit(ws: Workspace, step: GoldStep) -> str | None:
        pattern, destination = str(step.arguments["pattern"]), str(step.arguments["destination"])
        if not pattern.startswith("*.") or "*" in pattern[1:]:
            return f"pattern {pattern!r} is not one type of file"
        if "/." in destination:
            return "into a hidden folder"
        if not keeps(destination, f"file{pattern[1:]}") or "/Projects/" in destination:
            return "does not belong there" if not is_keeping(destination) else None
        return None

    judged, found = flagged(tasks, "filesystem", {"move_matching": visit})
    assert judged >= 2, "too few moves by pattern to judge"
    assert found == []


def test_a_sprint_lasts_one_to_three_weeks(tasks) -> None:
    """seed-2048 read: "Plan a sprint 'Sprint 42' in prj_01 from 18 September 2026 to 19
    September 2026". A new sprint ends one, two or three weeks after it starts."""
    result = synthesize(SynthConfig(servers=("issue_tracker",), n=120, seed=6))
    made = [s for t in result.tasks for s in t.steps if s.name == "create_sprint"]
    assert made
    for s in made:
        start = dt.date.fromisoformat(s.arguments["start_date"])
        end = dt.date.fromisoformat(s.arguments["end_date"])
        assert (end - start).days in (6, 13, 20), s.arguments


def test_nothing_is_labelled_in_spam_nor_dimmed_while_off() -> None:
    """seed-2048 reads: email "put msg_00403 in the spam folder ... label msg_00403 with
    Hiring"; iot "switch light dev_0001 off ... dim the same light to 30%" (which switches it
    back on). A label goes on mail the user keeps; a light is dimmed only while it is on."""
    from prove_plugins.email.tools import Message
    from prove_plugins.iot_devices.tools import DEVICE

    from prove_gym.server.sql import record_by_key

    def kept(ws: Workspace, step: GoldStep) -> str | None:
        sql = ws.sessions["email"].context().sql
        row = sql.first(record_by_key(Message), key=step.arguments["message_id"])
        return f"labelled in {row.folder}" if row.folder in ("spam", "trash") else None

    def lit(ws: Workspace, step: GoldStep) -> str | None:
        row = ws.sessions["iot_devices"].context().sql.first(DEVICE, id=step.arguments["light_id"])
        return None if row.is_on else "dimmed while off"

    result = synthesize(SynthConfig(servers=("email", "iot_devices"), n=240, seed=5))
    judged, found = flagged(result.tasks, "email", {"label_message": kept})
    more, also = flagged(result.tasks, "iot_devices", {"set_brightness": lit})
    assert judged and more, (judged, more)
    assert found + also == []


# ----------------------------------------------------------------- prove_gym.synth/18
def test_values_fit_what_they_go_with_seed_2050() -> None:
    """seed-2050 read: "Sell Levi's 501 jeans for 349.00"; "Set the repeat rule of the
    same event to monthly" (Grandma's birthday); Rent's limit set to 250.00; "add a home
    address: 1600 Blake St, Portland, AL 85004". A listing asks what its thing sells for
    in its condition; only a recurring kind of event repeats; a limit is near what the
    category costs; a new address is one place."""
    from prove_plugins.budget.tools import RENT
    from prove_plugins.calendar.tools import ONE_OFF
    from prove_plugins.marketplace.tools import CONDITION_SHARE, TITLE_PRICES
    from prove_plugins.shopping.tools._common import NEW_ADDRESSES

    for seed in range(6):
        _, listing = _draw("marketplace", "create_listing", seed)
        lo, hi = TITLE_PRICES[listing.args["title"]]
        share = CONDITION_SHARE[listing.args["condition"]]
        assert lo * share - 10 <= float(listing.args["price"]) <= hi * share + 10, listing.args
        session, rule = _draw("calendar", "set_recurrence", seed)
        if rule.unresolved is None:
            (event,) = [
                e for e in session.list_entities("event") if e["event_id"] == rule.args["event_id"]
            ]
            assert not any(w in event["title"].lower() for w in ONE_OFF), (event, rule.args)
        session, address = _draw("shopping", "add_address", seed)
        assert address.unresolved is None
        parts = tuple(address.args[k] for k in ("line1", "city", "state", "postal_code"))
        assert parts in NEW_ADDRESSES, parts
    srv = prove_gym.get_registry().get_server("budget")
    by_name = {
        c["name"]: c["category_id"]
        for c in srv.session(0, srv.default_size).list_entities("category")
    }
    for seed in range(4):
        _, limit = _draw("budget", "set_category_limit", seed, category_id=by_name["Rent"])
        assert float(limit.args["monthly_limit"]) >= RENT[0], limit.args


def test_reads_and_edits_are_of_what_a_person_would_ask_seed_2050(tasks) -> None:
    """seed-2050 read: "what kind of file is /home/mario/Documents?" (a folder the user
    just moved files into), "remove lines 1 to 5 from .git/config", "mark msg_00226 as
    unread" (sent by the user), and the scenes of hom_02 listed twice with nothing done
    between. A file's type is asked of a file; a tool's internals are not edited by hand;
    one's own sent mail is not marked; nothing is read twice unchanged."""
    import json

    from prove_plugins.filesystem.tools.fitting import _hidden

    def a_file(ws: Workspace, step: GoldStep) -> str | None:
        entry = ws.sessions["filesystem"].call("stat", {"path": step.arguments["path"]})
        return "a folder" if entry.content["type"] == "directory" else None

    def by_hand(ws: Workspace, step: GoldStep) -> str | None:
        folder = str(step.arguments["path"]).rsplit("/", 1)[0]
        return "a hidden folder's file" if _hidden(folder) else None

    judged, found = flagged(
        tasks,
        "filesystem",
        {"file_type": a_file, "delete_lines": by_hand, "insert_lines": by_hand,
         "replace_in_file": by_hand, "append_file": by_hand},
    )  # fmt: skip
    assert judged >= 3 and found == [], found
    result = synthesize(SynthConfig(servers=("email", "iot_devices"), n=200, seed=11))

    def received(ws: Workspace, step: GoldStep) -> str | None:
        for message in step.arguments["message_ids"]:
            shown = ws.sessions["email"].call("get_message", {"message_id": message})
            if shown.content["direction"] == "sent":
                return f"{message} was sent by the user"
        return None

    marked, found = flagged(result.tasks, "email", {"mark_messages": received})
    assert marked and found == [], found
    for task in result.tasks:
        seen: set[str] = set()
        for step in task.steps:
            if step.expect_error is not None:
                continue
            tool = prove_gym.get_registry().get_tool(f"{task.server}.{step.name}")
            if tool.writes:
                seen.clear()
                continue
            key = f"{step.name}:{json.dumps(step.arguments, sort_keys=True)}"
            assert key not in seen, (task.id, key)
            seen.add(key)


def test_values_fit_what_they_go_with_seed_2052() -> None:
    """seed-2052 read: "what electronics products do we sell? Search for 'Trekking'" (none
    can match); "List every bash_history file under /home/victoria"; "collect payment for
    the new invoice now. The amount is 15.5" (of 120); a charge made and then refunded in
    full. A category searched has the word searched for; an extension is one the user's
    files have; a part of a sum is a quarter or a half of it; nothing is charged to be
    refunded at once."""
    for seed in range(4):
        session, drawn = _draw("retail_chain", "search_products", seed)
        if "query" in drawn.args and "category" in drawn.args:
            found = session.call("search_products", drawn.args)
            assert found.ok and found.content, drawn.args
        _, ext = _draw("filesystem", "find_by_extension", seed)
        assert ext.unresolved is None and "_" not in str(ext.args["extension"]), ext.args
    result = synthesize(SynthConfig(servers=("payments",), n=150, seed=3))
    parts = 0
    for task in result.tasks:
        charged = {s.id for s in task.steps if s.name == "charge_invoice"}
        for step in task.steps:
            if step.name == "refund_charge":
                assert not charged & set(step.depends_on), task.id
            if step.name in ("charge_invoice", "refund_charge") and "amount" in step.arguments:
                parts += 1
    assert parts
    session, drawn = _draw("payments", "charge_invoice", 1)
    invoice = session.call("get_invoice", {"invoice_id": drawn.args["invoice_id"]}).content
    if "amount" in drawn.args:
        remaining = Decimal(str(invoice["amount_remaining"]))
        share = Decimal(str(drawn.args["amount"])) / remaining
        assert Decimal("0.2") <= share <= Decimal("0.55"), (drawn.args, remaining)


def test_values_fit_what_they_go_with_seed_2054() -> None:
    """seed-2054 read: a consultancy invoicing "Portrait session and prints"; "City Tennis
    Club (DE10805601780091152105, GBP)"; 1,134.00 moved every week; "~/Pictures/2024" put
    into "~/Pictures/2023/Camping". An invoice is for a service of its merchant at its
    price; a payee's currency is its IBAN's; a weekly payment is a weekly sum; a year of
    photos is not filed inside another year's trip."""
    from prove_plugins.banking.tools import PER_PAYMENT
    from prove_plugins.filesystem.tools.fitting import fitting_destination
    from prove_plugins.payments.sampler import CATEGORIES

    for seed in range(6):
        session, invoice = _draw("payments", "create_invoice", seed)
        assert invoice.unresolved is None
        (merchant,) = [
            m for m in session.list_entities("merchant")
            if m["merchant_id"] == invoice.args["merchant_id"]
        ]  # fmt: skip
        merchant_row = session.call("find_merchant", {"query": merchant["name"]}).content[0]
        items = CATEGORIES[merchant_row["category"]][1]
        amount = float(invoice.args["amount"])
        assert any(
            text.split("{")[0] in invoice.args["description"] and low <= amount <= high
            for text, low, high, _ in items
        ), (merchant_row["category"], invoice.args)
        _, payee = _draw("banking", "add_beneficiary", seed)
        number, currency = payee.args["account_number"], payee.args.get("currency", "USD")
        assert (currency == "USD") == number[:2].isdigit(), payee.args
        _, standing = _draw("banking", "schedule_payment", seed, frequency="weekly")
        assert float(standing.args["amount"]) <= PER_PAYMENT["weekly"][1], standing.args
    bound = Bound(
        {"source": "/home/ana/Pictures/2024", "destination": "/home/ana/Pictures/2023/Camping"}
    )
    bound = Bound(dict(bound.args), {"source": {"type": "directory"}})
    assert fitting_destination(None, random.Random(0), bound) is None


def test_nothing_done_is_undone_at_once_seed_2054() -> None:
    """seed-2054 read: "pushd ~/Pictures/2023/Camping. Next, popd." (nothing done there);
    "put the same variant in the cart of cus_007. And then change the same variant in
    cus_007's cart to 1"."""
    result = synthesize(SynthConfig(servers=("filesystem", "shopping"), n=200, seed=14))
    for task in result.tasks:
        for turn in task.turns:  # a pushd is for working there first (in one request)
            names = [s.name for s in turn.steps if s.expect_error is None]
            assert ("pushd", "popd") not in set(itertools.pairwise(names)), task.id
        for k, step in enumerate(task.steps):
            if step.name == "update_cart_item":
                assert not any(
                    b.name == "add_to_cart"
                    and b.arguments.get("variant_id") == step.arguments.get("variant_id")
                    for b in task.steps[:k]
                ), task.id


def test_values_fit_what_they_go_with_seed_2056() -> None:
    """seed-2056 read: a colleague's mail put in spam; "diff standup-2026-07-02.md
    budget.csv". Only mail from outside the company is reported as spam, and two files
    compared are of one type."""
    from prove_plugins.email.tools import Mailbox, Message

    from prove_gym.server.sql import record_by_key

    for seed in range(8):
        session, move = _draw("email", "move_message", seed)
        if move.unresolved is None and move.args["folder"] == "spam":
            sql = session.context().sql
            row = sql.first(record_by_key(Message), key=move.args["message_id"])
            own = sql.one(record_by_key(Mailbox), key=row.mailbox_id).address
            assert row.from_address.split("@")[-1] != own.split("@")[-1], move.args
        _, diff = _draw("filesystem", "diff", seed)
        if diff.unresolved is None:
            ext = [Bound({"p": diff.args[k]}).extension("p") for k in ("path1", "path2")]
            assert ext[0] == ext[1], diff.args


def test_values_fit_what_they_go_with_seed_2058() -> None:
    """seed-2058 read: a regression bug renamed "Document the webhook retry policy"; a
    New Orleans photo moved into ~/Pictures/2025/Vancouver, a Prague one into Screenshots.
    A renamed issue keeps a title of its type; a photo moves up to an album that holds its
    own, or into a backup, never across albums."""
    from prove_plugins.filesystem.tools.fitting import fitting_destination
    from prove_plugins.issue_tracker.tools import NEW_ISSUES

    for seed in range(6):
        session, renamed = _draw("issue_tracker", "update_issue", seed)
        if renamed.unresolved is None and "title" in renamed.args:
            issue = session.call("get_issue", {"issue_id": renamed.args["issue_id"]}).content
            assert issue["type"] in NEW_ISSUES[renamed.args["title"]][0], (issue, renamed.args)
    photo = "/home/a/Pictures/2024/New Orleans/IMG_2528.jpg"
    for destination, fits in (
        ("/home/a/Pictures/2025/Vancouver", False),
        ("/home/a/Pictures/Screenshots", False),
        ("/home/a/Pictures/2024", True),
        ("/home/a/Pictures/archive", True),
    ):
        bound = Bound({"source": photo, "destination": destination})
        assert (fitting_destination(None, random.Random(0), bound) is not None) is fits, destination
