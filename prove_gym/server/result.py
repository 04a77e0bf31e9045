"""The value every tool call returns: success with JSON content, or a typed error."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
from collections.abc import Mapping
from decimal import Decimal
from enum import Enum
from typing import Any, Literal

from prove_gym.server.errors import ErrorKind

Outcome = Literal["success", "partial", "failure"]
"""The paper's three result classes: the call did what was asked (``success``), ran but
found nothing to act on (``partial``: an empty result), or failed (``failure``)."""


def to_jsonable(value: Any) -> Any:
    """Convert a tool's return value into plain JSON types, deterministically.

    Decimals become strings (exact money), datetimes ISO 8601 strings, enums
    their value, dataclasses and pydantic models dicts, sets sorted lists.

    >>> to_jsonable({"amount": Decimal("12.50"), "at": dt.date(2026, 3, 2)})
    {'amount': '12.50', 'at': '2026-03-02'}
    """
    # Tools return plain dicts, lists and scalars almost always: those are looked up by
    # their exact type, the rest (subclasses included) take the general rules below.
    kind = type(value)
    if kind in _PLAIN:
        return value
    if kind is dict:
        return {str(k): v if type(v) in _PLAIN else to_jsonable(v) for k, v in value.items()}
    if kind is list:
        return [v if type(v) in _PLAIN else to_jsonable(v) for v in value]
    return _convert(value)


_PLAIN = frozenset({str, int, float, bool, type(None)})
"""Types :func:`to_jsonable` returns as they are (exactly these: not their subclasses)."""


def _convert(value: Any) -> Any:
    """:func:`to_jsonable` of any value, by the general rules."""
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, dt.datetime | dt.date | dt.time):
        return value.isoformat()
    if isinstance(value, Enum):
        return to_jsonable(value.value)
    if isinstance(value, dict):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [to_jsonable(v) for v in value]
    if isinstance(value, set | frozenset):
        return sorted(to_jsonable(v) for v in value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return to_jsonable(dataclasses.asdict(value))
    if hasattr(value, "model_dump"):
        return to_jsonable(value.model_dump())
    raise TypeError(f"tool returned a value that is not JSON-serialisable: {type(value).__name__}")


@dataclasses.dataclass(frozen=True, slots=True)
class ToolResult:
    """Outcome of one tool call.

    Attributes:
        ok: True when the tool ran and its changes were committed.
        content: The JSON-able value the tool returned (``None`` on error).
        error_kind: Why the call failed (``None`` on success).
        message: The actionable error message shown to the model.
    """

    ok: bool
    content: Any = None
    error_kind: ErrorKind | None = None
    message: str | None = None

    @classmethod
    def success(cls, content: Any) -> ToolResult:
        return cls(ok=True, content=content)

    @classmethod
    def failure(cls, kind: ErrorKind, message: str) -> ToolResult:
        return cls(ok=False, error_kind=ErrorKind(kind), message=message)

    @property
    def status(self) -> str:
        """``"ok"`` or ``"error"``."""
        return "ok" if self.ok else "error"

    @property
    def outcome(self) -> Outcome:
        """SUCCESS / PARTIAL / FAILURE, as the paper's conversation state machine reads a result.

        ``partial``: the call ran but its result is empty: no content, an empty list or
        object, or an object whose lists are all empty (``{"events": [], "total": 0}``).
        Such a result is not an error (replay validation does not count it), but the
        conversation cannot build on it.

        >>> ToolResult.success({"events": [], "total": 0}).outcome
        'partial'
        >>> ToolResult.success({"id": "evt_0001"}).outcome, ToolResult.failure("not_found", "").outcome
        ('success', 'failure')
        """
        if not self.ok:
            return "failure"
        content = self.content
        if content is None or content == [] or content == {}:
            return "partial"
        if isinstance(content, dict):
            lists = [v for v in content.values() if isinstance(v, list)]
            if lists and not any(lists):
                return "partial"
        return "success"

    def to_dict(self) -> dict[str, Any]:
        """A JSON record: ``{"status": "ok", "content": ...}`` or ``{"status": "error", ...}``."""
        if self.ok:
            return {"status": "ok", "content": self.content}
        return {"status": "error", "error": {"kind": str(self.error_kind), "message": self.message}}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ToolResult:
        """Inverse of :meth:`to_dict`; also accepts ``{"ok": bool, ...}`` records."""
        ok = data.get("status") == "ok" if "status" in data else bool(data.get("ok"))
        if ok:
            return cls.success(data.get("content"))
        err = data.get("error") or {}
        kind = err.get("kind") or data.get("error_kind") or ErrorKind.INTERNAL
        message = err.get("message") or data.get("message") or ""
        return cls.failure(ErrorKind(kind), message)

    def to_text(self) -> str:
        """The text a model reads: the JSON content, or an ``Error [kind]: message`` line."""
        if self.ok:
            return _TEXT.encode(self.content)
        return f"Error [{self.error_kind}]: {self.message}"


_TEXT = json.JSONEncoder(ensure_ascii=False, separators=(", ", ": "))
"""What :meth:`ToolResult.to_text` writes content with (one encoder, not one per call)."""
