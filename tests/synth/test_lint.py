"""`prove-gym lint-data`'s flaw classes: each catches a task seeded with its flaw, with the
right example, and passes the same task without it."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

import pytest

from prove_gym import get_registry
from prove_gym.synth import SynthResult
from prove_gym.synth.enums import stripped_schema
from prove_gym.synth.lint import FLAW_CLASSES, Limit, Reader, lint

Task = dict[str, Any]


def step(sid: str, name: str, deps: tuple[str, ...] = (), **arguments: Any) -> dict[str, Any]:
    return {"id": sid, "name": name, "arguments": arguments, "depends_on": list(deps)}


def clean() -> Task:
    """A calendar task a reader would call good."""
    return {
        "id": "calendar-clean",
        "servers": ["calendar"],
        "turns": [
            {
                "user": "Hi! Create an event called Design review on cal_01 at 3 pm on 15 August.",
                "steps": [
                    step(
                        "s1", "create_event", calendar_id="cal_01", title="Design review",
                        start="2026-08-15T15:00",
                    )
                ],
            },
            {
                "user": "Then invite ana@example.com to the new event.",
                "steps": [step("s2", "add_invitee", ("s1",), event_id="evt_0301", email="ana@example.com")],
            },
        ],
    }  # fmt: skip


def user(task: Task, turn: int, text: str) -> Task:
    task["turns"][turn]["user"] = text
    return task


def add_steps(task: Task, turn: int, *steps: dict[str, Any]) -> Task:
    task["turns"][turn]["steps"].extend(steps)
    return task


def banking_logins(task: Task) -> Task:
    task["servers"] = ["banking"]
    task["turns"][0]["steps"] = [step("s1", "authenticate", customer_id="cus_001", passcode="1234")]
    task["turns"][1]["steps"] = [
        step("s2", "authenticate", customer_id="cus_001", passcode="1234"),
        step("s3", "list_accounts", customer_id="cus_001"),
    ]
    return task


def banking_idle_login(task: Task) -> Task:
    task["servers"] = ["banking"]
    task["turns"][0]["steps"] = [step("s1", "list_accounts", customer_id="cus_001")]
    task["turns"][1]["steps"] = [step("s2", "authenticate", customer_id="cus_001", passcode="1234")]
    return task


def clarify(task: Task) -> Task:
    """The event's calendar left out; the answer's gold also lists the contacts, which do
    not need it."""
    first = task["turns"][0]
    task["turns"][0:1] = [
        {"user": "Create an event called Design review on one of my calendars, and list my contacts.",
         "kind": "clarify", "missing": ["calendar_id"], "steps": []},
        {"user": "It's cal_01.", "steps": [*first["steps"], step("s9", "list_contacts")]},
    ]  # fmt: skip
    return task


def clarify_said(task: Task) -> Task:
    """The event's calendar left out, while the turn names cal_01 for the same call's
    answer anyway."""
    first = task["turns"][0]
    task["turns"][0:1] = [
        {"user": "Create an event called Design review on one of my calendars (cal_01 is fine).",
         "kind": "clarify", "missing": ["calendar_id"], "steps": []},
        {"user": "It's cal_01.", "steps": first["steps"]},
    ]  # fmt: skip
    return task


def listed_enum(task: Task) -> Task:
    schema = copy.deepcopy(get_registry().get_tool("calendar.add_reminder").input_schema())
    del schema["properties"]["method"]["enum"]  # stripped from the schema, not the text
    task["schema_overrides"] = {"calendar.add_reminder": schema}
    return task


def two_events(task: Task) -> Task:
    """evt_0007 named first, then "that event" for the one created: either could be meant."""
    task["turns"][0]["steps"].insert(0, step("s0", "get_event", event_id="evt_0007"))
    return user(task, 1, "Then invite ana@example.com to that event.")


def two_lists(task: Task) -> Task:
    """A search and a creation both answer with events: "that list" could be either."""
    task["turns"][0]["steps"].append(step("s1b", "search_events", query="review"))
    task["turns"][1]["steps"] = [
        step("s2", "add_invitee", ("s1b",), event_id="evt_0002", email="ana@example.com")
    ]
    return user(task, 1, "Then invite ana@example.com to the second event from that list.")


def hidden_with_stand_in(task: Task) -> Task:
    """An abstention turn asking what get_free_busy does, get_free_busy hidden, list_events offered."""
    calendar = get_registry().get_server("calendar")
    task["tools"] = [
        t.qualified_name for t in calendar.visible_tools() if t.name != "get_free_busy"
    ]
    task["turns"].append({"user": "Am I free on 20 August?", "kind": "abstain", "steps": []})
    return task


def same_title_again(task: Task) -> Task:
    """The new event's title set to the title it was created with."""
    return add_steps(
        task, 1, step("s3", "update_event", ("s1",), event_id="evt_0301", title="Design review")
    )


def two_periods(task: Task) -> Task:
    """budget-2026-00032: "spending in June 2026. From June 8, 2026. Until Jul 28, 2026." """
    return {
        "id": "budget-periods", "servers": ["budget"],
        "turns": [{"user": "Show my spending in June 2026. From June 8, 2026. Until Jul 28, 2026.",
                   "steps": [step("s1", "search_transactions", month="2026-06",
                                  start_date="2026-06-08", end_date="2026-07-28")]}],
    }  # fmt: skip


def cat_a_photo(task: Task) -> Task:
    """``cat`` of a photo: its value source takes text files only."""
    return {
        "id": "filesystem-photo", "servers": ["filesystem"], "seed": 0, "size": 1,
        "turns": [{"user": "Show me /home/ronnie/Downloads/IMG_2542.jpg.",
                   "steps": [step("s1", "cat", path="/home/ronnie/Downloads/IMG_2542.jpg")]}],
    }  # fmt: skip


def two_members(task: Task) -> Task:
    """marketplace-2026-00014: bids as usr_021, then lists "my" racket as usr_040."""
    return {
        "id": "marketplace-two", "servers": ["marketplace"],
        "turns": [
            {"user": "I'm usr_021; place a bid of 40.00 on listing lst_0007.",
             "steps": [step("s1", "place_bid", listing_id="lst_0007", buyer_id="usr_021", amount="40.00")]},
            {"user": "List my tennis racket for 60 as a fixed-price listing in sports; I am usr_040.",
             "steps": [step("s2", "create_listing", seller_id="usr_040", title="Tennis racket",
                            price="60.00", format="fixed_price", category="sports", condition="good")]},
        ],
    }  # fmt: skip


def foreign_webhook(task: Task) -> Task:
    """A webhook endpoint of mer_004 (Leeds Bread Co. at this seed and size) on the site of
    mer_007 (Bristol Bread Co.)."""
    return {
        "id": "payments-foreign", "servers": ["payments"], "seed": 132276282, "size": 2,
        "turns": [{"user": "Send mer_004's payment events to https://api.bristolbreadco.com/webhooks/v1.",
                   "steps": [step("s1", "create_webhook_endpoint", merchant_id="mer_004",
                                  url="https://api.bristolbreadco.com/webhooks/v1", events=["*"])]}],
    }  # fmt: skip


SEEDED: dict[str, tuple[Callable[[Task], Task], str]] = {
    "some_placeholder": (lambda t: user(t, 1, "Then invite some email to the new event."), "some email"),
    "iso_datetime": (lambda t: user(t, 0, "Create Design review on cal_01 at 2026-08-15T15:00."), "2026-08-15T15:00"),
    "raw_enum_token": (
        lambda t: {**t, "tools": ["calendar.create_event", "calendar.add_invitee", "social_media.list_connections"],
                   "turns": [t["turns"][0], user(t, 1, "Also show my requests_received.")["turns"][1]]},
        "requests_received",
    ),
    "parameter_name": (lambda t: user(t, 1, "Invite ana@example.com. Set the duration minutes to 45."), "the duration minutes"),
    "inverse_write": (
        lambda t: add_steps(t, 1, step("s3", "remove_invitee", ("s2",), event_id="evt_0301", email="ana@example.com")),
        'add_invitee(event_id="evt_0301", email="ana@example.com") then remove_invitee',
    ),
    "repeated_write": (
        lambda t: add_steps(t, 1, step("s3", "add_invitee", (), event_id="evt_0301", email="ana@example.com")),
        'add_invitee(event_id="evt_0301", email="ana@example.com") twice',
    ),
    "moot_write": (
        lambda t: add_steps(t, 1, step("s3", "delete_event", (), event_id="evt_0301")),
        'add_invitee(event_id="evt_0301", email="ana@example.com"), then delete_event(event_id="evt_0301") ends it',
    ),
    "noop_update": (same_title_again, 'title is already "Design review"'),
    "contradicting_filters": (two_periods, 'search_transactions(month="2026-06", start_date="2026-06-08"'),
    "misfit_identifier": (cat_a_photo, "IMG_2542.jpg\"): path does not fit"),
    "foreign_value": (foreign_webhook, "url is on bristolbreadco.com, mer_007's"),
    "second_persona": (two_members, "2 users: place_bid(buyer_id=usr_021), create_listing(seller_id=usr_040)"),
    "repeated_login": (banking_logins, "2 calls: authenticate("),
    "clarify_value_said": (clarify_said, "turn 1 asks for calendar_id and says cal_01"),
    "idle_login": (banking_idle_login, 'authenticate(customer_id="cus_001", passcode="1234") is the last call'),
    "new_without_create": (
        lambda t: {**t, "turns": [
            {"user": "Find the design review.", "steps": [step("s1", "search_events", query="design review")]},
            t["turns"][1],
        ]},
        "the new event",
    ),
    "ambiguous_reference": (two_events, "to that event. (several: gold evt_0301)"),
    "list_reference": (two_lists, "the second event from that list. (2 lists: gold evt_0002)"),
    "id_before_creation": (
        lambda t: user(t, 0, "Create an event called Design review (evt_0301) on cal_01 at 3 pm on 15 August."),
        "evt_0301 stated in turn 1, created in turn 1",
    ),
    "late_greeting": (lambda t: user(t, 1, "Hello. Invite ana@example.com to the new event."), "turn 2: Hello."),
    "same_as_itself": (lambda t: user(t, 1, "Invite ana@example.com. Use the same category as the category."), "the same category as the category"),
    "clarify_with_independent": (clarify, "asks for calendar_id; independent: list_contacts()"),
    "stripped_enum_listed": (listed_enum, "calendar.add_reminder.method: email, popup still stated"),
    "hidden_tool_stood_in": (hidden_with_stand_in, "calendar.get_free_busy hidden, calendar.list_events offered"),
}  # fmt: skip


def flags(task: Task) -> dict[str, list[str]]:
    reader = Reader()
    read = reader.read(json.loads(json.dumps(task)))
    return {name: found for name, c in FLAW_CLASSES.items() if (found := c.check(read))}


def test_every_flaw_class_has_a_seeded_example() -> None:
    assert set(SEEDED) == set(FLAW_CLASSES)


def test_the_clean_task_is_flagged_by_no_class() -> None:
    assert flags(clean()) == {}
    report = lint([clean()])
    assert report.tasks == 1 and not report.failed
    assert set(report.counts().values()) == {0}


@pytest.mark.parametrize("name", sorted(SEEDED))
def test_a_task_seeded_with_a_flaw_is_caught_with_that_example(name: str) -> None:
    seed, snippet = SEEDED[name]
    found = flags(seed(clean()))
    assert list(found) == [name], found
    assert snippet in found[name][0]
    report = lint([clean(), seed(clean())])
    (result,) = [c for c in report.classes if c.name == name]
    assert result.flagged == 1 and snippet in result.examples[0][1]
    assert [c.name for c in report.failed] == [name]  # 1 in 2 is over any default limit


def test_the_raw_enum_limit_is_a_share_of_the_tasks() -> None:
    seed, _ = SEEDED["raw_enum_token"]
    tasks = [clean()] * 99 + [seed(clean())]
    assert not lint(tasks).failed  # 1 in 100: at most 1% is allowed
    assert [c.name for c in lint([*tasks, seed(clean())]).failed] == ["raw_enum_token"]
    assert lint(tasks, limits={"raw_enum_token": Limit(0)}).failed


def test_stripping_the_enum_properly_passes_the_stripped_enum_check() -> None:
    task = clean()
    task["schema_overrides"] = {
        "calendar.add_reminder": stripped_schema(get_registry().get_tool("calendar.add_reminder"))
    }
    assert flags(task) == {}


def test_undoing_needs_the_same_target() -> None:
    """Removing another invitee, or unlocking another door, undoes nothing."""
    other = add_steps(
        clean(), 1, step("s3", "remove_invitee", (), event_id="evt_0301", email="bo@example.com")
    )
    assert flags(other) == {}
    lock = {
        "id": "iot", "servers": ["iot_devices"],
        "turns": [{"user": "Lock the front door, then unlock the back door.", "steps": [
            step("s1", "set_lock", device_id="dev_0014", action="lock"),
            step("s2", "set_lock", device_id="dev_0015", action="unlock"),
        ]}],
    }  # fmt: skip
    assert flags(lock) == {}
    lock["turns"][0]["steps"][1]["arguments"]["device_id"] = "dev_0014"
    assert list(flags(lock)) == ["inverse_write"]


def test_unreadable_lines_are_counted_not_raised(tmp_path) -> None:
    from prove_gym.synth.lint import lint_path

    path = tmp_path / "tasks.jsonl"
    path.write_text(json.dumps(clean()) + "\nnot json\n[1, 2]\n\n", encoding="utf-8")
    report = lint_path(path)
    assert report.tasks == 3
    (bad,) = [c for c in report.classes if c.name == "unreadable"]
    assert bad.flagged == 2 and bad.examples[0][0] == "tasks.jsonl:2"
    assert [c.name for c in report.failed] == ["unreadable"]


def test_a_synthesized_task_mutated_with_a_flaw_is_caught(dataset: SynthResult) -> None:
    """A real task with an earlier turn's text moved after the first turn, greeting first."""
    task = next(
        json.loads(t.to_json())
        for t in dataset.tasks
        if len(t.turns) >= 2 and not flags(json.loads(t.to_json()))
    )
    task["turns"][1]["user"] = "Hi! " + task["turns"][1]["user"]
    found = flags(task)
    assert list(found) == ["late_greeting"] and found["late_greeting"][0].startswith("turn 2: Hi!")


def test_no_synthesized_task_lists_a_stripped_enum_value(dataset: SynthResult) -> None:
    stripped = [t for t in dataset.tasks if t.schema_overrides]
    assert stripped
    report = lint(json.loads(t.to_json()) for t in stripped)
    assert report.counts()["stripped_enum_listed"] == 0


def test_tasks_of_any_shape_are_read_without_raising() -> None:
    """An LLM's file is read, not trusted: wrong types are skipped, long text stays linear."""
    hostile = [
        {"turns": [{"user": 5, "steps": 7, "missing": "x", "kind": "clarify"},
                   {"steps": [{"name": None, "arguments": [1], "depends_on": 3}]}]},
        {"turns": [], "tools": [1, "nodot", "a.b.c"], "servers": "calendar",
         "schema_overrides": {"calendar.add_reminder": 5, "x": {}}},
        {"turns": ["x"], "tool_schemas": [
            {"function": {"name": "f", "parameters": {"properties": {"a": {"enum": ["x_y"]}}}}}, 3]},
        {"id": [1], "servers": ["calendar"],
         "turns": [{"user": "the new event " * 20_000 + "some " * 20_000 + "x_y"}]},
    ]  # fmt: skip
    report = lint(hostile)
    assert report.tasks == 4
    assert report.counts()["new_without_create"] == 1


def test_a_swap_or_a_new_entity_after_a_deletion_undoes_nothing() -> None:
    shop = {
        "id": "shop", "servers": ["shopping"],
        "turns": [{"user": "Take the coupon off cus_003's cart and apply FLASH30.", "steps": [
            step("s1", "remove_coupon", customer_id="cus_003"),
            step("s2", "apply_coupon", ("s1",), customer_id="cus_003", code="FLASH30"),
        ]}],
    }  # fmt: skip
    assert flags(shop) == {}
    shop["turns"][0]["steps"].reverse()  # applying, then taking it off again, undoes it
    shop["turns"][0]["steps"][1]["depends_on"] = []
    assert list(flags(shop)) == ["inverse_write"]
    cal = clean()
    cal["turns"][0]["steps"].insert(0, step("s0", "delete_event", event_id="evt_0001"))
    cal["turns"][0]["steps"][1]["depends_on"] = ["s0"]
    assert flags(cal) == {}


ISSUE_43_CLASSES = (
    "noop_update",
    "contradicting_filters",
    "misfit_identifier",
    "foreign_value",
    "second_persona",
    "moot_write",
    "some_placeholder",
    "iso_datetime",
    "parameter_name",
    "inverse_write",
    "repeated_write",
    "repeated_login",
    "idle_login",
    "new_without_create",
    "ambiguous_reference",
    "list_reference",
    "id_before_creation",
    "late_greeting",
    "same_as_itself",
    "clarify_with_independent",
    "clarify_value_said",
    "stripped_enum_listed",
    "hidden_tool_stood_in",
)
"""The classes the generator brings to zero (issue #43); raw enum tokens stay under 1%."""


@pytest.mark.slow
def test_the_projects_own_2000_task_synthesis_has_none_of_the_flaws(tmp_path) -> None:
    """`prove-gym lint-data` on what `prove-gym synth` writes, at a seed no other test uses:
    zero tasks of every class issue #43 lists, raw enum tokens in under 1% of them, and the
    default limits pass. About 35 CPU-seconds; two workers write the same bytes as one."""
    from prove_gym.synth import SynthConfig, synthesize, write_dataset
    from prove_gym.synth.lint import format_lint, lint_path

    result = synthesize(SynthConfig(servers=("all",), n=2000, seed=4343, workers=2))
    write_dataset(result, tmp_path)
    report = lint_path(tmp_path)
    assert report.tasks == 2000
    counts = report.counts()
    assert {c: counts[c] for c in ISSUE_43_CLASSES} == dict.fromkeys(ISSUE_43_CLASSES, 0), (
        format_lint(report)
    )
    assert counts["raw_enum_token"] < 20, format_lint(report)
    assert not report.failed, format_lint(report)


def test_removing_the_folder_a_call_made_undoes_it() -> None:
    made = {
        "id": "fs", "servers": ["filesystem"],
        "turns": [{"user": "Make ~/drafts, then remove the empty folder ~/drafts.", "steps": [
            step("s1", "mkdir", path="~/drafts"),
            step("s2", "rmdir", ("s1",), path="/home/ana/drafts"),
        ]}],
    }  # fmt: skip
    assert list(flags(made)) == ["inverse_write"]
    made["turns"][0]["steps"][1]["depends_on"] = []  # another folder: nothing undone
    assert flags(made) == {}


def test_ending_what_a_call_made_undoes_it() -> None:
    """Record an expense, then delete that transaction: another tool's name, the same entity."""
    budget = {
        "id": "budget", "servers": ["budget"],
        "turns": [{"user": "Record Target for 200.00 on acc_03, then remove that transaction.",
                   "steps": [
                       step("s1", "add_expense", account_id="acc_03", amount="200.00", payee="Target"),
                       step("s2", "delete_transaction", ("s1",), transaction_id="txn_00266"),
                   ]}],
    }  # fmt: skip
    assert list(flags(budget)) == ["inverse_write"]
    budget["turns"][0]["steps"][1]["depends_on"] = []  # another transaction, found elsewhere
    assert flags(budget) == {}


@pytest.mark.parametrize(
    "text",
    [
        "Set the category to that category.",
        "The category should be that category.",
        "Use that category as the category.",
        "Set the category to the same category.",
    ],
)
def test_a_value_that_names_its_own_parameter_is_flagged(text: str) -> None:
    found = flags(user(clean(), 1, f"Invite ana@example.com. {text}"))
    assert list(found) == ["same_as_itself"]
    assert flags(user(clean(), 1, "Invite ana@example.com. Use that category.")) == {}


def test_declared_inverses_catch_what_the_name_rules_miss() -> None:
    """``rm`` declares ``inverse_of=("touch", "write_file")`` and trading's ``cancel_order``
    ``inverse_of="place_limit_order"``: no verb pair says so."""
    files = {
        "id": "fs", "servers": ["filesystem"],
        "turns": [{"user": "Write 'hi' to /tmp/a.txt, then delete /tmp/a.txt.", "steps": [
            step("s1", "write_file", path="/tmp/a.txt", content="hi"),
            step("s2", "rm", ("s1",), path="/tmp/a.txt"),
        ]}],
    }  # fmt: skip
    assert list(flags(files)) == ["inverse_write"]
    files["turns"][0]["steps"][1]["arguments"]["path"] = "/tmp/b.txt"  # another file
    files["turns"][0]["steps"][1]["depends_on"] = []  # (a dependency: the path came from s1)
    assert flags(files) == {}
    trade = {
        "id": "trade", "servers": ["trading"],
        "turns": [{"user": "Buy 5 AAPL at 180, then cancel that order.", "steps": [
            step("s1", "place_limit_order", portfolio_id="pf_01", symbol="AAPL", side="buy",
                 quantity=5, limit_price=180),
            step("s2", "cancel_order", ("s1",), order_id="ord_0301"),
        ]}],
    }  # fmt: skip
    assert list(flags(trade)) == ["inverse_write"]


def test_declarations_outrank_the_name_rules() -> None:
    """Creating an event and removing one of its invitees undoes nothing: ``remove_invitee``
    declares that it undoes ``add_invitee``, so the make/destroy verb rule does not apply."""
    cal = clean()
    cal["turns"][1]["steps"] = [
        step("s2", "remove_invitee", ("s1",), event_id="evt_0301", email="ana@example.com")
    ]
    assert flags(cal) == {}
    cal["turns"][1]["steps"][0] = step("s2", "delete_event", ("s1",), event_id="evt_0301")
    assert list(flags(cal)) == ["inverse_write"]


def test_every_installed_inverse_names_a_write_of_its_own_server() -> None:
    registry = get_registry()
    pairs = 0
    for name in sorted(registry.servers):
        server = registry.get_server(name)
        assert not [p for p in server.problems() if "inverse_of" in p]
        for tool in server.visible_tools():
            for other in server.inverses(tool.name):
                pairs += 1
                assert tool.name in server.inverses(other)
    assert pairs >= 60  # like/unlike, add/remove invitee, follow/unfollow, ... both ways


def test_a_reference_to_the_one_thing_in_play_passes() -> None:
    """The same references, each with one referent, read as they should."""
    one = user(clean(), 1, "Then invite ana@example.com to that event.")
    assert flags(one) == {}
    listed = two_lists(clean())
    del listed["turns"][0]["steps"][0]  # the search alone lists events
    listed["turns"][0]["user"] = "Find the design reviews."
    assert flags(listed) == {}
    same = two_events(clean())
    same["turns"][1]["steps"][0]["arguments"]["event_id"] = "evt_0007"
    same["turns"][1]["steps"][0]["depends_on"] = ["s0"]
    same["turns"][0]["steps"].pop()  # no event made: evt_0007 is the one event in play
    assert flags(user(same, 1, "Then invite ana@example.com to the same event.")) == {}
    nothing = user(clean(), 1, "Then invite ana@example.com to the same event.")
    assert list(flags(nothing)) == ["ambiguous_reference"]  # no earlier call took an event
    assert "no earlier event" in flags(nothing)["ambiguous_reference"][0]


def test_an_id_the_initial_state_holds_is_not_said_before_its_creation() -> None:
    """A call on an event the graph made depend on ``create_event``: said in the first turn,
    it is flagged while nothing tells the lint what existed, and not once the task names a
    seed whose initial state holds it (the lint samples calendar at that seed)."""
    task = user(
        clean(), 0, "Create an event called Design review on cal_01 at 3 pm, and see evt_0004."
    )
    task["turns"][1]["steps"][0]["arguments"]["event_id"] = "evt_0004"
    assert list(flags(task)) == ["id_before_creation"]
    task["seed"], task["size"] = 0, 10**9  # no state of that size: nothing known to exist
    assert list(flags(task)) == ["id_before_creation"]
    task["size"] = None
    task["seed"] = 0  # calendar at seed 0 starts with evt_0004
    assert flags(task) == {}
    task["turns"][1]["steps"][0]["arguments"]["event_id"] = "evt_0301"
    task["turns"][0]["user"] = task["turns"][0]["user"].replace("evt_0004", "evt_0301")
    assert list(flags(task)) == ["id_before_creation"]  # one it does not hold


def one_turn(server: str, *steps: dict[str, Any], seed: int | None = None, size: int = 1) -> Task:
    task: Task = {
        "id": f"{server}-moot",
        "servers": [server],
        "turns": [{"user": "Do it.", "steps": list(steps)}],
    }
    if seed is not None:
        task.update(seed=seed, size=size)
    return task  # fmt: skip


def test_a_write_declared_to_end_what_it_names_makes_an_earlier_write_moot() -> None:
    """``update_cart_item`` declares ``ends_when={"quantity": 0}``: adding a variant and then
    setting it to 0 wastes the add; setting it to 2 does not."""
    add = step("s1", "add_to_cart", customer_id="cus_050", variant_id="var_00153")
    zero = step("s2", "update_cart_item", customer_id="cus_050", variant_id="var_00153", quantity=0)
    (found,) = flags(one_turn("shopping", add, zero))["moot_write"]
    assert found.startswith('add_to_cart(customer_id="cus_050"') and "update_cart_item(" in found
    two = step("s2", "update_cart_item", customer_id="cus_050", variant_id="var_00153", quantity=2)
    assert flags(one_turn("shopping", add, two)) == {}
    other = step(
        "s2", "update_cart_item", customer_id="cus_050", variant_id="var_00999", quantity=0
    )
    assert flags(one_turn("shopping", add, other)) == {}


def test_an_ending_names_its_entity_by_its_own_name() -> None:
    """``remove_coupon`` ends the coupon, not the customer it takes: an address added to that
    customer stays; ``delete_lines`` ends lines, not the file that was chmodded."""
    address = step("s1", "add_address", customer_id="cus_111", label="home", line1="2 N Central Ave",
                   city="Phoenix", postal_code="85004", country="US")  # fmt: skip
    coupon = step("s2", "remove_coupon", customer_id="cus_111")
    assert "moot_write" not in flags(one_turn("shopping", address, coupon))
    chmod = step("s1", "chmod", path="/home/kyle/notes.txt", mode="644")
    lines = step("s2", "delete_lines", path="/home/kyle/notes.txt", start=3)
    assert "moot_write" not in flags(one_turn("filesystem", chmod, lines))
    edit = step("s1", "edit_message", message_id="msg_00629", text="Fixed now.")
    delete = step("s2", "delete_message", message_id="msg_00629")
    assert "moot_write" in flags(one_turn("team_chat", edit, delete))


def test_a_write_that_leaves_something_behind_is_not_moot() -> None:
    """Posting this month's rent records a transaction (which ``delete_transaction`` ends):
    cancelling the recurring rent afterwards does not undo it."""
    post = step("s1", "post_recurring_expense", recurring_id="rec_001")
    cancel = step("s2", "cancel_recurring_expense", recurring_id="rec_001")
    assert "moot_write" not in flags(one_turn("budget", post, cancel))


def test_an_ending_then_the_same_thing_made_again_is_moot() -> None:
    """Cancel the rent, then add a rent bill to the same payee: the cancellation is wasted.
    The payee is read from the initial state at the task's seed and size."""
    cancel = step("s1", "cancel_recurring_expense", recurring_id="rec_001")
    again = step("s2", "create_recurring_expense", account_id="acc_01", amount="1525.00", category_id="cat_001",
                 frequency="monthly", payee="Thomas Property Management", start_date="2026-11-16")  # fmt: skip
    (found,) = flags(one_turn("budget", cancel, again, seed=153953556))["moot_write"]
    assert found.endswith("makes it again")
    other = {**again, "arguments": {**again["arguments"], "payee": "Netflix"}}
    assert flags(one_turn("budget", cancel, other, seed=153953556)) == {}
    assert flags(one_turn("budget", cancel, again)) == {}  # no seed: nothing is known to exist


@pytest.mark.parametrize(
    ("text", "snippet"),
    [
        ("Invite ana@example.com to the new event. Use 8 as the count.", "as the count"),
        ("Invite ana@example.com to the new event. Set the limit to 5.", "Set the limit to"),
        ("Invite ana@example.com to the new event. The title should be Sync.", "The title should be"),
        ("Invite ana@example.com. Use the first event in those results as the event.", "as the event"),
        ("Invite ana@example.com to the new event. Set the calendar id to cal_02.", "Set the calendar id to"),
    ],
)  # fmt: skip
def test_a_parameter_name_in_a_template_frame_is_caught(text: str, snippet: str) -> None:
    """ "Use V as the P", "Set the P to V", "The P should be V" for any parameter of an
    offered tool (calendar: ``count``, ``limit``, ``title``, ``event_id``, ``calendar_id``)."""
    found = flags(user(clean(), 1, text))
    assert list(found) == ["parameter_name"], found
    assert snippet in found["parameter_name"][0]


def test_a_frame_around_words_that_name_no_parameter_is_not_caught() -> None:
    """English that happens to share the frame: no parameter is called "headlights" or
    "same time"."""
    text = "Invite ana@example.com to the new event, as the same time works. Set the headlights to auto."
    assert flags(user(clean(), 1, text)) == {}


@pytest.mark.parametrize(
    ("text", "snippet"),
    [
        ("Invite ana@example.com to the new event in 2026-08.", "2026-08"),
        ("Invite ana@example.com to the new event on 2026-08-20.", "2026-08-20"),
    ],
)
def test_an_iso_date_or_month_is_caught(text: str, snippet: str) -> None:
    found = flags(user(clean(), 1, text))
    assert list(found) == ["iso_datetime"], found
    assert snippet in found["iso_datetime"][0]


def test_a_date_inside_a_name_the_user_states_is_not_caught() -> None:
    """A file name with a date in it is stated as it is: it is a name, not a date said."""
    task = user(
        clean(),
        1,
        "Invite ana@example.com to the new event. Attach report-2026-08.pdf and logs/2026-08-20.txt.",
    )
    assert flags(task) == {}
    screenshot = "Screenshot 2026-06-03 at 10.29.00.png"
    task = user(clean(), 1, f"Invite {screenshot} to the new event.")
    task["turns"][1]["steps"][0]["arguments"]["email"] = screenshot
    assert flags(task) == {}
    task["turns"][1]["steps"][0]["arguments"]["email"] = "ana@example.com"
    assert list(flags(task)) == ["iso_datetime"]
    # a path's last name with spaces, stated where no gold call takes it (a request the
    # model must abstain from): still a name
    path = "/home/andrew/Pictures/Screenshots/Screenshot 2026-07-19 at 17.09.00.png"
    assert (
        flags(user(clean(), 1, f"Invite ana@example.com. mv {path} /home/andrew/Documents.")) == {}
    )
    said = "Invite ana@example.com. Meet at /home/andrew on 2026-07-19 at noon."
    assert list(flags(user(clean(), 1, said))) == ["iso_datetime"]  # a date said near a path


def test_the_same_x_can_stand_for_an_id_said_before_it_in_the_turn() -> None:
    """ "Show evt_0007. Then invite ana to the same event": the referent was said a
    sentence before, so another event of the turn taken by reference does not make it
    ambiguous; "the same event" with no such id before it still is."""
    task = clean()
    task["turns"][1]["steps"] = [
        step("s2a", "get_event", event_id="evt_0007"),
        step("s2", "add_invitee", ("s2a",), event_id="evt_0007", email="ana@example.com"),
        step("s3", "add_invitee", ("s1",), event_id="evt_0301", email="bo@example.com"),
    ]
    said = "Show evt_0007. Then invite ana@example.com to the same event, and bo@example.com to the new event."
    assert flags(user(task, 1, said)) == {}
    unsaid = "Invite ana@example.com to the same event, and bo@example.com to the new event. Show evt_0007."
    assert list(flags(user(task, 1, unsaid))) == ["ambiguous_reference"]


def test_a_list_reference_whose_id_the_turn_also_states_later_is_not_caught() -> None:
    """A clarify turn (budget-4343-00009): "... into the first account in those results.
    ... Only for the account acc_01." The listing is in the answer turn and the income
    depends on it; that the turn names acc_01 again later does not make the reference
    stand for nothing. The same text with the income not depending on the listing is."""
    text = (
        "I spent 62.68 at Verizon Fios, put it under cat_004 and paid with one of my "
        "accounts. Then show my account balances. After that, I got paid 75 from Tax refund "
        "into the first account in those results. After that, find my Netflix purchases. "
        "Only for the account acc_01."
    )
    answer = [
        step("s1", "add_expense", account_id="acc_05", amount="62.68", category_id="cat_004",
             payee="Verizon Fios"),
        step("s2", "list_accounts"),
        step("s3", "add_income", ("s2",), account_id="acc_01", amount=75, payer="Tax refund"),
        step("s4", "search_transactions", account_id="acc_01", query="Netflix"),
    ]  # fmt: skip
    task: Task = {
        "id": "budget-clarify",
        "servers": ["budget"],
        "turns": [
            {"user": text, "kind": "clarify", "missing": ["account_id"], "steps": []},
            {"user": "Use acc_05 for the account.", "steps": answer},
        ],
    }
    assert "list_reference" not in flags(task)
    answer[2]["depends_on"] = []
    assert "list_reference" in flags(task)


def test_a_reply_the_task_made_and_then_deleted_is_moot() -> None:
    """team_chat-2026-00036 replied in a thread, then deleted its own new reply (the delete
    depends on the reply, which made a message the initial state does not hold)."""
    reply = step("s1", "reply_in_thread", message_id="msg_00707", text="Thanks, I'll take a look.")
    delete = step("s2", "delete_message", ("s1",), message_id="msg_00990")
    (found,) = flags(one_turn("team_chat", reply, delete, seed=0))["moot_write"]
    assert found.startswith("reply_in_thread(") and "makes what delete_message(" in found
    # deleting a message of the initial state after replying elsewhere wastes nothing
    other = step("s2", "delete_message", (), message_id="msg_00990")
    assert "moot_write" not in flags(one_turn("team_chat", reply, other, seed=0))


def test_an_update_to_another_value_or_another_entity_is_no_noop() -> None:
    other = add_steps(
        clean(), 1, step("s3", "update_event", ("s1",), event_id="evt_0301", title="Design sync")
    )
    # no no-op; but renaming the event the task just made is moot (_made_then_changed)
    (moot,) = flags(other).pop("moot_write")
    assert "sets title, then update_event(" in moot and "noop_update" not in flags(other)
    elsewhere = add_steps(
        clean(), 1, step("s3", "update_event", (), event_id="evt_0007", title="Design review")
    )
    assert flags(elsewhere) == {}


def test_filters_of_one_period_agree() -> None:
    task = two_periods(clean())
    task["turns"][0]["steps"][0]["arguments"]["end_date"] = "2026-06-28"
    assert flags(task) == {}  # June, and days in June: redundant, not contradictory
    del task["turns"][0]["steps"][0]["arguments"]["month"]
    assert flags(task) == {}


def test_an_id_a_write_changed_earlier_is_not_judged_on_the_initial_state() -> None:
    """rmdir's source wants an empty folder: one an earlier ``move_matching`` emptied is
    not known to be empty from the initial state, so it is not flagged."""
    folder = "/home/ronnie/Documents/Recipes"
    empty = step(
        "s1", "move_matching", pattern="*", destination="/home/ronnie/Desktop", path=folder
    )
    rmdir = step("s2", "rmdir", ("s1",), path=folder)
    assert "misfit_identifier" not in flags(one_turn("filesystem", empty, rmdir, seed=0))
    assert "misfit_identifier" in flags(one_turn("filesystem", rmdir, seed=0))
    text = step("s1", "cat", path="/home/ronnie/Desktop/ideas.md")
    assert flags(one_turn("filesystem", text, seed=0)) == {}


def test_one_member_in_two_roles_is_one_persona() -> None:
    """Selling and then buying as the same member is one person; an account of another
    customer than the one who logged in is a second (its owner read from the initial state)."""
    task = two_members(clean())
    task["turns"][1]["steps"][0]["arguments"]["seller_id"] = "usr_021"
    assert "second_persona" not in flags(task)


def test_an_update_that_moves_a_row_to_the_reference_it_has_is_a_noop() -> None:
    """calendar-2026-00013: "Change the location of the same event to Zoom. Use the calendar
    cal_01.", ``update_event`` with ``calendar_id="cal_01"`` of an event already in cal_01
    (read from the initial state at the task's seed and size, or from the creation)."""
    move = step("s1", "update_event", event_id="evt_0004", location="Zoom", calendar_id="cal_01")
    (found,) = flags(one_turn("calendar", move, seed=0))["noop_update"]
    assert found.endswith('calendar_id is already "cal_01"')
    other = {**move, "arguments": {**move["arguments"], "calendar_id": "cal_02"}}
    assert flags(one_turn("calendar", other, seed=0)) == {}
    made = add_steps(clean(), 1, step("s3", "update_event", ("s1",), event_id="evt_0301",
                                      calendar_id="cal_01"))  # fmt: skip
    (found,) = flags(made)["noop_update"]
    assert found.endswith('calendar_id is already "cal_01"')
    # who acts is no new value: set_default_address names the customer whose address it is
    own = step("s1", "set_default_address", customer_id="cus_001", address_id="adr_0001")
    assert "noop_update" not in flags(one_turn("shopping", own, seed=0))


def test_a_field_made_and_changed_in_one_task_is_moot() -> None:
    """travel_booking-2026-00012: create_traveller with passport LG3376736, then "update
    the passport of the new traveller to XH6460534": the creation's value was wasted; so it
    is with a call between that uses the traveller (travel_booking-2028: a trip made for
    them, then "the same traveller renewed their passport"). An update of a traveller of the
    initial state is fine."""
    made = step("s1", "create_traveller", first_name="Ana", last_name="Lee", email="ana@lee.com",
                date_of_birth="1990-01-02", nationality="ES", passport_number="LG3376736",
                passport_expiry="2031-06-30")  # fmt: skip
    renew = step("s2", "update_passport", ("s1",), traveller_id="trv_0101",
                 passport_number="XH6460534", passport_expiry="2031-06-30")  # fmt: skip
    (found,) = flags(one_turn("travel_booking", made, renew, seed=0))["moot_write"]
    assert (
        found.startswith("create_traveller(")
        and "sets passport_number, then update_passport(" in found
    )
    loyalty = step("s1b", "add_loyalty_number", ("s1",), traveller_id="trv_0101",
                   airline="IB", number="IB123456")  # fmt: skip
    (between,) = flags(one_turn("travel_booking", made, loyalty, renew, seed=0))["moot_write"]
    assert "sets passport_number, then update_passport(" in between
    same = {**renew, "arguments": {**renew["arguments"], "passport_number": "LG3376736",
                                   "passport_expiry": "2033-01-01"}}  # fmt: skip
    assert (
        "sets passport_expiry, then"
        in flags(one_turn("travel_booking", made, same, seed=0))["moot_write"][0]
    )
    existing = {**renew, "depends_on": []}  # a traveller of the initial state: nothing made
    assert "moot_write" not in flags(one_turn("travel_booking", made, existing, seed=0))


def test_a_forward_then_deleting_the_draft_it_made_is_moot() -> None:
    """email (synth/14, seed 2027): forward a message, then delete the draft the forward
    made. The forward leaves a draft behind (it "makes" one), which once exempted it; what
    it made and the task then ends is moot all the same. Deleting another draft is not."""
    forward = step("s1", "forward_message", message_id="msg_00002", to=["ana@example.com"])
    drop = step("s2", "delete_draft", ("s1",), draft_id="drf_0099")
    (found,) = flags(one_turn("email", forward, drop, seed=0))["moot_write"]
    assert found.startswith("forward_message(") and "makes what delete_draft(" in found
    other = {**drop, "depends_on": []}  # a draft of the initial state: nothing made is ended
    assert "moot_write" not in flags(one_turn("email", forward, other, seed=0))


def test_a_reply_to_a_new_message_changes_nothing_of_it() -> None:
    """team_chat: a reply in the thread of a message just posted makes a message of its
    own (its text is the reply's), so the post's text is not changed."""
    post = step("s1", "post_message", channel_id="chan_011", text="Staging is back up.")
    reply = step(
        "s2", "reply_in_thread", ("s1",), message_id="msg_02117", text="I can pick this up."
    )
    assert "moot_write" not in flags(one_turn("team_chat", post, reply, seed=0))


def test_a_lookup_that_finds_one_customer_then_an_order_for_another_is_two_people() -> None:
    """food_delivery-2026-00027: "search for Kirk" finds one customer, then "order what is
    in the cart of cus_0020", another. The lookup is run on the task's initial state: one
    that finds several customers names nobody."""
    session = get_registry().get_server("food_delivery").session(0, 1)
    try:
        one, other = (r["customer_id"] for r in session.list_entities("customer")[3:5])
    finally:
        session.close()
    find = step("s1", "find_customer", query=one)
    order = step("s2", "place_order", customer_id=other, tip=0)
    (found,) = flags(one_turn("food_delivery", find, order, seed=0))["second_persona"]
    assert found == f"2 customers: find_customer finds {one}, place_order(customer_id={other})"
    own = {**order, "arguments": {"customer_id": one, "tip": 0}}
    assert flags(one_turn("food_delivery", find, own, seed=0)) == {}
    several = {**find, "arguments": {"query": "cus_00"}}
    assert flags(one_turn("food_delivery", several, order, seed=0)) == {}


def test_a_url_on_the_merchants_own_site_is_its_own() -> None:
    """The seeded foreign webhook on mer_004's own site (leedsbreadco.com, any service
    host), or in a state that holds no record of the merchant, is not flagged."""
    task = foreign_webhook(clean())
    args = task["turns"][0]["steps"][0]["arguments"]
    args["url"] = "https://hooks.leedsbreadco.com/payments/v2"
    assert flags(task) == {}
    args["url"] = "https://api.bristolbreadco.com/webhooks/v1"
    assert "foreign_value" in flags(task)
    del task["seed"]
    assert flags(task) == {}


def test_a_place_in_that_list_is_counted_in_the_list_not_its_header() -> None:
    """retail_chain's ``list_stores`` shows the employee's own store above the stores it
    found: "the second store from that list" after a search that found one store is no
    store at all, whatever the header holds (a generator before prove_gym.synth/14 said
    it for the employee's own store). The first store is the one found."""

    def task(place: str, store: str) -> Task:
        return {
            "id": "retail-list", "servers": ["retail_chain"], "seed": 529187200, "size": 2,
            "turns": [
                {"user": "Find the Salt Lake City store.",
                 "steps": [step("s1", "list_stores", query="Salt Lake City")]},
                {"user": f"How many products matching 'Mineral' does the {place} store from that list have?",
                 "steps": [step("s2", "get_store_inventory", ("s1",), store_id=store, search="Mineral")]},
            ],
        }  # fmt: skip

    found = flags(task("second", "str_009"))
    assert list(found) == ["list_reference"], found
    assert "that list's second is nothing: gold str_009" in found["list_reference"][0]
    assert flags(task("first", "str_008")) == {}
    assert "list_reference" in flags(task("first", "str_009"))


def test_a_call_whose_ids_the_clarify_turn_says_needs_no_read_before_it() -> None:
    """maps at this seed: lst_016 holds pl_0078. "What's on one of my lists? And will
    pl_0078 be open?" asks for a call the model can make before it asks which list:
    the place is said as it is, and the read of the list changes nothing it needs."""
    ask = "What's on one of my lists? And will {place} be open at 8 pm on Nov 23, 2026?"

    def task(place: str, place_id: str) -> Task:
        return {
            "id": "maps-clarify", "servers": ["maps"], "seed": 676034461, "size": 1,
            "turns": [
                {"user": ask.format(place=place), "kind": "clarify", "missing": ["list_id"], "steps": []},
                {"user": "Use lst_016 for the list.",
                 "steps": [step("s1", "get_list", list_id="lst_016"),
                           step("s2", "check_open_at", ("s1",), place_id=place_id, when="2026-11-23T20:00")]},
            ],
        }  # fmt: skip

    found = flags(task("pl_0078", "pl_0078"))
    assert list(found) == ["clarify_with_independent"], found
    assert 'check_open_at(place_id="pl_0078"' in found["clarify_with_independent"][0]
    assert flags(task("the first place on it", "pl_0078")) == {}


def test_a_listing_called_with_no_id_of_its_kind_is_that_list() -> None:
    """social_media (synth/15, seed 2033): "Show my following list." then "Block the first
    user from that list." list_connections may be given a user whose lists to show; called
    without one it lists the user's own, so it is the one list of users (the lint once
    counted no list, as it did every tool that can take a user). Given a user, it is not."""

    def task(**given: Any) -> Task:
        return {
            "id": "social-list", "servers": ["social_media"], "seed": 785749673, "size": 1,
            "turns": [
                {"user": "Show my following list.",
                 "steps": [step("s1", "list_connections", list_name="following", **given)]},
                {"user": "Block the first user from that list.",
                 "steps": [step("s2", "block_user", ("s1",), user_id="usr_042")]},
            ],
        }  # fmt: skip

    assert flags(task()) == {}
    assert "0 lists" in flags(task(user_id="usr_009"))["list_reference"][0]


def test_a_change_needing_what_the_task_made_through_another_call_is_still_moot() -> None:
    """email-2036-00015: forward msg_00279 (a draft), attach a photo to that draft, then
    change its recipients: the forward's own addressees, changed before anything used
    them. The change needs the forward through the attachment (:func:`_needs`)."""
    fwd = step("s1", "forward_message", message_id="msg_00279", to=["ana@example.com"])
    att = step("s2", "add_attachment", ("s1",), draft_id="drf_0021", filename="a.jpg", size_kb=9)
    upd = step("s3", "update_draft", ("s2",), draft_id="drf_0021", to=["bo@example.com"])
    (found,) = flags(one_turn("email", fwd, att, upd))["moot_write"]
    assert "update_draft(" in found
    alone = step("s3", "update_draft", draft_id="drf_0021", to=["bo@example.com"])
    assert "moot_write" not in flags(one_turn("email", fwd, att, alone))


def test_taking_out_the_cart_line_an_add_just_made_undoes_it() -> None:
    """food_delivery-2036-00021: add an item to a cart, then (asked of a hidden tool)
    "take the new cart line out": the removal takes the line the add returned, which is
    what makes it the add's inverse (the generator drops such a hidden request)."""
    add = step(
        "s1", "add_to_cart", customer_id="cus_0021", item_id="itm_0002", option_ids=["opt_0009"]
    )
    out = step("s2", "remove_from_cart", ("s1",), customer_id="cus_0021", cart_line_id="cl_0035")
    assert flags(one_turn("food_delivery", add, out)).get("inverse_write")
    unrelated = step("s2", "remove_from_cart", customer_id="cus_0021", cart_line_id="cl_0035")
    assert not flags(one_turn("food_delivery", add, unrelated)).get("inverse_write")


def test_stopping_the_engine_then_starting_it_undoes_itself() -> None:
    """vehicle-2038-00012: "stop the engine. Next, turn on the engine." Calls that name
    nothing act on the one thing their server serves: the same target."""
    stop, start = step("s1", "stop_engine"), step("s2", "start_engine")
    (found,) = flags(one_turn("vehicle", stop, start))["inverse_write"]
    assert found == "stop_engine() then start_engine()"
    speed = step("s2", "set_speed", speed_kph=50)
    assert "inverse_write" not in flags(one_turn("vehicle", step("s1", "start_engine"), speed))


def test_a_setting_changed_then_its_entity_deleted_is_moot() -> None:
    """iot_devices-2038-00015: disable aut_015, then delete it. ``set_automation_enabled``
    returns the automation's scene, but a ``set_`` makes nothing that outlives the
    deletion (:data:`CHANGE_ONLY_VERBS`)."""
    off = step("s1", "set_automation_enabled", automation_id="aut_015", enabled=False)
    gone = step("s2", "delete_automation", automation_id="aut_015")
    (found,) = flags(one_turn("iot_devices", off, gone))["moot_write"]
    assert found.startswith("set_automation_enabled(") and "delete_automation(" in found


def test_editing_the_reply_just_posted_is_moot() -> None:
    """team_chat-2038-00041: a reply posted (msg_00948), then "edit msg_00948 so it reads:
    ...": a reply makes a message of the kind it answers (:data:`COPY_VERBS`), whose text
    the user would have written right."""
    reply = step("s1", "reply_in_thread", message_id="msg_00576", text="Done.")
    edit = step("s2", "edit_message", ("s1",), message_id="msg_00948", text="Fixed, thanks.")
    (found,) = flags(one_turn("team_chat", reply, edit))["moot_write"]
    assert "sets text" in found
