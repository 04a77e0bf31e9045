"""Grounding: every identifier a gold call uses exists in the initial state or came from an
earlier call's result; credentials only ever come from a result or the user's own words."""

from __future__ import annotations

import functools
import json
import re

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import prove_gym
from prove_gym import Task, Workspace
from prove_gym.synth import SynthConfig, SynthResult, synthesize
from prove_gym.synth.chains import is_secret_kind, is_secret_param
from prove_gym.synth.grounding import _names, coerce, extract_ids, message_hints, plural_names


@functools.lru_cache(maxsize=64)
def initial_entities(server_name: str, seed: int, size: int | None) -> dict[str, frozenset[str]]:
    """Identifiers of every kind listed by the server's entity sources in the initial state."""
    server = prove_gym.get_server(server_name)
    with server.session(seed, size) as fresh:
        return {
            kind: frozenset(str(r[source.key]) for r in fresh.list_entities(kind))
            for kind, source in server.entities.items()
        }


def entity_violations(task: Task) -> list[str]:
    """Entity arguments of gold steps that neither exist initially nor appeared in an earlier result."""
    registry = prove_gym.get_registry()
    server = registry.get_server(task.server)
    existing = initial_entities(task.server, task.seed, task.size)
    bad = []
    seen_results = ""
    with Workspace(task, registry) as ws:
        for i, turn in enumerate(task.turns):
            for step in turn.steps:
                spec = server.tools[step.name]
                for name, entity in spec.entity_params.items():
                    if name not in step.arguments:
                        continue
                    value = step.arguments[name]
                    for v in value if isinstance(value, list) else [value]:
                        if (
                            str(v) not in existing.get(entity.name, set())
                            and str(v) not in seen_results
                        ):
                            bad.append(f"{task.id}: {step.name}.{name}={v!r}")
                record = ws.call(step.name, step.arguments, turn=i)
                seen_results += json.dumps(record.result.content, ensure_ascii=False)
    return bad


@settings(
    max_examples=2,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    derandomize=True,
)
@given(seed=st.integers(min_value=0, max_value=10_000))
def test_no_gold_call_names_an_identifier_that_does_not_exist(seed: int) -> None:
    servers = len(prove_gym.get_registry().servers)
    config = SynthConfig(n=3 * servers, seed=seed, state_seeds=1, block_states=0, block_size=8)
    result = synthesize(config)
    assert len(result.tasks) == 3 * servers
    violations = [v for task in result.tasks for v in entity_violations(task)]
    assert not violations, violations[:5]


def test_the_shared_dataset_names_only_existing_or_produced_identifiers(
    dataset: SynthResult,
) -> None:
    violations = [v for task in dataset.tasks[::3] for v in entity_violations(task)]
    assert not violations, violations[:5]


def test_credentials_come_from_an_earlier_result_or_the_users_own_words(
    dataset: SynthResult,
) -> None:
    registry = prove_gym.get_registry()
    checked = 0
    for task in dataset.tasks:
        spec_of = registry.get_server(task.server).tools
        said = ""
        outputs = ""
        with Workspace(task, registry) as ws:
            for i, turn in enumerate(task.turns):
                said += turn.user
                for step in turn.steps:
                    spec = spec_of[step.name]
                    for name, value in step.arguments.items():
                        entity = spec.entity_params.get(name)
                        if is_secret_param(name) or (entity and is_secret_kind(entity.name)):
                            checked += 1
                            assert str(value) in said or str(value) in outputs, (task.id, name)
                            if entity is not None:
                                assert str(value) in outputs, "tokens are never drawn from state"
                    outputs += ws.call(step.name, step.arguments, turn=i).result.to_text()
    if "banking" in registry.servers:
        assert checked > 0, "the banking tasks carry passcodes and tokens"


def test_range_bounds_are_drawn_in_order(dataset: SynthResult) -> None:
    day = re.compile(r"^\d{4}-\d{2}-\d{2}")
    for task in dataset.tasks:
        for step in task.steps:
            a, b = step.arguments.get("start_date"), step.arguments.get("end_date")
            if isinstance(a, str) and isinstance(b, str) and day.match(a) and day.match(b):
                assert a <= b, (task.id, step.name, a, b)


def test_identifiers_are_read_from_results_by_their_key_or_its_plural() -> None:
    content = [{"event_id": "evt_1", "nested": {"event_id": "evt_2"}}, {"event_id": "evt_1"}]
    assert extract_ids(content, "event_id") == ["evt_1", "evt_2"]
    assert extract_ids({"customer_id": "c", "accounts": ["a1", "a2"]}, "account_id") == ["a1", "a2"]
    assert extract_ids({"accounts": [{"x": 1}]}, "account_id") == []
    assert plural_names("email") == ("emails",)


def test_values_are_coerced_to_the_schema_type() -> None:
    assert coerce("15", {"type": "integer"}) == 15
    assert coerce(2.0, {"type": "integer"}) == 2.0  # a float is a JSON number an integer accepts
    assert coerce("12.50", {"anyOf": [{"type": "number"}, {"type": "string"}]}) == "12.50"
    assert coerce(7, {"type": "string"}) == "7"
    assert coerce("true", {"type": "boolean"}) is True


def test_error_messages_suggest_arguments_for_the_tools_they_name() -> None:
    registry = prove_gym.get_registry()
    if "vehicle" not in registry.servers:
        return
    shift = registry.get_tool("vehicle.shift_gear")
    assert message_hints("Shift with shift_gear (gear='drive') first.", shift) == {"gear": "drive"}
    assert message_hints("Slow down, then shift to park with shift_gear first.", shift) == {
        "gear": "park"
    }
    assert message_hints("Nothing about it here.", shift) == {}


_TOKEN_TEXT = st.text(st.sampled_from(list("ab1_- .'é²\u0301٣")), max_size=12)


@settings(max_examples=300, deadline=None)
@given(message=_TOKEN_TEXT | st.text(max_size=12), value=_TOKEN_TEXT | st.text(max_size=3))
def test_a_value_is_named_as_the_token_regex_finds_it(message: str, value: str) -> None:
    pattern = rf"(?<![\w-]){re.escape(value)}(?![\w-])"
    assert _names(message, value) == bool(re.search(pattern, message))


def test_a_persona_kind_keeps_the_one_in_play() -> None:
    """food_delivery serves one customer at a time (``Server(persona=("customer",))``): a
    customer drawn from the state is the conversation's one, never a second unasked;
    without the declaration each draw is afresh."""
    import random as _random

    from prove_gym.synth.chains import PlannedStep
    from prove_gym.synth.grounding import Grounder, entity_index

    server = prove_gym.get_registry().get_server("food_delivery")
    assert server.persona == ("customer",)
    session = server.session(0, server.default_size)
    customers = [r["customer_id"] for r in session.list_entities("customer")]
    assert len(customers) > 1
    spec = server.tools["view_cart"]
    for seed in range(5):
        grounder = Grounder(session, entity_index(session), _random.Random(seed))
        first = grounder.ground(PlannedStep(spec), [], {})
        assert first.unresolved is None
        context = {"customer_id": first.args["customer_id"]}
        for _ in range(4):
            again = grounder.ground(PlannedStep(spec), [], context)
            assert again.args["customer_id"] == first.args["customer_id"]
    server.persona = ()  # without the declaration, a fresh draw each time
    try:
        grounder = Grounder(session, entity_index(session), _random.Random(0))
        context = {"customer_id": customers[0]}
        drawn = {
            grounder.ground(PlannedStep(spec), [], context).args["customer_id"] for _ in range(8)
        }
        assert len(drawn) > 1
    finally:
        server.persona = ("customer",)


def test_a_persona_that_names_no_entity_kind_is_a_problem() -> None:
    server = prove_gym.get_registry().get_server("food_delivery")
    assert not [p for p in server.problems() if "persona" in p]
    server.persona = ("customers",)  # a typo of "customer"
    try:
        assert (
            "food_delivery: persona names 'customers', which is no entity kind" in server.problems()
        )
    finally:
        server.persona = ("customer",)


def _grounder(server_name: str, seed: int = 0, rng: int = 0):  # type: ignore[no-untyped-def]
    import random as _random

    from prove_gym.synth.grounding import Grounder, entity_index

    server = prove_gym.get_registry().get_server(server_name)
    session = server.session(seed, server.default_size)
    return server, session, Grounder(session, entity_index(session), _random.Random(rng))


def test_a_marketplace_conversation_acts_for_one_member_in_the_role_each_call_gives() -> None:
    """marketplace-2026-00014 bid as usr_021 and then listed "my" racket as usr_040. Once a
    call has acted for a member, every later call does, on listings that fit the role: a
    buy takes another member's listing, a cancellation one of the member's own."""
    from prove_gym.synth.chains import PlannedStep

    server, session, _ = _grounder("marketplace")
    listings = {r["listing_id"]: r for r in session.list_entities("listing")}
    for rng in range(12):
        *_, grounder = _grounder("marketplace", rng=rng)
        bid = grounder.ground(PlannedStep(server.tools["buy_now"]), [], {})
        assert bid.unresolved is None
        me = bid.args["buyer_id"]
        assert listings[bid.args["listing_id"]]["seller_id"] != me  # never their own
        grounder.settle(server.tools["buy_now"], bid.args, bid.records)
        for _ in range(3):
            buy = grounder.ground(PlannedStep(server.tools["make_offer"]), [], {})
            if buy.unresolved is None:
                assert buy.args["buyer_id"] == me
                assert listings[buy.args["listing_id"]]["seller_id"] != me
            cancel = grounder.ground(PlannedStep(server.tools["cancel_listing"]), [], {})
            if cancel.unresolved is None:
                assert cancel.args["seller_id"] == me
                assert listings[cancel.args["listing_id"]]["seller_id"] == me
            profile = grounder.ground(PlannedStep(server.tools["list_sales"]), [], {})
            assert profile.args["user_id"] == me


def test_synthesized_persona_conversations_act_for_one_person() -> None:
    """At seed 2026, 53 marketplace tasks per 100 acted for several members (28 of 50 in
    the 1,000-task run), and some banking, shopping and food_delivery ones for two customers
    (an order of another customer cancelled after one was read)."""
    from prove_gym.synth.lint import Reader, second_persona

    cfg = SynthConfig(servers=("marketplace", "food_delivery"), n=40, seed=2026)
    reader = Reader()
    tasks = synthesize(cfg).tasks
    flagged = [t.id for t in tasks if second_persona(reader.read(json.loads(t.to_json())))]
    assert len(tasks) == 40 and flagged == []


def test_an_update_never_sets_a_field_to_the_value_it_has_now() -> None:
    """email-2026-00045 set the new draft's subject to the subject it already had: the
    current value is read from the live row (a draft the conversation made), not from the
    initial state's records."""
    from prove_gym.synth.chains import PlannedStep
    from prove_gym.synth.grounding import DoneStep

    server, session, _ = _grounder("email")
    spec = server.tools["update_draft"]
    subject = next(iter(spec.examples["subject"]))  # type: ignore[arg-type]
    mailbox = session.list_entities("mailbox")[0]["mailbox_id"]
    create = server.tools["create_draft"]
    args = {"mailbox_id": mailbox, "to": ["ana.garcia@northwind.com"], "subject": subject,
            "body": "Do you have a minute today?"}  # fmt: skip
    made = session.call(create.name, args)
    assert made.ok, made.message
    draft = made.content["draft_id"]
    done = [DoneStep(create, args, {}, made.content, {"draft": [draft]})]
    # a call that used the new draft first: else changing a field the creation set would
    # waste it, and the update takes another draft (moot_write)
    attach = server.tools["add_attachment"]
    used = {"draft_id": draft, "filename": "agenda.pdf", "size_kb": 120}
    attached = session.call(attach.name, used)
    assert attached.ok, attached.message
    done.append(DoneStep(attach, used, {"draft_id": 0}, attached.content, {"draft": [draft]}))
    subjects = set()
    for rng in range(30):
        *_, grounder = _grounder("email", rng=rng)
        grounder.session = session  # the live state, with the new draft
        g = grounder.ground(PlannedStep(spec), done, {}, extra=("subject",))
        assert g.unresolved is None and g.args["draft_id"] == draft
        subjects.add(g.args["subject"])
    assert len(subjects) > 3 and subject not in subjects


def test_a_search_asks_for_one_period_and_a_payee_its_filters_find() -> None:
    """budget-2026-00032 asked for "spending in June 2026. From June 8, 2026. Until Jul 28,
    2026." in a category with "Whole Foods": the month goes when the days leave it, and the
    payee is one a transaction the other filters find was paid to."""
    from prove_gym.synth.chains import PlannedStep

    server, session, _ = _grounder("budget")
    spec = server.tools["search_transactions"]
    wanted = ("month", "start_date", "end_date", "category_id", "query")
    grounded = 0
    for rng in range(25):
        *_, grounder = _grounder("budget", rng=rng)
        g = grounder.ground(PlannedStep(spec, {"category_id"}), [], {}, extra=wanted)
        if g.unresolved is not None:
            continue
        grounded += 1
        days = {v[:7] for k, v in g.args.items() if k in ("start_date", "end_date")}
        assert "month" not in g.args or days <= {g.args["month"]}
        result = session.call(spec.name, g.args)
        assert result.ok and result.content["count"] > 0, g.args
    assert grounded >= 10


def test_text_tools_take_text_files_and_diff_takes_two_that_belong_together() -> None:
    """cat, uniq, wc, head and tail read photos now and then (8 of 36 at seed 2026), and
    filesystem-2026-00007 diffed a project's usage.md against a pip build log."""
    from prove_plugins.filesystem.tools.fitting import is_text_path

    from prove_gym.synth.chains import PlannedStep

    server, _, _ = _grounder("filesystem")
    for name in ("cat", "uniq", "wc", "head", "tail", "sort", "diff"):
        spec = server.tools[name]
        grounded = 0
        for rng in range(15):
            *_, grounder = _grounder("filesystem", rng=rng)
            g = grounder.ground(PlannedStep(spec), [], {})
            if g.unresolved is not None:  # three draws found nothing that fits: dropped
                assert g.unresolved in spec.values, (name, g.unresolved)
                continue
            grounded += 1
            paths = [str(g.args[k]) for k in ("path", "path1", "path2") if k in g.args]
            assert all(is_text_path(p) for p in paths), (name, paths)
            if name == "diff":
                a, b = paths
                assert a != b
                assert a.rsplit("/", 1)[0] == b.rsplit("/", 1)[0] or (
                    a.rsplit(".", 1)[-1] == b.rsplit(".", 1)[-1]
                ), (a, b)
        assert grounded >= 8, name


def test_an_update_never_moves_a_row_to_the_reference_it_has() -> None:
    """calendar-2026-00013 moved an event in cal_01 "to the calendar cal_01": an update's
    identifier that names a column of the row it changes (``update_event``'s
    ``calendar_id``) is never drawn as the row's current value; a persona's id (who acts)
    is not such a reference."""
    from prove_gym.synth.chains import PlannedStep
    from prove_gym.synth.grounding import moves

    server, session, _ = _grounder("calendar")
    spec = server.tools["update_event"]
    assert moves(spec, server) == {"calendar_id"}
    shopping = prove_gym.get_registry().get_server("shopping")
    assert moves(shopping.tools["set_default_address"], shopping) == frozenset()
    events = {r["event_id"]: r for r in session.list_entities("event")}
    drawn = 0
    for rng in range(30):
        *_, grounder = _grounder("calendar", rng=rng)
        g = grounder.ground(PlannedStep(spec), [], {}, extra=("calendar_id",))
        if "calendar_id" in g.args:
            drawn += 1
            assert g.args["calendar_id"] != events[g.args["event_id"]]["calendar_id"]
    assert drawn > 10


def test_an_update_does_not_change_what_a_creation_of_the_task_set() -> None:
    """travel_booking-2026-00012 created a traveller with passport LG3376736 and then
    updated "the passport of the new traveller" to another: an update that would change a
    field the creation set takes another entity, at once and after a call has used the new
    one (travel_booking-2028: a flight booked for them, then "they renewed their
    passport")."""
    from prove_gym.synth.chains import PlannedStep
    from prove_gym.synth.grounding import DoneStep

    server, session, grounder = _grounder("travel_booking")
    create = server.tools["create_traveller"]
    args = {"first_name": "Ana", "last_name": "Lee", "email": "ana@lee.com",
            "date_of_birth": "1990-01-02", "nationality": "ES", "passport_number": "LG3376736",
            "passport_expiry": "2031-06-30"}  # fmt: skip
    made = session.call(create.name, args)
    assert made.ok, made.message
    new = made.content["traveller_id"]
    done = [DoneStep(create, args, {}, made.content, {"traveller": [new]})]
    grounder.session = session
    renew = grounder.ground(PlannedStep(server.tools["update_passport"]), done, {})
    assert renew.unresolved is None and renew.args["traveller_id"] != new
    loyalty = server.tools["add_loyalty_number"]
    used = {"traveller_id": new, "airline": "IB", "number": "IB123456"}
    done.append(DoneStep(loyalty, used, {"traveller_id": 0}, {}, {}))
    again = grounder.ground(PlannedStep(server.tools["update_passport"]), done, {})
    assert again.unresolved is None and again.args["traveller_id"] != new
    # an update of a field the creation did not set may take the new traveller
    add = grounder.ground(PlannedStep(loyalty), done[:1], {})
    assert add.args["traveller_id"] == new


def test_a_lookup_that_finds_one_customer_makes_them_the_conversations() -> None:
    """food_delivery-2026-00027: "search for Kirk" found cus_0063, then the order was placed
    from the cart of cus_0020, a second customer. A persona-kind lookup that finds exactly
    one record makes it the conversation's persona (when none is yet); one that finds
    several leaves it open."""
    from prove_gym.synth.chains import PlannedStep
    from prove_gym.synth.grounding import DoneStep

    server, session, grounder = _grounder("food_delivery")
    find, order = server.tools["find_customer"], server.tools["place_order"]
    customers = session.list_entities("customer")
    one = customers[3]["customer_id"]
    found = session.call(find.name, {"query": one})
    assert found.ok and [c["customer_id"] for c in found.content] == [one]
    produced = grounder.found(find, found.content)[0]
    grounder.settle(find, {"query": one}, [], produced)
    for _ in range(5):
        g = grounder.ground(
            PlannedStep(order), [DoneStep(find, {"query": one}, {}, found.content, produced)], {}
        )
        assert g.args["customer_id"] == one
    many = session.call(find.name, {"query": "cus_00"})
    assert many.ok and len(many.content) > 1
    *_, fresh = _grounder("food_delivery")
    fresh.settle(find, {"query": "cus_00"}, [], fresh.found(find, many.content)[0])
    assert fresh.persona == {}


def test_replacements_searches_copies_and_notes_fit_what_they_go_with() -> None:
    """From the seed-2026 read of synth/13: 'const' re-cased to 'Const' in a .js file and
    '127.0.0.1' written into a contacts list (replace_in_file), a docs folder searched for
    'docs' (find), .git/HEAD copied into a logs folder (cp), and 'Blocked by the payments API
    change.' as the note of a move to in progress (transition_issue)."""
    from prove_plugins.filesystem.tools.fitting import PROSE_TYPES
    from prove_plugins.issue_tracker.tools import NOTES_BY_STATUS

    from prove_gym.synth.chains import PlannedStep

    def hidden(path: str) -> bool:
        return any(p.startswith(".") for p in path.split("/") if p not in ("", ".", ".."))

    seen: dict[str, int] = {}
    for tool in ("replace_in_file", "find", "cp"):
        server, _, _ = _grounder("filesystem")
        spec = server.tools[tool]
        for rng in range(20):
            *_, grounder = _grounder("filesystem", rng=rng)
            g = grounder.ground(PlannedStep(spec), [], {})
            if g.unresolved is not None:
                assert g.unresolved in spec.values, (tool, g.unresolved)
                continue
            seen[tool] = seen.get(tool, 0) + 1
            a = g.args
            if tool == "replace_in_file":
                find, new, path = str(a["find"]), str(a["replace"]), str(a["path"])
                ext = "." + path.rsplit(".", 1)[-1] if "." in path.rsplit("/", 1)[-1] else ""
                if find.isdigit():
                    assert int(new) == int(find) + 1, a
                elif find != "TODO":
                    assert new == find.capitalize() and ext in PROSE_TYPES, a
                    assert not hidden(path), a
            if tool == "find" and "name" in a:
                assert a["name"] != str(a["path"]).rstrip("/").rsplit("/", 1)[-1], a
            if tool == "cp":
                assert not hidden(str(a["source"]).rsplit("/", 1)[0]), a
    assert all(seen.get(t, 0) >= 5 for t in ("replace_in_file", "find", "cp")), seen

    server, _, _ = _grounder("issue_tracker")
    spec = server.tools["transition_issue"]
    noted = 0
    for rng in range(30):
        *_, grounder = _grounder("issue_tracker", rng=rng)
        g = grounder.ground(PlannedStep(spec), [], {}, extra=["comment"])
        if g.unresolved is None and g.args.get("comment") is not None:
            noted += 1
            assert g.args["comment"] in NOTES_BY_STATUS[g.args["to_status"]], g.args
    assert noted >= 3
