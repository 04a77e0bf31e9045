"""Properties of the reward over generated tasks (random step DAGs over calendar tools) and trajectories."""

from __future__ import annotations

import importlib
import itertools
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from prove_gym import Task
from prove_gym.reward import RewardConfig, align, coverage, efficiency, score
from prove_gym.reward.common import as_records, prepare
from prove_gym.reward.coverage import PAPER_RULES, MatchRules
from prove_gym.reward.values import pair_score

coverage_module = importlib.import_module("prove_gym.reward.coverage")  # `coverage` is a function

SETTINGS = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# A small fixed tool set of the real calendar server: validity is judged against its real schemas.
# Small value pools make collisions (two steps of one tool, repeated values) common.
VALUES: dict[str, list[Any]] = {
    "event_id": ["evt_0001", "evt_0002"],
    "query": ["yoga", "dentist"],
    "email": ["ana@x.com", "Ana@X.com", "bo@y.org"],
    "minutes_before": [15, 60],
    "date": ["2026-03-24"],
    "duration_minutes": [30, 60],
    "start_date": ["2026-03-01"],
}
TOOLS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {  # name: (required, optional)
    "list_calendars": ((), ()),
    "get_event": (("event_id",), ()),
    "search_events": (("query",), ("start_date",)),
    "add_invitee": (("event_id", "email"), ()),
    "add_reminder": (("event_id", "minutes_before"), ()),
    "find_free_slot": (("date", "duration_minutes"), ()),
}


@st.composite
def arguments_for(draw: st.DrawFn, tool: str) -> dict[str, Any]:
    required, optional = TOOLS[tool]
    keys = list(required) + [k for k in optional if draw(st.booleans())]
    return {k: draw(st.sampled_from(VALUES[k])) for k in keys}


@st.composite
def tasks(draw: st.DrawFn, max_steps: int = 6, multi_turn: bool = True) -> Task:
    n = draw(st.integers(1, max_steps))
    steps = []
    for i in range(n):
        tool = draw(st.sampled_from(sorted(TOOLS)))
        deps = [f"s{j}" for j in range(i) if draw(st.integers(0, 2)) == 0]
        steps.append(
            {
                "id": f"s{i}",
                "name": tool,
                "arguments": draw(arguments_for(tool)),
                "depends_on": deps,
            }
        )
    cuts = sorted(draw(st.sets(st.integers(1, n - 1), max_size=2))) if multi_turn and n > 1 else []
    bounds = [0, *cuts, n]
    turns: list[dict[str, Any]] = [
        {"user": f"turn {k}", "steps": steps[a:b]}
        for k, (a, b) in enumerate(itertools.pairwise(bounds))
    ]
    if multi_turn and draw(st.booleans()):
        kind = draw(st.sampled_from(["clarify", "abstain"]))
        turns.insert(draw(st.integers(0, len(turns))), {"user": "ask me", "kind": kind})
    return Task.from_json({"id": "generated", "servers": ["calendar"], "seed": 7, "turns": turns})


def gold_calls(task: Task) -> list[dict[str, Any]]:
    return [
        {"name": s.name, "arguments": dict(s.arguments), "turn": t, "result": {"status": "ok"}}
        for t, turn in enumerate(task.turns)
        for s in turn.steps
    ]


@st.composite
def trajectories(draw: st.DrawFn, task: Task, max_calls: int = 10) -> list[dict[str, Any]]:
    gold = gold_calls(task)
    calls = []
    for _ in range(draw(st.integers(0, max_calls))):
        how = draw(st.sampled_from(["gold", "gold", "mutated", "random", "unknown", "malformed"]))
        if how in ("gold", "mutated"):
            c = dict(draw(st.sampled_from(gold)))
            c["arguments"] = dict(c["arguments"])
            if how == "mutated" and c["arguments"]:
                key = draw(st.sampled_from(sorted(c["arguments"])))
                if draw(st.booleans()):
                    del c["arguments"][key]
                else:
                    c["arguments"][key] = draw(st.sampled_from([*VALUES.get(key, []), "zzz", 7]))
        elif how == "random":
            tool = draw(st.sampled_from(sorted(TOOLS)))
            c = {"name": tool, "arguments": draw(arguments_for(tool))}
        elif how == "unknown":
            c = {"name": "book_flight", "arguments": {"to": "Berlin"}}
        else:
            c = {"name": draw(st.sampled_from(sorted(TOOLS))), "arguments": ["not", "an", "object"]}
        c["turn"] = draw(st.integers(0, len(task.turns) - 1))
        c["result"] = {"status": "ok"} if draw(st.booleans()) else {"status": "error"}
        calls.append(c)
    return calls


@st.composite
def task_and_trajectory(draw: st.DrawFn, **kwargs: Any) -> tuple[Task, list[dict[str, Any]]]:
    task = draw(tasks(**kwargs))
    return task, draw(trajectories(task))


# ------------------------------------------------------------------ properties
@SETTINGS
@given(tasks())
def test_the_gold_trajectory_gets_the_maximum(task: Task) -> None:
    r = score(task, gold_calls(task))
    assert r.total == pytest.approx(r.max_total) and r.max_total <= 3.3 + 1e-9
    assert score(task, gold_calls(task), config="paper").total == pytest.approx(1.3)
    c = r.components
    assert (c["validity"], c["coverage"], c["tool_name"], c["arguments"]) == (1.0, 1.0, 1.0, 1.0)
    assert c["efficiency"] == 0.0 and c["clarification"] == 0.0
    assert set(r.matched) == {s.id for s in task.steps}


@SETTINGS
@given(task_and_trajectory())
def test_every_component_stays_in_its_range(case: tuple[Task, list[dict[str, Any]]]) -> None:
    task, calls = case
    cfg = RewardConfig()
    r = score(task, calls, config=cfg)
    c = r.components
    for name in ("validity", "coverage", "tool_name", "arguments"):
        assert c[name] is not None and 0.0 <= c[name] <= 1.0, name
    assert c["efficiency"] is not None and -1.0 <= c["efficiency"] <= 0.0
    assert -1.0 <= c["clarification"] <= 0.0
    assert cfg.min_raw - 1e-9 <= r.total <= r.max_total + 1e-9
    assert all(0 <= lvl <= 3 for lvl in r.call_validity) and len(r.call_validity) == len(calls)
    normalised = score(task, calls, config=RewardConfig(normalise=True)).total
    assert 0.0 <= normalised <= 1.0


@SETTINGS
@given(task_and_trajectory(), st.data())
def test_removing_a_call_never_raises_coverage(case: tuple, data: st.DataObject) -> None:
    task, calls = case
    if not calls:
        return
    k = data.draw(st.integers(0, len(calls) - 1))
    assert coverage(task, calls[:k] + calls[k + 1 :]) <= coverage(task, calls)


@SETTINGS
@given(tasks(), st.data())
def test_calls_beyond_the_budget_never_raise_the_total(task: Task, data: st.DataObject) -> None:
    gold = gold_calls(task)
    best = score(task, gold)
    extras = data.draw(trajectories(task, max_calls=8))
    guarded = RewardConfig(credit_within_budget=True)
    previous = best.total
    for k in range(1, len(extras) + 1):
        calls = gold + extras[:k]
        r = score(task, calls)
        assert r.total <= best.total + 1e-12
        if len(calls) > best.budget:
            assert r.total < best.total
        now = score(task, calls, config=guarded).total
        if len(calls) > best.budget:  # past the budget, with credit capped: never up
            assert now <= previous + 1e-12
        previous = now


@SETTINGS
@given(task_and_trajectory(), st.data())
def test_with_credit_capped_a_call_past_the_budget_raises_no_validity_name_or_efficiency(
    case: tuple, data: st.DataObject
) -> None:
    task, calls = case
    cfg = RewardConfig(credit_within_budget=True)
    before = score(task, calls, config=cfg)
    if len(calls) < before.budget:
        return
    extra = data.draw(trajectories(task, max_calls=1).filter(bool))[0]
    after = score(task, [*calls, extra], config=cfg)
    for name in ("validity", "tool_name", "efficiency"):
        assert after.components[name] <= before.components[name] + 1e-12, name


@SETTINGS
@given(task_and_trajectory())
def test_efficiency_never_rises_with_more_calls(case: tuple) -> None:
    task, calls = case
    values = [efficiency(task, calls[:k]) for k in range(len(calls) + 1)]
    assert all(b <= a for a, b in itertools.pairwise(values))


@SETTINGS
@given(task_and_trajectory())
def test_a_counted_step_had_every_prerequisite_matched_earlier(case: tuple) -> None:
    task, calls = case
    r = score(task, calls)
    deps = {s.id: s.depends_on for s in task.steps}
    for sid in r.counted:
        assert all(d in r.matched and r.matched[d] < r.matched[sid] for d in deps[sid])
    no_call_turns = {i for i, t in enumerate(task.turns) if t.kind != "normal"}
    assert all(calls[i]["turn"] not in no_call_turns for i in r.matched.values())


@SETTINGS
@given(tasks(multi_turn=False), st.data())
def test_a_call_placed_before_its_prerequisite_does_not_count(
    task: Task, data: st.DataObject
) -> None:
    dependent = [i for i, s in enumerate(task.steps) if s.depends_on]
    if not dependent:
        return
    g = data.draw(st.sampled_from(dependent))
    calls = gold_calls(task)
    moved = calls.pop(g)
    calls.insert(0, moved)
    r = score(task, calls)
    gid = task.steps[g].id
    assert not (gid in r.counted and r.matched[gid] == 0)
    assert r.components["coverage"] < 1.0 or any(
        other.name == moved["name"] and set(other.arguments) <= set(moved["arguments"])
        for other in task.steps
        if other.id != gid
    )


@st.composite
def topological_order(draw: st.DrawFn, task: Task) -> list[int]:
    steps = task.steps
    index = {s.id: i for i, s in enumerate(steps)}
    remaining = list(range(len(steps)))
    order: list[int] = []
    while remaining:
        ready = [i for i in remaining if all(index[d] in order for d in steps[i].depends_on)]
        pick = draw(st.sampled_from(ready))
        order.append(pick)
        remaining.remove(pick)
    return order


@SETTINGS
@given(tasks(multi_turn=False), st.data())
def test_permuting_independent_gold_steps_does_not_change_coverage(
    task: Task, data: st.DataObject
) -> None:
    order = data.draw(topological_order(task))
    steps = [task.steps[i].model_dump() for i in order]
    permuted = Task.from_json(
        {**task.model_dump(), "turns": [{**task.turns[0].model_dump(), "steps": steps}]}
    )
    calls = data.draw(trajectories(task))
    # state and answers compare with the gold replay, whose order (the generated steps are
    # independent only on paper: a read after a write sees it) may change: left out
    no_state = RewardConfig().without("state", "answers")
    a, b = score(task, calls, config=no_state), score(permuted, calls, config=no_state)
    assert a.components["coverage"] == b.components["coverage"]
    assert a.total == pytest.approx(b.total)
    assert coverage(task, gold_calls(permuted)) == 1.0


@SETTINGS
@given(task_and_trajectory())
def test_the_score_is_deterministic(case: tuple) -> None:
    task, calls = case
    first = score(task, calls).to_dict()
    assert score(task, calls).to_dict() == first
    assert score(task.model_copy(deep=True), [dict(c) for c in calls]).to_dict() == first


def _brute_force(
    task: Task, calls: list[dict[str, Any]], rules: MatchRules = PAPER_RULES
) -> tuple[int, int, float]:
    """The best (counted, matched, sum of pair scores) over every possible matching."""
    prepared = prepare(task)
    steps = prepared.steps
    records = as_records(calls)

    def fits(c: Any, s: Any) -> bool:
        if s.name != c.name or c.turn in prepared.no_call_turns:
            return False
        if not isinstance(c.arguments, dict | None):
            return False
        args = c.arguments or {}
        return coverage_module._fits(s, args.keys(), args, rules)

    candidates = [[j for j, s in enumerate(steps) if fits(c, s)] for c in records]
    best = (0, 0, 0.0)
    for choice in itertools.product(*[[None, *f] for f in candidates]):
        used = [j for j in choice if j is not None]
        if len(used) != len(set(used)):
            continue
        position = {j: i for i, j in enumerate(choice) if j is not None}
        counted = sum(
            1
            for j, i in position.items()
            if all(
                k in position and position[k] < i
                for k in range(len(steps))
                if steps[j].prereqs >> k & 1
            )
        )
        total = sum(
            pair_score(
                coverage_module._effective(records[i], steps[j], rules),
                steps[j].arguments,
                steps[j].normalise,
            )
            for j, i in position.items()
        )
        best = max(best, (counted, len(position), round(total, 9)))
    return best


def _value(a: Any) -> tuple[int, int, float]:
    return (len(a.counted), len(a.matched), round(sum(a.pair_scores.values()), 9))


@settings(max_examples=150, deadline=None)
@given(task_and_trajectory(max_steps=4))
def test_the_alignment_is_optimal_against_brute_force(case: tuple) -> None:
    task, calls = case
    calls = calls[:6]
    assert _value(align(task, calls)) == _brute_force(task, calls)
    rules = MatchRules()
    assert _value(align(task, calls, rules=rules)) == _brute_force(task, calls, rules)


@settings(max_examples=60, deadline=None)
@given(task_and_trajectory(max_steps=8), st.booleans())
def test_the_polynomial_alignment_equals_the_exact_dynamic_programme(
    case: tuple, paper: bool
) -> None:
    """Larger cases than brute force reaches: the enumeration+assignment path against the
    DP over matched-step sets (exact below MAX_STATES states, which 8 steps never reach)."""
    task, calls = case
    rules = PAPER_RULES if paper else MatchRules()
    fast = align(task, calls, rules=rules)
    original = coverage_module.MAX_ASSIGNMENTS
    coverage_module.MAX_ASSIGNMENTS = 0  # every component takes the DP
    try:
        slow = align(task, calls, rules=rules)
    finally:
        coverage_module.MAX_ASSIGNMENTS = original
    assert _value(fast) == _value(slow)
    assert fast.counted <= set(fast.matched)


def test_many_calls_of_one_tool_align_exactly_and_fast() -> None:
    """k gold steps of one tool after a search, k shuffled calls: one assignment problem."""
    k = 64
    steps = [{"id": "s0", "name": "search_events", "arguments": {"query": "yoga"}}] + [
        {
            "id": f"s{i}",
            "name": "add_invitee",
            "arguments": {"event_id": "evt_0001", "email": f"guest{i}@x.com"},
            "depends_on": ["s0"],
        }
        for i in range(1, k + 1)
    ]
    task = Task.from_json(
        {"id": "many", "servers": ["calendar"], "turns": [{"user": "...", "steps": steps}]}
    )
    calls = gold_calls(task)
    shuffled = [calls[0], *reversed(calls[1:])]
    a = align(task, shuffled)
    assert len(a.counted) == k + 1 and all(v == 1.0 for v in a.pair_scores.values())
    same = [calls[0]] + [calls[1]] * k  # one call repeated: matches k steps, half right each
    b = align(task, same)
    assert len(b.matched) == k + 1 and sum(b.pair_scores.values()) == pytest.approx(
        1 + 1 + k / 2 - 0.5
    )
