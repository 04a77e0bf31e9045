"""The OpenAI-compatible client and LLM paraphrasing, against a real HTTP server on 127.0.0.1."""

from __future__ import annotations

import json
import re
import socket

import pytest

from prove_gym import gold_replay
from prove_gym.synth import LLMClient, LLMError, SynthConfig, synthesize
from prove_gym.synth.generate import paraphrase
from prove_gym.synth.llm import chat_url, extract_json


def test_a_reply_is_the_assistant_text_and_the_request_is_openai_shaped(fake_llm, tmp_path) -> None:
    fake_llm.reply = lambda payload: "Hello there"
    client = LLMClient(fake_llm.url, "m1", api_key="sk-test", cache_dir=tmp_path, seed=3)
    text = client.complete([{"role": "user", "content": "hi"}], json_mode=True)
    assert text == "Hello there"
    req = fake_llm.requests[0]
    assert req["model"] == "m1" and req["messages"] == [{"role": "user", "content": "hi"}]
    assert req["temperature"] == 0.0 and req["seed"] == 3
    assert req["response_format"] == {"type": "json_object"}
    assert fake_llm.headers[0]["Authorization"] == "Bearer sk-test"


def test_identical_requests_are_answered_from_the_disk_cache(fake_llm, tmp_path) -> None:
    fake_llm.reply = lambda payload: f"reply {len(fake_llm.requests)}"
    messages = [{"role": "user", "content": "same"}]
    first = LLMClient(fake_llm.url, "m", cache_dir=tmp_path).complete(messages)
    second = LLMClient(fake_llm.url, "m", cache_dir=tmp_path).complete(messages)
    assert first == second == "reply 1"
    assert len(fake_llm.requests) == 1
    LLMClient(fake_llm.url, "other-model", cache_dir=tmp_path).complete(messages)
    assert len(fake_llm.requests) == 2


def test_a_server_error_is_retried_then_succeeds(fake_llm, tmp_path) -> None:
    answers = iter([(500, "overloaded"), "fine"])
    fake_llm.reply = lambda payload: next(answers)
    client = LLMClient(fake_llm.url, "m", cache_dir=tmp_path, retries=1)
    assert client.complete([{"role": "user", "content": "x"}], cache=False) == "fine"
    assert client.requests == 2


def test_a_client_error_raises_at_once_with_the_status(fake_llm, tmp_path) -> None:
    fake_llm.reply = lambda payload: (401, '{"error": "bad key"}')
    client = LLMClient(fake_llm.url, "m", cache_dir=tmp_path, retries=3)
    with pytest.raises(LLMError, match="401"):
        client.complete([{"role": "user", "content": "x"}])
    assert client.requests == 1


def test_an_unreachable_endpoint_raises_llm_error(tmp_path) -> None:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    client = LLMClient(f"http://127.0.0.1:{port}/v1", "m", cache_dir=tmp_path, retries=0, timeout=2)
    with pytest.raises(LLMError, match="cannot reach"):
        client.complete([{"role": "user", "content": "x"}])


def test_urls_and_json_replies_are_read_leniently() -> None:
    assert chat_url("http://h:1/v1/") == "http://h:1/v1/chat/completions"
    assert chat_url("http://h:1/v1/chat/completions") == "http://h:1/v1/chat/completions"
    assert extract_json('```json\n{"edges": []}\n```') == {"edges": []}
    with pytest.raises(LLMError):
        extract_json("no json here")


def _message(payload: dict) -> str:
    content = payload["messages"][1]["content"]
    return re.search(r"MESSAGE:\n(.*)\n\nKEEP:", content, re.DOTALL).group(1)


def test_a_paraphrase_is_used_only_when_it_keeps_every_value(fake_llm, tmp_path) -> None:
    client = LLMClient(fake_llm.url, "m", cache_dir=tmp_path)
    fake_llm.reply = lambda payload: "Please, " + _message(payload)
    assert paraphrase(client, "Cancel evt_0042.", ["evt_0042"]) == "Please, Cancel evt_0042."
    fake_llm.reply = lambda payload: "Cancel my meeting."
    assert paraphrase(client, "Cancel evt_0043.", ["evt_0043"]) is None
    fake_llm.reply = lambda payload: (500, "down")
    assert (
        paraphrase(LLMClient(fake_llm.url, "m", cache_dir=tmp_path, retries=0), "Hi x.", ["x"])
        is None
    )


def test_synthesis_paraphrases_user_turns_through_the_endpoint_and_stays_valid(
    fake_llm, tmp_path
) -> None:
    fake_llm.reply = lambda payload: "Hey! " + _message(payload)
    cfg = SynthConfig(
        servers=("calendar",),
        n=6,
        seed=5,
        state_seeds=1,
        llm_url=fake_llm.url,
        llm_model="para",
        cache_dir=str(tmp_path),
    )
    result = synthesize(cfg)
    assert fake_llm.requests, "the endpoint was never called"
    assert all(t.meta["paraphrased"] > 0 for t in result.tasks)
    for task in result.tasks:
        asked = [t for t in task.turns if t.kind != "abstain" or not t.steps]
        assert any(t.user.startswith("Hey! ") for t in asked)
        _, final = gold_replay(task)
        assert final == task.final_state_hash
    again = synthesize(cfg)  # every reply now comes from the cache
    calls = len(fake_llm.requests)
    assert [t.to_json() for t in again.tasks] == [t.to_json() for t in result.tasks]
    assert len(fake_llm.requests) == calls
    assert json.loads(result.tasks[0].to_json())["meta"]["paraphrased"] >= 1
