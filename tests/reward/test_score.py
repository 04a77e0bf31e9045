"""RewardBreakdown: what score() returns, and its round trip through a dict or JSON."""

from __future__ import annotations

import json

import pytest

from prove_gym import Task
from prove_gym.reward import RewardBreakdown, RewardConfig, score

INVITE = Task.from_json(
    {
        "id": "breakdown",
        "servers": ["calendar"],
        "seed": 7,
        "turns": [
            {
                "user": "Find yoga and invite Ana.",
                "steps": [
                    {"id": "s1", "name": "search_events", "arguments": {"query": "yoga"}},
                    {
                        "id": "s2",
                        "name": "add_invitee",
                        "arguments": {"event_id": "evt_0247", "email": "ana@x.com"},
                        "depends_on": ["s1"],
                    },
                ],
            }
        ],
    }
)
ABSTAIN = Task.from_json(
    {"id": "fly", "servers": ["calendar"], "turns": [{"user": "Fly me.", "kind": "abstain"}]}
)
GOLD = [{"name": s.name, "arguments": dict(s.arguments)} for s in INVITE.steps]


@pytest.mark.parametrize(
    ("task", "calls", "kwargs"),
    [
        (INVITE, GOLD, {}),
        (INVITE, GOLD[::-1] + [{"name": "nope", "arguments": []}] * 5, {}),
        (INVITE, GOLD, {"final_state_hash": "abc"}),
        (INVITE, GOLD[:1], {"config": RewardConfig(normalise=True).with_weights(state=0.5)}),
        (ABSTAIN, [], {}),
        (ABSTAIN, GOLD, {"config": RewardConfig(abstain_reward=1.3)}),
    ],
)
def test_a_breakdown_round_trips_through_its_dict_and_json(task, calls, kwargs) -> None:
    b = score(task, calls, **kwargs)
    assert RewardBreakdown.from_dict(b.to_dict()) == b
    assert RewardBreakdown.from_dict(json.loads(json.dumps(b.to_dict()))) == b
    assert list(RewardBreakdown.from_dict(b.to_dict()).components) == list(b.components)
