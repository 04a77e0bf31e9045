"""The episode engine: the one place a model's calls run, turns advance and the reward is paid."""

from __future__ import annotations

import json
from dataclasses import dataclass

import gymnasium
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from prove_gym import get_registry
from prove_gym.episode import Episode, EpisodeCaps
from prove_gym.eval import OraclePolicy
from prove_gym.formats import HermesFormat
from prove_gym.reward import RewardComponent, RewardConfig, ScoringContext
from prove_gym.task import Task
from prove_gym.workspace import offered_tools

TASKS = {t.id: t for t in get_registry().tasks("calendar")}
hermes = HermesFormat()


def play_oracle(episode: Episode) -> None:
    agent = OraclePolicy().start(episode)
    while not episode.done:
        episode.step(agent.act(episode))


def test_the_oracle_ends_the_episode_terminated_at_the_maximum_reward() -> None:
    task = TASKS["calendar-003"]  # two user turns
    with Episode(task) as episode:
        play_oracle(episode)
    assert episode.terminated and not episode.truncated
    assert episode.breakdown is not None
    assert episode.breakdown.total == episode.breakdown.max_total == RewardConfig().max_raw
    assert episode.breakdown.final_state_hash == task.final_state_hash
    roles = [m["role"] for m in episode.messages]
    assert roles[:2] == ["system", "user"] and roles.count("user") == len(task.turns)
    assert [r.turn for r in episode.trajectory] == [
        i for i, turn in enumerate(task.turns) for _ in turn.steps
    ]


def test_a_message_without_calls_moves_to_the_next_user_turn() -> None:
    task = TASKS["calendar-003"]
    with Episode(task) as episode:
        out = episode.step("Let me think.")
    assert out.observation == task.turns[1].user and not out.done
    assert out.messages == (
        {"role": "assistant", "content": "Let me think."},
        {"role": "user", "content": task.turns[1].user},
    )
    assert episode.user_turn == 1 and out.reward == 0.0 and out.breakdown is None


def test_the_assistant_turn_cap_truncates_and_still_pays() -> None:
    caps = EpisodeCaps(max_assistant_turns=2)
    with Episode(TASKS["calendar-001"], caps=caps) as episode:
        call = hermes.render_calls([{"name": "list_calendars", "arguments": {}}])
        assert not episode.step(call).done
        out = episode.step(call)
    assert out.truncated and not out.terminated and out.breakdown is not None
    assert out.reward == out.breakdown.total < out.breakdown.max_total


def test_the_user_turn_cap_truncates_a_longer_task() -> None:
    with Episode(TASKS["calendar-003"], caps=EpisodeCaps(max_user_turns=1)) as episode:
        out = episode.step("Nothing to do.")
    assert out.truncated and not out.terminated and out.observation == ""


@pytest.mark.parametrize("bad", [0, -1, True, 1.5])
def test_caps_must_be_positive_integers(bad: object) -> None:
    with pytest.raises(ValueError, match="max_assistant_turns"):
        EpisodeCaps(max_assistant_turns=bad)  # type: ignore[arg-type]


def test_an_ended_episode_refuses_more_steps_and_keeps_its_reward() -> None:
    with Episode(TASKS["calendar-001"]) as episode:
        episode.step([{"name": "list_calendars", "arguments": {}}])
        first = episode.end(truncated=True)
        assert episode.truncated and episode.end(truncated=False) is first
        with pytest.raises(RuntimeError, match="over"):
            episode.step("more")
        with pytest.raises(RuntimeError, match="over"):
            episode.call("list_calendars", {})
    assert first.n_calls == 1 and first.total < first.max_total


def test_a_native_call_joins_the_trajectory_without_ending_the_turn() -> None:
    task = TASKS["calendar-001"]
    with Episode(task) as episode:
        for step in task.turns[0].steps:
            assert episode.call(step.name, step.arguments).result.ok
        assert episode.user_turn == 0 and episode.assistant_turns == 0
        breakdown = episode.end(truncated=False)
    assert breakdown.total == breakdown.max_total
    assert [m["role"] for m in episode.messages[2:]] == ["assistant", "tool"] * len(task.steps)


def test_every_action_shape_runs_the_same_call() -> None:
    call = {"name": "get_event", "arguments": {"event_id": "evt_0001"}}
    shapes = [
        hermes.render_calls([call]),
        call,
        [call],
        {"function": {"name": "get_event", "arguments": json.dumps(call["arguments"])}},
        {"role": "assistant", "content": "Looking.", "tool_calls": [{"function": call}]},
    ]
    results = []
    for action in shapes:
        with Episode(TASKS["calendar-001"]) as episode:
            results.append(episode.step(action).observation)
    assert len(set(results)) == 1 and "evt_0001" in results[0]


def test_an_unknown_tool_comes_back_with_the_closest_names() -> None:
    with Episode(TASKS["calendar-001"]) as episode:
        out = episode.step([{"name": "get_events", "arguments": {}}])
    assert "unknown_tool" in out.observation and "Did you mean get_event" in out.observation


def test_repeated_episodes_of_one_task_replay_its_gold_once(monkeypatch) -> None:
    from prove_gym.reward import state

    calls = []
    original = state.gold_turn_replay

    def counting(task, registry=None):
        calls.append(task.id)
        return original(task, registry)

    monkeypatch.setattr(state, "gold_turn_replay", counting)
    task = TASKS["calendar-001"].model_copy(update={"final_state_hash": None, "id": "fresh-1"})
    for _ in range(3):  # three copies with equal content, as an env's reset may make
        with Episode(task.model_copy()) as episode:
            play_oracle(episode)
        assert episode.breakdown is not None and episode.breakdown.components["state"] == 1.0
    assert calls == ["fresh-1"]


# ------------------------------------------------------ consumers translate it
actions = st.lists(
    st.sampled_from(
        [
            "Done.",
            hermes.render_calls([{"name": "list_calendars", "arguments": {}}]),
            hermes.render_calls([{"name": "get_event", "arguments": {"event_id": "evt_0001"}}]),
            hermes.render_calls([{"name": "get_event", "arguments": {"event_id": "evt_9999"}}]),
            hermes.render_calls([{"name": "delete_event", "arguments": {"event_id": "evt_0001"}}]),
            hermes.render_calls([{"name": "teleport", "arguments": {}}]),
            '<tool_call>{"name": "get_event", "arguments": {oops}</tool_call>',
        ]
    ),
    max_size=12,
)


@settings(max_examples=40, deadline=None)
@given(task_id=st.sampled_from(sorted(TASKS)), script=actions)
def test_the_gymnasium_env_is_a_translation_of_the_episode(task_id: str, script: list[str]) -> None:
    task: Task = TASKS[task_id]
    env = gymnasium.make("prove/calendar-v0")
    obs, info = env.reset(options={"task": task})
    with Episode(task) as episode:
        assert obs == episode.observation and info["messages"] == episode.messages
        for action in script:
            out = episode.step(action)
            e_obs, e_reward, term, trunc, e_info = env.step(action)
            assert (e_obs, e_reward, term, trunc) == (
                out.observation,
                out.reward,
                out.terminated,
                out.truncated,
            )
            assert e_info["messages"] == list(out.messages)
            assert e_info["reward_breakdown"] == out.breakdown
            if out.done:
                break
        assert env.unwrapped.state_hash() == episode.state_hash()
    env.close()


@dataclass(frozen=True)
class LongCalls(RewardComponent):
    """Minus the share of calls whose JSON arguments are longer than ``limit`` characters."""

    name: str = "long_calls"
    weight: float = 0.3
    limit: int = 30

    def compute(self, ctx: ScoringContext) -> float:
        long = sum(len(json.dumps(c.arguments)) > self.limit for c in ctx.calls)
        return -long / ctx.n_calls if ctx.calls else 0.0

    def bounds(self, config: RewardConfig) -> tuple[float, float]:
        return (-1.0, 0.0)


def test_a_reward_component_written_here_changes_the_envs_breakdown_and_total() -> None:
    task = TASKS["calendar-001"]
    long_call = {"name": "search_events", "arguments": {"query": "x" * 40}}

    def total(config: RewardConfig | None) -> tuple[float, dict]:
        env = gymnasium.make("prove/calendar-v0", reward=config)
        env.reset(options={"task": task})
        env.step([long_call])
        *_, info = env.step("Done.")
        env.close()
        return info["reward_breakdown"].total, info["reward_breakdown"].components

    plain, components = total(None)
    custom, with_long = total(RewardConfig().with_components(LongCalls()))
    assert "long_calls" not in components and with_long["long_calls"] == -1.0
    assert custom == pytest.approx(plain - 0.3)


@settings(max_examples=30, deadline=None)
@given(
    server=st.sampled_from(sorted(get_registry().servers)),
    index=st.integers(0, 10_000),
    fmt=st.sampled_from(["hermes", "json"]),
    keep=st.integers(1, 6),
    strip=st.booleans(),
)
def test_the_cached_system_message_is_the_one_rendered_for_these_tools(
    server: str, index: int, fmt: str, keep: int, strip: bool
) -> None:
    """The opening system message is cached by format, instructions and tool set: a task
    with other tools, or the same tools under other schema overrides, must get its own."""
    from prove_gym.episode import episode_instructions, opening_messages
    from prove_gym.workspace import offered_openai_tools

    registry = get_registry()
    tasks = registry.tasks(server)
    task = tasks[index % len(tasks)]
    tools = [f"{server}.{t.name}" for t in registry.get_server(server).visible_tools()]
    narrowed = task.model_copy(update={"tools": tools[index % len(tools) :][:keep]})
    if strip:
        first = registry.get_tool(narrowed.tools[0])
        narrowed = narrowed.model_copy(
            update={
                "schema_overrides": {first.qualified_name: {"type": "object", "properties": {}}}
            }
        )
    for variant in (task, narrowed):
        with Episode(variant, format=fmt) as episode:
            expected = opening_messages(
                variant,
                registry.get_format(fmt),
                offered_openai_tools(variant, registry),
                episode_instructions(variant, registry),
            )
            assert episode.messages[:2] == expected


def test_an_override_edited_in_place_gets_its_own_tool_definitions() -> None:
    """The tools are cached by the overrides' content, not by the task's dict: editing
    the dict in place between episodes changes what the next episode offers."""
    registry = get_registry()
    task = registry.tasks("calendar")[0]
    first = next(iter(offered_tools(task, registry).values()))
    overrides = {first.qualified_name: {"type": "object", "properties": {}}}
    variant = task.model_copy(update={"schema_overrides": overrides})
    with Episode(variant) as episode:
        assert episode.tools[0]["function"]["parameters"] == {"type": "object", "properties": {}}
    overrides[first.qualified_name]["properties"]["note"] = {"type": "string"}
    with Episode(variant) as episode:
        assert episode.tools[0]["function"]["parameters"]["properties"] == {
            "note": {"type": "string"}
        }
