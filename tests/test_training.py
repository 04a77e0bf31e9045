"""The data side of `prove train` and the learning benchmark: tools offered, SFT rows, GRPO rows."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from prove_gym import Workspace, get_registry
from prove_gym.env.env import ProveEnv
from prove_gym.training import (
    DeviceChoice,
    StepTime,
    choose_device,
    choose_tools,
    grpo_rows,
    restrict_tools,
    sft_rows,
    step_time_line,
    step_time_summary,
)
from prove_gym.workspace import gold_replay

CALENDAR = get_registry().tasks("calendar")
VISIBLE = [t.name for t in get_registry().get_server("calendar").visible_tools()]


def _gold(task: object) -> set[str]:
    return {s.name for turn in task.turns for s in turn.steps}  # type: ignore[attr-defined]


def test_choose_tools_ranks_every_turns_gold_tools_and_keeps_the_ones_asked_for() -> None:
    tools = choose_tools(CALENDAR, 3, always=["get_current_time"])
    assert tools[0] == "get_current_time" and len(tools) == 3
    counts: dict[str, int] = {}
    for task in CALENDAR:
        for turn in task.turns:
            for step in turn.steps:
                counts[step.name] = counts.get(step.name, 0) + 1
    assert tools[1] == max(counts, key=lambda k: (counts[k], -list(counts).index(k)))


def test_a_tool_set_keeps_the_tasks_it_can_do_whole_and_offers_only_it() -> None:
    tools = ["search_events", "add_invitee", "get_event"]
    kept = restrict_tools(CALENDAR, "calendar", tools)
    assert kept, "some calendar task needs only these tools"
    expected = [t.id for t in CALENDAR if _gold(t) <= set(tools)]
    assert [t.id for t in kept] == expected
    for task in kept:
        assert set(task.tools or []) <= {f"calendar.{n}" for n in tools}
    with pytest.raises(ValueError, match="no tools"):
        restrict_tools(CALENDAR, "calendar", ["no_such_tool"])
    assert restrict_tools(CALENDAR, "banking") == []


@settings(max_examples=25, deadline=None)
@given(index=st.integers(0, len(CALENDAR) - 1), extra=st.integers(0, 20))
def test_extra_tools_offer_the_gold_ones_plus_k_others_and_never_a_hidden_one(
    index: int, extra: int
) -> None:
    task = CALENDAR[index]
    (narrowed,) = restrict_tools([task], "calendar", extra=extra)
    offered = {q.split(".", 1)[1] for q in narrowed.tools or []}
    hidden = (
        set() if task.tools is None else {n for n in VISIBLE if f"calendar.{n}" not in task.tools}
    )
    assert _gold(task) - hidden <= offered
    assert not offered & hidden
    assert len(offered) <= len(_gold(task)) + extra
    if not hidden:
        assert len(offered) == min(len(VISIBLE), len(_gold(task)) + extra)
    # drawn from the task's id: the same every time, and the episode offers exactly these
    assert restrict_tools([task], "calendar", extra=extra)[0].tools == narrowed.tools
    with Workspace(narrowed) as ws:
        assert {t["function"]["name"] for t in ws.openai_tools()} == offered


def test_grpo_rows_carry_the_narrowed_task_and_its_episode_opening() -> None:
    rows = grpo_rows(CALENDAR, "calendar", extra=1)
    assert len(rows) == len(CALENDAR)
    row = rows[0]
    task = json.loads(row["task"])
    assert task["tools"] == restrict_tools(CALENDAR[:1], "calendar", extra=1)[0].tools
    env = ProveEnv("calendar")
    _obs, info = env.reset(options={"task": row["task"]})
    assert row["prompt"] == [
        {"role": "system", "content": info["instructions"]},
        {"role": "user", "content": info["messages"][1]["content"]},
    ]
    assert all(r["environment"] == "calendar" for r in rows)
    assert grpo_rows(CALENDAR, "banking") == []


def test_sft_rows_are_the_gold_conversations_with_live_results() -> None:
    tasks = CALENDAR[:12]
    rows = sft_rows(tasks)
    assert [r["task_id"] for r in rows] == [t.id for t in tasks]  # shipped tasks all pay in full
    for task, row in zip(tasks, rows, strict=True):
        messages = row["messages"]
        assert messages[0]["role"] == "system" and messages[1]["content"] == task.turns[0].user
        assert [m["content"] for m in messages if m["role"] == "user"] == [
            t.user for t in task.turns
        ]
        calls = [
            c["function"]
            for m in messages
            if m["role"] == "assistant"
            for c in m.get("tool_calls", [])
        ]
        gold = [s for turn in task.turns for s in turn.steps]
        assert [(c["name"], c["arguments"]) for c in calls] == [
            (s.name, s.arguments) for s in gold
        ]  # arguments as objects, so a chat template renders them as JSON, not as a string
        results = [m["content"] for m in messages if m["role"] == "tool"]
        with Workspace(task) as ws:  # the results are what the live state answers
            assert results == [ws.call(s.name, s.arguments).result.to_text() for s in gold]
        assert {t["function"]["name"] for t in row["tools"]} >= {s.name for s in gold}
        assert messages[-1]["role"] == "assistant" and not messages[-1].get("tool_calls")


def test_a_task_whose_gold_does_not_pay_in_full_gives_no_sft_row() -> None:
    task = next(t for t in CALENDAR if any(turn.steps for turn in t.turns))
    broken = task.model_copy(update={"id": "broken", "final_state_hash": "0" * 64})
    assert sft_rows([broken]) == []


def test_prove_train_points_openrlhf_users_to_the_gpu_script() -> None:
    exe = Path(sys.executable).with_name("prove")
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "prove_gym"]
    out = subprocess.run([*cmd, "train", "--trainer", "openrlhf"], capture_output=True, text=True)
    assert out.returncode == 2
    assert "examples/openrlhf/train_grpo.sh" in out.stderr


def test_a_task_narrowed_past_its_distractor_servers_still_pays_its_gold_in_full() -> None:
    banking = [f"banking.{t.name}" for t in get_registry().get_server("banking").visible_tools()]
    tasks = []
    for task in CALENDAR[:6]:  # as synthesis writes a distractor task: other servers' tools
        offered = [f"calendar.{n}" for n in VISIBLE] + banking[:4]
        with_distractors = task.model_copy(update={"tools": offered, "final_state_hash": None})
        _records, gold_hash = gold_replay(with_distractors)  # banking's state is in this hash
        tasks.append(with_distractors.model_copy(update={"final_state_hash": gold_hash}))
    narrowed = restrict_tools(tasks, "calendar", extra=1)
    assert all(q.startswith("calendar.") for t in narrowed for q in t.tools or [])
    # sft_rows keeps only tasks whose gold play earns the full reward, state match included
    assert [r["task_id"] for r in sft_rows(narrowed)] == [t.id for t in narrowed]


@settings(max_examples=50, deadline=None)
@given(
    requested=st.sampled_from(["auto", "cuda", "cpu"]),
    cuda=st.booleans(),
    cuda_bf16=st.booleans(),
    cpu_bf16=st.booleans(),
    bf16=st.sampled_from([None, True, False]),
)
def test_the_device_is_cuda_when_present_and_bf16_where_it_computes_in_it(
    requested: str, cuda: bool, cuda_bf16: bool, cpu_bf16: bool, bf16: bool | None
) -> None:
    def choose() -> DeviceChoice:
        return choose_device(
            requested, cuda_available=cuda, cuda_bf16=cuda_bf16, cpu_bf16=cpu_bf16, bf16=bf16
        )

    if requested == "cuda" and not cuda:
        with pytest.raises(ValueError, match="no CUDA device"):
            choose()
        return
    expected = "cuda" if cuda and requested != "cpu" else "cpu"
    supported = cuda_bf16 if expected == "cuda" else cpu_bf16
    if bf16 and not supported:
        with pytest.raises(ValueError, match="bfloat16"):
            choose()
        return
    choice = choose()
    assert choice.device == expected and choice.name == expected
    assert choice.bf16 == (supported if bf16 is None else bf16)
    assert choice.trainer_args() == {"use_cpu": expected == "cpu", "bf16": choice.bf16}


def test_an_unknown_device_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match="auto, cuda, cpu"):
        choose_device("tpu", cuda_available=True, cuda_bf16=True, cpu_bf16=True)


@pytest.mark.trainer
def test_prove_train_refuses_cuda_where_there_is_none() -> None:
    pytest.importorskip("torch")
    pytest.importorskip("trl")
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    proc = subprocess.run(
        [sys.executable, "-m", "prove_gym", "train", "--device", "cuda", "--tasks", "none.jsonl"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 2
    assert "no CUDA device" in proc.stderr and "Traceback" not in proc.stderr


def test_step_times_add_up_and_say_each_parts_share() -> None:
    times = [
        StepTime(step=1, total=10.0, generation=6.0, environment=1.0, optimisation=3.0),
        StepTime(step=2, total=10.0, generation=4.0, environment=3.0, optimisation=3.0),
    ]
    split = step_time_summary(times)
    assert split["seconds"] == 20.0 and split["generation_seconds"] == 10.0
    assert split["environment_share"] == 0.2 and split["optimisation_share"] == 0.3
    line = step_time_line(split)
    assert "generation 10.0 s (50.0%)" in line and "environment 4.0 s (20.0%)" in line
    assert step_time_summary([])["generation_share"] is None
