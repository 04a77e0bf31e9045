"""Validation: replay from JSON, credential tracing, the error-rate cut and near-duplicates."""

from __future__ import annotations

import itertools

import prove_gym
from prove_gym import Task, gold_replay
from prove_gym.synth import SynthConfig, SynthResult, synthesize
from prove_gym.synth.validate import (
    DedupIndex,
    StateHasher,
    call_features,
    jaccard,
    replay,
    untraced_secrets,
)


def test_a_replayed_task_matches_its_recording_and_a_tampered_one_does_not(
    dataset: SynthResult,
) -> None:
    registry = prove_gym.get_registry()
    hasher = StateHasher()
    task = next(t for t in dataset.tasks if any(s.arguments for s in t.steps))
    records, _ = gold_replay(task)
    results = [r.result for r in records]
    server = registry.get_server(task.server)
    with server.session(task.seed, task.size) as session:
        for step in task.steps:
            session.call(step.name, step.arguments)
        recorded = (session.snapshot(), session.state_hash())
        reason, final = replay(
            task, results, recorded, session=session, registry=registry, hasher=hasher
        )
        assert reason is None and final == task.final_state_hash

        data = task.model_dump()
        for turn in data["turns"]:
            for step in turn["steps"]:
                if step["arguments"]:
                    key = next(iter(step["arguments"]))
                    step["arguments"][key] = "definitely-not-a-real-value"
                    break
            else:
                continue
            break
        tampered = Task.from_json(data)
        reason, final = replay(
            tampered, results, recorded, session=session, registry=registry, hasher=hasher
        )
        assert reason == "replay_result_mismatch" and final is None
        reason, _ = replay(
            task, results, (b"", "0" * 64), session=session, registry=registry, hasher=hasher
        )
        assert reason == "replay_state_mismatch"
        hidden = task.model_copy(
            update={"tools": [q for q in task.tools if q != f"{task.server}.{task.steps[0].name}"]}
        )
        reason, _ = replay(
            hidden, results, recorded, session=session, registry=registry, hasher=hasher
        )
        assert reason == "gold_tool_not_offered"


def test_the_cached_state_hash_equals_the_workspace_hash(dataset: SynthResult) -> None:
    hasher = StateHasher()
    for task in dataset.tasks[:10]:
        with prove_gym.Workspace(task) as ws:
            assert hasher.workspace_hash(ws) == ws.state_hash()
            for i, turn in enumerate(task.turns):
                for step in turn.steps:
                    ws.call(step.name, step.arguments, turn=i)
            assert hasher.workspace_hash(ws) == ws.state_hash() == task.final_state_hash


def test_a_secret_argument_the_conversation_never_showed_is_flagged(dataset: SynthResult) -> None:
    registry = prove_gym.get_registry()
    task = next((t for t in dataset.tasks if any("passcode" in s.arguments for s in t.steps)), None)
    if task is None:
        return  # no installed server takes passcodes
    records, _ = gold_replay(task)
    results = [r.result for r in records]
    assert untraced_secrets(task, results, registry) == []
    passcodes = {s.arguments["passcode"] for s in task.steps if "passcode" in s.arguments}
    data = task.model_dump()
    for turn in data["turns"]:
        for code in passcodes:
            turn["user"] = turn["user"].replace(code, "my usual code")
    hidden = Task.from_json(data)
    assert any(b.endswith(".passcode") for b in untraced_secrets(hidden, results, registry))


def test_conversations_with_too_many_failed_calls_are_dropped() -> None:
    strict = synthesize(
        SynthConfig(servers=("calendar",), n=6, seed=2, state_seeds=1, max_error_rate=0.0)
    )
    assert all(t.meta["failed_calls"] == 0 for t in strict.tasks)
    lenient = synthesize(
        SynthConfig(servers=("calendar",), n=6, seed=2, state_seeds=1, max_error_rate=1.0)
    )
    assert "error_rate" not in lenient.drops


def test_call_features_are_argument_tokens_bigrams_and_special_turns() -> None:
    feats = call_features(
        [("search_events", {"query": "sprint"}), ("get_event", {"event_id": "evt_1"})], ["clarify"]
    )
    assert feats == {
        'search_events(query="sprint")',
        'get_event(event_id="evt_1")',
        "search_events>get_event",
        "turn:clarify",
    }
    same_tools_other_event = call_features(
        [("search_events", {"query": "sprint"}), ("get_event", {"event_id": "evt_2"})], ["clarify"]
    )
    assert jaccard(feats, same_tools_other_event) == 3 / 5


def test_the_dedup_index_rejects_sets_at_or_above_the_threshold() -> None:
    index = DedupIndex(0.7)
    a = frozenset({"a", "b", "c", "d", "e", "f", "g"})
    index.add(a)
    assert index.near_duplicate(frozenset({"a", "b", "c", "d", "e", "f", "g", "h"}))  # 7/8
    assert not index.near_duplicate(frozenset({"a", "b", "c", "x", "y"}))  # 3/9
    assert not index.near_duplicate(frozenset({"z"}))


def test_no_two_kept_tasks_of_a_server_are_near_duplicates(dataset: SynthResult) -> None:
    threshold = dataset.config.dedup_threshold
    by_server: dict[str, list[frozenset[str]]] = {}
    for task in dataset.tasks:
        if task.meta["knobs"]["missing_tool"]:
            continue  # their features include the unanswered request's call
        specials = [t.kind for t in task.turns if t.kind != "normal"]
        feats = call_features(((s.name, s.arguments) for s in task.steps), specials)
        by_server.setdefault(task.server, []).append(feats)
    for sets in by_server.values():
        for a, b in itertools.combinations(sets, 2):
            assert jaccard(a, b) < threshold
