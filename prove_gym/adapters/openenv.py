"""prove_gym episodes over the network: an OpenEnv environment server and its client.

`OpenEnv <https://github.com/meta-pytorch/OpenEnv>`_ (``pip install 'prove-gym[openenv]'``)
is one environment contract, ``reset(seed, episode_id, ...)``, ``step(action)`` and
``state``, served over HTTP and WebSocket sessions and consumed by TRL, SkyRL, ART and
others. This module fills it with :class:`~prove_gym.episode.Episode`, the one engine every
prove_gym consumer translates to, on OpenEnv's own classes:

- :class:`ProveEnvironment` is an OpenEnv ``Environment``. ``reset`` starts an episode of a
  task named by split and index, by id, or given as task JSON; ``step`` takes the
  assistant's raw text (read by the episode's tool-call format), structured calls, or
  OpenEnv's MCP-style ``call_tool``/``list_tools`` actions; ``state`` is the episode id,
  the user turn, the calls made and the live state hash.
- :class:`TaskCatalog` is the task API: every installed server's shipped tasks and any
  ``prove-gym synth`` output folder, as splits listable and resettable by index.
- :func:`create_openenv_app` is OpenEnv's own FastAPI app (``create_fastapi_app``) over
  them, one isolated episode per WebSocket session, with prove_gym's Host/Origin checks and
  bearer token (:mod:`prove_gym.http_guard`) and ``GET /tasks`` routes;
  ``prove-gym serve --openenv`` runs it.
- :class:`ProveEnvClient` is OpenEnv's ``EnvClient`` for it.

>>> app = create_openenv_app()                                       # doctest: +SKIP
>>> with ProveEnvClient(base_url="http://127.0.0.1:8000").sync() as env:  # doctest: +SKIP
...     result = env.reset(split="calendar", index=0)
...     result = env.step(ProveAction(text="<tool_call>...</tool_call>"))

Nothing here imports the MCP SDK of ``prove-gym[mcp]``: OpenEnv's own dependencies pin an
``mcp`` outside that extra's range, and this module runs beside them.
"""

from __future__ import annotations

import asyncio
import functools
import random
import threading
import uuid
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path
from typing import Any, Literal

from fastapi import FastAPI, HTTPException, Query, Request
from fastapi.responses import JSONResponse
from openenv.core.client_types import StepResult
from openenv.core.env_client import EnvClient
from openenv.core.env_server import (
    Action,
    ConcurrencyConfig,
    Environment,
    Observation,
    State,
    create_fastapi_app,
)
from openenv.core.env_server.mcp_types import CallToolAction, ListToolsAction
from openenv.core.env_server.types import EnvironmentMetadata
from pydantic import Field

from prove_gym.episode import Episode, EpisodeCaps
from prove_gym.http_guard import BearerTokenGuard, HostOriginGuard, host_origin_rules
from prove_gym.registry import Registry, get_registry
from prove_gym.reward import RewardConfig
from prove_gym.task import Task, TaskError, load_tasks

__all__ = [
    "DEFAULT_MAX_SESSIONS",
    "DEFAULT_TTL",
    "MAX_ACTION_CHARS",
    "RESET_KEYS",
    "IdleWebSocketTimeout",
    "ProveAction",
    "ProveEnvClient",
    "ProveEnvironment",
    "ProveObservation",
    "ProveState",
    "RequestError",
    "TaskCatalog",
    "create_openenv_app",
]

DEFAULT_MAX_SESSIONS = 256
"""Concurrent WebSocket sessions of one server, as for the MCP server (``--max-sessions``)."""
DEFAULT_TTL = 1800.0
"""Seconds before an idle session and its episode are dropped, as for the MCP server."""
MAX_ACTION_CHARS = 200_000
"""The longest assistant text one step reads; a longer one is refused, the episode intact."""
RESET_KEYS = ("split", "index", "task_id", "task", "format")
"""What ``reset`` takes besides OpenEnv's ``seed`` and ``episode_id``; any other key is an
error (a misspelt key would otherwise play a task the caller did not ask for)."""


class RequestError(ValueError):
    """A request the environment refuses (an unknown split, a step before a reset, ...): the
    message says why, and the session's episode is left as it was. Over a WebSocket OpenEnv
    sends it as an ``EXECUTION_ERROR``; over stateless HTTP it is a 400."""


# ---------------------------------------------------------------------------- wire types
class ProveAction(Action):
    """One assistant move.

    ``type="message"`` (the default) is one assistant message: ``text``, its raw text,
    read by the episode's tool-call format (``<tool_call>`` blocks for ``hermes``), or
    ``tool_calls``, its calls as structured ``{"name", "arguments"}`` objects or OpenAI
    ``tool_calls`` entries (``text`` then is the message's content). A message without
    calls answers the current user turn. ``type="call_tool"`` runs one call (``tool_name``,
    ``arguments``) within the current assistant turn, as OpenEnv's ``CallToolAction``
    does; ``type="list_tools"`` returns the offered tools and changes nothing.
    """

    type: Literal["message", "call_tool", "list_tools"] = "message"
    text: str = Field(default="", description="The assistant's raw text")
    tool_calls: list[dict[str, Any]] | None = Field(
        default=None, description="The message's calls, structured (instead of in the text)"
    )
    tool_name: str | None = Field(default=None, description="call_tool: the tool to call")
    arguments: dict[str, Any] = Field(
        default_factory=dict, description="call_tool: the call's arguments"
    )


class ProveObservation(Observation):
    """What the model reads next, and (``done``) the episode's reward.

    ``reward`` is 0.0 until the episode ends and then the PROVE total, whose full
    breakdown is ``reward_breakdown`` (:meth:`prove_gym.RewardBreakdown.to_dict`).
    """

    text: str = Field(default="", description="The observation rendered by the format")
    messages: list[dict[str, Any]] = Field(
        default_factory=list, description="The same as OpenAI-style messages"
    )
    calls: list[dict[str, Any]] = Field(
        default_factory=list, description="This step's calls with their live results"
    )
    tools: list[dict[str, Any]] | None = Field(
        default=None, description="The offered tools (after reset and list_tools)"
    )
    instructions: str | None = Field(
        default=None, description="After reset: the system text without the tools"
    )
    task_id: str | None = None
    split: str | None = None
    turn: int = Field(default=0, description="Index of the user turn being answered")
    terminated: bool = False
    truncated: bool = False
    caps_hit: list[str] = Field(default_factory=list)
    reward_breakdown: dict[str, Any] | None = None


class ProveState(State):
    """The session's episode: ``episode_id``, ``step_count`` and what it has done so far."""

    task_id: str | None = None
    split: str | None = None
    servers: list[str] = Field(default_factory=list)
    turn: int = 0
    assistant_turns: int = 0
    calls_made: int = 0
    state_hash: str | None = None
    terminated: bool = False
    truncated: bool = False
    reward: float | None = None


# ----------------------------------------------------------------------------- task API
class TaskCatalog:
    """The tasks a server offers, by split, listable and playable by index.

    Every server in ``servers`` (default: every installed one) is a split of its shipped
    tasks, named after it (``"calendar"``). Each ``prove-gym synth`` output folder in
    ``sources`` adds its ``train.jsonl`` and ``test.jsonl`` as ``"<folder>:train"`` and
    ``"<folder>:test"``; a ``.jsonl`` file adds one split named after its stem. A plugin
    installed later appears here with no code of its own.

    Raises:
        ValueError: A source that is neither, or two splits of the same name.
    """

    def __init__(
        self,
        sources: Sequence[str | Path] = (),
        *,
        servers: Sequence[str] | None = None,
        registry: Registry | None = None,
    ) -> None:
        self.registry = registry or get_registry()
        names = self.registry.server_names if servers is None else list(servers)
        for name in names:
            self.registry.get_server(name)  # an unknown name fails here, listing the known
        self._servers = list(dict.fromkeys(names))
        self._files: dict[str, list[Task]] = {}
        for source in sources:
            for name, path in _split_files(Path(source).expanduser()):
                if name in self._files or name in self._servers:
                    raise ValueError(f"two splits are named {name!r}: rename one source")
                self._files[name] = load_tasks(path)
        self._by_id: dict[str, Task] | None = None
        self._lock = threading.Lock()

    def splits(self) -> list[str]:
        """Every split's name: the servers', then the files'."""
        return [*self._servers, *self._files]

    def tasks(self, split: str) -> list[Task]:
        """The tasks of ``split``, in order (shipped tasks sorted by id)."""
        if split in self._files:
            return self._files[split]
        if split in self._servers:
            return self.registry.tasks(split)
        raise RequestError(f"no split {_shown(split)}; the splits are {', '.join(self.splits())}")

    def task(self, split: str, index: int) -> Task:
        """Task ``index`` of ``split`` (:class:`RequestError` when out of range)."""
        tasks = self.tasks(split)
        if not isinstance(index, int) or isinstance(index, bool):
            raise RequestError(f"index must be an integer, got {_shown(index)}")
        if not 0 <= index < len(tasks):
            raise RequestError(f"split {split!r} has {len(tasks)} tasks: index {index} is not one")
        return tasks[index]

    def find(self, task_id: str, split: str | None = None) -> Task:
        """The task with id ``task_id``, in ``split`` or any split (the first found)."""
        if split is not None:
            for task in self.tasks(split):
                if task.id == task_id:
                    return task
            raise RequestError(f"no task {_shown(task_id)} in split {split!r}")
        with self._lock:
            if self._by_id is None:
                by_id: dict[str, Task] = {}
                for name in self.splits():
                    for task in self.tasks(name):
                        by_id.setdefault(task.id, task)
                self._by_id = by_id
        found = self._by_id.get(task_id) if isinstance(task_id, str) else None
        if found is None:
            raise RequestError(f"no task {_shown(task_id)} in any split")
        return found


def _split_files(path: Path) -> list[tuple[str, Path]]:
    if path.is_dir():
        found = [
            (f"{path.name}:{stem}", path / f"{stem}.jsonl")
            for stem in ("train", "test")
            if (path / f"{stem}.jsonl").is_file()
        ]
        if not found:
            raise ValueError(
                f"{path}: no train.jsonl or test.jsonl (a `prove-gym synth` output folder has them)"
            )
        return found
    if path.suffix == ".jsonl" and path.is_file():
        return [(path.stem, path)]
    raise ValueError(f"{path}: not a `prove-gym synth` output folder nor a .jsonl task file")


def _shown(value: Any) -> str:
    """A value a client sent, for an error message: its repr, at most 60 characters."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


# -------------------------------------------------------------------------- environment
class ProveEnvironment(Environment[ProveAction, ProveObservation, ProveState]):
    """An OpenEnv environment whose episodes are :class:`~prove_gym.episode.Episode` s.

    Building one is cheap (no state is sampled until ``reset``): OpenEnv builds one per
    WebSocket session and one per stateless HTTP request. Each holds its own episode, so
    sessions never see each other's writes. Every session's ``reset`` and ``step`` run on
    one worker thread (``REQUIRES_SINGLE_THREAD_EXECUTOR``): a step is tens of
    microseconds of SQLite under the GIL, and one thread instead of one per session keeps
    a thousand sessions cheap.

    Args:
        catalog: Where tasks are found (default: every installed server's shipped tasks).
        format: The tool-call format reading ``text`` (a registered name or a format).
        caps: The episode's caps (default :class:`~prove_gym.EpisodeCaps`).
        reward: The reward configuration (default: the paper's).
        max_action_chars: The longest ``text`` one step reads.
    """

    SUPPORTS_CONCURRENT_SESSIONS = True
    REQUIRES_SINGLE_THREAD_EXECUTOR = True

    def __init__(
        self,
        catalog: TaskCatalog | None = None,
        *,
        format: str = "hermes",
        caps: EpisodeCaps | None = None,
        reward: RewardConfig | None = None,
        max_action_chars: int = MAX_ACTION_CHARS,
    ) -> None:
        super().__init__()
        self._catalog = catalog
        self.format = format
        self.caps = caps
        self.reward_config = reward
        self.max_action_chars = max_action_chars
        self.episode: Episode | None = None
        self.split: str | None = None
        self._episode_id: str | None = None
        self._steps = 0

    @property
    def catalog(self) -> TaskCatalog:
        if self._catalog is None:
            self._catalog = TaskCatalog()
        return self._catalog

    # ----------------------------------------------------------------- reset
    def reset(
        self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any
    ) -> ProveObservation:
        """Start an episode: of task ``index`` of ``split``; of the task ``task_id`` (in
        ``split`` when given); of ``task`` (its JSON object or text); or, with ``split``
        and ``seed`` only, of a task of ``split`` drawn with ``random.Random(seed)``.
        ``format`` names another tool-call format for this episode.

        Raises:
            RequestError: An unknown key, split, index or id, or a malformed task: the
                session's current episode, if any, is left as it was.
        """
        unknown = sorted(set(kwargs) - set(RESET_KEYS))
        if unknown:
            raise RequestError(
                f"unknown reset key {', '.join(_shown(k) for k in unknown[:5])}; reset takes "
                f"seed, episode_id, {', '.join(RESET_KEYS)}"
            )
        if episode_id is not None and not isinstance(episode_id, str):
            raise RequestError(f"episode_id is a string, got {_shown(episode_id)}")
        task, split = self._choose(seed, kwargs)
        format = kwargs.get("format") or self.format
        if not isinstance(format, str):
            raise RequestError(f"format names a registered format, got {_shown(format)}")
        try:
            episode = Episode(
                task,
                format=format,
                caps=self.caps,
                reward=self.reward_config,
                registry=self.catalog.registry,
            )
        except KeyError as exc:  # an unknown server or format: the message lists the known
            raise RequestError(f"task {_shown(task.id)}: {exc.args[0]}") from None
        except TaskError as exc:
            raise RequestError(str(exc)) from None
        if self.episode is not None:
            self.episode.close()
        self.episode, self.split, self._steps = episode, split, 0
        self._episode_id = episode_id or str(uuid.uuid4())
        return ProveObservation(
            text=episode.observation,
            messages=[dict(m) for m in episode.messages],
            tools=episode.tools,
            instructions=episode.instructions,
            task_id=task.id,
            split=split,
            reward=None,
        )

    def _choose(self, seed: int | None, options: dict[str, Any]) -> tuple[Task, str | None]:
        split = options.get("split")
        if split is not None and not isinstance(split, str):
            raise RequestError(f"split names a split, got {_shown(split)}")
        if options.get("task") is not None:
            try:
                return Task.coerce(options["task"]), split
            except TaskError as exc:
                raise RequestError(str(exc)) from None
        if options.get("task_id") is not None:
            return self.catalog.find(options["task_id"], split), split
        if split is None:
            raise RequestError(
                "reset needs a task: split and index, task_id, task (its JSON), or split and "
                f"seed; the splits are {', '.join(self.catalog.splits())}"
            )
        if options.get("index") is not None:
            return self.catalog.task(split, options["index"]), split
        tasks = self.catalog.tasks(split)
        if not tasks:
            raise RequestError(f"split {split!r} has no tasks")
        return tasks[random.Random(seed).randrange(len(tasks))], split

    # ------------------------------------------------------------------ step
    def step(
        self, action: ProveAction | Action, timeout_s: float | None = None, **kwargs: Any
    ) -> ProveObservation:
        """Play one action (see :class:`ProveAction`) on the session's episode.

        Bad model output (an unparseable call, an unknown tool, wrong arguments) is an
        observation, as in the Gymnasium env. Raises :class:`RequestError` before a reset,
        after the episode's end, for a text over ``max_action_chars`` and for an action
        whose fields do not fit its type.
        """
        episode = self.episode
        if episode is None:
            raise RequestError("no episode yet: reset first (with a split and index, or a task)")
        action = _as_prove_action(action)
        if action.type == "call_tool" and not action.tool_name:
            raise RequestError("a call_tool action names its tool in tool_name")
        if action.type != "call_tool" and (action.tool_name or action.arguments):
            raise RequestError("tool_name and arguments belong to a call_tool action")
        if action.type == "list_tools":
            return self._observation(text="", tools=episode.tools)
        if episode.done:
            raise RequestError("the episode is over: reset to start another")
        if len(action.text) > self.max_action_chars:
            raise RequestError(
                f"the action's text has {len(action.text)} characters; this server reads at "
                f"most {self.max_action_chars} per step (nothing was run)"
            )
        self._steps += 1
        if action.type == "call_tool":
            record = episode.call(action.tool_name, action.arguments)
            return self._observation(
                text=record.result.to_text(),
                messages=episode.messages[-2:],
                calls=[record.to_dict()],
            )
        move: Any = action.text
        if action.tool_calls is not None:
            move = {"role": "assistant", "content": action.text, "tool_calls": action.tool_calls}
        out = episode.step(move)
        return self._observation(
            text=out.observation,
            messages=list(out.messages),
            calls=[r.to_dict() for r in out.records],
        )

    def _observation(self, *, text: str, **fields: Any) -> ProveObservation:
        episode = self.episode
        assert episode is not None
        breakdown = episode.breakdown
        return ProveObservation(
            text=text,
            task_id=episode.task.id,
            split=self.split,
            turn=episode.user_turn,
            terminated=episode.terminated,
            truncated=episode.truncated,
            caps_hit=list(episode.caps_hit),
            done=episode.done,
            reward=float(breakdown.total) if breakdown is not None else 0.0,
            reward_breakdown=breakdown.to_dict() if breakdown is not None else None,
            **fields,
        )

    # ----------------------------------------------------------------- state
    @property
    def state(self) -> ProveState:
        episode = self.episode
        if episode is None:
            return ProveState(episode_id=self._episode_id, step_count=self._steps)
        breakdown = episode.breakdown
        return ProveState(
            episode_id=self._episode_id,
            step_count=self._steps,
            task_id=episode.task.id,
            split=self.split,
            servers=list(episode.task.servers),
            turn=episode.user_turn,
            assistant_turns=episode.assistant_turns,
            calls_made=episode.calls_made,
            state_hash=episode.state_hash(),
            terminated=episode.terminated,
            truncated=episode.truncated,
            reward=float(breakdown.total) if breakdown is not None else None,
        )

    def get_metadata(self) -> EnvironmentMetadata:
        return EnvironmentMetadata(
            name="prove_gym",
            description=(
                "Stateful tool servers as multi-turn episodes with the programmatic PROVE "
                f"reward; splits: {', '.join(self.catalog.splits())}"
            ),
            version=metadata.version("prove-gym"),
        )

    def close(self) -> None:
        if self.episode is not None:
            self.episode.close()
            self.episode = None


def _as_prove_action(action: Any) -> ProveAction:
    """OpenEnv's own MCP actions, made in-process, as the :class:`ProveAction` they mean."""
    if isinstance(action, ProveAction):
        return action
    if isinstance(action, CallToolAction):
        return ProveAction(type="call_tool", tool_name=action.tool_name, arguments=action.arguments)
    if isinstance(action, ListToolsAction):
        return ProveAction(type="list_tools")
    raise RequestError(f"not an action of this environment: {type(action).__name__}")


# ------------------------------------------------------------------------------- the app
def create_openenv_app(
    catalog: TaskCatalog | None = None,
    *,
    format: str = "hermes",
    caps: EpisodeCaps | None = None,
    reward: RewardConfig | None = None,
    max_sessions: int = DEFAULT_MAX_SESSIONS,
    ttl: float | None = DEFAULT_TTL,
    host: str = "127.0.0.1",
    allowed_hosts: Sequence[str] = (),
    allowed_origins: Sequence[str] = (),
    auth_token: str | None = None,
) -> FastAPI:
    """OpenEnv's FastAPI app (``create_fastapi_app``) serving :class:`ProveEnvironment`.

    Each WebSocket session (``/ws``, what :class:`ProveEnvClient` opens) holds its own
    episode; at most ``max_sessions`` are open at once (OpenEnv answers a newcomer
    ``CAPACITY_REACHED``) and one idle for ``ttl`` seconds is dropped. OpenEnv's
    stateless ``POST /reset`` and ``/step`` build a fresh environment for each request.
    ``GET /tasks`` lists the catalog's splits, ``GET /tasks/{split}`` a split's task ids
    (``offset``, ``limit``), ``GET /tasks/{split}/{index}`` one task as JSON.

    Args:
        catalog: The splits (default: every installed server's shipped tasks).
        format, caps, reward: Every episode's (see :class:`ProveEnvironment`).
        max_sessions: Concurrent sessions at most.
        ttl: Idle seconds before a session is dropped; ``None`` keeps them.
        host, allowed_hosts, allowed_origins: The Host/Origin rules of
            :func:`~prove_gym.http_guard.host_origin_rules`, on every route and WebSocket.
        auth_token: Require ``Authorization: Bearer <token>`` on every request.
    """
    catalog = catalog if catalog is not None else TaskCatalog()
    factory = functools.partial(ProveEnvironment, catalog, format=format, caps=caps, reward=reward)
    config = ConcurrencyConfig(max_concurrent_envs=max_sessions, session_timeout=ttl or None)
    app = create_fastapi_app(factory, ProveAction, ProveObservation, concurrency_config=config)
    _add_task_routes(app, catalog)

    async def refused(request: Request, exc: Exception) -> JSONResponse:
        return JSONResponse({"detail": str(exc)}, status_code=400)

    app.add_exception_handler(RequestError, refused)
    if ttl:
        app.add_middleware(IdleWebSocketTimeout, ttl=ttl)
    if auth_token is not None:
        app.add_middleware(BearerTokenGuard, token=auth_token)
    app.add_middleware(  # added last, so it runs first: before authentication
        HostOriginGuard, rules=host_origin_rules(host, allowed_hosts, allowed_origins)
    )
    app.state.catalog = catalog
    return app


class IdleWebSocketTimeout:
    """ASGI middleware: closes a WebSocket that sent nothing for ``ttl`` seconds (code 1001,
    "idle"), which ends its OpenEnv session and drops its episode.

    OpenEnv's own idle reaper (``ConcurrencyConfig.session_timeout``) skips sessions whose
    WebSocket is still connected, so a client that connects and goes quiet would hold a
    session slot forever; this gives WebSocket sessions the MCP server's idle TTL.
    """

    def __init__(self, app: Any, ttl: float) -> None:
        self.app = app
        self.ttl = ttl

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "websocket":
            await self.app(scope, receive, send)
            return
        accepted = False

        async def watched_send(message: dict[str, Any]) -> None:
            nonlocal accepted
            accepted = accepted or message["type"] == "websocket.accept"
            await send(message)

        async def watched_receive() -> dict[str, Any]:
            if not accepted:
                return dict(await receive())
            try:
                async with asyncio.timeout(self.ttl):  # a timer handle, no task per message
                    return dict(await receive())
            except TimeoutError:
                await send({"type": "websocket.close", "code": 1001, "reason": "idle"})
                return {"type": "websocket.disconnect", "code": 1001}

        await self.app(scope, watched_receive, watched_send)


def _add_task_routes(app: FastAPI, catalog: TaskCatalog) -> None:
    def tasks_of(split: str) -> list[Task]:
        try:
            return catalog.tasks(split)
        except ValueError as exc:
            raise HTTPException(status_code=404, detail=str(exc)) from None

    @app.get("/tasks", tags=["Tasks"], summary="The splits and their sizes")
    def list_splits() -> dict[str, Any]:
        return {"splits": [{"name": s, "size": len(catalog.tasks(s))} for s in catalog.splits()]}

    @app.get("/tasks/{split}", tags=["Tasks"], summary="A split's task ids, in index order")
    def list_tasks(
        split: str,
        offset: int = Query(0, ge=0),
        limit: int = Query(1000, ge=1, le=10_000),
    ) -> dict[str, Any]:
        tasks = tasks_of(split)
        ids = [t.id for t in tasks[offset : offset + limit]]
        return {"split": split, "size": len(tasks), "offset": offset, "ids": ids}

    @app.get("/tasks/{split}/{index}", tags=["Tasks"], summary="One task as JSON")
    def get_task(split: str, index: int) -> dict[str, Any]:
        tasks = tasks_of(split)
        if not 0 <= index < len(tasks):
            raise HTTPException(status_code=404, detail=f"split {split!r} has {len(tasks)} tasks")
        return tasks[index].model_dump(mode="json")


# ------------------------------------------------------------------------------ client
class ProveEnvClient(EnvClient[ProveAction, ProveObservation, ProveState]):
    """OpenEnv's WebSocket client for the prove_gym server: one session, one episode.

    ``step`` takes a :class:`ProveAction`, or the assistant's text as a plain ``str``.
    For a server that requires a token pass
    ``headers={"Authorization": "Bearer <token>"}``.
    """

    def _step_payload(self, action: ProveAction) -> dict[str, Any]:
        if isinstance(action, str):  # the assistant's text alone, for convenience
            action = ProveAction(text=action)
        return action.model_dump(exclude={"metadata"})

    def _parse_result(self, payload: dict[str, Any]) -> StepResult[ProveObservation]:
        observation = ProveObservation(
            **payload.get("observation", {}),
            reward=payload.get("reward"),
            done=payload.get("done", False),
        )
        return StepResult(
            observation=observation, reward=payload.get("reward"), done=observation.done
        )

    def _parse_state(self, payload: dict[str, Any]) -> ProveState:
        return ProveState(**payload)
