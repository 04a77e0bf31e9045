"""prove_gym: stateful MCP tool servers as Gymnasium environments with programmatic rewards.

>>> import gymnasium, prove_gym
>>> env = gymnasium.make("prove/calendar-v0")
>>> obs, info = env.reset(seed=7)

Importing this package registers ``prove/<server>-v0`` for every installed
server plugin (``gymnasium.make("prove_gym:prove/calendar-v0")`` imports it for you).
"""

from __future__ import annotations

from prove_gym.env.formats import ToolCallFormat
from prove_gym.env.registration import env_id, register_entry_point_ids, register_ids
from prove_gym.episode import Episode, EpisodeCaps
from prove_gym.hookspecs import hookimpl, hookspec
from prove_gym.registry import Registry, get_registry, get_server
from prove_gym.reward import (
    RewardBreakdown,
    RewardComponent,
    RewardConfig,
    ScoringContext,
    score,
)
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


def register_envs(registry: Registry | None = None) -> list[str]:
    """Register ``prove/<name>-v0`` for every server of ``registry`` (idempotent); returns the ids."""
    return register_ids((registry or get_registry()).servers)


register_entry_point_ids()
