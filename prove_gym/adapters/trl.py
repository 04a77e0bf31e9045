"""TRL adapter for ``GRPOTrainer``: every user turn through a ``rollout_func``, or one with tools.

TRL 1.16 offers two ways in, and this module fills both with an
:class:`~prove_gym.episode.Episode` (the engine the env, OpenRLHF and verl adapters drive):

**Multi-turn tasks: the** ``rollout_func`` **path** (:class:`MultiTurnRollout`). Every user
turn of every task is played: the trainer's model writes each assistant turn with its chat
template and the tools the episode offers (distractors and schema overrides included), the
episode runs the calls and answers with their results or the task's next user turn, until
the episode ends or a cap is hit. The reward is the episode's, paid by :func:`prove_reward`:

>>> rollout = MultiTurnRollout(rows)                      # doctest: +SKIP
>>> trainer = GRPOTrainer(model, args=config, train_dataset=rows, processing_class=tokenizer,
...                       reward_funcs=[prove_reward], rollout_func=rollout)  # doctest: +SKIP

- TRL hands a ``rollout_func`` the prompts only; :class:`MultiTurnRollout` finds each
  prompt's task by its exact messages in the dataset rows it was built from
  (:func:`trl_rows` / ``prove-gym synth``'s ``trl.jsonl``); where several tasks open with the
  same prompt, each step plays one of them, chosen by the seed, for the whole group;
- ``prompt_ids`` are the opening messages (system and first user turn) rendered by the chat
  template; ``completion_ids`` everything after, in order: the sampled tokens (``env_mask``
  1, with their sampling log-probabilities) and what the environment inserts, tool results
  and later user turns (``env_mask`` 0, log-probability 0.0, no loss). Inserted text is the
  chat template's rendering of the whole conversation past what the tokens already say, so
  prompt and completion decode to exactly what the template renders;
- the episode's total and each reward component travel as ``prove_*`` columns to
  :func:`prove_reward`, which pays the total and logs the components as ``prove/<name>``.

**First turn only: the** ``environment_factory`` **path** (:func:`environment_class`).
TRL's own tool loop builds instances with no arguments, exposes their public methods as
tools (name, type hints and Google-style docstring become the schema), calls
``reset(**row)`` before each rollout and, when the class defines ``get_reward()``, pays
that after the rollout:

>>> Calendar = environment_class("calendar")          # doctest: +SKIP
>>> trainer = GRPOTrainer(model, args=config, train_dataset=rows,
...                       environment_factory=Calendar)  # doctest: +SKIP

- every visible tool of the server is a method with the tool's own
  description, argument descriptions and types; a call runs on the rollout's
  private session and returns what the env would show (the result JSON, or
  ``Error [kind]: ...``), so bad calls are observations, never exceptions;
- ``reset(**row)`` rebuilds the task's initial state from the row's ``task``
  (task JSON, what ``prove-gym synth`` writes in ``trl.jsonl``), ``label``, or a
  task id found in ``PROVE_TASKS``: the G rollouts of a group share it;
- ``get_reward()`` is the PROVE reward of the calls made, with the final
  state, under the ``PROVE_REWARD*`` settings (:mod:`prove_gym.adapters.common`).

TRL's tool loop plays a single user turn (it cannot inject a second user
message), so on this path a multi-turn task is played and scored on its first turn.
Tools are the server's, for every row: a task's distractor tools from other
servers and stripped enums are not shown. Use it for single-turn data or for TRL's
own tool-call parsing and logging; use :class:`MultiTurnRollout` for everything else.

**The asynchronous trainer** (``trl.experimental.async_grpo.AsyncGRPOTrainer``, which
generates on a vLLM server): :class:`AsyncMultiTurnWorker` is its ``rollout_worker=`` and
plays every user turn with the engine of :class:`MultiTurnRollout`, generating through
:func:`vllm_sampler`. Its own worker takes the classes above as ``environment_factory``
and pickles them into a spawned process; they pickle by value (first turn only there too).
"""

from __future__ import annotations

import contextlib
import copyreg
import dataclasses
import enum
import hashlib
import inspect
import json
import math
import queue
import threading
import time
import types
import typing
import urllib.error
import urllib.request
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal, NamedTuple

from prove_gym.adapters.common import AdapterSettings, TurnRenderer, resolve_task
from prove_gym.episode import Episode, EpisodeCaps, episode_instructions
from prove_gym.formats import ChatTemplateFormat, ToolCallFormat, chat_message
from prove_gym.registry import Registry, get_registry
from prove_gym.reward import RewardBreakdown, RewardConfig
from prove_gym.server.tool import ToolSpec
from prove_gym.task import Task
from prove_gym.workspace import CallRecord

__all__ = [
    "AsyncMultiTurnWorker",
    "GenerateFn",
    "Generation",
    "MultiTurnRollout",
    "ProveToolEnvironment",
    "Rollout",
    "environment_class",
    "environment_factories",
    "first_turn",
    "prompt_key",
    "prove_reward",
    "trainer_sampler",
    "trl_rows",
    "vllm_sampler",
]

_RESERVED = {"reset", "get_reward"}


def first_turn(task: Task) -> Task:
    """The task cut to its first user turn (its gold state is then rebuilt by the reward)."""
    if len(task.turns) == 1:
        return task
    meta = {**task.meta, "turns_played": 1, "turns_total": len(task.turns)}
    return task.model_copy(update={"turns": task.turns[:1], "final_state_hash": None, "meta": meta})


class _EnvironmentType(type):
    """The metaclass of the environment classes: what lets a built class pickle (see
    :func:`_reduce_environment_class`)."""


class ProveToolEnvironment(metaclass=_EnvironmentType):
    """Base of the classes :func:`environment_class` builds; one instance per rollout.

    Each rollout is an :class:`~prove_gym.episode.Episode` (the engine under the
    Gymnasium env too); every tool method is one :meth:`Episode.call
    <prove_gym.episode.Episode.call>`.

    A built class pickles as the arguments that built it (its server, tools, settings and
    whether it owns the reward), so TRL's ``AsyncGRPOTrainer`` can send it to its rollout
    process, where it is built again; an instance pickles before its first ``reset``.

    Attributes:
        episode: The current rollout's episode (``None`` before ``reset``).
        breakdown: The reward breakdown once :meth:`get_reward` ran.
    """

    server_name: ClassVar[str] = ""
    tool_names: ClassVar[tuple[str, ...]] = ()
    settings: ClassVar[AdapterSettings] = AdapterSettings()
    registry: ClassVar[Registry | None] = None

    def __init__(self) -> None:
        self.episode: Episode | None = None

    def __getstate__(self) -> dict[str, Any]:
        if self.episode is not None:
            raise TypeError(
                f"a {type(self).__name__} holding a rollout does not pickle (its state lives in "
                "this process's databases): pickle the class, or an instance before reset()"
            )
        return dict(self.__dict__)

    @property
    def task(self) -> Task | None:
        """The task of the current rollout (cut to its first turn)."""
        return self.episode.task if self.episode is not None else None

    @property
    def trajectory(self) -> list[CallRecord]:
        """The calls made in this rollout, with their live results."""
        return self.episode.trajectory if self.episode is not None else []

    @property
    def breakdown(self) -> RewardBreakdown | None:
        return self.episode.breakdown if self.episode is not None else None

    def reset(self, **row: Any) -> str | None:
        """Start a rollout of the row's task from its initial state; the prompt is the row's."""
        label: Any = row if ("task" in row or "label" in row or "turns" in row) else row.get("id")
        task = first_turn(resolve_task(label, self.settings.tasks))
        names = set(task.servers)
        if self.server_name not in names:
            raise ValueError(
                f"task {task.id!r} is for {task.servers}, not {self.server_name!r}: "
                f"use environment_class({task.server!r}) (or a dict environment_factory)"
            )
        self._close()
        self.episode = self.settings.episode(task, self.registry or get_registry())
        return None

    def _call(self, name: str, arguments: dict[str, Any]) -> str:
        if self.episode is None:
            return "Error [no_episode]: the environment was not reset."
        if self.episode.done:
            return "Error [episode_over]: this rollout has been scored; no more calls run."
        return self.episode.call(name, arguments).result.to_text()

    def _score(self) -> RewardBreakdown:
        """End the rollout (the model stopped calling tools) and return its reward."""
        if self.episode is None:
            raise RuntimeError("no rollout to score: reset() was never called")
        breakdown = self.episode.end(truncated=False)
        self.episode.close()
        return breakdown

    def _close(self) -> None:
        if self.episode is not None:
            self.episode.close()
            self.episode = None


def _get_reward(self: ProveToolEnvironment) -> float:
    """The PROVE reward of this rollout (its breakdown is kept in ``self.breakdown``)."""
    return float(self._score().total)


def prove_reward(
    environments: Sequence[ProveToolEnvironment] | None = None,
    log_metric: Callable[[str, float], None] | None = None,
    prove_total: Sequence[float] | None = None,
    prove_task_id: Sequence[str] | None = None,
    **kwargs: Any,
) -> list[float | None]:
    """A TRL reward function paying each rollout's PROVE reward and logging its components.

    It serves both paths of this module (``reward_funcs=[prove_reward]``):

    - ``rollout_func=MultiTurnRollout(...)``: the rollout already played and scored every
      episode; this pays its ``prove_total`` column. When the rows carry their task
      (a ``task`` column), each rollout's task id is checked against its row's.
    - ``environment_factory`` built with ``owns_reward=False``: each environment is scored
      here (TRL passes them as ``environments``).

    Each component's batch mean is logged as ``prove/<name>`` (undefined ones left out).

    >>> prove_reward(prove_total=[1.5, 0.25], prove_task_id=["a", "b"])
    [1.5, 0.25]

    Raises:
        ValueError: Neither environments nor ``prove_total`` were given (the trainer was
            built with neither path), or a rollout played another task than its row's.
    """
    if environments is not None:
        breakdowns = [env._score() for env in environments]
        if log_metric is not None and breakdowns:
            for name in breakdowns[0].components:
                values = [b.components.get(name) for b in breakdowns]
                defined = [float(v) for v in values if v is not None]
                if defined:
                    log_metric(f"prove/{name}", sum(defined) / len(defined))
            log_metric("prove/n_calls", sum(b.n_calls for b in breakdowns) / len(breakdowns))
        rewards: list[float | None] = [float(b.total) for b in breakdowns]
        return rewards
    if prove_total is None:
        raise ValueError(
            "prove_reward found neither environments (environment_factory=) nor the prove_* "
            "columns of a MultiTurnRollout (rollout_func=): give GRPOTrainer one of them"
        )
    if prove_task_id is not None:
        _check_task_ids(prove_task_id, kwargs.get("prove_prompt_tasks"), kwargs.get("task"))
    if log_metric is not None and prove_total:
        log_metric("prove/total", sum(float(t) for t in prove_total) / len(prove_total))
        for key, values in kwargs.items():
            if key.startswith("prove_") and isinstance(values, Sequence):
                numbers = [n for n in map(_number, values) if n is not None]
                if numbers:
                    log_metric(f"prove/{key.removeprefix('prove_')}", sum(numbers) / len(numbers))
    return [float(t) for t in prove_total]


def _number(value: Any) -> float | None:
    """A column value as a float to average (``None``, NaN and non-numbers are left out)."""
    if isinstance(value, bool | int | float) and not (
        isinstance(value, float) and math.isnan(value)
    ):
        return float(value)
    return None


def _check_task_ids(played: Sequence[str], candidates: Any, labels: Any) -> None:
    """Every rollout played its row's task, or another task its row's prompt stands for."""
    if not isinstance(labels, Sequence) or isinstance(labels, str):
        return
    if not isinstance(candidates, Sequence) or len(candidates) != len(played):
        candidates = [(task_id,) for task_id in played]
    for i, (task_id, allowed, label) in enumerate(zip(played, candidates, labels, strict=False)):
        expected = _label_task_id(label)
        if expected is not None and expected not in {task_id, *allowed}:
            raise ValueError(
                f"rollout {i} played task {task_id!r} but its row holds task {expected!r}: "
                "build the MultiTurnRollout from the same rows as the trainer's dataset"
            )


def _label_task_id(label: Any) -> str | None:
    if isinstance(label, Task):
        return label.id
    if isinstance(label, str) and label.lstrip().startswith("{"):
        try:
            label = json.loads(label)
        except json.JSONDecodeError:
            return None
    if isinstance(label, Mapping) and isinstance(label.get("id"), str) and "turns" in label:
        return str(label["id"])
    return None


def environment_class(
    server: str,
    *,
    tools: Iterable[str] | None = None,
    reward_config: RewardConfig | None = None,
    owns_reward: bool = True,
    registry: Registry | None = None,
) -> type[ProveToolEnvironment]:
    """Build the ``environment_factory`` class of one server.

    Args:
        server: The server's name, e.g. ``"calendar"``.
        tools: Offer only these tools (by name); default: every visible tool.
            Fewer tools make shorter prompts, which matters on a CPU.
        reward_config: Reward weights; default: ``PROVE_REWARD*`` variables, else the paper's.
        owns_reward: Define ``get_reward`` (TRL then needs no ``reward_funcs``);
            ``False`` leaves scoring to :func:`prove_reward`.
        registry: Where the server is found (the process-wide registry by default).
    """
    reg = registry or get_registry()
    srv = reg.get_server(server)
    visible = {t.name: t for t in srv.visible_tools()}
    wanted = list(visible) if tools is None else list(tools)
    unknown = [n for n in wanted if n not in visible]
    if unknown:
        raise ValueError(f"{server} has no visible tools {unknown}; it has {sorted(visible)}")
    clash = _RESERVED & set(wanted)
    if clash:
        raise ValueError(f"tool names {sorted(clash)} clash with TRL's environment methods")
    settings = AdapterSettings.from_env()
    if reward_config is not None:
        settings = dataclasses.replace(settings, reward_config=reward_config)
    return _build_environment_class(server, tuple(wanted), settings, owns_reward, registry)


def _build_environment_class(
    server: str,
    tools: tuple[str, ...],
    settings: AdapterSettings,
    owns_reward: bool,
    registry: Registry | None,
) -> type[ProveToolEnvironment]:
    """The class :func:`environment_class` returns, from its checked arguments; also what
    unpickling a class calls (:func:`_reduce_environment_class`)."""
    srv = (registry or get_registry()).get_server(server)
    visible = {t.name: t for t in srv.visible_tools()}
    namespace: dict[str, Any] = {
        "__doc__": f"TRL environment of the {server!r} server: {srv.description}".strip(),
        "__module__": __name__,
        "server_name": server,
        "tool_names": tools,
        "settings": settings,
        "registry": registry,
        "_owns_reward": owns_reward,
    }
    for name in tools:
        namespace[name] = _tool_method(visible[name])
    if owns_reward:
        namespace["get_reward"] = _get_reward
    cls_name = "".join(p.capitalize() for p in server.split("_")) + "Environment"
    return types.new_class(
        cls_name, (ProveToolEnvironment,), exec_body=lambda ns: ns.update(namespace)
    )


def _reduce_environment_class(meta: _EnvironmentType) -> Any:
    """Pickle a built environment class as the arguments that build it again.

    A class made at run time has no importable name, so pickle's default (by reference)
    fails; this one travels by value. The base class pickles by reference as usual.
    """
    cls = typing.cast(type[ProveToolEnvironment], meta)
    if "_owns_reward" not in cls.__dict__:  # ProveToolEnvironment, or a subclass with a name
        return cls.__qualname__
    if cls.registry is not None:
        raise TypeError(
            f"{cls.__name__} was built with a registry of its own, which does not pickle: "
            "build it with the default registry to send it to another process"
        )
    owns_reward = bool(cls.__dict__.get("_owns_reward", False))
    args = (cls.server_name, cls.tool_names, cls.settings, owns_reward, None)
    return _build_environment_class, args


copyreg.pickle(_EnvironmentType, _reduce_environment_class)


def environment_factories(
    servers: Iterable[str] | None = None,
    *,
    tools: Mapping[str, Iterable[str]] | None = None,
    reward_config: RewardConfig | None = None,
    owns_reward: bool = True,
    registry: Registry | None = None,
) -> dict[str, type[ProveToolEnvironment]]:
    """``{server: class}`` for one ``GRPOTrainer`` run over several servers.

    TRL's dict form of ``environment_factory``: each row's ``environment`` column (what
    :func:`trl_rows` and ``prove-gym synth``'s ``trl.jsonl`` write) selects its server's
    class, and only that server's tools are shown in its prompt.

    >>> factories = environment_factories(["calendar", "banking"])  # doctest: +SKIP
    >>> GRPOTrainer(model, args=config, train_dataset=rows,
    ...             environment_factory=factories)  # doctest: +SKIP

    Args:
        servers: Server names (default: every installed one).
        tools: Per server, the tools to offer (default: every visible tool).
        reward_config, owns_reward, registry: As for :func:`environment_class`.
    """
    reg = registry or get_registry()
    names = list(servers) if servers is not None else list(reg.servers)
    return {
        name: environment_class(
            name,
            tools=(tools or {}).get(name),
            reward_config=reward_config,
            owns_reward=owns_reward,
            registry=registry,
        )
        for name in names
    }


def _tool_method(spec: ToolSpec) -> Callable[..., str]:
    """A method ``name(self, **arguments) -> str`` whose signature and docstring are the tool's."""
    name = spec.name

    def method(self: ProveToolEnvironment, **arguments: Any) -> str:
        return self._call(name, arguments)

    props = spec.input_schema().get("properties", {})
    params = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    annotations: dict[str, Any] = {}
    for p in spec.params:
        hint = _hint(p.annotation, props.get(p.name, {}))
        annotations[p.name] = hint
        default = inspect.Parameter.empty if p.required else _default(spec, p.name)
        params.append(
            inspect.Parameter(
                p.name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=hint
            )
        )
    annotations["return"] = str
    method.__name__ = method.__qualname__ = name
    method.__signature__ = inspect.Signature(params, return_annotation=str)  # type: ignore[attr-defined]
    method.__annotations__ = annotations
    method.__doc__ = _docstring(spec)
    return method


def _default(spec: ToolSpec, name: str) -> Any:
    for p in inspect.signature(spec.fn).parameters.values():
        if p.name == name:
            return p.default
    return None


def _docstring(spec: ToolSpec) -> str:
    """The tool's description with a Google ``Args:`` block (what transformers parses)."""
    lines = [spec.description.strip() or spec.name.replace("_", " ").capitalize() + "."]
    if spec.params:
        lines += ["", "Args:"]
        for p in spec.params:
            desc = " ".join((p.description or f"The {p.name.replace('_', ' ')}.").split())
            lines.append(f"    {p.name}: {desc}")
    return "\n".join(lines)


_JSON_TYPES: dict[str, Any] = {
    "string": str,
    "integer": int,
    "number": float,
    "boolean": bool,
    "object": dict,
}


def _hint(annotation: Any, schema: Mapping[str, Any]) -> Any:
    """The tool's own annotation when transformers can read it, else one built from its schema."""
    return annotation if _readable(annotation) else _from_schema(schema)


def _readable(hint: Any) -> bool:
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin is typing.Annotated:
        return _readable(args[0])
    if origin is None:
        if hint in (str, int, float, bool, dict, list, type(None), Any):
            return True
        return isinstance(hint, type) and issubclass(hint, enum.Enum)
    if origin is Literal:
        return all(isinstance(a, str | int | float | bool) or a is None for a in args)
    if origin in (typing.Union, types.UnionType, list, dict):
        return all(_readable(a) for a in args)
    return False


def _from_schema(schema: Mapping[str, Any]) -> Any:
    if "enum" in schema:
        return Literal[tuple(schema["enum"])]
    options = schema.get("anyOf") or schema.get("oneOf")
    if options:
        hints = tuple(_from_schema(o) for o in options)
        return typing.Union[hints]  # noqa: UP007
    kind = schema.get("type")
    if kind == "null":
        return type(None)
    if kind == "array":
        items = schema.get("items")
        return list[_from_schema(items)] if isinstance(items, Mapping) else list  # type: ignore[misc]
    return _JSON_TYPES.get(kind, Any) if isinstance(kind, str) else Any


def trl_rows(
    tasks: Iterable[Task], *, system: bool = True, registry: Registry | None = None
) -> list[dict[str, Any]]:
    """Dataset rows for ``GRPOTrainer``: ``{"prompt", "task", "environment"}``, one per task.

    The same shape as ``prove-gym synth``'s ``trl.jsonl``; with ``system`` the
    prompt starts with the episode's instructions (the tools are passed natively).
    """
    rows = []
    for task in tasks:
        prompt = [{"role": "user", "content": task.turns[0].user}]
        if system:
            prompt.insert(0, {"role": "system", "content": episode_instructions(task, registry)})
        rows.append({"prompt": prompt, "task": task.to_json(), "environment": task.server})
    return rows


# --------------------------------------------------------- multi-turn rollout (rollout_func)
class Generation(NamedTuple):
    """What the policy wrote from one context.

    Attributes:
        token_ids: The sampled tokens; they end with an end-of-sequence id unless the
            token budget ran out first.
        logprobs: The log-probability each token was sampled with (one per token).
    """

    token_ids: list[int]
    logprobs: list[float]


GenerateFn = Callable[[Sequence[Sequence[int]], Sequence[int], Sequence[int]], Sequence[Generation]]
"""``generate(contexts, max_new_tokens, seeds)``: one :class:`Generation` per context, each
at most its own ``max_new_tokens`` long and drawn with its own seed, so that a context's
tokens do not depend on the others in the batch. The default is :func:`trainer_sampler`;
any other policy (a vLLM client, a scripted one in tests) can stand in for it."""


def prompt_key(prompt: Any) -> str:
    """The key a prompt is looked up by: its messages' roles and contents, as JSON.

    Other keys a message may carry (a dataset can add ``None`` fields) do not count, so
    the key of a row's prompt and of the prompt TRL hands the rollout are the same.

    >>> prompt_key([{"role": "user", "content": "Hi", "name": None}])
    '[["user","Hi"]]'
    """
    if isinstance(prompt, str):
        return prompt
    if isinstance(prompt, Mapping):
        prompt = [prompt]
    pairs = [
        [m.get("role"), m.get("content")] if isinstance(m, Mapping) else [None, m] for m in prompt
    ]
    return json.dumps(pairs, ensure_ascii=False, separators=(",", ":"), default=str)


@dataclass
class Rollout:
    """One multi-turn rollout, as TRL receives it and as it was played.

    Attributes:
        task: The task played.
        episode: Its episode (closed; its transcript and reward stay readable).
        prompt_ids: The opening messages rendered by the chat template, generation prompt included.
        completion_ids: Every token after them: the model's and the environment's, in order.
        env_mask: 1 on tokens the model sampled, 0 on tokens the environment inserted.
        logprobs: Sampling log-probability of each model token; 0.0 on environment tokens.
        messages: The conversation as the model read it: the opening messages, each
            assistant message as the model's raw text (``content`` only) and what the
            environment answered. The chat template applied to it renders exactly
            ``prompt_ids + completion_ids`` (plus the closing of the last turn) when ``exact``.
        exact: Every inserted span continued the template's rendering of ``messages``;
            ``False`` when the template renders an earlier turn differently once later ones
            follow, and the span was rendered turn by turn instead (:class:`TurnRenderer`).
        prompt_tasks: Ids of every task the prompt stands for (``task`` is one of them).
    """

    task: Task
    episode: Episode
    prompt_ids: list[int]
    completion_ids: list[int] = field(default_factory=list)
    env_mask: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)
    messages: list[dict[str, Any]] = field(default_factory=list)
    exact: bool = True
    prompt_tasks: tuple[str, ...] = ()

    @property
    def breakdown(self) -> RewardBreakdown:
        """The episode's reward (the rollout always ends its episode)."""
        assert self.episode.breakdown is not None, "the rollout has not finished"
        return self.episode.breakdown

    @property
    def user_turns(self) -> int:
        """User turns the model was shown."""
        return sum(1 for m in self.messages if m["role"] == "user")

    @property
    def context(self) -> list[int]:
        """What the model reads before its next turn."""
        return self.prompt_ids + self.completion_ids

    def _extend(self, ids: Sequence[int], logprobs: Sequence[float] | None) -> None:
        self.completion_ids += ids
        self.env_mask += [1 if logprobs is not None else 0] * len(ids)
        self.logprobs += list(logprobs) if logprobs is not None else [0.0] * len(ids)


class _Chat:
    """The trained model's chat template: render messages, tokenize and decode text."""

    def __init__(self, tokenizer: Any, template_kwargs: Mapping[str, Any]) -> None:
        self.tokenizer = tokenizer
        self.kwargs = dict(template_kwargs)
        self.turns = TurnRenderer(tokenizer)

    def render(
        self,
        messages: Sequence[Mapping[str, Any]],
        tools: Sequence[Mapping[str, Any]] | None,
        *,
        generation: bool,
    ) -> str:
        text = self.tokenizer.apply_chat_template(
            [chat_message(m) for m in messages],
            tools=list(tools) if tools else None,
            tokenize=False,
            add_generation_prompt=generation,
            **self.kwargs,
        )
        return str(text)

    def encode(self, text: str) -> list[int]:
        return list(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def decode(self, ids: Sequence[int], *, skip_special: bool = False) -> str:
        return str(
            self.tokenizer.decode(
                list(ids), skip_special_tokens=skip_special, clean_up_tokenization_spaces=False
            )
        )


class _TaskIndex:
    """Dataset rows by :func:`prompt_key`: how a prompt TRL hands over leads back to its task.

    A prompt may stand for several tasks (synthesized tasks can open with the same request
    on different states); all of them are kept, in the order of the rows.
    """

    def __init__(
        self,
        rows: Iterable[Mapping[str, Any] | Task],
        registry: Registry | None,
        tasks: Sequence[str],
    ) -> None:
        self.paths = tuple(tasks)
        self._labels: dict[str, dict[str, Any]] = {}  # prompt key -> {identity: label}
        self._cache: dict[tuple[str, str], Task] = {}
        for row in rows:
            if isinstance(row, Task):
                row = trl_rows([row], registry=registry)[0]
            if "prompt" not in row:
                raise ValueError(f"a row has no 'prompt' to find it by: {sorted(row)}")
            label = next((row[k] for k in ("task", "label") if row.get(k) is not None), None)
            if label is None:
                label = {k: v for k, v in row.items() if k != "prompt"}
            self._labels.setdefault(prompt_key(row["prompt"]), {}).setdefault(
                _identity(label), label
            )

    def __len__(self) -> int:
        return len(self._labels)

    @property
    def shared(self) -> int:
        """Prompts that stand for more than one task."""
        return sum(1 for labels in self._labels.values() if len(labels) > 1)

    def tasks(self, prompt: Any) -> list[Task]:
        key = prompt_key(prompt)
        labels = self._labels.get(key)
        if labels is None:
            raise KeyError(
                f"no row has this prompt (was the MultiTurnRollout built from the trainer's "
                f"dataset?): {key[:300]}"
            )
        out = []
        for ident, label in labels.items():
            task = self._cache.get((key, ident))
            if task is None:
                task = self._cache[(key, ident)] = resolve_task(label, self.paths)
            out.append(task)
        return out


def _identity(label: Any) -> str:
    """Canonical JSON of a row's task label (two labels of one task compare equal)."""
    if isinstance(label, Task):
        return label.to_json()
    if isinstance(label, str) and label.lstrip().startswith("{"):
        try:
            label = json.loads(label)
        except json.JSONDecodeError:
            return label
    return json.dumps(label, sort_keys=True, ensure_ascii=False, default=str)


class MultiTurnRollout:
    """A ``GRPOTrainer(rollout_func=...)`` that plays every user turn of each task.

    Called by TRL with the prompts of one generation batch and the trainer, it plays one
    :class:`~prove_gym.episode.Episode` per prompt (its task found by :func:`prompt_key` in
    ``rows``) and returns TRL's columns: ``prompt_ids``, ``completion_ids``, ``logprobs``,
    ``env_mask`` (see :class:`Rollout`), and the reward as ``prove_total``, ``prove_task_id``,
    ``prove_prompt_tasks``, ``prove_n_calls``, ``prove_user_turns``,
    ``prove_assistant_turns``, ``prove_truncated`` and one ``prove_<component>`` per reward
    component (``None`` where undefined), which :func:`prove_reward` pays and logs (with
    ``PROVE_TURN_REWARDS=1``, also ``prove_worst_turn``: the lowest turn reward times the
    task's number of turns).

    A prompt only selects its task: the model reads the episode's own opening messages
    (for rows from :func:`trl_rows`, the same system and user messages). Where several
    tasks open with the same prompt (synthesized tasks can), every rollout of that prompt in
    one call plays the same one of them, picked from the seed, the step and the prompt, on
    every process alike. TRL 1.16's sampler already repeats each prompt ``num_generations``
    times, so one rollout is played per prompt received: the G copies of a prompt are the G
    rollouts of its group, each on its own copy of the same initial state.

    Each turn, every unfinished rollout of the batch generates together (in slices of
    ``batch_size``) from its tokens so far; the episode reads the text (the format below),
    runs the calls and answers. A rollout ends with its episode (the last user turn
    answered, or the turn caps of ``settings``), when a message runs out of tokens, or when
    the next environment text and ``settings.min_turn_tokens`` no longer fit in
    ``max_total_tokens``; it is then scored as it stands (``Episode.end``).

    >>> rollout = MultiTurnRollout(load_dataset("json", data_files="trl.jsonl")["train"])  # doctest: +SKIP

    Args:
        rows: The dataset rows (what :func:`trl_rows` and ``prove-gym synth`` write: ``prompt``
            and the task under ``task`` or ``label``, or a task id found in ``PROVE_TASKS``),
            or tasks. Pass the trainer's own dataset.
        settings: Turn caps, reward and task files (default: ``PROVE_*`` variables,
            :class:`~prove_gym.adapters.common.AdapterSettings`). Its ``format`` is not used:
            see ``format``.
        format: How the model's text is read. Default: the model's chat template
            (:class:`~prove_gym.formats.ChatTemplateFormat`): tools are passed to the
            template natively and calls read with its response parser, else as Hermes
            ``<tool_call>`` blocks. Another format (a name such as ``"hermes"``, or an object)
            lists the tools in the system message itself and the template gets none.
        max_total_tokens: Cap on a rollout's completion (model and environment tokens);
            default ``trainer.args.max_completion_length``.
        max_turn_tokens: Cap on one assistant message; default: whatever the total leaves.
        batch_size: Rollouts generated together at most (default: all of the batch).
        seed: Seed of the sampling (default ``trainer.args.seed``); with the step, the process
            and the turn it seeds each generation, so the same seed replays the same rollouts.
        generate: The policy (default :func:`trainer_sampler` of the trainer).
        registry: Where servers and formats are found.

    Attributes:
        last: The rollouts of the latest call, for inspection.
    """

    def __init__(
        self,
        rows: Iterable[Mapping[str, Any] | Task],
        *,
        settings: AdapterSettings | None = None,
        format: ToolCallFormat | str | None = None,
        max_total_tokens: int | None = None,
        max_turn_tokens: int | None = None,
        batch_size: int | None = None,
        seed: int | None = None,
        generate: GenerateFn | None = None,
        registry: Registry | None = None,
    ) -> None:
        for name, value in (
            ("max_total_tokens", max_total_tokens),
            ("max_turn_tokens", max_turn_tokens),
            ("batch_size", batch_size),
        ):
            if value is not None and value < 1:
                raise ValueError(f"{name} must be at least 1, got {value}")
        self.settings = settings or AdapterSettings.from_env()
        self.registry = registry or get_registry()
        self.format = format
        self.max_total_tokens = max_total_tokens
        self.max_turn_tokens = max_turn_tokens
        self.batch_size = batch_size
        self.seed = seed
        self.generate = generate
        self.index = _TaskIndex(rows, self.registry, self.settings.tasks)
        if self.index.shared:
            warnings.warn(
                f"{self.index.shared} of {len(self.index)} prompts stand for more than one task; "
                "at each step, every rollout of such a prompt plays the same one of them, "
                "chosen by the seed",
                stacklevel=2,
            )
        self.last: list[Rollout] = []
        self._calls: dict[tuple[int, str], int] = {}
        self._warned = False

    @property
    def caps(self) -> EpisodeCaps:
        return EpisodeCaps(self.settings.max_assistant_turns, self.settings.max_user_turns)

    def tasks_for(self, prompt: Any) -> list[Task]:
        """The tasks a prompt stands for (one, unless rows share their prompt).

        Raises:
            KeyError: No row has this prompt.
        """
        return self.index.tasks(prompt)

    def __call__(self, prompts: Sequence[Any], trainer: Any) -> dict[str, list[Any]]:
        """Play one rollout per prompt and return TRL's columns (see the class docstring)."""
        self.last = self.play(prompts, trainer)
        return self.columns(self.last)

    def play(self, prompts: Sequence[Any], trainer: Any) -> list[Rollout]:
        """Play one rollout per prompt with the trainer's model and settings."""
        args = trainer.args
        tokenizer = getattr(trainer.processing_class, "tokenizer", trainer.processing_class)
        template_kwargs = getattr(trainer, "chat_template_kwargs", None)
        return self._play(
            prompts,
            tokenizer=tokenizer,
            generate=self.generate or trainer_sampler(trainer),
            total=self.max_total_tokens or int(args.max_completion_length),
            chat=_Chat(
                tokenizer, template_kwargs or getattr(args, "chat_template_kwargs", None) or {}
            ),
            eos=set(_eos_ids(trainer, tokenizer)),
            seeds=self._seeds(trainer),
        )

    def play_model(
        self,
        prompts: Sequence[Any],
        model: Any,
        tokenizer: Any,
        *,
        max_total_tokens: int,
        temperature: float = 0.0,
        seed: int = 0,
    ) -> list[Rollout]:
        """Play one rollout per prompt with a model outside any trainer (held-out evaluation).

        The same engine as training: batched generation from each rollout's tokens so far,
        the episode reading the text. Greedy by default (``temperature=0``); sampled rollouts
        draw from seeds derived from ``seed``, so a call replays exactly.

        Args:
            prompts: Prompts of rows given to the constructor (or their tasks' prompts).
            model: A transformers causal LM.
            tokenizer: Its tokenizer, whose chat template renders tools.
            max_total_tokens: Cap on a rollout's completion (model and environment tokens).
            temperature: Sampling temperature; 0 decodes greedily.
            seed: Seed of sampling and of the pick among tasks that share a prompt.
        """
        eos = _eos_ids(None, tokenizer)
        sampling = _Sampling(
            do_sample=temperature > 0,
            temperature=float(temperature) if temperature > 0 else 1.0,
            top_p=None,
            top_k=None,
            min_p=None,
            repetition_penalty=None,
            sequence_bias=None,
            suppress_tokens=None,
            eos=frozenset(eos),
            pad=int(tokenizer.pad_token_id if tokenizer.pad_token_id is not None else min(eos)),
        )

        def generate(
            contexts: Sequence[Sequence[int]], max_new: Sequence[int], seeds: Sequence[int]
        ) -> list[Generation]:
            import torch

            with torch.no_grad():
                return _sample(model, contexts, max_new, seeds, sampling)

        was_training = bool(getattr(model, "training", False))
        model.eval()
        try:
            return self._play(
                prompts,
                tokenizer=tokenizer,
                generate=self.generate or generate,
                total=max_total_tokens,
                chat=_Chat(tokenizer, {}),
                eos=set(eos),
                seeds=_Seeds(f"{seed}/model/{temperature}", 0),
            )
        finally:
            model.train(was_training)

    def _play(
        self,
        prompts: Sequence[Any],
        *,
        tokenizer: Any,
        generate: GenerateFn,
        total: int,
        chat: _Chat,
        eos: set[int],
        seeds: _Seeds,
    ) -> list[Rollout]:
        per_turn = min(self.max_turn_tokens or total, total)
        fmt = self._episode_format(tokenizer)
        rollouts = [self._open(p, seeds, fmt, chat) for p in prompts]
        try:
            for turn in range(self.caps.max_assistant_turns + 1):
                active = [i for i, r in enumerate(rollouts) if not r.episode.done]
                step = self.batch_size or max(1, len(active))
                for start in range(0, len(active), step):
                    chunk = [rollouts[i] for i in active[start : start + step]]
                    budgets = [min(per_turn, total - len(r.completion_ids)) for r in chunk]
                    drawn = [seeds.generation(turn, i) for i in active[start : start + step]]
                    outs = generate([r.context for r in chunk], budgets, drawn)
                    if len(outs) != len(chunk):
                        raise ValueError(f"generate returned {len(outs)} outputs for {len(chunk)}")
                    for r, out, budget in zip(chunk, outs, budgets, strict=True):
                        self._advance(r, out, budget, total, chat, eos)
            for r in rollouts:  # only a policy that never stops could leave one open
                r.episode.end(truncated=True)
        finally:
            for r in rollouts:
                r.episode.close()
        return rollouts

    def columns(self, rollouts: Sequence[Rollout]) -> dict[str, list[Any]]:
        """TRL's output dict for these rollouts (the class docstring lists the keys)."""
        out: dict[str, list[Any]] = {
            "prompt_ids": [r.prompt_ids for r in rollouts],
            "completion_ids": [r.completion_ids for r in rollouts],
            "logprobs": [r.logprobs for r in rollouts],
            "env_mask": [r.env_mask for r in rollouts],
            "prove_total": [float(r.breakdown.total) for r in rollouts],
            "prove_task_id": [r.task.id for r in rollouts],
            "prove_prompt_tasks": [r.prompt_tasks for r in rollouts],
            "prove_n_calls": [r.breakdown.n_calls for r in rollouts],
            "prove_user_turns": [r.user_turns for r in rollouts],
            "prove_assistant_turns": [r.episode.assistant_turns for r in rollouts],
            "prove_truncated": [r.episode.truncated for r in rollouts],
        }
        if self.settings.turn_rewards:  # logged by prove_reward as prove/worst_turn
            # the turn rewards sum to prove_total; what the sum hides is the weakest turn,
            # shown on the episode's scale (times the task's turns: a turn done right after
            # turns done right shows the maximum)
            out["prove_worst_turn"] = [
                min((c.reward for c in r.episode.turn_credits), default=0.0) * len(r.task.turns)
                for r in rollouts
            ]
        names = list(self.settings.reward_config.breakdown_keys)
        for r in rollouts:
            names += [n for n in r.breakdown.components if n not in names]
        for name in names:
            key = f"prove_{name}"
            if key not in out:
                out[key] = [r.breakdown.components.get(name) for r in rollouts]
        return out

    # ------------------------------------------------------------ internals
    def _episode_format(self, tokenizer: Any) -> ToolCallFormat:
        if self.format is None:
            return ChatTemplateFormat(tokenizer)
        if isinstance(self.format, str):
            return self.registry.get_format(self.format)
        return self.format

    def _open(self, prompt: Any, seeds: _Seeds, fmt: ToolCallFormat, chat: _Chat) -> Rollout:
        """A rollout of the prompt's task; of several tasks, the one the seed picks for this
        prompt at this call (the same for every rollout of a group, on any process)."""
        tasks = self.tasks_for(prompt)
        task = tasks[seeds.pick(prompt_key(prompt)) % len(tasks)]
        episode = Episode(
            task,
            format=fmt,
            caps=self.caps,
            reward=self.settings.reward_config,
            registry=self.registry,
            turn_rewards=self.settings.turn_rewards,
        )
        opening = list(episode.messages)
        text = chat.render(opening, _native_tools(episode), generation=True)
        ids = tuple(t.id for t in tasks)
        return Rollout(task, episode, chat.encode(text), messages=opening, prompt_tasks=ids)

    def _advance(
        self, r: Rollout, out: Generation, budget: int, total: int, chat: _Chat, eos: set[int]
    ) -> None:
        """Take one generated message: run it in the episode and insert what it answers."""
        ids = [int(t) for t in out.token_ids][:budget]
        logprobs = [float(x) for x in out.logprobs][: len(ids)]
        if len(logprobs) != len(ids):
            raise ValueError(f"a Generation has {len(ids)} tokens but {len(logprobs)} logprobs")
        r._extend(ids, logprobs)
        stopped = bool(ids) and ids[-1] in eos
        body = ids[:-1] if stopped else ids
        r.messages.append({"role": "assistant", "content": chat.decode(body)})
        if not stopped:  # the message ran out of tokens: nothing of it runs
            r.episode.end(truncated=True)
            return
        step = r.episode.step(chat.decode(ids, skip_special=True))
        if r.episode.done:
            return
        answer = [m for m in step.messages if m["role"] != "assistant"]
        inserted = chat.encode(self._inserted_text(r, answer, ids, chat))
        if len(r.completion_ids) + len(inserted) + max(1, self.settings.min_turn_tokens) > total:
            r.episode.end(truncated=True)  # no room for the answer and another turn
            return
        r.messages += answer
        r._extend(inserted, None)

    def _inserted_text(
        self, r: Rollout, answer: list[dict[str, Any]], ids: Sequence[int], chat: _Chat
    ) -> str:
        """The environment's text after the model's tokens, up to the next generation prompt.

        The template's rendering of the whole conversation past what the tokens already
        say, when it continues them; otherwise the template's text between two turns
        (what the OpenRLHF adapter inserts), without an end-of-turn the model wrote.
        """
        if r.exact:
            said = chat.decode(r.context)
            full = chat.render([*r.messages, *answer], _native_tools(r.episode), generation=True)
            if full.startswith(said):
                return full[len(said) :]
            r.exact = False
            if not self._warned:
                self._warned = True
                warnings.warn(
                    "the chat template renders an earlier turn differently once later ones follow "
                    f"(task {r.task.id!r}); environment text is rendered turn by turn from now on",
                    stacklevel=3,
                )
        text = chat.turns.after_assistant(answer, done=False)
        return chat.turns.strip_end_of_turn(text, list(ids))

    def _seeds(self, trainer: Any) -> _Seeds:
        """This call's seeds: from the seed, the process, the step, the mode and the call."""
        base = self.seed if self.seed is not None else int(getattr(trainer.args, "seed", 0))
        accelerator = getattr(trainer, "accelerator", None)
        state = getattr(trainer, "state", None)
        step = int(getattr(state, "global_step", 0) or 0)
        mode = "train" if getattr(getattr(trainer, "model", None), "training", False) else "eval"
        call = self._calls.get((step, mode), 0)
        self._calls[(step, mode)] = call + 1
        process = int(getattr(accelerator, "process_index", 0))
        return _Seeds(f"{base}/{step}/{mode}/{call}", process)


@dataclass(frozen=True)
class _Seeds:
    """The seeds of one call of a :class:`MultiTurnRollout`."""

    call: str
    process: int

    def generation(self, turn: int, index: int) -> int:
        """The seed of rollout ``index``'s generation at ``turn`` (differs between processes)."""
        return _hash(f"{self.call}/{self.process}/{turn}/{index}")

    def pick(self, key: str) -> int:
        """Which of a shared prompt's tasks to play (the same on every process)."""
        return _hash(f"{self.call}/pick/{key}")


def _hash(text: str) -> int:
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big") >> 1


def _native_tools(episode: Episode) -> list[dict[str, Any]] | None:
    """The tools the chat template lists: the episode's, unless its format lists them itself."""
    return episode.tools if isinstance(episode.format, ChatTemplateFormat) else None


def _eos_ids(trainer: Any, tokenizer: Any) -> list[int]:
    ids = getattr(trainer, "eos_token_ids", None) or [tokenizer.eos_token_id]
    return [int(i) for i in ids if i is not None]


# ------------------------------------------------------- async trainer (rollout_worker)
class AsyncMultiTurnWorker:
    """A ``rollout_worker`` for TRL's ``AsyncGRPOTrainer`` that plays every user turn of each task.

    TRL's own async worker plays one user turn (its tool loop cannot add a user message)
    and needs vLLM installed; this one plays each group with the engine of
    :class:`MultiTurnRollout` (every user turn, tool results and later user turns inserted
    as context, the PROVE reward) in a thread of the trainer's process, and hands the
    trainer TRL's own ``RolloutSample`` rows: the whole conversation as ``input_ids``,
    ``completion_mask`` 1 on the tokens the model sampled (with their sampling
    log-probabilities) and 0 on the prompt and on what the environment inserted, and one
    advantage per rollout, its PROVE total normalised within its group as TRL does
    (``(r - mean) / (std + 1e-8)``).

    Rows are played in order, cyclically, ``num_generations`` rollouts per row, each group
    tagged with the policy version current when it started (the trainer drops groups too
    stale, ``max_staleness``). Generation goes through ``generate``: by default (see
    :meth:`from_config`) :func:`vllm_sampler`, the vLLM server the trainer syncs its weights
    to. The rollouts of a group draw from seeds derived from ``seed`` and the group's number.

    >>> worker = AsyncMultiTurnWorker.from_config(rows, tokenizer, config, model=name)  # doctest: +SKIP
    >>> trainer = AsyncGRPOTrainer(name, args=config, train_dataset=rows,
    ...                            processing_class=tokenizer, rollout_worker=worker)  # doctest: +SKIP

    Each sample's ``metrics`` carry ``reward``, ``reward_std``, ``rewards/prove`` and
    ``prove/<component>`` (NaN where undefined), ``prove/n_calls`` and ``prove/user_turns``,
    which the trainer averages into its logs.

    Args:
        rows: The dataset rows (:func:`trl_rows`, ``prove-gym synth``'s ``trl.jsonl``) or tasks.
        tokenizer: The trained model's tokenizer; its chat template renders every turn.
        generate: The policy (:data:`GenerateFn`).
        num_generations: Rollouts per group (the trainer's ``num_generations``).
        max_total_tokens: Cap on a rollout's completion, model and environment tokens
            (the trainer's ``max_completion_length``).
        max_turn_tokens, settings, format, registry: As for :class:`MultiTurnRollout`.
        eos_token_ids: Ids that end a message (default: the tokenizer's end-of-sequence).
        chat_template_kwargs: Extra arguments of the chat template.
        seed: Seed of the sampling.
        queue_maxsize: Samples held for the trainer at most (0: no bound).

    Attributes:
        rollout_buffer: The queue of ``RolloutSample`` the trainer drains.
        metrics_queue: Worker metrics the trainer logs (``rollout/group_s``).
        groups: Groups played so far.
    """

    def __init__(
        self,
        rows: Iterable[Mapping[str, Any] | Task],
        tokenizer: Any,
        *,
        generate: GenerateFn,
        num_generations: int,
        max_total_tokens: int,
        max_turn_tokens: int | None = None,
        settings: AdapterSettings | None = None,
        format: ToolCallFormat | str | None = None,
        registry: Registry | None = None,
        eos_token_ids: Sequence[int] | None = None,
        chat_template_kwargs: Mapping[str, Any] | None = None,
        seed: int = 0,
        queue_maxsize: int = 0,
    ) -> None:
        if num_generations < 1:
            raise ValueError(f"num_generations must be at least 1, got {num_generations}")
        played: list[Mapping[str, Any]] = [
            trl_rows([r], registry=registry)[0] if isinstance(r, Task) else r for r in rows
        ]
        if not played:
            raise ValueError("no rows to play")
        self.rollout = MultiTurnRollout(
            played,
            settings=settings,
            format=format,
            max_total_tokens=max_total_tokens,
            max_turn_tokens=max_turn_tokens,
            seed=seed,
            generate=generate,
            registry=registry,
        )
        self.prompts = [r["prompt"] for r in played]
        self.tokenizer = tokenizer
        self.generate = generate
        self.num_generations = num_generations
        self.max_total_tokens = max_total_tokens
        self.seed = seed
        self.eos = {int(i) for i in (eos_token_ids or _eos_ids(None, tokenizer))}
        self.chat = _Chat(tokenizer, chat_template_kwargs or {})
        self.rollout_buffer: queue.Queue[Any] = queue.Queue(maxsize=queue_maxsize)
        self.metrics_queue: queue.Queue[dict[str, Any]] = queue.Queue(maxsize=4096)
        self.groups = 0
        self._version = 0
        self._heartbeat = time.time()
        self._error: BaseException | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @classmethod
    def from_config(
        cls,
        rows: Iterable[Mapping[str, Any] | Task],
        tokenizer: Any,
        args: Any,
        *,
        model: str,
        generate: GenerateFn | None = None,
        **kwargs: Any,
    ) -> AsyncMultiTurnWorker:
        """A worker with an ``AsyncGRPOConfig``'s settings: its ``num_generations``,
        ``max_completion_length``, ``seed``, ``queue_maxsize`` and ``chat_template_kwargs``,
        and by default :func:`vllm_sampler` on its ``vllm_server_base_url`` with its sampling
        settings. ``model`` is the name the vLLM server serves (what the trainer was given)."""
        template_kwargs = args.chat_template_kwargs
        if isinstance(template_kwargs, str):
            template_kwargs = json.loads(template_kwargs)
        if generate is None:
            generate = vllm_sampler(
                args.vllm_server_base_url,
                model,
                temperature=args.temperature,
                top_p=args.top_p,
                top_k=args.top_k,
                min_p=args.min_p,
                repetition_penalty=args.repetition_penalty,
                timeout=args.request_timeout,
            )
        kwargs.setdefault("seed", args.seed)
        kwargs.setdefault("queue_maxsize", args.queue_maxsize)
        return cls(
            rows,
            tokenizer,
            generate=generate,
            num_generations=args.num_generations,
            max_total_tokens=args.max_completion_length,
            chat_template_kwargs=template_kwargs,
            **kwargs,
        )

    # ------------------------------------------------- RolloutWorkerProtocol
    def start(self) -> None:
        """Start playing groups in a background thread (the trainer calls it once)."""
        if self._thread is not None:
            return
        self._stop.clear()
        self._heartbeat = time.time()
        self._thread = threading.Thread(target=self._run, name="prove-rollout", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop after the group being played (waits up to a minute for it)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=60)
            self._thread = None

    def update_model_version(self, model_version: int) -> None:
        self._version = int(model_version)

    def check_health(self, stale_after_s: float) -> None:
        """Raise if the worker failed, or played nothing for ``stale_after_s`` seconds."""
        if self._error is not None:
            raise RuntimeError("the multi-turn rollout worker failed") from self._error
        age = time.time() - self._heartbeat
        if self._thread is not None and age > stale_after_s:
            raise RuntimeError(f"the multi-turn rollout worker is stale: {age:.0f}s")

    # ------------------------------------------------------------- play
    def play_group(self, index: int) -> list[Any]:
        """Play group ``index`` (row ``index`` modulo the rows) and return its ``RolloutSample``s."""
        import numpy as np
        from trl.experimental.async_grpo.async_rollout_worker import RolloutSample

        version = self._version
        prompt = self.prompts[index % len(self.prompts)]

        def generate(
            contexts: Sequence[Sequence[int]], budgets: Sequence[int], seeds: Sequence[int]
        ) -> Sequence[Generation]:
            self._heartbeat = time.time()
            return self.generate(contexts, budgets, seeds)

        rollouts = self.rollout._play(
            [prompt] * self.num_generations,
            tokenizer=self.tokenizer,
            generate=generate,
            total=self.max_total_tokens,
            chat=self.chat,
            eos=self.eos,
            seeds=_Seeds(f"{self.seed}/async/{index}", 0),
        )
        totals = np.array([float(r.breakdown.total) for r in rollouts])
        std = float(totals.std())
        advantages = (totals - totals.mean()) / (std + 1e-8)
        names = list(self.rollout.settings.reward_config.breakdown_keys)
        samples = []
        for r, advantage in zip(rollouts, advantages, strict=True):
            if not any(r.env_mask):
                continue  # nothing the model wrote: no loss to take
            metrics = {
                "reward": float(r.breakdown.total),
                "reward_std": std,
                "rewards/prove": float(r.breakdown.total),
                "prove/n_calls": float(r.breakdown.n_calls),
                "prove/user_turns": float(r.user_turns),
            }
            for name in [*names, *(n for n in r.breakdown.components if n not in names)]:
                value = r.breakdown.components.get(name)
                metrics[f"prove/{name}"] = math.nan if value is None else float(value)
            n = len(r.prompt_ids)
            samples.append(
                RolloutSample(
                    prompt=list(r.messages[:2]),  # the episode's opening: system, first user
                    completion=list(r.messages[2:]),
                    input_ids=np.asarray(r.prompt_ids + r.completion_ids, dtype=np.int64),
                    completion_mask=np.asarray([0] * n + r.env_mask, dtype=np.int64),
                    old_log_probs=np.asarray([0.0] * n + r.logprobs, dtype=np.float32),
                    advantage=float(advantage),
                    model_version=version,
                    group_id=index,
                    metrics=metrics,
                )
            )
        self.rollout.last = rollouts
        return samples

    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                started = time.monotonic()
                samples = self.play_group(self.groups)
                for sample in samples:
                    sample.enqueued_at = time.time()
                    while not self._stop.is_set():
                        try:
                            self.rollout_buffer.put(sample, timeout=0.1)
                            break
                        except queue.Full:
                            self._heartbeat = time.time()  # waiting on the trainer, not hung
                self.groups += 1
                self._heartbeat = time.time()
                with contextlib.suppress(queue.Full):
                    self.metrics_queue.put_nowait({"rollout/group_s": time.monotonic() - started})
        except BaseException as error:  # reported to the trainer by check_health
            self._error = error


def vllm_sampler(
    base_url: str,
    model: str,
    *,
    temperature: float = 1.0,
    top_p: float = 1.0,
    top_k: int = 0,
    min_p: float | None = None,
    repetition_penalty: float = 1.0,
    timeout: float = 120.0,
    max_workers: int = 64,
) -> GenerateFn:
    """A :data:`GenerateFn` on a vLLM server's ``/v1/completions``, token ids in and out.

    The request TRL's own async worker sends (the prompt as token ids, ``return_token_ids``,
    the sampled tokens' log-probabilities), one per context, in parallel, each with its own
    ``seed``. A request that fails to connect is tried three times.

    Args:
        base_url: The server, e.g. ``http://localhost:8000`` (``AsyncGRPOConfig.vllm_server_base_url``).
        model: The name the server serves the model under.
        temperature, top_p, top_k, min_p, repetition_penalty: vLLM's sampling parameters.
        timeout: Seconds one request may take.
        max_workers: Requests in flight at most.
    """
    url = base_url.rstrip("/") + "/v1/completions"

    def one(context: Sequence[int], max_new: int, seed: int) -> Generation:
        if max_new <= 0:
            return Generation([], [])
        payload: dict[str, Any] = {
            "model": model,
            "prompt": [int(t) for t in context],
            "max_tokens": int(max_new),
            "temperature": temperature,
            "top_p": top_p,
            "top_k": top_k,
            "repetition_penalty": repetition_penalty,
            "n": 1,
            "return_token_ids": True,
            "logprobs": 0,
            "seed": int(seed),
        }
        if min_p is not None:
            payload["min_p"] = min_p
        request = urllib.request.Request(
            url, data=json.dumps(payload).encode(), headers={"Content-Type": "application/json"}
        )
        for attempt in range(3):
            try:
                with urllib.request.urlopen(request, timeout=timeout) as response:
                    choice = json.load(response)["choices"][0]
                break
            except urllib.error.URLError as error:
                if isinstance(error, urllib.error.HTTPError) or attempt == 2:
                    raise
                time.sleep(2**attempt)
        ids = [int(t) for t in choice["token_ids"]]
        return Generation(ids, [float(x) for x in choice["logprobs"]["token_logprobs"]])

    def generate(
        contexts: Sequence[Sequence[int]], max_new_tokens: Sequence[int], seeds: Sequence[int]
    ) -> list[Generation]:
        if not contexts:
            return []
        with ThreadPoolExecutor(max_workers=min(max_workers, len(contexts))) as pool:
            return list(pool.map(one, contexts, max_new_tokens, seeds))

    return generate


# ------------------------------------------------------------------- sampler
_SAMPLER_KEYS = frozenset(
    {
        "max_new_tokens",
        "do_sample",
        "pad_token_id",
        "bos_token_id",
        "eos_token_id",
        "temperature",
        "top_p",
        "top_k",
        "min_p",
        "repetition_penalty",
        "sequence_bias",
        "suppress_tokens",
        "cache_implementation",
        "use_cache",
    }
)
"""``generation_kwargs`` keys :func:`trainer_sampler` honours (the rest raise)."""


def trainer_sampler(trainer: Any) -> GenerateFn:
    """The trainer's own model as a :data:`GenerateFn`, sampling as its generation settings say.

    Contexts are left-padded and decoded together with a KV cache, one token at a time;
    each token is drawn from the distribution TRL's generation would use (the trainer's
    ``temperature``, ``top_p``, ``top_k``, ``min_p``, ``repetition_penalty`` and the
    ``generation_kwargs`` ``sequence_bias`` / ``suppress_tokens``), and its log-probability
    under that distribution is kept from the same forward pass. Each context draws from its
    own ``torch.Generator`` seeded with its seed, so the trainer's random state is untouched,
    a context's tokens do not depend on the rest of the batch, and the same seeds give the
    same tokens on the same device. The model is unwrapped as TRL's own generation does
    (``unwrap_model_for_generation``: DeepSpeed ZeRO-3 gathering, gradient checkpointing off).

    Raises:
        ValueError: The trainer generates with vLLM (pass ``generate=`` a vLLM policy), or
            its ``generation_kwargs`` set something this sampler does not apply.
    """
    if getattr(trainer, "use_vllm", False):
        raise ValueError(
            "trainer_sampler runs the trainer's transformers model; with use_vllm=True pass "
            "MultiTurnRollout(generate=...) a policy that calls vLLM"
        )
    args = trainer.args
    kwargs = dict(getattr(trainer, "generation_kwargs", None) or {})
    kwargs.update(getattr(args, "generation_kwargs", None) or {})
    unknown = sorted(set(kwargs) - _SAMPLER_KEYS)
    if unknown:
        raise ValueError(
            f"generation_kwargs {unknown} are not applied by the multi-turn sampler (it applies "
            f"{sorted(_SAMPLER_KEYS)}); drop them or pass MultiTurnRollout(generate=...)"
        )
    tokenizer = getattr(trainer.processing_class, "tokenizer", trainer.processing_class)
    eos = set(_eos_ids(trainer, tokenizer))
    pad = kwargs.get("pad_token_id", tokenizer.pad_token_id)
    temperature = kwargs.get("temperature", getattr(args, "temperature", None))
    temperature = 1.0 if temperature is None else float(temperature)
    sampling = _Sampling(
        do_sample=bool(kwargs.get("do_sample", True)) and temperature > 0,  # 0: greedy
        temperature=temperature,
        top_p=kwargs.get("top_p", getattr(args, "top_p", None)),
        top_k=kwargs.get("top_k", getattr(args, "top_k", None)),
        min_p=kwargs.get("min_p", getattr(args, "min_p", None)),
        repetition_penalty=kwargs.get(
            "repetition_penalty", getattr(args, "repetition_penalty", None)
        ),
        sequence_bias=kwargs.get("sequence_bias"),
        suppress_tokens=kwargs.get("suppress_tokens"),
        eos=frozenset(eos),
        pad=int(pad if pad is not None else min(eos)),
    )

    def generate(
        contexts: Sequence[Sequence[int]], max_new_tokens: Sequence[int], seeds: Sequence[int]
    ) -> list[Generation]:
        import torch
        from trl.models import unwrap_model_for_generation

        with (
            unwrap_model_for_generation(
                trainer.model_wrapped,
                trainer.accelerator,
                gather_deepspeed3_params=getattr(args, "ds3_gather_for_generation", True),
                gradient_checkpointing_kwargs=getattr(args, "gradient_checkpointing_kwargs", None),
            ) as model,
            torch.no_grad(),
        ):
            return _sample(model, contexts, max_new_tokens, seeds, sampling)

    return generate


@dataclass(frozen=True)
class _Sampling:
    """The sampling distribution of :func:`trainer_sampler`, in transformers' processor order."""

    do_sample: bool
    temperature: float
    top_p: float | None
    top_k: int | None
    min_p: float | None
    repetition_penalty: float | None
    sequence_bias: Any
    suppress_tokens: Any
    eos: frozenset[int]
    pad: int

    def processors(self, device: Any) -> Any:
        from transformers.generation.logits_process import (
            LogitsProcessorList,
            MinPLogitsWarper,
            RepetitionPenaltyLogitsProcessor,
            SequenceBiasLogitsProcessor,
            SuppressTokensLogitsProcessor,
            TemperatureLogitsWarper,
            TopKLogitsWarper,
            TopPLogitsWarper,
        )

        out = LogitsProcessorList()
        if self.sequence_bias:
            out.append(SequenceBiasLogitsProcessor(sequence_bias=self.sequence_bias))
        if self.repetition_penalty is not None and self.repetition_penalty != 1.0:
            out.append(RepetitionPenaltyLogitsProcessor(penalty=self.repetition_penalty))
        if self.suppress_tokens:
            out.append(SuppressTokensLogitsProcessor(self.suppress_tokens, device=device))
        if self.do_sample:
            if self.temperature != 1.0:
                out.append(TemperatureLogitsWarper(self.temperature))
            if self.top_k:
                out.append(TopKLogitsWarper(top_k=int(self.top_k)))
            if self.top_p is not None and self.top_p < 1.0:
                out.append(TopPLogitsWarper(top_p=float(self.top_p)))
            if self.min_p is not None:
                out.append(MinPLogitsWarper(min_p=float(self.min_p)))
        return out


def _sample(
    model: Any,
    contexts: Sequence[Sequence[int]],
    max_new_tokens: Sequence[int],
    seeds: Sequence[int],
    sampling: _Sampling,
) -> list[Generation]:
    """Decode a batch of contexts token by token, keeping each token's sampling log-probability.

    Every context draws from its own ``torch.Generator``; the KV cache is passed back under
    the name the model's ``forward`` takes (``cache`` from transformers 5.2x on).
    """
    import torch

    device = next(model.parameters()).device
    params = inspect.signature(model.forward).parameters
    cache_name = "cache" if "cache" in params else "past_key_values"
    width = max(len(c) for c in contexts)
    ids = torch.tensor(
        [[sampling.pad] * (width - len(c)) + list(c) for c in contexts], device=device
    )
    mask = torch.tensor([[0] * (width - len(c)) + [1] * len(c) for c in contexts], device=device)
    positions = (mask.cumsum(-1) - 1).clamp(min=0)
    processors = sampling.processors(device)
    generators = [torch.Generator(device=device).manual_seed(int(s)) for s in seeds]
    tokens: list[list[int]] = [[] for _ in contexts]
    logprobs: list[list[float]] = [[] for _ in contexts]
    open_rows = [b for b, n in enumerate(max_new_tokens) if n > 0]
    out = model(
        input_ids=ids, attention_mask=mask, position_ids=positions, use_cache=True, logits_to_keep=1
    )
    for _ in range(max(max_new_tokens, default=0)):
        if not open_rows:
            break
        scores = processors(ids, out.logits[:, -1, :].float())
        logp = torch.log_softmax(scores, dim=-1)
        probs = logp.exp()
        feed = [sampling.pad] * len(contexts)
        for b in open_rows:
            if sampling.do_sample:
                token = int(torch.multinomial(probs[b], 1, generator=generators[b]).item())
            else:
                token = int(logp[b].argmax().item())
            tokens[b].append(token)
            logprobs[b].append(float(logp[b, token].item()))
            feed[b] = token
        open_rows = [
            b
            for b in open_rows
            if tokens[b][-1] not in sampling.eos and len(tokens[b]) < max_new_tokens[b]
        ]
        if not open_rows:
            break
        step = torch.tensor(feed, device=device)[:, None]
        ids = torch.cat([ids, step], dim=1)
        mask = torch.cat([mask, torch.ones_like(step)], dim=1)
        positions = torch.cat([positions, positions[:, -1:] + 1], dim=1)
        cache = out.get(cache_name) if hasattr(out, "get") else None
        if cache is not None:
            out = model(
                input_ids=step,
                attention_mask=mask,
                position_ids=positions[:, -1:],
                use_cache=True,
                **{cache_name: cache},
            )
        else:  # a model that keeps no cache: read the whole sequence again
            out = model(
                input_ids=ids, attention_mask=mask, position_ids=positions, logits_to_keep=1
            )
    return [Generation(t, lp) for t, lp in zip(tokens, logprobs, strict=True)]
