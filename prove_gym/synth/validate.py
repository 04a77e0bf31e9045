"""Validation of synthesized conversations: replay, credentials, near-duplicates.

- **Replay**: the task is serialised, read back, and its gold calls run on a
  freshly reset session, routed through the tools that JSON offers (as a
  :class:`~prove_gym.workspace.Workspace` routes them). Every result must equal
  the one recorded while synthesizing, and the final state must be the same;
  its hash becomes the task's ``final_state_hash``.
- **Credentials**: every value of a secret parameter (named like password, pin,
  passcode, token, secret, or an ``Entity`` kind containing "token"/"auth") must
  appear in a user turn up to the call's own turn or in the output of an earlier
  gold call.
- **Near-duplicates** (the paper's filter): a task's *call features* are one
  ``tool(key)`` token per argument of every step in the sampled chain (``tool()``
  for a call without arguments), the bigrams ``a>b`` of consecutive tool names,
  and one ``turn:<kind>`` token per clarify/abstain turn. A task whose Jaccard
  similarity to an earlier kept task of the same server is >= the threshold
  (0.70) is dropped: the same tools called the same way about other entities
  teach nothing new. ``dedup="values"`` puts the argument values into the tokens
  (``tool(key=value)``), the looser filter that keeps such tasks.
- **Text and gold agree**: every literal value of a gold call (what the user
  would have to say) appears in a user turn up to the call's own turn or in the
  output of an earlier gold call (a date-time also as the user says it, "5 pm on
  August 15, 2026": :mod:`prove_gym.synth.dates`), and no user turn carries template residue
  (an unfilled ``{slot}``, a ``(key: value)`` aside, ``None``, a doubled word).
"""

from __future__ import annotations

import itertools
import json
import re
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from datetime import date, datetime
from typing import Any

from prove_gym.registry import Registry
from prove_gym.server.base import Server
from prove_gym.server.result import ToolResult
from prove_gym.server.session import Session
from prove_gym.server.state import combine_hashes
from prove_gym.synth.chains import is_secret_kind, is_secret_param
from prove_gym.synth.dates import (
    iso_date,
    iso_datetime,
    iso_month,
    said_dates,
    said_datetimes,
    said_minutes,
    said_months,
)
from prove_gym.synth.render import DETERMINERS, NOUN_PHRASE_AFTER, literal_values
from prove_gym.task import GoldStep, Task
from prove_gym.workspace import offered_tools


class StateHasher:
    """Canonical state hashes without recomputing what cannot have changed.

    A session whose database bytes equal its template's is in the initial state, whose
    hash its template computes once (:meth:`~prove_gym.server.state.StateTemplate.canonical_hash`),
    when a hash is first asked for: a state none of whose candidates gets that far is never
    hashed. Only a state that a write changed is hashed again, from the template's parts.
    """

    def __init__(self) -> None:
        self._initial: dict[tuple[str, int, int], str] = {}

    def initial_hash(self, server: Server, seed: int, size: int | None) -> str:
        """The hash of the initial state of ``server`` sampled from (seed, size)."""
        size = server.default_size if size is None else size
        key = (server.name, seed, size)
        found = self._initial.get(key)
        if found is None:
            with server.session(seed, size) as fresh:
                found = self._initial[key] = fresh.state_hash()
        return found

    def session_hash(self, session: Session, snapshot: bytes | None = None) -> str:
        """The session's canonical state hash (same value as ``Session.state_hash()``)."""
        data = session.snapshot() if snapshot is None else snapshot
        if data == session.template.data:
            return session.template.canonical_hash(session.server.base.metadata)
        return session.state_hash()


def replay(
    task: Task,
    expected: Sequence[ToolResult],
    recorded: tuple[bytes, str],
    *,
    session: Session,
    registry: Registry,
    hasher: StateHasher,
) -> tuple[str | None, str | None]:
    """Replay a task's gold calls, read back from its JSON, on a freshly reset session.

    The calls are routed exactly as :class:`~prove_gym.workspace.Workspace` routes
    them (by the offered name, :func:`~prove_gym.workspace.offered_tools`). Gold
    calls only touch the primary server; a server that only lends distractor tools
    stays as it started, so it is not in the hash and its state is never sampled
    (:meth:`~prove_gym.workspace.Workspace.state_hash`).

    Args:
        task: The synthesized task.
        expected: The result of each gold step, in order, as recorded while synthesizing.
        recorded: ``(database bytes, state hash)`` of the primary server after synthesizing.
        session: A session of the task's primary server and initial state (reset here).
        registry: Where servers are looked up.
        hasher: The state-hash cache.

    Returns:
        ``(None, final_state_hash)`` when everything matches, else ``(reason, None)``;
        the hash equals ``Workspace(task).state_hash()`` after the gold calls.
    """
    rebuilt = Task.from_json(task.to_json())
    if rebuilt != task:
        return "json_roundtrip", None
    try:
        offered = offered_tools(rebuilt, registry)
    except (KeyError, ValueError):
        return "offered_tools", None
    session.reset()
    k = 0
    for turn in rebuilt.turns:
        for step in turn.steps:
            spec = offered.get(step.name)
            if spec is None or spec.server_name != rebuilt.step_server(step):
                return "gold_tool_not_offered", None
            result = session.call(spec.name, step.arguments)
            if k >= len(expected) or result.to_dict() != expected[k].to_dict():
                return "replay_result_mismatch", None
            k += 1
    if k != len(expected):
        return "replay_result_mismatch", None
    data, recorded_hash = recorded
    state = session.snapshot()
    if state != data and hasher.session_hash(session, state) != recorded_hash:
        return "replay_state_mismatch", None
    hashes = {rebuilt.server: recorded_hash}
    for name in rebuilt.servers:  # a server the task holds state on that no gold call wrote
        if name not in hashes:
            hashes[name] = hasher.initial_hash(
                registry.get_server(name), rebuilt.seed, rebuilt.size
            )
    return None, combine_hashes(hashes)


def _untraced(
    task: Task, results: Sequence[ToolResult], *, fold: bool
) -> Iterator[tuple[int, GoldStep, str, str]]:
    """``(turn index, step, parameter, value)`` for each literal value of a gold call that
    no user turn up to the call's own and no earlier gold call's output contains
    (ignoring case when ``fold``)."""

    def norm(text: str) -> str:
        return text.casefold() if fold else text

    said = ""
    said_times: set[datetime] = set()
    said_days: set[date] = set()
    said_monthly: set[tuple[int, int]] = set()
    said_spans: set[int] = set()
    outputs: list[str] = []
    k = 0
    for t, turn in enumerate(task.turns):
        said += "\n" + norm(turn.user)
        said_times |= said_datetimes(turn.user)
        said_days |= said_dates(turn.user)
        said_monthly |= said_months(turn.user)
        said_spans |= said_minutes(turn.user)
        for step in turn.steps:
            for name, value in step.arguments.items():
                for text in literal_values(value):
                    wanted = norm(text)
                    if wanted in said or (fold and wanted.replace("_", " ") in said):
                        continue
                    when = iso_datetime(text)
                    if when is not None and when in said_times:
                        continue  # "5 pm on August 15, 2026" states 2026-08-15T17:00
                    day, month = iso_date(text), iso_month(text)
                    if (day is not None and day in said_days) or (
                        month is not None and month in said_monthly
                    ):
                        continue  # "August 15, 2026" states 2026-08-15, "August 2026" 2026-08
                    if "minutes" in name and text.isdigit() and int(text) in said_spans:
                        continue  # "a day before" states minutes_before=1440
                    if not any(wanted in out for out in outputs):
                        yield t, step, name, text
            outputs.append(norm(results[k].to_text()))
            k += 1


def untraced_secrets(task: Task, results: Sequence[ToolResult], registry: Registry) -> list[str]:
    """Secret arguments of gold steps that no earlier user turn or tool output contains.

    Returns:
        ``"tool.param"`` for each offending argument (empty when all trace back).
    """
    bad: list[str] = []
    for _, step, name, _ in _untraced(task, results, fold=False):
        spec = registry.get_server(task.step_server(step)).tools[step.name]
        entity = spec.entity_params.get(name)
        if is_secret_param(name) or (entity and is_secret_kind(entity.name)):
            bad.append(f"{step.name}.{name}")
    return bad


# Template residue in a user turn (our own rendered text, bounded; never model input).
_RESIDUE: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("unfilled_slot", re.compile(r"\{[a-z_]+\}")),
    ("key_value_aside", re.compile(r"\([a-z][a-z ]{0,40}: ")),
    ("none_literal", re.compile(r"\b(?:None|null|NaN|undefined)\b")),
    # "that that" is English ("record that that contact declined"); "the the" is not
    ("doubled_word", re.compile(r"\b(?!that\b)([A-Za-z]{2,}) \1\b", re.IGNORECASE)),
    ("space_before_punctuation", re.compile(r"\w [,.;:!?](?:\s|$)")),
    ("double_space", re.compile(r"\S  +\S")),
    # "where is my the first order", "open the some position door"
    (
        "determiner_before_reference",
        re.compile(r"\b(?:the|an?|my|your|our|its|their|this) (?:the|an?|that|some|one of my) "),
    ),
)
# The references a turn makes to earlier results ("the same order", "the second channel
# from that list", "one of my events"): each must stand where a noun phrase reads.
_REFERENCE = re.compile(
    r"\b(?:the same|the new|one of my|the (?:first|second|third|fourth|fifth)) ", re.IGNORECASE
)
# What may end the text before a clause's opening verb: a connector, an opener, a stop.
_CLAUSE_OPENERS = frozenset({"and", "then", "now", "next", "also", "please"})


def _reference_out_of_place(text: str) -> bool:
    """A reference after a word it cannot follow: "add flight fl_1 to trip the new
    itinerary", "sell 10 the same instrument", "show me project one of my projects"."""
    for match in _REFERENCE.finditer(text):
        before = text[: match.start()].split()
        if not before or before[-1].endswith((".", "?", "!", ":", ";", ",")):
            continue
        word = before[-1].lower()
        if word in NOUN_PHRASE_AFTER or word in DETERMINERS:
            continue  # a determiner before it is its own residue kind
        ahead = before[-2] if len(before) > 1 else ""  # else the word opens its clause
        opens = not ahead or ahead.endswith((".", "?", "!", ":", ";", ","))
        if not opens and ahead.lower() not in _CLAUSE_OPENERS:
            return True
    return False


def text_residue(text: str) -> str | None:
    """The first kind of template residue in a user turn, or None when it reads clean.

    >>> text_residue("Move it (calendar id: cal_01).")
    'key_value_aside'
    >>> text_residue("Move it to the Work calendar.") is None
    True
    """
    if not text.strip():
        return "empty_turn"
    for kind, pattern in _RESIDUE:
        if pattern.search(text):
            return kind
    if _reference_out_of_place(text):
        return "reference_out_of_place"
    return None


def text_problems(task: Task, results: Sequence[ToolResult]) -> list[str]:
    """Where a task's text and its gold calls disagree (empty when they agree).

    Every user turn must read clean (:func:`text_residue`), and every literal value of
    a gold call (what the user would have to state: strings and numbers, not flags)
    must appear, ignoring case, in a user turn up to the call's own turn or in the
    output of an earlier gold call: a value nobody said is a constraint the text lacks.

    Returns:
        ``"residue:<kind>"`` per unclean turn and ``"unsaid:<tool>.<param>"`` per
        untraced value.
    """
    unsaid: dict[int, list[str]] = {}
    seen: set[tuple[str, str]] = set()
    for t, step, name, _ in _untraced(task, results, fold=True):
        if (step.id, name) not in seen:  # one finding per argument
            seen.add((step.id, name))
            unsaid.setdefault(t, []).append(f"unsaid:{step.name}.{name}")
    bad: list[str] = []
    for t, turn in enumerate(task.turns):  # turn by turn: the first finding is the earliest
        kind = text_residue(turn.user)
        if kind is not None:
            bad.append(f"residue:{kind}")
        bad.extend(unsaid.get(t, []))
    return bad


def call_features(
    steps: Iterable[tuple[str, dict[str, Any]]],
    special_turns: Iterable[str] = (),
    *,
    values: bool = False,
) -> frozenset[str]:
    """The near-duplicate features of a conversation (see the module docstring).

    >>> sorted(call_features([("get_event", {"event_id": "evt_1"}), ("list_calendars", {})]))
    ['get_event(event_id)', 'get_event>list_calendars', 'list_calendars()']
    >>> sorted(call_features([("get_event", {"event_id": "evt_1"})], values=True))
    ['get_event(event_id="evt_1")']
    """
    feats: set[str] = set()
    previous: str | None = None
    for name, args in steps:
        if args:
            for key in sorted(args):
                if values:
                    value = json.dumps(args[key], sort_keys=True, ensure_ascii=False)
                    feats.add(f"{name}({key}={value})")
                else:
                    feats.add(f"{name}({key})")
        else:
            feats.add(f"{name}()")
        if previous is not None:
            feats.add(f"{previous}>{name}")
        previous = name
    feats.update(f"turn:{kind}" for kind in special_turns)
    return frozenset(feats)


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    """|a ∩ b| / |a ∪ b| (1.0 for two empty sets)."""
    if not a and not b:
        return 1.0
    return len(a & b) / len(a | b)


class DedupIndex:
    """Kept feature sets of one server, with an inverted index for fast Jaccard look-ups."""

    def __init__(self, threshold: float) -> None:
        self.threshold = threshold
        self._sets: list[frozenset[str]] = []
        self._postings: dict[str, list[int]] = {}

    def __len__(self) -> int:
        return len(self._sets)

    def near_duplicate(self, feats: frozenset[str]) -> bool:
        """True when some kept set is at least ``threshold`` similar to ``feats``."""
        if not feats:
            return any(not s for s in self._sets)
        # Counter counts an iterable in C: the postings of common features are long
        shared = Counter(itertools.chain.from_iterable(self._postings.get(f, ()) for f in feats))
        for i, inter in shared.items():
            union = len(feats) + len(self._sets[i]) - inter
            if inter / union >= self.threshold:
                return True
        return False

    def first(self, n: int) -> tuple[frozenset[str], ...]:
        """The first ``n`` sets added, in the order they were added."""
        return tuple(self._sets[:n])

    def add(self, feats: frozenset[str]) -> None:
        i = len(self._sets)
        self._sets.append(feats)
        for f in feats:
            self._postings.setdefault(f, []).append(i)
