"""Shared fixtures: one dataset synthesized per test session over every installed server,
and a tiny OpenAI-compatible HTTP server on 127.0.0.1 for the optional LLM steps."""

from __future__ import annotations

import json
import pickle
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from prove_gym.synth import SynthConfig, SynthResult, synthesize

PER_SERVER = 50


@pytest.fixture(scope="session")
def synth_config() -> SynthConfig:
    import prove_gym

    n = PER_SERVER * len(prove_gym.get_registry().servers)
    return SynthConfig(servers=("all",), n=n, seed=11, state_seeds=2)


@pytest.fixture(scope="session")
def dataset(
    synth_config: SynthConfig, tmp_path_factory: pytest.TempPathFactory, worker_id: str
) -> SynthResult:
    """Synthesized once per test run: the first xdist worker to need it writes it where the
    others read it (the run is deterministic, so each would compute the same result)."""
    if worker_id == "master":  # not under xdist
        return synthesize(synth_config)
    from filelock import FileLock

    path = tmp_path_factory.getbasetemp().parent / "synth-dataset.pickle"
    with FileLock(f"{path}.lock"):
        if path.is_file():
            loaded: SynthResult = pickle.loads(path.read_bytes())
            return loaded
        result = synthesize(synth_config)
        path.write_bytes(pickle.dumps(result))
        return result


Reply = Callable[[dict[str, Any]], "str | tuple[int, str]"]


@dataclass
class FakeLLM:
    """A chat-completions endpoint that answers with ``reply(request_json)``."""

    url: str
    requests: list[dict[str, Any]] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)
    reply: Reply = field(default=lambda payload: "ok")


@pytest.fixture
def fake_llm() -> Iterator[FakeLLM]:
    state = FakeLLM(url="")

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", 0))
            payload = json.loads(self.rfile.read(length))
            state.requests.append(payload)
            state.headers.append(dict(self.headers))
            answer = state.reply(payload)
            status, text = answer if isinstance(answer, tuple) else (200, answer)
            if status == 200:
                body = json.dumps(
                    {"choices": [{"message": {"role": "assistant", "content": text}}]}
                ).encode()
            else:
                body = text.encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    state.url = f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    try:
        yield state
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=5)
