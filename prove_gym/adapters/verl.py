"""verl adapter: an agent loop, registered as ``prove_agent``, that plays PROVE episodes.

verl (0.9.1 or newer) runs rollouts through *agent loops*: an :class:`AgentLoopBase`
subclass, registered by name, is built for each sample with the model's tokenizer and a
client of the rollout server (token ids in, token ids out), and its ``run`` plays it.
:class:`ProveAgentLoop` plays one :class:`~prove_gym.episode.Episode` per sample, the
engine under the Gymnasium env and the other adapters:

- the sample's task comes from the dataset row (``extra_info.task``, the task JSON that
  ``prove_gym.adapters.verl.verl_rows`` writes; or any label
  :func:`~prove_gym.adapters.common.resolve_task` reads), on a session of its own, so
  no rollout sees another's state;
- tokens go through verl's *continuous-token* helpers, the same as its own tool agent
  loop: the prompt is the episode's opening messages rendered by the model's own chat
  template with the offered tools (``ct_build_initial_tokens``); the sampled tokens are
  appended as they came (``ct_merge_assistant_token``, ``response_mask`` 1) and the model's
  text is read back by :class:`~prove_gym.formats.ChatTemplateFormat` over the same
  tokenizer;
- each assistant message is run by the episode; the tool results and, after the last
  call of a turn, the task's next user turn are appended as observation tokens
  (``ct_merge_context_msg``, ``response_mask`` 0; the model family's boundary tokens, such
  as Qwen's newline after ``<|im_end|>``, come from verl), until the episode ends or the
  response budget is spent;
- the reward is the sequence-level PROVE total (``reward_score``: verl puts it on the
  last response token), and every component goes to ``extra_fields["reward_extra_info"]``,
  which verl logs per sample.

Settings come from the ``PROVE_*`` variables of :mod:`prove_gym.adapters.common`
(reward, turn caps, task files). The agent-loop config file that names this class and a
one-GPU launch with the paper's settings are in ``examples/verl/``. Training needs
verl's GPU stack; the loop itself runs anywhere verl imports.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any
from uuid import uuid4

from verl.experimental.agent_loop.agent_loop import (
    AgentLoopBase,
    AgentLoopMetrics,
    AgentLoopOutput,
    register,
)

from prove_gym.adapters.common import AdapterSettings, resolve_task
from prove_gym.episode import Episode, EpisodeCaps
from prove_gym.formats import ChatTemplateFormat
from prove_gym.registry import get_registry
from prove_gym.reward import RewardBreakdown, RewardConfig
from prove_gym.task import Task

__all__ = ["AGENT_NAME", "ProveAgentLoop", "reward_extra_info", "verl_rows"]

if not hasattr(AgentLoopBase, "ct_merge_context_msg"):  # verl 0.9.0 and older
    raise ImportError(
        "prove_gym.adapters.verl needs verl>=0.9.1 (its continuous-token agent-loop API); "
        "upgrade with: pip install -U 'verl>=0.9.1'"
    )

AGENT_NAME = "prove_agent"
"""The name the loop is registered under (a dataset row's ``agent_name``)."""


@register(AGENT_NAME)
class ProveAgentLoop(AgentLoopBase):
    """One PROVE episode per sample, multi-turn, scored by the PROVE reward (module docstring)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.response_length = int(self.rollout_config.response_length)
        self.settings = AdapterSettings.from_env()
        self.format = _format_of(self.tokenizer)
        self.registry = get_registry()

    async def run(self, sampling_params: dict[str, Any], **kwargs: Any) -> AgentLoopOutput:
        task = task_of(kwargs, self.settings)
        episode = Episode(
            task,
            format=self.format,
            caps=EpisodeCaps(self.settings.max_assistant_turns, self.settings.max_user_turns),
            reward=self.settings.reward_config,
            registry=self.registry,
            turn_rewards=self.settings.turn_rewards,
        )
        try:
            return await self._play(episode, sampling_params)
        finally:
            episode.close()

    async def _play(self, episode: Episode, sampling_params: dict[str, Any]) -> AgentLoopOutput:
        tools = episode.tools
        # ids: the whole sequence so far (prompt, then response); mask and logprobs cover
        # its response part. verl's continuous-token helpers extend all three together.
        ids = await self.ct_build_initial_tokens(list(episode.messages), tools=tools)
        mask: list[int] = []
        logprobs: list[float] = []
        sampled_logprobs = False
        request_id = uuid4().hex
        turns = len(episode.messages)
        tokenizer: Any = self.tokenizer
        while not episode.done:
            out = await self.server_manager.generate(
                request_id=request_id, prompt_ids=ids, sampling_params=sampling_params
            )
            generated = list(out.token_ids)
            sampled_logprobs = sampled_logprobs or out.log_probs is not None
            merged, mask, kept = await self.ct_merge_assistant_token(
                ids,
                generated,
                mask,
                logprobs,
                assistant_logprobs=list(out.log_probs or [0.0] * len(generated)),
            )
            ids, logprobs = merged.token_ids, kept or []
            if len(mask) >= self.response_length:
                episode.end(truncated=True)  # the model's own text ran past the budget
                break
            step = episode.step(tokenizer.decode(generated, skip_special_tokens=True))
            turns += len(step.messages)
            if episode.done:
                break
            # the tool results, or the next user turn, after the assistant message
            before = episode.messages[: len(episode.messages) - len(step.messages) + 1]
            merged, new_mask, kept = await self.ct_merge_context_msg(
                before, list(episode.messages), ids, mask, logprobs, tools=tools
            )
            if len(new_mask) >= self.response_length:
                episode.end(truncated=True)  # no room left for the next observation
                break
            ids, mask, logprobs = merged.token_ids, new_mask, kept or []
        breakdown = episode.breakdown
        assert breakdown is not None  # every way out of the loop ends the episode
        split = len(ids) - len(mask)
        keep = self.response_length
        return AgentLoopOutput(
            prompt_ids=ids[:split],
            response_ids=ids[split:][:keep],
            response_mask=mask[:keep],
            response_logprobs=logprobs[:keep] if sampled_logprobs else None,
            reward_score=float(breakdown.total),
            num_turns=turns,
            metrics=AgentLoopMetrics(),
            extra_fields={
                "reward_extra_info": reward_extra_info(breakdown, self.settings.reward_config),
                # verl's field for per-turn credit, summing to reward_score; empty unless
                # PROVE_TURN_REWARDS is set
                "turn_scores": [c.reward for c in episode.turn_credits],
            },
        )


_FORMATS: dict[int, tuple[Any, ChatTemplateFormat]] = {}


def _format_of(tokenizer: Any) -> ChatTemplateFormat:
    """One format per tokenizer: verl builds a loop per sample, and the episode caches the
    system prompt it renders by format."""
    kept = _FORMATS.get(id(tokenizer))
    if kept is None or kept[0] is not tokenizer:
        if len(_FORMATS) >= 8:
            _FORMATS.clear()  # bounded; a worker has one tokenizer
        kept = _FORMATS[id(tokenizer)] = (tokenizer, ChatTemplateFormat(tokenizer))
    return kept[1]


def task_of(row: Mapping[str, Any], settings: AdapterSettings) -> Task:
    """The task of a verl sample: ``extra_info.task`` (or ``.label``), else the row itself."""
    extra = row.get("extra_info")
    if isinstance(extra, str) and extra.lstrip().startswith("{"):
        extra = json.loads(extra)
    if isinstance(extra, Mapping):
        for key in ("task", "label", "task_id"):
            if extra.get(key) is not None:
                label = extra[key] if key != "task_id" else {"task_id": extra[key]}
                return resolve_task(label, settings.tasks)
    return resolve_task(row, settings.tasks)


def reward_extra_info(breakdown: RewardBreakdown, config: RewardConfig) -> dict[str, float]:
    """Per-sample values verl logs beside the reward: every component (NaN where undefined,
    so that every sample has the same keys), the share of the maximum, calls and budget."""
    info = {
        f"prove/{name}": (math.nan if value is None else float(value))
        for name, value in breakdown.components.items()
    }
    for name in config.breakdown_keys:
        info.setdefault(f"prove/{name}", math.nan)
    info["prove/max_total"] = float(breakdown.max_total)
    info["prove/n_calls"] = float(breakdown.n_calls)
    info["prove/budget"] = float(breakdown.budget)
    return info


def verl_rows(tasks: list[Task]) -> list[dict[str, Any]]:
    """Dataset rows for verl's RLHFDataset: ``prompt`` (the first user turn, what the data
    pipeline filters by length), ``agent_name`` (this loop), ``data_source`` (the env id) and
    the task JSON under ``extra_info.task``. The loop renders the real prompt itself."""
    return [
        {
            "data_source": f"prove/{t.server}",
            "prompt": [{"role": "user", "content": t.turns[0].user}],
            "agent_name": AGENT_NAME,
            "reward_model": {"style": "rule", "ground_truth": t.id},
            "extra_info": {"task": t.to_json(), "task_id": t.id},
        }
        for t in tasks
    ]
