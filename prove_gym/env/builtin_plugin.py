"""The core's own plugin: the built-in tool-call formats.

Registered through the same hook a third-party plugin would use.
"""

from __future__ import annotations

import importlib.util

from prove_gym.env.formats import ChatTemplateFormat, HermesFormat, JsonFormat, ToolCallFormat
from prove_gym.hookspecs import hookimpl


@hookimpl
def prove_gym_tool_call_formats() -> dict[str, ToolCallFormat]:
    formats: dict[str, ToolCallFormat] = {"hermes": HermesFormat(), "json": JsonFormat()}
    if importlib.util.find_spec("transformers") is not None:
        formats["chat_template"] = ChatTemplateFormat()  # its tokenizer is built on first use
    return formats
