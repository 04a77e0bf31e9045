"""The verifiers adapter, run by verifiers' own rollout code against a scripted model.

verifiers (>= 0.4, ``verifiers.v1``) plays each episode as it would for prime-rl: its
``null`` harness (a chat loop with MCP tools) in a local subprocess, its interception
server between that program and the model, and our tool server launched per rollout.
Only the model is a stand-in: a :class:`verifiers.v1.Client` that answers from a script
(verifiers resolves its model client from the endpoint config, so the test hands it this
one instead). It needs verifiers installed (its mcp pin is not ours: see
``.ci/coinstall.sh``) and, on first use, verifiers fetches its harness's own packages.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

vf = pytest.importorskip("verifiers.v1", reason="needs verifiers >= 0.4 (pip install verifiers)")

import verifiers.v1.interception.server as interception  # noqa: E402
from verifiers.v1.clients import Client, EvalClientConfig, ModelContext  # noqa: E402
from verifiers.v1.clients.client import RelayReply  # noqa: E402

import prove_gym  # noqa: E402
from prove_gym.adapters.verifiers import ProveTask, load_environment  # noqa: E402
from prove_gym.episode import Episode, episode_instructions  # noqa: E402
from prove_gym.reward import RewardBreakdown  # noqa: E402
from prove_gym.task import Task, save_tasks  # noqa: E402

Policy = Callable[[Task, list[dict[str, Any]]], dict[str, Any]]


def gold(task: Task, messages: list[dict[str, Any]]) -> dict[str, Any]:
    """Each user turn's gold calls in one message, then a short answer."""
    turn = task.turns[sum(m["role"] == "user" for m in messages) - 1]
    if messages[-1]["role"] == "user" and turn.steps:
        return _calls([(s.name, s.arguments) for s in turn.steps])
    return {"role": "assistant", "content": "Done."}


def all_but_last_call(task: Task, messages: list[dict[str, Any]]) -> dict[str, Any]:
    """The gold calls of each user turn without its last one: work left undone."""
    turn = task.turns[sum(m["role"] == "user" for m in messages) - 1]
    steps = turn.steps[:-1]
    if messages[-1]["role"] == "user" and steps:
        return _calls([(s.name, s.arguments) for s in steps])
    return {"role": "assistant", "content": "Done."}


def _calls(calls: list[tuple[str, Any]]) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": f"call_{i}",
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(arguments)},
            }
            for i, (name, arguments) in enumerate(calls)
        ],
    }


class ScriptedClient(Client):
    """A verifiers model client whose replies come from ``policy`` (it sees the whole chat)."""

    def __init__(self, task: Task, policy: Policy) -> None:
        self.task = task
        self.policy = policy
        self.requests: list[list[dict[str, Any]]] = []

    async def get_response(self, dialect: Any, body: dict, sampling: Any, *args: Any, **kw: Any):
        self.requests.append(body["messages"])
        message = self.policy(self.task, body["messages"])
        raw = {
            "id": f"scripted-{len(self.requests)}",
            "object": "chat.completion",
            "created": 0,
            "model": "scripted",
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "finish_reason": "tool_calls" if message.get("tool_calls") else "stop",
                }
            ],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        }
        response = dialect.parse_response(dialect.validate_response(raw))
        response.raw = raw
        return response

    async def relay(self, dialect: Any, body: dict, *args: Any, **kw: Any) -> RelayReply:
        """The harness streams: the same reply, as the dialect's server-sent events."""
        response = await self.get_response(dialect, body, None)
        events = dialect.stream_events(response.raw)

        async def chunks() -> AsyncIterator[bytes]:
            for event in events:
                yield event

        async def close() -> None:
            return None

        return RelayReply("text/event-stream", chunks(), close)


def episode_breakdown(task: Task, policy: Policy) -> RewardBreakdown:
    """What ``Episode`` pays for the same assistant messages."""
    with Episode(task) as episode:
        while not episode.done:
            message = policy(task, episode.messages)
            episode.step(message if message.get("tool_calls") else message["content"])
        assert episode.breakdown is not None
        return episode.breakdown


async def _play(
    env: Any, task: ProveTask, clients: list[ScriptedClient], monkeypatch: pytest.MonkeyPatch
) -> list[Any]:
    """One rollout per client, in turn, by verifiers' own episode runner.

    verifiers keeps one model client per endpoint config, so each stand-in gets its own
    (unreachable) endpoint, and the resolver hands verifiers the stand-in for it.
    """
    endpoints = {f"http://127.0.0.{i + 2}:9/v1": client for i, client in enumerate(clients)}
    monkeypatch.setattr(interception, "resolve_client", lambda config: endpoints[config.base_url])
    traces = []
    async with env.serving():
        for endpoint in endpoints:
            ctx = ModelContext(model="scripted", client=EvalClientConfig(base_url=endpoint))
            episode = await env.run_episode(task, ctx)
            assert episode.ok, episode.errors or episode.traces[0].last_error
            traces.append(episode.traces[0])
    return traces


@pytest.mark.slow
def test_gold_scores_the_maximum_a_worse_policy_less_and_both_what_episode_pays(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    registry = prove_gym.get_registry()
    task = next(t for t in registry.tasks("calendar") if len(t.turns) > 1 and t.turns[1].steps)
    env = load_environment(server="calendar")
    tasks = {t.data.id: t for t in env.taskset}
    assert set(tasks) == {t.id for t in registry.tasks("calendar")}
    assert tasks[task.id].data.prompt == task.turns[0].user

    clients = [ScriptedClient(task, gold), ScriptedClient(task, all_but_last_call)]
    trace, trace_worse = asyncio.run(_play(env, tasks[task.id], clients, monkeypatch))

    best, worse = episode_breakdown(task, gold), episode_breakdown(task, all_but_last_call)
    assert trace.reward == best.total == best.max_total
    assert trace_worse.reward == worse.total < best.total
    assert trace.metrics == {f"prove_{k}": v for k, v in best.components.items() if v is not None}
    # Every user turn was played: the model saw the second one after answering the first,
    # and the tool server recorded each call under the user turn it answered.
    assert any(
        m[-1] == {"role": "user", "content": task.turns[1].user} for m in clients[0].requests
    )
    turns = [i for i, turn in enumerate(task.turns) for _ in turn.steps]
    assert [c["turn"] for c in trace.state.calls] == turns
    assert all(c["result"]["status"] == "ok" for c in trace.state.calls)


def test_the_taskset_reads_a_synth_folder_split_with_the_episodes_system_text(
    tmp_path: Any,
) -> None:
    registry = prove_gym.get_registry()
    tasks = registry.tasks("calendar")[:2]
    save_tasks(tasks, tmp_path / "test.jsonl")
    env = load_environment(server="calendar", tasks=tmp_path, split="test", max_user_turns=3)
    loaded = list(env.taskset)
    assert [t.data.id for t in loaded] == [t.id for t in tasks]
    assert [t.data.prompt for t in loaded] == [t.turns[0].user for t in tasks]
    assert [t.data.system_prompt for t in loaded] == [
        episode_instructions(t, registry) for t in tasks
    ]
    assert {t.data.max_user_turns for t in loaded} == {3}
    assert [Task.model_validate(t.data.task) for t in loaded] == tasks
