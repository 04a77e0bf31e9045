"""The servers whose tools are a ``tools/`` package (CONTRIBUTING.md, "Large servers"): each
registers exactly the tools its modules declare, in the order of its ``TOOLS`` list, and
refuses a declared tool left out of the list or a listed function never declared."""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any

import pytest

import prove_gym
from prove_gym import Server, ToolContext
from prove_gym.server.tool import declared_options

PACKAGES = ["filesystem", "food_delivery", "shopping", "travel_booking"]


def tools_of(name: str) -> ModuleType:
    return importlib.import_module(f"prove_plugins.{name}.tools")


def fresh(name: str) -> Server:
    """A server like ``name``'s (its env versions too: a tool may be redefined from one on)
    with no tools yet."""
    server = prove_gym.get_server(name)
    return Server(
        name,
        version=server.version,
        base=server.base,
        sampler=server.sampler,
        env_versions=list(server.env_versions.values()),
    )


def first_definitions(tools: Any) -> list[Any]:
    """The functions of ``tools`` that declare a tool, without later definitions (since=N)."""
    return [fn for fn in tools if not (declared_options(fn) or {}).get("since")]


def described(server: Server) -> list[tuple[Any, ...]]:
    return [
        (t.name, t.writes, t.destructive, t.idempotent, t.returns, t.phrasings, t.input_schema())
        for t in server.tools.values()
    ]


@pytest.mark.parametrize("name", PACKAGES)
def test_the_tools_list_is_the_order_the_model_reads(name: str) -> None:
    package = tools_of(name)
    server = prove_gym.get_server(name)
    assert [t.fn for t in server.tools.values()] == first_definitions(package.TOOLS)
    later = [spec.fn for specs in server.redefined.values() for spec in specs.values()]
    # a later version's definitions: listed in TOOLS after the first ones, or in a list of
    # their own registered after them (travel_booking's LATER)
    listed_later = [f for f in package.TOOLS if f not in first_definitions(package.TOOLS)]
    assert sorted(f.__name__ for f in later) == sorted(
        f.__name__ for f in [*listed_later, *getattr(package, "LATER", ())]
    )
    assert len(set(package.TOOLS)) == len(package.TOOLS)
    # each tool lives in a resource module of the package, not in __init__
    assert all(fn.__module__.startswith(f"{package.__name__}.") for fn in package.TOOLS)
    # registering the same list on another server declares the same tools, in the same order
    again = fresh(name)
    again.add_tools(package.TOOLS, declared_in=package.RESOURCES)
    assert described(again) == described(server)


@pytest.mark.parametrize("name", PACKAGES)
def test_a_declared_tool_left_out_of_the_list_is_refused(name: str) -> None:
    package = tools_of(name)
    first, *rest = package.TOOLS
    with pytest.raises(TypeError, match=rf"not listed: \['{first.__name__}'\]"):
        fresh(name).add_tools(rest, declared_in=package.RESOURCES)


@pytest.mark.parametrize("name", PACKAGES)
def test_a_listed_function_never_declared_is_refused(name: str) -> None:
    package = tools_of(name)

    def archive_everything(ctx: ToolContext) -> dict[str, str]:
        """Archive everything."""
        return {}

    with pytest.raises(TypeError, match="archive_everything is listed but not declared"):
        fresh(name).add_tools([*package.TOOLS, archive_everything], declared_in=package.RESOURCES)
