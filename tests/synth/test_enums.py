"""Enum stripping strips: no stripped value is left anywhere the model reads about the tool."""

from __future__ import annotations

import pytest

from prove_gym import get_registry
from prove_gym.server.tool import ToolSpec
from prove_gym.synth.enums import enum_values, stated, strippable, stripped_schema

TOOLS = [t for s in get_registry().servers.values() for t in s.visible_tools()]
WITH_ENUMS = [
    t for t in TOOLS if any(enum_values(p) for p in t.input_schema().get("properties", {}).values())
]


def descriptions(schema: object) -> list[str]:
    if isinstance(schema, dict):
        own = [schema["description"]] if isinstance(schema.get("description"), str) else []
        return own + [d for v in schema.values() for d in descriptions(v)]
    if isinstance(schema, list):
        return [d for v in schema for d in descriptions(v)]
    return []


@pytest.mark.parametrize("spec", WITH_ENUMS, ids=lambda t: t.qualified_name)
def test_no_stripped_value_is_left_in_the_offered_tool(spec: ToolSpec) -> None:
    schema = stripped_schema(spec)
    strip = strippable(spec)
    if schema is None:
        assert not strip
        return
    props = schema["properties"]
    original = spec.input_schema()["properties"]
    assert set(props) == set(original)
    for name, values in strip.items():
        assert not enum_values(props[name])
        assert props[name].get("type") == original[name].get("type")
        # rendered as the model reads it: the tool's description and every schema description
        for text in [spec.description, *descriptions(schema)]:
            assert not stated(text, values), (name, text)
    for name in set(original) - set(strip):
        assert enum_values(props[name]) == enum_values(original[name])


def test_a_parameter_whose_values_the_tool_description_states_keeps_its_enum() -> None:
    """The task format cannot replace a tool's description, so stripping could not hide them."""
    spec = get_registry().get_tool("social_media.list_connections")
    assert stated(spec.description, ["requests_received"])
    assert "list_name" not in strippable(spec)


def test_most_servers_offer_a_tool_whose_enum_can_be_stripped() -> None:
    """16 of the 20: the rest state every value in their tools' own descriptions."""
    servers = {t.server_name for t in WITH_ENUMS if stripped_schema(t) is not None}
    assert len(servers) >= 15
