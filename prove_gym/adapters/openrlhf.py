"""OpenRLHF adapter: pass this file as ``--train.agent_func_path``.

OpenRLHF 0.11 loads the file by path, builds ``AgentExecutor()`` with no
arguments inside each vLLM rollout actor, and for every sample calls
``AgentExecutor.execute(prompt, label, ...)``, which creates one
:class:`ProveAgentInstance` per sample, ``reset``\\ s it and ``step``\\ s it
with each generated assistant turn until ``done``. Here each instance plays
the task named by the dataset ``label`` in its own :class:`ProveEnv`:

- ``label`` is the task JSON (what ``prove synth`` writes in
  ``openrlhf.jsonl``), a row holding it, or a task id looked up in
  ``PROVE_TASKS`` (see :mod:`prove_gym.adapters.common` for every ``PROVE_*``
  setting: turn caps, parser, reward weights);
- the G samples of one prompt rebuild the same initial state (the task's
  seed selects the same cached template);
- each assistant turn goes to ``env.step``; the env's answer (tool results,
  the next user turn) comes back as ``environment_feedback`` rendered with the
  chat template of the model being trained (Qwen/Hermes:
  ``<|im_end|>\\n<|im_start|>user\\n<tool_response>...``), so those tokens sit
  outside the action ranges and are masked from the policy loss;
- the reward is paid on the last step (sequence level): ``rewards`` and
  ``scores`` are the env's total, and ``extra_logs`` carries every component
  as ``prove/<name>``. When the token budget (``--data.max_len``) runs out
  before the episode ends, the episode is truncated and scored as the env
  scores any truncated episode.

Blocking work (building states, tool calls, scoring) runs in worker threads
(``asyncio.to_thread``) so the rollout actor's event loop keeps generating.

Example::

    --train.agent_func_path $(python -c "import prove_gym.adapters.openrlhf as m; print(m.__file__)")
"""

from __future__ import annotations

import asyncio
import contextvars
import math
from collections.abc import Mapping
from typing import Any

import torch
from openrlhf.utils.agent import AgentInstanceBase, MultiTurnAgentExecutor

from prove_gym.adapters.common import AdapterSettings, TurnRenderer, resolve_task
from prove_gym.env.env import ProveEnv
from prove_gym.reward import score
from prove_gym.task import Task

__all__ = ["AgentExecutor", "ProveAgentInstance"]


class _Rollout:
    """What the executor knows about one sample that ``step`` needs: tokenizer and budget.

    A plain class, not a dataclass: OpenRLHF executes this file without adding it
    to ``sys.modules``, where dataclasses look up string annotations.
    """

    __slots__ = ("action_tokens", "finish_reason", "max_length", "prompt_tokens", "tokenizer")

    def __init__(self, tokenizer: Any, max_length: int) -> None:
        self.tokenizer = tokenizer
        self.max_length = max_length
        self.prompt_tokens = 0
        self.action_tokens: list[int] = []
        self.finish_reason: str | None = None


_ROLLOUT: contextvars.ContextVar[_Rollout | None] = contextvars.ContextVar(
    "prove_openrlhf_rollout", default=None
)


class _RecordingEngine:
    """Forwards to the vLLM actor and remembers the last turn's token ids for ``step``."""

    def __init__(self, engine: Any, rollout: _Rollout) -> None:
        self._engine = engine
        self._rollout = rollout

    async def generate(
        self, prompt_token_ids: list[int], sampling_params: Any, multi_modal_data: Any = None
    ) -> Any:
        out = await self._engine.generate(
            prompt_token_ids, sampling_params, multi_modal_data=multi_modal_data
        )
        first = out.outputs[0]
        self._rollout.prompt_tokens = len(prompt_token_ids)
        self._rollout.action_tokens = list(first.token_ids)
        self._rollout.finish_reason = first.finish_reason
        return out

    def __getattr__(self, name: str) -> Any:
        return getattr(self._engine, name)


class ProveAgentInstance(AgentInstanceBase):
    """One rollout: a :class:`ProveEnv` episode of the task in the sample's label."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.settings: AdapterSettings = kwargs.get("settings") or AdapterSettings.from_env()
        self.env: ProveEnv | None = None
        self.task: Task | None = None
        self.turns = 0
        self._log_keys: tuple[str, ...] = ()

    def _renderer(self) -> TurnRenderer:
        rollout = _ROLLOUT.get()
        return TurnRenderer(rollout.tokenizer if rollout is not None else None)

    def _start(self, label: Any) -> tuple[str, dict[str, Any]]:
        task = resolve_task(label, self.settings.tasks)
        s = self.settings
        env = ProveEnv(
            task.server,
            tasks=[task],
            max_assistant_turns=s.max_assistant_turns,
            max_user_turns=s.max_user_turns,
            parser=s.parser,
            reward_config=s.reward_config,
        )
        obs, info = env.reset(options={"task": task})
        self.env, self.task = env, env.task
        empty = score(env.task, [], config=s.reward_config).to_dict()
        self._log_keys = tuple(sorted(empty["components"]))
        return obs, info

    async def reset(self, states: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        """Build the episode; keep the dataset's prompt, or render the env's if it is empty."""
        _obs, info = await asyncio.to_thread(self._start, states["label"])
        prompt = states.get("observation")
        if not prompt:
            prompt = self._renderer().initial_prompt(info["messages"])
        return {"observation": prompt}

    async def step(self, states: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        """Execute one assistant turn; answer with the env's feedback and, at the end, the reward."""
        if self.env is None:
            raise RuntimeError("step() before reset()")
        env = self.env
        _obs, reward, terminated, truncated, info = await asyncio.to_thread(
            env.step, states["action_text"]
        )
        self.turns += 1
        done = terminated or truncated
        breakdown = info.get("reward_breakdown")
        rollout = _ROLLOUT.get()
        renderer = self._renderer()
        action_tokens = rollout.action_tokens if rollout is not None else None

        feedback = renderer.strip_end_of_turn(
            renderer.after_assistant(info["messages"][1:], done=done), action_tokens
        )
        if not done and rollout is not None and self._out_of_budget(rollout, feedback):
            # No room for another turn: end here, scored like any truncated episode.
            breakdown = await asyncio.to_thread(self._score_now)
            reward = float(breakdown["total"])
            done = truncated = True
            feedback = renderer.strip_end_of_turn(
                renderer.after_assistant([], done=True), action_tokens
            )
        if done:
            env.close()
        return {
            "rewards": torch.tensor(float(reward)),
            "scores": torch.tensor(float(reward)),
            "environment_feedback": feedback,
            "done": done,
            "sampling_params": states.get("sampling_params"),
            "extra_logs": self._logs(breakdown if done else None, truncated=truncated),
        }

    def _out_of_budget(self, rollout: _Rollout, feedback: str) -> bool:
        tok = rollout.tokenizer
        n_feedback = len(tok(text=feedback, add_special_tokens=False)["input_ids"])
        used = rollout.prompt_tokens + len(rollout.action_tokens) + n_feedback
        return rollout.max_length - used < max(1, self.settings.min_turn_tokens)

    def _score_now(self) -> dict[str, Any]:
        assert self.env is not None and self.task is not None
        result = score(
            self.task,
            self.env.trajectory,
            config=self.settings.reward_config,
            final_state_hash=self.env.state_hash(),
        )
        return result.to_dict()

    def _logs(self, breakdown: Mapping[str, Any] | None, *, truncated: bool) -> dict[str, float]:
        """Numbers only, and the same keys on every step (OpenRLHF stacks them per batch)."""
        components = (breakdown or {}).get("components", {})
        logs = {f"prove/{k}": _number(components.get(k)) for k in self._log_keys}
        logs["prove/total"] = _number((breakdown or {}).get("total"))
        logs["prove/n_calls"] = float(len(self.env.trajectory)) if self.env is not None else 0.0
        logs["prove/assistant_turns"] = float(self.turns)
        logs["prove/truncated"] = float(bool(truncated and breakdown is not None))
        return logs


def _number(value: Any) -> float:
    """A loggable float: undefined components (``None``) and NaN log as 0."""
    if value is None:
        return 0.0
    try:
        f = float(value)
    except (TypeError, ValueError):
        return 0.0
    return 0.0 if math.isnan(f) else f


class AgentExecutor(MultiTurnAgentExecutor):
    """OpenRLHF's multi-turn executor over :class:`ProveAgentInstance` (built with no arguments).

    ``execute`` is OpenRLHF's own; this subclass only lets each sample's
    instance see the tokenizer (to render feedback with its chat template) and
    the token budget (to end an episode that has no room left).
    """

    def __init__(self) -> None:
        super().__init__(ProveAgentInstance)

    async def execute(
        self,
        prompt: Any,
        label: Any,
        sampling_params: Any,
        max_length: int,
        hf_tokenizer: Any,
        llm_engine: Any,
        images: Any = None,
    ) -> dict[str, Any]:
        rollout = _Rollout(tokenizer=hf_tokenizer, max_length=max_length)
        token = _ROLLOUT.set(rollout)
        try:
            return await super().execute(
                prompt,
                label,
                sampling_params,
                max_length,
                hf_tokenizer,
                _RecordingEngine(llm_engine, rollout),
                images=images,
            )
        finally:
            _ROLLOUT.reset(token)
