"""Hand-computed examples of every reward component, on the real calendar server."""

from __future__ import annotations

import json
import math

import pytest

import prove_gym
from prove_gym import CallRecord, Task, Workspace
from prove_gym.reward import (
    Clarification,
    RewardConfig,
    State,
    abstention,
    align,
    argument_values,
    budget,
    clarification,
    coverage,
    efficiency,
    gold_state_hash,
    score,
    state_match,
    tool_name,
    validity,
    validity_levels,
    values_equal,
)
from prove_gym.reward.schema_check import ObjectCheck, compile_check
from prove_gym.workspace import offered_tools

OK = {"status": "ok"}
PAPER = RewardConfig.preset("paper")
FAILED = {"status": "error", "error": {"kind": "not_found", "message": "no such thing"}}


def make_task(*turns: dict, **extra) -> Task:
    return Task.from_json(
        {"id": "t", "servers": ["calendar"], "seed": 7, "turns": list(turns), **extra}
    )


def step(sid: str, name: str, depends_on: tuple[str, ...] = (), **arguments) -> dict:
    return {"id": sid, "name": name, "arguments": arguments, "depends_on": list(depends_on)}


def call(name: str, turn: int = 0, result: dict = OK, **arguments) -> dict:
    return {"name": name, "arguments": arguments, "result": result, "turn": turn}


INVITE = make_task(
    {
        "user": "Invite Andrew to my next Sprint planning.",
        "steps": [
            step("s1", "search_events", query="Sprint planning", start_date="2026-03-22"),
            step(
                "s2",
                "add_invitee",
                ("s1",),
                event_id="evt_0082",
                email="andrew.ross@blair-torres.com",
            ),
        ],
    }
)


# ------------------------------------------------------------------ validity
def test_validity_levels_follow_the_papers_ladder_with_live_results(run_calls) -> None:
    records, _ = run_calls(
        INVITE,
        [
            ("get_event", {"event_id": "evt_0001"}),  # runs: 3 levels
            ("get_event", {"event_id": "evt_9999"}),  # right structure, not found: 2
            ("get_event", {}),  # right name, required parameter missing: 1
            ("get_event", {"event_id": "evt_0001", "verbose": True}),  # undeclared key: 1
            ("get_event", {"event_id": 12}),  # wrong JSON type: 1
            ("book_flight", {"to": "Berlin"}),  # not offered: 0
        ],
    )
    assert [r.result.ok for r in records] == [True, False, False, False, False, False]
    assert validity_levels(INVITE, records) == [3, 2, 1, 1, 1, 0]
    assert validity(INVITE, records) == pytest.approx(8 / 18)


def test_right_name_wrong_params_is_a_third_and_failed_execution_two_thirds(run_calls) -> None:
    wrong_params, _ = run_calls(INVITE, [("add_invitee", {"event_id": "evt_0082"})])
    failed, _ = run_calls(INVITE, [("add_invitee", {"event_id": "evt_9999", "email": "a@b.com"})])
    assert validity(INVITE, wrong_params) == pytest.approx(1 / 3)
    assert round(validity(INVITE, wrong_params), 2) == 0.33
    assert validity(INVITE, failed) == pytest.approx(2 / 3)
    assert round(validity(INVITE, failed), 2) == 0.67


def test_a_call_that_only_ran_thanks_to_type_coercion_is_not_paid_as_well_formed(run_calls) -> None:
    records, _ = run_calls(
        INVITE, [("add_reminder", {"event_id": "evt_0001", "minutes_before": "15"})]
    )
    assert records[0].result.ok  # the server coerced "15" to 15
    assert validity_levels(INVITE, records) == [1]


def test_execution_level_is_the_recorded_result_not_re_derived() -> None:
    good_args = {"event_id": "evt_0001"}
    assert validity(INVITE, [call("get_event", **good_args)]) == 1.0
    assert validity(INVITE, [call("get_event", result=FAILED, **good_args)]) == pytest.approx(2 / 3)


def test_validity_reads_the_schema_the_task_offered() -> None:
    only_get = make_task(
        {"user": "Show evt_0001.", "steps": [step("s1", "get_event", event_id="evt_0001")]},
        tools=["calendar.get_event"],
        schema_overrides={
            "calendar.get_event": {
                "type": "object",
                "properties": {"event_id": {"type": "string"}},
                "required": [],
            }
        },
    )
    assert validity_levels(only_get, [call("list_calendars")]) == [0]
    assert validity_levels(only_get, [call("get_event", result=FAILED)]) == [2]
    assert validity_levels(INVITE, [call("get_event", result=FAILED)]) == [1]
    ws = Workspace(only_get)
    assert [t["function"]["name"] for t in ws.openai_tools()] == list(offered_tools(only_get))
    assert ws.openai_tools()[0]["function"]["parameters"]["required"] == []
    ws.close()


def test_optional_parameters_may_be_null_and_no_arguments_mean_an_empty_object() -> None:
    levels = validity_levels(
        INVITE,
        [
            call("search_events", query="yoga", start_date=None),
            {"name": "list_calendars", "arguments": None, "result": OK},
            {"name": "get_event", "arguments": ["evt_0001"], "result": OK},
        ],
    )
    assert levels == [3, 3, 1]


def test_json_type_compatibility_follows_json_schema() -> None:
    integer = compile_check({"type": "integer"})
    assert [integer(v) for v in (5, 5.0, 5.5, "5", True, None)] == [
        True,
        True,
        False,
        False,
        False,
        False,
    ]
    number = compile_check({"type": "number"})
    assert [number(v) for v in (5, 5.5, "5.5", False)] == [True, True, False, False]
    nullable = compile_check({"anyOf": [{"type": "string"}, {"type": "null"}]})
    assert nullable(None) and nullable("x") and not nullable(1)
    ref = {"$defs": {"Tag": {"type": "string"}}, "type": "array", "items": {"$ref": "#/$defs/Tag"}}
    assert compile_check(ref)(["a", "b"]) and not compile_check(ref)(["a", 1])
    obj = ObjectCheck.build(
        {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    )
    assert obj.ok({"n": 1, "extra": "allowed when the schema is open"})
    assert not obj.ok({"n": 1.5})


def test_no_calls_earn_no_validity() -> None:
    assert validity(INVITE, []) == 0.0


# ------------------------------------------------------------------ coverage
def test_a_step_counts_only_after_its_prerequisites_were_matched_earlier() -> None:
    chain = make_task(
        {
            "user": "...",
            "steps": [
                step("s1", "search_events", query="yoga"),
                step("s2", "get_event", ("s1",), event_id="evt_0247"),
                step("s3", "add_reminder", ("s2",), event_id="evt_0247", minutes_before=15),
            ],
        }
    )
    s1 = call("search_events", query="yoga")
    s2 = call("get_event", event_id="evt_0247")
    s3 = call("add_reminder", event_id="evt_0247", minutes_before=15)
    assert coverage(chain, [s1, s2, s3]) == 1.0
    # s2 precedes its prerequisite: it is matched but does not count; s3 only needs s2 matched earlier
    a = align(chain, [s2, s1, s3])
    assert a.matched == {0: 1, 1: 0, 2: 2}
    assert sorted(a.counted) == [0, 2]
    assert coverage(chain, [s2, s1, s3]) == pytest.approx(2 / 3)
    assert coverage(chain, [s3, s2, s1]) == pytest.approx(1 / 3)
    assert coverage(chain, [s1, s3]) == pytest.approx(1 / 3)  # s3's prerequisite is never matched


def test_a_match_needs_the_name_and_every_gold_key_but_not_the_values() -> None:
    assert coverage(INVITE, [call("search_events", query="x", start_date="y", limit=3)]) == 0.5
    assert coverage(INVITE, [call("search_events", query="Sprint planning")]) == 0.0
    assert coverage(INVITE, [call("list_events", query="Sprint planning", start_date="y")]) == 0.0


def test_each_call_matches_at_most_one_step_and_each_step_one_call() -> None:
    twice = make_task(
        {
            "user": "...",
            "steps": [
                step("s1", "search_events", query="yoga"),
                step("s2", "search_events", query="dentist"),
            ],
        }
    )
    yoga = call("search_events", query="yoga")
    assert coverage(twice, [yoga]) == 0.5  # one call cannot cover two steps
    assert coverage(twice, [yoga, yoga]) == 1.0  # values are R_arg's business, not coverage's
    assert argument_values(twice, [yoga, yoga]) == 0.5
    once = make_task({"user": "...", "steps": [step("s1", "search_events", query="yoga")]})
    assert align(once, [yoga] * 5).matched == {0: 0}


def test_the_alignment_is_the_best_for_the_model_not_the_first_that_fits() -> None:
    task = make_task(
        {
            "user": "...",
            "steps": [
                step("s1", "search_events", query="yoga"),
                step("s2", "search_events", query="yoga", start_date="2026-03-30"),
            ],
        }
    )
    wide = call("search_events", query="yoga", start_date="2026-03-30")
    narrow = call("search_events", query="yoga")
    # first-fit would give the wide call to s1 and leave s2 unmatched
    assert align(task, [wide, narrow]).matched == {0: 1, 1: 0}
    assert coverage(task, [wide, narrow]) == 1.0


def test_ties_in_coverage_are_broken_by_argument_values() -> None:
    task = make_task(
        {
            "user": "...",
            "steps": [
                step("s1", "search_events", query="yoga"),
                step("s2", "search_events", query="dentist"),
            ],
        }
    )
    calls = [call("search_events", query="dentist"), call("search_events", query="yoga")]
    assert align(task, calls).matched == {0: 1, 1: 0}
    assert argument_values(task, calls) == 1.0


def test_positions_are_global_across_turns(calendar_tasks) -> None:
    task = calendar_tasks["calendar-003"]
    s1, s2, s3 = ((s.name, s.arguments) for s in task.steps)
    in_order = [{"name": n, "arguments": a, "turn": t} for (n, a), t in ((s1, 0), (s2, 0), (s3, 1))]
    assert coverage(task, in_order) == 1.0
    early = [{"name": s3[0], "arguments": s3[1], "turn": 0}, *in_order[:2]]
    assert score(task, early).counted == ("s1", "s2")


# ---------------------------------------------------------------- efficiency
def test_the_papers_budget_beta_half_four_gold_calls_is_six() -> None:
    assert budget(4, 0.5) == 6
    assert budget(4, 0.0) == 4
    assert budget(3, 0.5) == 5
    assert budget(10, 0.7) == 17  # 0.7·10 is 7.000000000000001 in floats
    assert budget(0, 0.5) == 0


def test_efficiency_only_punishes_calls_beyond_the_budget() -> None:
    four = make_task({"user": "...", "steps": [step(f"s{i}", "list_calendars") for i in range(4)]})
    c = call("list_calendars")
    assert [efficiency(four, [c] * n) for n in (0, 4, 6)] == [0.0, 0.0, 0.0]
    assert efficiency(four, [c] * 7) == pytest.approx(-0.5 * 1 / 6)
    assert efficiency(four, [c] * 9) == pytest.approx(-0.25)
    assert efficiency(four, [c] * 18) == pytest.approx(-1.0)  # n = 3B reaches the floor
    assert efficiency(four, [c] * 30) == -1.0
    no_floor = RewardConfig(eff_floor=None)
    assert efficiency(four, [c] * 30, config=no_floor) == pytest.approx(-0.5 * 24 / 6)
    flat = RewardConfig(beta=0.0)
    assert efficiency(four, [c] * 6, config=flat) == pytest.approx(-0.25)


# ----------------------------------------------------------------- tool name
def test_tool_name_is_the_share_of_calls_using_a_gold_tool() -> None:
    calls = [call("list_calendars"), call("search_events", query="x"), call("nope")]
    assert tool_name(INVITE, calls) == pytest.approx(1 / 3)
    assert tool_name(INVITE, calls[1:2] * 4) == 1.0
    assert tool_name(INVITE, []) == 0.0


# ----------------------------------------------------------------- arguments
def test_values_compare_numbers_numerically_and_strings_exactly() -> None:
    assert values_equal(5, 5.0) and values_equal("5", 5) and values_equal(12.5, "12.50")
    assert not values_equal("5", "5.0")  # two strings compare as strings
    assert not values_equal("007", 7)  # an identifier is not a number literal
    assert not values_equal(True, 1) and not values_equal(0, False)
    assert not values_equal(None, "") and values_equal(None, None)
    assert values_equal([1, "a"], [1.0, "a"]) and not values_equal([1, 2], [2, 1])
    assert values_equal({"a": 1}, {"a": 1.0}) and not values_equal({"a": 1}, {"a": 1, "b": 2})
    assert not values_equal("Design Review", "design review")


def test_declared_normalisations_apply_to_both_sides() -> None:
    assert values_equal("Ana@X.com", "ana@x.com", "casefold")
    assert values_equal(" ana ", "ana", "strip") and not values_equal(" ana ", "ana", "casefold")
    assert values_equal("/home//ana/./docs/", "/home/ana/docs", "path")
    assert not values_equal("/home/ana/../docs", "/home/docs", "path")
    assert values_equal(["A@x.com"], ["a@X.com"], "casefold")


def test_argument_values_average_over_aligned_pairs() -> None:
    right = call("search_events", query="Sprint planning", start_date="2026-03-22")
    half = call("add_invitee", event_id="evt_0001", email="Andrew.Ross@Blair-Torres.com")
    assert argument_values(INVITE, [right, half]) == pytest.approx((1 + 0.5) / 2)
    # an out-of-order pair is still aligned, so its values count
    assert argument_values(INVITE, [half, right]) == pytest.approx(0.75)
    assert argument_values(INVITE, [call("list_calendars")]) == 0.0
    no_args = make_task({"user": "...", "steps": [step("s1", "list_calendars")]})
    assert argument_values(no_args, [call("list_calendars")]) == 1.0


# ------------------------------------------------- abstention, clarification
def test_abstention_pays_only_for_making_no_call(calendar_tasks) -> None:
    fly = calendar_tasks["calendar-005"]
    assert abstention(fly, []) == 1.0
    assert abstention(fly, [call("list_calendars")]) == 0.0
    assert abstention(INVITE, []) is None
    assert score(fly, []).total == 1.0
    assert score(fly, [call("list_calendars")]).total == 0.0
    quiet = score(fly, [])
    assert quiet.components["coverage"] is None and quiet.budget == 0
    assert score(fly, [], config=RewardConfig(abstain_reward=1.3)).total == 1.3
    assert score(fly, [call("x")], config=RewardConfig(normalise=True)).total == 0.0


def test_guessing_in_a_clarify_turn_is_penalised_and_earns_no_coverage(calendar_tasks) -> None:
    task = calendar_tasks["calendar-004"]
    assert [t.kind for t in task.turns] == ["clarify", "normal"]
    search = {"query": "dentist", "start_date": "2026-02-12", "end_date": "2026-02-12"}
    guess = [
        call("search_events", 0, **search),
        call("add_reminder", 0, event_id="evt_0102", minutes_before=15),
    ]
    right = [
        call("search_events", 1, **search),
        call("add_reminder", 1, event_id="evt_0102", minutes_before=60),
    ]
    assert clarification(task, right) == 0.0
    assert clarification(task, guess + right) == -1.0
    assert coverage(task, guess) == 0.0
    asked = score(task, right)
    guessed = score(task, guess + right, config=PAPER.with_components(Clarification()))
    assert asked.total == pytest.approx(asked.max_total)
    # 4 calls, budget 3: R_eff = -0.5·1/3; everything else is perfect; clarification costs 0.5
    expected = 0.5 + 0.5 + 0.15 * (-0.5 / 3) + 0.2 + 0.1 - 0.5
    assert guessed.total == pytest.approx(expected)
    assert guessed.matched == {"s1": 2, "s2": 3}
    off = score(task, guess + right, config=PAPER)
    assert off.total == pytest.approx(expected + 0.5)


# --------------------------------------------------------------------- state
def test_gold_replay_reproduces_every_stored_final_state_hash(calendar_tasks) -> None:
    for task in calendar_tasks.values():
        stored = task.final_state_hash
        assert stored, task.id
        assert gold_state_hash(task.model_copy(update={"final_state_hash": None})) == stored


def test_state_matches_only_when_the_writes_are_the_golds(calendar_tasks, run_calls) -> None:
    task = calendar_tasks["calendar-002"]
    gold = [(s.name, s.arguments) for s in task.steps]
    _, full = run_calls(task, gold)
    _, skipped = run_calls(task, gold[:-1])
    assert state_match(task, final_state_hash=full) == 1.0
    assert state_match(task, final_state_hash=skipped) == 0.0
    records, _ = run_calls(task, gold[:-1])
    assert state_match(task, records) == 0.0  # offline: the calls are replayed


def test_state_is_reported_with_weight_zero_and_paid_when_weighted(
    calendar_tasks, run_calls
) -> None:
    task = calendar_tasks["calendar-002"]
    gold = [(s.name, s.arguments) for s in task.steps]
    records, skipped = run_calls(task, gold[:-1])
    unpaid = PAPER.with_components(State(weight=0.0))
    reported = score(task, records, final_state_hash=skipped, config=unpaid)
    assert reported.components["state"] == 0.0 and reported.weights["state"] == 0.0
    assert score(task, records, config=unpaid).components["state"] is None  # nothing replayed
    weighted = score(task, records, config=unpaid.with_weights(state=0.3))
    assert weighted.components["state"] == 0.0  # replayed offline
    assert weighted.max_total == pytest.approx(1.6)
    records, full = run_calls(task, gold)
    assert score(task, records, config=unpaid.with_weights(state=0.3)).total == pytest.approx(1.6)
    assert score(task, records, final_state_hash=full).components["state"] == 1.0


# --------------------------------------------------------------------- total
def test_total_is_the_weighted_sum_of_hand_computed_components(run_calls) -> None:
    records, _ = run_calls(
        INVITE,
        [
            ("list_calendars", {}),
            ("search_events", {"query": "Sprint planning", "start_date": "2026-03-22"}),
            ("add_invitee", {"event_id": "evt_0082", "email": "Andrew.Ross@Blair-Torres.com"}),
            ("add_invitee", {"event_id": "evt_0082", "email": "andrew.ross@blair-torres.com"}),
        ],
    )
    assert [r.result.ok for r in records] == [True, True, True, False]  # already invited
    r = score(INVITE, records, config=PAPER.with_components(Clarification(), State(weight=0.0)))
    assert r.components == {
        "validity": pytest.approx((3 + 3 + 3 + 2) / 12),
        "coverage": 1.0,
        "efficiency": pytest.approx(-0.5 * 1 / 3),
        "tool_name": pytest.approx(3 / 4),
        "arguments": 1.0,
        "abstention": None,
        "clarification": 0.0,
        "state": None,
    }
    expected = 0.5 * 11 / 12 + 0.5 + 0.15 * (-1 / 6) + 0.2 * 0.75 + 0.1
    assert r.total == pytest.approx(expected)
    assert (r.budget, r.n_calls, r.n_gold, r.max_total) == (3, 4, 2, 1.3)
    assert r.matched == {"s1": 1, "s2": 2} and r.counted == ("s1", "s2")
    assert r.call_validity == (3, 3, 3, 2)


def test_a_normal_task_with_no_calls_scores_zero() -> None:
    r = score(INVITE, [])
    assert r.total == 0.0
    assert r.components["validity"] == r.components["tool_name"] == r.components["arguments"] == 0.0


def test_normalising_maps_the_total_affinely_onto_zero_one(run_calls) -> None:
    gold = [call(s.name, **s.arguments) for s in INVITE.steps]
    norm = RewardConfig(normalise=True)
    assert score(INVITE, gold, config=norm).total == 1.0
    noisy = gold + [call("nope")] * 20
    raw = score(INVITE, noisy).total
    lo, hi = RewardConfig().min_raw, RewardConfig().max_raw
    # efficiency floor -1, clarification -1, surplus writes -1 at their weights; state, answers
    assert (lo, hi) == (pytest.approx(-0.15 - 0.5 - 0.3), pytest.approx(3.3))
    assert score(INVITE, noisy, config=norm).total == pytest.approx((raw - lo) / (hi - lo))


def test_offline_dicts_and_live_records_score_the_same(run_calls) -> None:
    records, h = run_calls(INVITE, [(s.name, s.arguments) for s in INVITE.steps])
    as_dicts = [r.to_dict() for r in records]
    assert score(INVITE, records, final_state_hash=h) == score(
        INVITE.to_json(), as_dicts, final_state_hash=h
    )
    assert isinstance(as_dicts[0], dict) and not isinstance(as_dicts[0], CallRecord)


def test_the_paper_preset_holds_the_papers_reward_and_the_config_rejects_nonsense() -> None:
    cfg = RewardConfig.preset("paper")
    assert cfg.weights == {
        "validity": 0.5,
        "coverage": 0.5,
        "efficiency": 0.15,
        "tool_name": 0.2,
        "arguments": 0.1,
    }
    assert (cfg.alpha, cfg.beta, cfg.eff_floor) == (0.5, 0.5, None)
    assert not cfg.match_entity_ids and not cfg.default_keys_optional
    assert math.isclose(cfg.max_raw, 1.3)
    assert RewardConfig().weights == {
        **cfg.weights,
        "clarification": 0.5,
        "state": 1.0,
        "answers": 1.0,
        "surplus_writes": 0.3,
    }
    with pytest.raises(ValueError, match="coverage"):
        cfg.with_weights(coverage=-1)
    with pytest.raises(ValueError, match="eff_floor"):
        RewardConfig(eff_floor=0.5)
    with pytest.raises(AttributeError):
        cfg.alpha = 1.0  # type: ignore[misc]


def test_the_public_surface_exports_the_reward() -> None:
    assert prove_gym.score is score
    assert {"score", "RewardConfig", "RewardBreakdown"} <= set(prove_gym.__all__)


def test_padding_with_valid_calls_pays_under_the_papers_averages_unless_credit_is_capped() -> None:
    search = call("search_events", query="Sprint planning", start_date="2026-03-22")
    sloppy = [search, call("add_invitee", event_id="evt_0082"), call("book_flight", to="Berlin")]
    padded = sloppy + [search] * 3
    assert score(INVITE, sloppy).budget == len(sloppy)
    # R_val 4/9 -> 13/18 and R_name 2/3 -> 5/6 outweigh R_eff 0 -> -0.5
    gain = 0.5 * (13 / 18 - 4 / 9) + 0.2 * (5 / 6 - 2 / 3) + 0.15 * -0.5
    assert score(INVITE, padded).total - score(INVITE, sloppy).total == pytest.approx(gain)
    assert gain > 0
    capped = RewardConfig(credit_within_budget=True)
    r = score(INVITE, padded, config=capped)
    assert r.components["validity"] == pytest.approx(4 / 18)
    assert r.components["tool_name"] == pytest.approx(2 / 6)
    assert r.total < score(INVITE, sloppy, config=capped).total


def test_offline_arguments_given_as_json_text_are_decoded() -> None:
    as_text = [
        {"name": s.name, "arguments": json.dumps(s.arguments), "result": OK} for s in INVITE.steps
    ]
    assert score(INVITE, as_text, config=PAPER).total == pytest.approx(1.3)
    garbled = [{"name": "search_events", "arguments": "{not json", "result": OK}]
    assert validity_levels(INVITE, garbled) == [1]
