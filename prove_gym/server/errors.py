"""Errors a tool raises to tell the model what went wrong.

A tool never returns an error value: it raises one of these, the session rolls
back every change the call made, and the model receives ``kind`` and
``message`` as the tool result. Write the message for the model: say what was
wrong and what to do next ("No event with id 'evt_0042'. Call list_events or
search_events to find an existing id.").
"""

from __future__ import annotations

from enum import StrEnum


class ErrorKind(StrEnum):
    """Why a call failed. Stable strings: they appear in datasets and rewards."""

    UNKNOWN_TOOL = "unknown_tool"
    """The name is not one of the tools offered."""
    BAD_ARGUMENTS = "bad_arguments"
    """Missing, extra or ill-typed arguments, or a value in the wrong format."""
    NOT_FOUND = "not_found"
    """An identifier refers to no existing entity."""
    PRECONDITION_FAILED = "precondition_failed"
    """The state does not allow this action now (e.g. a door is open)."""
    PERMISSION_DENIED = "permission_denied"
    """Authentication or permissions are missing or wrong."""
    CONFLICT = "conflict"
    """The action clashes with existing state (duplicate name, double booking)."""
    PARSE_ERROR = "parse_error"
    """The assistant's text held a tool call that could not be parsed."""
    INTERNAL = "internal"
    """A bug in the tool itself; the state is rolled back all the same."""


class ToolError(Exception):
    """Base class of the errors a tool raises; ``kind`` says which one."""

    kind: ErrorKind = ErrorKind.BAD_ARGUMENTS

    def __init__(self, message: str, *, kind: ErrorKind | None = None) -> None:
        super().__init__(message)
        self.message = message
        if kind is not None:
            self.kind = kind


class InvalidArgument(ToolError):
    """An argument has the right type but an unusable value (bad date, negative amount)."""

    kind = ErrorKind.BAD_ARGUMENTS


class NotFound(ToolError):
    """An identifier refers to nothing that exists."""

    kind = ErrorKind.NOT_FOUND


class PreconditionFailed(ToolError):
    """The current state forbids the action; say which condition failed."""

    kind = ErrorKind.PRECONDITION_FAILED


class PermissionDenied(ToolError):
    """Missing or wrong credentials for a sensitive operation."""

    kind = ErrorKind.PERMISSION_DENIED


class Conflict(ToolError):
    """The action clashes with existing state."""

    kind = ErrorKind.CONFLICT


class WorkLimitExceeded(ToolError):
    """The call would do more work than one call may (see :class:`~prove_gym.server.budget.WorkBudget`).

    Raised by ``ctx.spend`` or by the core when a query runs past the budget; the call is
    rolled back like any other failure. The arguments asked for too much at once (a whole
    tree, a huge pattern), so the kind is ``bad_arguments``: the model can narrow them.
    """

    kind = ErrorKind.BAD_ARGUMENTS
