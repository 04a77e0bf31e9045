"""Validation of synthesized conversations: replay, credentials, near-duplicates.

- **Replay**: the task is serialised, read back, and its gold calls run on a
  fresh :class:`~prove_gym.workspace.Workspace` built from that JSON (offered
  tools, distractor servers and all). Every result must equal the one recorded
  while synthesizing, and the final state hash must match; it becomes the
  task's ``final_state_hash``.
- **Credentials**: every value of a secret parameter (named like password, pin,
  passcode, token, secret, or an ``Entity`` kind containing "token"/"auth") must
  appear in a user turn up to the call's own turn or in the output of an earlier
  gold call.
- **Near-duplicates**: a task's *call features* are the set of
  ``tool(key=value)`` tokens (one per argument of every step in the sampled
  chain, ``tool()`` for a call without arguments), the bigrams ``a>b`` of
  consecutive tool names, and one ``turn:<kind>`` token per clarify/abstain turn.
  A task whose Jaccard similarity to an earlier kept task of the same server
  is >= the threshold (0.70) is dropped. Values are part of the features, so two
  conversations with the same tools about different entities are both kept;
  the same request about the same entity is not.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter, OrderedDict
from collections.abc import Iterable, Sequence
from typing import Any

from prove_gym.registry import Registry
from prove_gym.server.result import ToolResult
from prove_gym.server.session import Session
from prove_gym.server.state import combine_hashes
from prove_gym.synth.chains import is_secret_kind, is_secret_param
from prove_gym.synth.render import literal_values
from prove_gym.task import Task
from prove_gym.workspace import Workspace


class StateHasher:
    """Canonical state hashes, cached by the bytes of the database they were computed from.

    Identical bytes mean an identical state, so a read-only chain (or an
    untouched distractor server) costs a memory copy and a BLAKE2 digest
    instead of a full canonical hash.
    """

    def __init__(self, capacity: int = 4096) -> None:
        self._cache: OrderedDict[tuple[str, bytes], str] = OrderedDict()
        self.capacity = capacity

    def session_hash(self, session: Session) -> str:
        """The session's canonical state hash (same value as ``Session.state_hash()``)."""
        digest = hashlib.blake2b(session.snapshot(), digest_size=20).digest()
        key = (session.server.name, digest)
        found = self._cache.get(key)
        if found is None:
            found = self._cache[key] = session.state_hash()
            if len(self._cache) > self.capacity:
                self._cache.popitem(last=False)
        return found

    def workspace_hash(self, ws: Workspace) -> str:
        """Same value as ``Workspace.state_hash()``."""
        return combine_hashes({n: self.session_hash(s) for n, s in ws.sessions.items()})


def replay(
    task: Task,
    expected: Sequence[ToolResult],
    expected_hash: str,
    *,
    registry: Registry,
    hasher: StateHasher,
) -> tuple[str | None, str | None]:
    """Replay a task's gold calls from its JSON on a fresh workspace.

    Args:
        task: The synthesized task.
        expected: The result of each gold step, in order, as recorded while synthesizing.
        expected_hash: The primary server's state hash after synthesizing.
        registry: Where servers are looked up.
        hasher: The state-hash cache.

    Returns:
        ``(None, final_state_hash)`` when everything matches, else ``(reason, None)``.
    """
    rebuilt = Task.from_json(task.to_json())
    if rebuilt != task:
        return "json_roundtrip", None
    with Workspace(rebuilt, registry) as ws:
        k = 0
        for i, turn in enumerate(rebuilt.turns):
            for step in turn.steps:
                record = ws.call(step.name, step.arguments, turn=i)
                if k >= len(expected) or record.result.to_dict() != expected[k].to_dict():
                    return "replay_result_mismatch", None
                k += 1
        if k != len(expected):
            return "replay_result_mismatch", None
        if hasher.session_hash(ws.sessions[rebuilt.server]) != expected_hash:
            return "replay_state_mismatch", None
        return None, hasher.workspace_hash(ws)


def untraced_secrets(task: Task, results: Sequence[ToolResult], registry: Registry) -> list[str]:
    """Secret arguments of gold steps that no earlier user turn or tool output contains.

    Returns:
        ``"tool.param"`` for each offending argument (empty when all trace back).
    """
    bad: list[str] = []
    said = ""
    outputs: list[str] = []
    k = 0
    for turn in task.turns:
        said += "\n" + turn.user
        for step in turn.steps:
            spec = registry.get_server(task.step_server(step)).tools[step.name]
            entities = spec.entity_params
            for name, value in step.arguments.items():
                entity = entities.get(name)
                if not (is_secret_param(name) or (entity and is_secret_kind(entity.name))):
                    continue
                for text in literal_values(value):
                    if text not in said and not any(text in out for out in outputs):
                        bad.append(f"{step.name}.{name}")
            outputs.append(results[k].to_text())
            k += 1
    return bad


def call_features(
    steps: Iterable[tuple[str, dict[str, Any]]], special_turns: Iterable[str] = ()
) -> frozenset[str]:
    """The near-duplicate features of a conversation (see the module docstring).

    >>> sorted(call_features([("get_event", {"event_id": "evt_1"}), ("list_calendars", {})]))
    ['get_event(event_id="evt_1")', 'get_event>list_calendars', 'list_calendars()']
    """
    feats: set[str] = set()
    previous: str | None = None
    for name, args in steps:
        if args:
            for key in sorted(args):
                value = json.dumps(args[key], sort_keys=True, ensure_ascii=False)
                feats.add(f"{name}({key}={value})")
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
        shared: Counter[int] = Counter()
        for f in feats:
            for i in self._postings.get(f, ()):
                shared[i] += 1
        for i, inter in shared.items():
            union = len(feats) + len(self._sets[i]) - inter
            if inter / union >= self.threshold:
                return True
        return False

    def add(self, feats: frozenset[str]) -> None:
        i = len(self._sets)
        self._sets.append(feats)
        for f in feats:
            self._postings.setdefault(f, []).append(i)
