"""prove_gym tasks as a verifiers environment (verifiers >= 0.4, ``verifiers.v1``).

A prime-rl or Environments Hub user loads any installed server by name::

    from prove_gym.adapters.verifiers import load_environment

    env = load_environment(server="calendar")                    # the server's shipped tasks
    env = load_environment(server="calendar", tasks="runs/synth")  # a `prove-gym synth` output

or names this module as the taskset id (``--env.taskset.id prove_gym.adapters.verifiers
--env.taskset.server calendar``). The pieces follow verifiers' own layout:

- :class:`ProveTaskset` yields one :class:`ProveTask` per prove_gym task: the first user
  turn is its prompt, the episode's instructions its system prompt.
- :class:`ProveToolset` is the task's tool server (one per rollout, launched by verifiers
  as ``python -m prove_gym.adapters.verifiers``). It owns the rollout's
  :class:`~prove_gym.episode.Episode`: every tool call runs through ``Episode.call`` on
  the episode's own isolated state, exactly as in the Gymnasium env.
- :class:`ProveEnv` plays the task's later user turns: when the model answers without a
  call, the next user turn is sent, as ``Episode.step`` does; the answers reach the
  episode through the rollout state before its next call.
- :meth:`ProveTask.prove` is the reward: the PROVE total, scored by the same
  :func:`prove_gym.reward.score` that ends an ``Episode``, on the trajectory and final
  state hash the tool server reports. Each component is logged as a metric
  (``prove_<component>``).

The tools run in the tool server's process and the reward in the host's, so they meet
through :class:`ProveState` (verifiers' per-rollout state channel): the host writes the
model's answers to user turns, the tool server writes the call records and the state
hash after each call.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import verifiers.v1 as vf
from pydantic import Field

from prove_gym.episode import Episode, EpisodeCaps, episode_instructions
from prove_gym.registry import get_registry
from prove_gym.reward import RewardBreakdown, score
from prove_gym.task import Task, iter_tasks
from prove_gym.workspace import CallRecord, Workspace

__all__ = [
    "ProveEnv",
    "ProveState",
    "ProveTask",
    "ProveTaskConfig",
    "ProveTaskData",
    "ProveTaskset",
    "ProveTasksetConfig",
    "ProveToolset",
    "ProveToolsetConfig",
    "load_environment",
]

TASKSET_ID = "prove_gym_verifiers"
"""The taskset id of this module. verifiers' loaders import a taskset by id and accept
only a top-level module name, so importing this module registers it under that name."""


class ProveState(vf.State):
    """What the host and the tool server of one rollout tell each other."""

    answers: list[str] = Field(default_factory=list)
    """Host → tools: the model's answers to the user turns so far (one per turn)."""
    calls: list[dict[str, Any]] = Field(default_factory=list)
    """Tools → host: every call with its live result and user turn (``CallRecord.to_dict``)."""
    state_hash: str | None = None
    """Tools → host: the canonical hash of the episode's state after the latest call."""


class ProveToolsetConfig(vf.ToolsetConfig):
    """Where the tool server runs (verifiers' placement knobs) and the episode's call caps."""

    max_calls_per_message: int = 32
    max_calls_per_episode: int = 128


class ProveTaskConfig(vf.TaskConfig):
    tools: ProveToolsetConfig = ProveToolsetConfig()
    reward: str = "default"
    """The reward preset (``default``, ``paper``: see ``prove_gym.reward.RewardConfig``)."""


class ProveTaskData(vf.TaskData):
    task: dict[str, Any]
    """The prove_gym task, as its JSON object."""
    max_user_turns: int = EpisodeCaps.max_user_turns
    """User turns played at most (the episode's cap, read by the host and the tool server)."""


class ProveTask(vf.Task[ProveTaskData, ProveState, ProveTaskConfig]):
    """One prove_gym task: its tools, its user turns and its PROVE reward."""

    @classmethod
    def toolsets(cls, config: ProveTaskConfig) -> list[vf.Toolset]:
        return [ProveToolset(config.tools)]

    @property
    def prove_task(self) -> Task:
        return Task.model_validate(self.data.task)

    def breakdown(self, trace: vf.Trace) -> RewardBreakdown:
        """The PROVE reward of the rollout: what ``Episode`` pays for the same calls."""
        state: ProveState = trace.state
        task = self.prove_task
        final_hash = state.state_hash or Workspace(task, get_registry()).state_hash()
        return score(
            task,
            [CallRecord.from_dict(c) for c in state.calls],
            config=self.config.reward,
            final_state_hash=final_hash,
        )

    @vf.reward(weight=1.0)
    async def prove(self, trace: vf.Trace) -> float:
        """The PROVE total (the weighted sum of the components)."""
        return self.breakdown(trace).total

    @vf.metric
    async def prove_components(self, trace: vf.Trace) -> dict[str, float]:
        """Each computed reward component as ``prove_<name>`` (uncomputed ones left out)."""
        components = self.breakdown(trace).components
        return {f"prove_{k}": float(v) for k, v in components.items() if v is not None}


class ProveTasksetConfig(vf.TasksetConfig):
    server: str = "calendar"
    """The installed server whose tasks are played (``prove-gym list``)."""
    tasks: Path | None = None
    """A task file (``.jsonl``) or a ``prove-gym synth`` output folder; default: the
    server's shipped tasks."""
    split: str = "train"
    """Which split of a synth output folder (``train`` or ``test``)."""
    max_user_turns: int = EpisodeCaps.max_user_turns
    """User turns played at most, as ``EpisodeCaps.max_user_turns``."""
    task: ProveTaskConfig = ProveTaskConfig()


class ProveTaskset(vf.Taskset[ProveTask, ProveTasksetConfig]):
    """The tasks of one server: shipped with it, or read from a file or synth folder."""

    def load(self) -> Iterator[ProveTask]:
        config = self.config
        registry = get_registry()
        for task in self._tasks():
            yield ProveTask(
                ProveTaskData(
                    id=task.id,
                    name=task.id,
                    prompt=task.turns[0].user,
                    # The episode's own system text; the tools come natively, over MCP.
                    system_prompt=episode_instructions(task, registry),
                    max_user_turns=config.max_user_turns,
                    task=task.model_dump(mode="json"),
                ),
                config.task,
            )

    def _tasks(self) -> Iterator[Task]:
        source = self.config.tasks
        if source is None:
            yield from get_registry().tasks(self.config.server)
            return
        path = Path(source).expanduser()
        if path.is_dir():
            path = path / f"{self.config.split}.jsonl"
        yield from iter_tasks(path)


class ProveToolset(vf.Toolset[ProveToolsetConfig, ProveState]):
    """The task's servers as MCP tools, each call run by the rollout's own ``Episode``."""

    TOOL_PREFIX = None  # the tool names the episode offers, unprefixed

    def __init__(self, config: ProveToolsetConfig) -> None:
        super().__init__(config)
        self.episode: Episode | None = None

    async def setup_task(self, task: ProveTaskData) -> None:
        caps = EpisodeCaps(
            max_user_turns=task.max_user_turns,
            max_calls_per_message=self.config.max_calls_per_message,
            max_calls_per_episode=self.config.max_calls_per_episode,
        )
        self.episode = Episode(Task.model_validate(task.task), caps=caps)

    def register(self, mcp: Any) -> None:
        # The offer depends on the task, so the catalog is answered per rollout (as
        # verifiers' own NeMo Gym toolset does) instead of registering static tools.
        mcp.list_tools = self._with_state(self.list_tools)
        mcp.call_tool = self._with_state(self.call_tool)

    def _live(self) -> Episode:
        if self.episode is None:
            raise RuntimeError("this tool server serves a task's rollout: it has no task")
        return self.episode

    async def list_tools(self) -> list[Any]:
        from mcp.types import Tool

        episode = self._live()
        self.state.state_hash = episode.state_hash()
        return [
            Tool(
                name=tool["function"]["name"],
                description=tool["function"].get("description") or None,
                input_schema=tool["function"].get("parameters") or {"type": "object"},
            )
            for tool in episode.tools
        ]

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        from mcp.types import CallToolResult, TextContent

        episode = self._live()
        # Answers given since the last call close their user turns first, so this
        # call is recorded under the user turn it answers.
        for answer in self.state.answers[episode.user_turn :]:
            if not episode.done:  # a message without calls: its text is never parsed for any
                episode.step({"role": "assistant", "content": answer})
        if episode.done:
            text, error = "The episode is over: no more calls are run.", True
        else:
            record = episode.call(name, arguments)
            text, error = record.result.to_text(), not record.result.ok
        self.state.calls = [r.to_dict() for r in episode.trajectory]
        self.state.state_hash = episode.state_hash()
        return CallToolResult(content=[TextContent(type="text", text=text)], is_error=error)


class ProveEnv(vf.SingleAgentEnv):
    """Plays every user turn of a task: the next one after each answer without a call."""

    async def run(self, task: vf.Task, agents: vf.Agents) -> None:
        assert isinstance(task, ProveTask)
        turns = [t.user for t in task.prove_task.turns][: task.data.max_user_turns]
        async with agents.agent.interaction(task) as interaction:
            segment = await interaction.turn()  # the task's prompt: the first user turn
            for user in [*turns[1:], None]:
                if segment.terminated:
                    break
                # The tool server replaces the whole state on each call: read it afresh.
                state: ProveState = interaction.trace.state
                state.answers.append(segment.last_reply)
                if user is None:
                    break
                segment = await interaction.turn(user)


def load_environment(
    server: str = "calendar",
    *,
    tasks: str | Path | None = None,
    split: str = "train",
    reward: str = "default",
    max_user_turns: int = EpisodeCaps.max_user_turns,
    agent: vf.AgentConfig | dict[str, Any] | None = None,
) -> vf.Env:
    """A verifiers environment over a prove_gym server's tasks.

    Args:
        server: An installed server (``prove-gym list``).
        tasks: A task file or ``prove-gym synth`` output folder (default: shipped tasks).
        split: The split read from a synth folder.
        reward: A reward preset name (``default``, ``paper``).
        max_user_turns: User turns played at most.
        agent: The seat's verifiers ``AgentConfig`` (model, sampling, caps, runtime).
            Default: verifiers' ``null`` harness (a chat loop with MCP tools, which
            runs no code) in a local subprocess, with the episode's assistant-turn cap.

    Returns:
        The environment, loaded through ``verifiers.v1.load_environment``.
    """
    default_seat = {
        "harness": {"id": "null"},
        "runtime": {"type": "subprocess"},
        "max_turns": EpisodeCaps.max_assistant_turns,
    }
    seat = vf.AgentConfig.model_validate(agent if agent is not None else default_seat)
    taskset = ProveTasksetConfig(
        id=TASKSET_ID,
        server=server,
        tasks=Path(tasks) if tasks is not None else None,
        split=split,
        max_user_turns=max_user_turns,
        task=ProveTaskConfig(reward=reward),
    )
    return vf.load_environment(vf.SingleAgentEnvConfig(taskset=taskset, agent=seat))


sys.modules.setdefault(TASKSET_ID, sys.modules[__name__])

if __name__ == "__main__":
    ProveToolset.run()
