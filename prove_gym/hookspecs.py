"""Every extension point of prove_gym, in one file.

A plugin is any module or object with functions named after these hooks and
decorated with :data:`hookimpl`. Plugins are found through the ``prove_gym``
entry-point group (the built-in servers use the same group), so installing a
package is all it takes to add a server, a tool-call format or a reward
component::

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
    from prove_gym.formats import ToolCallFormat
    from prove_gym.reward.components import RewardComponent
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
    ``prove-gym list``, can be served over MCP and used by ``prove-gym synth``.
    """


@hookspec
def prove_gym_tasks(server: Server) -> list[Task] | None:
    """Return more hand-written tasks for ``server``, or ``None`` if this plugin has none.

    A server's own tasks come from its ``tasks_file`` (no hook needed); this
    hook lets a plugin add tasks to any server, a built-in one included.
    Called lazily, the first time tasks of ``server`` are needed (an env reset
    without an explicit task, ``prove-gym demo``); results are concatenated.
    Plugins load when first needed: the hook is asked of the plugins loaded by
    then. A plugin that adds tasks to *another* plugin's server is loaded when
    every plugin is (``Registry.load_all()``, ``Registry.servers``, ``prove-gym
    list``): load it so before asking for that server's tasks.
    """


@hookspec
def prove_gym_tool_call_formats() -> dict[str, ToolCallFormat]:
    """Return named tool-call formats: how a model writes calls and reads results.

    A :class:`~prove_gym.formats.ToolCallFormat` parses the assistant's
    text into calls, renders calls back as text (what the oracle policy
    sends), renders tool results and the next user turn as the observation,
    and lists the offered tools in the system prompt. Called once, the first
    time formats are needed; results are merged, and a name provided twice is
    an error naming it. Built in: ``"hermes"`` (Hermes/Qwen ``<tool_call>``
    blocks, the default), ``"json"`` (a bare JSON list of calls) and, when
    transformers is installed, ``"chat_template"`` (a chat template's own
    tool rendering). An env picks one with ``gymnasium.make(..., format="name")``.
    """


@hookspec
def prove_gym_reward_components() -> list[RewardComponent]:
    """Return reward components this plugin makes available, by their ``name``.

    Called once, the first time components are looked up; results of all
    plugins are concatenated and a name provided twice is an error. A
    contributed component is *available*, not active: the default reward never
    changes because a plugin was installed. A user switches it on by name, e.g.
    ``RewardConfig().with_components(registry.reward_component("no_long_calls"))``
    or ``PROVE_REWARD_COMPONENTS=no_long_calls`` for the trainer adapters.
    """
