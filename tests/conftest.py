"""Shared fixtures. Tests import nothing from each other (pytest runs with --import-mode=importlib)."""

from __future__ import annotations

import os
import warnings

import pytest
from hypothesis import HealthCheck, settings

import prove_gym
from prove_gym import Server

# CI (CI=true) runs every property test on fixed examples, so a red run is reproducible and a
# green one is not luck; locally, examples are random. Long campaigns live in benchmarks/.
settings.register_profile(
    "ci",
    derandomize=True,
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile("dev", deadline=None)

# When a run on several workers ends, pytest-xdist's channel stops each worker's main thread
# with KeyboardInterrupt (execnet's interrupt_main); if that lands while pytest's final
# garbage collection runs SQLAlchemy's weakref callback, Python reports it as unraisable and
# pytest prints it after the summary, as if a test had failed. It is that shutdown and
# nothing else: this filter hides exactly that message.
warnings.filterwarnings(
    "ignore",
    message=r"Exception ignored in: <function _collection_gced",
    category=pytest.PytestUnraisableExceptionWarning,
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev"))


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--slow",
        action="store_true",
        help="also run the slow end-to-end tests (pip installs, fresh-process campaigns, Ray); "
        "CI=true runs them too",
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """A plain ``pytest`` is the quick, meaningful run; ``--slow`` (and CI) is the whole suite."""
    if config.getoption("--slow") or os.environ.get("CI"):
        return
    skip = pytest.mark.skip(reason="slow end-to-end test: `pytest --slow` runs it (CI does)")
    for item in items:
        if item.get_closest_marker("slow") is not None:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def calendar() -> Server:
    return prove_gym.get_server("calendar")
