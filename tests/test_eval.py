"""Evaluation: baselines, an OpenAI-compatible endpoint served on 127.0.0.1, the report."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar

import gymnasium
import pytest

from prove_gym import RewardConfig, get_registry
from prove_gym.eval import OpenAIChatPolicy, OraclePolicy, RandomPolicy, evaluate, run_episode
from prove_gym.synth.ship import is_hand_written
from prove_gym.task import Task

CALENDAR = [t for t in get_registry().tasks("calendar") if is_hand_written(t)]
"""The calendar's five hand-written tasks (every gold call succeeds; each has a read)."""


def covering_tasks(server: str) -> list[Task]:
    """Few shipped tasks of ``server`` whose gold calls use every tool any of its tasks uses
    (greedy cover, in file order), with its first multi-server and multi-turn task.

    Every shipped task is played at the maximum by the conformance suite
    (``test_shipped_task``) in the default format; here each format replays the calls of
    every tool, which is what differs between formats.
    """
    tasks = get_registry().tasks(server)
    wanted = {s.name for t in tasks for s in t.steps}
    chosen: list[Task] = []
    while wanted:
        best = max(tasks, key=lambda t: len(wanted & {s.name for s in t.steps}))
        chosen.append(best)
        wanted -= {s.name for s in best.steps}
    for extra in (
        next((t for t in tasks if len(t.servers) > 1), None),
        next((t for t in tasks if len(t.turns) > 2), None),
        tasks[0],
    ):
        if extra is not None and extra not in chosen:
            chosen.append(extra)
    return chosen


def gold_reward(task: Task) -> float:
    """The reward the Gymnasium env pays for the gold calls of ``task``."""
    env = gymnasium.make(f"prove/{task.server}-v0")
    env.reset(options={"task": task})
    episode = env.unwrapped.episode
    player, reward, done = OraclePolicy().start(episode), 0.0, False
    while not done:
        _o, reward, term, trunc, _i = env.step(player.act(episode))
        done = term or trunc
    env.close()
    return reward


@pytest.mark.parametrize("server", get_registry().servers)
@pytest.mark.parametrize("fmt", sorted(get_registry().formats))
def test_the_oracle_scores_exactly_the_maximum_with_every_tool_in_every_format(
    fmt: str, server: str
) -> None:
    tasks = covering_tasks(server)
    used = {s.name for t in get_registry().tasks(server) for s in t.steps}
    assert used <= {s.name for t in tasks for s in t.steps}
    report = evaluate(OraclePolicy(), tasks, format=fmt, concurrency=2, progress=False)
    for task, r in zip(tasks, report.results, strict=True):
        assert r.total == r.max_total, (fmt, task.id)
        assert r.max_total <= (RewardConfig().max_raw if task.steps else 1.0), (fmt, task.id)
        assert r.success and r.terminated and r.n_calls == len(task.steps)


def test_a_failing_policy_ends_its_episode_truncated_and_scored() -> None:
    class Flaky:
        name = "flaky"

        def start(self, episode):
            return self

        def act(self, episode):
            if episode.trajectory:
                raise ConnectionError("endpoint went away")
            return [{"name": "list_calendars", "arguments": {}}]

    result = run_episode(Flaky(), CALENDAR[0])
    assert result.error == "ConnectionError: endpoint went away"
    assert result.n_calls == 1 and not result.terminated and result.assistant_turns == 1
    assert result.total < gold_reward(CALENDAR[0])


def test_the_oracle_succeeds_on_every_task_and_earns_the_envs_gold_reward() -> None:
    report = evaluate(OraclePolicy(), CALENDAR, concurrency=2, progress=False)
    assert [r.task_id for r in report.results] == [t.id for t in CALENDAR]
    for task, r in zip(CALENDAR, report.results, strict=True):
        assert r.success and r.full_coverage and r.state_match
        assert r.total == pytest.approx(gold_reward(task))
        assert r.n_calls == r.n_gold == len(task.steps)
    overall = report.summary()["overall"]
    assert overall["success"] == 1.0
    assert overall["calls_per_task"] == pytest.approx(sum(len(t.steps) for t in CALENDAR) / 5)


def test_the_random_baseline_is_reproducible_and_scores_below_the_oracle() -> None:
    a = evaluate(RandomPolicy(seed=3), CALENDAR, concurrency=3, progress=False)
    b = evaluate(RandomPolicy(seed=3), CALENDAR, concurrency=1, progress=False)
    assert [r.total for r in a.results] == [r.total for r in b.results]
    oracle = evaluate(OraclePolicy(), CALENDAR, progress=False)
    assert a.summary()["overall"]["total"] < oracle.summary()["overall"]["total"]
    assert a.summary()["overall"]["success"] < 1.0


def test_the_report_counts_calls_per_tool_and_gold_steps_matched() -> None:
    report = evaluate(OraclePolicy(), CALENDAR, progress=False)
    tools = report.summary()["tools"]
    gold: dict[str, int] = {}
    for task in CALENDAR:
        for step in task.steps:
            gold[f"calendar.{step.name}"] = gold.get(f"calendar.{step.name}", 0) + 1
    assert {k: v["gold"] for k, v in tools.items()} == gold
    assert all(v["matched_rate"] == 1.0 and v["ok_rate"] == 1.0 for v in tools.values())
    table = report.table()
    assert "calendar.search_events" in table and "coverage" in table


# ---------------------------------------------------------- an OpenAI endpoint
class ScriptedChat(BaseHTTPRequestHandler):
    """``/v1/chat/completions`` answering with the gold calls of the current user turn, natively.

    A stand-in for a served model: it reads the conversation (and only that) the
    way a model would, so every request the policy sends is checked on the way.
    """

    requests: ClassVar[list[dict[str, Any]]] = []
    fail_first = 0
    garbled_arguments = False

    def log_message(self, *args: Any) -> None:  # keep test output quiet
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).requests.append(body)
        if self.path != "/v1/chat/completions":
            self.send_error(404)
            return
        if type(self).fail_first > 0:
            type(self).fail_first -= 1
            self.send_error(503)
            return
        message = self.answer(body["messages"])
        payload = json.dumps({"choices": [{"index": 0, "message": message}]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def answer(self, messages: list[dict[str, Any]]) -> dict[str, Any]:
        if messages[-1]["role"] == "tool":
            return {"role": "assistant", "content": "Done."}
        user = messages[-1]["content"]
        for task in CALENDAR:
            for turn in task.turns:
                if turn.user == user and turn.steps:
                    calls = [
                        {
                            "id": f"c{i}",
                            "type": "function",
                            "function": {
                                "name": s.name,
                                "arguments": "{oops"
                                if self.garbled_arguments
                                else json.dumps(s.arguments),
                            },
                        }
                        for i, s in enumerate(turn.steps)
                    ]
                    return {"role": "assistant", "content": None, "tool_calls": calls}
        return {"role": "assistant", "content": "Could you tell me more?"}


@pytest.fixture()
def chat_server() -> Iterator[str]:
    ScriptedChat.requests = []
    ScriptedChat.fail_first = 0
    ScriptedChat.garbled_arguments = False
    server = ThreadingHTTPServer(("127.0.0.1", 0), ScriptedChat)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def test_an_openai_compatible_endpoint_gets_native_tools_and_is_scored_like_the_oracle(
    chat_server: str,
) -> None:
    policy = OpenAIChatPolicy(chat_server, "scripted", api_key="k")
    report = evaluate(policy, CALENDAR, concurrency=3, progress=False)
    policy.close()
    oracle = evaluate(OraclePolicy(), CALENDAR, progress=False)
    assert [r.total for r in report.results] == pytest.approx([r.total for r in oracle.results])
    assert all(r.success for r in report.results)
    first = ScriptedChat.requests[0]
    assert first["model"] == "scripted" and first["temperature"] == 0.0
    assert {t["function"]["name"] for t in first["tools"]} >= {"search_events", "create_event"}
    system = first["messages"][0]
    assert system["role"] == "system" and "<tools>" not in system["content"]
    later = [r for r in ScriptedChat.requests if r["messages"][-1]["role"] == "tool"]
    assert later and all(m.get("tool_call_id") for m in later[0]["messages"] if m["role"] == "tool")


def test_garbled_arguments_count_as_invalid_calls(chat_server: str) -> None:
    ScriptedChat.garbled_arguments = True
    policy = OpenAIChatPolicy(chat_server, "scripted")
    result = run_episode(policy, CALENDAR[0])
    assert result.n_calls == len(CALENDAR[0].steps)
    assert not any(c["ok"] for c in result.calls)
    assert not result.success and result.total < gold_reward(CALENDAR[0])


def test_an_endpoint_that_fails_is_retried_then_reported(chat_server: str) -> None:
    ScriptedChat.fail_first = 1
    ok = run_episode(OpenAIChatPolicy(chat_server, "m", retries=1), CALENDAR[0])
    assert ok.error is None and ok.success
    ScriptedChat.fail_first = 10
    bad = run_episode(OpenAIChatPolicy(chat_server, "m", retries=1), CALENDAR[0])
    assert bad.error is not None and "503" in bad.error
    assert bad.n_calls == 0 and not bad.success


# ---------------------------------------------------------- strata and intervals
class SilentPolicy:
    """Answers every turn without a call: what an untrained model does."""

    name = "silent"

    def start(self, episode: Any) -> Any:
        return self

    def act(self, episode: Any) -> str:
        return "I can't do that here."


def test_each_stratum_is_reported_and_a_policy_that_never_calls_passes_no_tool_task() -> None:
    from prove_gym.eval.metrics import CALL_STRATA, STRATA, stratum

    tasks = [t for s in ("calendar", "banking", "trading") for t in get_registry().tasks(s)]
    report = evaluate(SilentPolicy(), tasks, progress=False)
    summary = report.summary()
    strata = summary["strata"]
    assert list(strata) == [s for s in STRATA if s in strata]
    assert sum(g["tasks"] for g in strata.values()) == len(tasks)
    for r in report.results:
        assert stratum(r) == stratum(next(t for t in tasks if t.id == r.task_id))
    calling = [r for r in report.results if stratum(r) in CALL_STRATA]
    assert calling and summary["tool_calling"]["tasks"] == len(calling)
    # no call made, so no task that needs one succeeds, whatever the abstention tasks say
    assert summary["tool_calling"]["success"] == 0.0
    for name in CALL_STRATA:
        if name in strata:
            assert strata[name]["success"] == 0.0
    table = report.table()
    assert "task stratum" in table and "tool-calling (1, 2, 3+)" in table


def test_success_needs_every_gold_reads_answer_and_the_oracle_gets_them() -> None:
    report = evaluate(OraclePolicy(), CALENDAR, progress=False)
    writes = {t.name for t in get_registry().get_server("calendar").visible_tools() if t.writes}
    for task, r in zip(CALENDAR, report.results, strict=True):
        reads = [s for s in task.scored_steps if s.name not in writes]
        assert r.answers is (True if reads else None)
        assert r.success
    assert report.summary()["overall"]["answers"] == 1.0


def test_the_paired_bootstrap_is_seeded_and_brackets_the_change() -> None:
    from prove_gym.eval.metrics import paired_bootstrap

    before = [0.0] * 10 + [1.0] * 10
    after = [1.0] * 14 + [0.0] * 6
    ci = paired_bootstrap(before, after, resamples=2000, seed=7)
    assert ci == paired_bootstrap(before, after, resamples=2000, seed=7)
    assert ci["change"] == pytest.approx(0.2) and ci["n"] == 20
    assert ci["low"] <= ci["change"] <= ci["high"]
    assert -1.0 <= ci["low"] < 0.2 < ci["high"] <= 1.0
    same = paired_bootstrap(before, before, resamples=100)
    assert same["low"] == same["high"] == same["change"] == 0.0
    all_up = paired_bootstrap([0.0] * 30, [1.0] * 30, resamples=100)
    assert all_up["low"] == all_up["high"] == 1.0
    with pytest.raises(ValueError, match="differ in length"):
        paired_bootstrap([1.0], [1.0, 0.0])
    with pytest.raises(ValueError, match="no paired"):
        paired_bootstrap([], [])
