"""Shared fixtures. Tests import nothing from each other (pytest runs with --import-mode=importlib)."""

from __future__ import annotations

import pytest

import prove_gym
from prove_gym import Server


@pytest.fixture(scope="session")
def calendar() -> Server:
    return prove_gym.get_server("calendar")
