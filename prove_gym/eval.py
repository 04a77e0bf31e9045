"""Evaluation: play a policy over tasks in the env and report every reward component.

Each task is one :class:`~prove_gym.env.env.ProveEnv` episode, scored by the
env's own reward (the same path training uses). The report gives, overall,
per server and per tool: the mean total and every component, the success rate
(full coverage *and* final state equal to the gold replay's; for a task
without gold calls, no call), calls per task, and per tool how often it was
called, how often those calls executed, and how many gold steps it matched.

Policies (all speak to the env in Hermes text):

- :class:`OraclePolicy` and :class:`RandomPolicy`: the built-in baselines;
- :class:`OpenAIChatPolicy`: any OpenAI-compatible ``/chat/completions``
  endpoint, tools passed natively;
- :class:`TransformersPolicy`: a local transformers model (``--hf-model``,
  ``--gguf``), tools rendered by its chat template.

>>> report = evaluate(OraclePolicy(), get_registry().tasks("calendar"), progress=False)  # doctest: +SKIP
>>> print(report.table())  # doctest: +SKIP
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Protocol

from prove_gym import policies
from prove_gym.env.env import ProveEnv
from prove_gym.registry import Registry, get_registry
from prove_gym.reward import RewardConfig
from prove_gym.server.base import stable_int
from prove_gym.task import Task

__all__ = [
    "Agent",
    "EpisodeResult",
    "EvalReport",
    "OpenAIChatPolicy",
    "OraclePolicy",
    "Policy",
    "RandomPolicy",
    "TransformersPolicy",
    "evaluate",
    "run_episode",
]


# ------------------------------------------------------------------ policies
class Agent(Protocol):
    """One episode of a policy: answers the conversation so far with the next assistant message."""

    def act(self, messages: list[dict[str, Any]], turn: int) -> str:
        """The assistant's next message as text (tool calls as Hermes ``<tool_call>`` blocks).

        Args:
            messages: The conversation so far in OpenAI format; the first is the
                system message with the tools rendered in text.
            turn: Index of the current user turn.
        """
        ...


class Policy(Protocol):
    """Makes an :class:`Agent` for each episode."""

    name: str

    def episode(self, task: Task, tools: list[dict[str, Any]], instructions: str) -> Agent:
        """Start an episode of ``task`` with these offered tools and system instructions."""
        ...


class _OracleAgent:
    def __init__(self, task: Task) -> None:
        self._oracle = policies.OraclePolicy(task)

    def act(self, messages: list[dict[str, Any]], turn: int) -> str:
        return self._oracle.act(turn)


class OraclePolicy:
    """Replays the gold calls (the ceiling of the reward)."""

    name = "oracle"

    def episode(self, task: Task, tools: list[dict[str, Any]], instructions: str) -> Agent:
        return _OracleAgent(task)


class _RandomAgent:
    def __init__(self, policy: policies.RandomPolicy) -> None:
        self._policy = policy

    def act(self, messages: list[dict[str, Any]], turn: int) -> str:
        return self._policy.act(turn)


class RandomPolicy:
    """Random offered tools with random arguments (the floor); seeded per task."""

    name = "random"

    def __init__(self, seed: int = 0, calls_per_turn: int = 2) -> None:
        self.seed = seed
        self.calls_per_turn = calls_per_turn

    def episode(self, task: Task, tools: list[dict[str, Any]], instructions: str) -> Agent:
        seed = stable_int("random-policy", self.seed, task.id) % 2**32
        return _RandomAgent(
            policies.RandomPolicy(tools, seed=seed, calls_per_turn=self.calls_per_turn)
        )


def _native_messages(messages: Sequence[Mapping[str, Any]], instructions: str) -> list[dict]:
    """The conversation with the tools taken out of the system message (they go natively)."""
    out = [{"role": "system", "content": instructions}]
    out += [dict(m) for m in messages[1:]]
    return out


def _hermes_text(content: str | None, tool_calls: Sequence[Mapping[str, Any]] | None) -> str:
    """An OpenAI-style assistant message as Hermes text, arguments kept as the model wrote them."""
    blocks = []
    for tc in tool_calls or []:
        fn = tc.get("function", tc)
        args = fn.get("arguments", {})
        if isinstance(args, str):
            # Unparseable text is kept as is: the env reports it as invalid arguments.
            with contextlib.suppress(json.JSONDecodeError):
                args = json.loads(args) if args.strip() else {}
        body = json.dumps({"name": fn.get("name", ""), "arguments": args}, ensure_ascii=False)
        blocks.append(f"<tool_call>\n{body}\n</tool_call>")
    return "\n".join(([content] if content else []) + blocks)


class _ChatAgent:
    def __init__(self, policy: OpenAIChatPolicy, tools: list[dict[str, Any]], instructions: str):
        self.policy, self.tools, self.instructions = policy, tools, instructions

    def act(self, messages: list[dict[str, Any]], turn: int) -> str:
        body: dict[str, Any] = {
            "model": self.policy.model,
            "messages": _native_messages(messages, self.instructions),
            "temperature": self.policy.temperature,
            "max_tokens": self.policy.max_tokens,
        }
        if self.tools:
            body["tools"] = self.tools
        reply = self.policy.complete(body)
        message = reply["choices"][0]["message"]
        return _hermes_text(message.get("content"), message.get("tool_calls"))


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
                return r.json()
            except httpx.TransportError as exc:
                last = exc
                time.sleep(0.5 * (attempt + 1))
        raise RuntimeError(f"{self.base_url}/chat/completions failed: {last}")

    def episode(self, task: Task, tools: list[dict[str, Any]], instructions: str) -> Agent:
        return _ChatAgent(self, tools, instructions)

    def close(self) -> None:
        self._client.close()


class _LocalAgent:
    def __init__(self, policy: TransformersPolicy, tools: list[dict[str, Any]], instructions: str):
        self.policy, self.tools, self.instructions = policy, tools, instructions

    def act(self, messages: list[dict[str, Any]], turn: int) -> str:
        return self.policy.generate(_native_messages(messages, self.instructions), self.tools)


class TransformersPolicy:
    """A local transformers causal LM; its chat template renders the tools.

    Args:
        model: The model (already loaded; see :func:`prove_gym.adapters.models.load_causal_lm`).
        tokenizer: Its tokenizer, with a chat template that renders tools.
        max_new_tokens: Cap on each assistant message.
        temperature: 0 for greedy decoding.
        seed: Seed of sampling when ``temperature > 0``.
    """

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        *,
        max_new_tokens: int = 256,
        temperature: float = 0.0,
        seed: int = 0,
        name: str = "transformers",
    ) -> None:
        self.model = model.eval()
        self.tokenizer = tokenizer
        self.max_new_tokens = max_new_tokens
        self.temperature = temperature
        self.seed = seed
        self.name = name
        self._lock = threading.Lock()  # one generation at a time: the model is shared

    def generate(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> str:
        import torch

        from prove_gym.adapters.common import _plain

        tok = self.tokenizer
        enc = tok.apply_chat_template(
            [_plain(m) for m in messages],
            tools=tools or None,
            add_generation_prompt=True,
            tokenize=True,
            return_dict=True,
            return_tensors="pt",
        )
        sample = self.temperature > 0
        with self._lock, torch.no_grad():
            if sample:
                torch.manual_seed(self.seed)
            out = self.model.generate(
                **enc,
                max_new_tokens=self.max_new_tokens,
                do_sample=sample,
                temperature=self.temperature if sample else None,
                top_p=None,
                top_k=None,
                pad_token_id=tok.pad_token_id,
            )
        new = out[0, enc["input_ids"].shape[1] :]
        return tok.decode(new, skip_special_tokens=True)

    def episode(self, task: Task, tools: list[dict[str, Any]], instructions: str) -> Agent:
        return _LocalAgent(self, tools, instructions)


# ------------------------------------------------------------------ episodes
@dataclass
class EpisodeResult:
    """One task played by one policy.

    Attributes:
        task_id: The task.
        servers: Its servers (the first is the primary one).
        kind: ``normal``, ``clarify`` or ``abstain``.
        total: The reward paid.
        components: Every reward component (``None`` where undefined for the task).
        n_calls: Calls the policy made.
        n_gold: Gold calls of the task.
        calls: Per call: ``tool``, ``server`` (``None`` if it reached none) and ``ok``.
        gold_tools: Name of each gold step, and whether a call matched it.
        full_coverage: Every gold step matched after its prerequisites (for a
            task without gold calls: no call was made).
        state_match: The final state equals the gold replay's.
        success: Full coverage and state match.
        terminated: The episode ended by answering the last user turn.
        assistant_turns: Assistant messages sent.
        seconds: Wall time of the episode.
        error: Why the policy failed (an HTTP error, say); the episode then scores 0.
    """

    task_id: str
    servers: list[str]
    kind: str
    total: float
    components: dict[str, float | None]
    n_calls: int
    n_gold: int
    calls: list[dict[str, Any]] = field(default_factory=list)
    gold_tools: list[dict[str, Any]] = field(default_factory=list)
    full_coverage: bool | None = None
    state_match: bool | None = None
    success: bool = False
    terminated: bool = False
    assistant_turns: int = 0
    seconds: float = 0.0
    error: str | None = None

    @property
    def server(self) -> str:
        return self.servers[0]


def _flag(value: Any) -> bool | None:
    return None if value is None else float(value) >= 1.0 - 1e-9


def run_episode(
    policy: Policy,
    task: Task,
    *,
    max_assistant_turns: int = 10,
    max_user_turns: int = 5,
    reward_config: RewardConfig | None = None,
    registry: Registry | None = None,
) -> EpisodeResult:
    """Play ``task`` with ``policy`` in a fresh env and collect its score."""
    started = time.perf_counter()
    env = ProveEnv(
        task.server,
        tasks=[task],
        max_assistant_turns=max_assistant_turns,
        max_user_turns=max_user_turns,
        reward_config=reward_config,
        registry=registry,
    )
    try:
        _obs, info = env.reset(options={"task": task})
        agent = policy.episode(env.task, info["tools"], info["instructions"])
        breakdown: dict[str, Any] | None = None
        terminated = False
        error = None
        while breakdown is None:
            try:
                action = agent.act([dict(m) for m in env.messages], env.user_turn)
            except Exception as exc:  # the policy failed: score what was done so far
                error = f"{type(exc).__name__}: {exc}"
                env.max_assistant_turns = env.assistant_turns + 1
                action = ""
            _obs, _reward, terminated, _truncated, info = env.step(action)
            breakdown = info["reward_breakdown"]
        trajectory = env.trajectory
        assistant_turns = env.assistant_turns
    finally:
        env.close()
    comps = dict(breakdown.get("components", {}))
    matched = breakdown.get("matched", {}) or {}
    steps = env.task.steps if env.task is not None else task.steps
    if steps:
        full = _flag(comps.get("coverage"))
    else:
        full = _flag(comps.get("abstention")) if "abstention" in comps else not trajectory
    state = _flag(comps.get("state"))
    if state is None and breakdown.get("gold_state_hash") and breakdown.get("final_state_hash"):
        state = breakdown["gold_state_hash"] == breakdown["final_state_hash"]
    return EpisodeResult(
        task_id=task.id,
        servers=list(task.servers),
        kind=task.kind,
        total=float(breakdown["total"]),
        components=comps,
        n_calls=len(trajectory),
        n_gold=len(steps),
        calls=[{"tool": r.name, "server": r.server, "ok": r.result.ok} for r in trajectory],
        gold_tools=[
            {"tool": s.name, "server": task.step_server(s), "matched": s.id in matched}
            for s in steps
        ],
        full_coverage=full,
        state_match=state,
        success=bool(full) and state is not False,
        terminated=bool(terminated),
        assistant_turns=assistant_turns,
        seconds=time.perf_counter() - started,
        error=error,
    )


# -------------------------------------------------------------------- report
def _mean(values: Iterable[float | None]) -> float | None:
    vals = [float(v) for v in values if v is not None]
    return sum(vals) / len(vals) if vals else None


def _rate(values: Iterable[bool | None]) -> float | None:
    vals = [bool(v) for v in values if v is not None]
    return sum(vals) / len(vals) if vals else None


@dataclass
class EvalReport:
    """Results of one policy over a task set, with summaries, a text table and a plot."""

    policy: str
    results: list[EpisodeResult]

    @property
    def component_names(self) -> list[str]:
        names: dict[str, None] = {}
        for r in self.results:
            for k in r.components:
                names.setdefault(k, None)
        return list(names)

    def _group(self, results: Sequence[EpisodeResult]) -> dict[str, Any]:
        return {
            "tasks": len(results),
            "total": _mean(r.total for r in results),
            "success": _rate(r.success for r in results),
            "full_coverage": _rate(r.full_coverage for r in results),
            "state_match": _rate(r.state_match for r in results),
            "calls_per_task": _mean(r.n_calls for r in results),
            "gold_calls_per_task": _mean(r.n_gold for r in results),
            "errors": sum(r.error is not None for r in results),
            "components": {
                k: _mean(r.components.get(k) for r in results) for k in self.component_names
            },
        }

    def summary(self) -> dict[str, Any]:
        """Overall, per-server and per-tool figures (JSON-ready)."""
        by_server: dict[str, list[EpisodeResult]] = defaultdict(list)
        for r in self.results:
            by_server[r.server].append(r)
        tools: dict[str, dict[str, int]] = defaultdict(
            lambda: {"calls": 0, "ok": 0, "gold": 0, "matched": 0}
        )
        for r in self.results:
            for c in r.calls:
                key = f"{c['server']}.{c['tool']}" if c["server"] else f"?.{c['tool']}"
                tools[key]["calls"] += 1
                tools[key]["ok"] += int(bool(c["ok"]))
            for g in r.gold_tools:
                key = f"{g['server']}.{g['tool']}"
                tools[key]["gold"] += 1
                tools[key]["matched"] += int(bool(g["matched"]))
        return {
            "policy": self.policy,
            "overall": self._group(self.results),
            "servers": {s: self._group(rs) for s, rs in sorted(by_server.items())},
            "tools": {
                k: {
                    **v,
                    "ok_rate": v["ok"] / v["calls"] if v["calls"] else None,
                    "matched_rate": v["matched"] / v["gold"] if v["gold"] else None,
                }
                for k, v in sorted(tools.items())
            },
        }

    def table(self) -> str:
        """The summary as aligned text tables: servers, components, tools."""
        s = self.summary()
        comps = self.component_names
        lines = [f"policy: {self.policy}    tasks: {s['overall']['tasks']}", ""]
        head = [
            "server",
            "tasks",
            "total",
            "success",
            "coverage=1",
            "state",
            "calls/task",
            "errors",
        ]
        rows = []
        for name, g in [*s["servers"].items(), ("ALL", s["overall"])]:
            rows.append(
                [
                    name,
                    str(g["tasks"]),
                    _fmt(g["total"]),
                    _pct(g["success"]),
                    _pct(g["full_coverage"]),
                    _pct(g["state_match"]),
                    _fmt(g["calls_per_task"], 2),
                    str(g["errors"]),
                ]
            )
        lines += [*_grid(head, rows), ""]
        head = ["server", *comps]
        rows = [
            [name, *(_fmt(g["components"].get(c)) for c in comps)]
            for name, g in [*s["servers"].items(), ("ALL", s["overall"])]
        ]
        lines += [*_grid(head, rows), ""]
        head = ["tool", "calls", "ok", "gold steps", "matched"]
        rows = [
            [k, str(v["calls"]), _pct(v["ok_rate"]), str(v["gold"]), _pct(v["matched_rate"])]
            for k, v in s["tools"].items()
        ]
        lines += _grid(head, rows)
        return "\n".join(lines)

    def plot(self, path: str | Path) -> Path:
        """A PNG: mean components and total per server, and success rates per server.

        Needs matplotlib (``pip install prove-gym[plot]``).
        """
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        s = self.summary()
        groups = [*s["servers"].items(), ("ALL", s["overall"])]
        names = [n for n, _ in groups]
        comps = [*self.component_names, "total"]
        fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(13, 4.8))
        width = 0.8 / max(len(groups), 1)
        for i, (name, g) in enumerate(groups):
            vals = [(g["components"].get(c) if c != "total" else g["total"]) or 0.0 for c in comps]
            xs = [j + i * width for j in range(len(comps))]
            ax1.bar(xs, vals, width=width, label=name)
        ax1.set_xticks([j + width * (len(groups) - 1) / 2 for j in range(len(comps))])
        ax1.set_xticklabels(comps, rotation=30, ha="right")
        ax1.axhline(0, color="black", linewidth=0.6)
        ax1.set_title("mean reward components")
        ax1.legend(fontsize=8)
        metrics = ["success", "full_coverage", "state_match"]
        width2 = 0.8 / len(metrics)
        for k, m in enumerate(metrics):
            vals = [(g[m] or 0.0) * 100 for _, g in groups]
            ax2.bar([j + k * width2 for j in range(len(groups))], vals, width=width2, label=m)
        ax2.set_xticks([j + width2 for j in range(len(groups))])
        ax2.set_xticklabels(names, rotation=30, ha="right")
        ax2.set_ylim(0, 100)
        ax2.set_ylabel("% of tasks")
        ax2.set_title("success rates")
        ax2.legend(fontsize=8)
        fig.suptitle(f"prove eval: {self.policy} ({len(self.results)} tasks)")
        fig.tight_layout()
        out = Path(path)
        out.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(out, dpi=110)
        plt.close(fig)
        return out

    def write(self, directory: str | Path) -> dict[str, Path]:
        """Write ``results.jsonl``, ``summary.json`` and ``report.txt`` under ``directory``."""
        out = Path(directory)
        out.mkdir(parents=True, exist_ok=True)
        paths = {
            "results": out / "results.jsonl",
            "summary": out / "summary.json",
            "report": out / "report.txt",
        }
        with open(paths["results"], "w", encoding="utf-8") as fh:
            for r in self.results:
                fh.write(json.dumps(asdict(r), ensure_ascii=False) + "\n")
        paths["summary"].write_text(json.dumps(self.summary(), indent=2) + "\n", encoding="utf-8")
        paths["report"].write_text(self.table() + "\n", encoding="utf-8")
        return paths


def _fmt(value: float | None, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


def _grid(head: list[str], rows: list[list[str]]) -> list[str]:
    widths = [max(len(str(x)) for x in col) for col in zip(head, *rows, strict=False)]
    fmt = [f"{{:<{w}}}" if i == 0 else f"{{:>{w}}}" for i, w in enumerate(widths)]
    line = lambda cells: "  ".join(f.format(c) for f, c in zip(fmt, cells, strict=False))  # noqa: E731
    return [line(head), "  ".join("-" * w for w in widths), *(line(r) for r in rows)]


def evaluate(
    policy: Policy,
    tasks: Iterable[Task],
    *,
    concurrency: int = 4,
    progress: bool = True,
    max_assistant_turns: int = 10,
    max_user_turns: int = 5,
    reward_config: RewardConfig | None = None,
    registry: Registry | None = None,
) -> EvalReport:
    """Play every task with ``policy``, at most ``concurrency`` episodes at a time.

    Results keep the order of ``tasks`` whatever order episodes finish in.
    """
    task_list = list(tasks)
    registry = registry or get_registry()
    results: list[EpisodeResult | None] = [None] * len(task_list)
    kwargs = {
        "max_assistant_turns": max_assistant_turns,
        "max_user_turns": max_user_turns,
        "reward_config": reward_config,
        "registry": registry,
    }
    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=len(task_list), desc=f"eval {policy.name}", unit="task")
    try:
        with ThreadPoolExecutor(max_workers=max(1, concurrency)) as pool:
            futures = {
                pool.submit(run_episode, policy, t, **kwargs): i for i, t in enumerate(task_list)
            }
            for fut in as_completed(futures):
                results[futures[fut]] = fut.result()
                if bar is not None:
                    done = [r for r in results if r is not None]
                    bar.set_postfix(reward=f"{_mean(r.total for r in done):.3f}")
                    bar.update(1)
    finally:
        if bar is not None:
            bar.close()
    return EvalReport(policy=policy.name, results=[r for r in results if r is not None])
