"""Tool data access without the ORM: SQLAlchemy Core statements compiled once, run on sqlite3.

The ORM costs a tool call hundreds of microseconds (identity map, unit of work,
one statement per relationship); SQLite answers the same statements in a few.
A tool that declares its statements once, at module level, keeps them readable
(written against the models' columns, with named parameters) and runs them at
close to raw speed:

    GUESTS = Query(
        select(Invitee.email, Invitee.name)
        .where(Invitee.event_id == bindparam("event_id"))
        .order_by(Invitee.email)
    )

    def get_guests(ctx: ToolContext, event_id: EventId) -> list[Guest]:
        return [{"email": g.email, "name": g.name} for g in ctx.sql.all(GUESTS, event_id=event_id)]

A :class:`Query` is compiled for SQLite the first time it runs: its SQL text, the
order of its parameters with the column types' bind processors (dates, money),
and its result columns with their result processors, so a row reads back as the
ORM would have typed it (``datetime``, ``Decimal``, ``bool``). Rows are named
tuples: ``row.title``, ``row[0]``, ``row._asdict()``.

:class:`Sql` (``ctx.sql`` in a tool) runs them on the session's connection,
inside the call's transaction and work budget, so a failed call still rolls back
everything and a runaway query is still interrupted. Writes go through
:meth:`Sql.insert` (column defaults applied as the ORM would) and :meth:`Sql.run`
(``update``/``delete``); nothing here flushes or reads the ORM session, so a tool
uses one or the other for a table, not both.
"""

from __future__ import annotations

import datetime as dt
import functools
import itertools
import operator
import sqlite3
import threading
from collections import namedtuple
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from decimal import ROUND_HALF_EVEN, Decimal
from typing import Any

from sqlalchemy import Table, bindparam, insert, select, update
from sqlalchemy.dialects import sqlite
from sqlalchemy.orm import Mapper
from sqlalchemy.sql import ClauseElement
from sqlalchemy.sql.compiler import SQLCompiler
from sqlalchemy.sql.elements import BindParameter
from sqlalchemy.sql.selectable import FromClause
from sqlalchemy.sql.type_api import TypeEngine

from prove_gym.server.types import Money

DIALECT = sqlite.dialect(paramstyle="qmark")
"""The dialect every statement compiles for: SQLite, ``?`` placeholders."""

_EXPANDING = "__[POSTCOMPILE_{}]"
_EMPTY_SET = "SELECT NULL WHERE 0"  # "x IN ()" as SQLite reads it: never true, NOT IN always


@dataclass(frozen=True, slots=True)
class _Bind:
    name: str  # what the caller passes (an unnamed literal's is never passed: its default)
    slot: str  # its name in the compiled SQL (an expanding list's placeholder says it)
    default: Any
    required: bool
    expanding: bool
    process: Callable[[Any], Any] | None


@dataclass(frozen=True, slots=True)
class _Compiled:
    sql: str
    binds: tuple[_Bind, ...]
    names: frozenset[str]  # the parameters a caller may pass
    row: type | None  # the named tuple of a statement that returns rows
    process: tuple[tuple[int, Callable[[Any], Any]], ...]  # (column, processor) where needed


class Query:
    """A Core ``select``, ``update`` or ``delete`` compiled once for SQLite (see module doc).

    Parameters are ``bindparam("name")`` objects (``expanding=True`` for a list used with
    ``in_``); values written into the statement (``Event.status == "cancelled"``) are
    parameters with defaults. Select columns or tables (``Event.__table__``), not mapped
    classes: a mapped class brings the ORM's eager joins into the SQL.
    """

    __slots__ = ("_compiled", "_lock", "statement")

    def __init__(self, statement: ClauseElement) -> None:
        self.statement = statement
        self._compiled: _Compiled | None = None
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"Query({self.compiled.sql!r})"

    @property
    def compiled(self) -> _Compiled:
        compiled = self._compiled
        if compiled is None:
            with self._lock:
                if self._compiled is None:
                    self._compiled = _compile(self.statement)
                compiled = self._compiled
        return compiled

    def bind(self, params: Mapping[str, Any]) -> tuple[str, list[Any]]:
        """The SQL text and positional parameters for ``params`` (processed for SQLite)."""
        c = self.compiled
        values: list[Any] = []
        sql = c.sql
        for b in c.binds:
            if b.name in params:
                value = params[b.name]
            elif b.required:
                raise TypeError(f"{self!r} needs parameter {b.name!r}")
            else:
                value = b.default
            if b.expanding:
                items = list(value)
                marks = ", ".join("?" * len(items)) if items else _EMPTY_SET
                sql = sql.replace(_EXPANDING.format(b.slot), marks, 1)
                values.extend(b.process(v) if b.process else v for v in items)
            else:
                values.append(b.process(value) if b.process else value)
        if not params.keys() <= c.names:
            unknown = sorted(params.keys() - c.names)[0]
            raise TypeError(f"{self!r} has no parameter {unknown!r}")
        return sql, values

    def rows(self, raw: list[tuple[Any, ...]]) -> list[Any]:
        """Raw SQLite rows as the statement's named tuples, values typed as the ORM types them."""
        c = self.compiled
        if c.row is None:
            raise TypeError(f"{self!r} returns no rows")
        make = c.row._make  # type: ignore[attr-defined]
        if not c.process:
            return list(map(make, raw))
        out = []
        for r in raw:
            values = list(r)
            for at, process in c.process:  # only the columns that need it (dates, money)
                values[at] = process(values[at])
            out.append(make(values))
        return out


def _bind_processor(type_: TypeEngine[Any]) -> Callable[[Any], Any] | None:
    impl = type_.dialect_impl(DIALECT)
    if isinstance(impl, Money):
        return impl.to_minor_units  # the TypeDecorator's bind, without its wrapper's call
    process = impl.bind_processor(DIALECT)
    if (
        process is not None
        and type(impl) is sqlite.DATETIME
        and impl._storage_format == _DATETIME_TEXT
    ):
        return functools.partial(_datetime_text, process)
    # (pysqlite's Date is a subclass of DATE that binds as DATE does without native dates)
    if process is not None and isinstance(impl, sqlite.DATE) and impl._storage_format == _DATE_TEXT:
        return functools.partial(_date_text, process)
    return process


_NONE = type(None)


def _bound_alike(type_: TypeEngine[Any]) -> frozenset[type] | None:
    """The value types for which equal values bind alike in a column of ``type_`` (money,
    dates and times: what samplers bind by the hundred thousand, many values repeated), so
    :meth:`Sql.insert_many` binds each distinct value of a column once; ``None`` for the rest.

    Equal ``Decimal`` amounts round to the same minor units whatever their exponent; equal
    dates have one text; equal naive times have one text (``fold`` is in neither). Aware
    times are not alike (equal instants in two zones are written as two local times): the
    caller binds a column holding one value by value.
    """
    impl = type_.dialect_impl(DIALECT)
    if isinstance(impl, Money):
        return frozenset({Decimal, _NONE})
    if type(impl) is sqlite.DATETIME and impl._storage_format == _DATETIME_TEXT:
        return frozenset({dt.datetime, _NONE})
    if isinstance(impl, sqlite.DATE) and impl._storage_format == _DATE_TEXT:
        return frozenset({dt.date, _NONE})
    return None


def _minor_units(money: Money) -> Callable[[Iterable[Decimal]], Iterable[int]]:
    """:meth:`Money.to_minor_units` of many ``Decimal`` values (no ``None``) at once: the
    same quantize, scaleb and int, chained in C instead of a Python call per value."""
    quantize = operator.methodcaller("quantize", money._quantum, ROUND_HALF_EVEN)
    scaleb = operator.methodcaller("scaleb", money.places)
    return lambda values: map(int, map(scaleb, map(quantize, values)))


_PROBE = 64
"""How many of a column's first values :func:`_bind_column` looks at to guess whether
they repeat enough to bind each distinct one once."""


def _bind_column(
    process: Callable[[Any], Any],
    alike: frozenset[type] | None,
    column: Sequence[Any],
    many: Callable[[Iterable[Any]], Iterable[Any]] | None = None,
) -> Iterable[Any]:
    """``map(process, column)``, faster where values of the column's types bind alike (see
    :func:`_bound_alike`): each distinct value processed once, and with ``many`` (``process``
    of many values of the column's first type at once, none ``None``) where it applies.
    The same values in the same order. (Such a column is bound before the rows are zipped:
    a row holding two unbindable values fails on the earlier such column's.)"""
    if alike is None or len(column) < 2:
        return map(process, column)
    types = set(map(type, column))
    if not types <= alike:
        return map(process, column)
    try:
        if (
            many is not None
            and _NONE not in types
            and len(set(column[:_PROBE])) * 4 > min(len(column), _PROBE) * 3
        ):  # mostly distinct values: hashing them would cost more than it saves
            return many(column)
        memo = dict.fromkeys(column)
    except TypeError:  # unhashable (a signalling NaN): bound one by one, as ever
        return map(process, column)
    if dt.datetime in alike and any(v is not None and v.tzinfo is not None for v in memo):
        return map(process, column)
    if many is not None:
        has_none = memo.pop(None, 0) is None
        memo = dict(zip(memo, many(memo), strict=True))
        if has_none:
            memo[None] = None
    else:
        for value in memo:
            memo[value] = process(value)
    return map(memo.__getitem__, column)


def _result_processor(type_: TypeEngine[Any]) -> Callable[[Any], Any] | None:
    impl = type_.dialect_impl(DIALECT)
    if isinstance(impl, Money):
        return impl.from_minor_units
    return impl.result_processor(DIALECT, None)


_DATETIME_TEXT = sqlite.DATETIME()._storage_format
"""How SQLAlchemy stores a ``DateTime`` in SQLite by default: ``2026-11-27 08:30:00.000000``."""


_DATE_TEXT = sqlite.DATE()._storage_format
"""How SQLAlchemy stores a ``Date`` in SQLite by default: ``2026-11-27``."""


def _date_text(general: Callable[[Any], Any], value: Any) -> Any:
    """SQLAlchemy's SQLite ``Date`` bind (``general``), its usual case in half the time: a
    ``date``'s ``isoformat()`` is exactly :data:`_DATE_TEXT`'s text; anything else (a
    ``datetime``, whose time the column drops, ``None``) goes to ``general``."""
    if type(value) is dt.date:
        return value.isoformat()
    return general(value)


def _datetime_text(general: Callable[[Any], Any], value: Any) -> Any:
    """SQLAlchemy's SQLite ``DateTime`` bind (``general``), its usual case in two thirds the time.

    A naive ``datetime``'s ``isoformat(" ", "microseconds")`` is exactly the text of
    :data:`_DATETIME_TEXT`; anything else (a date, an aware time, ``None``) goes to
    ``general``. Samplers bind hundreds of thousands of times.
    """
    if type(value) is dt.datetime and value.tzinfo is None:
        return value.isoformat(" ", "microseconds")
    return general(value)


def _mapped_class(statement: ClauseElement) -> type | None:
    """The mapped class selected whole (``select(Item)``), if any: what the statement's
    ``column_descriptions`` would give as an ``expr`` that is a class, read from the raw
    columns it was built from (a table annotated with its mapper); ``column_descriptions``
    itself costs more than compiling the statement, once per statement per process."""
    for column in getattr(statement, "_raw_columns", ()):
        mapper = column._annotations.get("parententity")
        if isinstance(column, FromClause) and isinstance(mapper, Mapper):
            return mapper.class_
    return None


def _compile(statement: ClauseElement) -> _Compiled:
    mapped = _mapped_class(statement)
    if mapped is not None:
        raise TypeError(
            f"select columns or {mapped.__name__}.__table__, not the mapped class "
            f"{mapped.__name__}: it brings the ORM's eager loads into the SQL"
        )
    compiled = statement.compile(dialect=DIALECT)
    assert isinstance(compiled, SQLCompiler)
    binds = []
    for name in compiled.positiontup or ():
        param: BindParameter[Any] = compiled.binds[name]
        binds.append(
            _Bind(
                name=param.key,
                slot=name,
                default=param.effective_value,
                required=param.required,
                expanding=param.expanding,
                process=_bind_processor(param.type),
            )
        )
    row: type | None = None
    process: tuple[tuple[int, Callable[[Any], Any]], ...] = ()
    columns = list(getattr(statement, "selected_columns", ()))
    if getattr(statement, "is_select", False) and columns:
        # an unlabelled expression (count(...)) is read by position: row[0]
        labels = [c.key or f"_{i}" for i, c in enumerate(columns)]
        if len(set(labels)) != len(labels):
            raise TypeError(f"label the columns of {statement}: names repeat in {labels}")
        row = namedtuple("Row", labels, rename=True)  # type: ignore[misc, no-redef]
        procs = [_result_processor(c.type) for c in columns]
        process = tuple((at, p) for at, p in enumerate(procs) if p is not None)
    return _Compiled(
        sql=str(compiled),
        binds=tuple(binds),
        names=frozenset(b.name for b in binds),
        row=row,
        process=process,
    )


@dataclass(frozen=True, slots=True)
class _InsertPlan:
    sql: str
    columns: tuple[str, ...]
    process: tuple[Callable[[Any], Any] | None, ...]
    alike: tuple[frozenset[type] | None, ...]
    """Per column, :func:`_bound_alike` of its type."""
    many: tuple[Callable[[Iterable[Any]], Iterable[Any]] | None, ...]
    """Per column, its bind of many values at once, for money (:func:`_minor_units`)."""


@functools.cache
def _insert_plan(table: Table, keys: tuple[str, ...]) -> _InsertPlan:
    unknown = [k for k in keys if k not in table.c]
    if unknown:
        raise TypeError(f"table {table.name!r} has no column {unknown[0]!r}")
    columns = tuple(
        c.key
        for c in table.columns
        if c.key in keys or (c.default is not None and c.default.is_scalar)
    )
    stmt = insert(table).values({k: None for k in columns})
    compiled = stmt.compile(dialect=DIALECT, column_keys=list(columns))
    process = tuple(_bind_processor(table.c[k].type) for k in columns)
    alike = tuple(_bound_alike(table.c[k].type) for k in columns)
    many = tuple(_many_bind(table.c[k].type) for k in columns)
    return _InsertPlan(str(compiled), columns, process, alike, many)


def _many_bind(type_: TypeEngine[Any]) -> Callable[[Iterable[Any]], Iterable[Any]] | None:
    impl = type_.dialect_impl(DIALECT)
    return _minor_units(impl) if isinstance(impl, Money) else None


def _table(model: Any) -> Table:
    table = getattr(model, "__table__", model)
    if not isinstance(table, Table):
        raise TypeError(f"expected a mapped class or a Table, got {model!r}")
    return table


class Sql:
    """The statements of one call, on its session's SQLite connection (``ctx.sql``).

    Every method runs inside the call's transaction: the session commits it after a
    writing tool succeeds and rolls it back otherwise.
    """

    __slots__ = ("raw",)

    def __init__(self, raw: sqlite3.Connection) -> None:
        self.raw = raw

    def all(self, query: Query, /, **params: Any) -> list[Any]:
        """Every row ``query`` returns, as named tuples, in its ``ORDER BY`` order."""
        sql, values = query.bind(params)
        return query.rows(self.raw.execute(sql, values).fetchall())

    def first(self, query: Query, /, **params: Any) -> Any | None:
        """The first row, or ``None`` when there is none."""
        sql, values = query.bind(params)
        found = self.raw.execute(sql, values).fetchone()
        return None if found is None else query.rows([found])[0]

    def one(self, query: Query, /, **params: Any) -> Any:
        """The first row; ``LookupError`` when there is none (a row the tool knows exists)."""
        row = self.first(query, **params)
        if row is None:
            raise LookupError(f"no row for {query!r} with {params}")
        return row

    def scalar(self, query: Query, /, **params: Any) -> Any:
        """The first column of the first row, or ``None`` when there is no row."""
        row = self.first(query, **params)
        return None if row is None else row[0]

    def scalars(self, query: Query, /, **params: Any) -> list[Any]:
        """The first column of every row."""
        return [row[0] for row in self.all(query, **params)]

    def run(self, query: Query, /, **params: Any) -> int:
        """Run an ``update`` or ``delete``; the number of rows it matched."""
        sql, values = query.bind(params)
        return self.raw.execute(sql, values).rowcount

    def update(self, model: Any, row: Any, /, **values: Any) -> Any:
        """``row`` (a named tuple of ``model``'s table, with its key) with ``values`` set;
        the columns whose value differs are written to the table.

        As the ORM's flush: nothing is written when no value changes. An ``UPDATE`` that
        sets the values a row already has still rewrites the database's bytes, and
        synthesis reads unchanged bytes as a call that wrote nothing.
        """
        changed = {k: v for k, v in values.items() if getattr(row, k) != v}
        if changed:
            (pk,) = _table(model).primary_key.columns
            self.update_by_key(model, getattr(row, pk.key), **changed)
        return row._replace(**values)

    def update_by_key(self, model: Any, key: Any, /, **values: Any) -> int:
        """Set ``values`` in the row of ``model``'s table whose primary key is ``key`` (all of
        them: :meth:`update` writes only what changes); how many rows matched (0 or 1)."""
        query = _row_update(_table(model), tuple(sorted(values)))
        return self.run(query, **{_KEY: key}, **values)

    def insert(self, model: Any, /, **values: Any) -> int:
        """Insert one row into ``model``'s table; its ``rowid`` (the integer key, if any).

        Columns left out take their declared scalar ``default`` (as the ORM does) or NULL.
        """
        table = _table(model)
        plan = _insert_plan(table, tuple(sorted(values)))
        cursor = self.raw.execute(plan.sql, _insert_values(table, plan, values))
        return cursor.lastrowid or 0

    def insert_many(self, model: Any, rows: Iterable[Any], /) -> int:
        """Insert rows into ``model``'s table, in the order given, with one ``executemany``;
        how many.

        A row is a mapping of column values, or an object whose attributes are named as the
        columns (a slots dataclass: a sampler builds thousands at a tenth of a mapped
        object's cost). Every row gives the columns the first one gives; the others take
        their declared scalar ``default`` (as the ORM does) or the table's own. Values are
        bound as the ORM binds them: the database holds what ``add_all`` and a flush write.
        """
        table = _table(model)
        rows = rows if isinstance(rows, list) else list(rows)
        if not rows:
            return 0
        first = rows[0]
        by_name = isinstance(first, Mapping)
        if by_name:
            keys = tuple(first)
        else:
            keys = tuple(c.key for c in table.columns if hasattr(first, c.key))
        plan = _insert_plan(table, tuple(sorted(keys)))
        given = [k for k in plan.columns if k in keys]
        read = (operator.itemgetter if by_name else operator.attrgetter)(*given)
        if by_name:
            expected = set(keys)
            # every row's keys compared in C: a key view equals a set of the same keys
            if not all(map(operator.eq, map(_KEYS, rows), itertools.repeat(expected))):
                wrong = next(r for r in rows if r.keys() != expected)
                raise TypeError(
                    f"insert_many into {table.name!r}: every row needs the keys "
                    f"{tuple(sorted(keys))}, got {tuple(sorted(wrong))}"
                )
        # column by column: C-level zip and map instead of a Python loop over every value
        got = list(map(read, rows))
        given_columns: list[Sequence[Any]] = (
            [got] if len(given) == 1 else list(zip(*got, strict=True))
        )
        n = len(rows)
        columns: list[Iterable[Any]] = []
        binds = zip(plan.columns, plan.process, plan.alike, plan.many, strict=True)
        for key, process, alike, many in binds:
            if key not in keys:  # the declared scalar default, bound once
                arg = table.c[key].default.arg  # type: ignore[union-attr]
                columns.append(itertools.repeat(arg if process is None else process(arg), n))
                continue
            column = given_columns[given.index(key)]
            bound = column if process is None else _bind_column(process, alike, column, many)
            columns.append(bound)
        self.raw.executemany(plan.sql, list(zip(*columns, strict=True)))
        return len(rows)


def _insert_values(table: Table, plan: _InsertPlan, values: Mapping[str, Any]) -> list[Any]:
    out = []
    for key, process in zip(plan.columns, plan.process, strict=True):
        value = values[key] if key in values else table.c[key].default.arg  # type: ignore[union-attr]
        out.append(process(value) if process is not None else value)
    return out


@functools.cache
def key_column(model: Any) -> str:
    """The name of the single primary-key column of ``model``'s table: the field of its
    rows (:func:`record_by_key`) that holds the id."""
    (pk,) = _table(model).primary_key.columns
    return str(pk.key)


@functools.cache
def record_by_key(model: Any) -> Query:
    """The statement that reads one row of ``model``'s table by its primary key (``key``);
    one per table per process, so it is compiled once (every id a call names is read
    through it)."""
    table = _table(model)
    (pk,) = table.primary_key.columns
    return Query(select(table).where(pk == bindparam("key")))


_KEYS = operator.methodcaller("keys")

_KEY = "row_key_"  # the parameter a row's key goes in (no column is called so)


@functools.cache
def _row_update(table: Table, columns: tuple[str, ...]) -> Query:
    """The UPDATE of ``columns`` (a parameter each, by name) in the row whose key is ``_KEY``."""
    (pk,) = table.primary_key.columns
    return Query(
        update(table).where(pk == bindparam(_KEY)).values({c: bindparam(c) for c in columns})
    )
