"""The validated default reward against the paper's preset: each rule that separates them.

Every test runs real calls on the calendar server (a session per task) and scores the
records those calls produced, so outcomes (state hash, read answers) are the live ones.
"""

from __future__ import annotations

from typing import Any

import pytest

from prove_gym import Task, Workspace
from prove_gym.reward import RewardConfig, score

PAPER = RewardConfig.preset("paper")
DEFAULT = RewardConfig()


def task(*steps: dict[str, Any], user: str = "...") -> Task:
    return Task.from_json(
        {
            "id": f"validated-{steps[0]['name']}-{len(steps)}",
            "servers": ["calendar"],
            "seed": 7,
            "turns": [{"user": user, "steps": list(steps)}],
        }
    )


def run(t: Task, calls: list[tuple[str, dict[str, Any]]]) -> tuple[list[Any], str]:
    with Workspace(t) as ws:
        records = [ws.call(name, args) for name, args in calls]
        return records, ws.state_hash()


def gold(t: Task) -> list[tuple[str, dict[str, Any]]]:
    return [(s.name, dict(s.arguments)) for s in t.steps]


INVITE = task(
    {
        "id": "s1",
        "name": "search_events",
        "arguments": {"query": "Sprint planning", "start_date": "2026-03-22"},
    },
    {
        "id": "s2",
        "name": "add_invitee",
        "depends_on": ["s1"],
        "arguments": {"event_id": "evt_0082", "email": "andrew.ross@blair-torres.com"},
    },
)


def test_the_oracle_scores_exactly_the_maximum_under_both() -> None:
    records, final = run(INVITE, gold(INVITE))
    for config in (DEFAULT, PAPER):
        r = score(INVITE, records, final_state_hash=final, config=config)
        assert r.total == r.max_total == config.max_raw
    assert DEFAULT.max_raw == pytest.approx(3.3) and PAPER.max_raw == pytest.approx(1.3)


def test_a_duplicated_write_never_scores_the_maximum_by_default_but_does_under_the_paper() -> None:
    making = task(
        {
            "id": "s1",
            "name": "create_event",
            "arguments": {"calendar_id": "cal_01", "title": "Dentist", "start": "2026-03-03T10:00"},
        }
    )
    records, final = run(making, gold(making) * 2)
    assert all(r.result.ok for r in records)  # two events now: the state is wrong
    paper = score(making, records, final_state_hash=final, config=PAPER)
    assert paper.total == paper.max_total  # the paper's reward: free (the finding)
    r = score(making, records, final_state_hash=final)
    assert r.components["state"] == 0.0 and r.components["surplus_writes"] == -0.5
    assert r.total < r.max_total - 1.0


def test_an_idempotent_repeated_write_still_costs_the_surplus_term() -> None:
    remind = task(
        {
            "id": "s1",
            "name": "set_recurrence",
            "arguments": {"event_id": "evt_0082", "frequency": "weekly", "count": 4},
        }
    )
    records, final = run(remind, gold(remind) * 2)
    r = score(remind, records, final_state_hash=final)
    if r.components["state"] == 1.0:  # the second call changed nothing
        assert r.total == pytest.approx(r.max_total - 0.3 * 0.5)
    assert r.total < r.max_total


def test_a_read_with_a_wrong_value_answers_nothing() -> None:
    wrong = [
        ("search_events", {"query": "Sprint", "start_date": "2026-03-22"}),
        gold(INVITE)[1],
    ]
    records, final = run(INVITE, wrong)
    r = score(INVITE, records, final_state_hash=final)
    assert r.components["answers"] == 0.0 and r.components["state"] == 1.0
    p = score(INVITE, records, final_state_hash=final, config=PAPER)
    assert p.total / p.max_total > 0.97 > r.total / r.max_total  # the paper barely notices


def test_a_wrong_entity_id_matches_no_step_by_default() -> None:
    wrong = [
        gold(INVITE)[0],
        ("add_invitee", {"event_id": "evt_0083", "email": "andrew.ross@blair-torres.com"}),
    ]
    records, final = run(INVITE, wrong)
    r = score(INVITE, records, final_state_hash=final)
    assert r.components["coverage"] == 0.5 and "s2" not in r.matched
    p = score(INVITE, records, final_state_hash=final, config=PAPER)
    assert p.components["coverage"] == 1.0 and p.matched["s2"] == 1


def test_a_gold_key_at_the_tools_default_may_be_left_out() -> None:
    search = task(
        {"id": "s1", "name": "search_events", "arguments": {"query": "yoga", "limit": 10}}
    )  # 10 is the declared default
    records, final = run(search, [("search_events", {"query": "yoga"})])
    r = score(search, records, final_state_hash=final)
    assert r.total == r.max_total and r.components["arguments"] == 1.0
    p = score(search, records, final_state_hash=final, config=PAPER)
    assert p.components["coverage"] == 0.0  # the paper: every gold key must be present
    other = score(search, run(search, [("search_events", {"query": "yoga", "limit": 5})])[0])
    assert other.components["arguments"] == 0.5  # a different value is still wrong


def test_the_paper_preset_reproduces_its_formulas_by_hand() -> None:
    # 2 gold calls, B = 2 + ceil(0.5*2) = 3; 12 calls: 9 past the budget, no floor in the paper
    calls = [gold(INVITE)[0]] * 11 + [gold(INVITE)[1]]
    records, final = run(INVITE, calls)
    r = score(INVITE, records, final_state_hash=final, config=PAPER)
    assert set(r.components) == {
        "validity",
        "coverage",
        "efficiency",
        "tool_name",
        "arguments",
        "abstention",
    }
    assert r.components["efficiency"] == pytest.approx(-0.5 * 9 / 3)  # -1.5: below any floor
    expected = 0.5 * 1.0 + 0.5 * 1.0 + 0.15 * (-1.5) + 0.2 * 1.0 + 0.1 * 1.0
    assert r.total == pytest.approx(expected)
    assert score(INVITE, records, final_state_hash=final).components["efficiency"] == -1.0


def test_presets_by_name_reach_score_and_the_env() -> None:
    import gymnasium

    records, _ = run(INVITE, gold(INVITE))
    assert score(INVITE, records, config="paper") == score(INVITE, records, config=PAPER)
    env = gymnasium.make("prove/calendar-v0", reward="paper")
    assert env.unwrapped.reward_config == PAPER
    env.close()
    with pytest.raises(ValueError, match="known: default, paper"):
        gymnasium.make("prove/calendar-v0", reward="papers")


# ------------------------------------------------------------------ offline
SCHEMAS = [
    {
        "type": "function",
        "function": {
            "name": "get_order",
            "annotations": {"readOnlyHint": True},
            "parameters": {
                "type": "object",
                "properties": {"order_id": {"type": "string"}},
                "required": ["order_id"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "cancel_order",
            "annotations": {"readOnlyHint": False},
            "parameters": {
                "type": "object",
                "properties": {
                    "order_id": {"type": "string"},
                    "reason": {"type": "string", "default": "other"},
                },
                "required": ["order_id"],
            },
        },
    },
]
RETAIL = Task.from_json(
    {
        "id": "retail-1",
        "servers": ["retail"],
        "tool_schemas": SCHEMAS,
        "turns": [
            {
                "user": "Cancel order #W1.",
                "steps": [
                    {"id": "s1", "name": "get_order", "arguments": {"order_id": "#W1"}},
                    {
                        "id": "s2",
                        "name": "cancel_order",
                        "depends_on": ["s1"],
                        "arguments": {"order_id": "#W1", "reason": "other"},
                    },
                ],
            }
        ],
    }
)
OFFLINE = RewardConfig().without("answers")


def test_a_task_of_plain_schemas_scores_with_no_registered_server() -> None:
    calls = [
        {"name": "get_order", "arguments": {"order_id": "#W1"}},
        {"name": "cancel_order", "arguments": {"order_id": "#W1"}},
    ]  # reason: the default
    r = score(RETAIL, calls, config=OFFLINE, state_match=True)
    assert r.total == r.max_total and r.components["state"] == 1.0
    assert r.components["surplus_writes"] == 0.0 and r.call_validity == (3, 3)
    twice = score(RETAIL, [*calls, calls[1]], config=OFFLINE, state_match=lambda: False)
    assert twice.components["surplus_writes"] == pytest.approx(-0.5)
    assert twice.components["state"] == 0.0
    wrong_type = score(
        RETAIL, [{"name": "get_order", "arguments": {"order_id": 1}}], config="paper"
    )
    assert wrong_type.call_validity == (1,)


def test_offline_scoring_says_what_to_pass_when_the_state_cannot_be_replayed() -> None:
    calls = [{"name": "get_order", "arguments": {"order_id": "#W1"}}]
    with pytest.raises(ValueError, match="state_match="):
        score(RETAIL, calls, config=OFFLINE)
    with pytest.raises(ValueError, match="without the answers component"):
        score(RETAIL, calls, state_match=True)
    assert score(RETAIL, calls, config="paper").components["coverage"] == 0.5
