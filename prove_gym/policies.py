"""Reference policies that play an env from its task: the oracle (replays gold) and random.

They speak the env's action format (Hermes text), so they exercise the same
parsing, execution and reward path a model does.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from prove_gym.task import Task


def format_hermes_calls(calls: Iterable[Mapping[str, Any]], content: str = "") -> str:
    """Render calls as ``<tool_call>`` blocks after optional text.

    >>> format_hermes_calls([{"name": "list_calendars", "arguments": {}}])
    '<tool_call>\\n{"name": "list_calendars", "arguments": {}}\\n</tool_call>'
    """
    blocks = [
        "<tool_call>\n"
        + json.dumps({"name": c["name"], "arguments": c.get("arguments", {})}, ensure_ascii=False)
        + "\n</tool_call>"
        for c in calls
    ]
    return "\n".join(([content] if content else []) + blocks)


class OraclePolicy:
    """Plays the gold behaviour: each turn's gold calls in one message, then a closing answer.

    Clarify turns get a question naming the missing values; abstain turns a refusal.
    """

    def __init__(self, task: Task) -> None:
        self.task = task
        self._called: set[int] = set()

    def act(self, turn: int) -> str:
        spec = self.task.turns[turn]
        if spec.kind == "clarify":
            missing = ", ".join(spec.missing) or "the missing details"
            return f"Before I do that, could you tell me {missing}?"
        if spec.kind == "abstain":
            return "Sorry, none of my tools can do that."
        if spec.steps and turn not in self._called:
            self._called.add(turn)
            return format_hermes_calls(
                {"name": s.name, "arguments": s.arguments} for s in spec.steps
            )
        return "Done."


class RandomPolicy:
    """Calls a random offered tool with random-looking arguments, then stops.

    A floor for evaluation: it makes the calls a model with no understanding would.
    """

    def __init__(self, tools: list[dict[str, Any]], seed: int = 0, calls_per_turn: int = 2) -> None:
        self.tools = tools
        self.rng = np.random.default_rng(seed)
        self.calls_per_turn = calls_per_turn
        self._made: dict[int, int] = {}

    def act(self, turn: int) -> str:
        made = self._made.get(turn, 0)
        if made >= self.calls_per_turn or not self.tools:
            return "Done."
        self._made[turn] = made + 1
        tool = self.tools[int(self.rng.integers(len(self.tools)))]["function"]
        args = {}
        for name, schema in tool["parameters"].get("properties", {}).items():
            if name in tool["parameters"].get("required", []) or self.rng.random() < 0.3:
                args[name] = self._value(schema)
        return format_hermes_calls([{"name": tool["name"], "arguments": args}])

    def _value(self, schema: Mapping[str, Any]) -> Any:
        if "enum" in schema:
            return schema["enum"][int(self.rng.integers(len(schema["enum"])))]
        kind = schema.get("type")
        if kind == "integer":
            return int(self.rng.integers(0, 100))
        if kind == "number":
            return float(self.rng.integers(0, 10000)) / 100
        if kind == "boolean":
            return bool(self.rng.integers(2))
        if kind == "array":
            return []
        return f"x{int(self.rng.integers(1000)):03d}"
