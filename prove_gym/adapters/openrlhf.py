"""OpenRLHF adapter: pass this file as ``--train.agent_func_path``.

OpenRLHF 0.11 loads the file by path, builds ``AgentExecutor()`` with no
arguments inside each vLLM rollout actor, and for every sample calls
``AgentExecutor.execute(prompt, label, ...)``, which creates one
:class:`ProveAgentInstance` per sample, ``reset``\\ s it and ``step``\\ s it
with each generated assistant turn until ``done``. Here each instance plays
the task named by the dataset ``label`` as its own :class:`~prove_gym.episode.Episode`
(the engine under the Gymnasium env too, so a rollout here is exactly an env episode):

- ``label`` is the task JSON (what ``prove-gym synth`` writes in
  ``openrlhf.jsonl``), a row holding it, or a task id looked up in
  ``PROVE_TASKS`` (see :mod:`prove_gym.adapters.common` for every ``PROVE_*``
  setting: turn caps, tool-call format, reward weights);
- the G samples of one prompt rebuild the same initial state (the task's
  seed selects the same cached template);
- each assistant turn goes to ``Episode.step``; its answer (tool results,
  the next user turn) comes back as ``environment_feedback`` rendered with the
  chat template of the model being trained (Qwen/Hermes:
  ``<|im_end|>\\n<|im_start|>user\\n<tool_response>...``), so those tokens sit
  outside the action ranges and are masked from the policy loss;
- the reward is paid on the last step (sequence level): ``rewards`` and
  ``scores`` are the env's total, and ``extra_logs`` carries every component
  as ``prove/<name>``. When the token budget (``--data.max_len``) runs out
  before the episode ends, the episode is truncated (``Episode.end``) and
  scored as any truncated episode.

Blocking work (building states, tool calls, scoring) runs in worker threads
(``asyncio.to_thread``) so the rollout actor's event loop keeps generating.

Example::

    --train.agent_func_path $(python -c "import prove_gym.adapters.openrlhf as m; print(m.__file__)")
"""

from __future__ import annotations

import asyncio
import contextvars
import math
from typing import Any

import torch
from openrlhf.utils.agent import AgentInstanceBase, MultiTurnAgentExecutor

from prove_gym.adapters.common import AdapterSettings, TurnRenderer, resolve_task
from prove_gym.episode import Episode
from prove_gym.reward import RewardBreakdown

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
    """One rollout: an :class:`~prove_gym.episode.Episode` of the task in the sample's label."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.settings: AdapterSettings = kwargs.get("settings") or AdapterSettings.from_env()
        self.episode: Episode | None = None

    def _renderer(self) -> TurnRenderer:
        rollout = _ROLLOUT.get()
        return TurnRenderer(rollout.tokenizer if rollout is not None else None)

    def _start(self, label: Any) -> Episode:
        task = resolve_task(label, self.settings.tasks)
        self.episode = self.settings.episode(task)
        return self.episode

    async def reset(self, states: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        """Build the episode; keep the dataset's prompt, or render the episode's if it is empty."""
        episode = await asyncio.to_thread(self._start, states["label"])
        prompt = states.get("observation")
        if not prompt:
            prompt = self._renderer().initial_prompt(episode.messages)
        return {"observation": prompt}

    async def step(self, states: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        """Execute one assistant turn; answer with the episode's feedback and, at the end, the reward."""
        episode = self.episode
        if episode is None:
            raise RuntimeError("step() before reset()")
        closed = len(episode.turn_credits)  # turns paid before this step
        out = await asyncio.to_thread(episode.step, states["action_text"])
        rollout = _ROLLOUT.get()
        renderer = self._renderer()
        action_tokens = rollout.action_tokens if rollout is not None else None

        feedback = renderer.strip_end_of_turn(
            renderer.after_assistant(out.messages[1:], done=out.done), action_tokens
        )
        if not out.done and rollout is not None and self._out_of_budget(rollout, feedback):
            # No room for another turn: end here, scored like any truncated episode.
            await asyncio.to_thread(episode.end, truncated=True)
            feedback = renderer.strip_end_of_turn(
                renderer.after_assistant([], done=True), action_tokens
            )
        if episode.done:
            episode.close()
        reward = float(episode.breakdown.total) if episode.breakdown is not None else 0.0
        score = reward
        if self.settings.turn_rewards:
            # each turn's reward on the step that closed it: OpenRLHF sums the steps' rewards,
            # and the turn rewards sum to the episode's total, so the return is the same
            reward = sum(c.reward for c in episode.turn_credits[closed:])
        return {
            "rewards": torch.tensor(reward),
            "scores": torch.tensor(score),
            "environment_feedback": feedback,
            "done": episode.done,
            "sampling_params": states.get("sampling_params"),
            "extra_logs": self._logs(episode),
        }

    def _out_of_budget(self, rollout: _Rollout, feedback: str) -> bool:
        tok = rollout.tokenizer
        n_feedback = len(tok(text=feedback, add_special_tokens=False)["input_ids"])
        used = rollout.prompt_tokens + len(rollout.action_tokens) + n_feedback
        return rollout.max_length - used < max(1, self.settings.min_turn_tokens)

    def _logs(self, episode: Episode) -> dict[str, float]:
        """Numbers only, and the same keys on every step (OpenRLHF stacks them per batch)."""
        breakdown: RewardBreakdown | None = episode.breakdown
        names = [*episode.reward_config.weights, "abstention"]
        components = breakdown.components if breakdown is not None else {}
        logs = {f"prove/{k}": _number(components.get(k)) for k in sorted(set(names))}
        logs["prove/total"] = _number(breakdown.total if breakdown is not None else None)
        logs["prove/n_calls"] = float(len(episode.trajectory))
        logs["prove/assistant_turns"] = float(episode.assistant_turns)
        logs["prove/truncated"] = float(episode.truncated)
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
