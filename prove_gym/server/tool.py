"""Tool declarations: a typed function becomes a JSON schema, a validator and metadata.

A tool is a plain function whose first parameter is the :class:`ToolContext`
and whose other parameters are the model-facing arguments::

    @server.tool(writes=True, returns="event")
    def cancel_event(ctx: ToolContext, event_id: Annotated[str, Entity("event")]) -> dict:
        \"\"\"Cancel an event; invitees are notified.

        Args:
            event_id: The event to cancel, such as "evt_0042".
        \"\"\"

The signature gives the JSON schema (through pydantic), the docstring gives
the description and per-argument descriptions (Google style ``Args:``), and
``Entity`` marks which kind of entity an identifier refers to, so that the
synthesis pipeline can build a dependency graph from declarations alone.
"""

from __future__ import annotations

import functools
import inspect
import re
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Annotated, Any, Generic, Literal, TypeVar, get_args

import pydantic
from pydantic import ConfigDict, Field, create_model

from prove_gym.server.budget import WorkBudget

if TYPE_CHECKING:
    import datetime as dt

    from prove_gym.server.base import Server
    from prove_gym.server.sql import Sql

M = TypeVar("M")


class Record(Generic[M]):
    """An entity parameter resolved to its table row before the tool runs.

    ``Annotated[Record[Event], Entity("event")]`` reaches the tool as the row of
    ``Event``'s table (a named tuple: ``event.title``, every column typed as the ORM
    types it), found with one compiled statement; an unknown id answers ``not_found``
    with the entity's declared hint, so no tool writes that lookup again. The tool's
    other reads and writes go through ``ctx.sql`` (:mod:`prove_gym.server.sql`).
    Only a type marker: no value is ever a ``Record``.
    """

    def __getattr__(self, name: str) -> Any:  # the columns, for type checkers
        raise AttributeError(name)


@dataclass(frozen=True, slots=True)
class Entity:
    """Marks a parameter as an identifier of an entity kind, e.g. ``Annotated[str, Entity("event")]``.

    Args:
        name: The entity kind ("event", "account", "path").
        many: True when the parameter holds a list of identifiers.
        shared: True when the parameter may name a row whoever owns it, in an env version
            that acts for a principal: a look at what every principal may see (another
            member's public profile), not an act as its owner. The core then does not
            check whose the row is (``Principal``; CONTRIBUTING.md, "An acting principal").
    """

    name: str
    many: bool = False
    shared: bool = False


Normalisation = Literal["casefold", "strip", "path"]
"""How argument values are compared by the reward: ``casefold`` (emails, names),
``strip`` (surrounding whitespace), ``path`` (trailing slashes and ``.`` segments)."""


@dataclass(slots=True)
class ToolContext:
    """What a tool sees besides its arguments.

    Attributes:
        sql: This session's private database: compiled statements run on SQLite
            directly (:mod:`prove_gym.server.sql`). The session commits a write tool's
            changes once it returns, and rolls back any call that fails.
        now: The fixed "current time" of this state, derived from the seed.
        seed: The seed the state was sampled from.
        server: The server the tool belongs to.
        env_version: The env version the session plays (``prove/<server>-v<N>``; 0 for
            ``-v0``). A tool whose behaviour changed in a later version
            (:class:`~prove_gym.server.base.EnvVersion`) branches on it, so every earlier
            version keeps its results.
        budget: What this call may still spend (a fresh one per call): spend it with
            :meth:`spend` where a tool's work grows with its arguments or the state.
        principal: The id of the entity the session acts for (``"mbx_03"``) in an env
            version that declares a :class:`~prove_gym.server.base.Principal`, else
            ``None``. The core already refuses entity parameters another principal owns;
            a tool reads it to scope what it lists.
    """

    sql: Sql
    now: dt.datetime
    seed: int
    server: Server
    env_version: int = 0
    principal: str | None = None
    budget: WorkBudget = field(default_factory=WorkBudget)

    def spend(self, n: int = 1, what: str = "entries", *, hint: str = "") -> None:
        """Spend ``n`` units of this call's work budget (entries visited, lines scanned).

        Past the budget the call ends with ``bad_arguments`` ("find stopped: it would visit
        more than 200000 entries in one call; nothing was changed. Narrow it: <hint>.") and
        changes nothing. ``hint`` says how to ask for less, such as "give a deeper path".
        """
        self.budget.spend(n, what, hint=hint)


@dataclass(frozen=True)
class Bound:
    """What a value source (``values=`` of a tool) is given besides the context and the
    random generator: the call as drawn so far.

    Synthesis draws a call's identifiers first, then its values from lists and
    ``examples=``, then the values of its ``values=`` sources, so a source sees every
    other argument of the call (the listing a bid is for, the path a text goes to, the
    name an address is made from).

    Attributes:
        args: The arguments drawn so far, by parameter name (an entity as its id).
        records: For each entity argument, its record as the entity source lists it in
            the initial state (absent for an entity the conversation made: read the
            live state through the context instead).
        choices: For each entity argument, the ids of the initial state the
            conversation allows there instead (those of its customer, agreeing with the
            other identifiers drawn): where an identifier's source that swaps the id drawn
            for one that fits looks first (``assign_courier`` takes one of the customer's
            orders that can take a courier). Worked out when read.

    >>> Bound({"path": "~/clip.mp4"}).extension("path")
    '.mp4'
    """

    args: Mapping[str, Any] = field(default_factory=dict)
    records: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    choices: Mapping[str, Sequence[Any]] = field(default_factory=dict)

    def extension(self, name: str) -> str:
        """The lower-case extension of the path in argument ``name`` (``""`` for none)."""
        base = str(self.args.get(name, "")).rsplit("/", 1)[-1]
        stem, dot, ext = base.rpartition(".")
        return f".{ext.lower()}" if dot and stem else ""


@dataclass(frozen=True)
class Prepared:
    """What an identifier's value source returns for an id that fits its call once other
    calls have run first: the calls that bring the state about, which synthesis plans
    right before the call, as part of the same request ("Delete ~/old/notes.txt, then
    remove the empty folder ~/old"; "Accept order ord_00312, then have cou_007 deliver
    it"). Each call is a tool of the same server and the arguments it must take; the
    others are drawn as for any step. Where there is no room for them (the chain is at its
    longest, the call is a repair or the one a clarify turn asks for), the id counts as
    not fitting.

    Attributes:
        value: The id, as the call will take it once ``first`` has run.
        first: ``(tool, arguments)`` of each call to make first, in order.

    >>> Prepared("~/old", (("rm", {"path": "~/old/notes.txt"}),)).first[0][0]
    'rm'
    """

    value: Any
    first: tuple[tuple[str, Mapping[str, Any]], ...]


ValueSource = Callable[..., Any]
"""A ``values=`` entry: ``(ctx, rng, bound: Bound) -> value``, or None when no value fits
the call as drawn (synthesis then draws the call again, with other entities). For an
identifier (an ``Entity`` parameter, drawn from the state like any other) the source
checks the id drawn, in ``bound.args``, once every identifier of the call is drawn: it
returns that id when it fits, another that does (read from the live state, preferring
``bound.choices``), a :class:`Prepared` id that fits once other calls have run, or None
(``cat`` takes a text file; ``diff`` two files that belong together; ``rmdir`` an empty
folder, or one whose only file is deleted first)."""


@dataclass(frozen=True, slots=True)
class ParamSpec:
    """One model-facing parameter of a tool.

    Attributes:
        name: The argument's name.
        annotation: Its model-facing type (an entity row parameter shows as its id type).
        required: No default.
        description: From the docstring's ``Args:``.
        entity: The entity kind it refers to, if any.
        normalise: How the reward compares its values.
        row: The mapped class whose table row an entity parameter is resolved to before
            the tool runs (``Annotated[Record[Account], Entity("account")]``); ``None``
            passes the id as sent.
    """

    name: str
    annotation: Any
    required: bool
    description: str
    entity: Entity | None
    normalise: Normalisation | None = None
    row: type | None = None


@dataclass(slots=True)
class ToolSpec:
    """A declared tool: its function, schema and metadata.

    Attributes:
        name: The name the model calls.
        description: Text shown to the model (the docstring without ``Args:``).
        fn: The implementation, called as ``fn(ctx, **arguments)``.
        params: Model-facing parameters in signature order.
        writes: True if the tool may change state (MCP ``readOnlyHint`` is its negation).
        destructive: True if a write deletes or overwrites (MCP ``destructiveHint``).
        idempotent: True if repeating the call changes nothing more (MCP ``idempotentHint``).
        inverse_of: Tools of the same server whose effect this one undoes on the same entity
            (``unlike_post`` undoes ``like_post``, ``delete_event`` undoes ``create_event``).
            Read both ways by :meth:`Server.inverses <prove_gym.server.base.Server.inverses>`:
            synthesis never plans a write followed by its inverse on the same entity.
        returns: Entity kinds whose identifiers appear in the result.
        hidden: Helper/debug tools not offered to the model.
        phrasings: User-request templates for synthesis, e.g. "Cancel the event {event_id}".
        stands_in_for: Other tools of the server whose requests this one can serve too
            (``read_lines`` serves a request for ``head``): synthesis never hides one of
            those for an abstention turn while offering this one.
        examples: Per-parameter example values for synthesis: a list to draw from, or a
            callable ``(ctx, rng) -> value`` for values that depend on the state (dates near "now").
        values: Per-parameter value sources for synthesis, for a value that must fit the
            rest of the call (a bid near the listing's price, a text that fits the file
            type): ``(ctx, rng, bound) -> value | None`` (:class:`Bound`, :data:`ValueSource`).
            A parameter with one takes its value from it and from nothing else.
        ends_when: Argument values with which a call ends the entity it names, for a write
            whose name does not say so (``update_cart_item`` with ``{"quantity": 0}``
            removes the line, as ``remove_from_cart`` does): a write to that entity earlier
            in the same task is moot (the ``moot_write`` lint class), and synthesis never
            plans one.
        server_name: Name of the owning server (set on registration).
        since: The env version this definition applies from: 0 for a tool's first one, N
            for a later one declared with ``@server.tool(name=..., since=N)`` (set on
            registration; :meth:`Server.tools_for <prove_gym.server.base.Server.tools_for>`).
        output_schema: JSON schema of a successful result, from the return annotation (a
            TypedDict, a pydantic model, a list of them...); results that are not objects are
            described as ``{"result": ...}``, the way MCP carries them. ``None`` for an
            untyped return (``dict``, ``Any``).
    """

    name: str
    description: str
    fn: Callable[..., Any]
    params: tuple[ParamSpec, ...]
    writes: bool = False
    destructive: bool = False
    idempotent: bool = False
    inverse_of: tuple[str, ...] = ()
    returns: tuple[str, ...] = ()
    hidden: bool = False
    phrasings: tuple[str, ...] = ()
    stands_in_for: tuple[str, ...] = ()
    examples: Mapping[str, Sequence[Any] | Callable[..., Any]] = field(default_factory=dict)
    values: Mapping[str, ValueSource] = field(default_factory=dict)
    ends_when: Mapping[str, Any] = field(default_factory=dict)
    server_name: str = ""
    since: int = 0
    # What the argument model and the output schema are built from, on first use: building
    # them for every tool of every server (pydantic's model and JSON-schema generation) was
    # most of a process's start-up, and most processes use a few tools of one server.
    _fields: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)
    _return: Any = field(default=None, repr=False, compare=False)
    _model: type[pydantic.BaseModel] | None = field(
        default=None, init=False, repr=False, compare=False
    )
    _output: dict[str, Any] | None = field(default=None, init=False, repr=False, compare=False)
    _output_built: bool = field(default=False, init=False, repr=False, compare=False)
    _schema: dict[str, Any] | None = field(default=None, repr=False)
    _entities: Mapping[str, Entity] | None = field(
        default=None, init=False, repr=False, compare=False
    )

    @property
    def args_model(self) -> type[pydantic.BaseModel]:
        """The pydantic model that validates the arguments (built on first use)."""
        if self._model is None:
            self._model = create_model(
                f"{self.name}_arguments",
                # JSON has no NaN or infinity: a model sending "NaN" gets bad_arguments.
                __config__=ConfigDict(extra="forbid", allow_inf_nan=False),
                **self._fields,
            )
        return self._model

    @property
    def output_schema(self) -> dict[str, Any] | None:
        """JSON schema of a successful result (see the class docstring; built on first use)."""
        if not self._output_built:
            self._output = output_schema(self._return)
            self._output_built = True
        return self._output

    @property
    def qualified_name(self) -> str:
        """``"server.tool"``, unique across all servers."""
        return f"{self.server_name}.{self.name}"

    @property
    def required(self) -> tuple[str, ...]:
        """Names of the required parameters."""
        return tuple(p.name for p in self.params if p.required)

    @property
    def entity_params(self) -> Mapping[str, Entity]:
        """Parameters that refer to entities, by name (read-only; worked out once)."""
        if self._entities is None:
            self._entities = MappingProxyType(
                {p.name: p.entity for p in self.params if p.entity is not None}
            )
        return self._entities

    def input_schema(self) -> dict[str, Any]:
        """The JSON schema of the arguments object (shared by OpenAI and MCP)."""
        if self._schema is None:
            self._schema = _clean_schema(self.args_model.model_json_schema())
        return self._schema

    def openai_schema(self, parameters: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """The OpenAI/Hermes function-tool definition of this tool.

        Args:
            parameters: A replacement parameters schema (e.g. one with enums stripped).
        """
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": dict(parameters) if parameters is not None else self.input_schema(),
            },
        }

    def validate(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """Validate and coerce raw JSON arguments; raises ``pydantic.ValidationError``."""
        model = self.args_model.model_validate(arguments)
        return {name: getattr(model, name) for name in type(model).model_fields}

    @property
    def row_params(self) -> tuple[ParamSpec, ...]:
        """Entity parameters the core resolves to rows before the tool runs."""
        return tuple(p for p in self.params if p.row is not None)


def _clean_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """Drop pydantic's ``title`` keys (noise for the model) and keep the rest as is."""
    cleaned = _clean_schema_tree(schema)
    for prop in cleaned.get("properties", {}).values():
        options = prop.get("anyOf")
        # `x: str | None = None` reads better to a model as a plain optional string.
        if isinstance(options, list) and len(options) == 2 and {"type": "null"} in options:
            (inner,) = [o for o in options if o != {"type": "null"}]
            del prop["anyOf"]
            prop.update({k: v for k, v in inner.items() if k not in prop})
    cleaned.setdefault("properties", {})
    cleaned.setdefault("required", [])
    return cleaned


_SECTION = re.compile(r"^(Args|Arguments|Parameters|Returns|Raises|Examples?|Notes?):\s*$")


def parse_docstring(doc: str | None) -> tuple[str, dict[str, str]]:
    """Split a Google-style docstring into (description, {arg: description}).

    The ``Args:`` section moves into the parameters' schemas; every other
    section (``Returns:``, ``Examples:``) stays in the description the model reads.

    >>> parse_docstring('''Find events.
    ...
    ...     Args:
    ...         query: Words to look for, such as "standup".
    ...
    ...     Returns:
    ...         Matching events.
    ... ''')
    ('Find events.\\n\\nReturns:\\n    Matching events.', {'query': 'Words to look for, such as "standup".'})
    """
    if not doc:
        return "", {}
    kept: list[str] = []
    args: dict[str, str] = {}
    in_args = False
    arg_indent: int | None = None
    current: str | None = None
    for line in inspect.cleandoc(doc).splitlines():
        stripped = line.strip()
        indent = len(line) - len(line.lstrip(" "))
        header = _SECTION.match(line) if indent == 0 else None
        if header or (in_args and indent == 0 and stripped):
            in_args = header is not None and header.group(1) in ("Args", "Arguments", "Parameters")
            arg_indent, current = None, None
            if not in_args:
                kept.append(line)
            continue
        if not in_args:
            kept.append(line)
            continue
        if not stripped:
            continue
        m = _ARG_LINE.match(stripped)
        if m and (arg_indent is None or indent == arg_indent):
            arg_indent = indent
            current = m.group(1)
            args[current] = m.group(2).strip()
        elif current is not None:
            args[current] = f"{args[current]} {stripped}".strip()
    description = re.sub(r"\n{3,}", "\n\n", "\n".join(kept)).strip()
    return description, args


_SLOT = re.compile(r"\{(\w+)\}")
_ARG_LINE = re.compile(r"^\**(\w+)(?:\s*\([^)]*\))?:\s*(.*)$")


def build_tool_spec(
    fn: Callable[..., Any],
    *,
    name: str | None = None,
    writes: bool = False,
    destructive: bool = False,
    idempotent: bool | None = None,
    inverse_of: str | Sequence[str] = (),
    returns: str | Sequence[str] = (),
    hidden: bool = False,
    phrasings: Sequence[str] = (),
    normalise: Mapping[str, Normalisation] | None = None,
    examples: Mapping[str, Sequence[Any] | Callable[..., Any]] | None = None,
    values: Mapping[str, ValueSource] | None = None,
    stands_in_for: str | Sequence[str] = (),
    ends_when: Mapping[str, Any] | None = None,
) -> ToolSpec:
    """Read a tool function's signature and docstring into a :class:`ToolSpec`.

    Raises ``TypeError`` at declaration time for mistakes a plugin author
    should see at once: a missing context parameter, an unannotated
    parameter, an argument described in the docstring that does not exist.
    """
    tool_name = name or fn.__name__
    sig = inspect.signature(fn)
    hints = typing.get_type_hints(fn, include_extras=True)
    params_iter = iter(sig.parameters.values())
    first = next(params_iter, None)
    if first is None or first.name != "ctx":
        raise TypeError(f"tool {tool_name!r}: the first parameter must be 'ctx: ToolContext'")
    description, arg_docs = parse_docstring(fn.__doc__)
    if not description:
        raise TypeError(f"tool {tool_name!r}: write a docstring; it is what the model reads")
    normalise = dict(normalise or {})
    params: list[ParamSpec] = []
    fields: dict[str, Any] = {}
    for p in params_iter:
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            raise TypeError(f"tool {tool_name!r}: *args/**kwargs are not allowed in tools")
        if p.name not in hints:
            raise TypeError(f"tool {tool_name!r}: parameter {p.name!r} needs a type annotation")
        annotation = hints[p.name]
        entity = _find_entity(annotation)
        row = _row_class(annotation)
        if row is not None:
            if not _takes_record(annotation):
                raise TypeError(
                    f"tool {tool_name!r}: parameter {p.name!r} takes a {row.__name__} object; "
                    f"tools get rows, not ORM objects: annotate it "
                    f'Annotated[Record[{row.__name__}], Entity("<kind>")]'
                )
            if entity is None:
                raise TypeError(
                    f"tool {tool_name!r}: parameter {p.name!r} takes a {row.__name__} row; "
                    f'mark it Annotated[Record[{row.__name__}], Entity("<kind>")] so the core '
                    "resolves it"
                )
            annotation = _id_annotation(annotation, row)
        required = p.default is inspect.Parameter.empty
        desc = arg_docs.get(p.name, "")
        params.append(
            ParamSpec(p.name, annotation, required, desc, entity, normalise.get(p.name), row)
        )
        default = ... if required else p.default
        fields[p.name] = (_cap_strings(annotation), Field(default, description=desc or None))
    unknown = set(arg_docs) - {p.name for p in params}
    if unknown:
        raise TypeError(
            f"tool {tool_name!r}: docstring documents unknown arguments {sorted(unknown)}"
        )
    for what, names in (
        ("normalise", normalise),
        ("examples", examples or {}),
        ("values", values or {}),
        ("ends_when", ends_when or {}),
    ):
        bad = set(names) - {p.name for p in params}
        if bad:
            raise TypeError(f"tool {tool_name!r}: {what} names unknown arguments {sorted(bad)}")
    for name, source in sorted((values or {}).items()):
        if not callable(source):
            raise TypeError(f"tool {tool_name!r}: values[{name!r}] is not a callable")
        if name in (examples or {}):
            raise TypeError(
                f"tool {tool_name!r}: {name!r} has both examples= and values=; a value "
                "source is the one way its values are drawn"
            )
    known = get_args(Normalisation)
    for name, how in sorted(normalise.items()):
        if how not in known:  # caught here, not by the first reward that compares the value
            raise TypeError(
                f"tool {tool_name!r}: normalise[{name!r}] is {how!r}; use one of {list(known)}"
            )
    for slot in {s for text in phrasings for s in _SLOT.findall(text)}:
        if slot not in {p.name for p in params}:
            raise TypeError(f"tool {tool_name!r}: phrasing slot {{{slot}}} is not a parameter")
    returns_t = (returns,) if isinstance(returns, str) else tuple(returns)
    inverses = (inverse_of,) if isinstance(inverse_of, str) else tuple(inverse_of)
    if inverses and not writes:
        raise TypeError(f"tool {tool_name!r}: inverse_of= is for writes; a read undoes nothing")
    if tool_name in inverses:
        raise TypeError(f"tool {tool_name!r}: a tool is not its own inverse")
    if ends_when and not writes:
        raise TypeError(f"tool {tool_name!r}: ends_when= is for writes; a read ends nothing")
    stand_in = (stands_in_for,) if isinstance(stands_in_for, str) else tuple(stands_in_for)
    if tool_name in stand_in:
        raise TypeError(f"tool {tool_name!r}: stands_in_for names the tool itself")
    return ToolSpec(
        name=tool_name,
        description=description,
        fn=fn,
        params=tuple(params),
        writes=writes,
        destructive=destructive,
        idempotent=(not writes) if idempotent is None else idempotent,
        inverse_of=inverses,
        returns=returns_t,
        hidden=hidden,
        phrasings=tuple(phrasings),
        stands_in_for=stand_in,
        examples=dict(examples or {}),
        values=dict(values or {}),
        ends_when=dict(ends_when or {}),
        _fields=fields,
        _return=hints.get("return"),
    )


def output_schema(annotation: Any) -> dict[str, Any] | None:
    """The JSON schema of what a tool returns, as MCP's ``outputSchema`` (an object).

    ``None`` for untyped returns (no annotation, ``dict``, ``list[dict]``, ``Any``):
    they say nothing a client could validate.

    >>> from typing_extensions import TypedDict  # pydantic needs it on Python 3.11
    >>> class Slot(TypedDict):
    ...     start: str
    >>> output_schema(list[Slot])["properties"]["result"]["items"]["required"]
    ['start']
    >>> output_schema(dict) is None
    True
    """
    if annotation is None or not _typed(annotation):
        return None
    schema = _clean_schema_tree(pydantic.TypeAdapter(annotation).json_schema(mode="serialization"))
    if schema.get("type") == "object":
        return schema
    defs = schema.pop("$defs", None)
    wrapped: dict[str, Any] = {
        "type": "object",
        "properties": {"result": schema},
        "required": ["result"],
    }
    if defs:
        wrapped["$defs"] = defs
    return wrapped


def _typed(annotation: Any) -> bool:
    """Whether a return annotation describes its shape (not ``dict``, ``Any`` or ``None``)."""
    if annotation in (dict, list, typing.Any, type(None), object):
        return False
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Annotated:
        return _typed(args[0])
    if origin in (dict, Mapping):
        return False
    if origin in (list, tuple, Sequence, typing.Union) or (
        origin is not None and origin.__name__ == "UnionType"
    ):
        return all(_typed(a) for a in args if a is not type(None) and a is not Ellipsis)
    return True


def _clean_schema_tree(schema: dict[str, Any]) -> dict[str, Any]:
    """Drop pydantic's ``title`` keys everywhere but inside ``properties``."""

    def walk(node: Any, in_properties: bool = False) -> Any:
        if isinstance(node, dict):
            return {
                k: walk(v, in_properties=(k == "properties"))
                for k, v in node.items()
                if in_properties or k != "title"
            }
        if isinstance(node, list):
            return [walk(v) for v in node]
        return node

    cleaned: dict[str, Any] = walk(schema)
    return cleaned


DEFAULT_MAX_LENGTH = 10_000
"""The ``maxLength`` every string parameter declares unless it declares its own (the
session refuses longer strings anyway: :data:`prove_gym.server.session.MAX_STRING`)."""


def _cap_strings(annotation: Any) -> Any:
    """``annotation`` with every ``str`` in it capped at :data:`DEFAULT_MAX_LENGTH` characters
    (in ``X | None``, ``list[X]`` and ``Annotated``), unless it declares its own ``max_length``:
    the cap shows in the schema the model reads.

    >>> pydantic.TypeAdapter(_cap_strings(list[str] | None)).json_schema()["anyOf"][0]
    {'items': {'maxLength': 10000, 'type': 'string'}, 'type': 'array'}
    """
    origin = typing.get_origin(annotation)
    if annotation is str:
        return Annotated[str, Field(max_length=DEFAULT_MAX_LENGTH)]
    if origin is Annotated:
        base, *meta = typing.get_args(annotation)
        if base is str:
            if any(_declares_max_length(m) for m in meta):
                return annotation
            return Annotated[(str, *meta, Field(max_length=DEFAULT_MAX_LENGTH))]
        return Annotated[(_cap_strings(base), *meta)]
    if origin is list:
        return list[_cap_strings(typing.get_args(annotation)[0])]  # type: ignore[misc]
    if origin is typing.Union or (origin is not None and origin.__name__ == "UnionType"):
        return typing.Union[tuple(_cap_strings(a) for a in typing.get_args(annotation))]  # noqa: UP007
    return annotation


def _declares_max_length(meta: Any) -> bool:
    if getattr(meta, "max_length", None) is not None:  # a pydantic FieldInfo
        return True
    return any(getattr(m, "max_length", None) is not None for m in getattr(meta, "metadata", ()))


def _row_class(annotation: Any) -> type | None:
    """The SQLAlchemy mapped class an annotation resolves to (``Account``, ``Account | None``,
    ``list[Account]``), or ``None`` for plain values."""
    if typing.get_origin(annotation) is typing.Annotated:
        return _row_class(typing.get_args(annotation)[0])
    if typing.get_origin(annotation) is Record:
        return _row_class(typing.get_args(annotation)[0])
    if isinstance(annotation, type) and hasattr(annotation, "__mapper__"):
        return annotation
    for arg in typing.get_args(annotation):
        found = _row_class(arg)
        if found is not None:
            return found
    return None


def _takes_record(annotation: Any) -> bool:
    """Whether every mapped class in a row annotation is wrapped in ``Record[...]``."""
    if typing.get_origin(annotation) is Record:
        return True
    if isinstance(annotation, type) and hasattr(annotation, "__mapper__"):
        return False
    return all(
        _takes_record(a)
        for a in typing.get_args(annotation)
        if not isinstance(a, Entity) and _row_class(a) is not None
    )


def _id_annotation(annotation: Any, row: type) -> Any:
    """The model-facing type of a row parameter: the row class replaced by its id's type."""
    (pk,) = row.__mapper__.primary_key  # type: ignore[attr-defined]
    id_type = pk.type.python_type
    if typing.get_origin(annotation) is typing.Annotated:
        base, *meta = typing.get_args(annotation)
        return typing.Annotated[(_id_annotation(base, row), *meta)]
    if annotation is row or typing.get_origin(annotation) is Record:
        return id_type
    if annotation is type(None):
        return annotation
    origin = typing.get_origin(annotation)
    args = tuple(_id_annotation(a, row) for a in typing.get_args(annotation))
    if origin is list:
        return list[args[0]]  # type: ignore[valid-type]
    if origin is typing.Union or (origin is not None and origin.__name__ == "UnionType"):
        return typing.Union[args]  # noqa: UP007
    raise TypeError(
        f"cannot take {annotation!r} as an entity parameter: use the row, its list or X | None"
    )


def _find_entity(annotation: Any) -> Entity | None:
    """Find an :class:`Entity` marker in ``Annotated[...]``, also inside ``X | None``.

    A marker on a list (``Annotated[list[str], Entity("contact")]``) or inside one
    (``list[Annotated[str, Entity("contact")]]``) is ``many`` without saying so.
    """
    if typing.get_origin(annotation) is typing.Annotated:
        base = typing.get_args(annotation)[0]
        for meta in annotation.__metadata__:
            if isinstance(meta, Entity):
                return Entity(meta.name, True, meta.shared) if _is_list(base) else meta
        return _find_entity(base)
    for arg in typing.get_args(annotation):
        found = _find_entity(arg)
        if found is not None:
            return Entity(found.name, True, found.shared) if _is_list(annotation) else found
    return None


def _is_list(annotation: Any) -> bool:
    """``list[...]``, also as ``list[...] | None``."""
    if typing.get_origin(annotation) is list or annotation is list:
        return True
    origin = typing.get_origin(annotation)
    if origin is typing.Union or (origin is not None and origin.__name__ == "UnionType"):
        return any(_is_list(a) for a in typing.get_args(annotation) if a is not type(None))
    return False


def enum_choices(prop: Mapping[str, Any]) -> list[Any]:
    """Enum values a parameter schema allows (also inside ``anyOf``)."""
    if "enum" in prop:
        return list(prop["enum"])
    for option in prop.get("anyOf", []) or []:
        if isinstance(option, Mapping) and "enum" in option:
            return list(option["enum"])
    return []


F = TypeVar("F", bound=Callable[..., Any])
_DECLARED = "__prove_gym_tool__"


def tool(**options: Any) -> Callable[[F], F]:
    """Declare a tool where it is written, for :meth:`Server.add_tools
    <prove_gym.server.base.Server.add_tools>` to register where the server is.

    Takes :meth:`Server.tool <prove_gym.server.base.Server.tool>`'s keyword arguments
    (``writes=``, ``returns=``, ``phrasings=``...), keeps them on the function and registers
    nothing: a large server's resource modules (``tools/flights.py``) declare their tools
    without importing the server, and ``tools/__init__.py`` registers them all in one order.
    """

    def declare(fn: F) -> F:
        setattr(fn, _DECLARED, dict(options))
        return fn

    return declare


def retold(fn: Callable[..., Any], doc: str, *, since: int, module: str) -> Callable[..., Any]:
    """A later definition of the tool ``fn`` (declared with :func:`tool`) that does exactly
    what it does and says ``doc`` instead: its docstring, the description the model reads.

    For a version whose tools keep their parameters and result schema but whose results or
    rules read differently (travel_booking's -v2 shows local times with offsets): the
    version's description of each tool says so, and earlier versions keep ``fn``'s byte for
    byte. The new definition takes ``fn``'s options (``phrasings=``, ``returns=``...) and
    signature; list it where the server registers its later tools (``add_tools``), as one
    declared in ``module`` (the module that assigns it to a name).

    Raises:
        TypeError: ``fn`` was not declared with :func:`tool`, or ``doc`` is blank.
    """
    options = declared_options(fn)
    if options is None:
        raise TypeError(f"{fn.__name__} was not declared with @tool: nothing to retell")
    if not doc.strip():
        raise TypeError(f"{fn.__name__}: write the docstring the version's model reads")
    options.update(name=options.get("name", fn.__name__), since=since)

    @functools.wraps(fn)
    def retelling(*args: Any, **kwargs: Any) -> Any:
        return fn(*args, **kwargs)

    retelling.__doc__ = doc
    retelling.__module__ = module
    return tool(**options)(retelling)


def declared_options(fn: Callable[..., Any]) -> dict[str, Any] | None:
    """The options :func:`tool` kept on ``fn``, or ``None`` if it was not declared with it."""
    options = getattr(fn, _DECLARED, None)
    return dict(options) if isinstance(options, dict) else None
