"""Grounding: fill a chain step's arguments from what exists in the live state.

Rules, in the order they apply to each parameter of a step:

1. **Identifiers** (``Entity(kind)`` parameters) come from a hint when one is
   given and valid (a repair step takes the failing call's values), else from
   the most recent earlier step whose *actual result* holds an identifier of
   that kind (a link: the request then says "that event"; a destructive step's
   result is only ever read), else from a field of that name in the record of
   another identifier of the step (the sibling account, an invitee of the
   event), else from the entities that exist in the initial state
   (``Session.list_entities``). A kind the server declares its ``persona`` (the
   customer a support assistant serves, the member a marketplace acts for) is one id
   per conversation (:meth:`Grounder.settle`): every parameter of that kind takes
   it once a call has, and records drawn with it agree on its role (see
   :meth:`Grounder._agreeing`). Credentials (kinds containing ``token``/``auth``)
   are never drawn from state: only a producer's output may supply them. Draws
   agree with the conversation on the key fields of other kinds (an account of
   the customer who logged in), follow what failed calls taught
   (:class:`Lessons`), and never reuse a value for two parameters of one step.
2. **Values that must fit the call** (``values=`` of the tool): its value source,
   given the call as drawn so far (:class:`~prove_gym.server.tool.Bound`: every other
   argument and the records of its entities), so they are drawn last; a source that
   finds no fitting value (None) fails the draw, as an unresolved identifier does. An
   identifier's source runs once every identifier is drawn and keeps it, replaces it
   with one that fits (the second file ``diff`` compares, beside the first), or fails
   the draw (a photo for ``cat``).
3. **Other values**: a field of the same name (or its plural, a list) in the
   record of an identifier the step already uses (required parameters, and
   optional ones of read tools: a write's optional field set to its current
   value would change nothing; never the ``name``/``title`` of what the call makes, which
   no person's record names); else ``examples=``; else enum/``Literal``
   choices; else a field of that name in a record of a kind the tool returns
   (a search for something that exists); else the default.

Range bounds (``start_*``/``end_*``, ``min_*``/``max_*``, ...) are put in order,
and values are coerced to the schema's JSON type, so gold arguments are what a
well-formed call would send.
"""

from __future__ import annotations

import json
import random
import re
from collections import OrderedDict
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from prove_gym.server.base import Server
from prove_gym.server.session import Session
from prove_gym.server.sql import key_column, record_by_key
from prove_gym.server.tool import Bound, ParamSpec, Prepared, ToolSpec, ValueSource, enum_choices
from prove_gym.synth.chains import COPY_VERBS, PlannedStep, is_secret_kind

_NO = object()


@dataclass(frozen=True)
class EntityKind:
    """The existing entities of one kind: records and the field holding their id."""

    kind: str
    key: str
    records: tuple[dict[str, Any], ...]
    by_key: Mapping[str, dict[str, Any]]
    texts: tuple[str, ...]  # each record's id as text, in the order of ``records``


class EntityIndex:
    """Every declared entity kind of one initial state (server, seed, size), listed once."""

    def __init__(self, kinds: Mapping[str, EntityKind]) -> None:
        self.kinds = dict(kinds)

    @classmethod
    def of(cls, session: Session) -> EntityIndex:
        kinds = {}
        for kind, source in session.server.entities.items():
            records = tuple(r for r in session.list_entities(kind) if r.get(source.key) is not None)
            texts = tuple(str(r[source.key]) for r in records)
            by_key = dict(zip(texts, records, strict=True))
            kinds[kind] = EntityKind(kind, source.key, records, by_key, texts)
        return cls(kinds)

    def key(self, kind: str) -> str | None:
        k = self.kinds.get(kind)
        return k.key if k else None

    def records(self, kind: str) -> tuple[dict[str, Any], ...]:
        k = self.kinds.get(kind)
        return k.records if k else ()

    def without(self, kind: str, excluded: Collection[str]) -> list[dict[str, Any]]:
        """The records of ``kind`` whose id, as text, is not in ``excluded``, in order."""
        k = self.kinds.get(kind)
        if k is None:
            return []
        if not excluded:
            return list(k.records)
        return [r for text, r in zip(k.texts, k.records, strict=True) if text not in excluded]

    def record(self, kind: str, value: Any) -> dict[str, Any] | None:
        k = self.kinds.get(kind)
        return k.by_key.get(str(value)) if k else None

    def exists(self, kind: str, value: Any) -> bool:
        return self.record(kind, value) is not None


_INDEXES: OrderedDict[tuple[str, int, int], EntityIndex] = OrderedDict()
_INDEX_CAP = 256


def entity_index(session: Session) -> EntityIndex:
    """The :class:`EntityIndex` of the session's *initial* state (cached per process).

    The session must not have been changed yet: the index describes the template.
    """
    key = (session.server.name, session.seed, session.size)
    index = _INDEXES.get(key)
    if index is None:
        index = _INDEXES[key] = EntityIndex.of(session)
        while len(_INDEXES) > _INDEX_CAP:
            _INDEXES.popitem(last=False)
    else:
        _INDEXES.move_to_end(key)
    return index


def forget_entity_index(server: str, seed: int, size: int) -> None:
    """Drop the cached :class:`EntityIndex` of a state no later work will ground in."""
    _INDEXES.pop((server, seed, size), None)


def plural_names(key: str) -> tuple[str, ...]:
    """Field names that hold lists of ``key`` values: ``account_id`` -> accounts, account_ids.

    >>> plural_names("account_id")
    ('account_ids', 'accounts')
    >>> plural_names("email")
    ('emails',)
    """
    out = [key + "s"]
    if key.endswith("_id"):
        out.append(key[:-3] + "s")
    return tuple(out)


def extract_ids(content: Any, key: str, *, listed_only: bool = False) -> list[Any]:
    """Identifier values under field ``key`` (or its plural list) anywhere in a result: those
    inside a list first (the listing "the first X in those results" counts in), then those
    outside any list (a header such as the caller's own store), each in order.

    >>> extract_ids([{"event_id": "evt_1"}, {"event_id": "evt_2", "x": {"event_id": "evt_1"}}], "event_id")
    ['evt_1', 'evt_2']
    >>> extract_ids({"customer_id": "c1", "accounts": ["a1", "a2"]}, "account_id")
    ['a1', 'a2']
    >>> extract_ids({"you": {"store_id": "s13"}, "stores": [{"store_id": "s15"}]}, "store_id")
    ['s15', 's13']

    ``listed_only`` leaves out those outside any list: what "the second X from that list"
    counts, not the header's own store.

    >>> extract_ids({"you": {"store_id": "s13"}, "stores": [{"store_id": "s15"}]}, "store_id", listed_only=True)
    ['s15']
    """
    listed, loose = _id_lists(content, key)
    return _unique(listed if listed_only else (*listed, *loose))


def _id_lists(content: Any, key: str) -> tuple[list[Any], list[Any]]:
    """The ids of :func:`extract_ids`, in one walk: those inside a list, those outside."""
    listed: list[Any] = []
    loose: list[Any] = []
    plurals = plural_names(key)

    def add(value: Any, in_list: bool) -> None:
        if isinstance(value, str | int) and not isinstance(value, bool):
            (listed if in_list else loose).append(value)

    def walk(node: Any, in_list: bool) -> None:
        if isinstance(node, dict):
            for k, v in node.items():
                if k == key:
                    add(v, in_list)
                elif k in plurals and isinstance(v, list):
                    for item in v:
                        if not isinstance(item, dict | list):
                            add(item, True)
                if isinstance(v, dict | list):
                    walk(v, in_list or isinstance(v, list))
        elif isinstance(node, list):
            for item in node:
                walk(item, True)

    walk(content, False)
    return listed, loose


def _unique(values: Iterable[Any]) -> list[Any]:
    """``values`` without repeats (by their text), in order."""
    found: list[Any] = []
    seen: set[str] = set()
    for value in values:
        if str(value) not in seen:
            seen.add(str(value))
            found.append(value)
    return found


def schema_types(prop: Mapping[str, Any]) -> list[str]:
    """JSON types a parameter schema allows, in order (``[]`` if any)."""
    if "type" in prop:
        t = prop["type"]
        return list(t) if isinstance(t, list) else [t]
    out = []
    for option in prop.get("anyOf", []) or []:
        if isinstance(option, Mapping) and "type" in option:
            out.append(option["type"])
    return out


def coerce(value: Any, prop: Mapping[str, Any]) -> Any:
    """Coerce a value drawn from a record or example to the parameter's JSON type.

    >>> coerce("250.00", {"anyOf": [{"type": "number"}, {"type": "string"}]})
    '250.00'
    >>> coerce("12", {"type": "integer"}), coerce(3, {"type": "string"})
    (12, '3')
    """
    types = schema_types(prop)
    if not types or value is None:
        return value
    if isinstance(value, bool):
        current = "boolean"
    elif isinstance(value, int):
        current = "integer"
    elif isinstance(value, float):
        current = "number"
    elif isinstance(value, str):
        current = "string"
    elif isinstance(value, list):
        current = "array"
    else:
        current = "object"
    if current in types or (current == "integer" and "number" in types):
        return value
    want = types[0]
    try:
        if want == "integer":
            return int(float(value)) if float(value).is_integer() else value
        if want == "number":
            return float(value)
        if want == "string" and not isinstance(value, list | dict):
            return str(value)
        if want == "boolean" and isinstance(value, str):
            return value.strip().lower() in ("true", "yes", "1")
    except (TypeError, ValueError):
        return value
    return value


@dataclass
class DoneStep:
    """A step whose arguments are fixed (executed unless it belongs to an abstain turn).

    Attributes:
        tool: The tool.
        args: The gold arguments.
        links: Parameter -> index (in the done list) of the step whose result gave its value.
        content: The result content (``None`` if not executed).
        produced: Entity kind -> identifiers found in the result (declared ``returns`` only).
        listed: Entity kind -> those of ``produced`` found inside a list of the result
            (:func:`extract_ids` ``listed_only``): what "that list" counts.
        segment: The request (user turn) it belongs to.
        executed: False for the steps of a turn that will be answered without calls.
        repairs: Indices of steps inserted to fix this one's precondition.
        plan: The planned step it came from.
        result: The call's result (``None`` if not executed).
        failed: The call's last failed attempt before it succeeded, ``(arguments, result)``,
            when the failure is one the gold may show with its recovery (see
            :attr:`~prove_gym.synth.config.SynthConfig.recovery_rate`).
        given_up: The call failed and the gold gives it up (``result`` is the failure):
            shown as a failed attempt that ends its turn, and the conversation.
    """

    tool: ToolSpec
    args: dict[str, Any]
    links: dict[str, int]
    content: Any = None
    produced: dict[str, list[Any]] = field(default_factory=dict)
    segment: int = 0
    executed: bool = True
    repairs: list[int] = field(default_factory=list)
    plan: PlannedStep | None = None
    result: Any = None
    failed: tuple[dict[str, Any], Any] | None = None
    given_up: bool = False
    listed: dict[str, list[Any]] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.tool.name


@dataclass
class Lessons:
    """What failed calls taught within one block, per (tool, identifier parameter).

    Error messages are written for the model and name what was wrong: "sprint spr_007
    is 'planned'; only an 'active' sprint can be closed". A record field of the failed
    identifier whose value the message names (``state='planned'``) is avoided from then
    on; a quoted value the message names that other records have in the same field
    (``'active'``) is preferred. An identifier taken from a sibling record (an invitee
    of the event) that failed is drawn from state next time, and the other way round.
    """

    avoid_records: set[tuple[str, str]] = field(default_factory=set)
    avoid: dict[tuple[str, str], set[tuple[str, str]]] = field(default_factory=dict)
    prefer: dict[tuple[str, str], set[tuple[str, str]]] = field(default_factory=dict)

    def learn(self, tool: ToolSpec, g: Grounded, message: str, index: EntityIndex) -> set[str]:
        """Update from a failed call; returns the argument values the message names."""
        named: set[str] = set()
        for value in g.args.values():
            for v in value if isinstance(value, list) else [value]:
                text = str(v)
                if len(text) >= 3 and not isinstance(v, bool) and text in message:
                    named.add(text)
        quoted = set(re.findall(r"'([^']{2,40})'", message))
        for param, entity in tool.entity_params.items():
            source = g.sources.get(param)
            if source == "record":
                self.avoid_records.add((tool.name, param))
            elif source == "state":
                self.avoid_records.discard((tool.name, param))
            value = g.args.get(param)
            if value is None:
                continue
            key = (tool.name, param)
            id_field = index.key(entity.name)
            for v in value if isinstance(value, list) else [value]:
                rec = index.record(entity.name, v)
                if rec is None:
                    continue
                for f, fv in rec.items():
                    if f == id_field or isinstance(fv, dict | list | bool) or fv is None:
                        continue
                    if _names(message, str(fv)):
                        self.avoid.setdefault(key, set()).add((f, str(fv)))
                        others = {str(r.get(f)) for r in index.records(entity.name)}
                        for q in quoted - {str(fv)}:
                            if q in others:
                                self.prefer.setdefault(key, set()).add((f, q))
        return named

    def fit(self, tool: str, param: str, records: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
        """``records`` without those the lessons rule out, preferred ones first if any."""
        key = (tool, param)
        avoid, prefer = self.avoid.get(key), self.prefer.get(key)
        out = list(records)
        if avoid:
            out = [r for r, hit in zip(out, _hits(out, avoid), strict=True) if not hit] or out
        if prefer:
            out = [r for r, hit in zip(out, _hits(out, prefer), strict=True) if hit] or out
        return out


def _in_role(
    record: Mapping[str, Any], roles: frozenset[str], bound: set[str], owner: str, me: str
) -> bool:
    """Whether ``record`` names persona ``me`` in the roles a call gives it (``bound``, and
    the kind's key ``owner``) and in no other of ``roles``."""
    for f in roles & record.keys():
        value = record[f]
        if value is None or isinstance(value, dict | list):
            continue
        if (f in bound or f == owner) != (str(value) == me):
            return False  # another member's own listing, or the persona's to buy from
    return True


def _names(message: str, text: str) -> bool:
    """Whether ``message`` holds ``text`` as a whole token: no word character or ``-`` on
    either side (the regex ``(?<![\\w-])text(?![\\w-])``, without compiling one per value).
    """
    end = len(text)
    at = message.find(text)
    while at >= 0:
        if (at == 0 or not _joins(message[at - 1])) and (
            at + end == len(message) or not _joins(message[at + end])
        ):
            return True
        at = message.find(text, at + 1)
    return False


def _joins(ch: str) -> bool:
    """Whether ``ch`` continues a token: a word character (``\\w``) or ``-``."""
    return ch.isalnum() or ch == "_" or ch == "-"


def _hits(records: Sequence[Mapping[str, Any]], pairs: set[tuple[str, str]]) -> list[bool]:
    """For each record, whether some (field, text) of ``pairs`` is its field, as text."""
    by_field: dict[str, set[str]] = {}
    for f, v in pairs:
        by_field.setdefault(f, set()).add(v)
    hits = [False] * len(records)
    for f, texts in by_field.items():
        hits = [hit or str(r.get(f)) in texts for hit, r in zip(hits, records, strict=True)]
    return hits


@dataclass
class Grounded:
    """Arguments drawn for one step, or the parameter that could not be filled.

    Attributes:
        args: The arguments, in signature order.
        links: Parameter -> index of the earlier step whose result gave its value.
        records: Entity records of the identifiers used (they supply other values).
        sources: Parameter -> where its value came from (``link``, ``hint``,
            ``record``, ``state``, ``value``, ``example``, ``enum``, ``related``,
            ``default``).
        unresolved: A required parameter nothing could fill.
        prepared: The parameter and what its value source answered, when it found an id
            that fits only once other calls have run (:class:`Prepared`); ``args`` then
            holds what was drawn so far, with that id.
    """

    args: dict[str, Any]
    links: dict[str, int]
    records: list[dict[str, Any]]
    sources: dict[str, str] = field(default_factory=dict)
    unresolved: str | None = None
    prepared: tuple[str, Prepared] | None = None


@dataclass
class _Draw:
    """The working state of one :meth:`Grounder.ground` call."""

    step: PlannedStep
    done: Sequence[DoneStep]
    context: Mapping[str, Any]
    hints: Mapping[str, Any]
    banned: frozenset[str]
    lessons: Lessons
    links: dict[str, int] = field(default_factory=dict)
    records: list[dict[str, Any]] = field(default_factory=list)
    sources: dict[str, str] = field(default_factory=dict)
    used: dict[str, set[str]] = field(default_factory=dict)
    args: dict[str, Any] = field(default_factory=dict)  # drawn so far
    bound: dict[str, dict[str, Any]] = field(default_factory=dict)  # parameter -> record
    wanted: frozenset[str] = frozenset()  # the parameters this call fills
    prepare: bool = False  # whether a source may ask for calls first (Prepared)


class _Choices(Mapping[str, tuple[Any, ...]]):
    """:attr:`Bound.choices <prove_gym.server.tool.Bound.choices>` of one draw, worked out
    per parameter when a source reads it (most sources never do)."""

    def __init__(self, grounder: Grounder, d: _Draw) -> None:
        self._grounder, self._d = grounder, d
        self._params = {
            p.name: p for p in d.step.tool.params if p.entity is not None and p.name in d.args
        }
        self._cache: dict[str, tuple[Any, ...]] = {}

    def __getitem__(self, name: str) -> tuple[Any, ...]:
        if name not in self._cache:
            self._cache[name] = self._grounder._choices(self._d, self._params[name])
        return self._cache[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._params)

    def __len__(self) -> int:
        return len(self._params)


VALUE_REDRAWS = 3
"""Draws of a step's entities, at most, before a ``values=`` source that finds no fitting
value makes the step ungroundable (see :meth:`Grounder.ground`)."""

_RANGE_PAIRS = (("start", "end"), ("min", "max"), ("earliest", "latest"), ("first", "last"))
_ISO_DAY = re.compile(r"^\d{4}-\d{2}-\d{2}")


class Grounder:
    """Draws arguments for steps of one conversation against one live session.

    Args:
        session: The live session of the primary server (changes as the chain runs).
        index: Entities of the initial state.
        rng: The conversation's random generator.
    """

    def __init__(self, session: Session, index: EntityIndex, rng: random.Random) -> None:
        self.session = session
        self.server = session.server
        self.index = index
        self.rng = rng
        self._keys = {kind: src.key for kind, src in self.server.entities.items()}
        self.persona: dict[str, str] = {}
        """The conversation's one id of each persona kind, once a call has taken one."""
        self._looked_up: dict[str, set[str]] = {}
        """Ids of a persona kind a ``shared`` parameter took (a seller whose profile the
        user read): someone else, never drawn as the persona later."""
        # the record fields that can name a persona: its key, and every parameter of its
        # kind (``seller_id``, ``buyer_id``: the role a call gives the member)
        self._roles: dict[str, frozenset[str]] = {
            kind: frozenset(
                {
                    self._keys.get(kind, ""),
                    *(
                        name
                        for t in self.server.visible_tools()
                        for name, e in t.entity_params.items()
                        if e.name == kind
                    ),
                }
                - {""}
            )
            for kind in self.server.persona
        }

    def settle(
        self,
        spec: ToolSpec,
        args: Mapping[str, Any],
        records: Sequence[Mapping[str, Any]],
        produced: Mapping[str, Sequence[Any]] | None = None,
    ) -> None:
        """Take the persona a call that ran acted for as the conversation's: an id of a
        persona kind it passed; else the one record of a persona kind a lookup found
        (``produced``: the ids its result holds; "search for Kirk" finding cus_0063 makes
        cus_0063 the customer, where two found leave it open); else the owner its records
        name by the kind's key (an order of cus_0076 makes cus_0076 the customer). The
        first one of each kind stays: one customer, one member per conversation."""
        for name, entity in spec.entity_params.items():
            value = args.get(name)
            if entity.name not in self.server.persona or not isinstance(value, str | int):
                continue
            if entity.shared:  # a look at someone's public profile: never who the user is
                self._looked_up.setdefault(entity.name, set()).add(str(value))
            else:
                self.persona.setdefault(entity.name, str(value))
        taken = {e.name for e in spec.entity_params.values()}
        for kind in self.server.persona:
            found = {str(v) for v in (produced or {}).get(kind, ()) if isinstance(v, str | int)}
            if not spec.writes and kind in spec.returns and kind not in taken and len(found) == 1:
                self.persona.setdefault(kind, found.pop())
        for kind in self.server.persona:
            for rec in records:
                owner = rec.get(self._keys.get(kind, ""))
                if isinstance(owner, str | int) and self.index.exists(kind, owner):
                    self.persona.setdefault(kind, str(owner))

    def _agreeing(
        self, d: _Draw, kind: str, records: Sequence[dict[str, Any]]
    ) -> list[dict[str, Any]]:
        """Records that agree with the conversation on the identifiers of *other* kinds.

        An account agrees when its ``customer_id`` is the customer the conversation
        is about; an event when its ``calendar_id`` matches. Only the key fields of
        other entity kinds are compared: names, balances or titles never constrain.
        """
        fields = [k for other, k in self._keys.items() if other != kind]
        # this step's identifiers outrank the conversation; among them, the first drawn wins
        here: dict[str, Any] = {}
        for rec in d.records:
            for f in fields:
                value = rec.get(f)
                if value is not None and not isinstance(value, dict | list):
                    here.setdefault(f, value)
        context = {**d.context, **here}
        for persona, value in self.persona.items():  # the conversation's own customer
            if persona != kind and persona in self._keys:
                context[self._keys[persona]] = value
        wanted = [(f, str(context[f])) for f in fields if f in context]
        out = list(records)
        for f, text in wanted:  # one field at a time: the records agreeing on all of them
            out = [
                r
                for r in out
                if (value := r.get(f)) is None
                or isinstance(value, dict | list)
                or str(value) == text
            ]
        return self._in_role(d, kind, out)

    def _persona_only(
        self, d: _Draw, kind: str, records: Sequence[dict[str, Any]]
    ) -> list[dict[str, Any]]:
        """``records`` that agree with the conversation's persona alone (its key field and
        its role, :meth:`_in_role`), when no record agrees with the whole conversation."""
        out = list(records)
        for persona, value in self.persona.items():
            f = self._keys.get(persona)
            if persona == kind or f is None:
                continue
            out = [
                r
                for r in out
                if (v := r.get(f)) is None or isinstance(v, dict | list) or str(v) == value
            ]
        return self._in_role(d, kind, out)

    def _in_role(self, d: _Draw, kind: str, records: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """``records`` that give the persona this call binds the role the call gives it.

        A call that passes the persona as ``seller_id`` takes a listing whose
        ``seller_id`` is the persona (a member cancels their own listing); one that passes
        it as ``buyer_id`` takes a listing that does not name the persona in another role
        (a member buys from *other* members). A record field names a role when it is the
        persona kind's key or a parameter of that kind of some tool of the server.
        """
        if kind in self.server.persona:
            return records
        for persona, roles in self._roles.items():
            bound = {
                name
                for name, e in d.step.tool.entity_params.items()
                if e.name == persona and name in d.args and not isinstance(d.args[name], list)
            }
            if not bound:
                continue
            me = str(d.args[min(bound)])
            owner = self._keys.get(persona, "")
            records = [r for r in records if _in_role(r, roles, bound, owner, me)]
        return records

    def found(
        self, spec: ToolSpec, content: Any
    ) -> tuple[dict[str, list[Any]], dict[str, list[Any]]]:
        """Identifiers of the kinds ``spec`` declares it returns, found in ``content``
        (``DoneStep.produced``), and those of them inside a list of it (what "that list"
        counts: ``DoneStep.listed``), from one walk of the result."""
        produced, listed = {}, {}
        for kind in spec.returns:
            key = self.index.key(kind)
            if key is None and kind in self.server.entities:
                key = self.server.entities[kind].key
            if key:
                in_list, loose = _id_lists(content, key)
                if ids := _unique((*in_list, *loose)):
                    produced[kind] = ids
                if in_list:
                    listed[kind] = _unique(in_list)
        return produced, listed

    @staticmethod
    def wanted(step: PlannedStep, extra: Iterable[str] = ()) -> list[ParamSpec]:
        """Parameters to fill: required ones, wanted optional inputs, and ``extra``."""
        names = set(step.inputs) | set(extra)
        return [p for p in step.tool.params if p.required or p.name in names]

    def ground(
        self,
        step: PlannedStep,
        done: Sequence[DoneStep],
        context: Mapping[str, Any],
        *,
        extra: Iterable[str] = (),
        hints: Mapping[str, Any] | None = None,
        banned: Iterable[str] = (),
        lessons: Lessons | None = None,
        prepare: bool = False,
    ) -> Grounded:
        """Draw arguments for ``step`` given the steps already done and the conversation context.

        Args:
            step: The planned step.
            done: Earlier steps (their actual results give linked identifiers).
            context: Values the conversation already uses (for coherent draws).
            extra: Optional parameters to include as well (named by the chosen phrasing).
            hints: Values to use when valid (a repair step takes the failing step's values).
            banned: Values not to draw (an earlier attempt's error message named them).
            lessons: What earlier failures taught (see :class:`Lessons`).
            prepare: Whether an identifier's source may answer an id that fits once other
                calls have run (:class:`~prove_gym.server.tool.Prepared`: they are in
                ``Grounded.prepared``); else such an id does not fit.

        When a ``values=`` source finds no value that fits the entities drawn (text for
        a photo, a bid on a fixed-price listing), those entities are drawn again, up to
        :data:`VALUE_REDRAWS` times, without the ones that did not fit (a hint stays).
        """
        no, extra = frozenset(str(b) for b in banned), tuple(extra)
        for _ in range(VALUE_REDRAWS):
            g = self._ground_once(step, done, context, extra, hints, no, lessons, prepare)
            if g.unresolved is None or g.unresolved not in step.tool.values:
                return g
            misfits = {
                str(v)
                for name, value in g.args.items()
                if name in step.tool.entity_params and g.sources.get(name) != "hint"
                for v in (value if isinstance(value, list) else [value])
            }
            if not misfits:
                return g
            no |= misfits
        return self._ground_once(step, done, context, extra, hints, no, lessons, prepare)

    def _ground_once(
        self,
        step: PlannedStep,
        done: Sequence[DoneStep],
        context: Mapping[str, Any],
        extra: Iterable[str],
        hints: Mapping[str, Any] | None,
        banned: frozenset[str],
        lessons: Lessons | None,
        prepare: bool = False,
    ) -> Grounded:
        """One draw of :meth:`ground`."""
        spec = step.tool
        props = spec.input_schema().get("properties", {})
        d = _Draw(
            step,
            done,
            context,
            dict(hints or {}),
            banned,
            lessons if lessons is not None else Lessons(),
            wanted=frozenset(p.name for p in self.wanted(step, extra)),
            prepare=prepare,
        )
        args = d.args

        # identifiers first: their records then supply the other values; the values that
        # must fit the rest of the call last, when the rest is known
        moves = self._moves(spec)

        def order(p: ParamSpec) -> int:
            if p.entity is not None and p.entity.name in self.persona:
                return -1  # who acts first: the records drawn after it agree on the role
            if p.name in moves:
                return 1  # after the row it moves, whose current reference it must not repeat
            return 0 if p.entity is not None else 3 if p.name in spec.values else 2

        checked = False
        for p in sorted(self.wanted(step, extra), key=order):
            if p.entity is None and not checked:
                checked = True  # every identifier is drawn: those that must fit are checked
                misfit = self._fit_identifiers(d)
                if isinstance(misfit, tuple):
                    return Grounded(args, d.links, d.records, d.sources, prepared=misfit)
                if misfit is not None:
                    return Grounded(args, d.links, d.records, d.sources, unresolved=misfit)
            prop = props.get(p.name, {})
            value = self._entity(d, p) if p.entity is not None else self._plain(d, p, prop)
            if value is _NO:
                if p.required or p.name in spec.values:  # wanted, and nothing fits the call
                    return Grounded(args, d.links, d.records, d.sources, unresolved=p.name)
                d.sources.pop(p.name, None)
                continue
            args[p.name] = coerce(value, prop)
        if not checked:
            misfit = self._fit_identifiers(d)
            if isinstance(misfit, tuple):
                return Grounded(args, d.links, d.records, d.sources, prepared=misfit)
            if misfit is not None:
                return Grounded(args, d.links, d.records, d.sources, unresolved=misfit)
        self._order_ranges(args, d.sources)
        if not spec.writes:
            _one_period(args, d.sources, {p.name for p in spec.params if p.required})
        # a gold value that only repeats the tool's default teaches the model nothing
        for p in spec.params:
            if not p.required and p.name in args and _is_default(args[p.name], props.get(p.name)):
                del args[p.name]
                d.links.pop(p.name, None)
                d.sources.pop(p.name, None)
        ordered = {p.name: args[p.name] for p in spec.params if p.name in args}
        return Grounded(ordered, d.links, d.records, d.sources)

    def _fit_identifiers(self, d: _Draw) -> str | tuple[str, Prepared] | None:
        """Run the ``values=`` sources of the call's identifiers, in signature order, once
        every identifier is drawn: each returns the drawn id when it fits the rest of the
        call (a text file for ``cat``), another that does (a file beside the first one
        ``diff`` compares), one that fits once other calls have run (:class:`Prepared`,
        where ``d.prepare`` allows it: returned at once with its parameter, its id in
        ``d.args``), or None; the parameter that found none, or None when all fit."""
        spec = d.step.tool
        for p in spec.params:
            source = spec.values.get(p.name)
            if source is None or p.entity is None or p.name not in d.args:
                continue
            if d.sources.get(p.name) == "hint":
                continue  # a repair's own value stays
            value = self._fitting(source, d, d.banned)
            prepared = value if isinstance(value, Prepared) else None
            if prepared is not None:
                value = prepared.value if d.prepare and prepared.first else _NO
            if value is _NO:
                return p.name
            if str(value) != str(d.args[p.name]):
                d.args[p.name] = value
                d.links.pop(p.name, None)
                d.sources[p.name] = "value"
                rec = self.index.record(p.entity.name, value)
                if rec is not None:
                    d.bound[p.name] = rec
                    d.records.append(rec)
                else:
                    d.bound.pop(p.name, None)
            if prepared is not None:
                d.sources[p.name] = "value"
                return p.name, prepared
        return None

    def _choices(self, d: _Draw, p: ParamSpec) -> tuple[Any, ...]:
        """The ids of ``p``'s kind in the initial state that this call could take instead
        of the one drawn (:attr:`Bound.choices <prove_gym.server.tool.Bound.choices>`): the
        conversation's persona for a persona kind once it has one; else those
        :meth:`_entity` would pick from, agreeing with the conversation and the call's
        other identifiers (not with the drawn one's own record), in the listing's order."""
        assert p.entity is not None
        kind = p.entity.name
        key = self.index.key(kind)
        if key is None or is_secret_kind(kind):
            return ()
        if kind in self.server.persona and kind in self.persona:
            return (self.persona[kind],)
        own = d.bound.get(p.name)
        others = _Draw(
            d.step,
            d.done,
            d.context,
            d.hints,
            d.banned,
            d.lessons,
            records=[r for r in d.records if r is not own],
            args={k: v for k, v in d.args.items() if k != p.name},
        )
        taken = {
            str(v)
            for name, value in d.args.items()
            if name != p.name and name in d.step.tool.entity_params
            for v in (value if isinstance(value, list) else [value])
        }
        candidates = d.lessons.fit(
            d.step.tool.name, p.name, self.index.without(kind, taken | d.banned)
        )
        pool = self._agreeing(others, kind, candidates) or self._persona_only(
            others, kind, candidates
        )
        return tuple(r[key] for r in pool)

    def _remakes(self, d: _Draw, j: int, kind: str) -> bool:
        """Whether this call, an update (:func:`updates`), would change a field that the
        ``j``-th done step set when it made the ``kind`` entity: a traveller created with
        one passport, then said to have renewed it (at once, or after a trip was made for
        them: either way the user would have given the new one when creating). Such an
        update takes another entity."""
        spec, prior = d.step.tool, d.done[j]
        if not updates(spec) or kind not in prior.tool.returns:
            return False
        if spec.name.split("_")[0] in COPY_VERBS:
            return False  # a reply makes a message of its own
        if kind in {e.name for e in prior.tool.entity_params.values()}:
            return False  # it took one, made none
        ids = set(spec.entity_params)
        return bool((d.wanted - ids) & set(prior.args))

    def _moves(self, spec: ToolSpec) -> frozenset[str]:
        """:func:`moves` of ``spec`` on this conversation's server."""
        return moves(spec, self.server)

    def _order_ranges(self, args: dict[str, Any], sources: Mapping[str, str]) -> None:
        """Draw range bounds as an ordered pair: start_date <= end_date, min_x <= max_x."""
        for lo_word, hi_word in _RANGE_PAIRS:
            for lo in [k for k in args if lo_word in k]:
                hi = lo.replace(lo_word, hi_word)
                if hi not in args or "hint" in (sources.get(lo), sources.get(hi)):
                    continue
                a, b = args[lo], args[hi]
                comparable = (
                    isinstance(a, int | float)
                    and isinstance(b, int | float)
                    and not isinstance(a, bool)
                    and not isinstance(b, bool)
                ) or (
                    isinstance(a, str)
                    and isinstance(b, str)
                    and bool(_ISO_DAY.match(a))
                    and bool(_ISO_DAY.match(b))
                )
                if comparable and b < a:
                    args[lo], args[hi] = b, a

    # ---------------------------------------------------------------- entities
    def _entity(self, d: _Draw, p: ParamSpec) -> Any:
        assert p.entity is not None
        kind, many = p.entity.name, p.entity.many
        # one value per call, whatever kinds its parameters take ("copy X to X" drew a
        # folder as the path to copy and as the folder to copy it into)
        taken = {v for values in d.used.values() for v in values}
        excluded = taken | d.banned  # (taken grows only once a value is chosen)
        secret = is_secret_kind(kind)
        if kind in self.server.persona and not many:
            if not p.entity.shared:
                return self._persona(d, p, kind, excluded)
            if kind in self.persona:  # another member's public profile: not the user's own
                excluded = excluded | {self.persona[kind]}
        if p.name in self._moves(d.step.tool):
            # an update never moves a row to the reference it has now (an event to its own
            # calendar, an issue to its own assignee)
            excluded = excluded | self._current(d, p.name)
        # 1. a hint (a repair takes the failing step's own values), linked if produced earlier
        if p.name in d.hints:
            hinted = d.hints[p.name]
            values = [str(v) for v in (hinted if isinstance(hinted, list) else [hinted])]
            for j in range(len(d.done) - 1, -1, -1):
                have = {str(v) for v in d.done[j].produced.get(kind, [])}
                if d.done[j].executed and values and set(values) <= have:
                    d.links[p.name] = j
                    return self._take(d, p, kind, hinted, "link")
            if not secret and values and all(self.index.exists(kind, v) for v in values):
                return self._take(d, p, kind, hinted, "hint")
        # 2. a link to the most recent earlier result holding this kind
        for j in range(len(d.done) - 1, -1, -1):
            prior = d.done[j]
            if not prior.executed or (prior.tool.destructive and d.step.tool.writes):
                continue  # what a destructive call returned may be gone: only read it
            if self._remakes(d, j, kind):
                continue  # what it made would change before anything used it
            ids = [v for v in prior.produced.get(kind, []) if str(v) not in excluded]
            known = [r for v in ids if (r := self.index.record(kind, v)) is not None]
            known = d.lessons.fit(d.step.tool.name, p.name, known)
            key = self.index.key(kind)  # None only for an unindexed kind, whose known is empty
            fitting = (
                {str(r[key]) for r in self._agreeing(d, kind, known)} if key is not None else set()
            )
            ids = [v for v in ids if self.index.record(kind, v) is None or str(v) in fitting]
            if ids:
                d.links[p.name] = j
                return self._take(d, p, kind, ids[: min(2, len(ids))] if many else ids[0], "link")
        if secret:
            return _NO  # credentials come from a tool's output, never from state
        # 3. a field of a record this step already uses (a sibling account, an invitee)
        if (d.step.tool.name, p.name) not in d.lessons.avoid_records:
            for rec in d.records:
                for name in (p.name, *plural_names(p.name)):
                    cand = rec.get(name)
                    pool = cand if isinstance(cand, list) else [cand]
                    pool = [
                        v
                        for v in pool
                        if v is not None and str(v) not in excluded and self.index.exists(kind, v)
                    ]
                    fine = d.lessons.fit(
                        d.step.tool.name,
                        p.name,
                        [r for v in pool if (r := self.index.record(kind, v)) is not None],
                    )
                    pool = [v for v in pool if self.index.record(kind, v) in fine]
                    if pool:
                        value = (
                            self.rng.sample(pool, min(len(pool), 2))
                            if many
                            else self.rng.choice(pool)
                        )
                        return self._take(d, p, kind, value, "record")
        # 4. an existing entity, agreeing with the conversation so far
        key = self.index.key(kind)
        if key is None:
            return _NO  # an unindexed kind has no records to pick from
        candidates = self.index.without(kind, excluded)
        if not candidates:
            return _NO
        candidates = d.lessons.fit(d.step.tool.name, p.name, candidates)
        pool_records = self._agreeing(d, kind, candidates) or self._persona_only(
            d, kind, candidates
        )
        if not pool_records:
            return _NO  # only another customer's: the conversation serves one
        if many:
            picks = self.rng.sample(pool_records, min(len(pool_records), self.rng.randint(1, 2)))
            value = [r[key] for r in picks]
        else:
            value = self.rng.choice(pool_records)[key]
        return self._take(d, p, kind, value, "state")

    def _persona(self, d: _Draw, p: ParamSpec, kind: str, excluded: Collection[str]) -> Any:
        """The persona for ``p``: the conversation's (:meth:`settle`), whatever an error
        named; else the one the conversation's records name by the kind's key (``context``);
        else a field ``p`` of a record this call uses (the seller of the listing a
        call cancels), else one from the initial state that none of this call's records
        names in another role (not the seller of the listing it buys). Never one an
        earlier result listed: a user does not look themselves up."""
        if kind in self.persona:
            return self._take(d, p, kind, self.persona[kind], "state")
        current = d.context.get(self._keys.get(kind, ""))  # the owner of what it used so far
        if current is not None and self.index.exists(kind, current):
            return self._take(d, p, kind, current, "state")
        hinted = d.hints.get(p.name)
        if hinted is not None and not isinstance(hinted, list) and self.index.exists(kind, hinted):
            return self._take(d, p, kind, hinted, "hint")
        others: set[str] = set()
        for rec in d.records:
            value = rec.get(p.name)
            if value is not None and str(value) not in excluded and self.index.exists(kind, value):
                return self._take(d, p, kind, value, "record")
            others.update(
                str(rec[f])
                for f in self._roles.get(kind, frozenset())
                if f != p.name and rec.get(f) is not None and not isinstance(rec[f], dict | list)
            )
        key = self.index.key(kind)
        if key is None:
            return _NO
        others |= self._looked_up.get(kind, set())
        candidates = d.lessons.fit(
            d.step.tool.name, p.name, self.index.without(kind, set(excluded) | others)
        )
        if not candidates:
            return _NO
        pool = self._agreeing(d, kind, candidates) or candidates
        return self._take(d, p, kind, self.rng.choice(pool)[key], "state")

    @staticmethod
    def _terms(d: _Draw, name: str, banned: Collection[str]) -> Any:
        """The value ``name`` had in the read an identifier of this call came from (the
        dates of the ``get_hotel_availability`` whose result listed the room ``book_hotel``
        takes): a call made on what a read found keeps the read's terms. ``_NO`` when no
        such read took ``name``."""
        for j in sorted(set(d.links.values())):
            source = d.done[j]
            if source.tool.writes or name in source.tool.entity_params:
                continue
            value = source.args.get(name)
            if value is not None and not isinstance(value, list) and str(value) not in banned:
                return value
        return _NO

    def _take(self, d: _Draw, p: ParamSpec, kind: str, value: Any, source: str) -> Any:
        taken = d.used.setdefault(kind, set())
        for v in value if isinstance(value, list) else [value]:
            taken.add(str(v))
            rec = self.index.record(kind, v)
            if rec is not None:
                d.records.append(rec)
                d.bound.setdefault(p.name, rec)
        d.sources[p.name] = source
        return value

    # ------------------------------------------------------------ other values
    def _plain(self, d: _Draw, p: ParamSpec, prop: Mapping[str, Any]) -> Any:
        spec = d.step.tool
        if p.name in d.hints:
            d.sources[p.name] = "hint"
            return d.hints[p.name]
        # an update never sets a field to the value it has now (a draft's subject to its own)
        current = self._current(d, p.name)
        banned = d.banned | current | _written_before(d, p.name)
        source = spec.values.get(p.name)
        if source is not None:  # the one place its values come from
            value = self._fitting(source, d, banned)
            if isinstance(value, Prepared):
                value = _NO  # only an identifier's source may ask for calls first
            if value is not _NO:
                d.sources[p.name] = "value"
            return value
        terms = self._terms(d, p.name, banned)
        if terms is not _NO:  # book the room for the dates its availability was checked for
            d.sources[p.name] = "record"
            return terms
        if (p.required or not spec.writes) and not _names_new(spec, p.name):
            value = self._from_records(p.name, d.records, banned)
            if value is not _NO:
                d.sources[p.name] = "record"
                return value
        if p.name in spec.examples:
            value = self._example(spec.examples[p.name], banned)
            if value is not _NO:
                d.sources[p.name] = "example"
                return value
        choices = [c for c in enum_choices(prop) if str(c) not in banned] or [
            c for c in enum_choices(prop) if str(c) not in current
        ]
        if current and "boolean" in schema_types(prop):
            choices = [c for c in (True, False) if str(c) not in current]
        if choices:
            d.sources[p.name] = "enum"
            return self.rng.choice(choices)
        if "boolean" in schema_types(prop):
            d.sources[p.name] = "enum"
            return self.rng.random() < 0.5
        for kind in spec.returns:
            related = self.index.records(kind)
            agreeing = self._agreeing(d, kind, related) or list(related)
            with_field = [r for r in agreeing if r.get(p.name) not in (None, "", [])]
            if with_field:
                value = self._from_records(p.name, [self.rng.choice(with_field)], banned)
                if value is not _NO:
                    d.sources[p.name] = "related"
                    return value
        if not p.required:
            default = spec.args_model.model_fields[p.name].default
            if (
                default is not None
                and isinstance(default, str | int | float | bool)
                and str(default) not in current
            ):
                d.sources[p.name] = "default"
                return default
        return _NO

    def _from_records(
        self, name: str, records: list[dict[str, Any]], banned: frozenset[str]
    ) -> Any:
        for rec in records:
            value = rec.get(name)
            if (
                value is not None
                and not isinstance(value, dict | list)
                and str(value) not in banned
            ):
                return value
            for plural in plural_names(name):
                values = rec.get(plural)
                if isinstance(values, list) and values:
                    flat = [
                        v for v in values if not isinstance(v, dict | list) and str(v) not in banned
                    ]
                    if flat:
                        return self.rng.choice(flat)
        return _NO

    def _current(self, d: _Draw, name: str) -> frozenset[str]:
        """What an update's parameter ``name`` would leave as it is (:func:`updates`): the
        value of the column of that name in the rows its entity arguments name, read from
        the live state (the draft this conversation made, not the initial state's records),
        as text. Empty for any other tool, or where no entity's row has such a column."""
        spec = d.step.tool
        if not updates(spec):
            return frozenset()
        out: set[str] = set()
        for param, entity in spec.entity_params.items():
            value = d.args.get(param)
            source = self.server.entities.get(entity.name)
            if (
                value is None
                or isinstance(value, list | dict)
                or source is None
                or source.model is None
                or name not in source.model.__table__.columns  # type: ignore[attr-defined]
                or name == key_column(source.model)
            ):
                continue
            try:
                row = self.session.context().sql.first(
                    record_by_key(source.model), key=source.lookup_key(value)
                )
            finally:
                self.session.rollback()
            now = getattr(row, name, None) if row is not None else None
            column = source.model.__table__.columns[name]  # type: ignore[attr-defined]
            if now is not None and _is_bool(column):
                now = bool(now)
            if now is not None:
                out.add(str(now))
        return frozenset(out)

    def _fitting(self, source: ValueSource, d: _Draw, banned: frozenset[str]) -> Any:
        """What a ``values=`` source gives for the call as drawn so far (None: _NO)."""
        bound = Bound(dict(d.args), dict(d.bound), _Choices(self, d))
        try:
            value = source(self.session.context(), self.rng, bound)
        finally:
            self.session.rollback()
        if isinstance(value, Prepared):
            return _NO if str(value.value) in banned else value
        return _NO if value is None or str(value) in banned else value

    def _example(self, source: Any, banned: frozenset[str] = frozenset()) -> Any:
        if callable(source):
            try:
                value = source(self.session.context(), self.rng)
            finally:
                self.session.rollback()
            return _NO if value is None or str(value) in banned else value
        values = [v for v in source if str(v) not in banned]
        return self.rng.choice(values) if values else _NO


def repair_tools(message: str, failing: ToolSpec, tools: Mapping[str, ToolSpec]) -> list[str]:
    """Tools an error message tells the caller to run first, in the order named.

    Only tools that can fix the failure qualify: writes (they change state) and
    tools returning a kind the failing tool consumes (a credential, an id).
    """
    consumes = {e.name for e in failing.entity_params.values()}
    out: list[str] = []
    for word in re.findall(r"[A-Za-z_][A-Za-z0-9_]*", message):
        spec = tools.get(word)
        if spec is None or word == failing.name or word in out:
            continue
        if spec.writes or consumes & set(spec.returns):
            out.append(word)
    return out


TEXT_FIELDS = frozenset(
    {"body", "content", "description", "message", "name", "note", "subject", "text", "title"}
)
"""Parameters that hold what a person writes (a title, a note, a line of a file): a write
of the conversation never repeats the text an earlier call wrote to one of them."""


def _written_before(d: _Draw, name: str) -> frozenset[str]:
    """The texts earlier calls of the conversation gave a :data:`TEXT_FIELDS` parameter
    (``title``, ``text``, ``content`` alike) where ``d`` draws one for a write: not an issue
    renamed to the title of the one just created, nor "## Notes" appended to a file the
    conversation just inserted it into."""
    if not d.step.tool.writes or name not in TEXT_FIELDS:
        return frozenset()
    return frozenset(
        str(value)
        for done in d.done
        for field_name, value in done.args.items()
        if field_name in TEXT_FIELDS and isinstance(value, str)
    )


def message_hints(message: str, tool: ToolSpec) -> dict[str, Any]:
    """Argument values an error message suggests for ``tool``, read from the sentence naming it.

    >>> from prove_gym import get_registry  # doctest: +SKIP
    >>> message_hints("Shift to park with shift_gear (gear='park') first.", shift_gear)  # doctest: +SKIP
    {'gear': 'park'}

    Both ``tool (name=value)`` and ``tool with name 'value'`` are read; a value must be
    quoted, a number, or true/false, and ``name`` must be one of the tool's parameters.
    """
    out: dict[str, Any] = {}
    names = [p.name for p in tool.params]
    for m in re.finditer(rf"\b{re.escape(tool.name)}\b", message):
        sentence = re.split(r"[.;!?](?:\s|$)", message[m.end() :], maxsplit=1)[0]
        for name in names:
            found = re.search(
                rf"\b{re.escape(name)}\b\s*[=:]?\s*"
                r"(?:'([^']*)'|\"([^\"]*)\"|(true|false|-?\d+(?:\.\d+)?)\b)",
                sentence,
                re.IGNORECASE,
            )
            if found is None or name in out:
                continue
            single, double, bare = found.groups()
            if single is not None or double is not None:
                out[name] = single if single is not None else double
            elif bare.lower() in ("true", "false"):
                out[name] = bare.lower() == "true"
            else:
                out[name] = float(bare) if "." in bare else int(bare)
        # "then shift to park with shift_gear": an enum value named in the same clause
        before = re.split(r"[.;,:]\s", message[: m.start()])[-1]
        clause = before + " " + re.split(r"[.;,:](?:\s|$)", message[m.end() :], maxsplit=1)[0]
        props = tool.input_schema().get("properties", {})
        for name in names:
            if name in out:
                continue
            named = [
                v
                for v in enum_choices(props.get(name, {}))
                if isinstance(v, str) and re.search(rf"\b{re.escape(v)}\b", clause)
            ]
            if len(named) == 1:
                out[name] = named[0]
    return out


_MONTH = re.compile(r"^\d{4}-\d{2}$")
_BOUND_WORDS = ("start", "end", "from", "until", "since", "after", "before", "earliest", "latest")


def _one_period(args: dict[str, Any], sources: dict[str, str], required: Collection[str]) -> None:
    """A read's filters drawn together agree: a month ("2026-06") and a day bound
    (``start_date``, ``end_date``: "2026-07-28") outside it would ask for June and for
    days in July at once, so the month goes (the bounds say the period), if it is optional.

    >>> args = {"month": "2026-06", "start_date": "2026-06-08", "end_date": "2026-07-28"}
    >>> _one_period(args, {}, ()); sorted(args)
    ['end_date', 'start_date']
    >>> args = {"month": "2026-06", "start_date": "2026-06-08"}
    >>> _one_period(args, {}, ()); sorted(args)
    ['month', 'start_date']
    """
    days = [
        str(v)[:7]
        for k, v in args.items()
        if isinstance(v, str) and _ISO_DAY.match(v) and any(w in k for w in _BOUND_WORDS)
    ]
    if not days:
        return
    for name in [k for k, v in args.items() if isinstance(v, str) and _MONTH.match(v)]:
        if name not in required and sources.get(name) != "hint" and set(days) != {args[name]}:
            del args[name]
            sources.pop(name, None)


def updates(spec: ToolSpec) -> bool:
    """Whether ``spec`` changes what it names and makes nothing: a write whose every returned
    kind is one it takes (``update_draft``, ``edit_message``; not ``refund_charge``, which
    makes a refund, nor ``reply_to_message``, which makes a draft). Its other parameters
    are new values for the fields of the same names."""
    taken = {e.name for e in spec.entity_params.values()}
    return spec.writes and bool(taken) and all(kind in taken for kind in spec.returns)


def moves(spec: ToolSpec, server: Server) -> frozenset[str]:
    """The identifier parameters of an update (:func:`updates`) that set a reference of the
    row another of its identifiers names: one of a kind that is no persona of ``server``,
    named as a column of that row's table (``update_event``'s ``calendar_id``,
    ``assign_issue``'s ``assignee_id``). A persona's id names who acts
    (``set_default_address``'s ``customer_id``), not a new value."""
    if not updates(spec):
        return frozenset()
    out = set()
    for name, entity in spec.entity_params.items():
        if entity.name in server.persona or entity.many:
            continue
        for other, row in spec.entity_params.items():
            source = server.entities.get(row.name)
            if (
                other != name
                and source is not None
                and source.model is not None
                and name in source.model.__table__.columns  # type: ignore[attr-defined]
            ):
                out.add(name)
    return frozenset(out)


def _is_bool(column: Any) -> bool:
    """Whether a table column holds booleans (SQLite stores them as 0 and 1)."""
    try:
        return column.type.python_type is bool
    except NotImplementedError:
        return False


OWN_NAMES = frozenset({"name", "title"})
"""Parameters that name the thing a call makes: a list, an account or a payee is named
for what it is, never after the person whose record the call uses."""


def _names_new(spec: ToolSpec, param: str) -> bool:
    """Whether ``param`` names the entity ``spec`` makes (``create_list``'s ``name``: a tool
    that writes and returns a kind it takes no identifier of), so no other record's
    ``name`` fills it ("Create a list called Eric Floyd" after the user's own name)."""
    if param not in OWN_NAMES or not spec.writes:
        return False
    taken = {e.name for e in spec.entity_params.values()}
    return any(kind not in taken for kind in spec.returns)


def _is_default(value: Any, prop: Mapping[str, Any] | None) -> bool:
    """Whether ``value`` is the parameter's schema default (same JSON: ``1`` is not ``true``)."""
    if not prop or "default" not in prop:
        return False
    return json.dumps(value, sort_keys=True) == json.dumps(prop["default"], sort_keys=True)
