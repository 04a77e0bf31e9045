"""The OpenAI-compatible client, against a real HTTP server on 127.0.0.1."""

from __future__ import annotations

import socket

import pytest

from prove_gym.synth import LLMClient, LLMError
from prove_gym.synth.llm import MAX_REPLY_BYTES, chat_url, extract_json


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


def test_a_reply_over_the_size_cap_is_an_error_read_no_further(fake_llm, tmp_path) -> None:
    fake_llm.reply = lambda payload: "x" * (MAX_REPLY_BYTES + 10)
    client = LLMClient(fake_llm.url, "m", cache_dir=tmp_path, retries=0)
    with pytest.raises(LLMError, match="more than"):
        client.complete([{"role": "user", "content": "x"}])
    assert not list(tmp_path.rglob("*.json")), "nothing is cached"
