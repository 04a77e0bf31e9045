"""Hypothesis strategies for testing server plugins (install the ``dev`` extra for hypothesis).

>>> from prove_gym.testing import junk_arguments
>>> strategy = junk_arguments(server.tools["get_event"], samples=["evt_0001", "evt_9999"])  # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hypothesis import strategies as st

from prove_gym.server.tool import ToolSpec


def junk_arguments(
    spec: ToolSpec, samples: Sequence[Any] = (), *, text_size: int = 30
) -> st.SearchStrategy[dict[str, Any]]:
    """Random argument dicts a confused model might send to ``spec``.

    Keys mix the tool's real parameter names with junk; values are JSON
    scalars of every type (finite floats: JSON has no NaN), short lists and
    dicts of them, and ``samples``, the server's plausible-looking values
    (real and unknown ids, dates, enum words) that reach deeper into the tool.

    Args:
        spec: The tool to fuzz.
        samples: Server-specific values to mix in, such as ``["evt_0001", "evt_9999"]``.
        text_size: Longest random string.
    """
    options = [
        st.none(),
        st.booleans(),
        st.integers(-(10**6), 10**6),
        st.floats(allow_nan=False, allow_infinity=False),
        st.text(max_size=text_size),
    ]
    if samples:
        options.append(st.sampled_from(list(samples)))
    scalars = st.one_of(*options)
    values = st.one_of(
        scalars,
        st.lists(scalars, max_size=3),
        st.dictionaries(st.text(max_size=5), scalars, max_size=2),
    )
    names = [p.name for p in spec.params]
    keys = st.sampled_from(names) | st.text(max_size=8) if names else st.text(max_size=8)
    return st.dictionaries(keys, values, max_size=len(names) + 2)
