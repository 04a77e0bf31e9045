"""Filesystem's tool declaration: ``@tool(...)`` of :mod:`prove_gym.server.tool`, plus a
path normaliser on every path argument (``PATH_PARAMS``), so the reward takes
"~/Documents/" and "~/Documents" for the same answer."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any, Literal, TypeVar

from prove_gym.server.tool import tool as declare

from .args import PATH_PARAMS

F = TypeVar("F", bound=Callable[..., Any])


def tool(**options: Any) -> Callable[[F], F]:
    """Declare a filesystem tool: ``@tool(...)``'s options, with ``normalise="path"`` for
    each of its path arguments."""

    def declare_with_paths(fn: F) -> F:
        params = inspect.signature(fn).parameters
        normalise: dict[str, Literal["path"]] = {p: "path" for p in PATH_PARAMS if p in params}
        return declare(**{"normalise": normalise, **options})(fn)

    return declare_with_paths
