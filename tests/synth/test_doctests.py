"""The ``>>>`` examples in the synthesis modules' docstrings run and hold."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import prove_gym.synth

MODULES = sorted(
    m.name for m in pkgutil.iter_modules(prove_gym.synth.__path__, prefix="prove_gym.synth.")
)


@pytest.mark.parametrize("name", MODULES)
def test_doctests_of_the_synthesis_modules_pass(name: str) -> None:
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS, verbose=False)
    assert result.failed == 0, f"{result.failed} doctest(s) failed in {name}"
