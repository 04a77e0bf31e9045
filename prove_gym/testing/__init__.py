"""Test kits for server plugins (install the ``dev`` extra: hypothesis and pytest).

- :func:`junk_arguments`, :func:`fuzz_arguments`, :func:`hostile_values`,
  :func:`hostile_patterns`: hypothesis strategies for the arguments a confused or hostile
  client sends; :func:`hostile_cases`, a fixed battery of them; :func:`hostile_actions`,
  whole assistant messages (10,000 calls, 10,000-deep JSON) for an env.
- :mod:`prove_gym.testing.conformance`: the suite every server plugin runs in two lines
  (imported on its own; it needs pytest)::

      from prove_gym.testing.conformance import conformance_suite

      TestConformance = conformance_suite("calendar", samples=["evt_0001", "evt_9999"])

- :mod:`prove_gym.testing.llm_stub`: a stand-in OpenAI-compatible chat endpoint on
  127.0.0.1 (imported on its own), with deterministic rewrites, hostile ones among them,
  for the LLM writer of synthesis.
"""

from prove_gym.testing.strategies import (
    GLOB_PATTERNS,
    HUGE_INTS,
    ODD_NUMBERS,
    ODD_TEXT,
    PATH_LIKE,
    PATTERN_LIKE,
    REDOS_PATTERNS,
    fuzz_arguments,
    hostile_action_cases,
    hostile_actions,
    hostile_cases,
    hostile_numbers,
    hostile_patterns,
    hostile_strings,
    hostile_values,
    junk_arguments,
    long_strings,
    nested_values,
)

__all__ = [
    "GLOB_PATTERNS",
    "HUGE_INTS",
    "ODD_NUMBERS",
    "ODD_TEXT",
    "PATH_LIKE",
    "PATTERN_LIKE",
    "REDOS_PATTERNS",
    "fuzz_arguments",
    "hostile_action_cases",
    "hostile_actions",
    "hostile_cases",
    "hostile_numbers",
    "hostile_patterns",
    "hostile_strings",
    "hostile_values",
    "junk_arguments",
    "long_strings",
    "nested_values",
]
