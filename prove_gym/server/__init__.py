"""Server-side building blocks: declare a server, its tools, and run isolated sessions."""

from prove_gym.server.base import EntitySource, SampleContext, Sampler, Server, stable_int
from prove_gym.server.errors import (
    Conflict,
    ErrorKind,
    InvalidArgument,
    NotFound,
    PermissionDenied,
    PreconditionFailed,
    ToolError,
)
from prove_gym.server.ids import next_id
from prove_gym.server.parsing import parse_date
from prove_gym.server.result import ToolResult, to_jsonable
from prove_gym.server.session import Session
from prove_gym.server.state import StateTemplate, canonical_state_hash
from prove_gym.server.tool import Entity, ParamSpec, ToolContext, ToolSpec
from prove_gym.server.types import Money

__all__ = [
    "Conflict",
    "Entity",
    "EntitySource",
    "ErrorKind",
    "InvalidArgument",
    "Money",
    "NotFound",
    "ParamSpec",
    "PermissionDenied",
    "PreconditionFailed",
    "SampleContext",
    "Sampler",
    "Server",
    "Session",
    "StateTemplate",
    "ToolContext",
    "ToolError",
    "ToolResult",
    "ToolSpec",
    "canonical_state_hash",
    "next_id",
    "parse_date",
    "stable_int",
    "to_jsonable",
]
