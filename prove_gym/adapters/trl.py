"""TRL adapter: one ``environment_factory`` class per server, for ``GRPOTrainer``.

TRL 1.16's ``GRPOTrainer(environment_factory=cls)`` builds instances with no
arguments, exposes their public methods as tools (name, type hints and
Google-style docstring become the schema), calls ``reset(**row)`` before each
rollout and, when the class defines ``get_reward()``, pays that after the
rollout. :func:`environment_class` builds such a class from a server:

>>> Calendar = environment_class("calendar")          # doctest: +SKIP
>>> trainer = GRPOTrainer(model, args=config, train_dataset=rows,
...                       environment_factory=Calendar)  # doctest: +SKIP

- every visible tool of the server is a method with the tool's own
  description, argument descriptions and types; a call runs on the rollout's
  private session and returns what the env would show (the result JSON, or
  ``Error [kind]: ...``), so bad calls are observations, never exceptions;
- ``reset(**row)`` rebuilds the task's initial state from the row's ``task``
  (task JSON, what ``prove synth`` writes in ``trl.jsonl``), ``label``, or a
  task id found in ``PROVE_TASKS``: the G rollouts of a group share it;
- ``get_reward()`` is the PROVE reward of the calls made, with the final
  state, under the ``PROVE_REWARD*`` settings (:mod:`prove_gym.adapters.common`).

TRL's tool loop plays a single user turn (it cannot inject a second user
message), so a multi-turn task is played and scored on its first turn.
Tools are the server's, for every row: a task's distractor tools from other
servers and stripped enums are not shown (use :class:`~prove_gym.env.env.ProveEnv`
or the OpenRLHF adapter for those). Each rollout is an :class:`~prove_gym.episode.Episode`,
the same engine the env and the other adapters drive.
"""

from __future__ import annotations

import dataclasses
import enum
import inspect
import types
import typing
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, ClassVar, Literal

from prove_gym.adapters.common import AdapterSettings, resolve_task
from prove_gym.episode import Episode, episode_instructions
from prove_gym.registry import Registry, get_registry
from prove_gym.reward import RewardBreakdown, RewardConfig
from prove_gym.server.tool import ToolSpec
from prove_gym.task import Task
from prove_gym.workspace import CallRecord

__all__ = [
    "ProveToolEnvironment",
    "environment_class",
    "environment_factories",
    "first_turn",
    "prove_reward",
    "trl_rows",
]

_RESERVED = {"reset", "get_reward"}


def first_turn(task: Task) -> Task:
    """The task cut to its first user turn (its gold state is then rebuilt by the reward)."""
    if len(task.turns) == 1:
        return task
    meta = {**task.meta, "turns_played": 1, "turns_total": len(task.turns)}
    return task.model_copy(update={"turns": task.turns[:1], "final_state_hash": None, "meta": meta})


class ProveToolEnvironment:
    """Base of the classes :func:`environment_class` builds; one instance per rollout.

    Each rollout is an :class:`~prove_gym.episode.Episode` (the engine under the
    Gymnasium env too); every tool method is one :meth:`Episode.call
    <prove_gym.episode.Episode.call>`.

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
    environments: Sequence[ProveToolEnvironment],
    log_metric: Callable[[str, float], None] | None = None,
    **kwargs: Any,
) -> list[float | None]:
    """A TRL reward function paying each rollout's PROVE reward and logging its components.

    Use it with a class built with ``owns_reward=False`` (``reward_funcs=[prove_reward]``);
    each component's batch mean is logged as ``prove/<name>`` (undefined ones left out).
    """
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
    namespace: dict[str, Any] = {
        "__doc__": f"TRL environment of the {server!r} server: {srv.description}".strip(),
        "__module__": __name__,
        "server_name": server,
        "tool_names": tuple(wanted),
        "settings": settings,
        "registry": registry,
    }
    for name in wanted:
        namespace[name] = _tool_method(visible[name])
    if owns_reward:
        namespace["get_reward"] = _get_reward
    cls_name = "".join(p.capitalize() for p in server.split("_")) + "Environment"
    return types.new_class(
        cls_name, (ProveToolEnvironment,), exec_body=lambda ns: ns.update(namespace)
    )


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
    :func:`trl_rows` and ``prove synth``'s ``trl.jsonl`` write) selects its server's
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

    The same shape as ``prove synth``'s ``trl.jsonl``; with ``system`` the
    prompt starts with the episode's instructions (the tools are passed natively).
    """
    rows = []
    for task in tasks:
        prompt = [{"role": "user", "content": task.turns[0].user}]
        if system:
            prompt.insert(0, {"role": "system", "content": episode_instructions(task, registry)})
        rows.append({"prompt": prompt, "task": task.to_json(), "environment": task.server})
    return rows
