"""The Gymnasium env: API contract on every registered id, the episode flow, bad actions."""

from __future__ import annotations

import json
import subprocess
import sys

import gymnasium
import pytest
from gymnasium.utils.env_checker import check_env

import prove_gym
from prove_gym.eval import OraclePolicy
from prove_gym.formats import HermesFormat

format_hermes_calls = HermesFormat().render_calls

SERVERS = prove_gym.get_registry().servers  # loads every plugin: each registers its ids
ENV_IDS = sorted(i for i in gymnasium.registry if i.startswith("prove/"))


def test_every_installed_server_has_a_registered_env() -> None:
    """Every env id of every server (``-v0`` and the later versions a server declares),
    and nothing else, whichever test module loaded the plugins first."""
    expected = {i for s in SERVERS.values() for i in s.env_ids}
    assert {prove_gym.env_id(n) for n in SERVERS} <= expected
    assert expected == set(ENV_IDS)
    assert "prove/calendar-v0" in ENV_IDS


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_gymnasium_env_checker_passes(env_id: str) -> None:
    env = gymnasium.make(env_id)
    check_env(env.unwrapped)
    env.close()


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_same_seed_gives_same_task_state_and_transcript(env_id: str) -> None:
    def run(seed: int) -> tuple:
        env = gymnasium.make(env_id)
        obs, _info = env.reset(seed=seed)
        task = env.unwrapped.task
        agent = OraclePolicy().start(env.unwrapped.episode)
        transcript = [obs]
        done, reward = False, 0.0
        while not done:
            obs, reward, term, trunc, _ = env.step(agent.act(env.unwrapped.episode))
            transcript.append(obs)
            done = term or trunc
        return task.id, env.unwrapped.state_hash(), transcript, reward

    assert run(123) == run(123)


def test_make_with_module_prefix_imports_prove_gym_itself() -> None:
    code = (
        "import gymnasium, sys\n"
        "assert 'prove_gym' not in sys.modules\n"
        "env = gymnasium.make('prove_gym:prove/calendar-v0')\n"
        "obs, info = env.reset(seed=1)\n"
        "task = env.unwrapped.task\n"
        "print(type(env.unwrapped).__name__, task.servers[0], len(info['tools']) == len(task.tools))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["ProveEnv", "calendar", "True"]


@pytest.fixture
def env():
    env = gymnasium.make("prove/calendar-v0")
    yield env
    env.close()


def _task(env, task_id: str):
    return next(t for t in env.unwrapped.tasks if t.id == task_id)


def test_reset_shows_tools_and_first_user_turn(env) -> None:
    task = _task(env, "calendar-001")
    obs, info = env.reset(seed=0, options={"task": task})
    assert obs.endswith(task.turns[0].user)
    assert "<tools>" in obs and '"name": "create_event"' in obs
    assert [m["role"] for m in info["messages"]] == ["system", "user"]
    assert {t["function"]["name"] for t in info["tools"]} == {
        t.name for t in prove_gym.get_server("calendar").visible_tools()
    }
    assert info["reward_breakdown"] is None


def test_a_task_may_be_given_as_json_text_and_its_seed_overridden(env) -> None:
    task = _task(env, "calendar-001")
    env.reset(options={"task": task.to_json()})
    h_task = env.unwrapped.state_hash()
    env.reset(options={"task": task.model_dump(), "state_seed": task.seed + 1})
    assert env.unwrapped.task.seed == task.seed + 1
    assert env.unwrapped.state_hash() != h_task


def test_tool_calls_are_executed_and_results_observed(env) -> None:
    env.reset(options={"task": _task(env, "calendar-001")})
    action = format_hermes_calls(
        [
            {"name": "list_calendars", "arguments": {}},
            {"name": "get_event", "arguments": {"event_id": "evt_0001"}},
        ]
    )
    obs, reward, term, trunc, info = env.step(action)
    assert (reward, term, trunc) == (0.0, False, False)
    assert obs.count("<tool_response>") == 2 and "cal_01" in obs
    roles = [m["role"] for m in info["messages"]]
    assert roles == ["assistant", "tool", "tool"]
    assert [r["result"]["status"] for r in info["call_results"]] == ["ok", "ok"]
    assert json.loads(info["messages"][0]["tool_calls"][1]["function"]["arguments"]) == {
        "event_id": "evt_0001"
    }


def test_malformed_calls_become_observations_not_crashes(env) -> None:
    env.reset(options={"task": _task(env, "calendar-001")})
    obs, _, term, _, info = env.step(
        '<tool_call>{"name": "get_event", "arguments": {oops}</tool_call>'
    )
    assert not term
    assert "parse_error" in obs and "Could not parse" in obs
    assert info["call_results"][0]["result"]["error"]["kind"] == "parse_error"
    obs, *_ = env.step('<tool_call>{"name": "teleport", "arguments": {}}</tool_call>')
    assert "unknown_tool" in obs
    obs, *_ = env.step('<tool_call>["not", "an", "object"]</tool_call>')
    assert "must be a JSON object" in obs
    assert len(env.unwrapped.trajectory) == 3


def test_structured_actions_are_accepted(env) -> None:
    env.reset(options={"task": _task(env, "calendar-001")})
    obs, *_ = env.step([{"name": "list_calendars", "arguments": {}}])
    assert "cal_01" in obs
    obs, *_ = env.step({"function": {"name": "get_event", "arguments": '{"event_id": "evt_0001"}'}})
    assert "evt_0001" in obs


def test_multi_turn_flow_and_terminal_reward(env) -> None:
    task = _task(env, "calendar-003")
    assert len(task.turns) == 2
    env.reset(options={"task": task})
    episode = env.unwrapped.episode
    agent = OraclePolicy().start(episode)
    obs, r, term, trunc, info = env.step(agent.act(episode))
    assert not term and r == 0.0
    obs, r, term, trunc, info = env.step(agent.act(episode))
    assert obs == task.turns[1].user and not term
    assert info["messages"][-1] == {"role": "user", "content": task.turns[1].user}
    env.step(agent.act(episode))
    obs, r, term, trunc, info = env.step(agent.act(episode))
    assert term and not trunc and obs == ""
    assert info["reward_breakdown"].total == r
    assert env.unwrapped.state_hash() == task.final_state_hash
    with pytest.raises(RuntimeError, match="reset"):
        env.unwrapped.step("hello")


def test_assistant_turn_cap_truncates_and_still_pays(env) -> None:
    base = env.unwrapped
    env.reset(options={"task": _task(env, "calendar-001")})
    call = format_hermes_calls([{"name": "list_calendars", "arguments": {}}])
    for _ in range(base.caps.max_assistant_turns - 1):
        _, _, term, trunc, _ = env.step(call)
        assert not (term or trunc)
    _, reward, term, trunc, info = env.step(call)
    assert trunc and not term
    assert info["reward_breakdown"] is not None and reward == info["reward_breakdown"].total


def test_user_turn_cap_truncates() -> None:
    env = gymnasium.make("prove/calendar-v0", max_user_turns=1)
    task = next(t for t in env.unwrapped.tasks if len(t.turns) > 1)
    env.reset(options={"task": task})
    _, _, term, trunc, _ = env.step("I am done.")
    assert trunc and not term


def test_unknown_format_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match=r"no tool-call format named .xml.; registered: .*hermes"):
        gymnasium.make("prove/calendar-v0", format="xml")


def test_a_task_for_another_server_is_refused(env) -> None:
    task = _task(env, "calendar-001").model_copy(update={"servers": ["elsewhere"]})
    with pytest.raises(ValueError, match="not 'calendar'"):
        env.reset(options={"task": task})


def test_tasks_may_come_from_a_jsonl_file(tmp_path) -> None:
    tasks = prove_gym.get_registry().tasks("calendar")[:2]
    path = tmp_path / "tasks.jsonl"
    prove_gym.save_tasks(tasks, path)
    env = gymnasium.make("prove/calendar-v0", tasks=str(path))
    assert [t.id for t in env.unwrapped.tasks] == [t.id for t in tasks]


def test_render_ansi_shows_the_conversation() -> None:
    env = gymnasium.make("prove/calendar-v0", render_mode="ansi")
    env.reset(options={"task_index": 0})
    env.step([{"name": "list_calendars", "arguments": {}}])
    text = env.render()
    assert "[user]" in text and "-> list_calendars({})" in text and "[tool]" in text


def test_a_later_env_version_registers_beside_v0_without_changing_it() -> None:
    import dataclasses

    from prove_gym import EnvVersion, RewardConfig, Server, hookimpl
    from prove_gym.env.env import ProveEnv
    from prove_gym.env.registration import register_ids
    from prove_gym.registry import Registry

    calendar = prove_gym.get_server("calendar")
    versioned = Server(
        "calendar_versions_test",
        version="2.0",
        base=calendar.base,
        sampler=calendar.sampler,
        env_versions=[
            EnvVersion(
                1,
                "offers only the read tools; pays the normalised reward",
                tools=("list_calendars", "get_event"),
                reward=RewardConfig(normalise=True),
            )
        ],
    )
    for spec in calendar.tools.values():
        versioned.tools[spec.name] = dataclasses.replace(spec, server_name=versioned.name)
    versioned.entities.update(calendar.entities)

    class Plugin:
        @hookimpl
        def prove_gym_servers(self):
            return [versioned]

    registry = Registry(load_entrypoints=False)
    registry.register(Plugin(), name="versions")
    ids = register_ids(registry.servers)
    assert ids == ["prove/calendar_versions_test-v0", "prove/calendar_versions_test-v1"]
    assert gymnasium.spec(ids[1]).kwargs == {"server": versioned.name, "env_version": 1}
    assert versioned.env_ids == ids and versioned.problems() == []
    task = (
        prove_gym.get_registry()
        .tasks("calendar")[0]
        .model_copy(update={"servers": [versioned.name], "final_state_hash": None})
    )
    v0 = ProveEnv(versioned.name, tasks=[task], registry=registry)
    v1 = ProveEnv(versioned.name, tasks=[task], registry=registry, env_version=1)
    _, info0 = v0.reset(options={"task_index": 0})
    _, info1 = v1.reset(options={"task_index": 0})
    assert len(info0["tools"]) == 17
    assert [t["function"]["name"] for t in info1["tools"]] == ["list_calendars", "get_event"]
    assert v1.reward_config.normalise and not v0.reward_config.normalise
    with pytest.raises(ValueError, match="no env version 2"):
        ProveEnv(versioned.name, registry=registry, env_version=2)
    with pytest.raises(ValueError, match="say what changed"):
        EnvVersion(2, " ")


def test_a_reset_with_a_bad_task_raises_and_leaves_the_env_usable() -> None:
    env = gymnasium.make("prove/calendar-v0")  # the first reset is the checked one
    with pytest.raises(prove_gym.TaskError, match=r"^not a valid task: servers: Field required"):
        env.reset(options={"task": {"id": "broken"}})
    _obs, _info = env.reset(options={"task_id": "calendar-001"})
    _obs, _reward, terminated, _truncated, info = env.step("Nothing to do.")
    assert terminated and info["reward_breakdown"] is not None
    with pytest.raises(ValueError, match="no task 'calendar-999'"):
        env.reset(options={"task_id": "calendar-999"})
    assert env.unwrapped.task.id == "calendar-001"  # the last good episode is untouched
    env.close()


@pytest.mark.parametrize("key", ["tsk", "seed", "task_idx", 3])
def test_an_unknown_reset_option_is_an_error_naming_the_known_ones(env, key) -> None:
    with pytest.raises(ValueError, match=r"unknown reset option .*; the options are task, task_id"):
        env.reset(options={key: "calendar-001"})


def test_task_id_and_task_index_pick_from_the_pool_whatever_the_seed(env) -> None:
    ids = {env.reset(seed=s, options={"task_id": "calendar-002"})[1]["task_id"] for s in range(5)}
    assert ids == {"calendar-002"}
    assert env.reset(options={"task_index": 1})[1]["task_id"] == env.unwrapped.tasks[1].id


def test_a_gold_step_naming_a_tool_the_server_lacks_is_refused(env) -> None:
    data = _task(env, "calendar-001").model_dump()
    data["turns"][0]["steps"][0]["name"] = "serch_events"
    with pytest.raises(prove_gym.TaskError, match="did you mean 'search_events'"):
        env.reset(options={"task": data})
