"""Tool-call formats: how a model writes tool calls and reads what comes back.

A :class:`ToolCallFormat` is one object per convention. It

- lists the offered tools in the system message (:meth:`~ToolCallFormat.system_message`)
  and renders the opening prompt (:meth:`~ToolCallFormat.prompt`);
- parses an assistant message into free text and calls (:meth:`~ToolCallFormat.parse`);
- renders calls back as an assistant message (:meth:`~ToolCallFormat.render_calls`):
  what the oracle policy sends, so it speaks whatever format the env was built with;
- renders what the env answers after an assistant message, tool results and/or the
  next user turn, as the next observation (:meth:`~ToolCallFormat.feedback`).

Parsing never raises on model output: a call that cannot be read becomes a
:class:`ParsedCall` with ``error`` set, which the episode turns into a
``parse_error`` result the model sees (and a call that earns no validity).

Formats are registered by name through the ``prove_gym_tool_call_formats`` hook;
the built-in ones are ``hermes`` (the default), ``json`` and, when transformers
is installed, ``chat_template``.
"""

from __future__ import annotations

import json
import re
import threading
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

HERMES_CHAT_TEMPLATE = (
    "{%- if tools %}"
    "{{- '<|im_start|>system\\n' }}"
    "{%- if messages[0].role == 'system' %}{{- messages[0].content + '\\n\\n' }}{%- endif %}"
    "{{- '# Tools\\n\\nYou may call one or more functions to assist with the user query.\\n\\n"
    "You are provided with function signatures within <tools></tools> XML tags:\\n<tools>' }}"
    "{%- for tool in tools %}{{- '\\n' + (tool | tojson) }}{%- endfor %}"
    "{{- '\\n</tools>\\n\\nFor each function call, return a json object with function name and "
    "arguments within <tool_call></tool_call> XML tags:\\n<tool_call>\\n"
    '{"name": <function-name>, "arguments": <args-json-object>}\\n</tool_call><|im_end|>\\n\' }}'
    "{%- elif messages[0].role == 'system' %}"
    "{{- '<|im_start|>system\\n' + messages[0].content + '<|im_end|>\\n' }}"
    "{%- endif %}"
    "{%- for message in messages %}"
    "{%- if message.role == 'system' and loop.first %}"
    "{%- elif message.role == 'tool' %}"
    "{%- if loop.first or messages[loop.index0 - 1].role != 'tool' %}{{- '<|im_start|>user' }}{%- endif %}"
    "{{- '\\n<tool_response>\\n' + message.content + '\\n</tool_response>' }}"
    "{%- if loop.last or messages[loop.index0 + 1].role != 'tool' %}{{- '<|im_end|>\\n' }}{%- endif %}"
    "{%- elif message.role == 'assistant' %}"
    "{{- '<|im_start|>assistant\\n' + (message.content or '') }}"
    "{%- for tc in (message.tool_calls or []) %}"
    "{%- set f = tc.function if tc.function is defined else tc %}"
    "{%- if message.content or not loop.first %}{{- '\\n' }}{%- endif %}"
    "{{- '<tool_call>\\n{\"name\": ' + (f.name | tojson) + ', \"arguments\": ' }}"
    "{{- (f.arguments if f.arguments is string else (f.arguments | tojson)) + '}\\n</tool_call>' }}"
    "{%- endfor %}"
    "{{- '<|im_end|>\\n' }}"
    "{%- else %}"
    "{{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>\\n' }}"
    "{%- endif %}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
)
"""A ChatML chat template with Hermes tool calls (the Qwen2.5 conventions), for models whose
own template cannot render tools (such as SmolLM2). With ``tools`` it renders the system
prompt exactly as the env's ``hermes`` formatter does."""

__all__ = [
    "ChatTemplateFormat",
    "HermesFormat",
    "JsonFormat",
    "ParsedAction",
    "ParsedCall",
    "ToolCallFormat",
    "call_from_object",
]

Message = Mapping[str, Any]
"""An OpenAI-style chat message: ``{"role", "content", "tool_calls"?, "name"?}``."""


@dataclass(frozen=True, slots=True)
class ParsedCall:
    """A tool call read from a model's message.

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
    """An assistant message split into its free text and its calls."""

    content: str
    calls: tuple[ParsedCall, ...]


def _loads(text: str) -> tuple[Any, str | None]:
    """``json.loads`` that reports, instead of raising, on any input (deep nesting included)."""
    try:
        return json.loads(text), None
    except json.JSONDecodeError as exc:
        return None, f"{exc.msg} at position {exc.pos}"
    except RecursionError:
        return None, "nested too deeply"
    except ValueError as exc:  # e.g. an integer string longer than Python's digit limit
        return None, str(exc).split("\n", 1)[0][:200]


MAX_CALL_DEPTH = 64
"""Deepest nesting a structured call's arguments may have (the session allows 16)."""


def too_deep(value: Any, limit: int = MAX_CALL_DEPTH) -> bool:
    """Whether lists and objects in ``value`` nest deeper than ``limit``, found without
    recursion (a structured action may nest 10,000 deep; ``json.dumps`` and ``repr`` of it
    raise ``RecursionError``).

    >>> too_deep({"a": [[1]]}, limit=2), too_deep({"a": [[1]]}, limit=3)
    (True, False)
    """
    stack: list[tuple[Any, int]] = [(value, 0)]
    seen = 0
    while stack and seen < 1_000_000:
        item, depth = stack.pop()
        seen += 1
        if isinstance(item, Mapping | list | tuple):
            if depth >= limit:
                return True
            children = item.values() if isinstance(item, Mapping) else item
            stack.extend((child, depth + 1) for child in children)
    return False


def call_from_object(obj: Any, raw: str = "") -> ParsedCall:
    """Read ``{"name": ..., "arguments": ...}``, OpenAI's ``function`` wrapper or ``parameters``.

    ``arguments`` given as JSON text holding an object (the OpenAI wire format)
    is decoded.

    >>> call_from_object({"function": {"name": "get_event", "arguments": '{"event_id": "evt_1"}'}})
    ParsedCall(name='get_event', arguments={'event_id': 'evt_1'}, error=None, raw='')
    """
    if isinstance(obj, Mapping) and isinstance(obj.get("function"), Mapping):
        obj = obj["function"]
    if not isinstance(obj, Mapping) or not isinstance(obj.get("name"), str) or not obj["name"]:
        return ParsedCall(
            "",
            None,
            'A tool call must be a JSON object with a string "name" and an "arguments" object.',
            raw,
        )
    name = obj["name"]
    args = obj.get("arguments", obj.get("parameters", {}))
    if too_deep(args):
        return ParsedCall(
            name,
            None,
            f'The "arguments" of {name} are nested too deeply (more than {MAX_CALL_DEPTH} '
            "levels of lists and objects): send a flat JSON object.",
            raw,
        )
    if isinstance(args, str):
        if not args.strip():
            args = {}
        else:
            args, problem = _loads(args)
            if problem is not None:
                return ParsedCall(
                    name, None, f'The "arguments" of {name} are not valid JSON ({problem}).', raw
                )
    return ParsedCall(name, args, None, raw)


def _tool_lines(tools: Sequence[Mapping[str, Any]]) -> str:
    return "\n".join(json.dumps(t, ensure_ascii=False) for t in tools)


class ToolCallFormat(ABC):
    """One tool-call convention: parse calls, render calls, results, prompts.

    Subclass it to add a format, and return an instance from a plugin's
    ``prove_gym_tool_call_formats`` hook. A format must be stateless (one
    instance serves every episode, from several threads), and
    ``parse(render_calls(calls))`` must give back ``calls``: that is what makes
    the oracle score the maximum in every format.
    """

    name: str = ""
    parallel_calls: bool = True
    """Whether one assistant message may hold several calls (the oracle sends one per message
    otherwise)."""

    @abstractmethod
    def system_message(self, instructions: str, tools: Sequence[Mapping[str, Any]]) -> str:
        """The system message's content: the instructions, and the tools unless passed natively."""

    @abstractmethod
    def parse(self, text: str) -> ParsedAction:
        """Split an assistant message into its text and calls; never raises."""

    @abstractmethod
    def render_calls(self, calls: Iterable[Mapping[str, Any]], content: str = "") -> str:
        """An assistant message making ``calls`` (``{"name", "arguments"}``) after ``content``."""

    def prompt(self, messages: Sequence[Message], tools: Sequence[Mapping[str, Any]]) -> str:
        """The first observation: the system message and the first user turn, as text."""
        return "\n\n".join(str(m.get("content") or "") for m in messages)

    def feedback(self, messages: Sequence[Message], tools: Sequence[Mapping[str, Any]]) -> str:
        """The observation after an assistant message: its tool results, or the next user turn.

        Args:
            messages: What the env answered, OpenAI style: ``tool`` messages (one per
                call, in order) or one ``user`` message; empty at the end of the episode.
            tools: The offered tools (for formats that render through a template).
        """
        results = [m for m in messages if m["role"] == "tool"]
        if results:
            return self.render_results(results)
        return "\n\n".join(str(m.get("content") or "") for m in messages)

    def render_results(self, results: Sequence[Message]) -> str:
        """Tool messages as the text the model reads (one block per call, in order)."""
        return "\n".join(str(m.get("content") or "") for m in results)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r})"


class HermesFormat(ToolCallFormat):
    """Hermes / Qwen: tools in ``<tools>``, calls in ``<tool_call>``, results in ``<tool_response>``.

    Several call blocks per message are allowed; ``arguments`` may be JSON text
    holding an object (some models emit that); an unclosed final block is read
    up to the end of the text.

    >>> fmt = HermesFormat()
    >>> text = fmt.render_calls([{"name": "list_calendars", "arguments": {}}])
    >>> text
    '<tool_call>\\n{"name": "list_calendars", "arguments": {}}\\n</tool_call>'
    >>> fmt.parse(text).calls[0].name
    'list_calendars'
    """

    name = "hermes"
    # Linear: a literal opener, then the shortest run up to the closer or the end.
    _BLOCK = re.compile(r"<tool_call>(.*?)(?:</tool_call>|\Z)", re.DOTALL)

    def system_message(self, instructions: str, tools: Sequence[Mapping[str, Any]]) -> str:
        return (
            f"{instructions.strip()}\n\n# Tools\n\n"
            "You may call one or more functions to assist with the user query.\n\n"
            "You are provided with function signatures within <tools></tools> XML tags:\n"
            f"<tools>\n{_tool_lines(tools)}\n</tools>\n\n"
            "For each function call, return a json object with function name and arguments "
            "within <tool_call></tool_call> XML tags:\n<tool_call>\n"
            '{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call>'
        ).strip()

    def parse(self, text: str) -> ParsedAction:
        if not isinstance(text, str):
            text = str(text)
        calls: list[ParsedCall] = []
        outside: list[str] = []  # the text around the blocks: the content (one scan)
        end = 0
        for m in self._BLOCK.finditer(text):
            outside.append(text[end : m.start()])
            calls.append(self._parse_one(m.group(1)))
            end = m.end()
        outside.append(text[end:])
        return ParsedAction(content="".join(outside).strip(), calls=tuple(calls))

    @staticmethod
    def _parse_one(body: str) -> ParsedCall:
        raw = body.strip()
        obj, problem = _loads(raw)
        if problem is not None:
            return ParsedCall(
                "",
                None,
                f"Could not parse the tool call as JSON ({problem}). "
                'Write it as <tool_call>{"name": "tool_name", "arguments": {...}}</tool_call>.',
                raw,
            )
        return call_from_object(obj, raw)

    def render_calls(self, calls: Iterable[Mapping[str, Any]], content: str = "") -> str:
        blocks = [
            "<tool_call>\n"
            + json.dumps(
                {"name": c["name"], "arguments": c.get("arguments", {})}, ensure_ascii=False
            )
            + "\n</tool_call>"
            for c in calls
        ]
        return "\n".join(([content] if content else []) + blocks)

    def render_results(self, results: Sequence[Message]) -> str:
        return "\n".join(
            f"<tool_response>\n{m.get('content') or ''}\n</tool_response>" for m in results
        )


class JsonFormat(ToolCallFormat):
    """Plain JSON, as some harnesses speak: a message that is a JSON list of calls calls them.

    A message whose whole text is a JSON list (or one object) of
    ``{"name", "arguments"}`` calls is a tool-calling message; any other text is
    an answer to the user. Results come back as one JSON object.

    >>> fmt = JsonFormat()
    >>> text = fmt.render_calls([{"name": "get_event", "arguments": {"event_id": "evt_0001"}}])
    >>> text
    '[{"name": "get_event", "arguments": {"event_id": "evt_0001"}}]'
    >>> fmt.parse(text).calls[0].arguments, fmt.parse("All done.").calls
    ({'event_id': 'evt_0001'}, ())
    """

    name = "json"

    def system_message(self, instructions: str, tools: Sequence[Mapping[str, Any]]) -> str:
        return (
            f"{instructions.strip()}\n\n# Tools\n\n"
            f"These functions are available, one JSON schema per line:\n{_tool_lines(tools)}\n\n"
            "To call functions, answer with only a JSON list of calls and nothing else, such as "
            '[{"name": <function-name>, "arguments": <args-json-object>}]. '
            "Their results come back as JSON. To answer the user, write plain text."
        ).strip()

    def parse(self, text: str) -> ParsedAction:
        stripped = text.strip() if isinstance(text, str) else str(text).strip()
        if not stripped.startswith(("[", "{")):
            return ParsedAction(content=stripped, calls=())
        obj, problem = _loads(stripped)
        if problem is not None:
            call = ParsedCall(
                "",
                None,
                f"Could not parse the message as a JSON list of calls ({problem}). Write "
                '[{"name": "tool_name", "arguments": {...}}], or plain text to answer the user.',
                stripped,
            )
            return ParsedAction(content="", calls=(call,))
        items = obj if isinstance(obj, list) else [obj]
        return ParsedAction(
            content="",
            calls=tuple(call_from_object(o, json.dumps(o, ensure_ascii=False)) for o in items),
        )

    def render_calls(self, calls: Iterable[Mapping[str, Any]], content: str = "") -> str:
        # A JSON message holds calls only: the content of a calling turn is not sent.
        return json.dumps(
            [{"name": c["name"], "arguments": c.get("arguments", {})} for c in calls],
            ensure_ascii=False,
        )

    def render_results(self, results: Sequence[Message]) -> str:
        out = []
        for m in results:
            content = str(m.get("content") or "")
            value, problem = _loads(content)
            out.append({"name": m.get("name"), "result": content if problem else value})
        return json.dumps({"tool_results": out}, ensure_ascii=False)


_SENTINEL = "PROVE-SENTINEL-7f3a9c"


class ChatTemplateFormat(ToolCallFormat):
    """A model's own chat template (transformers' ``apply_chat_template(tools=...)``).

    Prompts and feedback are rendered by the tokenizer's template, so the
    observation is exactly the text the model reads between its turns (chat
    markup included, ending with the generation prompt). Calls are parsed with
    the tokenizer's ``parse_response`` when it has a response template (TRL's
    ``add_response_schema`` sets one for known templates), else as Hermes
    ``<tool_call>`` blocks or a bare JSON call (Llama 3 style); calls are
    rendered by the template itself.

    Args:
        tokenizer: A Hugging Face tokenizer with a chat template that renders
            tools. ``None``: a minimal offline tokenizer with
            :data:`HERMES_CHAT_TEMPLATE` (ChatML with
            Hermes tool calls), built on first use.
        name: The name it is registered under.
    """

    def __init__(self, tokenizer: Any = None, *, name: str = "chat_template") -> None:
        self.name = name
        self._tokenizer = tokenizer
        self._lock = threading.Lock()
        self._fallback = HermesFormat()
        self._parallel: bool | None = None

    @property
    def tokenizer(self) -> Any:
        """The tokenizer whose template renders everything (built on first use by default)."""
        if self._tokenizer is None:
            with self._lock:
                if self._tokenizer is None:
                    self._tokenizer = _template_tokenizer()
        return self._tokenizer

    @property
    def parallel_calls(self) -> bool:  # type: ignore[override]
        """Whether the template renders two calls in one message (Llama 3's refuses)."""
        if self._parallel is None:
            two = [{"name": "a", "arguments": {}}, {"name": "b", "arguments": {}}]
            try:
                self.render_calls(two)
                self._parallel = True
            except Exception:  # the template raised on purpose: one call per message
                self._parallel = False
        return self._parallel

    def _render(
        self,
        messages: Sequence[Message],
        tools: Sequence[Mapping[str, Any]] | None,
        *,
        generation_prompt: bool,
    ) -> str:
        text = self.tokenizer.apply_chat_template(
            [chat_message(m) for m in messages],
            tools=list(tools) if tools else None,
            tokenize=False,
            add_generation_prompt=generation_prompt,
        )
        return str(text)

    def system_message(self, instructions: str, tools: Sequence[Mapping[str, Any]]) -> str:
        return instructions.strip()  # the template lists the tools itself

    def prompt(self, messages: Sequence[Message], tools: Sequence[Mapping[str, Any]]) -> str:
        return self._render(messages, tools, generation_prompt=True)

    def feedback(self, messages: Sequence[Message], tools: Sequence[Mapping[str, Any]]) -> str:
        """The template's text after an assistant message: its closing, ``messages``, the next prompt.

        Taken from the template itself: a conversation with a sentinel
        assistant message is rendered with and without what follows. With no
        messages (the end of the episode) only the assistant's closing remains.
        """
        conv: list[Message] = [
            {"role": "user", "content": "Hello."},
            {"role": "assistant", "content": _SENTINEL},
            *messages,
        ]
        text = self._render(conv, None, generation_prompt=bool(messages))
        return text[text.index(_SENTINEL) + len(_SENTINEL) :]

    def render_calls(self, calls: Iterable[Mapping[str, Any]], content: str = "") -> str:
        calls = list(calls)
        hello: list[Message] = [{"role": "user", "content": "Hello."}]
        before = self._render(hello, None, generation_prompt=True)
        message: dict[str, Any] = {"role": "assistant", "content": content}
        if calls:
            message["tool_calls"] = [
                {
                    "type": "function",
                    "function": {"name": c["name"], "arguments": c.get("arguments", {})},
                }
                for c in calls
            ]
        full = self._render([*hello, message], None, generation_prompt=False)
        closing = self.feedback([], ())
        if not full.startswith(before):
            raise ValueError("the chat template renders the conversation's start differently")
        body = full[len(before) :]
        return body[: -len(closing)] if closing and body.endswith(closing) else body

    def parse(self, text: str) -> ParsedAction:
        if not isinstance(text, str):
            text = str(text)
        tok = self.tokenizer
        if getattr(tok, "response_template", None) or getattr(tok, "response_schema", None):
            try:
                parsed = tok.parse_response(text, prefix="")
            except Exception:  # a malformed message: read it with the generic parser below
                parsed = None
            if isinstance(parsed, Mapping):
                calls = tuple(call_from_object(c) for c in parsed.get("tool_calls") or ())
                return ParsedAction(str(parsed.get("content") or "").strip(), calls)
        action = self._fallback.parse(text)
        if action.calls:
            return action
        stripped = text.strip()
        if stripped.startswith("{"):  # Llama 3 style: the message is one JSON call
            obj, problem = _loads(stripped)
            if problem is None and isinstance(obj, Mapping) and "name" in obj:
                return ParsedAction("", (call_from_object(obj, stripped),))
        return action


def chat_message(message: Message) -> dict[str, Any]:
    """Keep what chat templates read; tool-call arguments as objects, not JSON text."""
    out: dict[str, Any] = {"role": message["role"], "content": message.get("content") or ""}
    if message.get("name"):
        out["name"] = message["name"]
    if message.get("tool_calls"):
        calls = []
        for tc in message["tool_calls"]:
            fn = dict(tc.get("function", tc))
            args = fn.get("arguments")
            if isinstance(args, str):
                value, problem = _loads(args)
                if problem is None:
                    fn["arguments"] = value
            calls.append({"type": "function", "function": fn})
        out["tool_calls"] = calls
    return out


def _template_tokenizer() -> Any:
    """A tokenizer that only renders :data:`HERMES_CHAT_TEMPLATE` (no vocabulary, no hub)."""
    from tokenizers import Tokenizer
    from tokenizers.models import WordLevel
    from transformers import PreTrainedTokenizerFast

    tok = PreTrainedTokenizerFast(
        tokenizer_object=Tokenizer(WordLevel({"<unk>": 0}, unk_token="<unk>")),
        unk_token="<unk>",
    )
    tok.chat_template = HERMES_CHAT_TEMPLATE
    return tok
