"""Server-side building blocks: declare a server, its tools, and run isolated sessions.

``TypedDict`` and ``NotRequired`` are ``typing_extensions``' (pydantic reads tool return
types with them on Python 3.11): import them from here for typed tool results.
"""

from typing import NotRequired

from typing_extensions import TypedDict

from prove_gym.server.base import (
    EntitySource,
    EnvVersion,
    SampleContext,
    Sampler,
    Server,
    Weighted,
    stable_int,
)
from prove_gym.server.errors import (
    Conflict,
    ErrorKind,
    InvalidArgument,
    NotFound,
    PermissionDenied,
    PreconditionFailed,
    ToolError,
    WorkLimitExceeded,
)
from prove_gym.server.ids import next_id
from prove_gym.server.parsing import parse_date
from prove_gym.server.patterns import compile_glob, compile_regex
from prove_gym.server.result import ToolResult, to_jsonable
from prove_gym.server.search import contains, search_pattern
from prove_gym.server.session import Session
from prove_gym.server.sql import Query, Sql
from prove_gym.server.state import StateTemplate, canonical_state_hash
from prove_gym.server.tool import Bound, Entity, ParamSpec, Record, ToolContext, ToolSpec
from prove_gym.server.types import Money

__all__ = [
    "Bound",
    "Conflict",
    "Entity",
    "EntitySource",
    "EnvVersion",
    "ErrorKind",
    "InvalidArgument",
    "Money",
    "NotFound",
    "NotRequired",
    "ParamSpec",
    "PermissionDenied",
    "PreconditionFailed",
    "Query",
    "Record",
    "SampleContext",
    "Sampler",
    "Server",
    "Session",
    "Sql",
    "StateTemplate",
    "ToolContext",
    "ToolError",
    "ToolResult",
    "ToolSpec",
    "TypedDict",
    "Weighted",
    "WorkLimitExceeded",
    "canonical_state_hash",
    "compile_glob",
    "compile_regex",
    "contains",
    "next_id",
    "parse_date",
    "search_pattern",
    "stable_int",
    "to_jsonable",
]
