"""``prove-gym lint-data``: flaws a reader finds in synthesized conversations, counted.

Each flaw class is one cheap check of a task's JSON (this project's task format, as
``prove-gym synth`` writes it or as an LLM might), found once by reading data and kept
as a check from then on. A check returns what it found in one task: a snippet per flaw
(the offending text, or the calls), empty when the task is clean. :func:`lint` runs every
class over a dataset and counts the tasks each flags; a class is over its limit when it
flags more tasks than it allows (by default none, except raw enum tokens: at most 1%).

The checks read only the task and the installed servers' tool declarations (names,
parameters, enums, descriptions, whether a tool writes, the entity kinds it returns) and,
for the two classes that need what existed (``id_before_creation``, ``moot_write``), the
records of the task's initial state, sampled at its seed and size on first use; nothing
is executed, so a dataset of any size is read in one pass. Tools that are not installed are read from the task's ``tool_schemas`` where it
has them, else by name alone.

An abstention turn's hidden tool is read off the installed server: a tool of one of the
task's servers that the task does not offer. Whether an offered tool could serve its
request anyway is what the servers declare (``stands_in_for``); a task whose tools are
not installed is not checked for it.
"""

from __future__ import annotations

import functools
import json
import random
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from prove_gym.registry import Registry, get_registry
from prove_gym.server.base import Server
from prove_gym.server.tool import Bound, Prepared, ToolSpec
from prove_gym.synth.chains import COPY_VERBS
from prove_gym.synth.enums import enum_values, stated
from prove_gym.synth.grounding import extract_ids, moves
from prove_gym.synth.knowledge import ORDINALS
from prove_gym.synth.render import CHANGE_VERBS, LOGIN, UNDO_VERBS, unreadable_name, words

EXAMPLES = 3
"""Examples kept per flaw class."""
SNIPPET = 40
"""Characters of context kept either side of a match in an example."""


# ------------------------------------------------------------------ a task, read once
def _mapping(value: Any) -> Mapping[str, Any]:
    """``value`` if it is a JSON object, else an empty one (hostile input is read, not trusted)."""
    return value if isinstance(value, Mapping) else {}


def _list(value: Any) -> list[Any]:
    """``value`` if it is a JSON array, else an empty one."""
    return value if isinstance(value, list) else []


@dataclass(frozen=True)
class Tool:
    """What the checks read about one offered tool."""

    name: str
    params: tuple[str, ...]
    enums: Mapping[str, tuple[str, ...]]
    writes: bool
    returns: tuple[str, ...]
    takes: tuple[str, ...]
    description: str
    param_descriptions: Mapping[str, str]
    inverses: frozenset[str] = frozenset()
    """Tools declared to undo this one, or that this one undoes (``inverse_of=``, both ways)."""
    idempotent: bool = False
    entities: tuple[tuple[str, str], ...] = ()
    """``(parameter, entity kind)`` of its entity parameters."""
    undoes: tuple[str, ...] = ()
    """The tools this one declares it undoes (its own ``inverse_of=``): it ends what they made."""
    ends_when: Mapping[str, Any] = field(default_factory=dict)
    """Argument values with which a call ends what it names (``ends_when=``)."""
    checks: Mapping[str, Callable[..., Any]] = field(default_factory=dict)
    """The value sources of its identifiers (``values=`` on an ``Entity`` parameter): each
    says whether the id a call passes fits the rest of the call (returns it unchanged)."""
    moves: frozenset[str] = frozenset()
    """Its identifier parameters that set a reference of the row another one names
    (:func:`prove_gym.synth.grounding.moves`: ``update_event``'s ``calendar_id``)."""
    makes: tuple[str, ...] = ()
    """Kinds a call leaves behind that outlive what it names: kinds it returns without
    taking one, which a tool of its server ends (``post_recurring_expense`` records a
    transaction, which ``delete_transaction`` ends; ``add_to_cart`` returns a product,
    which nothing ends: it makes none)."""

    @property
    def declared(self) -> bool:
        """Whether the tool's inverses are declared: then name rules do not apply to it."""
        return bool(self.inverses)

    @classmethod
    def of(
        cls,
        spec: ToolSpec,
        inverses: frozenset[str] = frozenset(),
        endable: frozenset[str] = frozenset(),
        moves: frozenset[str] = frozenset(),
    ) -> Tool:
        """From a declared tool; ``endable``: the kinds a tool of its server ends;
        ``moves``: its reference parameters (:func:`prove_gym.synth.grounding.moves`)."""
        props = spec.input_schema().get("properties", {})
        return cls(
            name=spec.name,
            params=tuple(p.name for p in spec.params),
            enums={k: tuple(enum_values(v)) for k, v in props.items() if enum_values(v)},
            writes=spec.writes,
            returns=tuple(spec.returns),
            takes=tuple(e.name for e in spec.entity_params.values()),
            description=spec.description,
            param_descriptions={k: str(v.get("description", "")) for k, v in props.items()},
            inverses=inverses,
            idempotent=spec.idempotent,
            undoes=spec.inverse_of,
            entities=tuple((k, e.name) for k, e in spec.entity_params.items()),
            ends_when=dict(spec.ends_when),
            checks={k: v for k, v in spec.values.items() if k in spec.entity_params},
            moves=moves,
            makes=tuple(
                k
                for k in spec.returns
                if k in endable and k not in {e.name for e in spec.entity_params.values()}
            )
            if spec.writes and spec.name.split("_")[0] not in CHANGE_ONLY_VERBS
            else (),
        )

    @classmethod
    def of_schema(cls, schema: Mapping[str, Any]) -> Tool | None:
        """From a plain OpenAI function schema (``Task.tool_schemas``)."""
        fn = schema.get("function", schema)
        if not isinstance(fn, Mapping) or not isinstance(fn.get("name"), str):
            return None
        props = _mapping(_mapping(fn.get("parameters")).get("properties"))
        hints = fn.get("annotations") or schema.get("annotations") or {}
        read_only = hints.get("readOnlyHint") if isinstance(hints, Mapping) else None
        return cls(
            name=fn["name"],
            params=tuple(str(k) for k in props),
            enums={
                str(k): tuple(enum_values(v))
                for k, v in props.items()
                if isinstance(v, Mapping) and enum_values(v)
            },
            writes=read_only is not True,
            returns=(),
            takes=(),
            description=str(fn.get("description", "")),
            param_descriptions={
                str(k): str(v.get("description", ""))
                for k, v in props.items()
                if isinstance(v, Mapping)
            },
        )


@dataclass(frozen=True)
class Step:
    """One scored gold call (failed attempts and given-up calls are left out)."""

    turn: int
    id: str
    name: str
    arguments: Mapping[str, Any]
    depends_on: tuple[str, ...]

    def call(self) -> str:
        """``name(key=value, ...)`` as an example shows it."""
        args = ", ".join(
            f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in self.arguments.items()
        )
        text = f"{self.name}({args})"
        return text if len(text) <= 100 else text[:97] + "..."


@dataclass
class LintTask:
    """A task as the checks read it: its user turns, scored gold calls and offered tools."""

    id: str
    data: Mapping[str, Any]
    users: list[str]
    steps: list[Step]
    tools: dict[str, Tool]
    unknown: set[str] = field(default_factory=set)
    requested: list[Step] = field(default_factory=list)
    """The calls the user asked for, in order: the scored ones and those the gold gives up
    (a failed call last in its turn); not the failed attempts it recovers from."""
    stood_in: list[tuple[str, str]] = field(default_factory=list)
    """(offered tool, hidden tool it declares it stands in for), qualified names: a tool of
    one of the task's installed servers left out of the offered ones while a tool that can
    serve its requests is offered."""
    existed: Callable[[str, str], bool] | None = None
    """Whether an id of an entity kind is in the task's initial state (its installed servers
    at its seed and size, sampled on first use); ``None`` where none is installed."""
    record: Callable[[str, str], Mapping[str, Any] | None] | None = None
    """The record of an id of an entity kind in the task's initial state (as its entity
    source lists it), or None for an id it does not hold; ``None`` where no server of the
    task is installed."""
    session: Callable[[], Any] | None = None
    """Opens a session on the task's initial state (its first installed server, at its seed
    and size), or None where none is installed; the caller closes it."""
    persona: Mapping[str, str] = field(default_factory=dict)
    """The persona kinds its installed servers declare (``Server(persona=...)``), each with
    the field naming its id (``{"customer": "customer_id"}``)."""

    def tool(self, name: str) -> Tool | None:
        return self.tools.get(name)

    def open_session(self) -> Any | None:
        """A session on the task's initial state (the caller closes it), or None where no
        server of the task is installed or its size is out of range."""
        if self.session is None:
            return None
        try:
            return self.session()
        except ValueError:  # a size out of range: no state to read
            return None

    def writes(self, name: str) -> bool:
        """Whether a called tool writes (an unknown one is taken to)."""
        tool = self.tools.get(name)
        return tool.writes if tool is not None else True

    @property
    def turns(self) -> list[Mapping[str, Any]]:
        return [t for t in _list(self.data.get("turns")) if isinstance(t, Mapping)]


class Reader:
    """Reads task dicts into :class:`LintTask`, with the installed tools' declarations."""

    def __init__(self, registry: Registry | None = None) -> None:
        self.registry = registry or get_registry()
        self._tools: dict[str, Tool | None] = {}
        self._ends: dict[str, frozenset[str]] = {}

    def _tool(self, qualified: str) -> Tool | None:
        if qualified not in self._tools:
            try:
                spec = self.registry.get_tool(qualified)
                server = self.registry.get_server(spec.server_name)
                self._tools[qualified] = Tool.of(
                    spec, server.inverses(spec.name), self._endable(server), moves(spec, server)
                )
            except KeyError:
                self._tools[qualified] = None
        return self._tools[qualified]

    def _endable(self, server: Server) -> frozenset[str]:
        """The kinds a visible write of ``server`` ends: one that declares ``inverse_of=``
        or ``ends_when=``, or whose verb ends what it names (:data:`DESTROY_VERBS`)."""
        if server.name not in self._ends:
            self._ends[server.name] = frozenset(
                e.name
                for t in server.visible_tools()
                if t.writes
                and (t.inverse_of or t.ends_when or _verb_object(t.name)[0] in DESTROY_VERBS)
                for e in t.entity_params.values()
            )
        return self._ends[server.name]

    def read(self, data: Mapping[str, Any]) -> LintTask:
        turns = [t for t in _list(data.get("turns")) if isinstance(t, Mapping)]
        users = [str(t.get("user") or "") for t in turns]
        steps = []
        requested = []
        for i, turn in enumerate(turns):
            calls = [s for s in _list(turn.get("steps")) if isinstance(s, Mapping)]
            for n, s in enumerate(calls):
                given_up = s.get("expect_error") is not None and n == len(calls) - 1
                if s.get("expect_error") is not None and not given_up:
                    continue  # an attempt the gold recovers from: nobody asked for it
                args = _mapping(s.get("arguments"))
                step = Step(
                    i,
                    str(s.get("id", "")),
                    str(s.get("name", "")),
                    args,
                    tuple(str(d) for d in _list(s.get("depends_on"))),
                )
                requested.append(step)
                if not given_up:
                    steps.append(step)
        tools: dict[str, Tool] = {}
        unknown: set[str] = set()
        if isinstance(data.get("tool_schemas"), list):
            for schema in data["tool_schemas"]:
                tool = Tool.of_schema(schema) if isinstance(schema, Mapping) else None
                if tool is not None:
                    tools[tool.name] = tool
        else:
            names = data.get("tools")
            if not isinstance(names, list):
                names = [
                    spec.qualified_name
                    for server in _list(data.get("servers"))
                    if str(server) in self.registry.servers
                    for spec in self.registry.get_server(str(server)).visible_tools()
                ]
            for q in names:
                tool = self._tool(str(q))
                if tool is None:
                    unknown.add(str(q))
                else:
                    tools[tool.name] = tool
        task = LintTask(
            str(data.get("id", "?")), data, users, steps, tools, unknown, requested=requested
        )
        if isinstance(data.get("tools"), list):
            task.stood_in = self._stood_in(data, {str(q) for q in data["tools"]})
        task.record = self._record(data)
        task.session = self._session(data)
        task.persona = {
            kind: server.entities[kind].key
            for name in _list(data.get("servers"))
            if (server := self.registry.servers.get(str(name))) is not None
            for kind in server.persona
            if kind in server.entities
        }
        task.existed = (
            None
            if task.record is None
            else functools.partial(lambda r, kind, value: r(kind, value) is not None, task.record)
        )
        return task

    def _record(
        self, data: Mapping[str, Any]
    ) -> Callable[[str, str], Mapping[str, Any] | None] | None:
        """The record of an id of an entity kind in the task's initial state (its installed
        servers at its seed and size, sampled on first use), or None where none is
        installed."""
        from prove_gym.synth.grounding import entity_index

        seed, size = data.get("seed"), data.get("size")
        servers = [self.registry.servers.get(str(n)) for n in _list(data.get("servers"))]
        installed = [s for s in servers if s is not None]
        if not installed or type(seed) is not int or (size is not None and type(size) is not int):
            return None

        @functools.cache
        def record(kind: str, value: str) -> Mapping[str, Any] | None:
            for server in installed:
                if kind in server.entities:
                    try:
                        session = server.session(seed, size)
                    except ValueError:  # a size out of range: what existed is unknown
                        return None
                    try:
                        found = entity_index(session).record(kind, value)
                        if found is not None:
                            return found
                    finally:
                        session.close()
            return None

        return record

    def _session(self, data: Mapping[str, Any]) -> Callable[[], Any] | None:
        """A function opening a session on the task's initial state, or None."""
        seed, size = data.get("seed"), data.get("size")
        servers = [self.registry.servers.get(str(n)) for n in _list(data.get("servers"))]
        installed = [s for s in servers if s is not None]
        if not installed or type(seed) is not int or (size is not None and type(size) is not int):
            return None
        return functools.partial(installed[0].session, seed, size)

    def _stood_in(self, data: Mapping[str, Any], offered: set[str]) -> list[tuple[str, str]]:
        out = []
        for name in _list(data.get("servers")):
            server = self.registry.servers.get(str(name))
            if server is None:
                continue
            for hidden in server.visible_tools():
                if hidden.qualified_name in offered:
                    continue
                for stand_in in server.stand_ins(hidden.name):
                    if f"{server.name}.{stand_in}" in offered:
                        out.append((f"{server.name}.{stand_in}", hidden.qualified_name))
        return out


# ------------------------------------------------------------------------ helpers
def _around(text: str, start: int, end: int) -> str:
    lo, hi = max(0, start - SNIPPET), min(len(text), end + SNIPPET)
    return ("..." if lo else "") + text[lo:hi] + ("..." if hi < len(text) else "")


def _matches(pattern: re.Pattern[str], texts: Iterable[str]) -> list[str]:
    return [_around(t, m.start(), m.end()) for t in texts for m in pattern.finditer(t)]


@functools.lru_cache(maxsize=1024)
def _phrase_pattern(phrases: frozenset[str], prefix: str) -> re.Pattern[str] | None:
    """``prefix`` followed by any of ``phrases`` as whole words, ignoring case (longest first)."""
    if not phrases:
        return None
    alternatives = "|".join(re.escape(p) for p in sorted(phrases, key=lambda p: (-len(p), p)))
    return re.compile(rf"\b{prefix}(?:{alternatives})\b", re.IGNORECASE)


def _params(task: LintTask) -> frozenset[str]:
    return frozenset(p for t in task.tools.values() for p in t.params)


# ------------------------------------------------------------------------ the checks
def some_placeholder(task: LintTask) -> list[str]:
    """Template text for a value left out: "some <parameter>" ("some role", "some to
    currency") in a user turn, for a parameter of an offered tool."""
    pattern = _phrase_pattern(frozenset(words(p) for p in _params(task)), "some ")
    return _matches(pattern, task.users) if pattern else []


ISO_DATETIME = re.compile(
    r"\b\d{4}-\d{2}-\d{2}T\d{2}:\d{2}"
    r"|(?<![\w/.-])\d{4}-(?:0[1-9]|1[0-2])(?:-\d{2})?(?![\w/-]|\.\w)"
)


def iso_datetime(task: LintTask) -> list[str]:
    """An ISO 8601 date and time ("2026-08-15T17:00"), date ("2026-08-15") or month
    ("in 2026-08") in a user turn: people say dates, months and times, they do not type
    timestamps. Not a part of a name ("report-2026-08.pdf", "logs/2026-08-15.txt"), nor
    of a longer value a gold call takes, which the user states as it is (a file called
    "Screenshot 2026-06-03 at 10.29.00.png")."""
    names = [
        v
        for step in task.requested or task.steps
        for v in _strings(step.arguments)
        if ISO_DATETIME.fullmatch(v) is None and ISO_DATETIME.search(v)
    ]
    return [
        _around(text, m.start(), m.end())
        for text in task.users
        for m in ISO_DATETIME.finditer(text)
        if not any(
            text.find(name, max(0, m.end() - len(name)), m.start() + len(name)) >= 0
            for name in names
        )
        and not _in_file_name(text, m.start(), m.end())
    ]


_NAME_BEFORE = re.compile(r"/[^/\s]+ \Z")
_EXTENSION_AFTER = re.compile(
    r"[^/\s]*(?: [^/\s]+){0,4}?\.[A-Za-z0-9]{2,4}(?=\s|\Z|[,;:!?)]|\.(?:\s|\Z))"
)


def _in_file_name(text: str, start: int, end: int) -> bool:
    """Whether the date at ``text[start:end]`` sits in a path's last name with spaces in it
    (".../Screenshots/Screenshot 2026-07-19 at 17.09.00.png"), which a turn states even when
    no gold call takes it (a request to abstain from). Reads at most 64 characters each
    side."""
    return (
        _NAME_BEFORE.search(text[max(0, start - 64) : start]) is not None
        and _EXTENSION_AFTER.match(text[end : end + 64]) is not None
    )


def _strings(value: Any) -> Iterator[str]:
    """The strings in an argument value (in lists and objects too)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)


SNAKE = re.compile(r"(?<![\w.@/-])[A-Za-z0-9]+(?:_[A-Za-z0-9]+)+(?![\w@/-])")


def raw_enum_token(task: LintTask) -> list[str]:
    """A snake_case enum value of an offered tool written as it is in a user turn
    ("want_to_go", "requests_received") instead of as words."""
    values = {v for t in task.tools.values() for vs in t.enums.values() for v in vs if "_" in v}
    return [
        _around(text, m.start(), m.end())
        for text in task.users
        for m in SNAKE.finditer(text)
        if m.group() in values
    ]


def _named(name: str) -> frozenset[str]:
    """How a template names parameter ``name``: its words, and without "id"
    (``product_id``: "product id", "product")."""
    said = words(name)
    bare = re.sub(r" ids?$", "", said)
    return frozenset({said, bare} if bare else {said})


@functools.lru_cache(maxsize=1024)
def _template_pattern(names: frozenset[str]) -> re.Pattern[str] | None:
    """A parameter's name in a template's frame: "as the <name>", "set the <name> to",
    "the <name> should be" (ignoring case, whole words)."""
    if not names:
        return None
    alternatives = "|".join(re.escape(n) for n in sorted(names, key=lambda n: (-len(n), n)))
    return re.compile(
        rf"\bas the (?:{alternatives})\b|\bset the (?:{alternatives}) to\b"
        rf"|\bthe (?:{alternatives}) should be\b",
        re.IGNORECASE,
    )


def parameter_name(task: LintTask) -> list[str]:
    """A parameter's name written as if it were words: names with ``_`` of the offered
    tools that do not read as English (:func:`unreadable_name`: "Set the duration
    minutes to 45", "the temperature c", "the to currency"), and any parameter's name in
    a template's frame ("Use 8 as the count", "Set the limit to 5", "The author should
    be usr_077", "Use the first product ... as the product")."""
    params = _params(task)
    names = frozenset(words(p) for p in params if unreadable_name(p))
    pattern = _phrase_pattern(names, "the ")
    found = _matches(pattern, task.users) if pattern else []
    framed = _template_pattern(frozenset(n for p in params for n in _named(p)))
    return found + (_matches(framed, task.users) if framed else [])


CHANGE_ONLY_VERBS = CHANGE_VERBS | {"disable", "enable", "mark", "move", "rename", "set"}
"""First words of tools that change what they name and make nothing, whatever they return
(``set_automation_enabled`` returns the automation's scene; it does not make one): the
renderer's :data:`~prove_gym.synth.render.CHANGE_VERBS` and the verbs of settings."""
INVERSE_VERBS = {
    frozenset(pair)
    for pair in (
        ("like", "unlike"),
        ("follow", "unfollow"),
        ("block", "unblock"),
        ("lock", "unlock"),
        ("pin", "unpin"),
        ("archive", "unarchive"),
        ("mute", "unmute"),
        ("star", "unstar"),
        ("add", "remove"),
        ("start", "stop"),
        ("apply", "remove"),
        ("create", "delete"),
        ("save", "remove"),
        ("enable", "disable"),
        ("open", "close"),
        ("start", "stop"),
        ("engage", "release"),
        ("engage", "cancel"),
        ("subscribe", "unsubscribe"),
        ("assign", "unassign"),
        ("attach", "detach"),
        ("join", "leave"),
        ("on", "off"),
        ("true", "false"),
        ("approve", "revoke"),
        ("mkdir", "rmdir"),
        ("touch", "rm"),
    )
}
"""Verbs (and action values) that undo each other."""
DESTROY_VERBS = frozenset(
    {"delete", "detach", "leave", "remove", "rm", "rmdir", "unassign", "unsubscribe"}
)
"""Verbs that end an entity: a creation after one makes another entity, undoing nothing."""
MAKE_VERBS = frozenset(
    {"add", "book", "create", "mkdir", "open", "place", "post", "record", "schedule"}
)
"""Verbs that make an entity: ending what one made (by its id) undoes it (``mkdir`` then
``rmdir`` of the folder it made)."""
_OBJECT_NOISE = frozenset(["to", "from", "on", "in", "into", "of", "saved"])


def _verb_object(name: str) -> tuple[str, tuple[str, ...]]:
    """``add_to_cart`` -> ("add", ("cart",)); ``remove_saved_place`` -> ("remove", ("place",))."""
    verb, *rest = name.split("_")
    return verb, tuple(w for w in rest if w not in _OBJECT_NOISE)


def _inverse_tools(task: LintTask, a: str, b: str) -> bool | None:
    """Whether ``b`` is declared to undo ``a`` (``inverse_of=``, read both ways), or None
    when neither tool declares inverses (then the name rules decide)."""
    ta, tb = task.tool(a), task.tool(b)
    if (ta is None or not ta.declared) and (tb is None or not tb.declared):
        return None
    return (ta is not None and b in ta.inverses) or (tb is not None and a in tb.inverses)


def _ends(task: LintTask, step: Step) -> bool:
    """Whether a call ends what it names (``delete_event``): what is made after it is
    another entity."""
    tool = task.tool(step.name)
    return _verb_object(step.name)[0] in DESTROY_VERBS or (tool is not None and bool(tool.undoes))


def _undoes(task: LintTask, a: Step, b: Step) -> str | None:
    """Why ``b`` undoes ``a`` on the same target, or None.

    Declared inverses first (``unlike_post`` declares ``inverse_of="like_post"``); for
    tools that declare none, by name (``like_post`` / ``unlike_post``, ``add_invitee`` /
    ``remove_invitee``: :data:`INVERSE_VERBS`) or, for one tool, by an argument whose
    values undo each other (``set_lock`` with ``lock`` then ``unlock``). The target is the
    same when every argument both calls have (but the action) is equal and ``b`` has no
    other, or, with none in common, when ``b`` depends on ``a`` and ``a`` ends nothing
    (``delete_event`` then ``create_event`` makes another).
    """
    action: str | None = None
    if a.name == b.name:
        differ = [
            k for k in a.arguments.keys() & b.arguments.keys() if a.arguments[k] != b.arguments[k]
        ]
        if len(differ) != 1:
            return None
        action = differ[0]
        values = frozenset(str(x[action]).lower() for x in (a.arguments, b.arguments))
        if values not in INVERSE_VERBS:
            return None
    else:
        declared = _inverse_tools(task, a.name, b.name)
        if declared is False:
            return None
        if declared and a.id in b.depends_on and not _ends(task, a):
            # the inverse took what the first call made or changed (``mkdir ~/drafts``, then
            # ``rmdir`` of the path it answered): the same target, however it is spelled
            return f"{a.call()} then {b.call()}"
        if declared is None:
            (va, oa), (vb, ob) = _verb_object(a.name), _verb_object(b.name)
            if va in MAKE_VERBS and vb in DESTROY_VERBS and a.id in b.depends_on:
                # what a call made, ended by a call that took its id: record an expense, then
                # delete that transaction
                return f"{a.call()} then {b.call()}"
            if oa != ob or frozenset((va, vb)) not in INVERSE_VERBS:
                return None
    common = (a.arguments.keys() & b.arguments.keys()) - {action}
    if common:
        if any(a.arguments[k] != b.arguments[k] for k in common):
            return None
        if set(b.arguments) - common - {action}:
            return None  # it names what the first did not: removing a coupon, applying FLASH30
    elif (a.arguments or b.arguments) and (a.id not in b.depends_on or _ends(task, a)):
        return None  # what is made after a deletion is another entity (calls that name
        # nothing act on the one thing they serve: stop the engine, then start it)
    return f"{a.call()} then {b.call()}"


def inverse_write(task: LintTask) -> list[str]:
    """A write followed by its inverse on the same target in one task: like then unlike
    the same post, add then remove the same invitee, lock then unlock the same door.

    The tools' declarations first (``inverse_of=``), name rules (:data:`INVERSE_VERBS`)
    for tools that declare none.
    """
    writes = [s for s in task.steps if task.writes(s.name)]
    out = []
    for i, a in enumerate(writes):
        for b in writes[i + 1 :]:
            why = _undoes(task, a, b)
            if why is not None:
                out.append(why)
    return out


def _key(step: Step) -> str:
    return step.name + json.dumps(step.arguments, sort_keys=True, ensure_ascii=False)


def repeated_write(task: LintTask) -> list[str]:
    """The same write with the same arguments twice in one task (a $156.48 expense
    recorded twice; for a tool declared ``idempotent``, a second call that changes
    nothing)."""
    seen: set[str] = set()
    out = []
    for s in task.steps:
        if not task.writes(s.name):
            continue
        key = _key(s)
        if key in seen:
            tool = task.tool(s.name)
            why = " (idempotent: the second changes nothing)" if tool and tool.idempotent else ""
            out.append(f"{s.call()} twice{why}")
        seen.add(key)
    return out


def _ended(task: LintTask, step: Step) -> dict[str, Any] | None:
    """What a call ends, as the arguments that name it, or None for a call that ends
    nothing: a deletion by name or declaration (:func:`_ends`), of the entity its name
    says (``delete_message`` ends its ``message_id``; ``remove_coupon`` ends no customer,
    ``delete_lines`` no file), or a write called with its ``ends_when=`` values
    (``update_cart_item`` with quantity 0 ends the line its customer and variant name).
    A tool that is not installed names what it ends by its arguments' names."""
    tool = task.tool(step.name)
    if (
        tool is not None
        and tool.ends_when
        and all(k in step.arguments and step.arguments[k] == v for k, v in tool.ends_when.items())
    ):
        names = [k for k, _ in tool.entities]
    elif _ends(task, step):
        pairs = (
            tool.entities
            if tool is not None and tool.entities
            else [(k, k.removesuffix("_id")) for k in step.arguments]
        )
        names = [k for k, kind in pairs if f"_{kind}_" in f"_{step.name}_"]
    else:
        return None
    target = {k: step.arguments[k] for k in names if k in step.arguments}
    return target or None


_OWN_FIELDS = ("name", "title", "payee", "subject", "summary", "description")
"""Fields that say what an entity is: a re-created one repeats one of them."""


def _recreated(task: LintTask, ended: Step, target: Mapping[str, Any], made: Step) -> bool:
    """Whether ``made`` creates again what ``ended`` ended (cancel the rent, then add a rent
    bill to the same payee): it makes an entity of the kind ended whose name, title or
    payee is the ended one's in the initial state."""
    end_tool, tool = task.tool(ended.name), task.tool(made.name)
    if end_tool is None or tool is None or task.record is None or not tool.writes:
        return False
    for param, kind in end_tool.entities:
        if param not in target or kind not in tool.returns or kind in dict(tool.entities).values():
            continue
        value = target[param]
        rec = task.record(kind, str(value)) if not isinstance(value, list) else None
        if rec is None:
            continue
        for f in _OWN_FIELDS:
            mine, theirs = made.arguments.get(f), rec.get(f)
            if (
                isinstance(mine, str)
                and isinstance(theirs, str)
                and mine.strip()
                and mine.strip().casefold() == theirs.strip().casefold()
            ):
                return True
    return False


def _made_then_ended(task: LintTask, made: Step, ended: Step, target: Mapping[str, Any]) -> bool:
    """Whether ``ended`` ends what ``made`` created in the same task (a reply in a thread,
    then deleting that reply): ``ended`` depends on ``made``, which creates the kind it
    ends (:func:`_creates`: a reply or copy of a message is a message) without taking that
    id, and the id is not in the task's initial state (where that is known)."""
    if made.id not in ended.depends_on:
        return False
    tool = task.tool(ended.name)
    kinds = dict(tool.entities) if tool is not None else {}
    for param, value in target.items():
        kind = kinds.get(param, param.removesuffix("_id"))
        if isinstance(value, list | dict) or str(value) in map(str, made.arguments.values()):
            continue
        if not _creates(task.tool(made.name), made.name, words(kind)):
            continue
        if task.existed is not None and task.existed(kind, str(value)):
            continue  # it was there before the task: the dependency is another one
        return True
    return False


def moot_write(task: LintTask) -> list[str]:
    """A write that a later call of the same task makes moot: a write to an entity that a
    later call ends (edit or react to a message, then delete it; add a variant to a cart,
    then set its quantity to 0), an entity the task made and then ends (reply in a
    thread, then delete that reply), an entity ended and then made again (cancel the
    rent, then re-add it), or a field of an entity the task made, changed before anything
    used it (create a traveller with one passport, then update it to another). A write that leaves something behind (``post_recurring_expense``
    records a transaction) is not moot; a write and its declared inverse are
    :func:`inverse_write`'s."""
    writes = [s for s in task.steps if task.writes(s.name)]
    out = []
    for j, b in enumerate(writes):
        target = _ended(task, b)
        if target is None:
            continue
        for a in writes[:j]:
            if _key(a) == _key(b) or _undoes(task, a, b) is not None:
                continue  # repeated_write's or inverse_write's
            if _made_then_ended(task, a, b, target):  # a forward, then deleting its draft
                out.append(f"{a.call()} makes what {b.call()} ends")
                continue
            tool = task.tool(a.name)
            if tool is not None and tool.makes:
                continue  # it leaves behind what the ending does not end
            if all(k in a.arguments and a.arguments[k] == v for k, v in target.items()):
                out.append(f"{a.call()}, then {b.call()} ends it")
        for c in writes[j + 1 :]:
            if _recreated(task, b, target, c):
                out.append(f"{b.call()}, then {c.call()} makes it again")
    out.extend(_made_then_changed(task))
    return out


def _needs(task: LintTask, step: Step) -> set[str]:
    """The ids of the steps ``step`` depends on, directly or through others (a forward,
    then an attachment added to its draft, then that draft's recipients changed: the
    change needs the forward)."""
    by_id = {s.id: s for s in task.requested}
    out: set[str] = set()
    todo = list(step.depends_on)
    while todo:
        k = todo.pop()
        if k in out or k not in by_id:
            continue
        out.add(k)
        todo.extend(by_id[k].depends_on)
    return out


def _made_then_changed(task: LintTask) -> list[str]:
    """An update of an entity the task made that sets a field the making set, to another
    value (create a traveller with passport LG3376736, then "update the passport of the new
    traveller to XH6460534", at once or after a trip was made for them): the user would have
    given the second value when creating it. The update depends on the making (directly or
    through other calls, :func:`_needs`), which returns
    the kind the update takes without taking one, and the id is not in the task's initial
    state."""
    out = []
    for n, b in enumerate(task.requested):
        tool = task.tool(b.name)
        if tool is None or not _updates(tool) or b.name.split("_")[0] in COPY_VERBS:
            continue  # (a reply makes a message of its own)
        needs = _needs(task, b)
        for a in task.requested[:n]:
            if a.id not in needs or not task.writes(a.name):
                continue
            made = [
                (param, b.arguments[param])
                for param, kind in tool.entities
                if kind in _made(task, a)
                and isinstance(b.arguments.get(param), str | int)
                and not (task.existed is not None and task.existed(kind, str(b.arguments[param])))
            ]
            if not made:
                continue
            target = {param for param, _ in made}  # the one it changes, not a field of it
            changed = [
                f
                for f, new in b.arguments.items()
                if f not in target
                and f in a.arguments
                and not isinstance(new, dict)
                and _compared(a.arguments[f]) != _compared(new)
            ]
            if changed:
                out.append(f"{a.call()} sets {', '.join(changed)}, then {b.call()} changes it")
    return out


def second_persona(task: LintTask) -> list[str]:
    """A conversation that acts for two people of a kind its server serves one of at a time
    (``Server(persona=...)``: the customer of a bank or shop, the member of a
    marketplace): gold calls taking two ids of that kind (bids as usr_021, then lists "my"
    racket as usr_040), or a call taking one while an entity another call takes belongs to
    another (reads cus_035's cards, then moves money from cus_015's account: the owner is
    read from the task's initial state, by the kind's key field), or after a lookup of
    that kind that found one person (find_customer "Kirk" finds cus_0063, then an order
    from the cart of cus_0020: the lookup is run on the initial state when it comes before
    any write and any id of the kind)."""
    out = []
    for kind, key in sorted(task.persona.items()):
        who: dict[str, str] = {}
        wrote = False
        for s in task.requested:
            tool = task.tool(s.name)
            if not who and not wrote and tool is not None and _looks_up(tool, kind):
                found = _found(task, s, key)
                if found is not None:
                    who[found] = f"{s.name} finds {found}"
            wrote = wrote or task.writes(s.name)
            for param, taken in tool.entities if tool is not None else ():
                value = s.arguments.get(param)
                if value is None or isinstance(value, list | dict):
                    continue
                if taken == kind:
                    who.setdefault(str(value), f"{s.name}({param}={value})")
                elif task.record is not None:
                    rec = task.record(taken, str(value))
                    owner = rec.get(key) if rec is not None else None
                    if isinstance(owner, str | int):
                        who.setdefault(str(owner), f"{s.name}({param}={value}) of {owner}")
        if len(who) > 1:
            out.append(f"{len(who)} {words(kind)}s: " + ", ".join(who.values()))
    return out


def _looks_up(tool: Tool, kind: str) -> bool:
    """Whether ``tool`` is a read that finds records of ``kind`` without taking one."""
    return not tool.writes and kind in tool.returns and kind not in tool.takes


def _found(task: LintTask, s: Step, key: str) -> str | None:
    """The one id by ``key`` that the read ``s`` finds on the task's initial state, or
    None (several, none, a failed call, or no state to run it on)."""
    session = task.open_session()
    if session is None:
        return None
    try:
        result = session.call(s.name, dict(s.arguments))
        ids = {str(v) for v in extract_ids(result.content, key)} if result.ok else set()
    finally:
        session.close()
    return ids.pop() if len(ids) == 1 else None


def _updates(tool: Tool | None) -> bool:
    """Whether a tool changes what it names and makes nothing (as
    :func:`prove_gym.synth.grounding.updates`): its arguments but the ids are new values."""
    return (
        tool is not None
        and tool.writes
        and bool(tool.takes)
        and all(k in tool.takes for k in tool.returns)
    )


def noop_update(task: LintTask) -> list[str]:
    """An update that sets a field to the value the task already gave it: the subject of
    the draft it made to the subject it made it with (``create_draft``, then
    ``update_draft`` of it), or an earlier write's value again; or that moves a row to the
    reference it has (``update_event`` of an event in cal_01 with ``calendar_id="cal_01"``).
    Only tools that change what they name and make nothing (``update_draft``,
    ``edit_message``) are read; what a call made is known by the call that depends on it.
    The initial state's values are read for references alone (an identifier parameter of
    a kind that is no persona, named as a field of the row another identifier names): its
    entity records hold other values to draw, not always the current ones."""
    out = []
    for n, b in enumerate(task.requested):
        tool = task.tool(b.name)
        if tool is None or not _updates(tool):
            continue
        ids = {p for p, _ in tool.entities}
        for param, kind in tool.entities:
            value = b.arguments.get(param)
            if value is None or isinstance(value, list | dict):
                continue
            setters = _setters(task, n, b, kind, value)
            row = task.record(kind, str(value)) if task.record is not None else None
            for field_name, new in b.arguments.items():
                if isinstance(new, list | dict):
                    continue
                before = next(
                    (
                        a.arguments[field_name]
                        for a in reversed(setters)
                        if field_name in a.arguments
                    ),
                    None,
                )
                if field_name in ids:
                    if field_name == param or field_name not in tool.moves:
                        continue  # the row itself, or an id naming what it acts on
                    if before is None and row is not None:
                        before = row.get(field_name)
                    if isinstance(before, list | dict):
                        continue
                if (
                    before is not None
                    and str(before).strip().casefold() == str(new).strip().casefold()
                ):
                    out.append(f"{b.call()}: {field_name} is already {json.dumps(new)}")
    return out


def _setters(task: LintTask, n: int, b: Step, kind: str, value: Any) -> list[Step]:
    """The writes before the ``n``-th requested call ``b`` that took or made its ``kind``
    row ``value`` (what a call made is known by the call that depends on it)."""
    by_id = {s.id: s for s in task.requested}
    return [
        a
        for a in task.requested[:n]
        if task.writes(a.name)
        and (
            str(value) in map(str, _kind_values(task, a, kind))
            or (a.id in b.depends_on and a.id in by_id and kind in _made(task, a))
        )
    ]


def _compared(value: Any) -> Any:
    """A value as compared for a change: text without case or edge spaces, a list as the
    set of its items so (the addressees of a forward, then of its draft)."""
    if isinstance(value, list):
        return frozenset(_compared(v) for v in value if not isinstance(v, list | dict))
    return str(value).strip().casefold()


def _made(task: LintTask, step: Step) -> tuple[str, ...]:
    """The kinds a call returns without taking one, and for a copy (:data:`COPY_VERBS`:
    a reply makes a message of the kind it answers) those it takes too: what it made."""
    tool = task.tool(step.name)
    if tool is None:
        return ()
    copies = step.name.split("_")[0] in COPY_VERBS
    return tuple(k for k in tool.returns if copies or k not in tool.takes)


_MONTH = re.compile(r"^\d{4}-(?:0[1-9]|1[0-2])$")
_DAY = re.compile(r"^\d{4}-\d{2}-\d{2}")
_BOUND_WORDS = ("start", "end", "from", "until", "since", "after", "before", "earliest", "latest")


def contradicting_filters(task: LintTask) -> list[str]:
    """A read whose filters, drawn together, ask for two periods at once: a month and a
    day bound outside it ("spending in June 2026. From June 8, 2026. Until Jul 28, 2026.":
    ``month="2026-06"``, ``end_date="2026-07-28"``)."""
    out = []
    for s in task.requested:
        if task.writes(s.name):
            continue
        args = s.arguments
        months = {str(v) for v in args.values() if isinstance(v, str) and _MONTH.match(v)}
        days = {
            str(v)[:7]
            for k, v in args.items()
            if isinstance(v, str) and _DAY.match(v) and any(w in k for w in _BOUND_WORDS)
        }
        if months and days and (len(months) > 1 or days != months):
            out.append(s.call())
    return out


def _called(call: tuple[str, Mapping[str, Any]], earlier: Iterable[Step]) -> bool:
    """Whether one of ``earlier`` calls ``call``'s tool with (at least) its arguments."""
    name, args = call
    return any(
        s.name == name and all(s.arguments.get(k) == v for k, v in args.items()) for s in earlier
    )


def misfit_identifier(task: LintTask) -> list[str]:
    """An id that does not fit the rest of its call, by the tool's own value source for it
    (``values=`` on an identifier): ``cat`` of a photo, ``diff`` of a project's
    ``usage.md`` against a pip build log. The source is run on the task's initial state;
    it answers the id unchanged when the id fits. A call with an id an earlier write of the
    task took (a folder it emptied, a file it wrote, the order a courier is assigned to) is
    not checked: its state is not known. An id
    the source says fits once other calls have run (``Prepared``) fits where the task made
    them before."""
    out: list[str] = []
    session = None
    earlier: list[Step] = []
    written: set[str] = set()  # ids an earlier write took: their state is no longer known
    try:
        for s in task.requested:
            tool = task.tool(s.name)
            if tool is None or not tool.checks:
                if task.writes(s.name):
                    written.update(str(v) for v in _strings(s.arguments))
                earlier.append(s)
                continue
            kinds = dict(tool.entities)
            # what fits is judged against the call's other ids too (a courier of the order's
            # zone): none is judged where an earlier write took one of them
            unknown = any(str(v) in written for k in kinds for v in _strings(s.arguments.get(k)))
            for param, source in tool.checks.items():
                value = s.arguments.get(param)
                if value is None or isinstance(value, list | dict) or unknown:
                    continue
                if session is None:
                    session = task.open_session()
                    if session is None:
                        return out
                records = {
                    k: rec
                    for k, kind in kinds.items()
                    if k in s.arguments
                    and task.record is not None
                    and (rec := task.record(kind, str(s.arguments[k]))) is not None
                }
                try:
                    fit = source(session.context(), random.Random(0), Bound(s.arguments, records))
                finally:
                    session.rollback()
                if isinstance(fit, Prepared):
                    # fits once other calls have run (a folder whose only file is deleted
                    # first): only where an earlier call of the task made each of them
                    fit = fit.value if all(_called(call, earlier) for call in fit.first) else None
                if fit is None or str(fit) != str(value):
                    out.append(f"{s.call()}: {param} does not fit")
            if tool.writes:
                written.update(str(v) for v in _strings(s.arguments))
            earlier.append(s)
    finally:
        if session is not None:
            session.close()
    return out


_SITE = re.compile(r"(?:\bhttps?://|@)([a-z0-9-]+(?:\.[a-z0-9-]+)+)", re.IGNORECASE)
HOST_WORDS = frozenset({"api", "app", "erp", "hooks", "mail", "ops", "www", "webhooks"})
"""First labels of a host that name a service of a site, not the site (``api.x.com``)."""


def _sites(value: Any) -> set[str]:
    """The sites the URLs and e-mail addresses in a text value name: their host, less a
    first label of :data:`HOST_WORDS` (``https://api.leedsbreadco.com/x`` and
    ``billing@leedsbreadco.com`` both name ``leedsbreadco.com``)."""
    if not isinstance(value, str):
        return set()
    out = set()
    for match in _SITE.finditer(value[:2000]):
        labels = match.group(1).casefold().split(".")
        while len(labels) > 2 and labels[0] in HOST_WORDS:
            labels = labels[1:]
        out.add(".".join(labels))
    return out


def foreign_value(task: LintTask) -> list[str]:
    """A write's URL or e-mail address on the site of another entity of a kind it takes,
    not of its own: mer_004 is "Hutchinson Software" (its endpoints on
    hutchinsonsoftware.com), but its new webhook endpoint is
    https://api.leedsbreadco.com/webhooks/v1, mer_007's site. Sites are read from the
    records of the task's initial state; an entity whose record names no site is not
    judged."""
    from prove_gym.synth.grounding import entity_index

    out: list[str] = []
    steps = [s for s in task.requested if task.writes(s.name) and task.tool(s.name) is not None]
    if not steps or task.record is None:
        return out
    session = task.open_session()
    if session is None:
        return out
    try:
        index = entity_index(session)
    finally:
        session.close()
    for s in steps:
        tool = task.tool(s.name)
        assert tool is not None
        values = {k: _sites(v) for k, v in s.arguments.items()}
        if not any(values.values()):
            continue
        for param, kind in tool.entities:
            me = s.arguments.get(param)
            own = task.record(kind, str(me)) if isinstance(me, str | int) else None
            mine = {x for v in (own or {}).values() for x in _sites(v)}
            key = index.key(kind)
            if not mine or key is None:
                continue
            theirs = {
                site: str(rec[key])
                for rec in index.records(kind)
                if str(rec[key]) != str(me)
                for v in rec.values()
                for site in _sites(v)
                if site not in mine
            }
            for name, sites in values.items():
                foreign = sorted(x for x in sites - mine if x in theirs)
                if foreign:
                    out.append(f"{s.call()}: {name} is on {foreign[0]}, {theirs[foreign[0]]}'s")
    return out


def repeated_login(task: LintTask) -> list[str]:
    """More than one login or authentication call in one task."""
    logins = [s for s in task.steps if LOGIN.match(s.name)]
    return (
        [f"{len(logins)} calls: " + ", ".join(s.call() for s in logins)] if len(logins) > 1 else []
    )


def idle_login(task: LintTask) -> list[str]:
    """A login or authentication as the task's last call: the user signs in and asks for
    nothing that needs it ("... what's the balance? Log me in: customer cus_026")."""
    calls = task.requested
    if calls and LOGIN.match(calls[-1].name):
        return [f"{calls[-1].call()} is the last call"]
    return []


CREATE_VERBS = frozenset(
    {"add", "book", "create", "draft", "make", "new", "place", "post", "register", "schedule"}
)
"""First words of the names of tools that create what they name (for tools not installed)."""
NEW_THING = re.compile(r"\bthe new ((?:[a-z]+ ){0,2}[a-z]+)", re.IGNORECASE)


def _creates(tool: Tool | None, name: str, noun: str) -> bool:
    """Whether a successful call of ``name`` created an entity of kind ``noun``: an installed
    tool that writes and returns that kind without taking one (``add_invitee`` returns the
    event it was given; ``create_event`` makes one), or by name for another tool
    (``create_event``)."""
    if tool is not None and tool.returns:
        return (
            tool.writes
            and any(words(k) == noun for k in tool.returns)
            and (
                all(words(k) != noun for k in tool.takes)
                or name.split("_")[0] in COPY_VERBS  # a reply to a message is a message
            )
        )
    parts = name.split("_")
    return parts[0] in CREATE_VERBS and noun.split()[-1] in parts


def new_without_create(task: LintTask) -> list[str]:
    """ "the new X" in a user turn when no gold call up to that turn (for a clarify turn, up
    to its answer) created an X (:func:`_creates`). Only nouns that name an entity kind of
    an offered tool count ("the new name" of a rename is no reference)."""
    kinds = {words(k) for t in task.tools.values() for k in t.returns}
    out = []
    for i, text in enumerate(task.users):
        # a clarify turn's requests are made by the next turn's gold, once the value is given
        upto = i + 1 if task.turns[i].get("kind") == "clarify" else i
        for m in NEW_THING.finditer(text):
            phrase = m.group(1).lower()
            noun = next(
                (
                    k
                    for k in sorted(kinds, key=len, reverse=True)
                    if (phrase + " ").startswith(k + " ")
                ),
                None,
            )
            if noun is None:
                continue
            if not any(
                s.turn <= upto and _creates(task.tool(s.name), s.name, noun) for s in task.steps
            ):
                out.append(_around(text, m.start(), m.end()))
    return out


# ------------------------------------------------------- what the user knows (item 1)
def _kinds(task: LintTask) -> dict[str, str]:
    """Entity kinds of the offered tools by the noun a user says for them ("recurring
    expense" -> ``recurring_expense``)."""
    kinds = {k for t in task.tools.values() for k in (*t.returns, *t.takes)}
    return {words(k): k for k in sorted(kinds)}


def _kind_values(task: LintTask, step: Step, kind: str) -> list[str]:
    """The ids of ``kind`` a gold call takes (by its tool's entity parameters)."""
    tool = task.tool(step.name)
    if tool is None:
        return []
    out: list[str] = []
    for param, taken_kind in tool.entities:
        if taken_kind == kind and param in step.arguments:
            value = step.arguments[param]
            out.extend(str(v) for v in (value if isinstance(value, list) else [value]))
    return out


def _answer(task: LintTask, turn: int) -> int:
    """The turn whose gold answers ``turn``'s request (the next one for a clarify turn)."""
    return turn + 1 if task.turns[turn].get("kind") == "clarify" else turn


def _said(task: LintTask, upto: int, value: str, *, only: bool = False) -> bool:
    """Whether a user turn up to ``upto`` (``only``: that turn) states ``value`` as a word."""
    pattern = re.compile(rf"(?<![\w/.-]){re.escape(value)}(?![\w/-])")
    texts = task.users[upto : upto + 1] if only else task.users[: upto + 1]
    return any(pattern.search(t) for t in texts)


def _referenced(
    task: LintTask, turn: int, kind: str, *, stated: bool = False
) -> list[tuple[Step, str]]:
    """(call, id) pairs of the answer to ``turn`` taking an id of ``kind`` the user does
    not state in that turn: what a reference in it can stand for (in a clarify turn, also
    the value its answer supplies: "one of my categories ... under the same category").
    With ``stated``, the ids the turn also states are included (a turn may name again, in
    a later request, what it referred to before)."""
    at = _answer(task, turn)
    return [
        (s, v)
        for s in task.requested
        if s.turn == at
        for v in _kind_values(task, s, kind)
        if stated or not _said(task, turn, v, only=True)
    ]


def _before(task: LintTask, step: Step) -> list[Step]:
    return task.requested[: task.requested.index(step)]


DEMONSTRATIVE = re.compile(r"\b(the same|that) ((?:[a-z]+ ){0,2}[a-z]+)", re.IGNORECASE)
LIST_REFERENCE = re.compile(
    r"\bthe (?:first|second|third|fourth|fifth|first \d+) ((?:[a-z]+ ){0,2}[a-z]+?)s? "
    r"(?:in those results|from that list)",
    re.IGNORECASE,
)


def _noun(kinds: Mapping[str, str], phrase: str) -> str | None:
    """The entity kind a noun phrase opens with, longest noun first."""
    phrase = phrase.lower() + " "
    return next(
        (kinds[n] for n in sorted(kinds, key=len, reverse=True) if phrase.startswith(n + " ")),
        None,
    )


def ambiguous_reference(task: LintTask) -> list[str]:
    """ "that X" or "the same X" in a user turn whose referent is not the one X in play:
    the gold's X (an id the user did not state) is not alone among the Xs earlier calls
    took ("Use that category" when cat_019 was named earlier and the gold takes cat_007),
    or, for "the same X", no earlier call took it (nor did the turn say it before: "show
    evt_0110, then remind me of the same event").

    From the JSON alone: an X a result showed but no call took is not seen, so "that X"
    for the one X a search found passes.
    """
    kinds = _kinds(task)
    out = []
    for t, text in enumerate(task.users):
        for m in DEMONSTRATIVE.finditer(text):
            kind = _noun(kinds, m.group(2))
            if kind is None:
                continue
            same = m.group(1).lower() == "the same"
            if same and any(
                v in text[: m.start()]
                for s in task.requested
                if s.turn == _answer(task, t)
                for v in _kind_values(task, s, kind)
            ):
                continue  # "the details of evt_0110. Then ... for the same event": said before it
            problems = []
            for step, value in _referenced(task, t, kind):
                earlier = {v for s in _before(task, step) for v in _kind_values(task, s, kind)}
                others = set(_kind_values(task, step, kind)) - {value}
                if same and value not in earlier:
                    problems.append(f"no earlier {words(kind)}: gold {value}")
                elif (earlier | others) - {value}:
                    problems.append(f"several: gold {value}")
                else:
                    break  # the phrase can stand for this one: no flaw
            else:
                if problems:
                    out.append(f"{_around(text, m.start(), m.end())} ({problems[0]})")
    return out


def list_reference(task: LintTask) -> list[str]:
    """ "the second X in those results" / "from that list" where "that list" is not the
    one list of Xs: no earlier call lists Xs, several do, or the gold's X does not come
    from it (the call taking it does not depend on it)."""
    kinds = _kinds(task)
    out = []
    for t, text in enumerate(task.users):
        for m in LIST_REFERENCE.finditer(text):
            kind = _noun(kinds, m.group(1))
            if kind is None:
                continue
            problems = []
            unstated = _referenced(task, t, kind)
            # a call whose id the turn also states later ("... into the first account in
            # those results. ... Only for the account acc_01.") can be the referent too
            for step, value in _referenced(task, t, kind, stated=True):
                listings = [s for s in _before(task, step) if _lists(task, s, kind)]
                # (a call the gold gives up has no dependencies recorded)
                given_up = step not in task.steps
                if len(listings) == 1 and (given_up or listings[0].id in step.depends_on):
                    at = _listed_at(task, listings[0], kind, m.group(0))
                    if at is None or at == value:
                        break  # the phrase can stand for this one: no flaw
                    problems.append(f"that list's {m.group(0).split()[1]} is {at}: gold {value}")
                    continue
                if (step, value) in unstated:
                    problems.append(f"{len(listings)} lists: gold {value}")
            else:
                if problems:
                    out.append(f"{_around(text, m.start(), m.end())} ({problems[0]})")
    return out


def _listed_at(task: LintTask, listing: Step, kind: str, phrase: str) -> str | None:
    """The id of ``kind`` at the place an ordinal phrase names ("the second store from
    that list") in the list ``listing``'s result shows, replayed after the calls before
    it ("nothing" past the list's end); None where it cannot be told (no state, a failed
    call, "the first 3")."""
    words_ = phrase.lower().split()
    if len(words_) < 2 or words_[1] not in ORDINALS or (words_[2:3] and words_[2].isdigit()):
        return None
    from prove_gym.synth.grounding import entity_index

    place = ORDINALS.index(words_[1])
    session = task.open_session()
    if session is None:
        return None
    try:
        key = entity_index(session).key(kind)
        for s in _before(task, listing):
            session.call(s.name, dict(s.arguments))
        result = session.call(listing.name, dict(listing.arguments))
    finally:
        session.close()
    if key is None or not result.ok:
        return None
    ids = [str(v) for v in extract_ids(result.content, key, listed_only=True)]
    return ids[place] if place < len(ids) else "nothing"


def _lists(task: LintTask, step: Step, kind: str) -> bool:
    """Whether a call's result is about ``kind`` (its first declared return) and the call
    was given none of that kind: a list or search of them (as
    :func:`prove_gym.synth.knowledge.lists`; ``list_connections`` with no user lists users)."""
    tool = task.tool(step.name)
    return (
        tool is not None
        and tool.returns[:1] == (kind,)
        and not any(k == kind and p in step.arguments for p, k in tool.entities)
    )


def _makes(task: LintTask, name: str, kind: str) -> bool:
    """Whether a call of ``name`` makes a new ``kind``, named for it: it creates one
    (:func:`_creates`) and its name has the kind's words (``create_scene``; not
    ``post_recurring_expense``, which returns the category of the expense it posts) or a
    copy's verb (``forward_message`` makes a draft: :data:`COPY_VERBS`), and it ends nothing (not ``remove_coupon``, ``unfollow_user``: :data:`UNDO_VERBS`)."""
    verb, *rest = name.split("_")
    tool = task.tool(name)
    return (
        _creates(tool, name, words(kind))
        and (bool(set(kind.split("_")) & set(rest)) or verb in COPY_VERBS)
        and verb not in UNDO_VERBS
        and not verb.startswith("un")
        and not (tool is not None and tool.undoes)
    )


def _entities(task: LintTask, step: Step) -> tuple[tuple[str, str], ...]:
    """``(parameter, kind)`` of the entity parameters a call passes."""
    tool = task.tool(step.name)
    return tuple(e for e in tool.entities if e[0] in step.arguments) if tool else ()


def id_before_creation(task: LintTask) -> list[str]:
    """An id stated in a user turn before the user could know it: the first call taking
    it depends on a call that created it (:func:`_makes`; no later result it depends on
    could have shown it instead), and that creating call is in the same turn as the
    statement or a later one ("evt_0301" in turn 1, created in turn 2).

    From the JSON alone the creation is inferred: the first call taking the id depends
    on a call that makes its kind, on no other call whose result holds that kind, and no
    entity both calls take differs (an address added for another customer). An id that
    existed all along and meets all three is not flagged when the task's server is
    installed (:attr:`LintTask.existed`: the initial state holds it).
    """
    kinds = sorted(set(_kinds(task).values()))
    by_id = {s.id: s for s in task.requested}
    order = {s.id: n for n, s in enumerate(task.requested)}
    first: dict[tuple[str, str], Step] = {}
    for step in task.requested:
        for kind in kinds:
            for value in _kind_values(task, step, kind):
                first.setdefault((kind, value), step)
    out = []
    for (kind, value), step in first.items():
        if task.existed is not None and task.existed(kind, value):
            continue  # in the initial state: a dependency on a maker is the graph's, not the id's
        deps = [by_id[d] for d in step.depends_on if d in by_id]
        makers = [
            d
            for d in deps
            if _makes(task, d.name, kind) and value not in _kind_values(task, d, kind)
        ]
        if not makers:
            continue
        maker = max(makers, key=lambda d: order[d.id])
        if any(kind in getattr(task.tool(d.name), "returns", ()) for d in deps if d not in makers):
            continue  # another result of that kind may have shown it
        owners = {p for p, _ in _entities(task, maker)} & {p for p, _ in _entities(task, step)}
        if any(maker.arguments.get(k) != step.arguments.get(k) for k in owners):
            continue  # made for another owner than the one it is used for (another customer)
        early = [t for t in range(maker.turn + 1) if _said(task, t, value, only=True)]
        if early:
            out.append(f"{value} stated in turn {early[0] + 1}, created in turn {maker.turn + 1}")
    return sorted(set(out))


GREETING = re.compile(r"^\W*(?:hi|hello|hey|greetings|good (?:morning|afternoon|evening))\b", re.I)


def late_greeting(task: LintTask) -> list[str]:
    """A greeting that opens a user turn after the first."""
    return [
        f"turn {i + 1}: " + _around(t, 0, 0)
        for i, t in enumerate(task.users)
        if i and GREETING.match(t)
    ]


SAME_AS_ITSELF = re.compile(
    r"\b(?:the same|that) ((?:[a-z]+ ){0,3}?[a-z]+) as the \1\b"
    r"|\bthe ((?:[a-z]+ ){0,3}?[a-z]+) (?:to|should be) (?:the same|that) \2\b",
    re.IGNORECASE,
)


def same_as_itself(task: LintTask) -> list[str]:
    """A value that names its own parameter: "the same X as the X" ("Use the same owner as
    the owner"), "Set the category to that category", "The category should be that
    category", "Use that category as the category"."""
    return _matches(SAME_AS_ITSELF, task.users)


def clarify_with_independent(task: LintTask) -> list[str]:
    """A clarify turn whose answer's gold holds calls that do not need the value the user
    left out: a model that makes them first and then asks is right, but scored wrong.

    The clarify turn names the value (``missing``); the next turn supplies it and holds
    the gold. A call needs it when it takes that argument or depends (``depends_on``,
    through any chain) on one that does, unless it depends on reads alone and the clarify
    turn states each of its ids as it is ("What's on one of my lists? And will pl_0078 be
    open at 8 pm?": the place is said, the list need not be read first).
    """
    turns = task.turns
    out = []
    for i, turn in enumerate(turns):
        if turn.get("kind") != "clarify" or i + 1 >= len(turns):
            continue
        missing = {str(m) for m in _list(turn.get("missing"))}
        steps = [s for s in task.steps if s.turn == i + 1]
        if not steps:
            continue
        needs = {s.id for s in steps if missing & set(s.arguments)}
        by_id = {s.id: s for s in steps}
        for s in steps:
            if not set(s.depends_on) & needs:
                continue
            ids = [
                str(v) for param, _ in _entities(task, s) for v in _strings(s.arguments.get(param))
            ]
            said = bool(ids) and all(_said(task, i, v, only=True) for v in ids)
            reads = not any(task.writes(by_id[d].name) for d in s.depends_on if d in by_id)
            if s.id not in needs and not (said and reads):
                needs.add(s.id)
        free = [s for s in steps if s.id not in needs]
        if free:
            asked = ", ".join(sorted(missing)) or "a value"
            calls = "; ".join(s.call() for s in free)
            out.append(f"turn {i + 1} asks for {asked}; independent: {calls}")
    return out


def clarify_value_said(task: LintTask) -> list[str]:
    """A clarify turn that already states the value it asks for: another request of the
    turn says it ("Show the balances of one of my customers. I'm customer cus_020, ..."
    asks for ``customer_id``), so the right move is to go on, not to ask."""
    out = []
    for i, turn in enumerate(task.turns):
        if turn.get("kind") != "clarify" or i + 1 >= len(task.turns):
            continue
        missing = {str(m) for m in _list(turn.get("missing"))}
        for s in task.steps:
            if s.turn != i + 1:
                continue
            for name in sorted(missing & set(s.arguments)):
                value = s.arguments[name]
                if isinstance(value, str | int) and _said(task, i, str(value), only=True):
                    out.append(f"turn {i + 1} asks for {name} and says {value}")
    return out


def stripped_enum_listed(task: LintTask) -> list[str]:
    """A parameter whose enum the task stripped (``schema_overrides``) while its values are
    still stated in what the model reads: the override's descriptions or the tool's own
    description (quoted, or as a token when not a plain word: see
    :func:`prove_gym.synth.enums.states`)."""
    overrides = task.data.get("schema_overrides")
    if not isinstance(overrides, Mapping):
        return []
    out = []
    for qualified, schema in sorted(overrides.items()):
        name = str(qualified).rsplit(".", 1)[-1]
        tool = task.tool(name)
        if tool is None or not isinstance(schema, Mapping):
            continue
        props = _mapping(schema.get("properties"))
        texts = [tool.description] + [
            str(p.get("description", "")) for p in props.values() if isinstance(p, Mapping)
        ]
        for param, values in tool.enums.items():
            prop = props.get(param)
            if not isinstance(prop, Mapping) or enum_values(prop):
                continue  # not stripped
            shown = sorted({v for text in texts for v in stated(text, values)})
            if shown:
                out.append(f"{qualified}.{param}: {', '.join(shown)} still stated")
    return out


def hidden_tool_stood_in(task: LintTask) -> list[str]:
    """An abstention turn whose server's tool is hidden while an offered tool declares it
    can serve that tool's requests (``stands_in_for``: ``head`` hidden, ``read_lines``
    offered), so answering the turn with a call would be right and the label says abstain."""
    if not any(t.get("kind") == "abstain" for t in task.turns):
        return []
    return [f"{hidden} hidden, {stand_in} offered" for stand_in, hidden in task.stood_in]


# ------------------------------------------------------------------ the registry
@dataclass(frozen=True)
class Limit:
    """How many flagged tasks a class allows: a count, or a share of the tasks."""

    value: float
    share: bool = False

    @classmethod
    def parse(cls, text: str) -> Limit:
        """``"0"``, ``"12"`` or ``"1%"``."""
        text = text.strip()
        try:
            if text.endswith("%"):
                return cls(float(text[:-1]) / 100, share=True)
            return cls(int(text))
        except ValueError:
            raise ValueError(
                f"a limit is a count or a percentage such as 1%, got {text!r}"
            ) from None

    def allows(self, flagged: int, tasks: int) -> bool:
        if self.share:
            return flagged <= self.value * tasks
        return flagged <= self.value

    def __str__(self) -> str:
        return f"{self.value * 100:g}%" if self.share else f"{int(self.value)}"


@dataclass(frozen=True)
class FlawClass:
    """One flaw class: its name, its check and how many flagged tasks it allows."""

    name: str
    check: Callable[[LintTask], list[str]]
    limit: Limit = Limit(0)

    @property
    def summary(self) -> str:
        return " ".join((self.check.__doc__ or "").strip().split("\n\n")[0].split())


FLAW_CLASSES: dict[str, FlawClass] = {
    c.name: c
    for c in (
        FlawClass("some_placeholder", some_placeholder),
        FlawClass("iso_datetime", iso_datetime),
        FlawClass("raw_enum_token", raw_enum_token, Limit(0.01, share=True)),
        FlawClass("parameter_name", parameter_name),
        FlawClass("inverse_write", inverse_write),
        FlawClass("repeated_write", repeated_write),
        FlawClass("moot_write", moot_write),
        FlawClass("noop_update", noop_update),
        FlawClass("contradicting_filters", contradicting_filters),
        FlawClass("misfit_identifier", misfit_identifier),
        FlawClass("foreign_value", foreign_value),
        FlawClass("second_persona", second_persona),
        FlawClass("repeated_login", repeated_login),
        FlawClass("idle_login", idle_login),
        FlawClass("new_without_create", new_without_create),
        FlawClass("ambiguous_reference", ambiguous_reference),
        FlawClass("list_reference", list_reference),
        FlawClass("id_before_creation", id_before_creation),
        FlawClass("late_greeting", late_greeting),
        FlawClass("same_as_itself", same_as_itself),
        FlawClass("clarify_with_independent", clarify_with_independent),
        FlawClass("clarify_value_said", clarify_value_said),
        FlawClass("stripped_enum_listed", stripped_enum_listed),
        FlawClass("hidden_tool_stood_in", hidden_tool_stood_in),
    )
}
"""Every flaw class, in report order."""
UNREADABLE = "unreadable"
"""The pseudo-class of lines that are not a task object (always allowed none)."""


# ------------------------------------------------------------------ running it
@dataclass
class ClassResult:
    """What one class found: the tasks it flagged and the first examples."""

    name: str
    limit: Limit
    flagged: int = 0
    examples: list[tuple[str, str]] = field(default_factory=list)


@dataclass
class LintReport:
    """The result of :func:`lint`."""

    tasks: int
    classes: list[ClassResult]

    @property
    def failed(self) -> list[ClassResult]:
        """Classes over their limit."""
        return [c for c in self.classes if not c.limit.allows(c.flagged, self.tasks)]

    def counts(self) -> dict[str, int]:
        return {c.name: c.flagged for c in self.classes}


def task_files(path: str | Path) -> list[Path]:
    """The task files of a dataset: ``train.jsonl`` and ``test.jsonl`` of a ``prove-gym synth``
    folder, else every ``*.jsonl`` in the folder; a file is itself.

    Raises:
        FileNotFoundError: Nothing to read there.
    """
    path = Path(path)
    if path.is_file():
        return [path]
    if not path.is_dir():
        raise FileNotFoundError(f"no such file or folder: {path}")
    split = [path / n for n in ("train.jsonl", "test.jsonl") if (path / n).is_file()]
    found = split or sorted(path.glob("*.jsonl"))
    if not found:
        raise FileNotFoundError(f"no .jsonl task files in {path}")
    return found


def read_lines(files: Iterable[Path]) -> Iterator[tuple[str, Mapping[str, Any] | None]]:
    """``(where, task dict)`` per non-blank line; the dict is None for a line that is not a
    JSON object with a list of turns."""
    for file in files:
        with open(file, encoding="utf-8", errors="replace") as fh:
            for n, line in enumerate(fh, 1):
                if not line.strip():
                    continue
                try:
                    data = json.loads(line)
                except ValueError:
                    data = None
                ok = isinstance(data, dict) and isinstance(data.get("turns"), list)
                yield f"{file.name}:{n}", data if ok else None


def lint(
    tasks: Iterable[Mapping[str, Any] | None],
    *,
    limits: Mapping[str, Limit] | None = None,
    registry: Registry | None = None,
    where: Iterable[str] | None = None,
) -> LintReport:
    """Run every flaw class over ``tasks`` (task dicts; None for an unreadable line).

    Args:
        tasks: The tasks, as parsed JSON.
        limits: Limits by class name, replacing the defaults.
        registry: Where tool declarations come from (the installed servers by default).
        where: Per task, what an unreadable line's example names (its file and line).
    """
    reader = Reader(registry)
    limits = dict(limits or {})
    results = {
        name: ClassResult(name, limits.get(name, c.limit)) for name, c in FLAW_CLASSES.items()
    }
    bad = ClassResult(UNREADABLE, limits.get(UNREADABLE, Limit(0)))
    places = iter(where) if where is not None else None
    n = 0
    for data in tasks:
        place = next(places, "?") if places is not None else f"line {n + 1}"
        n += 1
        if data is None:
            bad.flagged += 1
            if len(bad.examples) < EXAMPLES:
                bad.examples.append((place, "not a task object with a list of turns"))
            continue
        task = reader.read(data)
        for name, flaw in FLAW_CLASSES.items():
            found = flaw.check(task)
            if found:
                result = results[name]
                result.flagged += 1
                if len(result.examples) < EXAMPLES:
                    result.examples.append((task.id, found[0]))
    classes = list(results.values()) + ([bad] if bad.flagged else [])
    return LintReport(n, classes)


def lint_path(
    path: str | Path,
    *,
    limits: Mapping[str, Limit] | None = None,
    registry: Registry | None = None,
) -> LintReport:
    """:func:`lint` over a dataset folder or a task file (:func:`task_files`)."""
    rows = list(read_lines(task_files(path)))
    return lint((d for _, d in rows), limits=limits, registry=registry, where=(w for w, _ in rows))


def format_lint(report: LintReport) -> str:
    """One line per class (tasks flagged, share, limit, verdict), then its examples."""
    width = max(len(c.name) for c in report.classes)
    n = report.tasks or 1
    lines = [f"{report.tasks} tasks"]
    for c in report.classes:
        verdict = "ok" if c.limit.allows(c.flagged, report.tasks) else "OVER"
        lines.append(
            f"{c.name:<{width}}  {c.flagged:>5} tasks ({100 * c.flagged / n:5.1f}%)  "
            f"limit {c.limit!s:<4} {verdict}"
        )
        lines += [f"    {task_id}: {text}" for task_id, text in c.examples]
    failed = report.failed
    lines.append(
        "over the limit: " + ", ".join(c.name for c in failed)
        if failed
        else "every class within its limit"
    )
    return "\n".join(lines)
