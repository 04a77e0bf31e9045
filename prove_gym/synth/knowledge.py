"""What the user knows at each point of a planned conversation.

A conversation's entities are either *existing* (in the initial state: the user knows
them, by name or id) or *created* by one of its calls; and either *shown* to the user by
the result of a request they already made (an earlier turn) or not. Rendering asks this
model how a user can name an entity a call takes from an earlier result:

- "the new X" only for an X a call of this conversation created: the one X in play, or
  the one X it created among others in play;
- "the same X" / "that X" only when exactly one X is in play before the call (taken by an
  earlier call, or found alone by one whose result is about Xs), and it is that one;
- "the second X in those results" only after the one earlier call that listed Xs, right
  before this one, at that place in its list;
- otherwise the id itself, if the user can know it then (it existed, or an earlier
  turn's result showed it). An id a call of the same or a later turn creates cannot be
  said at all: :meth:`Knowledge.knowable` says so, and the candidate is dropped.

``prove-gym lint-data`` checks the same rules from a task's JSON alone
(:func:`prove_gym.synth.lint.ambiguous_reference`, ``list_reference``,
``id_before_creation``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from prove_gym.synth.grounding import DoneStep

ORDINALS = ["first", "second", "third", "fourth", "fifth"]


def _ids(value: object) -> list[str]:
    return [str(v) for v in (value if isinstance(value, list) else [value])]


def taken(step: DoneStep, kind: str, *, but: str | None = None) -> set[str]:
    """Ids of ``kind`` a step takes as arguments (leaving out parameter ``but``)."""
    out: set[str] = set()
    for name, entity in step.tool.entity_params.items():
        if entity.name == kind and name in step.args and name != but:
            out.update(_ids(step.args[name]))
    return out


def lists(step: DoneStep, kind: str) -> bool:
    """Whether a call's result is about ``kind``: its first declared return, and the call
    was given none of that kind (``list_events`` lists events; ``get_device`` shows the
    device it was given, not the home it is in; ``list_connections`` called with no user
    lists the user's blocked users, though it could be given a user whose lists to show)."""
    return bool(step.tool.returns) and step.tool.returns[0] == kind and not taken(step, kind)


@dataclass(frozen=True)
class Reference:
    """How a value is referred to: ``same``, ``new``, ``that``, ``list`` (``position`` in
    the list, or ``count`` first ones), or ``None`` to say it."""

    how: Literal["same", "new", "that", "list"]
    position: int = 0
    count: int = 1


class Knowledge:
    """The entities of one planned conversation, and when the user knows each.

    Args:
        done: The conversation's steps, in the order they ran.
        turn_of: Each step's request (user turn) number; results are seen after it.
        existing: Whether an id of a kind is in the initial state.
        creates: Whether a step's tool makes a new entity of a kind
            (:func:`prove_gym.synth.render.creates`).
    """

    def __init__(
        self,
        done: Sequence[DoneStep],
        turn_of: Mapping[int, int],
        existing: Callable[[str, str], bool],
        creates: Callable[[DoneStep, str], bool],
    ) -> None:
        self.done = done
        self.turn_of = dict(turn_of)
        self.existing = existing
        self._creates = creates

    def creator(self, kind: str, value: str, before: int) -> int | None:
        """The step before ``before`` that created ``value`` (of ``kind``), if one did."""
        for j in range(before):
            d = self.done[j]
            if value in _ids(d.produced.get(kind, [])) and self._creates(d, kind):
                return None if self.existing(kind, value) else j
        return None

    def created(self, i: int, kind: str) -> list[str]:
        """The ids of ``kind`` calls before ``done[i]`` created, in order."""
        out: list[str] = []
        for j in range(i):
            for v in _ids(self.done[j].produced.get(kind, [])):
                if v not in out and self.creator(kind, v, i) == j:
                    out.append(v)
        return out

    def in_play(self, i: int, param: str) -> set[str]:
        """The ids of the kind ``done[i].param`` takes that the conversation has put before
        the user by then: taken by an earlier call or by another argument of this one, or
        shown by an earlier result about that kind."""
        step = self.done[i]
        kind = step.tool.entity_params[param].name
        out = taken(step, kind, but=param)
        for d in self.done[:i]:
            out |= taken(d, kind)
            if lists(d, kind) or self._creates(d, kind):
                out.update(_ids(d.produced.get(kind, [])))
        return out

    def listings(self, i: int, kind: str) -> list[int]:
        """Earlier calls whose result is about ``kind`` (:func:`lists`), however many they
        found: each is a list "that list" could mean."""
        return [j for j in range(i) if self.done[j].executed and lists(self.done[j], kind)]

    def reference(self, i: int, param: str) -> Reference | None:
        """How the user can refer to the value ``done[i]`` takes for ``param`` (linked to
        an earlier result), or None when only saying it is unambiguous."""
        step = self.done[i]
        kind = step.tool.entity_params[param].name
        values = _ids(step.args[param])
        if len(values) == 1 and self.in_play(i, param) == set(values):
            v = values[0]
            if any(v in taken(d, kind) for d in self.done[:i]):
                return Reference("same")
            if self.creator(kind, v, i) is not None:
                return Reference("new")
            return Reference("that")
        if len(values) == 1 and self.created(i, kind) == values:
            return Reference("new")  # the one X this conversation made, among others in play
        j = step.links.get(param)
        if j is None or j != i - 1 or self.listings(i, kind) != [j]:
            return None  # "those results" must be the one list, right before
        produced = _ids(self.done[j].listed.get(kind, []))  # not a header's own id
        if len(produced) < 2:
            return None  # one found: "that X" if it is the one in play, else its id
        if len(values) > 1 and values == produced[: len(values)]:
            return Reference("list", count=len(values))
        if len(values) == 1 and values[0] in produced[: len(ORDINALS)]:
            return Reference("list", position=produced.index(values[0]))
        return None

    def knowable(self, i: int, param: str) -> bool:
        """Whether the user can say the value ``done[i]`` takes for ``param`` in its turn:
        every id existed, or an earlier turn's result showed it."""
        step = self.done[i]
        kind = step.tool.entity_params[param].name
        turn = self.turn_of.get(i, 0)
        for v in _ids(step.args[param]):
            if self.existing(kind, v):
                continue
            shown = any(
                v in _ids(self.done[j].produced.get(kind, [])) and self.turn_of.get(j, 0) < turn
                for j in range(i)
            )
            if not shown:
                return False
        return True
