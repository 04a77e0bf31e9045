"""prove_gym: stateful MCP tool servers as Gymnasium environments with programmatic rewards.

>>> import gymnasium, prove_gym
>>> env = gymnasium.make("prove/calendar-v0")
>>> obs, info = env.reset(seed=7)

Importing this package registers ``prove/<server>-v0`` for every installed
server plugin (``gymnasium.make("prove_gym:prove/calendar-v0")`` imports it for you).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from prove_gym._lazy import lazy_names
from prove_gym.env.registration import env_id, register_entry_point_ids, register_ids

if TYPE_CHECKING:
    from prove_gym.episode import Episode, EpisodeCaps
    from prove_gym.formats import ToolCallFormat
    from prove_gym.hookspecs import hookimpl, hookspec
    from prove_gym.registry import Registry, get_registry, get_server
    from prove_gym.reward import (
        RewardBreakdown,
        RewardComponent,
        RewardConfig,
        ScoringContext,
    )
    from prove_gym.reward.score import score
    from prove_gym.server import (
        Conflict,
        Entity,
        EnvVersion,
        ErrorKind,
        InvalidArgument,
        Money,
        NotFound,
        PermissionDenied,
        PreconditionFailed,
        Principal,
        SampleContext,
        Server,
        Session,
        ToolContext,
        ToolError,
        ToolResult,
    )
    from prove_gym.task import GoldStep, Task, TaskError, Turn, load_tasks, save_tasks
    from prove_gym.workspace import CallRecord, Workspace, gold_replay

__version__ = "0.1.0"

__all__ = [
    "CallRecord",
    "Conflict",
    "Entity",
    "EnvVersion",
    "Episode",
    "EpisodeCaps",
    "ErrorKind",
    "GoldStep",
    "InvalidArgument",
    "Money",
    "NotFound",
    "PermissionDenied",
    "PreconditionFailed",
    "Principal",
    "Registry",
    "RewardBreakdown",
    "RewardComponent",
    "RewardConfig",
    "SampleContext",
    "ScoringContext",
    "Server",
    "Session",
    "Task",
    "TaskError",
    "ToolCallFormat",
    "ToolContext",
    "ToolError",
    "ToolResult",
    "Turn",
    "Workspace",
    "__version__",
    "env_id",
    "get_registry",
    "get_server",
    "gold_replay",
    "hookimpl",
    "hookspec",
    "load_tasks",
    "register_envs",
    "save_tasks",
    "score",
]


# Everything else is imported on first use (PEP 562), so that a process which only needs
# the command line's help, the env ids or one server does not import them all.
_LAZY: dict[str, str] = {
    "CallRecord": "prove_gym.workspace",
    "Conflict": "prove_gym.server",
    "Entity": "prove_gym.server",
    "EnvVersion": "prove_gym.server",
    "Episode": "prove_gym.episode",
    "EpisodeCaps": "prove_gym.episode",
    "ErrorKind": "prove_gym.server",
    "GoldStep": "prove_gym.task",
    "InvalidArgument": "prove_gym.server",
    "Money": "prove_gym.server",
    "NotFound": "prove_gym.server",
    "PermissionDenied": "prove_gym.server",
    "Principal": "prove_gym.server",
    "PreconditionFailed": "prove_gym.server",
    "Registry": "prove_gym.registry",
    "RewardBreakdown": "prove_gym.reward",
    "RewardComponent": "prove_gym.reward",
    "RewardConfig": "prove_gym.reward",
    "SampleContext": "prove_gym.server",
    "ScoringContext": "prove_gym.reward",
    "Server": "prove_gym.server",
    "Session": "prove_gym.server",
    "Task": "prove_gym.task",
    "TaskError": "prove_gym.task",
    "ToolCallFormat": "prove_gym.formats",
    "ToolContext": "prove_gym.server",
    "ToolError": "prove_gym.server",
    "ToolResult": "prove_gym.server",
    "Turn": "prove_gym.task",
    "Workspace": "prove_gym.workspace",
    "get_registry": "prove_gym.registry",
    "get_server": "prove_gym.registry",
    "gold_replay": "prove_gym.workspace",
    "hookimpl": "prove_gym.hookspecs",
    "hookspec": "prove_gym.hookspecs",
    "load_tasks": "prove_gym.task",
    "save_tasks": "prove_gym.task",
    "score": "prove_gym.reward",
}


__getattr__, __dir__ = lazy_names(__name__, _LAZY, __all__)


def register_envs(registry: Registry | None = None) -> list[str]:
    """Register ``prove/<name>-v0`` for every server of ``registry`` (idempotent); returns the ids."""
    from prove_gym.registry import get_registry

    return register_ids((registry or get_registry()).servers)


register_entry_point_ids()
