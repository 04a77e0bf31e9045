"""Tools declared where they are written, registered where the server is.

Each resource module declares its tools with :func:`tool`, which takes ``server.tool``'s
arguments and keeps them beside the function; ``tools/__init__.py`` registers them on the
server with :func:`register`, in the order of its ``TOOLS`` list: the order the model reads
them in and synthesis draws from, whatever order the modules are imported in.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import Any, Literal, TypeVar

from prove_gym.server import Server

from .args import PATH_PARAMS

F = TypeVar("F", bound=Callable[..., Any])

_DECLARED: dict[Callable[..., Any], dict[str, Any]] = {}


def tool(**options: Any) -> Callable[[F], F]:
    """Declare a tool with ``server.tool``'s arguments (``writes=``, ``returns=``,
    ``phrasings=``...); it is registered when ``tools/__init__.py`` lists it.

    Every path argument (``PATH_PARAMS``) gets ``normalise="path"``: the reward then takes
    "~/Documents/" and "~/Documents" for the same answer.
    """

    def declare(fn: F) -> F:
        params = inspect.signature(fn).parameters
        normalise: dict[str, Literal["path"]] = {p: "path" for p in PATH_PARAMS if p in params}
        _DECLARED[fn] = {"normalise": normalise, **options}
        return fn

    return declare


def register(server: Server, tools: Sequence[Callable[..., Any]]) -> None:
    """Register ``tools`` on ``server`` in this order, each as :func:`tool` declared it.

    Raises ``TypeError`` when a declared tool is not listed, or a listed function was not
    declared: a tool is never left out, or offered twice, by accident.
    """
    unlisted = [fn.__name__ for fn in _DECLARED if fn not in tools]
    if unlisted:
        raise TypeError(f"{server.name}: declared with @tool but not in TOOLS: {unlisted}")
    for fn in tools:
        if fn not in _DECLARED:
            raise TypeError(f"{server.name}: {fn.__name__} is in TOOLS but not declared with @tool")
        server.tool(fn, **_DECLARED[fn])
