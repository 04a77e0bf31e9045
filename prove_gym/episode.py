"""One episode, owned in one place: every consumer is a translation over :class:`Episode`.

An :class:`Episode` holds a task's live state (a :class:`~prove_gym.workspace.Workspace`),
the tool-call format, the turn caps, the transcript (OpenAI-style messages and
the calls with their live results), the user-turn state machine and, at the
end, the reward. The Gymnasium env (:class:`~prove_gym.env.env.ProveEnv`), the
OpenRLHF agent, the TRL environment, ``prove-gym eval`` and ``prove-gym train`` all
drive this object; none of them executes a model's calls or advances a user
turn itself, so a behaviour added here reaches every one of them.

>>> import prove_gym
>>> task = prove_gym.get_registry().tasks("calendar")[0]
>>> episode = Episode(task)
>>> step = episode.step(episode.format.render_calls(
...     {"name": s.name, "arguments": s.arguments} for s in task.turns[0].steps))
>>> step.done, [r.result.ok for r in step.records]
(False, [True])
>>> episode.step("Done.").breakdown.total == episode.breakdown.max_total
True
>>> episode.close()
"""

from __future__ import annotations

import copy
import dataclasses
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from prove_gym.formats import (
    MAX_CALL_DEPTH,
    ParsedAction,
    ParsedCall,
    ToolCallFormat,
    call_from_object,
    too_deep,
)
from prove_gym.registry import Registry, get_registry
from prove_gym.reward import RewardBreakdown, RewardConfig, score
from prove_gym.reward.turns import TurnCredit, turn_credit
from prove_gym.server.errors import ErrorKind
from prove_gym.server.result import ToolResult
from prove_gym.task import Task
from prove_gym.workspace import CallRecord, Workspace

__all__ = [
    "DEFAULT_INSTRUCTIONS",
    "Action",
    "Episode",
    "EpisodeCaps",
    "StepOutcome",
    "episode_instructions",
    "opening_messages",
]

DEFAULT_INSTRUCTIONS = (
    "You are a helpful assistant that completes the user's requests by calling tools. "
    "Use only the tools provided, with identifiers taken from the user or from earlier tool "
    "results. If a required value is missing, ask the user for it instead of guessing. If no "
    "tool can do what is asked, say so. When the request is done, answer without a tool call."
)

Action = str | Mapping[str, Any] | Sequence[Mapping[str, Any]]
"""What an assistant turn may be: its raw text (read by the episode's format), one call
``{"name", "arguments"}``, a list of them, or an OpenAI-style assistant message
``{"role": "assistant", "content": ..., "tool_calls": [...]}`` (native tool calling)."""


def episode_instructions(
    task: Task, registry: Registry | None = None, instructions: str | None = None
) -> str:
    """The system-prompt text of an episode, without the tools.

    The format lists the offered tools after it; clients that pass tools
    natively (an OpenAI-compatible endpoint, a chat template's ``tools=``) use
    it as the system message as is.

    Args:
        task: The task being played.
        registry: Where its servers are looked up (the process-wide one by default).
        instructions: Replaces :data:`DEFAULT_INSTRUCTIONS`.
    """
    registry = registry or get_registry()
    parts = [instructions or DEFAULT_INSTRUCTIONS]
    for name in task.servers:
        server = registry.get_server(name)
        parts.append(server.instructions)
        played = task.env_version(name)  # the rules of every version up to the one played
        parts += [v.instructions for n, v in server.env_versions.items() if n <= played]
        acting = server.principal(played)
        if acting is not None and name in task.principals:
            parts.append(acting.prompt.replace("{id}", task.principals[name]))
    parts = [p for p in parts if p]
    if task.system:
        parts.append(task.system)
    return "\n\n".join(parts)


def opening_messages(
    task: Task,
    format: ToolCallFormat,
    tools: Sequence[Mapping[str, Any]],
    instructions: str,
) -> list[dict[str, Any]]:
    """An episode's first messages, ``[system, first user]``, without building its state.

    Exactly what :class:`Episode` starts with, for exporters that write prompts
    (tools from :func:`~prove_gym.workspace.offered_openai_tools`).
    """
    return [
        {"role": "system", "content": format.system_message(instructions, tools)},
        {"role": "user", "content": task.turns[0].user},
    ]


_SYSTEM_CACHE: dict[tuple[Any, ...], str] = {}
_TOOLS_CACHE: dict[tuple[Any, ...], tuple[dict[str, Any], ...]] = {}
_CACHE_MAX = 4096


def _offer_key(task: Task, workspace: Workspace) -> tuple[Any, ...]:
    """What the offered tool definitions depend on: the registry that defines them, the
    task's tool names or servers (:func:`~prove_gym.workspace.offer_key`) and its schema
    overrides."""
    return (*workspace.offer_key, _overrides_key(task.schema_overrides))


# Overrides seen, by the tools they override: a copy of each, and its canonical JSON.
_OVERRIDES: dict[tuple[str, ...], list[tuple[dict[str, Any], str]]] = {}


def _overrides_key(overrides: dict[str, dict[str, Any]]) -> str:
    """The overrides as canonical JSON, without encoding them again on every reset.

    Encoding a task's stripped schemas is most of a reset's cost; comparing them with a
    copy kept from the first time is a tenth of it. A copy, not the task's own dicts: an
    override edited in place is then a new key.
    """
    if not overrides:
        return ""
    names = tuple(sorted(overrides))
    seen = _OVERRIDES.setdefault(names, [])
    for kept, key in seen:
        if kept == overrides:
            return key
    key = json.dumps(overrides, sort_keys=True, default=str)
    if len(seen) >= 8 or len(_OVERRIDES) >= _CACHE_MAX:
        _OVERRIDES.clear()  # bounded; a trainer's task mix refills it at once
        seen = _OVERRIDES.setdefault(names, [])
    seen.append((copy.deepcopy(overrides), key))
    return key


def _bounded_put(cache: dict[tuple[Any, ...], Any], key: tuple[Any, ...], value: Any) -> None:
    if len(cache) >= _CACHE_MAX:
        cache.clear()  # bounded; a trainer's task mix refills it at once
    cache[key] = value


def _cached_tools(workspace: Workspace, offer: tuple[Any, ...]) -> list[dict[str, Any]]:
    """The offered tools as OpenAI definitions, built once per ``offer`` key.

    Each episode gets its own list and its own copies of the dicts down to each
    ``parameters`` object (what a caller might edit); deeper schema parts are shared.
    """
    tools = _TOOLS_CACHE.get(offer)
    if tools is None:
        tools = tuple(workspace.openai_tools())
        _bounded_put(_TOOLS_CACHE, offer, tools)
    return [
        {**t, "function": {**t["function"], "parameters": dict(t["function"]["parameters"])}}
        for t in tools
    ]


def _cached_opening(
    task: Task,
    format: ToolCallFormat,
    offer: tuple[Any, ...],
    tools: Sequence[Mapping[str, Any]],
    instructions: str,
) -> list[dict[str, Any]]:
    """:func:`opening_messages`, the system message rendered once per tool set and instructions.

    Rendering every tool's schema is most of a reset; the text depends only on the format,
    the instructions and the offered tools (``offer``: see :func:`_offer_key`).
    """
    key = (format, instructions, *offer)
    try:
        system = _SYSTEM_CACHE.get(key)
    except TypeError:  # a plugin format that cannot be hashed: render every time
        return opening_messages(task, format, tools, instructions)
    if system is None:
        system = format.system_message(instructions, tools)
        _bounded_put(_SYSTEM_CACHE, key, system)
    return [
        {"role": "system", "content": system},
        {"role": "user", "content": task.turns[0].user},
    ]


@dataclass(frozen=True)
class EpisodeCaps:
    """Where an episode is cut short (truncated), whatever the policy does.

    Attributes:
        max_assistant_turns: Assistant messages per episode (paper: 10).
        max_user_turns: User turns played (paper: 5); later turns of a longer task are not shown.
        max_calls_per_message: Tool calls run from one assistant message; the first past it
            is answered ``precondition_failed`` (not run) and the rest are dropped.
        max_calls_per_episode: Tool calls run in the whole episode; a message with calls past
            it gets the same answer and truncates the episode.
    """

    max_assistant_turns: int = 10
    max_user_turns: int = 5
    max_calls_per_message: int = 32
    max_calls_per_episode: int = 128

    def __post_init__(self) -> None:
        for name in (
            "max_assistant_turns",
            "max_user_turns",
            "max_calls_per_message",
            "max_calls_per_episode",
        ):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"EpisodeCaps.{name} must be an integer >= 1, got {value!r}")


@dataclass(frozen=True)
class StepOutcome:
    """What one assistant turn led to.

    Attributes:
        observation: The text the model reads next, rendered by the format: the tool
            results, the next user turn, or what closes the conversation.
        messages: The same as OpenAI-style messages: the assistant's message, then
            its ``tool`` results or the next ``user`` turn.
        records: The calls of this turn with their live results.
        terminated: The last user turn was answered without a call.
        truncated: A cap ended the episode first.
        breakdown: The reward, once the episode is over (``None`` before).
        caps_hit: The call caps this message ran into (``"max_calls_per_message"``,
            ``"max_calls_per_episode"``); empty when every call ran.
        skipped_calls: Calls of this message that were not run because of them.
        turn_credit: With ``Episode(turn_rewards=True)``, what the user turn this step closed
            is paid, and why (:mod:`prove_gym.reward.turns`); ``None`` otherwise.
    """

    observation: str
    messages: tuple[dict[str, Any], ...]
    records: tuple[CallRecord, ...]
    terminated: bool
    truncated: bool
    breakdown: RewardBreakdown | None
    caps_hit: tuple[str, ...] = ()
    skipped_calls: int = 0
    turn_credit: TurnCredit | None = None

    @property
    def done(self) -> bool:
        return self.terminated or self.truncated

    @property
    def turn_reward(self) -> float | None:
        """The reward of the user turn this step closed (``Episode(turn_rewards=True)``): the
        change of the turn potential, so an episode's turn rewards sum to its reward; ``None``
        when no turn closed, or turn rewards are off."""
        return self.turn_credit.reward if self.turn_credit is not None else None

    @property
    def reward(self) -> float:
        """The sequence-level reward: the total on the last step, 0.0 before."""
        return float(self.breakdown.total) if self.breakdown is not None else 0.0


class Episode:
    """A single episode of a task against its own isolated state.

    Args:
        task: The task to play (its seed and size select the initial state).
        format: A :class:`~prove_gym.formats.ToolCallFormat` or the name of a
            registered one (default ``"hermes"``).
        caps: Turn caps (default :class:`EpisodeCaps`: the paper's 10 and 5).
        reward: The reward configuration (default: ``RewardConfig()``, the validated default;
            ``RewardConfig.preset("paper")`` is the paper's reward exactly).
        instructions: Replaces :data:`DEFAULT_INSTRUCTIONS` in the system message.
        registry: Where servers and formats are looked up.
        turn_rewards: Also pay each user turn a reward when it closes, the change of a
            potential that scores the conversation so far against the gold so far
            (:mod:`prove_gym.reward.turns`); the turn rewards sum to the episode's reward,
            which is the same either way.

    Attributes:
        task, format, caps, reward_config, registry: As given.
        workspace: The live sessions of the task's servers.
        tools: The offered tools as OpenAI function definitions.
        instructions: The system text without the tools (for native tool passing).
        messages: The conversation so far, OpenAI style, starting with the system
            message (tools listed by the format) and the first user turn.
        observation: The first observation: the opening prompt rendered by the format.
        trajectory: Every call so far with its live result and user-turn index.
        user_turn: Index of the user turn being answered.
        assistant_turns: Assistant messages so far.
        calls_made: Calls admitted so far (run, or answered as unparseable), for the caps.
        terminated, truncated: How the episode ended (both ``False`` while it runs).
        breakdown: The reward once the episode is over.
        turn_credits: With ``turn_rewards``, what each user turn closed so far was paid; once
            the episode is over their rewards sum to ``breakdown.total``.
    """

    def __init__(
        self,
        task: Task,
        *,
        format: ToolCallFormat | str = "hermes",
        caps: EpisodeCaps | None = None,
        reward: RewardConfig | None = None,
        instructions: str | None = None,
        registry: Registry | None = None,
        turn_rewards: bool = False,
    ) -> None:
        self.registry = registry or get_registry()
        self.turn_rewards = turn_rewards
        self.turn_credits: list[TurnCredit] = []
        self.task = task
        self.format = self.registry.get_format(format) if isinstance(format, str) else format
        self.caps = caps or EpisodeCaps()
        self.reward_config = reward or RewardConfig()
        self.workspace = Workspace(task, self.registry)
        offer = _offer_key(task, self.workspace)
        self.tools = _cached_tools(self.workspace, offer)
        self.instructions = episode_instructions(task, self.registry, instructions)
        opening = _cached_opening(task, self.format, offer, self.tools, self.instructions)
        self.messages: list[dict[str, Any]] = opening
        self.observation = self.format.prompt(opening, self.tools)
        self.trajectory: list[CallRecord] = []
        self.user_turn = 0
        self.assistant_turns = 0
        self.calls_made = 0
        self._message_calls = 0  # calls of the current assistant message (Episode.call)
        self.terminated = False
        self.truncated = False
        self.breakdown: RewardBreakdown | None = None
        self.caps_hit: list[str] = []  # every call cap this episode ran into, in order of first hit

    # ------------------------------------------------------------- queries
    @property
    def done(self) -> bool:
        return self.terminated or self.truncated

    def state_hash(self) -> str:
        """Canonical hash of the episode's current state (every server it touches)."""
        return self.workspace.state_hash()

    # ------------------------------------------------------------- actions
    def step(self, action: Action) -> StepOutcome:
        """Play one assistant turn: run its calls, or move to the next user turn.

        A message with calls gets their results back. A message without calls
        answers the current user turn: the next one is shown, or the episode
        ends (terminated after the last turn, truncated at the user-turn cap).
        The assistant-turn cap truncates. The reward is computed when it ends.

        Calls past ``caps.max_calls_per_message`` or ``caps.max_calls_per_episode`` are
        not run: the first of them is answered ``precondition_failed`` saying which cap it
        hit, the rest are dropped (``StepOutcome.caps_hit``, ``skipped_calls``); a message
        that runs into the episode's cap truncates the episode.

        Raises:
            RuntimeError: The episode is already over.
        """
        if self.done:
            raise RuntimeError("the episode is over: start a new one")
        parsed = self._parse(action)
        self.assistant_turns += 1
        self._message_calls = 0
        admitted, refusal, caps_hit = self._admit(parsed.calls)
        self.caps_hit += [c for c in caps_hit if c not in self.caps_hit]
        records = self._run(admitted)
        shown: tuple[ParsedCall, ...] = admitted
        if refusal is not None:
            records.append(refusal)
            self.trajectory.append(refusal)
            shown = (*admitted, parsed.calls[len(admitted)])
        assistant = self._assistant_message(parsed.content, shown, records)
        answer: list[dict[str, Any]] = []
        closing = self.user_turn  # the turn this message answers
        if records:
            answer = [
                _tool_message(tc["id"], rec)
                for tc, rec in zip(assistant["tool_calls"], records, strict=True)
            ]
        else:
            self.user_turn += 1
            if self.user_turn < len(self.task.turns) and self.user_turn < self.caps.max_user_turns:
                answer = [{"role": "user", "content": self.task.turns[self.user_turn].user}]
            elif self.user_turn >= len(self.task.turns):
                self.terminated = True
            else:
                self.truncated = True
        if "max_calls_per_episode" in caps_hit:
            self.truncated = True
        if not self.done and self.assistant_turns >= self.caps.max_assistant_turns:
            self.truncated = True
        self.messages += [assistant, *answer]
        if self.done:
            self._finish()
        credit = None
        if self.turn_rewards and (self.user_turn > closing or self.done):
            credit = self._close_turn(closing)
        return StepOutcome(
            observation=self.format.feedback(answer, self.tools),
            messages=(assistant, *answer),
            records=tuple(records),
            terminated=self.terminated,
            truncated=self.truncated,
            breakdown=self.breakdown,
            caps_hit=caps_hit,
            skipped_calls=len(parsed.calls) - len(admitted),
            turn_credit=credit,
        )

    def call(self, name: Any, arguments: Any) -> CallRecord:
        """Run one natively structured call within the current assistant turn.

        For trainers whose tool loop calls tools one by one (TRL's
        ``environment_factory``): the call joins the trajectory and the
        transcript like a call read from text, without ending the turn.

        Raises:
            RuntimeError: The episode is already over.
        """
        if self.done:
            raise RuntimeError("the episode is over: start a new one")
        parsed = (call_from_object({"name": name, "arguments": arguments}),)
        admitted, refusal, _ = self._admit(parsed)
        if refusal is not None:
            self.trajectory.append(refusal)
            record = refusal
        else:
            (record,) = self._run(admitted)
        assistant = self._assistant_message("", (ParsedCall(record.name, arguments),), [record])
        self.messages += [assistant, _tool_message(assistant["tool_calls"][0]["id"], record)]
        return record

    def end(self, *, truncated: bool = True) -> RewardBreakdown:
        """End the episode now and return its reward (the existing one if it is over).

        For consumers that stop an episode from outside: a token budget that
        ran out, a policy that failed (``truncated=True``), or a trainer whose
        rollout ended when the model stopped calling tools (``truncated=False``).
        """
        if not self.done:
            self.terminated, self.truncated = not truncated, truncated
            self._finish()
            if self.turn_rewards:
                self._close_turn(self.user_turn)
        assert self.breakdown is not None
        return self.breakdown

    def fork(self) -> Episode:
        """An independent copy of this episode as it stands, in microseconds.

        The copy has the same task, format, caps and reward, the same messages, calls and
        counters so far, and its own copy of every server's state (:meth:`Session.fork
        <prove_gym.server.session.Session.fork>`): a trainer can branch a group of rollouts
        from one shared prefix, or a search expand a node, and no copy ever sees another's
        writes. A fork of a fork works the same way. Messages and call records are shared
        between the copies (nothing changes them once written); the lists that hold them are
        not. Close each copy when done with it.
        """
        twin = object.__new__(Episode)  # copy.copy, without its generic protocol's cost
        twin.__dict__.update(self.__dict__)
        twin.workspace = self.workspace.fork()
        twin.messages = list(self.messages)
        twin.trajectory = list(self.trajectory)
        twin.caps_hit = list(self.caps_hit)
        twin.turn_credits = list(self.turn_credits)
        return twin

    def close(self) -> None:
        """Release the sessions; the transcript and the reward stay readable."""
        self.workspace.close()

    def __enter__(self) -> Episode:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------ internals
    def _parse(self, action: Action) -> ParsedAction:
        if isinstance(action, str):
            return self.format.parse(action)
        if isinstance(action, Mapping):
            if action.get("role") == "assistant":
                calls = action.get("tool_calls") or ()
                if not isinstance(calls, Sequence) or isinstance(calls, str):
                    calls = (calls,)
                content = action.get("content")
                return ParsedAction(
                    content if isinstance(content, str) else "",
                    tuple(call_from_object(c, _raw(c)) for c in calls),
                )
            action = [action]
        if isinstance(action, Sequence):
            return ParsedAction("", tuple(call_from_object(a, _raw(a)) for a in action))
        return ParsedAction(str(action), ())

    def _admit(
        self, calls: Sequence[ParsedCall]
    ) -> tuple[tuple[ParsedCall, ...], CallRecord | None, tuple[str, ...]]:
        """The calls the caps let run, the answer to the first refused one, the caps hit."""
        caps = self.caps
        per_message = caps.max_calls_per_message - self._message_calls
        per_episode = caps.max_calls_per_episode - self.calls_made
        allowed = max(0, min(per_message, per_episode))
        if len(calls) <= allowed:
            self._message_calls += len(calls)
            self.calls_made += len(calls)
            return tuple(calls), None, ()
        hit = tuple(
            name
            for name, left in (
                ("max_calls_per_message", per_message),
                ("max_calls_per_episode", per_episode),
            )
            if left <= allowed  # the cap(s) that stopped the calls
        )
        admitted = tuple(calls[:allowed])
        self._message_calls += allowed
        self.calls_made += allowed
        later = len(calls) - allowed - 1
        rest = f" and the {later} after it" if later else ""
        if per_episode <= per_message:
            why = (
                f"this episode runs at most {caps.max_calls_per_episode} tool calls and all of "
                f"them have been made; this call{rest} did not run, and the episode ends here."
            )
        else:
            why = (
                f"at most {caps.max_calls_per_message} tool calls run per message and this one "
                f"holds {self._message_calls + len(calls) - allowed}; this call{rest} did not "
                f"run. Send at most {caps.max_calls_per_message} calls at once."
            )
        first = calls[allowed]
        refusal = CallRecord(
            first.name,
            first.arguments,
            ToolResult.failure(ErrorKind.PRECONDITION_FAILED, f"Not run: {why}"),
            self.user_turn,
            None,
        )
        return admitted, refusal, hit

    def _run(self, calls: Sequence[ParsedCall]) -> list[CallRecord]:
        """Execute calls in order on the live state: the one place a model's calls run."""
        records = []
        for call in calls:
            if call.error is not None:
                failure = ToolResult.failure(ErrorKind.PARSE_ERROR, call.error)
                record = CallRecord(call.name, call.arguments, failure, self.user_turn, None)
            else:
                record = self.workspace.call(call.name, call.arguments, turn=self.user_turn)
            records.append(record)
        self.trajectory += records
        return records

    def _assistant_message(
        self, content: str, calls: Sequence[ParsedCall], records: Sequence[CallRecord]
    ) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": content}
        if calls:
            first = len(self.trajectory) - len(records)
            message["tool_calls"] = [
                {
                    "id": f"call_{first + i}",
                    "type": "function",
                    "function": {
                        "name": c.name,
                        "arguments": c.raw if c.error else _raw(c.arguments),
                    },
                }
                for i, c in enumerate(calls)
            ]
        return message

    def _close_turn(self, index: int) -> TurnCredit | None:
        """Pay turn ``index`` as it closes: its potential less the previous turn's. The
        potential of the turn that ends the episode is the episode's reward, so the turn
        rewards sum to it (a turn past the task's last has no gold)."""
        if index >= len(self.task.turns) or len(self.turn_credits) > index:
            return None
        credit = turn_credit(
            self.task,
            index,
            self.trajectory,
            self.workspace.state_hash(),
            self.turn_credits[-1].potential if self.turn_credits else 0.0,
            self.reward_config,
            self.registry,
            episode=self.breakdown if self.done else None,
        )
        self.turn_credits.append(credit)
        return credit

    def _finish(self) -> None:
        breakdown = score(
            self.task,
            self.trajectory,
            config=self.reward_config,
            final_state_hash=self.workspace.state_hash(),
            registry=self.registry,
        )
        self.breakdown = dataclasses.replace(breakdown, caps_hit=tuple(self.caps_hit))


def _tool_message(call_id: str, record: CallRecord) -> dict[str, Any]:
    return {
        "role": "tool",
        "tool_call_id": call_id,
        "name": record.name,
        "content": record.result.to_text(),
    }


def _raw(value: Any) -> str:
    """JSON text of a structured value, whatever it holds (never raises)."""
    if too_deep(value, 2 * MAX_CALL_DEPTH):
        return '"(nested too deeply to show)"'
    try:
        return _RAW.encode(value)
    except (ValueError, RecursionError):
        return repr(value)[:10_000]


_RAW = json.JSONEncoder(ensure_ascii=False, default=str)
