"""The ``>>>`` examples in the reward's docstrings run and hold."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import prove_gym.reward

MODULES = sorted(
    m.name for m in pkgutil.iter_modules(prove_gym.reward.__path__, prefix="prove_gym.reward.")
)
COMPONENT_MODULES = {
    "validity",
    "coverage",
    "efficiency",
    "tool_name",
    "arguments",
    "abstention",
    "state",
    "score",
    "values",
    "components",
    "config",
}


def test_every_component_has_a_module() -> None:
    assert {m.rsplit(".", 1)[1] for m in MODULES} >= COMPONENT_MODULES


@pytest.mark.parametrize("name", ["prove_gym.reward", *MODULES])
def test_doctests_of_the_reward_modules_pass(name: str) -> None:
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS, verbose=False)
    assert result.failed == 0, f"{result.failed} doctest(s) failed in {name}"
    if name.rsplit(".", 1)[1] in COMPONENT_MODULES | {"reward"}:
        assert result.attempted > 0, f"{name} has no runnable example"
