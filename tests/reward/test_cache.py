"""The preparation cache: keyed by content, so copies of a task share one preparation and one replay."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from prove_gym import Task
from prove_gym.reward import score, state
from prove_gym.reward.common import prepare


def make_task(task_id: str, event_id: str = "evt_0001") -> Task:
    return Task.from_json(
        {
            "id": task_id,
            "servers": ["calendar"],
            "seed": 7,
            "turns": [
                {
                    "user": f"Cancel {event_id}.",
                    "steps": [
                        {"id": "s1", "name": "delete_event", "arguments": {"event_id": event_id}}
                    ],
                }
            ],
        }
    )


@pytest.fixture
def replays(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The ids of the tasks whose gold calls were replayed, in order."""
    seen: list[str] = []
    real = state.gold_turn_replay

    def counting(task, registry=None):
        seen.append(task.id)
        return real(task, registry)

    monkeypatch.setattr(state, "gold_turn_replay", counting)
    return seen


def test_copies_of_a_task_replay_gold_once(replays: list[str]) -> None:
    task = make_task("cache-copies")
    first, second = task.model_copy(), task.model_copy()
    assert prepare(first) is prepare(second)
    a = score(first, [], final_state_hash="model")
    b = score(second, [], final_state_hash="model")
    assert replays == ["cache-copies"]
    assert a.gold_state_hash == b.gold_state_hash is not None
    assert score(task.model_copy(deep=True), [], final_state_hash="model") == a
    assert replays == ["cache-copies"]


def test_the_same_id_with_other_content_is_prepared_and_replayed_anew(replays: list[str]) -> None:
    task = make_task("cache-same-id")
    other = make_task("cache-same-id", event_id="evt_0002")
    reseeded = task.model_copy(update={"seed": 8})
    assert prepare(other) is not prepare(task) and prepare(reseeded) is not prepare(task)
    hashes = {score(t, [], final_state_hash="m").gold_state_hash for t in (task, other, reseeded)}
    assert replays == ["cache-same-id"] * 3 and len(hashes) == 3


def test_concurrent_episodes_of_one_task_replay_gold_once(replays: list[str]) -> None:
    task = make_task("cache-threads")
    with ThreadPoolExecutor(8) as pool:
        hashes = set(
            pool.map(
                lambda _: score(task.model_copy(), [], final_state_hash="m").gold_state_hash,
                range(32),
            )
        )
    assert replays == ["cache-threads"] and len(hashes) == 1


def test_a_stored_final_state_hash_is_used_without_a_replay(replays: list[str]) -> None:
    task = make_task("cache-stored").model_copy(update={"final_state_hash": "stored"})
    assert score(task, [], final_state_hash="stored").components["state"] == 1.0
    assert replays == []
