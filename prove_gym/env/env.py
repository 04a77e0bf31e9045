"""The multi-turn Gymnasium environment shared by every server: ``prove/<server>-v0``."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

import gymnasium as gym

from prove_gym.env.parsers import ParsedAction, ParsedCall, call_from_object
from prove_gym.env.spaces import AnyText
from prove_gym.registry import Registry, get_registry
from prove_gym.reward import RewardConfig, score
from prove_gym.server.errors import ErrorKind
from prove_gym.server.result import ToolResult
from prove_gym.task import Task, Turn, load_tasks
from prove_gym.workspace import CallRecord, Workspace

DEFAULT_INSTRUCTIONS = (
    "You are a helpful assistant that completes the user's requests by calling tools. "
    "Use only the tools provided, with identifiers taken from the user or from earlier tool "
    "results. If a required value is missing, ask the user for it instead of guessing. If no "
    "tool can do what is asked, say so. When the request is done, answer without a tool call."
)

Action = str | Sequence[Mapping[str, Any]]


def episode_instructions(
    task: Task, registry: Registry | None = None, instructions: str | None = None
) -> str:
    """The system-prompt text of an episode, without the tools.

    The env's formatter appends the offered tools to it; clients that pass
    tools natively (an OpenAI-compatible endpoint, a chat template's
    ``tools=``) use it as the system message as is.

    Args:
        task: The task being played.
        registry: Where its servers are looked up (the process-wide one by default).
        instructions: Replaces :data:`DEFAULT_INSTRUCTIONS`.
    """
    registry = registry or get_registry()
    parts = [instructions or DEFAULT_INSTRUCTIONS]
    for name in task.servers:
        extra = registry.get_server(name).instructions
        if extra:
            parts.append(extra)
    if task.system:
        parts.append(task.system)
    return "\n\n".join(parts)


class ProveEnv(gym.Env[str, Action]):
    """A multi-turn tool-use episode against one live, isolated server state.

    ## Description

    The agent is an assistant answering a user. Each user turn asks for
    something the server's tools can do (or, on purpose, something they
    cannot, or something missing a required value). The agent answers with
    text that may hold tool calls; the env executes them on a private copy of
    the server's state and shows the results. The episode is scored at the end
    by the programmatic PROVE reward (no judge model).

    ## Action Space

    ``AnyText``: the assistant's raw message. Tool calls are read by the parser
    chosen with ``parser=`` (default ``"hermes"``:
    ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>``, several per
    message allowed). A structured list of ``{"name", "arguments"}`` dicts is
    accepted too. A call that cannot be parsed is executed as a ``parse_error``
    result the model sees, never an exception.

    ## Observation Space

    ``AnyText``: what the model reads next. After ``reset``: the system prompt
    (instructions and offered tools, rendered by the formatter) and the first
    user turn. After a message with calls: the tool results. After a message
    without calls: the next user turn, or ``""`` at the end. ``info`` carries
    the same content as structured OpenAI-style ``messages``, the offered
    ``tools``, per-call ``call_results``, and after ``reset`` the
    ``instructions`` without the tools (for clients that pass tools natively).

    ## Rewards

    Sequence level: 0.0 on every step but the last; the last pays
    ``info["reward_breakdown"]["total"]`` (see :mod:`prove_gym.reward` and
    ``docs/reward.md``). The breakdown holds every component (validity,
    coverage, efficiency, tool name, arguments, abstention, clarification,
    state), the weights, the call budget, ``n_calls`` and ``matched`` (gold
    step id -> index of the call that matched it). With the default
    :class:`~prove_gym.reward.RewardConfig` the maximum is 1.3 (1.0 for a task
    without gold calls); ``RewardConfig(normalise=True)`` pays in [0, 1].

    ## Starting State

    The task's server state, sampled from ``task.seed`` (cached as a template,
    cloned per episode). ``reset(options={"task": task})`` plays that task
    (a :class:`~prove_gym.task.Task`, its dict or JSON); otherwise a task is
    drawn from the env's task pool with ``self.np_random``. ``options`` may
    also hold ``"task_index"`` (pick from the pool) and ``"state_seed"``
    (override the task's seed).

    ## Episode End

    Terminated when the assistant answers the last user turn without a tool
    call. Truncated when the assistant-turn cap (``max_assistant_turns``,
    default 10) or user-turn cap (``max_user_turns``, default 5) is reached.
    Both pay the reward.

    ## Arguments

    - ``server``: the server name (set by the registered id).
    - ``tasks``: a list of tasks or a ``.jsonl`` path; default: the plugin's hand-written tasks.
    - ``size``: state size for tasks that do not set one.
    - ``parser`` / ``formatter``: names registered by plugins (default ``"hermes"``).
    - ``reward_config``: a :class:`~prove_gym.reward.RewardConfig`.
    - ``instructions``: system-prompt text placed before the tools.

    ## Version History

    - v0: initial release.
    """

    metadata: ClassVar[dict[str, Any]] = {"render_modes": ["ansi"], "render_fps": 1}

    def __init__(
        self,
        server: str,
        *,
        tasks: Sequence[Task | Mapping[str, Any]] | str | Path | None = None,
        size: int | None = None,
        max_assistant_turns: int = 10,
        max_user_turns: int = 5,
        parser: str = "hermes",
        formatter: str = "hermes",
        reward_config: RewardConfig | None = None,
        instructions: str | None = None,
        render_mode: str | None = None,
        registry: Registry | None = None,
    ) -> None:
        self.registry = registry or get_registry()
        self.server = self.registry.get_server(server)
        if isinstance(tasks, str | Path):
            pool = load_tasks(tasks)
        elif tasks is not None:
            pool = [Task.coerce(t) for t in tasks]  # type: ignore[arg-type]
        else:
            pool = list(self.registry.tasks(server))
        self.tasks: list[Task] = pool
        self.size = size
        if max_assistant_turns < 1 or max_user_turns < 1:
            raise ValueError("turn caps must be at least 1")
        self.max_assistant_turns = max_assistant_turns
        self.max_user_turns = max_user_turns
        try:
            self.parser = self.registry.parsers[parser]
            self.formatter = self.registry.formatters[formatter]
        except KeyError as exc:
            raise ValueError(
                f"unknown parser/formatter {exc.args[0]!r}; parsers: {sorted(self.registry.parsers)}, "
                f"formatters: {sorted(self.registry.formatters)}"
            ) from None
        self.reward_config = reward_config or RewardConfig()
        self.instructions = instructions
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode must be one of {self.metadata['render_modes']}")
        self.render_mode = render_mode
        self.observation_space = AnyText(max_length=1 << 22)
        self.action_space = AnyText(max_length=1 << 20)

        self.task: Task | None = None
        self.workspace: Workspace | None = None
        self.messages: list[dict[str, Any]] = []
        self.trajectory: list[CallRecord] = []
        self.user_turn = 0
        self.assistant_turns = 0
        self._done = True

    # ------------------------------------------------------------------ reset
    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[str, dict[str, Any]]:
        super().reset(seed=seed)
        options = dict(options or {})
        task = self._choose_task(options)
        if self.workspace is not None:
            self.workspace.close()
        self.task = task
        self.workspace = Workspace(task, self.registry)
        self.trajectory = []
        self.user_turn = 0
        self.assistant_turns = 0
        self._done = False

        tools = self.workspace.openai_tools()
        instructions = self._instructions(task)
        system = self.formatter.system_prompt(tools, instructions)
        first = task.turns[0].user
        self.messages = [
            {"role": "system", "content": system},
            {"role": "user", "content": first},
        ]
        info = {
            "task_id": task.id,
            "turn": 0,
            "tools": tools,
            "instructions": instructions,
            "messages": [dict(m) for m in self.messages],
            "call_results": [],
            "reward_breakdown": None,
        }
        return f"{system}\n\n{first}", info

    def _instructions(self, task: Task) -> str:
        return episode_instructions(task, self.registry, self.instructions)

    def _choose_task(self, options: Mapping[str, Any]) -> Task:
        if options.get("task") is not None:
            task = Task.coerce(options["task"])
        elif self.tasks:
            if "task_index" in options:
                task = self.tasks[int(options["task_index"]) % len(self.tasks)]
            else:
                task = self.tasks[int(self.np_random.integers(len(self.tasks)))]
        else:
            task = self._open_task(int(self.np_random.integers(2**31)))
        updates: dict[str, Any] = {}
        if "state_seed" in options:
            updates["seed"] = int(options["state_seed"])
        if task.size is None:
            updates["size"] = self.size
        if any(getattr(task, k) != v for k, v in updates.items()) and task.final_state_hash:
            updates["final_state_hash"] = None  # it was computed for the task's own initial state
        if task.server != self.server.name and self.server.name not in task.servers:
            raise ValueError(
                f"task {task.id!r} is for servers {task.servers}, not {self.server.name!r}; "
                f"use gymnasium.make('prove/{task.server}-v0')"
            )
        return task.model_copy(update=updates) if updates else task

    def _open_task(self, state_seed: int) -> Task:
        """An exploratory episode for servers without tasks: no gold steps, nothing to score."""
        return Task(
            id=f"{self.server.name}-open-{state_seed}",
            servers=[self.server.name],
            seed=state_seed,
            size=self.size,
            turns=[Turn(user=f"I'd like some help. {self.server.description}".strip())],
            meta={"open": True},
        )

    # ------------------------------------------------------------------- step
    def step(self, action: Action) -> tuple[str, float, bool, bool, dict[str, Any]]:
        if self._done or self.task is None or self.workspace is None:
            raise RuntimeError("the episode is over (or never started): call reset() first")
        parsed = self._parse(action)
        self.assistant_turns += 1
        turn = self.user_turn
        records = [self._execute(call, turn) for call in parsed.calls]
        self.trajectory.extend(records)

        assistant: dict[str, Any] = {"role": "assistant", "content": parsed.content}
        if parsed.calls:
            assistant["tool_calls"] = [
                {
                    "id": f"call_{len(self.trajectory) - len(records) + i}",
                    "type": "function",
                    "function": {
                        "name": c.name,
                        "arguments": c.raw if c.error else json.dumps(c.arguments),
                    },
                }
                for i, c in enumerate(parsed.calls)
            ]
        new_messages: list[dict[str, Any]] = [assistant]

        terminated = truncated = False
        if records:
            for tc, rec in zip(assistant["tool_calls"], records, strict=True):
                new_messages.append(
                    {
                        "role": "tool",
                        "tool_call_id": tc["id"],
                        "name": rec.name,
                        "content": rec.result.to_text(),
                    }
                )
            observation = self.formatter.tool_results([r.result for r in records])
        else:
            self.user_turn += 1
            if self.user_turn < len(self.task.turns) and self.user_turn < self.max_user_turns:
                observation = self.task.turns[self.user_turn].user
                new_messages.append({"role": "user", "content": observation})
            else:
                observation = ""
                terminated = self.user_turn >= len(self.task.turns)
                truncated = not terminated
        if not (terminated or truncated) and self.assistant_turns >= self.max_assistant_turns:
            truncated = True
        self.messages.extend(new_messages)

        reward = 0.0
        breakdown = None
        if terminated or truncated:
            self._done = True
            result = score(
                self.task,
                self.trajectory,
                config=self.reward_config,
                final_state_hash=self.workspace.state_hash(),
                registry=self.registry,
            )
            breakdown = result.to_dict()
            reward = float(result.total)
        info = {
            "task_id": self.task.id,
            "turn": self.user_turn,
            "messages": new_messages,
            "call_results": [r.to_dict() for r in records],
            "reward_breakdown": breakdown,
        }
        return observation, reward, terminated, truncated, info

    def _parse(self, action: Action) -> ParsedAction:
        if isinstance(action, str):
            return self.parser.parse(action)
        if isinstance(action, Mapping):
            action = [action]
        if isinstance(action, Sequence):
            return ParsedAction(
                "", tuple(call_from_object(a, json.dumps(a, default=str)) for a in action)
            )
        return ParsedAction(str(action), ())

    def _execute(self, call: ParsedCall, turn: int) -> CallRecord:
        assert self.workspace is not None
        if call.error is not None:
            failure = ToolResult.failure(ErrorKind.PARSE_ERROR, call.error)
            return CallRecord(call.name, call.arguments, failure, turn, None)
        return self.workspace.call(call.name, call.arguments, turn=turn)

    # ------------------------------------------------------------ extras
    def state_hash(self) -> str:
        """Canonical hash of the episode's current state (all servers)."""
        if self.workspace is None:
            raise RuntimeError("call reset() first")
        return self.workspace.state_hash()

    def render(self) -> str | None:
        if self.render_mode != "ansi":
            return None
        lines = []
        for m in self.messages:
            if m["role"] == "system":
                continue
            text = m.get("content") or ""
            for tc in m.get("tool_calls", []):
                text += f"\n  -> {tc['function']['name']}({tc['function']['arguments']})"
            lines.append(f"[{m['role']}] {text.strip()}")
        return "\n".join(lines)

    def close(self) -> None:
        if self.workspace is not None:
            self.workspace.close()
            self.workspace = None
        self._done = True
