"""Every extension point of prove_gym, in one file.

A plugin is any module or object with functions named after these hooks and
decorated with :data:`hookimpl`. Plugins are found through the ``prove_gym``
entry-point group (the built-in servers use the same group), so installing a
package is all it takes to add a server, a tool-call format or an observation
formatter::

    # pyproject.toml of a third-party package
    [project.entry-points.prove_gym]
    weather = "prove_weather"

    # prove_weather/__init__.py
    from prove_gym import hookimpl

    @hookimpl
    def prove_gym_servers():
        return [server]

Hook names are checked when plugins load: an implementation whose name starts
with ``prove_gym_`` but matches no hook here raises at start-up instead of being
silently ignored.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pluggy

if TYPE_CHECKING:
    from prove_gym.env.formatters import Formatter
    from prove_gym.env.parsers import ActionParser
    from prove_gym.server.base import Server
    from prove_gym.task import Task

hookspec = pluggy.HookspecMarker("prove_gym")
hookimpl = pluggy.HookimplMarker("prove_gym")


@hookspec
def prove_gym_servers() -> list[Server]:
    """Return the tool servers this plugin provides.

    Called once, when the registry loads plugins. Results of all plugins are
    concatenated; two servers with the same name are an error that names both
    plugins. Each server becomes ``prove/<name>-v0`` in Gymnasium, appears in
    ``prove list``, can be served over MCP and used by ``prove synth``.
    """


@hookspec
def prove_gym_tasks(server: Server) -> list[Task] | None:
    """Return hand-written tasks for ``server``, or ``None`` if this plugin has none.

    Called lazily, the first time tasks of ``server`` are needed (an env reset
    without an explicit task, ``prove demo``). Results of all plugins are
    concatenated, so a third-party plugin may contribute tasks for a built-in
    server.
    """


@hookspec
def prove_gym_action_parsers() -> dict[str, ActionParser]:
    """Return named parsers that turn an assistant message into tool calls.

    Called once at start-up; results are merged, and a name provided twice is
    an error. The built-in ``"hermes"`` parser reads
    ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>`` blocks. An env
    picks its parser with ``gymnasium.make(..., parser="name")``.
    """


@hookspec
def prove_gym_formatters() -> dict[str, Formatter]:
    """Return named formatters that render tool results and prompts as model text.

    Called once at start-up; results are merged, and a name provided twice is
    an error. The built-in ``"hermes"`` formatter wraps each result in
    ``<tool_response>...</tool_response>``. An env picks its formatter with
    ``gymnasium.make(..., formatter="name")``.
    """
