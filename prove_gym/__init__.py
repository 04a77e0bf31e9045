"""prove_gym: stateful MCP tool servers as Gymnasium environments with programmatic rewards.

>>> import gymnasium, prove_gym
>>> env = gymnasium.make("prove/calendar-v0")
>>> obs, info = env.reset(seed=7)

Importing this package registers ``prove/<server>-v0`` for every installed
server plugin (``gymnasium.make("prove_gym:prove/calendar-v0")`` imports it for you).
"""

from __future__ import annotations

from prove_gym.hookspecs import hookimpl, hookspec
from prove_gym.registry import Registry, get_registry, get_server
from prove_gym.reward import RewardBreakdown, RewardConfig, score
from prove_gym.server import (
    Conflict,
    Entity,
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
from prove_gym.task import GoldStep, Task, Turn, load_tasks, save_tasks
from prove_gym.workspace import CallRecord, Workspace, gold_replay

__version__ = "0.1.0"

__all__ = [
    "CallRecord",
    "Conflict",
    "Entity",
    "ErrorKind",
    "GoldStep",
    "InvalidArgument",
    "Money",
    "NotFound",
    "PermissionDenied",
    "PreconditionFailed",
    "Registry",
    "RewardBreakdown",
    "RewardConfig",
    "SampleContext",
    "Server",
    "Session",
    "Task",
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


def env_id(server: str, version: int = 0) -> str:
    """The Gymnasium id of a server's env: ``prove/<server>-v<version>``."""
    return f"prove/{server}-v{version}"


def register_envs(registry: Registry | None = None) -> list[str]:
    """Register ``prove/<name>-v0`` for every server (idempotent); returns the ids."""
    import gymnasium

    registry = registry or get_registry()
    ids = []
    for name in registry.servers:
        eid = env_id(name)
        if eid not in gymnasium.registry:
            gymnasium.register(
                id=eid,
                entry_point="prove_gym.env.env:ProveEnv",
                kwargs={"server": name},
            )
        ids.append(eid)
    return ids


register_envs()
