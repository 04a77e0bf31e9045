"""``Weighted``: a sampler's weighted draw, the weights added up once, the state unchanged."""

from __future__ import annotations

import random

from hypothesis import given
from hypothesis import strategies as st

from prove_gym.server import Weighted


@given(
    weights=st.lists(st.integers(0, 1000) | st.floats(0.0, 50.0), min_size=1, max_size=30).filter(
        lambda ws: sum(ws) > 0
    ),
    seed=st.integers(0, 2**32 - 1),
    draws=st.integers(1, 20),
)
def test_a_pick_draws_what_choices_with_the_weights_draws_from_the_same_stream(
    weights: list[float], seed: int, draws: int
) -> None:
    """Swapping ``rng.choices(values, weights)[0]`` for ``Weighted.pick`` keeps every draw
    and the generator's state, so a sampler's states keep their bytes."""
    values = [f"v{i}" for i in range(len(weights))]
    table = Weighted(zip(values, weights, strict=True))
    ours, theirs = random.Random(seed), random.Random(seed)
    for _ in range(draws):
        assert table.pick(ours) == theirs.choices(values, weights=weights)[0]
    assert ours.getstate() == theirs.getstate()
