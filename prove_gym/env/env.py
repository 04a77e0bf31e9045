"""The multi-turn Gymnasium environment shared by every server: ``prove/<server>-v0``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import gymnasium as gym

from prove_gym.env.spaces import AnyText
from prove_gym.episode import Action, Episode, EpisodeCaps
from prove_gym.formats import ToolCallFormat
from prove_gym.registry import Registry, get_registry
from prove_gym.reward import RewardConfig
from prove_gym.task import Task, Turn, load_tasks
from prove_gym.workspace import CallRecord

RESET_OPTIONS = ("task", "task_id", "task_index", "state_seed")
"""The keys ``reset(options=...)`` takes; any other key is an error (a misspelt key
would otherwise play a task the caller did not ask for)."""


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

    ``AnyText``: the assistant's raw message. Tool calls are read by the
    tool-call format chosen with ``format=`` (default ``"hermes"``:
    ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>``, several per
    message allowed; see :mod:`prove_gym.formats`). A structured list of
    ``{"name", "arguments"}`` dicts, or an OpenAI-style assistant message with
    ``tool_calls``, is accepted too. A call that cannot be parsed is executed as
    a ``parse_error`` result the model sees, never an exception.

    ## Observation Space

    ``AnyText``: what the model reads next, rendered by the format. After
    ``reset``: the system prompt (instructions and offered tools) and the first
    user turn. After a message with calls: the tool results. After a message
    without calls: the next user turn, or what closes the conversation at the
    end (``""`` for ``hermes``). ``info`` carries
    the same content as structured OpenAI-style ``messages``, the offered
    ``tools``, per-call ``call_results``, and after ``reset`` the
    ``instructions`` without the tools (for clients that pass tools natively).

    ## Rewards

    Sequence level: 0.0 on every step but the last; the last pays
    ``info["reward_breakdown"].total``, a :class:`~prove_gym.reward.RewardBreakdown`
    (``to_dict()`` for JSON; see :mod:`prove_gym.reward` and ``docs/reward.md``).
    The breakdown holds every component of the config (validity, coverage,
    efficiency, tool name, arguments, abstention, clarification, state, and
    any custom one), the weights, the call budget, ``n_calls`` and ``matched``
    (gold step id -> index of the call that matched it). With the default
    :class:`~prove_gym.reward.RewardConfig` the maximum is 1.3 (1.0 for a task
    without gold calls); ``RewardConfig(normalise=True)`` pays in [0, 1].

    ## Starting State

    The task's server state, sampled from ``task.seed`` (cached as a template,
    cloned per episode). ``reset(options={"task": task})`` plays that task
    (a :class:`~prove_gym.task.Task`, its dict or JSON), ``{"task_id": id}`` the
    pool's task of that id and ``{"task_index": i}`` the pool's ``i``-th;
    otherwise a task is drawn from the env's task pool with ``self.np_random``
    (so ``seed`` picks *which* task; the task's own ``seed`` is its state's).
    ``"state_seed"`` overrides the task's state seed. Any other key is a
    ``ValueError``, and a reset that raises leaves the env as it was.

    ## Episode End

    Terminated when the assistant answers the last user turn without a tool
    call. Truncated when the assistant-turn cap (``max_assistant_turns``,
    default 10) or user-turn cap (``max_user_turns``, default 5) is reached, or
    when a message's calls run past ``max_calls_per_episode`` (default 128).
    At most ``max_calls_per_message`` calls of one message run (default 32): the
    first past a cap is answered ``precondition_failed``, the rest are dropped,
    and ``info["caps_hit"]`` / ``info["skipped_calls"]`` report it. Both pay the reward.

    ## Arguments

    - ``server``: the server name (set by the registered id).
    - ``tasks``: a list of tasks or a ``.jsonl`` path; default: the plugin's hand-written tasks.
    - ``size``: state size for tasks that do not set one.
    - ``format``: a tool-call format name registered by a plugin (``"hermes"``,
      ``"json"``, ``"chat_template"``, ...) or a :class:`~prove_gym.formats.ToolCallFormat`.
    - ``reward``: a :class:`~prove_gym.reward.RewardConfig` or a preset name
      (``"default"``, ``"paper"``: the paper's reward exactly); the resolved config is
      ``env.reward_config``.
    - ``instructions``: system-prompt text placed before the tools.
    - ``turn_rewards``: also pay each user turn a reward when it closes, the change of a
      potential scoring the conversation so far against the gold so far
      (``info["turn_reward"]``, and ``info["turn_credit"]``, a
      :class:`~prove_gym.reward.turns.TurnCredit`, for why; ``None`` on steps that close no
      turn); an episode's turn rewards sum to its reward. The step's reward is the
      episode's, unchanged. Off by default.
    - ``env_version``: set by the registered id (``prove/<server>-v<N>``): a server's
      later versions (``Server(env_versions=...)``) may offer a different tool set, pay
      a different default reward, or change what tools do (then with tasks of their own,
      the default pool); ``-v0`` is the server as first released. Tasks are played under
      this version; a task recorded for another one (``Task.env_versions``) is refused.
      A version with an acting principal plays the task's ``principals`` (who the user is).

    ## Version History

    - v0: initial release.
    - v1 and later: declared per server (``prove-gym list`` shows every id; each
      :class:`~prove_gym.server.base.EnvVersion` says what changed).
    """

    metadata: dict[str, Any] = {"render_modes": ["ansi"], "render_fps": 1}  # noqa: RUF012

    def __init__(
        self,
        server: str,
        *,
        tasks: Sequence[Task | Mapping[str, Any]] | str | Path | None = None,
        size: int | None = None,
        max_assistant_turns: int = 10,
        max_user_turns: int = 5,
        max_calls_per_message: int = 32,
        max_calls_per_episode: int = 128,
        format: ToolCallFormat | str = "hermes",
        reward: RewardConfig | str | None = None,
        instructions: str | None = None,
        render_mode: str | None = None,
        registry: Registry | None = None,
        env_version: int = 0,
        turn_rewards: bool = False,
    ) -> None:
        self.registry = registry or get_registry()
        self.server = self.registry.get_server(server)
        version = self.server.env_versions.get(env_version)
        if env_version != 0 and version is None:
            raise ValueError(
                f"{server} has no env version {env_version}; its ids: {self.server.env_ids}"
            )
        self.env_version = env_version
        self._version_tools = version.tools if version is not None else None
        if isinstance(tasks, str | Path):
            pool = load_tasks(tasks)
        elif tasks is not None:
            pool = [Task.coerce(t) for t in tasks]  # type: ignore[arg-type]
        else:
            pool = list(self.registry.tasks(server, env_version))
        self.tasks: list[Task] = pool
        self.size = size
        self.caps = EpisodeCaps(
            max_assistant_turns, max_user_turns, max_calls_per_message, max_calls_per_episode
        )
        try:
            self.format = self.registry.get_format(format) if isinstance(format, str) else format
        except KeyError as exc:
            raise ValueError(exc.args[0]) from None
        if reward is None and version is not None:
            reward = version.reward
        try:
            self.reward_config = RewardConfig.resolve(reward)
        except ValueError as exc:
            raise ValueError(exc.args[0]) from None
        self.instructions = instructions
        self.turn_rewards = turn_rewards
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode must be one of {self.metadata['render_modes']}")
        self.render_mode = render_mode
        self.observation_space = AnyText(max_length=1 << 22)
        self.action_space = AnyText(max_length=1 << 20)
        self.episode: Episode | None = None

    # ------------------------------------------------------------- episode
    @property
    def task(self) -> Task | None:
        """The task being played (``None`` before the first reset)."""
        return self.episode.task if self.episode is not None else None

    @property
    def messages(self) -> list[dict[str, Any]]:
        """The conversation so far (OpenAI style), system message first."""
        return self.episode.messages if self.episode is not None else []

    @property
    def trajectory(self) -> list[CallRecord]:
        """Every call of the episode with its live result."""
        return self.episode.trajectory if self.episode is not None else []

    @property
    def user_turn(self) -> int:
        """Index of the user turn being answered."""
        return self.episode.user_turn if self.episode is not None else 0

    # ------------------------------------------------------------------ reset
    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[str, dict[str, Any]]:
        super().reset(seed=seed)
        unknown = sorted(set(options or ()) - set(RESET_OPTIONS), key=str)
        if unknown:
            raise ValueError(
                f"unknown reset option {', '.join(map(repr, unknown))}; "
                f"the options are {', '.join(RESET_OPTIONS)}"
            )
        # a bad task raises here, before the live episode is touched: the env stays usable
        task = self._choose_task(dict(options or {}))
        episode = Episode(
            task,
            format=self.format,
            caps=self.caps,
            reward=self.reward_config,
            instructions=self.instructions,
            registry=self.registry,
            turn_rewards=self.turn_rewards,
        )
        if self.episode is not None:
            self.episode.close()
        self.episode = episode
        info = {
            "task_id": task.id,
            "turn": 0,
            "tools": episode.tools,
            "instructions": episode.instructions,
            "messages": [dict(m) for m in episode.messages],
            "call_results": [],
            "reward_breakdown": None,
        }
        return episode.observation, info

    def _choose_task(self, options: Mapping[str, Any]) -> Task:
        if options.get("task") is not None:
            task = Task.coerce(options["task"])
        elif options.get("task_id") is not None:
            found = [t for t in self.tasks if t.id == options["task_id"]]
            if not found:
                raise ValueError(
                    f"no task {options['task_id']!r} in this env's pool of {len(self.tasks)} "
                    f"(its first ids: {', '.join(t.id for t in self.tasks[:5]) or 'none'})"
                )
            task = found[0]
        elif self.tasks:
            if "task_index" in options:
                task = self.tasks[int(options["task_index"]) % len(self.tasks)]
            else:
                task = self.tasks[int(self.np_random.integers(len(self.tasks)))]
        else:
            task = self._open_task(int(self.np_random.integers(2**31)))
        updates: dict[str, Any] = {}
        if "state_seed" in options and int(options["state_seed"]) != task.seed:
            updates["seed"] = int(options["state_seed"])
        if task.size is None and self.size is not None:
            updates["size"] = self.size
        if self._version_tools is not None and task.tools is None:
            keep = set(self._version_tools)
            updates["tools"] = [
                t.qualified_name
                for name in task.servers
                for t in self.registry.get_server(name).visible_tools(
                    self.env_version if name == self.server.name else task.env_version(name)
                )
                if name != self.server.name or t.name in keep
            ]
        played = task.env_versions.get(self.server.name)
        if played is None and self.env_version:
            updates["env_versions"] = {**task.env_versions, self.server.name: self.env_version}
        elif played is not None and played != self.env_version:
            raise ValueError(
                f"task {task.id!r} is recorded for prove/{self.server.name}-v{played}, not "
                f"this env's prove/{self.server.name}-v{self.env_version}"
            )
        if {"seed", "size"} & set(updates) and task.final_state_hash:
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
        if self.episode is None or self.episode.done:
            raise RuntimeError("the episode is over (or never started): call reset() first")
        out = self.episode.step(action)
        info = {
            "task_id": self.episode.task.id,
            "turn": self.episode.user_turn,
            "messages": list(out.messages),
            "call_results": [r.to_dict() for r in out.records],
            "reward_breakdown": out.breakdown,
            "caps_hit": list(out.caps_hit),
            "skipped_calls": out.skipped_calls,
        }
        if self.turn_rewards:
            info["turn_reward"] = out.turn_reward
            info["turn_credit"] = out.turn_credit
        return out.observation, out.reward, out.terminated, out.truncated, info

    # ------------------------------------------------------------ extras
    def state_hash(self) -> str:
        """Canonical hash of the episode's current state (all servers)."""
        if self.episode is None:
            raise RuntimeError("call reset() first")
        return self.episode.state_hash()

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
        if self.episode is not None:
            self.episode.close()
