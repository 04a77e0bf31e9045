"""Action parsers: the assistant's raw text → tool calls.

A parser never raises on model output. A call it cannot read becomes a
:class:`ParsedCall` with ``error`` set, which the env turns into an error
observation the model can learn from (and a call that scores zero validity).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable


@dataclass(frozen=True, slots=True)
class ParsedCall:
    """A tool call read from text.

    Attributes:
        name: The tool name ("" if it could not be read).
        arguments: The arguments object (``None`` if it could not be read).
        error: Why the call could not be parsed, written for the model; ``None`` if fine.
        raw: The text of the call as the model wrote it.
    """

    name: str
    arguments: Any
    error: str | None = None
    raw: str = ""


@dataclass(frozen=True, slots=True)
class ParsedAction:
    """The assistant message split into free text and calls."""

    content: str
    calls: tuple[ParsedCall, ...]


@runtime_checkable
class ActionParser(Protocol):
    """Turns an assistant message into text plus tool calls."""

    def parse(self, text: str) -> ParsedAction: ...


class HermesParser:
    """Hermes / Qwen format: ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>``.

    Several blocks per message are allowed. ``arguments`` may also be a JSON
    string holding an object (some models emit that). An unclosed final block
    is read up to the end of the text.

    >>> HermesParser().parse('<tool_call>{"name": "list_calendars", "arguments": {}}</tool_call>').calls[0].name
    'list_calendars'
    """

    _BLOCK = re.compile(r"<tool_call>(.*?)(?:</tool_call>|\Z)", re.DOTALL)

    def parse(self, text: str) -> ParsedAction:
        if not isinstance(text, str):
            text = str(text)
        calls = tuple(self._parse_one(m.group(1)) for m in self._BLOCK.finditer(text))
        content = self._BLOCK.sub("", text).strip()
        return ParsedAction(content=content, calls=calls)

    @staticmethod
    def _parse_one(body: str) -> ParsedCall:
        raw = body.strip()
        try:
            obj = json.loads(raw)
        except json.JSONDecodeError as exc:
            return ParsedCall(
                "",
                None,
                f"Could not parse the tool call as JSON ({exc.msg} at position {exc.pos}). "
                'Write it as <tool_call>{"name": "tool_name", "arguments": {...}}</tool_call>.',
                raw,
            )
        return call_from_object(obj, raw)


def call_from_object(obj: Any, raw: str = "") -> ParsedCall:
    """Read ``{"name": ..., "arguments": ...}`` (or OpenAI's ``function`` wrapper)."""
    if isinstance(obj, dict) and isinstance(obj.get("function"), dict):
        obj = obj["function"]
    if not isinstance(obj, dict) or not isinstance(obj.get("name"), str) or not obj["name"]:
        return ParsedCall(
            "",
            None,
            'A tool call must be a JSON object with a string "name" and an "arguments" object.',
            raw,
        )
    args = obj.get("arguments", obj.get("parameters", {}))
    if isinstance(args, str):
        try:
            args = json.loads(args) if args.strip() else {}
        except json.JSONDecodeError:
            return ParsedCall(
                obj["name"], None, f'The "arguments" of {obj["name"]} are not valid JSON.', raw
            )
    return ParsedCall(obj["name"], args, None, raw)


class JsonListParser:
    """A bare JSON list (or object) of calls, as some harnesses emit: ``[{"name": ..., ...}]``."""

    def parse(self, text: str) -> ParsedAction:
        stripped = text.strip() if isinstance(text, str) else ""
        if not stripped.startswith(("[", "{")):
            return ParsedAction(content=stripped, calls=())
        try:
            obj = json.loads(stripped)
        except json.JSONDecodeError:
            return ParsedAction(content=stripped, calls=())
        items = obj if isinstance(obj, list) else [obj]
        return ParsedAction(
            content="", calls=tuple(call_from_object(o, json.dumps(o)) for o in items)
        )
