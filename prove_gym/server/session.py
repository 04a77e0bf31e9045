"""A :class:`Session`: one isolated copy of a server's state, and the only way to call tools."""

from __future__ import annotations

import difflib
import sqlite3
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import pydantic
from sqlalchemy.orm import Session as OrmSession

from prove_gym.server.budget import SQL_TICK, WorkBudget
from prove_gym.server.errors import ErrorKind, NotFound, PermissionDenied, ToolError
from prove_gym.server.result import ToolResult, to_jsonable
from prove_gym.server.sql import Sql, key_column, record_by_key
from prove_gym.server.state import (
    StateTemplate,
    canonical_state_hash,
    change_log,
    schema_layout,
)
from prove_gym.server.tool import ParamSpec, ToolContext, ToolSpec

if TYPE_CHECKING:
    from prove_gym.server.base import Server


class Session:
    """An isolated, private copy of one server's state.

    Two sessions from the same template start identical and never see each
    other's writes. :meth:`call` never raises for anything a model can send:
    every problem comes back as an error :class:`ToolResult`, and a failed call
    leaves the state exactly as it was (its transaction is rolled back). Read
    tools are always rolled back too, so a read can never change state.

    A session plays one env version of its server (``env_version``, 0 for ``-v0``):
    its tools see it as ``ctx.env_version``. In a version that declares a
    :class:`~prove_gym.server.base.Principal` it acts for one (``principal``, the id its
    tools see as ``ctx.principal``): a call naming another principal's entity is refused
    with ``permission_denied`` before the tool runs.

    Example:
        >>> s = registry.get_server("calendar").session(seed=7)
        >>> s.call("list_calendars", {}).ok
        True
    """

    def __init__(
        self,
        server: Server,
        template: StateTemplate,
        env_version: int = 0,
        principal: str | None = None,
    ) -> None:
        self.server = server
        self.template = template
        self.env_version = env_version
        self.principal = principal
        self._acting = server.principal(env_version) if principal is not None else None
        self._conn = server.open_state(template)
        self.closed = False
        self._db: OrmSession | None = None  # made on first use of :attr:`db` (tests)
        self._layout = template.layout  # the schema layout the connection holds
        self._ctx = ToolContext(
            sql=Sql(self.raw_connection),
            now=template.now,
            seed=template.seed,
            server=server,
            env_version=env_version,
            principal=principal,
        )
        # SQLite's count of rows ever inserted, updated or deleted on this connection (by any
        # statement, trigger or rollback-ed write alike) when the state was last exactly the
        # template's; None once a snapshot other than the template's was restored.
        self._pristine: int | None = self.raw_connection.total_changes
        # The last state hash computed outside a transaction, and SQLite's count of changes
        # then: asked again with no row changed since (not even one written and rolled back)
        # and no other state restored, it is the answer.
        self._last_hash: tuple[int, str] | None = None

    # ------------------------------------------------------------ properties
    @property
    def seed(self) -> int:
        return self.template.seed

    @property
    def size(self) -> int:
        return self.template.size

    @property
    def now(self) -> Any:
        """The fixed current time of this state."""
        return self.template.now

    @property
    def db(self) -> OrmSession:
        """An ORM session on this state, for tests that inspect or arrange it with the models.

        Tools never see it (they run on ``ctx.sql``). What is written through it counts
        once committed; :meth:`call`, :meth:`reset` and :meth:`restore` roll back what is not.
        """
        self._check_open()
        if self._db is None:
            self._db = OrmSession(bind=self._conn, expire_on_commit=False)
        return self._db

    def context(self) -> ToolContext:
        """A :class:`ToolContext` on this state, as a tool gets one: for calling an entity
        lister or an example source directly (tests, grounding). It sees the current state;
        roll back anything it writes with :meth:`rollback`."""
        self._check_open()
        return ToolContext(
            sql=self._ctx.sql,
            now=self.now,
            seed=self.seed,
            server=self.server,
            env_version=self.env_version,
            principal=self.principal,
        )

    def principal_row(self) -> Any:
        """The row of the principal this session acts for (``None`` when it acts for
        nobody, or the id names no row)."""
        if self._acting is None:
            return None
        source = self.server.entities[self._acting.entity]
        assert source.model is not None
        return self._ctx.sql.first(record_by_key(source.model), key=self.principal)

    # ------------------------------------------------------------------ calls
    def call(self, name: str, arguments: Any = None, *, allow_hidden: bool = False) -> ToolResult:
        """Run tool ``name`` with JSON ``arguments``; never raises for bad input.

        Args:
            name: The tool's name.
            arguments: A JSON object (dict) of arguments; ``None`` means ``{}``.
            allow_hidden: Also allow hidden helper tools (not offered to models).
        """
        self._check_open()
        spec = self.server.tools_for(self.env_version).get(name) if isinstance(name, str) else None
        if spec is None or (spec.hidden and not allow_hidden):
            return ToolResult.failure(ErrorKind.UNKNOWN_TOOL, self._unknown_tool_message(name))
        if arguments is None:
            arguments = {}
        if not isinstance(arguments, Mapping):
            return ToolResult.failure(
                ErrorKind.BAD_ARGUMENTS,
                f'Arguments of {name} must be a JSON object such as {{"key": "value"}}, '
                f"got {type(arguments).__name__}. {describe_signature(spec)}",
            )
        problem = unsafe_value(arguments)
        if problem is not None:
            return ToolResult.failure(
                ErrorKind.BAD_ARGUMENTS,
                f"Invalid arguments for {name}: {problem}. {describe_signature(spec)}",
            )
        try:
            kwargs = spec.validate(arguments)
        except pydantic.ValidationError as exc:
            return ToolResult.failure(ErrorKind.BAD_ARGUMENTS, explain_validation(spec, exc))
        return self._execute(spec, kwargs)

    def _execute(self, spec: ToolSpec, kwargs: dict[str, Any]) -> ToolResult:
        if self._db is not None:  # what a test left uncommitted in :attr:`db` is not the tool's
            self._end_orm()
        budget = self._ctx.budget = WorkBudget()
        budget.start(spec.name)
        raw = self.raw_connection
        raw.set_progress_handler(budget.sql_tick, SQL_TICK)
        try:
            try:
                if self._acting is not None and spec.name in self._acting.admin_only:
                    raise self._admin_only(spec)
                for p in spec.row_params:
                    kwargs[p.name] = self._resolve(p, kwargs[p.name])
                if self._acting is not None:
                    self._check_principal(spec, kwargs)
                content = to_jsonable(spec.fn(self._ctx, **kwargs))
            finally:  # commit and rollback are never interrupted
                raw.set_progress_handler(None, 0)
            if raw.in_transaction:  # SQLite begins a transaction only at a write
                if spec.writes:
                    raw.commit()
                else:  # a read tool never changes state
                    raw.rollback()
            return ToolResult.success(content)
        except ToolError as exc:
            self.rollback()
            return ToolResult.failure(exc.kind, exc.message)
        except sqlite3.OperationalError as exc:
            self.rollback()
            if budget.exceeded is None:
                return self._internal(spec, exc)
            error = budget.interrupted()
            return ToolResult.failure(error.kind, error.message)
        except sqlite3.IntegrityError as exc:
            self.rollback()
            return ToolResult.failure(
                ErrorKind.CONFLICT,
                f"{spec.name} would break a uniqueness or reference rule "
                f"({str(exc).strip()}); nothing was changed.",
            )
        except Exception as exc:  # a bug in the tool: report it, keep the state intact
            self.rollback()
            return self._internal(spec, exc)

    def rollback(self) -> None:
        """Undo what was written and not committed (a tool's failed call does this itself)."""
        self._check_open()
        if self._db is not None:
            self._end_orm()
        raw = self.raw_connection
        if raw.in_transaction:
            raw.rollback()

    def _end_orm(self) -> None:
        """Roll back and forget what :attr:`db` holds: the next use reads rows afresh."""
        assert self._db is not None
        self._db.rollback()
        self._db.expunge_all()

    @staticmethod
    def _internal(spec: ToolSpec, exc: BaseException) -> ToolResult:
        # The exception's text may hold paths of this machine or SQL: only its type goes out.
        return ToolResult.failure(
            ErrorKind.INTERNAL,
            f"{spec.name} failed unexpectedly ({type(exc).__name__}); nothing was changed. "
            "Try other arguments or another tool.",
        )

    def _resolve(self, param: ParamSpec, value: Any) -> Any:
        """The row(s) an entity parameter's id(s) name; ``NotFound`` with the declared hint."""
        if value is None:
            return None
        assert param.entity is not None and param.row is not None
        source = self.server.entities.get(param.entity.name)
        if source is None or source.model is not param.row:
            raise TypeError(
                f"{self.server.name}: declare @server.entity({param.entity.name!r}, "
                f"model={param.row.__name__}) to resolve {param.name!r}"
            )
        ids = value if isinstance(value, list) else [value]
        rows: list[Any] = []
        by_key = record_by_key(param.row)
        for one in ids:
            row = self._ctx.sql.first(by_key, key=source.lookup_key(one))
            if row is None:
                raise NotFound(source.missing(one))
            rows.append(row)
        return rows if isinstance(value, list) else rows[0]

    def _admin_only(self, spec: ToolSpec) -> PermissionDenied:
        """The refusal of a tool no principal may call (``Principal.admin_only``)."""
        assert self._acting is not None
        me = self.server.entities[self._acting.entity].shown
        return PermissionDenied(
            f"Rule 'admin_only' failed: {spec.name} is for {self.server.name}'s own staff; "
            f"acting for {me} {self.principal!r} you cannot call it. Nothing was changed."
        )

    def _check_principal(self, spec: ToolSpec, kwargs: Mapping[str, Any]) -> None:
        """Refuse a call naming a row another principal owns (rule ``not_your_<entity>``)."""
        acting = self._acting
        assert acting is not None
        for owned in self.server.owned_params(spec, acting):
            value = kwargs[owned.name]
            for row in value if isinstance(value, list) else [value]:
                if row is None:
                    continue
                owner = self.server.owner_id(self._ctx.sql, owned.source, acting, row)
                if owner == self.principal:
                    continue
                me = self.server.entities[acting.entity].shown
                source = owned.source
                assert source.model is not None
                named = getattr(row, key_column(source.model))
                # another principal's id is not told: a real API does not say whose it is
                whose = (
                    f"{source.shown} {named!r} is not yours"
                    if source.kind == acting.entity
                    else f"{source.shown} {named!r} is another {me}'s"
                )
                raise PermissionDenied(
                    f"Rule '{acting.rule}' failed: {whose}; you act for {me} "
                    f"{self.principal!r} and can use only its own. Nothing was changed."
                )

    def _unknown_tool_message(self, name: object) -> str:
        return unknown_tool_message(
            name, [t.name for t in self.server.visible_tools(self.env_version)]
        )

    def list_entities(self, kind: str) -> list[dict[str, Any]]:
        """Existing entities of ``kind`` as records (see :meth:`Server.entity`); never writes."""
        source = self.server.entities.get(kind)
        if source is None:
            raise KeyError(f"server {self.server.name!r} declares no entity {kind!r}")
        self._check_open()
        # Not a model's call: no work budget (a grown tree is listed whole).
        self._ctx.budget = WorkBudget(max_units=2**62, max_seconds=float("inf"))
        self._ctx.budget.start(f"list_entities({kind!r})")
        try:
            return [to_jsonable(r) for r in source.fn(self._ctx)]
        finally:
            self.rollback()

    # ------------------------------------------------------------------ state
    def state_hash(self) -> str:
        """Canonical SHA-256 of the current state (tables by name, rows by primary key)."""
        raw = self.raw_connection
        metadata = self.server.base.metadata
        changes = raw.total_changes
        if self._as_template(changes):
            return self.template.canonical_hash(metadata)
        if self._last_hash is not None and self._last_hash[0] == changes:
            return self._last_hash[1]
        log = change_log(raw, metadata, self.template.log_key)
        if log is None:  # restored bytes without this template's change log: read all
            value = canonical_state_hash(raw, metadata)
        else:  # only the rows written since the template are read again
            base = self.template.hash_base(metadata)
            value = canonical_state_hash(
                raw, metadata, base=base, changed=log.tables, rows=log.rows
            )
        if not raw.in_transaction:  # else a rollback could undo what was hashed, uncounted
            self._last_hash = (changes, value)
        return value

    def _as_template(self, changes: int) -> bool:
        """Whether no row changed (not even one written and rolled back) since the state was
        exactly the template's, SQLite having counted ``changes`` in all."""
        return self._pristine is not None and changes == self._pristine

    @property
    def raw_connection(self) -> Any:
        """The underlying ``sqlite3.Connection`` (read it, do not write through it)."""
        self._check_open()
        return self._conn.connection.dbapi_connection

    def _check_open(self) -> None:
        # A closed session's database already serves another session of its server.
        if self.closed:
            raise RuntimeError("this session is closed")

    def snapshot(self) -> bytes:
        """The current state serialised; :meth:`restore` takes it back."""
        return self.raw_connection.serialize()

    def restore(self, data: bytes) -> None:
        """Replace the state with a :meth:`snapshot` (or a template's bytes)."""
        self._restore(data, None)

    def _restore(self, data: bytes, layout: str | None) -> None:
        """:meth:`restore`, told the schema layout ``data`` holds when the caller knows it
        (reading it back costs more than the copy itself)."""
        self.rollback()
        raw = self.raw_connection
        raw.deserialize(data)
        own = data is self.template.data
        if layout is None:
            layout = self.template.layout if own else schema_layout(raw)
        if layout != self._layout:  # its cached statements may point at other pages
            if self._db is not None:
                self._db.close()
                self._db = None
            self._conn.close()
            self._conn = self.server.connect()
            self.raw_connection.deserialize(data)
            self._ctx.sql = Sql(self.raw_connection)  # the old one's connection is closed
            self._layout = layout
        self._pristine = self.raw_connection.total_changes if own else None
        self._last_hash = None  # another state, and SQLite counts no change for it

    def fork(self) -> Session:
        """An independent copy of this session at its current state, in microseconds.

        The copy starts from the same template and holds the same rows; from then on
        neither sees the other's writes. Forking a session whose state is still the
        template's copies nothing at all. The copy's first state hash is free when this
        session's was up to date.
        """
        self._check_open()
        self.rollback()  # what is not committed is not part of the state
        twin = Session(self.server, self.template, self.env_version, self.principal)
        if not self._holds_template():
            twin._restore(self.snapshot(), self._layout)
            raw = self.raw_connection
            if self._last_hash is not None and self._last_hash[0] == raw.total_changes:
                twin._last_hash = (twin.raw_connection.total_changes, self._last_hash[1])
        return twin

    def reset(self) -> None:
        """Return to the initial state of the template, in microseconds (none at all while
        the state is still exactly the template's: after reads only)."""
        self.rollback()  # what :attr:`db` holds, flushed or not, goes either way
        if not self._holds_template():
            self.restore(self.template.data)

    def _holds_template(self) -> bool:
        """Whether the database is still exactly the template's bytes: no row changed (not
        even one written and rolled back) since it was, no transaction open, and the same
        schema cookie (SQLite counts no change for DDL)."""
        raw = self.raw_connection
        return (
            self._as_template(raw.total_changes)
            and not raw.in_transaction
            and _cookie(raw) == self.template.cookie
        )

    def close(self) -> None:
        """Give the in-memory database back to the server (a later session refills it from
        its own template) and end this session. Safe to call twice."""
        if not self.closed:
            # the template's state still: the next session of it can take the database as it is
            holds = self.template if self._holds_template() else None
            if self._db is not None:
                self._db.close()
            self.closed = True
            self.server.release_state(self._conn, self._layout, holds)

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _cookie(raw: Any) -> int:
    """The database's schema cookie: any schema change since it was loaded moves it."""
    value: int = raw.execute("PRAGMA schema_version").fetchone()[0]
    return value


MAX_DEPTH = 16
"""Deepest nesting of lists and objects an argument may have."""
MAX_STRING = 10_000
"""Longest string (in characters) any argument or key may be: at 4 bytes a character,
under SQLite's 50,000-byte LIKE pattern limit."""
MAX_VALUES = 5_000
"""Most values (scalars, lists, objects) the arguments may hold in all."""


def unsafe_value(arguments: Mapping[str, Any]) -> str | None:
    """What makes arguments unsafe to hand to any tool, or ``None``.

    One bounded, iterative walk before validation: nesting deeper than
    :data:`MAX_DEPTH`, more than :data:`MAX_VALUES` values, a string longer than
    :data:`MAX_STRING` characters or holding a lone surrogate (not encodable
    text: SQLite and JSON writers reject it). Every tool gets these bounds
    without declaring them, so no argument can exhaust the recursion limit,
    memory or a SQL pattern limit.

    >>> unsafe_value({"q": "ok", "ids": ["a", "b"]}) is None
    True
    >>> unsafe_value({"q": chr(0xD800)})
    "'q' holds a lone surrogate: send valid UTF-8 text"
    """
    stack: list[tuple[str, Any, int]] = [(str(k), v, 1) for k, v in arguments.items()]
    for key in arguments:
        if not isinstance(key, str) or len(key) > MAX_STRING:
            return "argument names must be short strings"
    seen = 0
    while stack:
        where, value, depth = stack.pop()
        seen += 1
        if seen > MAX_VALUES:
            return f"the arguments hold more than {MAX_VALUES} values"
        if isinstance(value, str):
            if len(value) > MAX_STRING:
                return f"'{where[:60]}' is longer than {MAX_STRING} characters ({len(value)})"
            if _has_surrogate(value):
                return f"'{where[:60]}' holds a lone surrogate: send valid UTF-8 text"
        elif isinstance(value, list | tuple | Mapping):
            if depth >= MAX_DEPTH:
                return f"'{where[:60]}' is nested more than {MAX_DEPTH} levels deep"
            items = value.items() if isinstance(value, Mapping) else enumerate(value)
            for k, v in items:
                if isinstance(k, str) and (len(k) > MAX_STRING or _has_surrogate(k)):
                    return f"'{where[:60]}' has a key that is too long or not valid text"
                stack.append((f"{where}.{k}" if len(where) < 200 else where, v, depth + 1))
    return None


def _has_surrogate(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def describe_signature(spec: ToolSpec) -> str:
    """``Expected arguments: title (string, required), start (string, required), ...``"""
    props = spec.input_schema().get("properties", {})
    parts = []
    for p in spec.params:
        kind = _schema_type(props.get(p.name, {}))
        parts.append(f"{p.name} ({kind}, {'required' if p.required else 'optional'})")
    return f"Expected arguments: {', '.join(parts) if parts else 'none'}."


def _schema_type(schema: Mapping[str, Any]) -> str:
    if "enum" in schema:
        return "one of " + "/".join(map(str, schema["enum"]))
    if "type" in schema:
        t = schema["type"]
        if t == "array" and isinstance(schema.get("items"), Mapping):
            return f"array of {_schema_type(schema['items'])}"
        return str(t)
    options = schema.get("anyOf") or schema.get("oneOf")
    if options:
        return " or ".join(_schema_type(o) for o in options)
    return "any"


def explain_validation(spec: ToolSpec, exc: pydantic.ValidationError) -> str:
    """Turn pydantic's errors into one message a model can act on."""
    problems = []
    for err in exc.errors(include_url=False):
        loc = ".".join(str(x) for x in err["loc"]) or "arguments"
        if err["type"] == "missing":
            problems.append(f"'{loc}' is required but missing")
        elif err["type"] == "extra_forbidden":
            problems.append(f"'{loc}' is not a parameter of {spec.name}")
        else:
            msg = str(err["msg"])  # only its first letter lowered: "[A-F]", "USD" stay as they are
            got = repr(err.get("input"))
            got = got if len(got) <= 80 else got[:77] + "..."
            problems.append(f"'{loc}': {msg[:1].lower()}{msg[1:]} (got {got})")
    return f"Invalid arguments for {spec.name}: {'; '.join(problems)}. {describe_signature(spec)}"


def unknown_tool_message(name: object, available: list[str]) -> str:
    """The ``unknown_tool`` message: the name, the closest available ones, and all of them.

    >>> unknown_tool_message("get_events", ["get_event", "list_events"])
    "There is no tool named 'get_events'. Did you mean get_event, list_events? Available tools: get_event, list_events."
    """
    shown = str(name)
    shown = shown if len(shown) <= 100 else shown[:100] + "…"  # difflib is quadratic
    close = difflib.get_close_matches(shown, available, n=3, cutoff=0.5)
    hint = f" Did you mean {', '.join(close)}?" if close else ""
    return f"There is no tool named {shown!r}.{hint} Available tools: {', '.join(available)}."
