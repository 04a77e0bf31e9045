"""Rendering: references and omissions stand only where a noun phrase reads as English."""

from __future__ import annotations

import random
import re
from typing import Any

import pytest

import prove_gym
from prove_gym import get_registry
from prove_gym.synth.enums import enum_values
from prove_gym.synth.grounding import DoneStep
from prove_gym.synth.render import (
    SLOT,
    UNITS,
    Renderer,
    _left_out,
    can_leave_out,
    choice_words,
    noun_phrase_slot,
    plural,
    render_value,
    setting,
    spoken_name,
    unreadable_name,
    usable_phrasings,
    without_measure,
    without_prepositional,
    words,
)
from prove_gym.synth.validate import text_residue

SPECS = [
    spec
    for name in sorted(prove_gym.get_registry().servers)
    for spec in prove_gym.get_registry().get_server(name).tools.values()
]


def _fill(phrasing: str, name: str, phrase: str) -> str:
    """Every other slot as a plain literal, ``{name}`` as ``phrase``."""

    def one(m: re.Match[str]) -> str:
        return phrase if m.group(1) == name else f"v{len(m.group(1))}"

    text = SLOT.sub(one, phrasing)
    return text[0].upper() + text[1:] + ("" if text.endswith(("?", ".", "!")) else ".")


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.qualified_name)
def test_wherever_the_renderer_puts_a_reference_the_text_check_passes_it(spec) -> None:
    """The renderer and the checker agree: a reference the renderer writes is never
    rejected as residue, for every slot of every phrasing of every tool."""
    for phrasing in spec.phrasings:
        for name, entity in spec.entity_params.items():
            noun = words(entity.name).split()[-1]
            fitted = noun_phrase_slot(phrasing, name, noun)
            if fitted is None:
                continue
            for ref in (f"the same {noun}", f"the first {noun} in those results"):
                text = _fill(fitted, name, ref)
                assert text_residue(text) is None, (phrasing, text, text_residue(text))
            if can_leave_out(spec, {p.name: 1 for p in spec.params}, name):
                left = noun_phrase_slot(phrasing, name, noun, omission=True)
                if left is not None:
                    text = _fill(left, name, f"one of my {plural(noun)}")
                    assert text_residue(text) is None, (phrasing, text)


@pytest.mark.parametrize(
    ("phrasing", "name", "noun", "expected"),
    [
        ("Where is my order {order_id}?", "order_id", "order", "Where is {order_id}?"),
        (
            "Add flight {flight_id} to trip {itinerary_id}",
            "itinerary_id",
            "itinerary",
            "Add flight {flight_id} to {itinerary_id}",
        ),
        ("Show me project {project_id}", "project_id", "project", "Show me {project_id}"),
        ("Put email {message_id} in the {folder} folder", "message_id", "message", None),
        ("Cancel the ticket {booking_id}", "booking_id", "booking", "Cancel {booking_id}"),
        ("Sell {quantity} {symbol} now", "symbol", "instrument", None),
        ("Record that {email} {response} {event_id}", "event_id", "event", None),
        ("Start following {user_id}", "user_id", "user", None),
        ("Clear {customer_id}'s cart", "customer_id", "customer", "Clear {customer_id}'s cart"),
    ],
)
def test_a_reference_replaces_the_words_that_named_the_value(phrasing, name, noun, expected):
    assert noun_phrase_slot(phrasing, name, noun) == expected


def test_a_value_is_left_out_only_where_some_value_reads() -> None:
    # "a free some duration minutes-minute slot", "Could you some action", "the some
    # position door", "Drive at some speed kph km/h" are no requests
    for phrasing, name in [
        ("Find me a free {duration_minutes}-minute slot on {date}", "duration_minutes"),
        ("Could you {action} all the doors?", "action"),
        ("Open the {position} door", "position"),
        ("Drive at {speed_kph} km/h", "speed_kph"),
        ("Post '{text}'", "text"),
        ("Find the customer {query}", "query"),
        ("Please {action} the car", "action"),
        ("Add {first_name} {last_name} as a contact", "first_name"),
        ("Cap it at {monthly_limit} a month", "monthly_limit"),
        ("I'm customer {customer_id}, my passcode is {passcode}", "passcode"),
        ("Please cancel {order_id}, the reason is {reason}", "reason"),
    ]:
        assert noun_phrase_slot(phrasing, name, labels=False, omission=True) is None
    assert (
        noun_phrase_slot(
            "List my events from {start_date} to {end_date}",
            "start_date",
            labels=False,
            omission=True,
        )
        == "List my events from {start_date} to {end_date}"
    )
    for phrasing in [
        "Clear {customer_id}'s cart",  # not "one of my customers's cart"
        "I'm customer {customer_id}, my passcode is {passcode}",  # not "I'm one of my customers"
        "Post the {customer_id} bill that is due",
    ]:
        assert noun_phrase_slot(phrasing, "customer_id", "customer", omission=True) is None
    assert (
        noun_phrase_slot("Please cancel order {order_id}", "order_id", "order", omission=True)
        == "Please cancel {order_id}"
    )


@pytest.mark.parametrize(
    ("phrasing", "name", "expected"),
    [
        ("Drive at {speed_kph} km/h", "speed_kph", "Drive"),
        ("Change the speed to {speed_kph} km/h", "speed_kph", "Change the speed"),
        (
            "Remind me {minutes_before} minutes before {event_id}",
            "minutes_before",
            "Remind me before {event_id}",
        ),
        (
            "Find me a free {duration_minutes}-minute slot on {date}",
            "duration_minutes",
            "Find me a free slot on {date}",
        ),
        (
            "When am I free for {duration_minutes} minutes on {date}?",
            "duration_minutes",
            "When am I free on {date}?",
        ),
        ("Open blind {blind_id} to {position}%", "position", "Open blind {blind_id}"),
        (
            "Open the {position} window {open_percent} percent",
            "open_percent",
            "Open the {position} window",
        ),
        (
            "Make light {light_id} warmer, {kelvin} K please",
            "kelvin",
            "Make light {light_id} warmer, please",
        ),
        ("Open the {position} door", "position", None),  # no unit: not a measure
        ("Please {action} the car", "action", None),
        ("{limit} minutes", "limit", None),  # nothing of the request would be left
    ],
)
def test_a_measure_left_out_takes_its_unit_and_preposition_with_it(phrasing, name, expected):
    assert without_measure(phrasing, name) == expected


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.qualified_name)
def test_no_omission_leaves_a_unit_a_slot_or_some_value_behind(spec) -> None:
    """Wherever a clarify turn may leave a value that is no identifier out, what it says
    reads: the slot is gone with its unit or its preposition, never "some <value>"; the
    checker passes it. A choice (an enum) is never left out of its slot."""
    props = spec.input_schema().get("properties", {})
    for phrasing in spec.phrasings:
        for name in SLOT.findall(phrasing):
            if name in spec.entity_params:
                continue
            left = _left_out(spec, phrasing, name)
            if left is None:
                continue
            assert "{" + name + "}" not in left, (phrasing, left)
            assert not enum_values(props.get(name, {})), (phrasing, left)
            text = _fill(left, name, "")
            after = phrasing.split("{" + name + "}", 1)[1].split()
            if after and after[0].strip(",.?!").lower() in UNITS:  # gone with its unit
                assert left == without_measure(phrasing, name), (phrasing, text)
            assert text_residue(text) is None, (phrasing, text, text_residue(text))


@pytest.mark.parametrize(
    ("phrasing", "name", "expected"),
    [
        ("When am I free for {minutes} minutes on {date}?", "date", "When am I free for {minutes} minutes?"),
        ("Find flights from {origin} to {destination} on {date}", "destination", "Find flights from {origin} on {date}"),
        ("What's the exchange rate from {from_currency} to {to_currency}?", "to_currency", "What's the exchange rate from {from_currency}?"),
        ("What's the exchange rate from {from_currency} to {to_currency}?", "from_currency", None),  # a range's end
        ("List my events between {start} and {end}", "end", None),
        ("touch {path}", "path", None),  # no preposition to take with it
        ("Create an account for {name}, a {industry} company", "name", None),
        ("Please go to {place}", "place", None),  # nothing of the request would be left
    ],
)  # fmt: skip
def test_a_value_left_out_takes_its_preposition_with_it(phrasing, name, expected) -> None:
    assert without_prepositional(phrasing, name) == expected


@pytest.mark.parametrize(
    ("name", "value", "expected"),
    [
        ("calendar_id", "cal_01", ("calendar", "cal_01")),
        ("duration_minutes", 90, ("duration", "90 minutes")),
        ("speed_kph", 0, ("speed", "0 km/h")),
        ("temperature_c", 21.5, ("temperature", "21.5°C")),
        ("to_currency", "GBP", ("target currency", "GBP")),
        ("check_in", "2026-08-20", ("check-in", "August 20, 2026")),
        ("minutes_before", 60, (None, "60 minutes before")),
        ("move_open_issues_to", "spr_020", (None, "move open issues to spr_020")),
        ("show_hidden", True, (None, "show hidden")),
        ("ignore_case", False, (None, "don't ignore case")),
        ("unread_only", False, (None, "not unread only")),
        ("title", "Design review", ("title", '"Design review"')),
    ],
)
def test_a_value_is_said_with_a_name_a_user_would_say(name, value, expected) -> None:
    """No parameter name that reads as a machine name ("the duration minutes", "the to
    currency") is ever used as a label: its unit goes after the value, or the value and
    the name make a phrase of their own."""
    assert setting(name, value) == expected
    label, _ = setting(name, value)
    assert label is None or not unreadable_name(label.replace(" ", "_"))


def test_no_parameter_of_any_tool_is_labelled_with_a_machine_name() -> None:
    for spec in SPECS:
        for p in spec.params:
            label, phrase = spoken_name(p.name)
            assert label is None or not unreadable_name(label.replace(" ", "_")), p.name
            assert "{}" in phrase, p.name


def test_every_sentence_starts_with_a_capital_unless_it_is_typed_as_written(dataset) -> None:
    """A request that opens with a reference or a choice is capitalised ("That traveller
    renewed ...", "Approve the follow request ..."); only what the user types as it is (a
    shell command a phrasing starts with: "ls -l", "popd"; an identifier) stays lower-case."""
    typed = {
        ph.split()[0]
        for spec in SPECS
        for ph in spec.phrasings
        if ph[:1].islower() and not ph.startswith("{")
    }
    for task in dataset.tasks:
        for turn in task.turns:
            # a word, not an identifier ("cus_0083 wants ...": typed as it is)
            for m in re.finditer(r"(?:^|[.!?] )([a-z][a-z'-]*)(?![\w/])", turn.user):
                assert m.group(1) in typed, (task.server, turn.user)


def test_a_snake_case_choice_is_said_as_words_and_the_checker_takes_them() -> None:
    """Every snake_case enum value of every tool is said as words, and a turn that says them
    states the value for the text check; identifiers are never touched."""
    checked = 0
    for spec in SPECS:
        props = spec.input_schema().get("properties", {})
        for name, prop in props.items():
            for value in enum_values(prop):
                said = choice_words(spec, name, value)
                if "_" in value:
                    checked += 1
                    assert said == value.replace("_", " ") and "_" not in render_value(said)
                    _, phrase = setting(name, value, spec)
                    assert value not in phrase and said in phrase, (name, phrase)
                else:
                    assert said == value
            if name in spec.entity_params:
                assert choice_words(spec, name, "acc_0001") == "acc_0001"
    assert checked > 20


def test_no_value_without_a_slot_is_said_in_a_template_frame() -> None:
    """Every parameter of every tool, said without a slot (a value, or a reference to
    one), reads without the frames the lint flags ("Use 8 as the count", "Set the limit
    to 5", "The author should be usr_077")."""
    from prove_gym.synth.lint import _named, _template_pattern
    from prove_gym.synth.render import Extra, _label, extra_sentence, spoken_name

    registry = get_registry()
    for server in registry.server_names:
        for spec in registry.get_server(server).tools.values():
            frame = _template_pattern(frozenset(n for p in spec.params for n in _named(p.name)))
            if frame is None:
                continue  # a tool without parameters
            for p in spec.params:
                label, said = setting(p.name, 8, spec)
                plain = Extra(p.name, label, said, plain="8", count=8)
                referred = Extra(
                    p.name, spoken_name(p.name)[0] or _label(p.name), "that thing", True
                )
                for extra in (plain, referred):
                    sentence = extra_sentence(spec, extra)
                    assert frame.search(sentence) is None, (spec.qualified_name, sentence)


def _done(qualified: str, links: dict[str, int] | None = None, **args: Any) -> DoneStep:
    tool = get_registry().get_tool(qualified)
    return DoneStep(tool, dict(args), dict(links or {}))


def test_the_user_is_me_never_their_own_id() -> None:
    """team_chat's signed-in person (``Server(me=...)``) adding themself says "me
    (usr_001)"; where "me" cannot stand ("What has usr_001 posted?") the conversation is
    dropped; someone else is named by id."""
    done = [_done("team_chat.add_channel_member", channel_id="chan_004", user_id="usr_001")]
    for seed in range(6):
        renderer = Renderer(random.Random(seed), "complete")
        renderer.me = {"user": "usr_001"}
        text, keep = renderer.phrase(0, done, planned=None)
        assert "me (usr_001)" in text and "usr_001" in keep and not renderer.self_named, text
    other = [_done("team_chat.add_channel_member", channel_id="chan_004", user_id="usr_002")]
    renderer = Renderer(random.Random(0), "complete")
    renderer.me = {"user": "usr_001"}
    assert "me" not in renderer.phrase(0, other, planned=None)[0].split()
    posted = [_done("social_media.get_profile", user_id="usr_001")]
    renderer = Renderer(random.Random(0), "complete")
    renderer.me = {"user": "usr_001"}
    renderer.phrase(0, posted, planned="What has {user_id} posted lately?")
    assert renderer.self_named == ["get_profile.user_id"]


def test_a_login_never_refers_to_who_the_user_is() -> None:
    """ "I'm the same customer" after looking a customer up: nobody learns who they are
    from a lookup, so the conversation is dropped."""
    done = [
        _done("banking.find_customer", query="Bishop"),
        _done("banking.authenticate", {"customer_id": 0}, customer_id="cus_001", passcode="1234"),
    ]
    done[0].produced = {"customer": ["cus_001"]}
    renderer = Renderer(random.Random(0), "complete")
    text, _ = renderer.phrase(1, done, planned=None)
    assert renderer.self_named == ["authenticate.customer_id"], text


def test_a_read_is_not_asked_what_its_lists_filter_already_says() -> None:
    """An invoice from the *paid* invoices is not asked "has it been paid?": another
    phrasing of the read, or no conversation."""
    done = [
        _done("payments.list_invoices", merchant_id="mer_001", status="paid"),
        _done("payments.get_invoice", {"invoice_id": 0}, invoice_id="inv_00001"),
    ]
    done[0].produced = {"invoice": ["inv_00001", "inv_00002"]}
    for seed in range(8):
        renderer = Renderer(random.Random(seed), "complete")
        text, _ = renderer.phrase(1, done, planned="Has invoice {invoice_id} been paid?")
        assert "paid" not in text and not renderer.self_answered, text
    done[0].args["status"] = "overdue"  # its status is known all the same
    for seed in range(8):
        renderer = Renderer(random.Random(seed), "complete")
        text, _ = renderer.phrase(1, done, planned="Has invoice {invoice_id} been paid?")
        assert "paid" not in text and not renderer.self_answered, text
    unfiltered = [_done("payments.list_invoices", merchant_id="mer_001"), done[1]]
    unfiltered[0].produced = done[0].produced
    text, _ = Renderer(random.Random(0), "complete").phrase(
        1, unfiltered, planned="Has invoice {invoice_id} been paid?"
    )
    assert "paid" in text


def test_a_plural_after_a_slot_of_one_is_made_singular() -> None:
    """ "change ord_01480 to 1 shares" (the by-eye read of synth/12) reads "to 1 share";
    other values, references and words that are no plurals stay as they are."""
    from prove_gym.synth.render import _singular_after_one

    phrasing = "Change {order_id} to {quantity} shares at {limit_price}"
    one = {"order_id": "ord_1", "quantity": 1, "limit_price": "9.50"}
    assert _singular_after_one(phrasing, one, {}) == (
        "Change {order_id} to {quantity} share at {limit_price}"
    )
    assert _singular_after_one(phrasing, {**one, "quantity": 4}, {}) == phrasing
    assert _singular_after_one(phrasing, one, {"quantity": "that many"}) == phrasing
    assert _singular_after_one("Book {n} class", {"n": 1}, {}) == "Book {n} class"
    assert _singular_after_one("Take {n} bus", {"n": 1}, {}) == "Take {n} bus"


@pytest.mark.parametrize("seed", range(12))
def test_a_yes_no_question_takes_no_now_or_then_and_an_introduction_no_after_that(
    seed: int,
) -> None:
    """ "Now is rst_001 open right now?" and "I'm customer cus_033, my passcode is 001755.
    After that, block my card" are no way to write: a question goes after "Also," or
    "And", and what follows the user saying who they are starts a sentence of its own."""
    bank = [
        _done("banking.list_beneficiaries", customer_id="cus_001"),
        _done("banking.authenticate", customer_id="cus_001", passcode="001755"),
        _done("banking.block_card", card_id="crd_0051", auth_token="tok_1", reason="lost"),
    ]
    intro_said = {1: "I'm customer {customer_id}, my passcode is {passcode}"}
    text = (
        Renderer(random.Random(seed), "complete")
        .request([0, 1, 2], bank, intro_said, first=True)
        .text
    )
    intro = text.index("I'm customer cus_001")
    assert text[intro - 2 : intro] in (". ", "? "), text  # no connector before it
    after = text[text.index("001755") :]
    assert not re.match(r"001755\. (Then|After that|Next|Once that's done|And then)", after), text
    food = [
        _done("food_delivery.list_couriers", zone="old_town", status="on_delivery"),
        _done("food_delivery.get_restaurant", restaurant_id="rst_001"),
    ]
    planned = {1: "Is {restaurant_id} open right now?"}
    turn = Renderer(random.Random(seed), "complete").request([0, 1], food, planned, first=False)
    assert "Is rst_001 open" not in turn.text or re.search(r"(Also|And) is rst_001", turn.text)
    assert not re.search(r"\b(Now|Then|After that,|Next,|Once that's done,) is\b", turn.text)
    alone = Renderer(random.Random(seed), "complete").request([1], food, planned, first=False)
    assert not alone.text.startswith(("Now is", "Thanks. Now is")), alone.text


def test_a_phrasing_with_no_slot_is_only_for_a_call_no_phrasing_can_state() -> None:
    """Not "How is my budget doing this month? In August 2026.": a call with a value a
    phrasing has a slot for is said by such a phrasing."""
    tool = get_registry().get_tool("budget.list_categories")
    assert all(SLOT.search(p) for p in usable_phrasings(tool, {"month": "2026-08"}))
    assert usable_phrasings(tool, {}) == ["How is my budget doing this month?"]
    trips = get_registry().get_tool("vehicle.get_trip_log")
    assert usable_phrasings(trips, {}) == ["Show my recent trips"]


def test_a_call_no_phrasing_can_state_is_not_asked_as_its_tool_name() -> None:
    """vehicle-2034: "Set climate." for ``set_climate({})`` (each phrasing needs a value),
    banking-2034: "Schedule payment. Use that account.": such a request is no sentence a
    person writes, so the renderer records it and the conversation is dropped."""
    renderer = Renderer(random.Random(0), "complete")
    text, _ = renderer.phrase(0, [_done("vehicle.set_climate")], planned=None)
    assert renderer.unphrased == ["set_climate"], text
    renderer = Renderer(random.Random(0), "complete")
    renderer.phrase(0, [_done("vehicle.set_climate", temperature_c=21.5)], planned=None)
    assert renderer.unphrased == []


def test_a_value_left_out_is_the_users_own_only_where_it_can_be() -> None:
    """food_delivery-2034: "Add one of my menu items ... to the cart" (a customer owns no
    menu item); maps-2034: "for one of my users". A kind the user cannot own is "one of
    the ..."; a single user's calendar stays "one of my calendars"."""
    from prove_gym.synth.render import not_the_users

    registry = get_registry()
    food = not_the_users(registry.get_server("food_delivery"))
    assert "menu_item" in food and "courier" in food and "customer" in food
    assert not_the_users(registry.get_server("calendar")) == frozenset()
    assert "user" in not_the_users(registry.get_server("maps"))
    done = [
        _done(
            "food_delivery.add_to_cart",
            customer_id="cus_0143",
            item_id="itm_0007",
            option_ids=["opt_0009"],
        )
    ]
    spec = done[0].tool
    omit = next(n for n, e in spec.entity_params.items() if e.name == "menu_item")
    renderer = Renderer(random.Random(0), "complete")
    renderer.not_mine = food
    asked = [ph for ph in usable_phrasings(spec, done[0].args) if "{" + omit + "}" in ph]
    assert asked
    for ph in asked:
        text, _ = renderer.phrase(0, done, planned=ph, omit=omit)
        assert "one of the menu items" in text and "my menu" not in text, text


def test_the_person_served_is_said_as_who_it_is_for_not_as_a_filter() -> None:
    """shopping-2034-00045: "Show the returns for order ord_00229. Only for the customer
    cus_083." The customer a support conversation serves is who the request is for."""
    done = [_done("shopping.list_returns", order_id="ord_00229", customer_id="cus_083")]
    said = set()
    for seed in range(8):
        renderer = Renderer(random.Random(seed), "complete")
        renderer.persona = frozenset({"customer"})
        text, _ = renderer.phrase(0, done, planned="Show the returns for order {order_id}")
        said.add(text)
        assert "Only for the customer" not in text and "This is for the customer cus_083" in text
    assert said


def test_after_saying_who_they_are_a_customer_says_my_not_their_id() -> None:
    """banking-2036-00011: "I'm customer cus_012, my passcode is 869813. Which cards does
    cus_012 have?" After a login names the person, their own things are "my" things."""
    login = _done("banking.authenticate", customer_id="cus_012", passcode="869813")
    said = set()
    for seed in range(8):
        cards = _done("banking.list_cards", customer_id="cus_012")
        renderer = Renderer(random.Random(seed), "complete")
        renderer.persona = frozenset({"customer"})
        text, _ = renderer.phrase(1, [login, cards], planned=None)
        said.add(text)
        assert "cus_012" not in text and ({"my", "I"} & set(text.split())), text
    assert len(said) == 2  # both phrasings of list_cards
    other = _done("banking.list_cards", customer_id="cus_013")
    renderer = Renderer(random.Random(0), "complete")
    renderer.persona = frozenset({"customer"})
    assert "cus_013" in renderer.phrase(1, [login, other], planned=None)[0]


def test_nobody_invites_themself() -> None:
    """team_chat-2036-00041: "Invite me (usr_001) to chan_014." The signed-in user adds
    themself; another person is invited or added."""
    me = [_done("team_chat.add_channel_member", channel_id="chan_014", user_id="usr_001")]
    other = [_done("team_chat.add_channel_member", channel_id="chan_014", user_id="usr_002")]
    invited = set()
    for seed in range(10):
        renderer = Renderer(random.Random(seed), "complete")
        renderer.me = {"user": "usr_001"}
        text, _ = renderer.phrase(0, me, planned=None)
        assert not text.startswith("Invite"), text
        invited.add(renderer.phrase(0, other, planned=None)[0].split()[0])
    assert "Invite" in invited


def test_the_user_is_never_the_same_user() -> None:
    """issue_tracker-5-00003: "assign it to me (usr_001) ... Then what is the same user
    working on?" A value that is the user (``Server(me=...)``) is never referred to as
    "the same user": it is "me (usr_001)" where that reads, else the conversation is
    dropped."""
    done = [
        _done("issue_tracker.assign_issue", issue_id="iss_0001", assignee_id="usr_001"),
        _done("issue_tracker.search_issues", {"assignee_id": 0}, assignee_id="usr_001"),
    ]
    for seed in range(6):
        renderer = Renderer(random.Random(seed), "complete")
        renderer.me = {"user": "usr_001"}
        text, _ = renderer.phrase(1, done, planned=None)
        assert "same user" not in text, text
        assert "me (usr_001)" in text or renderer.self_named, text
    renderer = Renderer(random.Random(0), "complete")  # someone else is referred to
    text, _ = renderer.phrase(1, done, planned=None)
    assert "usr_001" not in text, text


@pytest.mark.parametrize("seed", range(3))
def test_nobody_asks_about_themself_by_id(seed: int) -> None:
    """marketplace-2038: "How is seller usr_020 rated? Then cancel my listing lst_0100;
    I'm usr_020." Another member's profile (``Entity(shared=True)``) is never the
    conversation's member, and no read names by id the member the user says they are."""
    from prove_gym.synth import SynthConfig, synthesize
    from prove_gym.synth.render import introduced

    result = synthesize(SynthConfig(servers=("marketplace",), n=120, seed=seed))
    reads = 0
    for task in result.tasks:
        me = introduced([t.user for t in task.turns])
        for step in task.steps:
            who = step.arguments.get("seller_id" if step.name == "get_seller_profile" else "")
            if step.name == "list_sales":
                who = step.arguments.get("user_id")
            if who is not None:
                reads += 1
                assert str(who) not in me, (task.id, [t.user for t in task.turns])
    assert reads > 10


def test_counts_of_items_are_said_pair_by_pair() -> None:
    """retail_chain-2040-00028: "record a sale at store str_010: prd_0013, quantities 2".
    Counts of items read as people say them, one pair at a time."""
    one = [
        _done(
            "retail_chain.record_sale", store_id="str_010", product_ids=["prd_0013"], quantities=[2]
        )
    ]
    two = [
        _done(
            "retail_chain.record_sale",
            store_id="str_010",
            product_ids=["prd_0013", "prd_0001"],
            quantities=[2, 1],
        )
    ]
    planned = "At {store_id}, sell {quantities} of {product_ids}"
    text, keep = Renderer(random.Random(0), "complete").phrase(0, one, planned=planned)
    assert text == "At str_010, sell 2 of prd_0013.", text
    text, keep = Renderer(random.Random(0), "complete").phrase(0, two, planned=planned)
    assert text == "At str_010, sell 2 of prd_0013 and 1 of prd_0001.", text
    assert {"2", "1", "prd_0013", "prd_0001", "str_010"} <= set(keep)


@pytest.mark.parametrize(
    ("tool", "args", "omit", "said"),
    [
        ("vehicle.set_speed", {"speed_kph": 50}, "speed_kph", "Set the speed."),
        ("filesystem.head", {"path": "/etc/hosts"}, "path", "Show me the top of one of my files."),
    ],
)
def test_a_request_with_its_value_left_out_still_reads(
    tool: str, args: dict[str, Any], omit: str, said: str
) -> None:
    """vehicle-2040-00005 "Bring the speed."; filesystem-2040-00044 "head one of my files."."""
    spec = get_registry().get_tool(tool)
    texts = set()
    for phrasing in spec.phrasings:
        text, _ = Renderer(random.Random(0), "complete").phrase(
            0, [_done(tool, **args)], planned=phrasing, omit=omit
        )
        texts.add(text)
        assert text[0].isupper() and not text.startswith(("Bring", "head")), text
    assert said in texts


def test_a_conversation_about_a_customer_never_calls_their_things_mine() -> None:
    """shopping-2040-00045: "Show me one of my orders. ... make adr_0152 the default
    address of cus_099"; food_delivery-2040-00027: "where is my order ord_00615? ... the
    cart of cus_0054". Where the user speaks of the customer (no login names them), the
    customer's things are "one of the orders", "Where is ord_00615?", never "my"."""
    from prove_gym.synth import SynthConfig, synthesize

    result = synthesize(SynthConfig(servers=("shopping", "food_delivery"), n=120, seed=4))
    asked = 0
    for task in result.tasks:
        for turn in task.turns:
            if turn.kind == "clarify" or turn.steps:
                asked += 1
                assert not re.search(r"\bmy\b", turn.user, re.IGNORECASE), (task.id, turn.user)
    assert asked > 100


def test_nobody_reads_about_the_customer_they_then_log_in_as() -> None:
    """banking-2040-00011: "list the standing orders of cus_002. Next, log me in: customer
    cus_002, passcode 318965": the user speaks of themself in the third person, then signs
    in. After a login they are "I" ("Which cards do I have?"); before it, another person."""
    from prove_gym.synth import SynthConfig, synthesize

    result = synthesize(SynthConfig(servers=("banking",), n=120, seed=4))
    registry = get_registry()
    logins = 0
    for task in result.tasks:
        steps = task.steps
        for k, step in enumerate(steps):
            if step.name != "authenticate":
                continue
            logins += 1
            me = step.arguments["customer_id"]
            for before in steps[:k]:
                if not registry.get_tool(f"banking.{before.name}").writes:
                    assert before.arguments.get("customer_id") != me, (task.id, before)
    assert logins > 20


@pytest.mark.parametrize(
    ("phrasing", "start", "end", "expected"),
    [
        ("List my events from {start_date} to {end_date}", "2026-12-11", "2026-12-11",
         "List my events on 11 December 2026."),
        ("What's on my calendar between {start_date} and {end_date}?", "2026-12-11",
         "2026-12-11", "What's on my calendar on 11 December 2026?"),
        ("List my events from {start_date} to {end_date}", "2026-12-11", "2026-12-12",
         "List my events from 11 December 2026 to 12 December 2026."),
    ],
)  # fmt: skip
def test_a_range_of_one_day_is_said_as_that_day(
    phrasing: str, start: str, end: str, expected: str
) -> None:
    """seed-2044 read: "List my events from 11 December 2026 to 11 December 2026". An
    inclusive range whose ends are the same day is said as the day, and the text check
    still finds both ends stated."""
    done = [_done("calendar.list_events", start_date=start, end_date=end)]
    text, keep = Renderer(random.Random(0), "complete").phrase(0, done, planned=phrasing)
    assert text == expected
    assert text_residue(text) == "" or "{" not in text
    assert start in keep or any("December" in k for k in keep), keep


@pytest.mark.parametrize("seed", range(3))
def test_a_member_is_spoken_of_one_way_in_a_conversation(seed: int) -> None:
    """seed-2044 read: "Buy lst_0041 now for usr_017" and then "I'm usr_017; ...". The user
    either is the member ("I'm usr_017") or asks on their behalf ("for buyer usr_017"),
    the same in every request of the conversation."""
    from prove_gym.synth import SynthConfig, synthesize
    from prove_gym.synth.render import introduced

    result = synthesize(SynthConfig(servers=("marketplace",), n=150, seed=seed))
    both = 0
    for task in result.tasks:
        texts = [t.user for t in task.turns]
        for who in introduced(texts):
            behalf = re.compile(r"\b(?:for|as|buyer|seller|user) " + re.escape(who) + r"\b(?!;)")
            if any(behalf.search(t) for t in texts):
                both += 1
                raise AssertionError((task.id, texts))
    assert both == 0
    assert sum(bool(introduced([t.user for t in task.turns])) for task in result.tasks) > 10


_DATE_FORMS = {
    "Month D, YYYY": re.compile(r"\b(?:January|February|March|April|May|June|July|August|"
                                r"September|October|November|December) \d{1,2}, \d{4}"),
    "D Month YYYY": re.compile(r"\b\d{1,2} (?:January|February|March|April|May|June|July|"
                               r"August|September|October|November|December) \d{4}"),
    "Mon D, YYYY": re.compile(r"\b(?:Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sep|Oct|Nov|Dec) \d{1,2}, \d{4}"),
}  # fmt: skip


def test_a_conversation_writes_its_dates_one_way() -> None:
    """seed-2046 read: "What's on my calendar between 20 June 2026 and Jun 21, 2026?". One
    person writes every date of a conversation in one form."""
    from prove_gym.synth import SynthConfig, synthesize

    result = synthesize(SynthConfig(servers=("calendar", "travel_booking"), n=160, seed=9))
    several = 0
    for task in result.tasks:
        text = " ".join(t.user for t in task.turns if t.kind != "abstain")
        forms = {name for name, form in _DATE_FORMS.items() if form.search(text)}
        assert len(forms) <= 1, (task.id, forms, text)
        several += len(_DATE_FORMS["Month D, YYYY"].findall(text)) > 1
    assert several  # some conversations do say more than one date


def test_a_yes_or_no_state_is_said_as_a_state() -> None:
    """seed-2048 read: "set the first automation in those results enabled to yes"."""
    tool = get_registry().get_tool("iot_devices.set_automation_enabled")
    for value, word in ((True, "enabled"), (False, "disabled")):
        for seed in range(4):
            done = [DoneStep(tool, {"automation_id": "aut_001", "enabled": value}, {})]
            text, _ = Renderer(random.Random(seed), "complete").phrase(0, done, planned=None)
            assert text.endswith(f"to {word}.") or text.endswith(f"as {word}."), text
            assert "yes" not in text and "no." not in text, text


def test_seed_2056_text_says_who_once_and_units_with_numbers() -> None:
    """seed-2056 read: "I'm usr_009; rate ...", "I'm usr_009; would the seller ...", "I'm
    usr_009; place a bid ..." in three turns; "Make it 30 long." A user says who they are
    once in a conversation, and a number that is a measure says its unit."""
    from prove_gym.synth import SynthConfig, synthesize

    result = synthesize(SynthConfig(servers=("marketplace", "calendar"), n=200, seed=21))
    for task in result.tasks:
        texts = " ".join(t.user for t in task.turns)
        for who in {m[1] for m in re.finditer(r"\bI(?:'m| am) (usr_\d+)", texts)}:
            assert len(re.findall(r"\bI(?:'m| am) " + who + r"\b", texts)) == 1, (task.id, texts)
        assert not re.search(r"\bMake it \d+ long\b", texts), (task.id, texts)
