"""A sampler's Faker draws exactly what a plain ``Faker("en_US")`` of the same seed draws."""

from __future__ import annotations

from collections import OrderedDict

from faker import Faker
from hypothesis import given, settings
from hypothesis import strategies as st

from prove_gym.server.base import _seeded_faker

_DRAWS = (
    "first_name",
    "last_name",
    "name",
    "company",
    "city",
    "street_address",
    "free_email_domain",
    "sentence",
    "job",
    "state_abbr",
)


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**63), picks=st.lists(st.sampled_from(_DRAWS), max_size=40))
def test_the_seeded_faker_draws_what_faker_draws(seed: int, picks: list[str]) -> None:
    plain = Faker("en_US")
    plain.seed_instance(seed)
    fast = _seeded_faker(seed)
    for pick in picks:
        assert getattr(fast, pick)() == getattr(plain, pick)(), pick
    # the generators stayed in step: the next raw draw agrees too
    assert fast.random.random() == plain.random.random()


@settings(max_examples=30, deadline=None)
@given(
    seed=st.integers(0, 2**32),
    weights=st.lists(st.floats(0.001, 100.0), min_size=1, max_size=30),
    length=st.integers(1, 5),
)
def test_weighted_draws_from_any_pool_match(seed: int, weights: list[float], length: int) -> None:
    plain = Faker("en_US")
    plain.seed_instance(seed)
    fast = _seeded_faker(seed)
    pool = OrderedDict((f"v{i}", w) for i, w in enumerate(weights))
    for _ in range(3):  # the second and later draws use the sums kept on the pool
        assert fast.random_elements(pool, length=length) == plain.random_elements(
            pool, length=length
        )
        assert fast.random_element(pool) == plain.random_element(pool)
        k = min(length, len(pool))  # a unique draw is Faker's own
        assert fast.random_elements(pool, k, unique=True) == plain.random_elements(
            pool, k, unique=True
        )
