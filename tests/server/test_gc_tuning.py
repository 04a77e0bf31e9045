"""``rare_collections``: a larger young GC generation inside, the thresholds put back after."""

from __future__ import annotations

import gc
import threading

import pytest

import prove_gym
from prove_gym.server.gc_tuning import YOUNG_GENERATION, rare_collections


def test_the_young_generation_grows_inside_and_comes_back_after_nesting_and_errors() -> None:
    before = gc.get_threshold()
    with rare_collections():
        assert gc.get_threshold() == (YOUNG_GENERATION, *before[1:])
        with rare_collections():
            assert gc.get_threshold()[0] == YOUNG_GENERATION
        assert gc.get_threshold()[0] == YOUNG_GENERATION  # the outer use is still inside
    assert gc.get_threshold() == before
    with pytest.raises(RuntimeError), rare_collections():
        raise RuntimeError("a sampler failed")
    assert gc.get_threshold() == before


def test_threads_inside_at_once_share_it_and_the_last_to_leave_puts_it_back() -> None:
    before = gc.get_threshold()
    inside, leave_first, first_left, leave_second = (threading.Event() for _ in range(4))
    seen: list[int] = []

    def first() -> None:
        with rare_collections():
            inside.set()
            leave_first.wait(10)
        first_left.set()

    def second() -> None:
        inside.wait(10)
        with rare_collections():
            leave_first.set()
            first_left.wait(10)
            seen.append(gc.get_threshold()[0])  # the first thread has left: still raised
            leave_second.wait(10)

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for t in threads:
        t.start()
    first_left.wait(10)
    leave_second.set()
    for t in threads:
        t.join(10)
    assert seen == [YOUNG_GENERATION]
    assert gc.get_threshold() == before


def test_sampling_a_state_puts_the_thresholds_back() -> None:
    before = gc.get_threshold()
    prove_gym.get_registry().get_server("calendar").sample(3, 1)
    assert gc.get_threshold() == before
