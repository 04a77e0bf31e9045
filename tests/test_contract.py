"""Every installed server honours the server contract and the paper's tool counts."""

from __future__ import annotations

import pytest

import prove_gym

# The paper's section 1 (docs/paper.md): the 20 servers of the method and their visible tool counts (343 in all).
PAPER_TOOL_COUNTS = {
    "banking": 17, "trading": 13, "payments": 10, "calendar": 17, "email": 17,
    "filesystem": 40, "shopping": 23, "marketplace": 13, "retail_chain": 11,
    "travel_booking": 20, "maps": 16, "social_media": 15, "team_chat": 11,
    "iot_devices": 25, "vehicle": 20, "crm": 16, "issue_tracker": 20, "budget": 12,
    "food_delivery": 17, "video_meeting": 10,
}  # fmt: skip

SERVERS = sorted(prove_gym.get_registry().servers)


def test_the_paper_table_adds_up_to_343_tools() -> None:
    assert len(PAPER_TOOL_COUNTS) == 20 and sum(PAPER_TOOL_COUNTS.values()) == 343


@pytest.mark.parametrize("name", SERVERS)
def test_server_contract_is_complete(name: str) -> None:
    server = prove_gym.get_server(name)
    assert server.problems() == []
    if name in PAPER_TOOL_COUNTS:
        assert len(server.visible_tools()) == PAPER_TOOL_COUNTS[name]
    for tool in server.visible_tools():
        schema = tool.openai_schema()["function"]
        assert schema["description"], f"{name}.{tool.name} has no description"
        for param in tool.params:
            assert param.description, f"{name}.{tool.name}({param.name}) is undocumented"
        assert set(schema["parameters"]["required"]) == set(tool.required)


@pytest.mark.parametrize("name", SERVERS)
def test_server_ships_hand_written_tasks_of_every_turn_kind(name: str) -> None:
    """Each shipped task itself is played to the maximum and its recorded final state by the
    server's conformance suite (``test_shipped_task``), one test per task."""
    tasks = prove_gym.get_registry().tasks(name)
    assert len(tasks) >= 3
    kinds = {turn.kind for t in tasks for turn in t.turns}
    assert {"normal", "clarify", "abstain"} <= kinds
    assert all(t.final_state_hash for t in tasks if t.steps)
