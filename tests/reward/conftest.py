"""Fixtures of the reward tests: the calendar's hand-written tasks and a fresh-workspace runner."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pytest

import prove_gym
from prove_gym import CallRecord, Task, Workspace
from prove_gym.synth.ship import is_hand_written


@pytest.fixture(scope="session")
def calendar_tasks() -> dict[str, Task]:
    """The calendar plugin's hand-written tasks, by id."""
    tasks = prove_gym.get_registry().tasks("calendar")
    return {t.id: t for t in tasks if is_hand_written(t)}


@pytest.fixture
def run_calls() -> Callable[..., tuple[list[CallRecord], str]]:
    """Execute ``(name, arguments[, turn])`` tuples on a fresh workspace of a task.

    Returns the live records and the final state hash, as the env would.
    """

    def run(task: Task, calls: Sequence[tuple[Any, ...]]) -> tuple[list[CallRecord], str]:
        with Workspace(task) as ws:
            records = [ws.call(c[0], c[1], turn=c[2] if len(c) > 2 else 0) for c in calls]
            return records, ws.state_hash()

    return run
