"""Action parsers never raise on model text and round-trip what the policies write."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from prove_gym.env.parsers import HermesParser, JsonListParser
from prove_gym.policies import format_hermes_calls

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=8,
)
calls = st.lists(
    st.fixed_dictionaries(
        {
            "name": st.from_regex(r"[a-z_]{1,20}", fullmatch=True),
            "arguments": st.dictionaries(st.text(max_size=10), json_values, max_size=4),
        }
    ),
    min_size=1,
    max_size=4,
)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=400))
def test_hermes_parser_never_raises_on_arbitrary_text(text: str) -> None:
    parsed = HermesParser().parse(text)
    for call in parsed.calls:
        assert (call.error is None) == (call.arguments is not None)


@settings(max_examples=200, deadline=None)
@given(calls, st.text(alphabet=st.characters(blacklist_characters="<>"), max_size=50))
def test_hermes_round_trips_formatted_calls(batch: list[dict], prose: str) -> None:
    parsed = HermesParser().parse(format_hermes_calls(batch, content=prose))
    assert [(c.name, c.arguments) for c in parsed.calls] == [
        (c["name"], c["arguments"]) for c in batch
    ]
    assert parsed.content == prose.strip()


@settings(max_examples=100, deadline=None)
@given(st.text(max_size=200))
def test_json_list_parser_never_raises(text: str) -> None:
    JsonListParser().parse(text)


def test_arguments_given_as_a_json_string_are_decoded() -> None:
    parsed = HermesParser().parse(
        '<tool_call>{"name": "f", "arguments": "{\\"a\\": 1}"}</tool_call>'
    )
    assert parsed.calls[0].arguments == {"a": 1}


def test_an_unclosed_final_block_is_read_to_the_end() -> None:
    parsed = HermesParser().parse('Sure.\n<tool_call>{"name": "f", "arguments": {}}')
    assert parsed.calls[0].name == "f" and parsed.content == "Sure."


def test_a_call_without_a_name_is_a_parse_error() -> None:
    (call,) = HermesParser().parse('<tool_call>{"arguments": {}}</tool_call>').calls
    assert call.error is not None and '"name"' in call.error and call.arguments is None
