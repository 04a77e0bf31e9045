"""The OpenEnv server, played over the wire by OpenEnv's own client.

``prove-gym serve --openenv`` runs in a subprocess, as a user runs it; the tests talk to it
with :class:`~prove_gym.adapters.openenv.ProveEnvClient` (OpenEnv's ``EnvClient``), with
raw WebSockets for what a client library would never send, and with HTTP for the task API.
OpenEnv pins an ``mcp`` outside ``prove-gym[mcp]``'s range, so these tests run where
OpenEnv is installed (``.ci/coinstall.sh`` runs them in its OpenEnv environment) and skip
elsewhere.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("openenv", reason="needs OpenEnv (pip install 'prove-gym[openenv]')")

import httpx
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from openenv.core.env_server.mcp_types import CallToolAction, ListToolsAction
from websockets.exceptions import ConnectionClosed, InvalidStatus
from websockets.sync.client import connect

import prove_gym
from prove_gym.adapters.openenv import (
    MAX_ACTION_CHARS,
    ProveAction,
    ProveEnvClient,
    ProveEnvironment,
    TaskCatalog,
    create_openenv_app,
)
from prove_gym.episode import Episode
from prove_gym.task import Task, save_tasks
from prove_gym.testing.served import ServedHTTP

TOKEN = "s3cret-token-for-the-openenv-tests-0123"


@pytest.fixture(scope="module")
def synth_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder laid out as `prove-gym synth` writes it (train.jsonl, test.jsonl)."""
    folder = tmp_path_factory.mktemp("runs") / "synth"
    folder.mkdir()
    tasks = prove_gym.get_registry().tasks("calendar")
    save_tasks(
        [t.model_copy(update={"id": f"syn-{t.id}"}) for t in tasks[:3]], folder / "train.jsonl"
    )
    save_tasks(
        [t.model_copy(update={"id": f"syn-test-{t.id}"}) for t in tasks[3:]], folder / "test.jsonl"
    )
    return folder


@pytest.fixture(scope="module")
def server(synth_dir: Path) -> Iterator[ServedHTTP]:
    """Every installed server's tasks and a synth folder's, as `serve --openenv` serves them."""
    served = ServedHTTP(["--openenv", "--tasks", str(synth_dir), "--max-sessions", "64"])
    try:
        yield served
    finally:
        served.stop()


def client(server: ServedHTTP, **kwargs: Any) -> Any:
    return ProveEnvClient(base_url=server.base, **kwargs).sync()


def gold_actions(task: Task) -> list[ProveAction]:
    """Each user turn's gold calls in one message, then a short answer."""
    actions = []
    for turn in task.turns:
        calls = [{"name": s.name, "arguments": s.arguments} for s in turn.steps]
        if calls:
            actions.append(ProveAction(tool_calls=calls))
        actions.append(ProveAction(text="Done."))
    return actions


def in_process(task: Task, actions: list[ProveAction]) -> Episode:
    """The same moves played on an in-process Episode, the engine the server translates to."""
    episode = Episode(task)
    for action in actions:
        if episode.done:
            break
        if action.tool_calls is not None:
            episode.step(
                {"role": "assistant", "content": action.text, "tool_calls": action.tool_calls}
            )
        else:
            episode.step(action.text)
    return episode


def play(env: Any, actions: list[ProveAction]) -> Any:
    result = None
    for action in actions:
        result = env.step(action)
        if result.done:
            break
    return result


# ------------------------------------------------------------------ the contract
def test_every_servers_first_task_played_by_its_gold_pays_what_the_episode_pays(
    server: ServedHTTP,
) -> None:
    registry = prove_gym.get_registry()
    assert len(registry.server_names) >= 20
    with client(server) as env:
        for name in registry.server_names:
            task = registry.tasks(name)[0]
            reset = env.reset(split=name, index=0)
            assert reset.observation.task_id == task.id and not reset.done
            assert reset.observation.tools and reset.observation.messages[-1]["role"] == "user"
            actions = gold_actions(task)
            result = play(env, actions)
            episode = in_process(task, actions)
            assert result.done and episode.breakdown is not None, name
            assert result.reward == episode.breakdown.total == episode.breakdown.max_total, name
            assert result.observation.reward_breakdown == episode.breakdown.to_dict(), name
            state = env.state()
            assert state.task_id == task.id and state.terminated
            assert state.state_hash == episode.state_hash(), name
            assert state.calls_made == episode.calls_made


def test_a_wrong_policy_earns_less_than_the_gold(server: ServedHTTP) -> None:
    task = prove_gym.get_registry().tasks("calendar")[0]
    with client(server) as env:
        env.reset(task_id=task.id)
        wrong = [ProveAction(text="I cannot help with that.")] * len(task.turns)
        result = play(env, wrong)
        assert result.done
        assert result.reward < result.observation.reward_breakdown["max_total"]
        assert result.reward == in_process(task, wrong).breakdown.total


def test_the_mcp_style_actions_and_the_text_format_reach_the_same_episode(
    server: ServedHTTP,
) -> None:
    task = prove_gym.get_registry().tasks("calendar")[0]
    step = task.turns[0].steps[0]
    with client(server) as env:
        env.reset(split="calendar", index=0)
        listed = env.step(ListToolsAction())
        names = {t["function"]["name"] for t in listed.observation.tools}
        assert step.name in names
        called = env.step(CallToolAction(tool_name=step.name, arguments=step.arguments))
        assert called.observation.calls[0]["result"]["status"] == "ok"
        assert not called.done and env.state().calls_made == 1
        text = Episode(task).format.render_calls([{"name": "no_such_tool", "arguments": {}}])
        unknown = env.step(ProveAction(text=text))
        assert unknown.observation.text.count("Error [") == 1  # an observation, not a failure
        assert unknown.observation.calls[0]["result"]["status"] == "error"


def test_concurrent_sessions_never_see_each_others_writes(server: ServedHTTP) -> None:
    task = prove_gym.get_registry().tasks("calendar")[0]
    gold = in_process(task, gold_actions(task))
    fresh = Episode(task).state_hash()
    assert gold.state_hash() != fresh  # the gold writes

    async def session(i: int) -> str:
        async with ProveEnvClient(base_url=server.base) as env:
            await env.reset(split="calendar", index=0)
            if i % 2 == 0:
                for action in gold_actions(task):
                    if (await env.step(action)).done:
                        break
            else:
                for _ in range(3):  # reads only, interleaved with the others' writes
                    await env.step(ProveAction(type="list_tools"))
                    await asyncio.sleep(0)
            return (await env.state()).state_hash

    async def main() -> list[str]:
        return await asyncio.gather(*(session(i) for i in range(16)))

    hashes = asyncio.run(main())
    assert hashes[0::2] == [gold.state_hash()] * 8
    assert hashes[1::2] == [fresh] * 8


# ------------------------------------------------------------------- the task API
def test_the_task_api_lists_every_split_and_resets_by_index_id_or_json(
    server: ServedHTTP, synth_dir: Path
) -> None:
    registry = prove_gym.get_registry()
    splits = httpx.get(server.url("/tasks"), timeout=10).json()["splits"]
    sizes = {s["name"]: s["size"] for s in splits}
    assert {n: len(registry.tasks(n)) for n in registry.server_names}.items() <= sizes.items()
    assert sizes["synth:train"] == 3 and sizes["synth:test"] == len(registry.tasks("calendar")) - 3
    listed = httpx.get(server.url("/tasks/synth:train"), timeout=10).json()
    assert listed["ids"] == [f"syn-{t.id}" for t in registry.tasks("calendar")[:3]]
    shown = httpx.get(server.url("/tasks/banking/1"), timeout=10).json()
    assert Task.model_validate(shown) == registry.tasks("banking")[1]
    assert httpx.get(server.url("/tasks/nope"), timeout=10).status_code == 404
    assert httpx.get(server.url("/tasks/banking/999"), timeout=10).status_code == 404
    # OpenEnv's stateless HTTP routes: a fresh environment per request, a clear 400 when refused
    reset = httpx.post(server.url("/reset"), json={"split": "banking", "index": 1}, timeout=10)
    assert reset.status_code == 200 and reset.json()["observation"]["task_id"] == shown["id"]
    refused = httpx.post(server.url("/reset"), json={"split": "nope"}, timeout=10)
    assert refused.status_code == 400 and "no split 'nope'" in refused.json()["detail"]
    step = httpx.post(server.url("/step"), json={"action": {"text": "hi"}}, timeout=10)
    assert step.status_code == 400 and "reset first" in step.json()["detail"]
    with client(server) as env:
        by_index = env.reset(split="synth:train", index=1).observation
        by_id = env.reset(task_id=listed["ids"][1]).observation
        by_json = env.reset(task=json.dumps(shown)).observation
        by_seed = [env.reset(split="calendar", seed=7).observation.task_id for _ in range(2)]
    assert by_index.task_id == by_id.task_id == listed["ids"][1]
    assert by_index.text == by_id.text
    assert by_json.task_id == registry.tasks("banking")[1].id
    assert by_seed[0] == by_seed[1]  # the seed chooses the task, the same on every call


# --------------------------------------------------------------- hostile clients
def _ws(server: ServedHTTP, **headers: str) -> Any:
    url = server.base.replace("http://", "ws://") + "/ws"
    return connect(url, additional_headers=headers or None, max_size=None, open_timeout=10)


def _ask(ws: Any, message: Any) -> dict[str, Any]:
    ws.send(message if isinstance(message, str) else json.dumps(message))
    return json.loads(ws.recv(timeout=30))


def test_garbage_gets_bounded_clear_errors_and_the_session_goes_on(server: ServedHTTP) -> None:
    with _ws(server) as ws:
        step = {"type": "step", "data": {"text": "hi"}}
        before = _ask(ws, step)
        assert before["type"] == "error" and "reset first" in before["data"]["message"]
        cases = [
            ("{not json", "INVALID_JSON"),
            ({"type": "dance"}, "UNKNOWN_TYPE"),
            ({"type": "reset", "data": {"split": "calendar", "idx": 0}}, "unknown reset key"),
            ({"type": "reset", "data": {"split": "nope"}}, "no split 'nope'"),
            ({"type": "reset", "data": {"split": "calendar", "index": 10**9}}, "is not one"),
            ({"type": "reset", "data": {"task": '{"id": 1}'}}, "not a valid task"),
            ({"type": "reset", "data": {"task": {"id": "x", "servers": ["nope"], "turns": [
                {"user": "hi"}]}}}, "no server named 'nope'"),
        ]  # fmt: skip
        for message, expected in cases:
            answer = _ask(ws, message)
            assert answer["type"] == "error", message
            assert expected in json.dumps(answer["data"]), (message, answer)
            assert len(json.dumps(answer)) < 2_000
        assert _ask(ws, {"type": "reset", "data": {"split": "calendar", "index": 0}})["type"] == (
            "observation"
        )
        bad_actions = [
            ({"text": 12, "surprise": True}, "VALIDATION_ERROR"),
            ({"type": "call_tool", "tool_name": "list_events", "arguments": "x" * 1000}, "VALIDATION_ERROR"),
            ({"tool_calls": "not a list"}, "VALIDATION_ERROR"),
            ({"type": "call_tool"}, "names its tool"),
            ({"tool_name": "list_events"}, "belong to a call_tool action"),
        ]  # fmt: skip
        for action, expected in bad_actions:
            answer = _ask(ws, {"type": "step", "data": action})
            assert answer["type"] == "error" and expected in json.dumps(answer["data"]), answer
        long = _ask(ws, {"type": "step", "data": {"text": "x" * (MAX_ACTION_CHARS + 1)}})
        assert f"at most {MAX_ACTION_CHARS}" in long["data"]["message"]
        many = [{"name": "list_calendars", "arguments": {}}] * 5_000
        flood = _ask(ws, {"type": "step", "data": {"tool_calls": many}})
        assert flood["data"]["observation"]["caps_hit"] == ["max_calls_per_message"]
        assert len(flood["data"]["observation"]["calls"]) == 33  # 32 run, 1 refused
        nested = _ask(ws, {"type": "step", "data": {"tool_calls": [
            {"name": "list_events", "arguments": {"a": json.loads("[" * 200 + "]" * 200)}}]}})  # fmt: skip
        assert nested["type"] == "observation"
        state = _ask(ws, {"type": "state"})["data"]
        assert state["step_count"] == 2 and state["calls_made"] == 33


def test_oversize_and_pathological_messages_close_only_their_own_connection(
    server: ServedHTTP,
) -> None:
    with _ws(server) as ws:
        with pytest.raises(ConnectionClosed) as closed:  # the send may see the close first
            ws.send(json.dumps({"type": "step", "data": {"text": "x" * (5 * 1024 * 1024)}}))
            ws.recv(timeout=30)
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 1009
    with _ws(server) as ws:
        answer = _ask(ws, "[" * 500_000)  # too deep for the JSON parser: ends this session
        assert answer["type"] == "error" and answer["data"]["code"] == "SESSION_ERROR"
        assert len(json.dumps(answer)) < 2_000
    assert server.alive()
    with client(server) as env:
        assert env.reset(split="calendar", index=0).observation.task_id == "calendar-001"


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    text=st.text(max_size=400),
    calls=st.none()
    | st.lists(
        st.fixed_dictionaries(
            {"name": st.sampled_from(["list_events", "get_event", "nope", ""]) | st.text(max_size=8)},
            optional={"arguments": st.dictionaries(st.text(max_size=6), st.integers() | st.text(max_size=6), max_size=3)},
        ),
        max_size=4,
    ),
)  # fmt: skip
def test_any_model_output_is_an_observation_never_a_failure(
    text: str, calls: list[dict[str, Any]] | None
) -> None:
    env = ProveEnvironment(CATALOG)
    env.reset(split="calendar", index=0)
    out = env.step(ProveAction(text=text, tool_calls=calls))
    assert isinstance(out.text, str) and out.messages[0]["role"] == "assistant"
    assert all(c["result"]["status"] in ("ok", "error") for c in out.calls)
    env.close()


CATALOG = TaskCatalog(servers=["calendar"])


# ---------------------------------------------------------------------- security
def test_host_origin_and_token_rules_apply_to_every_route_and_websocket() -> None:
    served = ServedHTTP(
        ["--openenv", "calendar", "--host", "127.0.0.2", "--auth-token-env", "OE_TOKEN"],
        env={"OE_TOKEN": TOKEN},
    )
    try:
        auth = {"Authorization": f"Bearer {TOKEN}"}
        assert httpx.get(served.url("/tasks"), timeout=10).status_code == 401
        assert httpx.get(served.url("/tasks"), headers=auth, timeout=10).status_code == 200
        evil_host = {**auth, "host": "evil.example"}
        assert httpx.get(served.url("/health"), headers=evil_host, timeout=10).status_code == 421
        evil_origin = {**auth, "origin": "http://evil.example"}
        assert httpx.get(served.url("/tasks"), headers=evil_origin, timeout=10).status_code == 403
        for headers, status in [({}, 401), ({"Authorization": "Bearer wrong-token-0123456789"}, 401),
                                ({**auth, "Origin": "http://evil.example"}, 403)]:  # fmt: skip
            with pytest.raises(InvalidStatus) as refused:
                _ws(served, **headers)
            assert refused.value.response.status_code == status
        with ProveEnvClient(base_url=served.base, headers=auth).sync() as env:
            assert env.reset(split="calendar", index=0).observation.task_id == "calendar-001"
    finally:
        served.stop()


def test_a_non_loopback_host_without_a_token_is_refused_unless_told_to() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "prove_gym", "serve", "--openenv", "--host", "0.0.0.0"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2
    assert "--auth-token-env" in done.stderr and "Traceback" not in done.stderr


def test_the_openenv_server_imports_no_mcp_code_of_prove_gym() -> None:
    code = (
        "import json, sys; from prove_gym.adapters.openenv import create_openenv_app; "
        "create_openenv_app(); "
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith('prove_gym.mcp'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == []


def test_an_app_can_be_built_in_process_for_uvicorn() -> None:
    app = create_openenv_app(TaskCatalog(servers=["calendar"]), max_sessions=4)
    paths = {getattr(r, "path", "") for r in app.routes}
    assert {"/ws", "/reset", "/step", "/state", "/tasks", "/tasks/{split}"} <= paths


def test_a_trainer_loop_plays_whole_episodes_through_the_client(server: ServedHTTP) -> None:
    """docs/openenv.md's TRL rollout, ``play``, with a scripted policy: the gold calls of
    each user turn written in the episode's format, then an answer."""
    task = prove_gym.get_registry().tasks("calendar")[1]
    fmt = Episode(task).format

    def generate(messages: list[dict[str, Any]]) -> str:
        turn = task.turns[sum(m["role"] == "user" for m in messages) - 1]
        if messages[-1]["role"] == "user" and turn.steps:
            return fmt.render_calls({"name": s.name, "arguments": s.arguments} for s in turn.steps)
        return "Done."

    def play(task_id: str, generate: Any) -> tuple[list[dict[str, Any]], float, dict]:
        with ProveEnvClient(base_url=server.base).sync() as env:
            result = env.reset(task_id=task_id)
            messages = list(result.observation.messages)
            while not result.done:
                text = generate(messages)
                result = env.step(ProveAction(text=text))
                messages += result.observation.messages
            return messages, result.reward, result.observation.reward_breakdown

    messages, reward, breakdown = play(task.id, generate)
    assert reward == breakdown["max_total"] == breakdown["total"]
    assert [m["role"] for m in messages][:2] == ["system", "user"]
    assert messages[-1]["role"] == "assistant"
    assert sum(m["role"] == "user" for m in messages) == len(task.turns)


def test_sessions_are_limited_and_an_idle_one_is_closed_after_the_ttl() -> None:
    served = ServedHTTP(["--openenv", "calendar", "--max-sessions", "2", "--ttl", "2"])
    try:
        with _ws(served) as first, _ws(served) as second:
            for ws in (first, second):
                reset = {"type": "reset", "data": {"split": "calendar", "index": 0}}
                assert _ask(ws, reset)["type"] == "observation"
            with _ws(served) as third:  # a newcomer past the limit is told so, clearly
                refused = json.loads(third.recv(timeout=30))
                assert refused["data"]["code"] == "CAPACITY_REACHED"
            for ws in (first, second):  # both go quiet: each is closed as idle
                with pytest.raises(ConnectionClosed) as closed:
                    ws.recv(timeout=30)
                assert closed.value.rcvd is not None and closed.value.rcvd.code == 1001
        with ProveEnvClient(base_url=served.base).sync() as env:  # their slots are free again
            assert env.reset(split="calendar", index=0).observation.task_id == "calendar-001"
    finally:
        served.stop()
