"""The data side of `prove train`: which tasks and tools a small CPU run uses."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from prove_gym import get_registry
from prove_gym.env.env import ProveEnv
from prove_gym.training import choose_tools, grpo_rows

CALENDAR = get_registry().tasks("calendar")


def test_choose_tools_ranks_the_first_turns_gold_tools_and_keeps_the_ones_asked_for() -> None:
    tools = choose_tools(CALENDAR, 3, always=["get_current_time"])
    assert tools[0] == "get_current_time" and len(tools) == 3
    counts: dict[str, int] = {}
    for task in CALENDAR:
        for step in task.turns[0].steps:
            counts[step.name] = counts.get(step.name, 0) + 1
    assert tools[1] == max(counts, key=lambda k: (counts[k], -list(counts).index(k)))


def test_grpo_rows_keep_tasks_whose_first_turn_the_tools_can_do() -> None:
    tools = ["search_events", "add_invitee"]
    rows = grpo_rows(CALENDAR, "calendar", tools=tools)
    kept = [json.loads(r["task"]) for r in rows]
    assert kept, "some calendar task needs only search_events and add_invitee"
    for task in kept:
        assert {s["name"] for s in task["turns"][0]["steps"]} <= set(tools)
    row = rows[0]
    env = ProveEnv("calendar")
    _obs, info = env.reset(options={"task": row["task"]})
    assert row["prompt"] == [
        {"role": "system", "content": info["instructions"]},
        {"role": "user", "content": info["messages"][1]["content"]},
    ]
    assert all(r["environment"] == "calendar" for r in rows)
    assert len(grpo_rows(CALENDAR, "calendar")) == len(CALENDAR)
    assert grpo_rows(CALENDAR, "banking") == []


def test_prove_train_points_openrlhf_users_to_the_gpu_script() -> None:
    exe = Path(sys.executable).with_name("prove")
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "prove_gym"]
    out = subprocess.run([*cmd, "train", "--trainer", "openrlhf"], capture_output=True, text=True)
    assert out.returncode == 2
    assert "examples/openrlhf/train_grpo.sh" in out.stderr
