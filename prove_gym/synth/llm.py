"""A minimal client for any OpenAI-compatible chat-completions endpoint (plain HTTP, no SDK).

Used for the two optional LLM steps of synthesis: refining the dependency graph
and writing user turns (:mod:`~prove_gym.synth.writer`). Replies are cached on disk by a hash of the whole
request, so a rerun with the same flags sends nothing and writes the same bytes.

>>> client = LLMClient("http://127.0.0.1:8000/v1", "qwen3-4b")  # doctest: +SKIP
>>> client.complete([{"role": "user", "content": "Say hi"}])  # doctest: +SKIP
'Hi!'
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import time
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

MAX_REPLY_BYTES = 1 << 20
"""A reply body longer than this (1 MiB) is an error, read no further."""


class LLMError(RuntimeError):
    """The endpoint could not be reached or answered something unusable."""


def default_cache_dir() -> Path:
    """``$PROVE_GYM_CACHE`` or ``~/.cache/prove_gym``."""
    env = os.environ.get("PROVE_GYM_CACHE")
    return Path(env) if env else Path.home() / ".cache" / "prove_gym"


def chat_url(base_url: str) -> str:
    """``http://h/v1`` -> ``http://h/v1/chat/completions`` (a full URL is kept as is)."""
    base = base_url.rstrip("/")
    return base if base.endswith("/chat/completions") else f"{base}/chat/completions"


def extract_json(text: str) -> Any:
    """The first JSON object in a reply, also inside a ```json fence.

    >>> extract_json('Sure: ```json\\n{"a": 1}\\n```')
    {'a': 1}
    """
    fenced = re.search(r"```(?:json)?\s*(.*?)```", text, re.DOTALL)
    candidate = fenced.group(1) if fenced else text
    start = candidate.find("{")
    if start < 0:
        raise LLMError(f"no JSON object in the reply: {text[:200]!r}")
    try:
        obj, _ = json.JSONDecoder().raw_decode(candidate[start:])
    except json.JSONDecodeError as exc:
        raise LLMError(f"the reply is not valid JSON ({exc}): {text[:200]!r}") from None
    return obj


class LLMClient:
    """Chat completions over HTTP with an on-disk reply cache.

    Args:
        base_url: The endpoint's base URL, such as ``http://127.0.0.1:8000/v1``.
        model: Model name to send.
        api_key: Bearer token; ``None`` reads ``OPENAI_API_KEY`` (may be unset for local servers).
        timeout: Seconds per request.
        retries: Extra tries after a connection error or a 5xx/429 answer.
        cache_dir: Folder of the reply cache (``None``: :func:`default_cache_dir`).
        temperature: Sampling temperature (0 for reproducible replies).
        seed: Sent as ``seed`` (servers that honour it reply deterministically).
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str | None = None,
        timeout: float = 60.0,
        retries: int = 2,
        cache_dir: str | Path | None = None,
        temperature: float = 0.0,
        seed: int = 0,
    ) -> None:
        self.url = chat_url(base_url)
        self.model = model
        self.api_key = api_key if api_key is not None else os.environ.get("OPENAI_API_KEY")
        self.timeout = timeout
        self.retries = retries
        self.cache_dir = Path(cache_dir) if cache_dir is not None else default_cache_dir()
        self.temperature = temperature
        self.seed = seed
        self.requests = 0
        """How many HTTP requests this client sent (cache hits send none)."""

    def complete(
        self,
        messages: Sequence[Mapping[str, str]],
        *,
        json_mode: bool = False,
        cache: bool = True,
        max_tokens: int | None = None,
    ) -> str:
        """Send a chat request and return the assistant's text.

        Raises:
            LLMError: Unreachable endpoint, an HTTP error, or a reply without text.
        """
        payload: dict[str, Any] = {
            "model": self.model,
            "messages": [dict(m) for m in messages],
            "temperature": self.temperature,
            "seed": self.seed,
        }
        if json_mode:
            payload["response_format"] = {"type": "json_object"}
        if max_tokens is not None:
            payload["max_tokens"] = max_tokens
        body = json.dumps(payload, sort_keys=True, ensure_ascii=False).encode()
        path = self.cache_dir / "llm" / f"{hashlib.sha256(body).hexdigest()}.json"
        if cache and path.exists():
            return str(json.loads(path.read_text(encoding="utf-8"))["content"])
        text = self._post(body)
        if cache:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_text(json.dumps({"content": text}, ensure_ascii=False), encoding="utf-8")
            tmp.replace(path)
        return text

    def _post(self, body: bytes) -> str:
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        last: Exception | None = None
        for attempt in range(self.retries + 1):
            if attempt:
                time.sleep(min(0.5 * 2**attempt, 4.0))
            request = urllib.request.Request(self.url, data=body, headers=headers, method="POST")
            self.requests += 1
            try:
                with urllib.request.urlopen(request, timeout=self.timeout) as resp:
                    raw = resp.read(MAX_REPLY_BYTES + 1)
                if len(raw) > MAX_REPLY_BYTES:
                    raise LLMError(f"{self.url} answered more than {MAX_REPLY_BYTES} bytes")
                data = json.loads(raw.decode("utf-8", "replace"))
            except urllib.error.HTTPError as exc:
                detail = exc.read().decode("utf-8", "replace")[:300]
                last = LLMError(f"{self.url} answered HTTP {exc.code}: {detail}")
                if exc.code == 429 or exc.code >= 500:
                    continue
                raise last from None
            except (urllib.error.URLError, TimeoutError, ConnectionError, OSError) as exc:
                last = LLMError(f"cannot reach {self.url}: {exc}")
                continue
            except json.JSONDecodeError as exc:
                raise LLMError(f"{self.url} did not answer JSON: {exc}") from None
            try:
                content = data["choices"][0]["message"]["content"]
            except (KeyError, IndexError, TypeError):
                raise LLMError(
                    f"unexpected reply shape from {self.url}: {str(data)[:300]}"
                ) from None
            if not isinstance(content, str):
                raise LLMError(f"the reply from {self.url} has no text content")
            return content
        assert last is not None
        raise last
