"""State sizes are bounded: a task, an env or a synthesis run asking for a huge state is
refused before anything is sampled, never left sampling for hours."""

from __future__ import annotations

import gymnasium
import pytest
from pydantic import ValidationError

import prove_gym
from prove_gym import Task
from prove_gym.server.state import MAX_STATE_SIZE
from prove_gym.synth import SynthConfig

TURNS = [{"user": "What is on my calendar?"}]


@pytest.mark.parametrize("size", [0, -1, MAX_STATE_SIZE + 1, 10**9])
def test_a_task_of_an_impossible_size_is_rejected_when_parsed(size: int) -> None:
    with pytest.raises(ValidationError, match="size"):
        Task(id="t", servers=["calendar"], size=size, turns=TURNS)
    env = gymnasium.make("prove/calendar-v0")
    task = {"id": "t", "servers": ["calendar"], "size": size, "turns": TURNS}
    with pytest.raises(ValueError, match="size"):
        env.reset(options={"task": task})


@pytest.mark.parametrize("server", sorted(prove_gym.get_registry().servers))
def test_every_server_refuses_a_size_past_the_cap(server: str) -> None:
    with pytest.raises(ValueError, match=f"size must be from 1 to {MAX_STATE_SIZE}"):
        prove_gym.get_server(server).sample(seed=0, size=MAX_STATE_SIZE + 1)


def test_synthesis_refuses_sizes_past_the_cap() -> None:
    for kwargs in ({"sizes": (1, MAX_STATE_SIZE + 1)}, {"size": 10**6}):
        with pytest.raises(ValueError, match="sizes"):
            SynthConfig(**kwargs)
    assert SynthConfig(sizes=(1, MAX_STATE_SIZE)).sizes == (1, MAX_STATE_SIZE)
