"""Server-side building blocks: declare a server, its tools, and run isolated sessions.

``TypedDict`` and ``NotRequired`` are ``typing_extensions``' (pydantic reads tool return
types with them on Python 3.11): import them from here for typed tool results.

Every other name is imported from its module on first use (PEP 562): a process that needs
only :func:`stable_int` or :data:`~prove_gym.server.state.MAX_STATE_SIZE` (the command
line's ``synth`` options) does not import SQLAlchemy and pydantic for them.
"""

from typing import TYPE_CHECKING, NotRequired

from typing_extensions import TypedDict

from prove_gym._lazy import lazy_names

if TYPE_CHECKING:
    from prove_gym.server.base import (
        EntitySource,
        EnvVersion,
        Principal,
        SampleContext,
        Sampler,
        Server,
        Weighted,
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
    from prove_gym.server.state import (
        ADDED_LATER,
        StateTemplate,
        added_later,
        canonical_state_hash,
        stable_int,
    )
    from prove_gym.server.tool import (
        Bound,
        Entity,
        ParamSpec,
        Prepared,
        Record,
        ToolContext,
        ToolSpec,
    )
    from prove_gym.server.types import Money

_LAZY: dict[str, str] = {
    "ADDED_LATER": "prove_gym.server.state",
    "Bound": "prove_gym.server.tool",
    "Conflict": "prove_gym.server.errors",
    "Entity": "prove_gym.server.tool",
    "EntitySource": "prove_gym.server.base",
    "EnvVersion": "prove_gym.server.base",
    "Principal": "prove_gym.server.base",
    "ErrorKind": "prove_gym.server.errors",
    "InvalidArgument": "prove_gym.server.errors",
    "Money": "prove_gym.server.types",
    "NotFound": "prove_gym.server.errors",
    "ParamSpec": "prove_gym.server.tool",
    "PermissionDenied": "prove_gym.server.errors",
    "PreconditionFailed": "prove_gym.server.errors",
    "Prepared": "prove_gym.server.tool",
    "Query": "prove_gym.server.sql",
    "Record": "prove_gym.server.tool",
    "SampleContext": "prove_gym.server.base",
    "Sampler": "prove_gym.server.base",
    "Server": "prove_gym.server.base",
    "Session": "prove_gym.server.session",
    "Sql": "prove_gym.server.sql",
    "StateTemplate": "prove_gym.server.state",
    "ToolContext": "prove_gym.server.tool",
    "ToolError": "prove_gym.server.errors",
    "ToolResult": "prove_gym.server.result",
    "ToolSpec": "prove_gym.server.tool",
    "Weighted": "prove_gym.server.base",
    "WorkLimitExceeded": "prove_gym.server.errors",
    "added_later": "prove_gym.server.state",
    "canonical_state_hash": "prove_gym.server.state",
    "compile_glob": "prove_gym.server.patterns",
    "compile_regex": "prove_gym.server.patterns",
    "contains": "prove_gym.server.search",
    "next_id": "prove_gym.server.ids",
    "parse_date": "prove_gym.server.parsing",
    "search_pattern": "prove_gym.server.search",
    "stable_int": "prove_gym.server.state",
    "to_jsonable": "prove_gym.server.result",
}

__all__ = [
    "ADDED_LATER",
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
    "Prepared",
    "Principal",
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
    "added_later",
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


__getattr__, __dir__ = lazy_names(__name__, _LAZY, __all__)
