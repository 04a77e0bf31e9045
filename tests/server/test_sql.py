"""Compiled statements on the raw connection read and write what SQLAlchemy itself would."""

from __future__ import annotations

import datetime as dt
import sqlite3
from decimal import Decimal
from typing import Annotated, Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sqlalchemy import (
    Boolean,
    Date,
    DateTime,
    ForeignKey,
    Integer,
    String,
    bindparam,
    create_engine,
    delete,
    func,
    select,
    update,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column
from sqlalchemy.pool import StaticPool

from prove_gym.server import (
    Entity,
    Money,
    PreconditionFailed,
    Query,
    Record,
    SampleContext,
    Server,
    Sql,
    ToolContext,
)


class Base(DeclarativeBase):
    pass


class Owner(Base):
    __tablename__ = "owners"
    id: Mapped[str] = mapped_column(String(8), primary_key=True)
    name: Mapped[str] = mapped_column(String(40))


class Item(Base):
    __tablename__ = "items"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    owner_id: Mapped[str] = mapped_column(ForeignKey("owners.id"))
    title: Mapped[str] = mapped_column(String(40))
    price: Mapped[Decimal] = mapped_column(Money)
    due: Mapped[dt.date | None] = mapped_column(Date, nullable=True)
    at: Mapped[dt.datetime] = mapped_column(DateTime)
    done: Mapped[bool] = mapped_column(Boolean, default=False)
    note: Mapped[str] = mapped_column(String(40), default="")


items = Item.__table__

BY_OWNER = Query(
    select(items).where(Item.owner_id == bindparam("owner")).order_by(Item.at, Item.id)
)
OPEN_IN = Query(
    select(Item.id, Item.title)
    .where(Item.id.in_(bindparam("ids", expanding=True)), Item.done.is_(False))
    .order_by(Item.id)
)
NOT_IN = Query(
    select(Item.id).where(Item.id.not_in(bindparam("ids", expanding=True))).order_by(Item.id)
)
TOTAL = Query(select(func.count(Item.id), func.sum(Item.price)))
FINISH = Query(update(items).where(Item.owner_id == bindparam("owner")).values(done=True))
DROP = Query(delete(items).where(Item.price > bindparam("above")))


@pytest.fixture
def db() -> Any:
    engine = create_engine(
        "sqlite://",
        creator=lambda: sqlite3.connect(":memory:", check_same_thread=False),
        poolclass=StaticPool,
    )
    Base.metadata.create_all(engine)
    with engine.connect() as conn:
        yield Sql(conn.connection.dbapi_connection)  # type: ignore[arg-type]


row_values = st.fixed_dictionaries(
    {
        "owner_id": st.sampled_from(["o1", "o2"]),
        "title": st.text(max_size=12),
        "price": st.decimals(min_value=0, max_value=10_000, places=2),
        "due": st.none() | st.dates(dt.date(2020, 1, 1), dt.date(2030, 1, 1)),
        "at": st.datetimes(dt.datetime(2020, 1, 1), dt.datetime(2030, 1, 1)),
    },
    optional={"done": st.booleans(), "note": st.text(max_size=5)},
)


def _fill(sql: Sql, rows: list[dict[str, Any]]) -> None:
    sql.insert(Owner, id="o1", name="Ana")
    sql.insert(Owner, id="o2", name="Bo")
    for values in rows:
        sql.insert(Item, **values)


@settings(max_examples=40, deadline=None)
@given(rows=st.lists(row_values, max_size=8), ids=st.lists(st.integers(0, 10), max_size=4))
def test_reads_and_writes_agree_with_sqlalchemy_core(
    rows: list[dict[str, Any]], ids: list[int]
) -> None:
    engine = create_engine("sqlite://")
    Base.metadata.create_all(engine)
    with engine.connect() as conn:
        sql = Sql(conn.connection.dbapi_connection)  # type: ignore[arg-type]
        _fill(sql, rows)
        core = conn.execute(BY_OWNER.statement, {"owner": "o1"}).all()
        ours = sql.all(BY_OWNER, owner="o1")
        assert [tuple(r) for r in ours] == [tuple(r) for r in core]
        assert all(type(r.price) is Decimal and type(r.at) is dt.datetime for r in ours)
        mine = sorted((v["at"], k, v) for k, v in enumerate(rows, 1) if v["owner_id"] == "o1")
        assert [(r.id, r.title, r.price, r.due, r.done, r.note) for r in ours] == [
            (k, v["title"], v["price"], v["due"], v.get("done", False), v.get("note", ""))
            for _, k, v in mine
        ]
        for query in (OPEN_IN, NOT_IN):
            expected = conn.execute(query.statement, {"ids": ids}).all()
            assert [tuple(r) for r in sql.all(query, ids=ids)] == [tuple(r) for r in expected]
        assert tuple(sql.first(TOTAL) or ()) == tuple(conn.execute(TOTAL.statement).one())
        before = conn.execute(select(func.count()).select_from(items)).scalar()
        matched = sql.run(FINISH, owner="o2")
        assert matched == sum(v["owner_id"] == "o2" for v in rows)
        assert all(r.done for r in sql.all(BY_OWNER, owner="o2"))
        dropped = sql.run(DROP, above=Decimal("5000"))
        assert dropped == sum(v["price"] > 5000 for v in rows)
        assert sql.scalar(TOTAL) == before - dropped


@given(units=st.integers(-(2**63), 2**63 - 1), places=st.integers(0, 6))
def test_money_reads_back_exact_with_exactly_its_places(units: int, places: int) -> None:
    """What a Money column stores (integer minor units) reads back as the exact amount
    with ``places`` decimals (``12.30``, never ``12.3``: the text a tool returns), and
    binds back to the same integer."""
    money = Money(places)
    amount = money.from_minor_units(units)
    assert isinstance(amount, Decimal)
    assert amount.as_tuple().exponent == -places
    assert amount == Decimal(units) / 10**places
    assert money.to_minor_units(amount) == units


@given(
    value=st.none()
    | st.dates()
    | st.datetimes(timezones=st.none() | st.just(dt.UTC))
    | st.decimals(
        allow_nan=False, allow_infinity=False, places=4, min_value=-(10**9), max_value=10**9
    )
)
def test_dates_times_and_money_bind_as_sqlalchemy_binds_them(value: Any) -> None:
    """The query layer's own binds (a date's and a naive datetime's ``isoformat``, Money's
    minor units) store exactly what SQLAlchemy's processors store, for any value."""
    from prove_gym.server.sql import DIALECT, _bind_processor

    for type_ in (Date(), DateTime(), Money()):
        theirs = type_.dialect_impl(DIALECT).bind_processor(DIALECT)
        ours = _bind_processor(type_)
        assert ours is not None and theirs is not None
        try:
            expected = theirs(value)
        except Exception as error:  # whichever it raises, ours must raise too
            with pytest.raises(type(error)):
                ours(value)
        else:
            assert ours(value) == expected


def _stored(rows: list[dict[str, Any]], bulk: bool) -> list[Any]:
    """The items table after inserting ``rows`` into a fresh database: with one
    ``insert_many``, or one ``insert`` per row."""
    conn = sqlite3.connect(":memory:")
    engine = create_engine("sqlite://", creator=lambda: conn, poolclass=StaticPool)
    Base.metadata.create_all(engine)
    sql = Sql(conn)
    sql.insert(Owner, id="o1", name="Ana")
    if bulk:
        sql.insert_many(Item, rows)
    else:
        for r in rows:
            sql.insert(Item, **r)
    try:
        return conn.execute("SELECT * FROM items ORDER BY id").fetchall()
    finally:
        conn.close()


@settings(max_examples=60, deadline=None)
@given(
    rows=st.lists(
        st.fixed_dictionaries(
            {
                "owner_id": st.just("o1"),
                "title": st.text(max_size=4),
                "price": st.decimals(min_value=-(10**6), max_value=10**6, places=3)
                | st.integers(-(10**6), 10**6),
                "due": st.none() | st.dates() | st.datetimes(),
                "at": st.datetimes(timezones=st.none() | st.just(dt.UTC)) | st.dates(),
            }
        ),
        min_size=1,
        max_size=6,
    ),
    uniform=st.booleans(),
)
def test_a_bulk_insert_stores_what_inserting_row_by_row_stores(
    rows: list[dict[str, Any]], uniform: bool
) -> None:
    """insert_many binds column by column; whatever the mix of values (money as Decimal or
    int, dates, datetimes naive or aware), the stored values are those of one insert per
    row."""
    if uniform:  # the samplers' usual case: every column's values of one type
        rows = [
            {**r, "price": Decimal(r["price"]), "due": dt.date(2026, 1, 1 + k % 28)}
            | {"at": dt.datetime(2026, 1, 1, k % 24, k % 60, k, 7)}
            for k, r in enumerate(rows)
        ]
    stored = [_stored(rows, bulk) for bulk in (True, False)]
    assert stored[0] == stored[1]
    assert [type(v) for v in stored[0][0]] == [type(v) for v in stored[1][0]]


_NOON = dt.datetime(2026, 3, 3, 12, 0)
_ALIKE_PRICES = [Decimal("1.5"), Decimal("1.50"), Decimal("0"), Decimal("-0"), Decimal("0.005")]
_ALIKE_PRICES += [Decimal("0.015"), Decimal("2.675"), Decimal.from_float(2.675)]  # (2.67499...)
_ALIKE_TIMES = [_NOON, _NOON.replace(fold=1), _NOON.replace(tzinfo=dt.UTC)]
_ALIKE_TIMES.append(_NOON.replace(hour=13, tzinfo=dt.timezone(dt.timedelta(hours=1))))


@settings(max_examples=80, deadline=None)
@given(
    picks=st.lists(
        st.tuples(
            st.sampled_from(_ALIKE_PRICES),
            st.none() | st.sampled_from([dt.date(2026, 1, 1), dt.date(2026, 1, 2)]),
            st.sampled_from(_ALIKE_TIMES[:2]) | st.sampled_from(_ALIKE_TIMES),
        ),
        min_size=2,
        max_size=12,
    )
)
def test_repeated_values_bind_as_each_alone(picks: list[tuple[Any, Any, Any]]) -> None:
    """A bulk insert binds each distinct money, date and time value of a column once: values
    equal but written apart (``1.5`` and ``1.50``, ``0`` and ``-0``, a time with ``fold``)
    store what each stores alone, and equal instants in two time zones keep their own local
    times (such a column is bound value by value)."""
    rows = [{"owner_id": "o1", "title": "t", "price": p, "due": d, "at": a} for p, d, a in picks]
    stored = [_stored(rows, bulk) for bulk in (True, False)]
    assert stored[0] == stored[1]


def test_inserts_take_the_declared_defaults_and_key(db: Any) -> None:
    sql = db
    sql.insert(Owner, id="o1", name="Ana")
    at = dt.datetime(2026, 3, 3, 15, 0)
    key = sql.insert(Item, owner_id="o1", title="a", price=Decimal("1.10"), at=at)
    assert key == 1
    (row,) = sql.all(BY_OWNER, owner="o1")
    assert (row.done, row.note, row.due, row.price, row.at) == (
        False,
        "",
        None,
        Decimal("1.10"),
        at,
    )
    assert row._asdict()["title"] == "a" and row[0] == 1
    n = sql.insert_many(
        Item, [{"owner_id": "o1", "title": t, "price": Decimal(1), "at": at} for t in "bc"]
    )
    assert n == 2 and [r.title for r in sql.all(BY_OWNER, owner="o1")] == ["a", "b", "c"]
    with pytest.raises(TypeError, match="every row needs the keys"):
        sql.insert_many(Item, [{"owner_id": "o1", "title": "d"}, {"title": "e"}])
    with pytest.raises(TypeError, match="has no column 'colour'"):
        sql.insert(Item, colour="red")


def test_empty_lists_read_as_sqlite_reads_an_empty_set(db: Any) -> None:
    sql = db
    _fill(sql, [])
    at = dt.datetime(2026, 1, 1)
    sql.insert(Item, owner_id="o1", title="x", price=Decimal(2), at=at)
    assert sql.all(OPEN_IN, ids=[]) == []
    assert [r.id for r in sql.all(NOT_IN, ids=[])] == [1]


def test_update_writes_only_the_values_that_change(db: Any) -> None:
    sql = db
    _fill(sql, [])
    at = dt.datetime(2026, 1, 1)
    sql.insert(Item, owner_id="o1", title="a", price=Decimal("2.50"), at=at)
    (row,) = sql.all(BY_OWNER, owner="o1")
    writes = sql.raw.total_changes
    same = sql.update(Item, row, title="a", price=Decimal("2.5"))  # equal values: no write
    assert same == row and sql.raw.total_changes == writes
    moved = sql.update(Item, row, title="b", done=True)
    assert sql.raw.total_changes == writes + 1
    assert moved == row._replace(title="b", done=True) == sql.first(BY_OWNER, owner="o1")
    assert sql.update_by_key(Item, 99, title="c") == 0  # no such row: nothing matched


def test_literal_lists_are_filled_in_as_given(db: Any) -> None:
    sql = db
    _fill(sql, [])
    at = dt.datetime(2026, 1, 1)
    for title in ("a", "b", "c"):
        sql.insert(Item, owner_id="o1", title=title, price=Decimal(1), at=at)
    outside = Query(select(Item.title).where(Item.title.not_in(["a", "c"])).order_by(Item.id))
    inside = Query(select(Item.title).where(Item.title.in_(["c", "a"])).order_by(Item.id))
    assert sql.scalars(outside) == ["b"] and sql.scalars(inside) == ["a", "c"]


def test_misuse_is_reported_with_the_fix() -> None:
    with pytest.raises(TypeError, match=r"Item.__table__, not the mapped class"):
        Query(select(Item)).compiled  # noqa: B018
    with pytest.raises(TypeError, match="needs parameter 'owner'"):
        BY_OWNER.bind({})
    with pytest.raises(TypeError, match="has no parameter 'ownr'"):
        BY_OWNER.bind({"owner": "o1", "ownr": "o1"})
    with pytest.raises(TypeError, match="label the columns"):
        Query(select(Item.id, Owner.id)).compiled  # noqa: B018
    with pytest.raises(TypeError, match="returns no rows"):
        FINISH.rows([])


# ------------------------------------------------------- through a session's call
class NoteBase(DeclarativeBase):
    pass


class Note(NoteBase):
    __tablename__ = "notes"
    id: Mapped[str] = mapped_column(String(16), primary_key=True)
    title: Mapped[str] = mapped_column(String(80))


NOTE_TITLES = Query(select(Note.title).order_by(Note.id))


def note_server() -> Server:
    def sample(ctx: SampleContext) -> None:
        for i in range(1, 4):
            ctx.db.add(Note(id=f"note_{i}", title=f"Note {i}"))

    server = Server("sqlnotes", version="1.0", base=NoteBase, sampler=sample, description="Notes.")

    @server.entity("note", key="note_id", model=Note, not_found="Call list_notes to see them.")
    def notes(ctx: ToolContext) -> list[dict[str, Any]]:
        return [{"note_id": n.id} for n in ctx.sql.all(Query(select(Note.id).order_by(Note.id)))]

    @server.tool()
    def read_notes(
        ctx: ToolContext, note_ids: Annotated[list[Record[Note]], Entity("note")]
    ) -> list[str]:
        """Read notes.

        Args:
            note_ids: The notes, such as ["note_1"].
        """
        return [n.title for n in note_ids]

    @server.tool(writes=True)
    def copy_then_fail(ctx: ToolContext, note_id: Annotated[Record[Note], Entity("note")]) -> str:
        """Copy a note, then fail: nothing of it may stay.

        Args:
            note_id: The note, such as "note_1".
        """
        ctx.sql.insert(Note, id="note_9", title=note_id.title)
        raise PreconditionFailed("Refused after writing.")

    @server.tool(writes=True)
    def copy(ctx: ToolContext, note_id: Annotated[Record[Note], Entity("note")]) -> str:
        """Copy a note as note_9.

        Args:
            note_id: The note, such as "note_1".
        """
        ctx.sql.insert(Note, id="note_9", title=note_id.title)
        return "note_9"

    @server.tool()
    def sneaky_read(ctx: ToolContext) -> list[str]:
        """A read tool that writes anyway: the session rolls every read back."""
        ctx.sql.insert(Note, id="note_8", title="sneaked")
        return ctx.sql.scalars(NOTE_TITLES)

    return server


def test_record_parameters_resolve_and_miss_as_orm_rows_do() -> None:
    with note_server().session(seed=1) as s:
        assert s.call("read_notes", {"note_ids": ["note_2", "note_1"]}).content == [
            "Note 2",
            "Note 1",
        ]
        missing = s.call("read_notes", {"note_ids": ["note_1", "note_7"]})
        assert missing.error_kind == "not_found"
        assert missing.message == "No note with id 'note_7'. Call list_notes to see them."
        assert s.list_entities("note") == [{"note_id": f"note_{i}"} for i in (1, 2, 3)]


def test_what_a_call_wrote_through_ctx_sql_is_undone_unless_it_succeeds() -> None:
    with note_server().session(seed=1) as s:
        start = s.state_hash()
        failed = s.call("copy_then_fail", {"note_id": "note_1"})
        assert failed.error_kind == "precondition_failed" and s.state_hash() == start
        read = s.call("sneaky_read", {})
        assert "sneaked" in read.content and s.state_hash() == start  # seen, then rolled back
        assert s.call("copy", {"note_id": "note_2"}).content == "note_9"
        assert s.state_hash() != start
        again = s.call("copy", {"note_id": "note_2"})  # the key is taken: a clean conflict
        assert again.error_kind == "conflict" and "UNIQUE constraint failed" in again.message
        assert s.call("read_notes", {"note_ids": ["note_9"]}).content == ["Note 2"]


def test_a_mapped_class_is_found_as_column_descriptions_would_find_it() -> None:
    """The misuse check reads the statement's raw columns (cheaper than compiling it): it
    flags exactly the statements whose ``column_descriptions`` hold a mapped class."""
    from sqlalchemy import func
    from sqlalchemy.orm import aliased

    from prove_gym.server.sql import _mapped_class

    shapes = [
        select(Item),
        select(Item).where(Item.owner_id == "o1").order_by(Item.id),
        select(Item.__table__),
        select(Item.title, Item.id),
        select(aliased(Item)),
        select(func.count()).select_from(Item),
        select(Item.__table__.c.title).join(Item.__table__.alias()),
        select(Item.title).where(Item.id.in_(select(Item.id).where(Item.title == "a"))),
    ]
    for statement in shapes:
        whole = [d["expr"] for d in statement.column_descriptions if isinstance(d["expr"], type)]
        assert _mapped_class(statement) == (whole[0] if whole else None), statement
