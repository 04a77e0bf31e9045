"""Policies: what plays an :class:`~prove_gym.episode.Episode` in ``prove-gym eval`` and the demos.

A :class:`Policy` starts an :class:`Agent` per episode; the agent answers the
episode so far with the next assistant turn (an :data:`~prove_gym.episode.Action`:
text in the episode's tool-call format, or a structured OpenAI-style message).

- :class:`OraclePolicy`: the gold calls, rendered in the episode's own format
  (the ceiling of the reward, in every format);
- :class:`RandomPolicy`: random offered tools with random arguments (the floor);
- :class:`OpenAIChatPolicy`: any OpenAI-compatible ``/chat/completions`` endpoint,
  tools passed natively.

A local transformers model is played by the training engine instead
(:func:`prove_gym.training.evaluate_model`, what ``prove-gym eval --hf-model`` runs).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

import numpy as np

from prove_gym.episode import Action, Episode
from prove_gym.server.state import stable_int

__all__ = [
    "Agent",
    "OpenAIChatPolicy",
    "OraclePolicy",
    "Policy",
    "RandomPolicy",
]


class Agent(Protocol):
    """One episode of a policy."""

    def act(self, episode: Episode) -> Action:
        """The next assistant turn, given the episode so far (its messages, user turn, format)."""
        ...


class Policy(Protocol):
    """Makes an :class:`Agent` for each episode."""

    name: str

    def start(self, episode: Episode) -> Agent:
        """Start playing ``episode`` (freshly reset)."""
        ...


def _native_messages(episode: Episode) -> list[dict[str, Any]]:
    """The conversation with the tools taken out of the system message (they go natively)."""
    return [{"role": "system", "content": episode.instructions}, *map(dict, episode.messages[1:])]


class _OracleAgent:
    def __init__(self) -> None:
        self._sent: dict[int, int] = {}

    def act(self, episode: Episode) -> Action:
        turn = episode.user_turn
        spec = episode.task.turns[turn]
        if spec.kind == "clarify":
            missing = ", ".join(spec.missing) or "the missing details"
            return f"Before I do that, could you tell me {missing}?"
        if spec.kind == "abstain":
            return "Sorry, none of my tools can do that."
        sent = self._sent.get(turn, 0)
        steps = spec.steps[sent:]
        if not steps:
            last = episode.trajectory[-1].result if episode.trajectory else None
            if spec.given_up and last is not None and not last.ok:
                return f"I could not do that: {last.message} I have left everything as it was."
            return "Done."
        if not episode.format.parallel_calls:
            steps = steps[:1]
        else:  # a failed attempt ends its message: what recovers from it reads its error
            ends = [k for k, s in enumerate(steps) if s.attempt]
            steps = steps[: ends[0] + 1] if ends else steps
        self._sent[turn] = sent + len(steps)
        return episode.format.render_calls(
            {"name": s.name, "arguments": s.arguments} for s in steps
        )


class OraclePolicy:
    """Plays the gold behaviour in the episode's own format: each turn's gold calls, then an answer.

    The calls of a turn go in one message (one per message where the format
    allows no more), a failed attempt the gold shows last in its message; a turn the
    gold gives up (its last step a failed attempt) ends on the error, explained;
    clarify turns get a question naming the missing values,
    abstain turns a refusal. It scores the maximum reward on every valid task.
    """

    name = "oracle"

    def start(self, episode: Episode) -> Agent:
        return _OracleAgent()


class _RandomAgent:
    def __init__(self, tools: Sequence[Mapping[str, Any]], seed: int, calls_per_turn: int) -> None:
        self.tools = tools
        self.rng = np.random.default_rng(seed)
        self.calls_per_turn = calls_per_turn
        self._made: dict[int, int] = {}

    def act(self, episode: Episode) -> Action:
        turn = episode.user_turn
        made = self._made.get(turn, 0)
        if made >= self.calls_per_turn or not self.tools:
            return "Done."
        self._made[turn] = made + 1
        tool = self.tools[int(self.rng.integers(len(self.tools)))]["function"]
        args = {}
        for name, schema in tool["parameters"].get("properties", {}).items():
            if name in tool["parameters"].get("required", []) or self.rng.random() < 0.3:
                args[name] = self._value(schema)
        return episode.format.render_calls([{"name": tool["name"], "arguments": args}])

    def _value(self, schema: Mapping[str, Any]) -> Any:
        if "enum" in schema:
            return schema["enum"][int(self.rng.integers(len(schema["enum"])))]
        kind = schema.get("type")
        if kind == "integer":
            return int(self.rng.integers(0, 100))
        if kind == "number":
            return float(self.rng.integers(0, 10000)) / 100
        if kind == "boolean":
            return bool(self.rng.integers(2))
        if kind == "array":
            return []
        return f"x{int(self.rng.integers(1000)):03d}"


class RandomPolicy:
    """Random offered tools with random-looking arguments, then an answer (the floor).

    Seeded per task (``seed`` and the task id), so results do not depend on the
    order or concurrency of episodes.
    """

    name = "random"

    def __init__(self, seed: int = 0, calls_per_turn: int = 2) -> None:
        self.seed = seed
        self.calls_per_turn = calls_per_turn

    def start(self, episode: Episode) -> Agent:
        seed = stable_int("random-policy", self.seed, episode.task.id) % 2**32
        return _RandomAgent(episode.tools, seed, self.calls_per_turn)


class _ChatAgent:
    def __init__(self, policy: OpenAIChatPolicy) -> None:
        self.policy = policy

    def act(self, episode: Episode) -> Action:
        body: dict[str, Any] = {
            "model": self.policy.model,
            "messages": _native_messages(episode),
            "temperature": self.policy.temperature,
            "max_tokens": self.policy.max_tokens,
        }
        if episode.tools:
            body["tools"] = episode.tools
        reply = self.policy.complete(body)
        message = reply["choices"][0]["message"]
        return {
            "role": "assistant",
            "content": message.get("content") or "",
            "tool_calls": message.get("tool_calls") or [],
        }


class OpenAIChatPolicy:
    """Any OpenAI-compatible chat endpoint (vLLM, llama.cpp, TGI, a hosted API).

    Args:
        base_url: The API root, such as ``"http://127.0.0.1:8000/v1"``.
        model: The model name the endpoint serves.
        api_key: Sent as a bearer token when given.
        temperature: Sampling temperature (0: greedy, for reproducible evaluations).
        max_tokens: Cap on each assistant message.
        timeout: Seconds per request.
        retries: Extra attempts on connection errors and 5xx answers.
    """

    name = "openai"

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str | None = None,
        temperature: float = 0.0,
        max_tokens: int = 1024,
        timeout: float = 120.0,
        retries: int = 2,
    ) -> None:
        import httpx

        self.base_url = base_url.rstrip("/")
        self.model = model
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.retries = retries
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = httpx.Client(timeout=timeout, headers=headers)
        self.name = f"openai:{model}"

    def complete(self, body: Mapping[str, Any]) -> dict[str, Any]:
        """POST ``/chat/completions`` and return the decoded answer."""
        import httpx

        last: Exception | None = None
        for attempt in range(self.retries + 1):
            try:
                r = self._client.post(f"{self.base_url}/chat/completions", json=dict(body))
                if r.status_code >= 500 and attempt < self.retries:
                    last = RuntimeError(f"HTTP {r.status_code}: {r.text[:200]}")
                    time.sleep(0.5 * (attempt + 1))
                    continue
                r.raise_for_status()
                answer: dict[str, Any] = r.json()
                return answer
            except httpx.TransportError as exc:
                last = exc
                time.sleep(0.5 * (attempt + 1))
        raise RuntimeError(f"{self.base_url}/chat/completions failed: {last}")

    def start(self, episode: Episode) -> Agent:
        return _ChatAgent(self)

    def close(self) -> None:
        self._client.close()
