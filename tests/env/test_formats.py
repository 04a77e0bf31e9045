"""Tool-call formats never raise on model text and read back exactly what they render."""

from __future__ import annotations

import importlib.util
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from prove_gym import get_registry
from prove_gym.formats import ChatTemplateFormat, HermesFormat, JsonFormat, ToolCallFormat
from prove_gym.hookspecs import hookimpl
from prove_gym.registry import PluginError, Registry

FORMATS = sorted(get_registry().formats)

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
hostile_text = st.one_of(
    st.text(max_size=400),
    st.builds(lambda n: "<tool_call>" + "[" * n + "]" * n + "</tool_call>", st.integers(0, 20_000)),
    st.builds(lambda n: "[" * n, st.integers(0, 20_000)),
    st.just('<tool_call>{"name": "f", "arguments": {"x": ' + "9" * 5000 + "}}</tool_call>"),
    st.just("[" + "9" * 5000 + "]"),
    st.just('<tool_call>{"name": "f", "arguments": "\\ud800"}</tool_call>'),
)


def test_the_built_in_formats_are_registered() -> None:
    assert {"hermes", "json"} <= set(FORMATS)
    assert ("chat_template" in FORMATS) == (importlib.util.find_spec("transformers") is not None)


def test_a_missing_chat_template_format_names_the_extra_it_needs() -> None:
    registry = Registry(load_entrypoints=False)
    registry.formats.pop("chat_template", None)  # as on an install without transformers
    with pytest.raises(
        KeyError, match=r"needs transformers, which pip install \"prove-gym\[trl\]\""
    ):
        registry.get_format("chat_template")


@pytest.mark.parametrize("name", FORMATS)
@settings(max_examples=60, deadline=None)
@given(text=hostile_text)
def test_no_format_raises_on_any_text(name: str, text: str) -> None:
    parsed = get_registry().get_format(name).parse(text)
    for call in parsed.calls:
        assert (call.error is None) == (call.arguments is not None)


@pytest.mark.parametrize("name", FORMATS)
@settings(max_examples=60, deadline=None)
@given(batch=calls)
def test_every_format_parses_back_the_calls_it_renders(name: str, batch: list[dict]) -> None:
    fmt = get_registry().get_format(name)
    if not fmt.parallel_calls:
        batch = batch[:1]
    parsed = fmt.parse(fmt.render_calls(batch))
    assert [(c.name, c.arguments, c.error) for c in parsed.calls] == [
        (c["name"], c["arguments"], None) for c in batch
    ]


@settings(max_examples=100, deadline=None)
@given(calls, st.text(alphabet=st.characters(blacklist_characters="<>"), max_size=50))
def test_hermes_keeps_the_prose_around_its_calls(batch: list[dict], prose: str) -> None:
    parsed = HermesFormat().parse(HermesFormat().render_calls(batch, content=prose))
    assert [(c.name, c.arguments) for c in parsed.calls] == [
        (c["name"], c["arguments"]) for c in batch
    ]
    assert parsed.content == prose.strip()


def test_deep_nesting_is_a_parse_error_the_model_can_read() -> None:
    (call,) = HermesFormat().parse("<tool_call>" + "[" * 100_000 + "</tool_call>").calls
    assert call.error is not None and "nested too deeply" in call.error
    (call,) = JsonFormat().parse("[" * 100_000).calls
    assert call.error is not None and "JSON list of calls" in call.error


def test_arguments_given_as_a_json_string_are_decoded() -> None:
    parsed = HermesFormat().parse(
        '<tool_call>{"name": "f", "arguments": "{\\"a\\": 1}"}</tool_call>'
    )
    assert parsed.calls[0].arguments == {"a": 1}


def test_an_unclosed_final_block_is_read_to_the_end() -> None:
    parsed = HermesFormat().parse('Sure.\n<tool_call>{"name": "f", "arguments": {}}')
    assert parsed.calls[0].name == "f" and parsed.content == "Sure."


def test_a_call_without_a_name_is_a_parse_error() -> None:
    (call,) = HermesFormat().parse('<tool_call>{"arguments": {}}</tool_call>').calls
    assert call.error is not None and '"name"' in call.error and call.arguments is None


def test_json_format_reads_text_as_an_answer_and_renders_results_as_json() -> None:
    fmt = JsonFormat()
    assert fmt.parse("All done, the event is moved.").calls == ()
    out = fmt.feedback([{"role": "tool", "name": "f", "content": '{"id": "evt_1"}'}], [])
    assert json.loads(out) == {"tool_results": [{"name": "f", "result": {"id": "evt_1"}}]}


TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_event",
            "description": "Get an event.",
            "parameters": {
                "type": "object",
                "properties": {"event_id": {"type": "string"}},
                "required": ["event_id"],
            },
        },
    }
]


def _tokenizer_with(template: str):
    from trl.chat_template_utils import add_response_schema

    base = ChatTemplateFormat().tokenizer
    tok = type(base)(tokenizer_object=base.backend_tokenizer, unk_token="<unk>")
    tok.chat_template = template
    return add_response_schema(tok)


@pytest.mark.trainer
@pytest.mark.parametrize(
    "template", ["qwen2_5_chat_template", "qwen3_chat_template", "llama3_2_chat_template"]
)
def test_a_models_own_chat_template_renders_prompts_and_round_trips_calls(template: str) -> None:
    trl_templates = pytest.importorskip("trl.chat_template_utils")
    fmt = ChatTemplateFormat(_tokenizer_with(getattr(trl_templates, template)))
    prompt = fmt.prompt(
        [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Show evt_1."}],
        TOOLS,
    )
    assert "get_event" in prompt and prompt.index("Be brief.") < prompt.index("Show evt_1.")
    call = {"name": "get_event", "arguments": {"event_id": "evt_1"}}
    parsed = fmt.parse(fmt.render_calls([call]))
    assert [(c.name, c.arguments) for c in parsed.calls] == [("get_event", {"event_id": "evt_1"})]
    feedback = fmt.feedback([{"role": "tool", "name": "get_event", "content": "RESULT-42"}], TOOLS)
    assert "RESULT-42" in feedback
    assert fmt.feedback([], TOOLS) and "RESULT-42" not in fmt.feedback([], TOOLS)


@pytest.mark.trainer
def test_llama3_renders_one_call_per_message() -> None:
    trl_templates = pytest.importorskip("trl.chat_template_utils")
    fmt = ChatTemplateFormat(_tokenizer_with(trl_templates.llama3_2_chat_template))
    assert not fmt.parallel_calls
    assert ChatTemplateFormat(_tokenizer_with(trl_templates.qwen2_5_chat_template)).parallel_calls


class _Shouting(ToolCallFormat):
    name = "shouting"

    def system_message(self, instructions, tools):
        return instructions.upper()

    def parse(self, text):
        return JsonFormat().parse(text)

    def render_calls(self, calls, content=""):
        return JsonFormat().render_calls(calls)


class _FormatPlugin:
    @hookimpl
    def prove_gym_tool_call_formats(self):
        return {"shouting": _Shouting()}


def test_a_plugin_adds_a_format_through_the_hook_and_a_duplicate_name_is_an_error() -> None:
    registry = Registry(load_entrypoints=False)
    registry.register(_FormatPlugin(), name="shouting")
    assert registry.get_format("shouting").system_message("hi", []) == "HI"
    with pytest.raises(KeyError, match=r"registered: .*hermes"):
        registry.get_format("xml")

    class _Twin:
        @hookimpl
        def prove_gym_tool_call_formats(self):
            return {"hermes": _Shouting()}

    registry.register(_Twin(), name="twin")
    with pytest.raises(PluginError, match="'hermes'"):
        _ = registry.formats
