"""Test kits for server plugins (install the ``dev`` extra: hypothesis and pytest).

- :func:`junk_arguments`, :func:`fuzz_arguments`, :func:`hostile_values`: hypothesis
  strategies for the arguments a confused or hostile client sends; :func:`hostile_cases`,
  a fixed battery of them.
- :mod:`prove_gym.testing.conformance`: the suite every server plugin runs in two lines
  (imported on its own; it needs pytest)::

      from prove_gym.testing.conformance import conformance_suite

      TestConformance = conformance_suite("calendar", samples=["evt_0001", "evt_9999"])
"""

from prove_gym.testing.strategies import (
    HUGE_INTS,
    ODD_NUMBERS,
    ODD_TEXT,
    PATH_LIKE,
    PATTERN_LIKE,
    fuzz_arguments,
    hostile_cases,
    hostile_numbers,
    hostile_strings,
    hostile_values,
    junk_arguments,
    long_strings,
    nested_values,
)

__all__ = [
    "HUGE_INTS",
    "ODD_NUMBERS",
    "ODD_TEXT",
    "PATH_LIKE",
    "PATTERN_LIKE",
    "fuzz_arguments",
    "hostile_cases",
    "hostile_numbers",
    "hostile_strings",
    "hostile_values",
    "junk_arguments",
    "long_strings",
    "nested_values",
]
