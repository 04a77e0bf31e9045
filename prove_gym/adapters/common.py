"""What every trainer adapter shares: dataset rows to tasks, ``PROVE_*`` settings, chat turns.

Trainers construct their environment objects with no arguments (OpenRLHF's
``AgentExecutor()``, TRL's ``environment_factory()``), so an adapter's
configuration comes from environment variables, read once by
:meth:`AdapterSettings.from_env`:

=============================  ===============================================  ==========
variable                       meaning                                          default
=============================  ===============================================  ==========
``PROVE_TASKS``                task files (``os.pathsep``-separated) in which   (none)
                               a label that is only a task id is looked up
``PROVE_MAX_ASSISTANT_TURNS``  assistant-turn cap of an episode                 10
``PROVE_MAX_USER_TURNS``       user-turn cap of an episode                      5
``PROVE_FORMAT``               tool-call format name (see ``prove-gym list``)       ``hermes``
``PROVE_MIN_TURN_TOKENS``      end the episode (and pay the reward) when fewer  16
                               tokens than this are left for the next turn
``PROVE_REWARD``               a preset (``default``, ``paper``) or a JSON      ``default``
                               object of :class:`RewardConfig` knobs, plus
                               ``"preset"`` and ``"weights": {component: w}``
``PROVE_REWARD_<KNOB>``        one knob, e.g. ``PROVE_REWARD_BETA=0``           (preset's)
``PROVE_REWARD_WEIGHT_<C>``    weight of component C, e.g.                      (preset's)
                               ``PROVE_REWARD_WEIGHT_ARGUMENTS=0.2``
``PROVE_REWARD_COMPONENTS``    plugin components to add, by name:               (none)
                               ``no_long_calls,polite``
``PROVE_TURN_REWARDS``         ``1``: also pay each user turn when it closes,   ``0``
                               rewards that sum to the episode's (verl:
                               ``turn_scores``; OpenRLHF: each step's
                               ``rewards`` is the reward of the turns it
                               closed, summed by OpenRLHF to the episode's
                               total; ``scores`` stays that total)
=============================  ===============================================  ==========
"""

from __future__ import annotations

import dataclasses
import functools
import json
import os
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from prove_gym.episode import Episode, EpisodeCaps
from prove_gym.formats import ChatTemplateFormat
from prove_gym.registry import Registry
from prove_gym.reward import RewardConfig
from prove_gym.task import Task

__all__ = [
    "AdapterSettings",
    "TurnRenderer",
    "resolve_task",
    "reward_config_from_env",
]


# ------------------------------------------------------------------ settings
def reward_config_from_env(
    environ: Mapping[str, str] | None = None, *, registry: Registry | None = None
) -> RewardConfig:
    """A :class:`RewardConfig` from the ``PROVE_REWARD*`` variables (see the module docstring).

    ``PROVE_REWARD`` holds a preset name (``default``, ``paper``: see
    :meth:`RewardConfig.preset`) or a JSON object of knobs (``alpha``, ``beta``,
    ``eff_floor``, ``abstain_reward``, ``credit_within_budget``, ``normalise``, ...),
    ``"preset"``, ``"weights"`` by component name and ``"components"`` (names to add);
    ``PROVE_REWARD_<KNOB>``, ``PROVE_REWARD_WEIGHT_<COMPONENT>`` and
    ``PROVE_REWARD_COMPONENTS`` set one of them each and win over the JSON.
    Values are read as JSON (``0.2``, ``null``, ``true``); a value that is not
    JSON is kept as a string. Added components are the ones plugins make
    available (``registry.reward_component(name)``); weights apply after they
    are added. An unknown knob or component name raises ``ValueError`` naming
    the known ones, so a typo never silently trains with the paper's defaults.

    Args:
        environ: The variables (default ``os.environ``).
        registry: Where added components are looked up (default: the process-wide one).

    >>> cfg = reward_config_from_env({"PROVE_REWARD": '{"weights": {"state": 0.3}}',
    ...                               "PROVE_REWARD_WEIGHT_ARGUMENTS": "0.25",
    ...                               "PROVE_REWARD_BETA": "0"})
    >>> cfg.weights["arguments"], cfg.weights["state"], cfg.beta
    (0.25, 0.3, 0)
    """
    env = os.environ if environ is None else environ
    knobs = [f.name for f in dataclasses.fields(RewardConfig) if f.name != "components"]
    settings: dict[str, Any] = {}
    raw = env.get("PROVE_REWARD", "").strip()
    if raw and not raw.startswith("{"):
        raw = json.dumps({"preset": raw})
    if raw:
        obj = json.loads(raw)
        if not isinstance(obj, dict):
            raise ValueError(
                f"PROVE_REWARD must be a preset name or a JSON object of RewardConfig knobs, "
                f"got {raw!r}"
            )
        settings.update(obj)
    weights: dict[str, Any] = {}
    for key, text in env.items():
        if key.startswith("PROVE_REWARD_WEIGHT_"):
            weights[key.removeprefix("PROVE_REWARD_WEIGHT_").lower()] = _json_or_text(text)
        elif key.startswith("PROVE_REWARD_"):
            settings[key.removeprefix("PROVE_REWARD_").lower()] = _json_or_text(text)
    given = settings.pop("weights", None) or {}
    if not isinstance(given, dict):
        raise ValueError(
            f"reward weights must be a JSON object {{component: weight}}, got {given!r}"
        )
    weights = {**given, **weights}
    added = settings.pop("components", None) or []
    if isinstance(added, str):
        added = [n.strip() for n in added.split(",") if n.strip()]
    unknown = sorted(set(settings) - {*knobs, "preset"})
    if unknown:
        raise ValueError(
            f"unknown reward settings {unknown}; known: {knobs}, weights "
            "(PROVE_REWARD_WEIGHT_<COMPONENT>) and components (PROVE_REWARD_COMPONENTS)"
        )
    base = RewardConfig.preset(str(settings.pop("preset", "default")))
    config = dataclasses.replace(base, **settings)
    if added:
        from prove_gym.registry import get_registry

        reg = registry or get_registry()
        try:
            extra = [reg.reward_component(n) for n in added if n not in config.weights]
        except KeyError as e:
            raise ValueError(f"PROVE_REWARD_COMPONENTS: {e.args[0]}") from None
        config = config.with_components(*extra)
    return config.with_weights(**weights) if weights else config


def _json_or_text(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


@dataclass(frozen=True)
class AdapterSettings:
    """Episode settings an adapter applies to every rollout (see the module docstring)."""

    tasks: tuple[str, ...] = ()
    max_assistant_turns: int = 10
    max_user_turns: int = 5
    format: str = "hermes"
    min_turn_tokens: int = 16
    reward_config: RewardConfig = field(default_factory=RewardConfig)
    turn_rewards: bool = False

    def episode(self, task: Task, registry: Registry | None = None) -> Episode:
        """A new :class:`~prove_gym.episode.Episode` of ``task`` under these settings."""
        return Episode(
            task,
            format=self.format,
            caps=EpisodeCaps(self.max_assistant_turns, self.max_user_turns),
            reward=self.reward_config,
            registry=registry,
            turn_rewards=self.turn_rewards,
        )

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> AdapterSettings:
        env = os.environ if environ is None else environ
        paths = tuple(p for p in env.get("PROVE_TASKS", "").split(os.pathsep) if p.strip())
        return cls(
            tasks=paths,
            max_assistant_turns=int(env.get("PROVE_MAX_ASSISTANT_TURNS", 10)),
            max_user_turns=int(env.get("PROVE_MAX_USER_TURNS", 5)),
            format=env.get("PROVE_FORMAT", "hermes"),
            min_turn_tokens=int(env.get("PROVE_MIN_TURN_TOKENS", 16)),
            reward_config=reward_config_from_env(env),
            turn_rewards=env.get("PROVE_TURN_REWARDS", "0").strip().lower() in ("1", "true", "yes"),
        )


# ------------------------------------------------------------------- tasks
_INDEX_LOCK = threading.Lock()
_INDEXES: dict[tuple[str, float], dict[str, Task]] = {}


def _task_from_row(row: Mapping[str, Any]) -> Task | None:
    """A task from a task line, or from a trainer row holding it under ``task``/``label``."""
    if "turns" in row:
        return Task.coerce(dict(row))
    for key in ("task", "label"):
        inner = row.get(key)
        if isinstance(inner, Mapping) and "turns" in inner:
            return Task.coerce(dict(inner))
        if isinstance(inner, str) and inner.lstrip().startswith("{"):
            try:
                return Task.coerce(inner)
            except ValueError:
                continue
    return None


def _index(path: str | Path) -> dict[str, Task]:
    p = Path(path)
    key = (str(p.resolve()), p.stat().st_mtime)
    with _INDEX_LOCK:
        found = _INDEXES.get(key)
    if found is not None:
        return found
    index: dict[str, Task] = {}
    with open(p, encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                task = _task_from_row(json.loads(line))
            except json.JSONDecodeError as exc:
                raise ValueError(
                    f"{p}:{lineno}: not JSON ({exc.msg} at column {exc.colno})"
                ) from None
            except ValueError as exc:
                raise ValueError(f"{p}:{lineno}: {exc}") from None
            if task is None:
                raise ValueError(f"{p}:{lineno}: neither a task nor a row holding one")
            index[task.id] = task
    with _INDEX_LOCK:
        _INDEXES[key] = index
    return index


def resolve_task(label: Any, tasks: Iterable[str | Path] = ()) -> Task:
    """The task a dataset row's label names.

    Accepted labels: a :class:`Task`, its dict or JSON text; a row (dict or
    JSON) holding the task under ``task`` or ``label``; ``{"task_id": ...,
    "dataset": PATH}``; or a bare task id, looked up in ``tasks`` (task
    ``.jsonl`` files, or trainer ``.jsonl`` files whose rows hold tasks).

    Raises:
        KeyError: The id is in none of the files.
        ValueError: The label is none of the above.
    """
    if isinstance(label, Task):
        return label
    if isinstance(label, bytes):
        label = label.decode("utf-8")
    obj: Any = label
    if isinstance(label, str) and label.lstrip().startswith("{"):
        obj = json.loads(label)
    if isinstance(obj, Mapping):
        task = _task_from_row(obj)
        if task is not None:
            return task
        task_id = obj.get("task_id", obj.get("id"))
        paths = [obj["dataset"]] if obj.get("dataset") else list(tasks)
        if task_id is None:
            raise ValueError(f"label names no task: {str(label)[:200]!r}")
        return _lookup(str(task_id), paths)
    if isinstance(obj, str) and obj.strip():
        return _lookup(obj.strip(), list(tasks))
    raise ValueError(f"label names no task: {label!r}")


def _lookup(task_id: str, paths: Sequence[str | Path]) -> Task:
    if not paths:
        raise KeyError(
            f"label {task_id!r} is a task id but no task file is known: set PROVE_TASKS to the "
            "dataset's .jsonl, or put the task JSON in the label"
        )
    for path in paths:
        task = _index(path).get(task_id)
        if task is not None:
            return task
    raise KeyError(f"task {task_id!r} is in none of {list(map(str, paths))}")


# -------------------------------------------------------------- chat turns
class TurnRenderer:
    """Renders what a model reads between two of its turns, with its own chat template.

    The episode says *what* comes next (tool results, the next user turn, or the
    end); this says how the model being trained reads it: everything after the
    assistant's text up to the next generation prompt. For Qwen/Hermes
    templates a tool result reads::

        <|im_end|>\\n<|im_start|>user\\n<tool_response>\\n...\\n</tool_response><|im_end|>\\n<|im_start|>assistant\\n

    The text comes from :meth:`ChatTemplateFormat.feedback
    <prove_gym.formats.ChatTemplateFormat.feedback>` over the tokenizer's
    template. Without a usable template (none, one that rejects the role
    sequence, or one that drops a message) the ChatML/Hermes text of
    :data:`HERMES_CHAT_TEMPLATE` is used.

    Args:
        tokenizer: A Hugging Face tokenizer (``None``: ChatML/Hermes text).
    """

    def __init__(self, tokenizer: Any = None) -> None:
        self.tokenizer = tokenizer
        usable = tokenizer is not None and getattr(tokenizer, "chat_template", None)
        self._own = ChatTemplateFormat(tokenizer) if usable else None

    def after_assistant(self, messages: Sequence[Mapping[str, Any]], *, done: bool) -> str:
        """The text after the assistant's message: its closing, ``messages``, the next prompt.

        Args:
            messages: What the episode answered (``tool`` and/or ``user`` messages, OpenAI style).
            done: The episode is over: close the assistant turn and add nothing else.
        """
        msgs = [] if done else list(messages)
        if self._own is not None:
            try:
                text = self._own.feedback(msgs, ())
            except Exception:  # a template that rejects the role sequence: use the fallback
                text = None
            if text is not None and all(str(m.get("content") or "") in text for m in msgs):
                return text
        return _chatml().feedback(msgs, ())

    def strip_end_of_turn(self, text: str, action_tokens: Sequence[int] | None) -> str:
        """Drop the end-of-turn marker from ``text`` when the action's tokens already end with it.

        vLLM returns the EOS id among the action's token ids but not in its
        text, so the closing ``<|im_end|>`` would otherwise appear twice.
        """
        tok = self.tokenizer
        if tok is None or not action_tokens:
            return text
        last_id = int(action_tokens[-1])
        special = set(getattr(tok, "all_special_ids", ()) or ())
        if last_id not in special and last_id != getattr(tok, "eos_token_id", None):
            return text
        last = tok.decode([last_id], skip_special_tokens=False)
        if last and text.startswith(last):
            return text[len(last) :]
        return text

    def initial_prompt(self, messages: Sequence[Mapping[str, Any]]) -> str:
        """The first prompt (system and first user message) with the generation prompt."""
        return (self._own or _chatml()).prompt(messages, ())


@functools.cache
def _chatml() -> ChatTemplateFormat:
    """The ChatML/Hermes rendering every model without a usable template gets."""
    return ChatTemplateFormat()
