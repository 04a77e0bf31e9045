"""The core's own plugin: the built-in action parsers and formatters.

Registered through the same hooks a third-party plugin would use.
"""

from __future__ import annotations

from prove_gym.env.formatters import Formatter, HermesFormatter
from prove_gym.env.parsers import ActionParser, HermesParser, JsonListParser
from prove_gym.hookspecs import hookimpl


@hookimpl
def prove_gym_action_parsers() -> dict[str, ActionParser]:
    return {"hermes": HermesParser(), "json": JsonListParser()}


@hookimpl
def prove_gym_formatters() -> dict[str, Formatter]:
    return {"hermes": HermesFormatter()}
