"""Fewer cyclic-GC passes while a state is built or a synthesis block runs."""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

YOUNG_GENERATION = 20_000
"""Allocations between young collections inside :func:`rare_collections` (CPython: 700)."""

_lock = threading.Lock()
_depth = 0
_saved: tuple[int, ...] = ()


@contextmanager
def rare_collections() -> Iterator[None]:
    """Run with a young GC generation of :data:`YOUNG_GENERATION` allocations.

    Sampling a state allocates tens of thousands of short-lived objects, and a process
    that synthesizes keeps thousands alive besides: at CPython's default each 700
    allocations start a collection, and the full ones walk every live object. Inside
    this block cycles are still collected, in fewer and larger passes (a 6,000-task
    synthesis run peaked at the same memory). Nested or concurrent uses (threads
    sampling at once) share one setting; the last to leave puts the thresholds back.
    """
    global _depth, _saved
    with _lock:
        if _depth == 0:
            _saved = gc.get_threshold()
            gc.set_threshold(YOUNG_GENERATION, *_saved[1:])
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0:
                gc.set_threshold(*_saved)
