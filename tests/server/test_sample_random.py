"""A sampler's ``SampleRandom`` draws exactly what ``random.Random`` draws: every state's
bytes depend on it."""

from __future__ import annotations

import random
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from prove_gym.server.base import SampleRandom

BIG = 2**70  # beyond one 64-bit word of getrandbits


def _outcome(rng: random.Random, method: str, args: tuple[Any, ...]) -> tuple[str, Any]:
    """What the call returned or raised, then the generator's next draws."""
    try:
        value: Any = ("ok", getattr(rng, method)(*args))
    except Exception as error:  # the same error, as a value to compare
        value = ("error", f"{type(error).__name__}: {error}")
    return value, [rng.getrandbits(64) for _ in range(3)]


ints = st.integers(-BIG, BIG) | st.integers(-40, 40)
calls = st.one_of(
    st.tuples(st.just("choice"), st.tuples(st.lists(st.integers(), max_size=70))),
    st.tuples(st.just("choice"), st.tuples(st.text(max_size=5))),
    st.tuples(st.just("choice"), st.tuples(st.builds(range, st.integers(0, BIG)))),
    st.tuples(st.just("randint"), st.tuples(ints, ints)),
    st.tuples(st.just("randrange"), st.tuples(ints)),
    st.tuples(st.just("randrange"), st.tuples(ints, ints)),
    st.tuples(st.just("randrange"), st.tuples(ints, ints, st.integers(-5, 5))),
    st.tuples(st.just("randrange"), st.tuples(ints, st.none(), st.just(1))),
    st.tuples(st.just("randint"), st.tuples(st.booleans(), st.integers(1, 9))),
)


@given(seed=st.integers(0, 2**64), plan=st.lists(calls, min_size=1, max_size=20))
def test_sample_random_draws_what_random_draws(
    seed: int, plan: list[tuple[str, tuple[Any, ...]]]
) -> None:
    ours, theirs = SampleRandom(seed), random.Random(seed)
    for method, args in plan:
        assert _outcome(ours, method, args) == _outcome(theirs, method, args)
    assert ours.getstate() == theirs.getstate()


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.parametrize(
    ("method", "args"),
    [("randint", (1.0, 3)), ("randrange", (2.0,)), ("randrange", (0, 9.0)), ("choice", ([],))],
)
def test_other_arguments_are_random_s_own(method: str, args: tuple[Any, ...]) -> None:
    """Floats (deprecated, or refused on newer Pythons) and an empty choice: as ``random``."""
    assert _outcome(SampleRandom(5), method, args) == _outcome(random.Random(5), method, args)
