"""The :class:`Server`: a name, a typed state model, a sampler and tools."""

from __future__ import annotations

import datetime as dt
import os
import random
import sqlite3
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import accumulate
from pathlib import Path
from types import MappingProxyType, MethodType, ModuleType
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeVar, cast

from sqlalchemy import MetaData, Table, create_engine, inspect
from sqlalchemy.orm import DeclarativeBase, Mapper
from sqlalchemy.orm import Session as OrmSession
from sqlalchemy.pool import NullPool
from sqlalchemy.schema import CreateIndex, CreateTable

from prove_gym.server.gc_tuning import rare_collections
from prove_gym.server.session import Session
from prove_gym.server.sql import DIALECT, Sql, key_column, record_by_key
from prove_gym.server.state import (
    MAX_STATE_SIZE,
    StateTemplate,
    create_change_log,
    install_change_log,
    schema_layout,
    stable_int,
    template_key,
)
from prove_gym.server.tool import Normalisation, ToolSpec, build_tool_spec, declared_options

if TYPE_CHECKING:
    from _typeshed import SupportsLenAndGetItem
    from faker import Faker
    from sqlalchemy.engine import Connection, Engine

F = TypeVar("F", bound=Callable[..., Any])

EPOCH = dt.datetime(2026, 1, 5, 9, 0)
"""Monday 2026-01-05 09:00: the earliest "now" a seeded state can have."""

IDLE_STATES = 4
"""Databases of closed sessions a server keeps for its next sessions (a reset-heavy loop
opens and closes one per episode)."""


class SampleRandom(random.Random):
    """The ``random.Random`` a sampler draws from: its most frequent draws in one call each.

    ``choice``, ``randint`` and ``randrange`` (integer arguments, unit step) inline
    CPython's ``_randbelow_with_getrandbits``, which each of them reaches through one to
    three more calls: the same ``getrandbits`` calls, hence the same values and the same
    state after them (``tests/server/test_sample_random.py`` checks it against
    ``random.Random`` for any seed and arguments). Anything else, errors included, is
    ``random.Random``'s own.
    """

    def choice(self, seq: SupportsLenAndGetItem[_T]) -> _T:
        n = len(seq)
        if not n:
            raise IndexError("Cannot choose from an empty sequence")
        getrandbits = self.getrandbits
        k = n.bit_length()
        r = getrandbits(k)
        while r >= n:
            r = getrandbits(k)
        return seq[r]

    def randint(self, a: int, b: int) -> int:
        if type(a) is int and type(b) is int and a <= b:
            n = b - a + 1
            getrandbits = self.getrandbits
            k = n.bit_length()
            r = getrandbits(k)
            while r >= n:
                r = getrandbits(k)
            return a + r
        return super().randint(a, b)

    def randrange(self, start: int, stop: int | None = None, step: int = 1) -> int:
        if type(start) is int and type(step) is int and step == 1:
            if stop is None:
                low, n = 0, start
            elif type(stop) is int:
                low, n = start, stop - start
            else:
                return super().randrange(start, stop, step)
            if n > 0:
                getrandbits = self.getrandbits
                k = n.bit_length()
                r = getrandbits(k)
                while r >= n:
                    r = getrandbits(k)
                return low + r
        return super().randrange(start, stop, step)


@dataclass(slots=True)
class SampleContext:
    """What a sampler gets to build a state.

    Attributes:
        db: ORM session on the empty database (tables already created); the
            sampler adds rows, the caller commits.
        rng: A ``random.Random`` (a :class:`SampleRandom`) seeded from (server, seed, size).
        fake: A ``Faker`` seeded the same way; use it for names, emails, text.
        size: Scale; 1 is the default realistic size the server documents.
        now: The fixed current time of this state; sample times around it.
        seed: The seed (only for information: draw randomness from ``rng``/``fake``).
    """

    db: OrmSession
    rng: random.Random
    fake: Faker
    size: int
    now: dt.datetime
    seed: int

    def insert(self, rows: Iterable[Any], into: type | None = None) -> None:
        """Insert rows at once, off the ORM's unit of work: one ``executemany`` per table.

        ``db.add_all`` and a flush cost the ORM tens of microseconds a row; a sampler that
        builds thousands of rows inserts them here once their values are final, either

        - as mapped objects: tables written in dependency order (parents first), each
          table's rows in the order given (so integer keys number as with ``add_all``); a
          column left ``None`` takes its default, as with the ORM. The objects stay
          outside the session: look them up in the sampler's own lists, not by query; or
        - ``into`` a model's table, as plain rows: dicts of column values, or objects whose
          attributes are named as the columns (slots dataclasses, a tenth of a mapped
          object's cost to build), in the order given (see :meth:`Sql.insert_many`).

        Either way the database holds what ``add_all`` and a flush would have written.
        """
        sql = Sql(cast(sqlite3.Connection, self.db.connection().connection.dbapi_connection))
        if into is not None:
            sql.insert_many(into, rows)
            return
        batches: dict[Table, list[dict[str, Any]]] = {}
        for row in rows:
            table, columns = _insert_plan(type(row))
            values = row.__dict__
            batches.setdefault(table, []).append(
                {
                    key: default if (value := values.get(attr)) is None else value
                    for attr, key, default in columns
                }
            )
        if not batches:
            return
        order = next(iter(batches)).metadata.sorted_tables
        for table in sorted(batches, key=order.index):
            sql.insert_many(table, batches[table])


Sampler = Callable[[SampleContext], None]

_T = TypeVar("_T")


class Weighted(Generic[_T]):
    """Values and their weights for a sampler's draws, the weights added up once.

    ``pick(rng)`` draws as ``rng.choices(values, weights=weights)[0]`` does, from the
    same single ``rng.random()``, so swapping one for the other keeps a state's bytes;
    ``choices`` with ``weights`` adds them all up again on every draw.

    >>> import random
    >>> sizes = Weighted([("S", 1), ("M", 3), ("L", 1)])
    >>> sizes.pick(random.Random(4)) == random.Random(4).choices(["S", "M", "L"], [1, 3, 1])[0]
    True
    """

    __slots__ = ("cum_weights", "values")

    def __init__(self, choices: Iterable[tuple[_T, float]]) -> None:
        pairs = list(choices)
        self.values = [value for value, _ in pairs]
        self.cum_weights = list(accumulate(weight for _, weight in pairs))

    def pick(self, rng: random.Random) -> _T:
        return rng.choices(self.values, cum_weights=self.cum_weights)[0]

    def picks(self, rng: random.Random, k: int) -> list[_T]:
        """``k`` draws with replacement, as ``rng.choices(values, weights, k=k)``."""
        return rng.choices(self.values, cum_weights=self.cum_weights, k=k)


def _schema_statements(metadata: MetaData) -> tuple[str, ...]:
    """The DDL of ``metadata``'s tables, then each table's indexes by name: the same
    statements in the same order in every process, hence the same database bytes.

    (``MetaData.create_all`` visits a table's indexes in the order of a Python set, which
    follows memory addresses: the schema's pages came out in another order per process.)
    Compiled once per schema, cached in the metadata as the state hash caches its queries.
    """
    cached: tuple[int, tuple[str, ...]] | None = metadata.info.get("prove_gym.schema_sql")
    if cached is None or cached[0] != len(metadata.tables):
        statements = []
        for table in metadata.sorted_tables:
            statements.append(str(CreateTable(table).compile(dialect=DIALECT)))
            for index in sorted(table.indexes, key=lambda i: str(i.name)):
                statements.append(str(CreateIndex(index).compile(dialect=DIALECT)))
        cached = metadata.info["prove_gym.schema_sql"] = (len(metadata.tables), tuple(statements))
    return cached[1]


_InsertPlan = tuple[Table, list[tuple[str, str, Any]]]
_insert_plans: dict[type, _InsertPlan] = {}


def _insert_plan(model: type) -> _InsertPlan:
    """A mapped class's table and, per column, (attribute, column key, scalar default)."""
    plan = _insert_plans.get(model)
    if plan is None:
        mapper: Mapper[Any] = inspect(model)
        columns = []
        for prop in mapper.column_attrs:
            column = prop.columns[0]
            default = column.default
            if default is not None and not default.is_scalar:
                raise TypeError(
                    f"{model.__name__}.{prop.key}: only scalar defaults can be inserted"
                )
            columns.append((prop.key, column.key, getattr(default, "arg", None)))
        plan = _insert_plans[model] = (cast(Table, mapper.local_table), columns)
    return plan


@dataclass(frozen=True, slots=True)
class EntitySource:
    """One entity kind, declared once (see :meth:`Server.entity`).

    Attributes:
        kind: The kind (``"account"``), as ``Entity("account")`` names it.
        key: The record field holding the id that ``Entity(kind)`` parameters take.
        fn: Lists existing entities worth asking about, as records (for grounding).
        model: The mapped class whose primary key is the id: parameters typed
            ``Annotated[Record[Model], Entity(kind)]`` are resolved to rows by the core.
        not_found: What the model should do when an id does not exist, such as
            "Call list_accounts with the customer's id to see their accounts."
        label: How the kind reads in messages (default: the kind with spaces).
        case: ``"upper"`` or ``"lower"`` when the kind's ids are case-insensitive, as a real
            system's coupon codes are: the id a model sends is matched in that case.
        owner: The column of ``model`` holding the id of the principal the entity belongs
            to (``"mailbox_id"`` on a message), in the env versions that declare a
            :class:`Principal`; ``None``: nobody owns it (an instrument, an address).
        shared: Its rows refer to principals but are no one principal's: several act on
            each (a listing every member may bid on, an offer between its buyer and its
            seller), and the tools' own rules say who may do what. The conformance check
            then asks no ``owner=`` of it.
        through: The entity kind whose row ``owner`` names, where that column holds no
            principal's id but another owned row's (a card's ``account_id``): the row
            belongs to whoever owns that one (``None``: ``owner`` names the principal).
    """

    kind: str
    key: str
    fn: Callable[..., list[dict[str, Any]]]
    model: type | None = None
    not_found: str = ""
    label: str = ""
    case: Literal["exact", "upper", "lower"] = "exact"
    owner: str | None = None
    shared: bool = False
    through: str | None = None

    @property
    def shown(self) -> str:
        """How the kind reads in messages: its ``label``, or the kind with spaces."""
        return self.label or self.kind.replace("_", " ")

    def lookup_key(self, value: Any) -> Any:
        """The id a model sent, as it is stored: surrounding white space dropped (no id has
        any), and upper- or lower-cased where the kind's ids are case-insensitive."""
        if not isinstance(value, str):
            return value
        value = value.strip()
        if self.case == "upper":
            return value.upper()
        return value.lower() if self.case == "lower" else value

    def missing(self, value: Any) -> str:
        """The ``not_found`` message for an id that does not exist."""
        return f"No {self.shown} with id {value!r}. {self.not_found}".strip()


_faker_local = threading.local()


def _random_elements(
    provider: Any,
    elements: Any = ("a", "b", "c"),
    length: int | None = None,
    unique: bool = False,
    use_weighting: bool | None = None,
) -> Sequence[Any]:
    """Faker's ``BaseProvider.random_elements``, with a weighted draw's sums made once.

    Faker's weighted pools (first and last names, name formats) are ordered dicts of
    thousands of weights, and each ``first_name()`` adds them all up again (``choices``
    with ``weights``), most of a sampler's time in Faker. Drawing with the cumulative
    weights, summed once per pool by the same ``accumulate``, takes the same single
    ``random()`` and gives the same value; every other kind of draw is Faker's own.
    """
    weighted = (
        getattr(provider, "__use_weighting__", True) if use_weighting is None else use_weighting
    )
    if unique or length is None or not weighted or type(elements) is not OrderedDict:
        return type(provider).random_elements(provider, elements, length, unique, use_weighting)
    pool: Weighted[Any] | None = elements.__dict__.get("_prove_weighted")
    if pool is None or len(pool.values) != len(elements):
        pool = elements.__dict__["_prove_weighted"] = Weighted(elements.items())
    return pool.picks(provider.generator.random, length)


def _seeded_faker(seed: int) -> Faker:
    from faker import Faker

    fake = getattr(_faker_local, "fake", None)
    if fake is None:
        fake = _faker_local.fake = Faker("en_US")
        for provider in fake.get_providers():
            provider.random_elements = MethodType(_random_elements, provider)
    fake.seed_instance(seed)
    fake.unique.clear()  # unique values must not leak from one sampled state into the next
    return fake


@dataclass(frozen=True, slots=True)
class Principal:
    """Who the user is: the entity a session acts for, from the env version declaring it on.

    A real mailbox is read and sent from by its owner, a home is run by its members: the
    task names one (``Task.principals``, ``{"email": "mbx_03"}``) and every call acts for
    it. Ownership is declared once, on the entities (``@server.entity(..., owner=
    "mailbox_id")``: the row's column naming its principal; the principal's own kind owns
    itself), and the core enforces it: a call whose entity parameter names a row another
    principal owns is refused with ``permission_denied``, rule ``not_your_<entity>``,
    before the tool runs, and changes nothing (CONTRIBUTING.md, "An acting principal").

    Attributes:
        entity: The kind the principal is (``"mailbox"``): an entity declared with a
            ``model``, whose rows a session can be opened for.
        prompt: What the system prompt tells the model, ``{id}`` filled with the
            principal's id: ``"You act for the owner of mailbox {id}: ..."``.
        admin_only: Tools no principal may call, whatever it owns (the shop's own
            operations, such as marking an order shipped): refused with
            ``permission_denied``, rule ``admin_only``, before they run.
    """

    entity: str
    prompt: str
    admin_only: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "admin_only", tuple(self.admin_only))
        if "{id}" not in self.prompt:
            raise ValueError(
                f"Principal({self.entity!r}): the prompt must name the principal with {{id}}"
            )

    @property
    def rule(self) -> str:
        """The rule a call acting for another principal breaks: ``not_your_mailbox``."""
        return f"not_your_{self.entity}"


@dataclass(frozen=True, slots=True)
class EnvVersion:
    """A later Gymnasium version of a server's env: ``prove/<server>-v<number>``.

    An env id is a promise about states, tool results and rewards. A change to
    any of them registers a new version beside the old one instead of
    changing what a published id means (CONTRIBUTING.md, "Versioning").

    Attributes:
        number: The version, >= 1 (``-v0`` is the server as first released).
        changes: What differs from the previous version (shown in the env's Version History).
        tools: Names of the visible tools this version offers (``None``: all of them), so a
            version that adds tools leaves earlier versions' tool sets unchanged.
        reward: The reward this version pays by default (a ``RewardConfig``; ``None``:
            the default config), so a reward change gets a version of its own.
        tasks_file: This version's own hand-written tasks (``.jsonl``), each recorded under
            it (``"env_versions": {"<server>": <number>}``). A version that changes what a
            tool does needs them: the earlier tasks' gold ends elsewhere, or fails, under
            it. ``None``: it plays the server's ``tasks_file`` (a version that only adds
            tools or changes the reward).
        instructions: System-prompt text added after the server's ``instructions`` in
            this version and every later one (the rules that are new in it).
        principal: Who the user is (:class:`Principal`) in this version and every later
            one: each session acts for one, named by the task.

    Tools see the version a session plays as ``ctx.env_version`` and branch on it
    (``if ctx.env_version >= 1:``), so earlier versions keep their results.
    """

    number: int
    changes: str
    tools: tuple[str, ...] | None = None
    reward: Any = None
    tasks_file: Path | None = None
    instructions: str = ""
    principal: Principal | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.number, int) or self.number < 1:
            raise ValueError(f"EnvVersion.number must be an integer >= 1, got {self.number!r}")
        if not self.changes.strip():
            raise ValueError(f"EnvVersion {self.number}: say what changed in `changes`")
        if self.tasks_file is not None and not isinstance(self.tasks_file, Path):
            object.__setattr__(self, "tasks_file", Path(self.tasks_file))


@dataclass(frozen=True, slots=True)
class OwnedParam:
    """An entity parameter whose row belongs to a principal (:meth:`Server.owned_params`).

    Attributes:
        name: The parameter.
        source: Its entity kind's declaration.
        column: The row's column that holds the id of the principal owning it.
    """

    name: str
    source: EntitySource
    column: str


def _owner_column(source: EntitySource, principal: Principal) -> str | None:
    """The column of ``source``'s rows naming their principal: its declared ``owner``, or
    the primary key for the principal's own kind; ``None`` when nobody owns them."""
    if source.owner is not None:
        return source.owner
    if source.kind == principal.entity and source.model is not None:
        return key_column(source.model)
    return None


class Server:
    """A stateful tool server, defined once and used by the env, MCP and synthesis.

    Args:
        name: Short lowercase name (``"calendar"``); env id ``prove/<name>-v0``.
        version: The server's own version; bump it when tools or sampling change.
        base: The SQLAlchemy ``DeclarativeBase`` subclass that owns its tables.
        sampler: Fills an empty database with a realistic state (see :class:`SampleContext`).
        description: One paragraph on what the server simulates.
        instructions: Extra system-prompt text for the model (policies, conventions).
        default_size: Size used when none is given.
        template_cache_size: How many sampled states to keep in memory (LRU).
        tasks_file: The plugin's shipped tasks (``.jsonl``), offered by the registry and
            kept current by ``prove-gym tasks --rehash``: hand-written ones, and those
            ``prove-gym tasks --resynthesize`` adds with the current generator.
        env_versions: Later env versions (:class:`EnvVersion`) registered beside ``-v0``.
        out_of_scope: Requests a user of this server might make that none of its tools
            (nor any other server's) can serve, such as "Print my calendar for next week":
            synthesis asks them in abstention turns, beside general questions.
        me: Who the user of a session is, where the state fixes it (a signed-in person):
            ``(ctx) -> {entity kind: id}`` read from a state (``{"user": "usr_001"}``).
            Synthesis says "me" for those ids ("Add me to chan_004"), never the id.
        persona: Entity kinds one of which a conversation is about, the person it serves
            (``("customer",)``: a support assistant serves one customer at a time).
            Synthesis draws such an id from the state only when the conversation has none
            yet; later it keeps the one in play (never a second customer unasked).

    Example:
        >>> server = Server("notes", version="1.0", base=Base, sampler=sample_notes)
        >>> @server.tool(writes=True, returns="note")
        ... def add_note(ctx: ToolContext, text: str) -> dict: ...
    """

    def __init__(
        self,
        name: str,
        *,
        version: str,
        base: type[DeclarativeBase],
        sampler: Sampler,
        description: str = "",
        instructions: str = "",
        default_size: int = 1,
        template_cache_size: int = 64,
        tasks_file: str | Path | None = None,
        env_versions: Sequence[EnvVersion] = (),
        out_of_scope: Sequence[str] = (),
        me: Callable[[Any], Mapping[str, Any]] | None = None,
        persona: Sequence[str] = (),
    ) -> None:
        if not name.isidentifier() or name.lower() != name:
            raise ValueError(f"server name must be a lowercase identifier, got {name!r}")
        self.name = name
        self.version = version
        self.base = base
        self.sampler = sampler
        self.description = description
        self.instructions = instructions
        self.default_size = default_size
        self.tasks_file = Path(tasks_file) if tasks_file is not None else None
        numbers = [v.number for v in env_versions]
        if numbers != sorted(set(numbers)):
            raise ValueError(f"server {name!r}: env versions must be distinct and ascending")
        self.env_versions: dict[int, EnvVersion] = {v.number: v for v in env_versions}
        self.out_of_scope: tuple[str, ...] = tuple(out_of_scope)
        self.me = me
        self.persona: tuple[str, ...] = tuple(persona)
        self.tools: dict[str, ToolSpec] = {}
        # later definitions of tools (Server.tool(since=N)): name -> {N: spec}, N ascending
        self.redefined: dict[str, dict[int, ToolSpec]] = {}
        self._by_version: dict[int, Mapping[str, ToolSpec]] = {}
        self.entities: dict[str, EntitySource] = {}
        self._templates: OrderedDict[tuple[int, int], StateTemplate] = OrderedDict()
        self._template_cache_size = template_cache_size
        self._lock = threading.Lock()
        self._engine: Engine | None = None
        # _start_state's: the DDL it ran, in which process, the database it ran it on and
        # that database's schema cookie
        self._empty: tuple[tuple[str, ...], int, sqlite3.Connection, int] | None = None
        # closed sessions' databases, each with the schema layout it holds and the template
        # it still holds exactly, if it does (open_state)
        self._idle: list[tuple[str, Connection, StateTemplate | None]] = []
        self._owned: dict[tuple[str, int, str], tuple[OwnedParam, ...]] = {}

    def __repr__(self) -> str:
        return f"Server({self.name!r}, version={self.version!r}, tools={len(self.visible_tools())})"

    # ------------------------------------------------------------------ tools
    def tool(
        self,
        fn: F | None = None,
        *,
        name: str | None = None,
        since: int = 0,
        writes: bool = False,
        destructive: bool = False,
        idempotent: bool | None = None,
        inverse_of: str | Sequence[str] = (),
        returns: str | Sequence[str] = (),
        hidden: bool = False,
        phrasings: Sequence[str] = (),
        normalise: Mapping[str, Normalisation] | None = None,
        examples: Mapping[str, Sequence[Any] | Callable[..., Any]] | None = None,
        values: Mapping[str, Callable[..., Any]] | None = None,
        stands_in_for: str | Sequence[str] = (),
        ends_when: Mapping[str, Any] | None = None,
    ) -> Any:
        """Declare a tool (decorator). See :func:`prove_gym.server.tool.build_tool_spec`.

        Args:
            name: Name the model calls; defaults to the function's name.
            since: ``0`` declares a tool. ``N >= 1`` declares a later definition of the
                tool ``name`` already declared, which env version ``N`` and every later one
                play instead (its parameters, schema, docstring and code); earlier versions
                keep the earlier definition, byte for byte (CONTRIBUTING.md, "Versioning a
                behaviour change"). A tool never declared before is new in version ``N``:
                earlier versions neither offer nor run it. ``N`` must be one of the
                server's ``env_versions``.
            writes: The tool may change state.
            destructive: The tool deletes or overwrites something.
            idempotent: Repeating the call changes nothing more (default: ``not writes``).
            inverse_of: The tool(s) of this server whose effect this one undoes on the same
                entity (``unlike_post``: ``"like_post"``); declared on one side, read both
                ways (:meth:`inverses`).
            returns: Entity kind(s) whose identifiers the result contains.
            hidden: Not offered to the model (helper/debug tools).
            phrasings: User-request templates with ``{argument}`` slots, for synthesis.
            normalise: Per-argument value normalisation used by the reward.
            examples: Per-argument example values for synthesis (a list, or a callable
                ``(ctx, rng) -> value`` for values that depend on the state).
            values: Per-argument value sources for synthesis, for values that must fit
                the rest of the call: ``(ctx, rng, bound) -> value | None``
                (:class:`~prove_gym.server.tool.Bound`).
            stands_in_for: Other tools of this server whose requests this one can serve
                too, alone or after reads (``cat`` and ``read_lines`` for ``head``): an
                abstention turn never hides one of them while this one is offered
                (:meth:`stand_ins`).
            ends_when: Argument values with which a call ends what it names, for a write
                that is no deletion by name (``update_cart_item`` with ``{"quantity": 0}``
                removes the line): synthesis never plans a write to that entity before it.
        """

        def register(func: F) -> F:
            spec = build_tool_spec(
                func,
                name=name,
                writes=writes,
                destructive=destructive,
                idempotent=idempotent,
                inverse_of=inverse_of,
                returns=returns,
                hidden=hidden,
                phrasings=phrasings,
                normalise=normalise,
                examples=examples,
                values=values,
                stands_in_for=stands_in_for,
                ends_when=ends_when,
            )
            spec.server_name = self.name
            if since:
                self._redefine(spec, since)
                return func
            if spec.name in self.tools or spec.name in self.redefined:
                raise ValueError(f"server {self.name!r} declares tool {spec.name!r} twice")
            self.tools[spec.name] = spec
            self._by_version.clear()
            return func

        return register(fn) if fn is not None else register

    def _redefine(self, spec: ToolSpec, since: int) -> None:
        """Register ``spec`` as the definition of its tool from env version ``since`` on: a
        later definition of a declared tool, or a tool new in that version (none before)."""
        if not isinstance(since, int) or since not in self.env_versions:
            raise ValueError(
                f"server {self.name!r}: tool {spec.name!r} is redefined since={since!r}, "
                f"which is not one of its env versions {sorted(self.env_versions)}"
            )
        earlier = [*self.redefined.get(spec.name, {}).values()]
        first = self.tools.get(spec.name) or (earlier[0] if earlier else None)
        if first is not None and spec.hidden != first.hidden:
            raise ValueError(
                f"server {self.name!r}: tool {spec.name!r} since={since} is "
                f"{'hidden' if spec.hidden else 'visible'}, its earlier definition is not"
            )
        later = self.redefined.setdefault(spec.name, {})
        if since in later:
            raise ValueError(
                f"server {self.name!r} redefines tool {spec.name!r} since={since} twice"
            )
        spec.since = since
        later[since] = spec
        self.redefined[spec.name] = dict(sorted(later.items()))
        self._by_version.clear()

    def tools_for(self, env_version: int = 0) -> Mapping[str, ToolSpec]:
        """Every tool (hidden ones too) as env version ``env_version`` plays it, by name, in
        declaration order: for each, its latest definition with ``since <= env_version``
        (:meth:`tool`), else its first; a tool new in a later version (declared only with
        ``since=``) is left out before it and comes after the first ones. ``tools_for(0)``
        holds :attr:`tools`. Worked out once per version (read-only)."""
        if not self.redefined:
            return self.tools
        found = self._by_version.get(env_version)
        if found is None:
            tools = dict(self.tools)
            for name, later in self.redefined.items():
                for since, spec in later.items():
                    if since <= env_version:
                        tools[name] = spec
            found = self._by_version[env_version] = MappingProxyType(tools)
        return found

    def definitions(self) -> list[ToolSpec]:
        """Every definition of every tool: each first one, in declaration order, then each
        later one (``since=``), by tool and version: what a contract check goes through."""
        later = [spec for by_version in self.redefined.values() for spec in by_version.values()]
        return [*self.tools.values(), *later]

    def add_tools(
        self, tools: Sequence[Callable[..., Any]], *, declared_in: Sequence[ModuleType] = ()
    ) -> None:
        """Register tools declared with :func:`prove_gym.server.tool.tool`, in this order.

        The layout of a large server (CONTRIBUTING.md, "Large servers"): each resource
        module declares its tools with ``@tool(...)``; the package's ``__init__`` lists them
        all once, in the order the model reads them, and calls this. The order is the list's,
        never the order the modules happen to be imported in.

        Args:
            tools: Every tool function, in order; each must have been declared with ``@tool``.
            declared_in: The modules the tools come from: a tool declared in one of them but
                missing from ``tools`` is an error, so none is left out by accident.

        Raises:
            TypeError: A listed function was not declared, or a declared one is not listed.
        """
        listed = set(tools)
        missing = sorted(
            name
            for module in declared_in
            for name, value in vars(module).items()
            if callable(value)
            and getattr(value, "__module__", None) == module.__name__
            and declared_options(value) is not None
            and value not in listed
        )
        if missing:
            raise TypeError(f"{self.name}: declared with @tool but not listed: {missing}")
        for fn in tools:
            options = declared_options(fn)
            if options is None:
                raise TypeError(f"{self.name}: {fn.__name__} is listed but not declared with @tool")
            self.tool(fn, **options)

    def entity(
        self,
        kind: str,
        *,
        key: str,
        model: type | None = None,
        not_found: str = "",
        label: str = "",
        case: Literal["exact", "upper", "lower"] = "exact",
        owner: str | None = None,
        shared: bool = False,
        through: str | None = None,
    ) -> Callable[[F], F]:
        """Declare an entity kind once (decorator on the function that lists them).

        The function takes a :class:`ToolContext` and returns records (dicts) of
        entities that exist *and have enough supporting data to be worth asking
        about* (e.g. accounts with a non-zero balance), for grounding. ``key``
        names the record field holding the identifier that ``Entity(kind)``
        parameters take; other fields whose names match tool parameters can fill
        those too.

        With ``model``, a tool parameter typed ``Annotated[Record[Model], Entity(kind)]``
        (or ``Record[Model] | None``, ``list[Record[Model]]``) shows the model the id's
        type and receives the row: the core reads it with one statement before the tool
        runs and answers ``not_found`` with ``"No <label> with id '<id>'. <not_found>"``
        when it does not exist, so no tool writes that lookup again. The id is matched
        without surrounding white space, and in ``case`` when that is not ``"exact"``.

        ``owner`` names the column of ``model`` that holds the id of the principal the
        entity belongs to (``owner="mailbox_id"``): in an env version with a
        :class:`Principal`, a call naming a row of another principal is refused before the
        tool runs. The principal's own kind needs none (its rows own themselves). ``shared``
        says instead that its rows refer to principals but are no one's (a marketplace's
        listings, every member bids on): the tools' own rules decide who may act on them.
        ``through`` names the entity kind ``owner``'s column refers to when the row is owned
        through another (``owner="account_id", through="account"`` on a card: whoever owns
        the account owns the card), so the core checks it as well.

        >>> @server.entity("event", key="event_id", model=Event,
        ...                not_found="Call search_events to find the event's id.")
        ... def events(ctx): return [{"event_id": e.id, "title": e.title} for e in ...]
        """
        if model is not None and not hasattr(model, "__mapper__"):
            raise TypeError(f"entity {kind!r}: model must be a SQLAlchemy mapped class")
        if owner is not None and (model is None or owner not in model.__table__.columns):  # type: ignore[attr-defined]
            raise TypeError(
                f"entity {kind!r}: owner={owner!r} must name a column of its model "
                f"({getattr(model, '__name__', None)})"
            )
        if owner is not None and shared:
            raise TypeError(
                f"entity {kind!r}: a shared entity has no owner= (say one or the other)"
            )
        if through is not None and owner is None:
            raise TypeError(
                f"entity {kind!r}: through={through!r} needs owner=, the column naming the "
                f"{through} it is owned through"
            )

        def register(func: F) -> F:
            if kind in self.entities:
                raise ValueError(f"server {self.name!r} declares entity {kind!r} twice")
            self.entities[kind] = EntitySource(
                kind, key, func, model, not_found, label, case, owner, shared, through
            )
            return func

        return register

    def problems(self) -> list[str]:
        """Contract violations a plugin author should fix (empty when the server is complete).

        Checked for every installed server by the test suite: each visible tool (each of its
        definitions: ``since=``) has phrasings and a typed return (its MCP ``outputSchema``); each entity kind a tool refers to or returns can be
        enumerated with :meth:`entity`; each ``inverse_of=`` names a visible write tool
        of this server.
        """
        found = []
        kinds: set[str] = set()
        for t in self.definitions():
            if t.hidden:
                continue
            if not t.phrasings:
                found.append(f"{self.name}.{t.name}: no phrasings declared")
            if t.output_schema is None:
                found.append(
                    f"{self.name}.{t.name}: untyped return; annotate it with a TypedDict "
                    "(from prove_gym.server import TypedDict)"
                )
            kinds.update(e.name for e in t.entity_params.values())
            kinds.update(t.returns)
        for kind in sorted(kinds - set(self.entities)):
            found.append(f"{self.name}: entity {kind!r} is used by tools but has no @server.entity")
        visible_defs = [t for t in self.definitions() if not t.hidden]
        writes = {t.name for t in visible_defs if t.writes}
        for t in self.definitions():
            for other in t.inverse_of:
                if other not in writes:
                    found.append(
                        f"{self.name}.{t.name}: inverse_of names {other!r}, which is not a "
                        f"visible write tool of {self.name}"
                    )
        visible = {t.name for t in visible_defs}
        for t in visible_defs:
            strangers = sorted(set(t.stands_in_for) - visible)
            if strangers:
                found.append(
                    f"{self.name}.{t.name}: stands_in_for names {strangers}, which are not "
                    "tools this server offers"
                )
        if len(set(self.out_of_scope)) != len(self.out_of_scope):
            found.append(f"{self.name}: out_of_scope lists a request twice")
        for kind in self.persona:
            if kind not in self.entities:
                found.append(f"{self.name}: persona names {kind!r}, which is no entity kind")
        for version in self.env_versions.values():
            offered = {t.name for t in self.visible_tools(version.number)}
            unknown = sorted(set(version.tools or ()) - offered)
            if unknown:
                found.append(f"{self.name}: env v{version.number} offers unknown tools {unknown}")
            if version.tasks_file is not None and not version.tasks_file.is_file():
                found.append(
                    f"{self.name}: env v{version.number}'s tasks_file {version.tasks_file.name} "
                    "does not exist (record its tasks under it: CONTRIBUTING.md, Versioning)"
                )
        for kind, declared in self.entities.items():
            seen = [kind]
            while declared.through is not None:
                via = self.entities.get(declared.through)
                if via is None or via.model is None or via.kind in seen:
                    found.append(
                        f"{self.name}: entity {seen[-1]!r} is owned "
                        f"through={declared.through!r}, which is no entity declared with a "
                        "model, or leads back to itself"
                    )
                    break
                seen.append(via.kind)
                declared = via
        for version in self.env_versions.values():
            who = version.principal
            if who is None:
                continue
            source = self.entities.get(who.entity)
            if source is None or source.model is None:
                found.append(
                    f"{self.name}: env v{version.number}'s principal {who.entity!r} is not an "
                    "entity declared with a model (@server.entity(..., model=...))"
                )
                continue
            unknown = sorted(set(who.admin_only) - {t.name for t in visible_defs})
            if unknown:
                found.append(
                    f"{self.name}: env v{version.number}'s principal names unknown admin_only "
                    f"tools {unknown}"
                )
            played = {  # every definition a version acting for this principal plays
                id(t): t
                for n in (version.number, *(m for m in self.env_versions if m > version.number))
                for t in self.visible_tools(n)
            }
            for t in played.values():
                for p in t.params:
                    owned = self.entities.get(p.entity.name) if p.entity is not None else None
                    if (
                        p.row is None
                        and owned is not None
                        and p.entity is not None
                        and not p.entity.shared
                        and _owner_column(owned, who)
                    ):
                        found.append(
                            f"{self.name}.{t.name}: parameter {p.name!r} names a {owned.kind} by id "
                            f"only, so the core cannot check whose it is in env "
                            f"v{version.number}: take its row (Annotated[Record[...], "
                            f"Entity({owned.kind!r})])"
                        )
        for t in self.definitions():
            for p in t.row_params:
                assert p.entity is not None
                source = self.entities.get(p.entity.name)
                if source is not None and source.model is not p.row:
                    found.append(
                        f"{self.name}.{t.name}: parameter {p.name!r} takes a "
                        f"{getattr(p.row, '__name__', p.row)} row but entity {p.entity.name!r} "
                        f"declares model={getattr(source.model, '__name__', None)}"
                    )
        return found

    @property
    def env_ids(self) -> list[str]:
        """Every Gymnasium id of this server, ``-v0`` first."""
        return [f"prove/{self.name}-v{n}" for n in (0, *self.env_versions)]

    def inverses(self, name: str) -> frozenset[str]:
        """The tools that undo ``name``'s effect, or whose effect it undoes (``inverse_of=``,
        read both ways): ``inverses("like_post") == {"unlike_post"}``."""
        spec = self.tools.get(name)
        mine = set(spec.inverse_of) if spec is not None else set()
        return frozenset(mine | {t.name for t in self.tools.values() if name in t.inverse_of})

    def stand_ins(self, name: str) -> list[str]:
        """The visible tools that declare they can serve a request for tool ``name``
        (``stands_in_for``), in declaration order: while one of them is offered, hiding
        ``name`` does not make its request unanswerable.

        >>> server.stand_ins("head")  # doctest: +SKIP
        ['cat', 'read_lines']
        """
        return [t.name for t in self.visible_tools() if name in t.stands_in_for]

    def visible_tools(self, env_version: int = 0) -> list[ToolSpec]:
        """Tools offered to the model, in declaration order (hidden helpers left out), as
        env version ``env_version`` defines them (:meth:`tools_for`; every tool it declares,
        whether or not the version's ``EnvVersion.tools`` offers it)."""
        return [t for t in self.tools_for(env_version).values() if not t.hidden]

    # ------------------------------------------------------------------ state
    def now_for(self, seed: int) -> dt.datetime:
        """The fixed current time of states sampled from ``seed``: reproducible everywhere."""
        r = random.Random(stable_int("now", self.name, seed))
        return EPOCH + dt.timedelta(days=r.randrange(364), minutes=30 * r.randrange(18))

    @property
    def engine(self) -> Engine:
        """One engine per server; each connection is a private in-memory database."""
        if self._engine is None:
            self._engine = create_engine(
                "sqlite://",
                creator=lambda: sqlite3.connect(":memory:", check_same_thread=False),
                poolclass=NullPool,
            )
        return self._engine

    def connect(self, template: StateTemplate | None = None) -> Connection:
        """Open a SQLAlchemy connection to a new in-memory database, filled from ``template``."""
        conn = self.engine.connect()
        if template is not None:
            conn.connection.dbapi_connection.deserialize(template.data)  # type: ignore[union-attr]
        return conn

    def open_state(self, template: StateTemplate) -> Connection:
        """A connection holding a private copy of ``template``.

        A closed session's database is used again when one of the same schema layout is
        idle (:meth:`release_state`; :attr:`StateTemplate.layout` says why only then):
        refilling it from the template's bytes is most of what a fresh one costs less. One
        that still holds exactly this template (its session changed no row: a read-only
        episode) is taken first, as it is: nothing to copy.
        """
        layout = template.layout
        idle = None
        with self._lock:
            fits = [k for k, held in enumerate(self._idle) if held[0] == layout]
            same = [k for k in fits if self._idle[k][2] is template]
            if same or fits:
                idle = self._idle.pop((same or fits)[-1])
        if idle is None:
            return self.connect(template)
        _, conn, holds = idle
        if holds is not template:
            conn.connection.dbapi_connection.deserialize(template.data)  # type: ignore[union-attr]
        return conn

    def release_state(
        self, conn: Connection, layout: str, holds: StateTemplate | None = None
    ) -> None:
        """Take back what :meth:`open_state` gave once its session closed (no transaction
        open), holding a state of ``layout`` (exactly ``holds``'s, if given): kept for the
        next session (up to :data:`IDLE_STATES`), else closed."""
        raw = conn.connection.dbapi_connection
        if raw is not None and raw.in_transaction:
            raw.rollback()
        with self._lock:
            if len(self._idle) < IDLE_STATES:
                self._idle.append((layout, conn, holds))
                return
        conn.close()

    def sample(self, seed: int = 0, size: int | None = None) -> StateTemplate:
        """Build a state from scratch with the sampler (slow; :meth:`template` caches it)."""
        size = self.default_size if size is None else size
        if not 1 <= size <= MAX_STATE_SIZE:
            raise ValueError(f"size must be from 1 to {MAX_STATE_SIZE}, got {size}")
        now = self.now_for(seed)
        with rare_collections():  # a sampler allocates tens of thousands of objects
            conn = self.connect()
            try:
                raw = cast(sqlite3.Connection, conn.connection.dbapi_connection)
                self._start_state(raw)
                with OrmSession(bind=conn, expire_on_commit=False) as db:
                    key = stable_int("sample", self.name, seed, size)
                    ctx = SampleContext(
                        db=db,
                        rng=SampleRandom(key),
                        fake=_seeded_faker(key),
                        size=size,
                        now=now,
                        seed=seed,
                    )
                    self.sampler(ctx)
                    db.commit()
                install_change_log(raw, self.base.metadata, template_key(self.name, seed, size))
                raw.commit()
                data = raw.serialize()
                layout = schema_layout(raw)
            finally:
                conn.close()
        template = StateTemplate(server=self.name, seed=seed, size=size, now=now, data=data)
        template.__dict__["_layout"] = layout  # what StateTemplate.layout would compute
        return template

    def _start_state(self, raw: sqlite3.Connection) -> None:
        """Fill the empty database ``raw`` with a state before its sampler runs: the schema
        and the empty change log, the same bytes as running their DDL on it.

        The DDL runs once per server, into a database kept for this; a sample starts from a
        copy of its pages (``backup``, a fraction of the DDL's cost: SQLite parses the
        whole schema again after each statement), then sets the schema cookie the DDL
        would have left (a backup sets it to 1).
        """
        statements, pid = _schema_statements(self.base.metadata), os.getpid()
        with self._lock:
            # made again for a table added, and in a forked process (SQLite connections must
            # not cross a fork)
            if self._empty is None or self._empty[:2] != (statements, pid):
                empty = sqlite3.connect(":memory:", check_same_thread=False)
                for statement in statements:
                    empty.execute(statement)
                create_change_log(empty, self.base.metadata)
                (cookie,) = empty.execute("PRAGMA schema_version").fetchone()
                self._empty = (statements, pid, empty, int(cookie))
            empty, cookie = self._empty[2:]
            empty.backup(raw)
        raw.execute(f"PRAGMA schema_version = {cookie}")

    def template(self, seed: int = 0, size: int | None = None) -> StateTemplate:
        """The state for (seed, size), sampled on first use and cached (LRU, thread-safe)."""
        size = self.default_size if size is None else size
        key = (seed, size)
        with self._lock:
            tpl = self._templates.get(key)
            if tpl is not None:
                self._templates.move_to_end(key)
                return tpl
        tpl = self.sample(seed, size)
        with self._lock:
            self._templates[key] = tpl
            while len(self._templates) > self._template_cache_size:
                self._templates.popitem(last=False)
        return tpl

    def forget(self, seed: int = 0, size: int | None = None) -> None:
        """Drop the cached state of (seed, size), if any: for a caller that knows it will not
        come back to it (a later :meth:`template` samples it again, to the same bytes)."""
        size = self.default_size if size is None else size
        with self._lock:
            self._templates.pop((seed, size), None)

    def session(
        self,
        seed: int = 0,
        size: int | None = None,
        *,
        env_version: int = 0,
        principal: str | None = None,
    ) -> Session:
        """A new isolated session starting from the (cached) state of ``seed``.

        Args:
            seed: The state's seed.
            size: The state's size (default: the server's ``default_size``).
            env_version: The env version whose tool behaviour it plays (0: ``-v0``); the
                state is the same in every version.
            principal: The id of the entity the session acts for (``"mbx_03"``): required
                in a version that declares a :class:`Principal`, refused in one that does not.

        Raises:
            ValueError: The server declares no such env version, or the principal is
                missing, not allowed, or names no entity of the state.
        """
        if env_version != 0 and env_version not in self.env_versions:
            raise ValueError(
                f"{self.name} has no env version {env_version!r}; its ids: {self.env_ids}"
            )
        who = self.principal(env_version)
        if who is None and principal is not None:
            raise ValueError(
                f"prove/{self.name}-v{env_version} acts for nobody; it takes no principal "
                f"(got {principal!r})"
            )
        if who is not None and principal is None:
            raise ValueError(
                f"prove/{self.name}-v{env_version} acts for one {who.entity}: name its id "
                f'(a task\'s "principals": {{"{self.name}": "<id>"}})'
            )
        session = Session(self, self.template(seed, size), env_version, principal)
        if who is not None and session.principal_row() is None:
            session.close()
            raise ValueError(
                f"{self.name}: no {who.entity} with id {principal!r} in the state of seed "
                f"{seed} to act for"
            )
        return session

    def principal(self, env_version: int) -> Principal | None:
        """Who a session of ``env_version`` acts for: the :class:`Principal` of the latest
        version up to it that declares one (``None`` in ``-v0`` and before any does)."""
        found = None
        for number, version in self.env_versions.items():
            if number <= env_version and version.principal is not None:
                found = version.principal
        return found

    def owned_params(self, spec: ToolSpec, principal: Principal) -> tuple[OwnedParam, ...]:
        """The entity parameters of ``spec`` whose rows a principal of kind
        ``principal.entity`` owns, each with the row column naming the owner (worked out
        once per tool and principal kind)."""
        key = (spec.name, spec.since, principal.entity)
        found = self._owned.get(key)
        if found is None:
            owned = []
            for p in spec.row_params:
                assert p.entity is not None
                source = self.entities.get(p.entity.name)
                if source is None or p.entity.shared:  # any principal's row, by design
                    continue
                column = _owner_column(source, principal)
                if column is not None:
                    owned.append(OwnedParam(p.name, source, column))
            found = self._owned[key] = tuple(owned)
        return found

    def owner_id(self, sql: Sql, source: EntitySource, principal: Principal, row: Any) -> Any:
        """The id of the principal owning ``row`` (a row of ``source.model``): its owner
        column's value, or, for an entity owned ``through`` another, the owner of the row
        that column names (read with one statement per step; ``None`` when it names none)."""
        for _ in range(len(self.entities)):  # a chain visits each kind once (problems())
            column = _owner_column(source, principal)
            if row is None or column is None:
                return None
            value = getattr(row, column)
            if source.through is None:
                return value
            source = self.entities[source.through]
            assert source.model is not None
            row = sql.first(record_by_key(source.model), key=value)
        raise ValueError(f"server {self.name!r}: entities owned through a cycle")
