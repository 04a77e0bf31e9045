"""Formatters: how prompts and tool results are rendered as the text a model reads."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from prove_gym.server.result import ToolResult


@runtime_checkable
class Formatter(Protocol):
    """Renders the parts of an episode a model sees as text."""

    def system_prompt(self, tools: Sequence[dict[str, Any]], instructions: str) -> str:
        """The system message: instructions plus the offered tools."""
        ...

    def tool_results(self, results: Sequence[ToolResult]) -> str:
        """The observation after a message with tool calls, one block per call in order."""
        ...


class HermesFormatter:
    """Hermes / Qwen2.5 conventions: tools in ``<tools>``, results in ``<tool_response>``.

    >>> HermesFormatter().tool_results([ToolResult.success({"id": "evt_1"})])
    '<tool_response>\\n{"id": "evt_1"}\\n</tool_response>'
    """

    def system_prompt(self, tools: Sequence[dict[str, Any]], instructions: str) -> str:
        lines = "\n".join(json.dumps(t, ensure_ascii=False) for t in tools)
        return (
            f"{instructions.strip()}\n\n# Tools\n\n"
            "You may call one or more functions to assist with the user query.\n\n"
            "You are provided with function signatures within <tools></tools> XML tags:\n"
            f"<tools>\n{lines}\n</tools>\n\n"
            "For each function call, return a json object with function name and arguments "
            "within <tool_call></tool_call> XML tags:\n<tool_call>\n"
            '{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call>'
        ).strip()

    def tool_results(self, results: Sequence[ToolResult]) -> str:
        return "\n".join(f"<tool_response>\n{r.to_text()}\n</tool_response>" for r in results)
