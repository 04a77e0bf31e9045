"""A stand-in OpenAI-compatible chat-completions endpoint: a real HTTP server on 127.0.0.1.

It answers each ``POST .../chat/completions`` with ``reply(request_json)``: a string is
the assistant's text, ``(status, body)`` a raw answer (an HTTP error, a body that is
not JSON). It records every request and its headers. :func:`rewriting_reply` answers a
rewrite request of :mod:`prove_gym.synth.writer` deterministically, good rewrites mixed
with hostile ones, to test the writer's checks and to measure its cost without a model.

>>> with StubChat(lambda payload: "Hi!") as stub:
...     from prove_gym.synth.llm import LLMClient
...     LLMClient(stub.url, "m", cache_dir=None).complete([{"role": "user", "content": "x"}], cache=False)
'Hi!'
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

Reply = Callable[[dict[str, Any]], "str | tuple[int, str]"]


class StubChat:
    """The endpoint, serving from construction (or ``with``) until :meth:`close`.

    Attributes:
        url: Its base URL (``http://127.0.0.1:PORT/v1``).
        reply: What answers a request (may be replaced while it serves).
        requests: Every request body, parsed, in arrival order.
        headers: Every request's headers.
    """

    def __init__(self, reply: Reply | None = None) -> None:
        self.reply: Reply = reply or (lambda payload: "ok")
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self._lock = threading.Lock()
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", 0))
                payload = json.loads(self.rfile.read(length))
                with stub._lock:
                    stub.requests.append(payload)
                    stub.headers.append(dict(self.headers))
                answer = stub.reply(payload)
                status, text = answer if isinstance(answer, tuple) else (200, answer)
                if status == 200:
                    message = {"role": "assistant", "content": text}
                    body = json.dumps({"choices": [{"message": message}]}).encode()
                else:
                    body = text.encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                except OSError:  # the client gave up (a timeout, a reply it would not read)
                    pass

            def log_message(self, *args: Any) -> None:
                pass

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)
        self._thread.start()
        self.url = f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def close(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> StubChat:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


_REQUEST = re.compile(r"MESSAGE \((FIRST|LATER)\):\n(.*)\n\nKEEP:\n(.*)\Z", re.DOTALL)

REWRITE_KINDS = ("good", "good", "good", "dropped", "added", "huge", "garbage", "greeting")
"""What :func:`rewriting_reply` answers, by a hash of the message: mostly good rewrites,
then one of each hostile kind (a value dropped, an id added, 100,000 characters, a
reply that is not JSON, a greeting in a later turn)."""


def rewrite_request(payload: dict[str, Any]) -> tuple[bool, str, list[str]]:
    """``(first turn, message, keep)`` of a writer's rewrite request."""
    content = str(payload["messages"][-1]["content"])
    m = _REQUEST.match(content)
    if m is None:
        raise ValueError(f"not a rewrite request: {content[:100]!r}")
    keep = [] if m.group(3) == "(nothing)" else m.group(3).split("\n")
    return m.group(1) == "FIRST", m.group(2), keep


def rewriting_reply(
    payload: dict[str, Any], *, kinds: tuple[str, ...] = REWRITE_KINDS, delay: float = 0.0
) -> str | tuple[int, str]:
    """A deterministic answer to a rewrite request (see :data:`REWRITE_KINDS`).

    A good rewrite keeps the message's words and values and changes how it opens; a
    ``timeout`` kind (not in the default mix) sleeps ``delay`` seconds first.
    """
    first, message, keep = rewrite_request(payload)
    digest = hashlib.sha256(message.encode()).digest()
    kind = kinds[digest[0] % len(kinds)]
    if kind == "timeout":
        time.sleep(delay)
        kind = "good"
    if kind == "dropped" and keep:
        text = message.replace(keep[0], "it")
    elif kind == "added":
        text = f"{message} And copy usr_99999 on it."
    elif kind == "huge":
        text = "very " * 20_000 + message
    elif kind == "garbage":
        return '{"text": "' + message[:20]  # cut off: no JSON object ends
    elif kind == "greeting" and not first:
        text = f"Hello! {message}"
    else:
        text = f"Could you help me with this? {message}" if not first else f"{message} Thanks!"
    return json.dumps({"text": text})
