"""Spaces for text environments."""

from __future__ import annotations

from typing import Any

from gymnasium.spaces import Text


class AnyText(Text):
    """A ``Text`` space that contains any Python string up to ``max_length``.

    Gymnasium's ``Text`` only admits characters from a fixed charset; model
    messages and tool results are arbitrary Unicode (JSON, names, emoji).
    ``sample()`` still draws from the alphanumeric charset, which gives the
    env checker plain messages without tool calls.
    """

    def __init__(self, max_length: int, *, min_length: int = 0, seed: Any = None) -> None:
        super().__init__(max_length=max_length, min_length=min_length, seed=seed)

    def contains(self, x: Any) -> bool:
        return isinstance(x, str) and self.min_length <= len(x) <= self.max_length

    def __repr__(self) -> str:
        return f"AnyText({self.min_length}, {self.max_length})"
