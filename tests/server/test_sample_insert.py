"""A sampler's bulk inserts write exactly the database the ORM's add_all and flush write."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sqlalchemy import Boolean, DateTime, ForeignKey, Integer, Numeric, String
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from prove_gym import SampleContext, Server


class _Base(DeclarativeBase):
    pass


class _Shelf(_Base):
    __tablename__ = "shelves"
    id: Mapped[str] = mapped_column(String(8), primary_key=True)
    label: Mapped[str] = mapped_column(String(40), index=True)


class _Book(_Base):
    __tablename__ = "books"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)  # numbered by SQLite
    shelf_id: Mapped[str] = mapped_column(ForeignKey("shelves.id"), index=True)
    title: Mapped[str] = mapped_column(String(80))
    price: Mapped[Decimal] = mapped_column(Numeric(10, 2))
    added: Mapped[dt.datetime] = mapped_column(DateTime)
    lent: Mapped[bool] = mapped_column(Boolean, default=False)
    note: Mapped[str | None] = mapped_column(String(40))


@dataclass(slots=True)
class _PlainBook:  # a sampler's own row: attributes named as the columns
    shelf_id: str
    title: str
    price: Decimal
    added: dt.datetime
    lent: bool
    note: str | None


_BOOK = st.builds(
    _PlainBook,
    shelf_id=st.sampled_from(["s1", "s2"]),
    title=st.text(max_size=20),
    price=st.decimals(min_value=0, max_value=9999, places=2),
    added=st.datetimes(
        min_value=dt.datetime(2000, 1, 1),
        max_value=dt.datetime(2030, 1, 1),
        # naive times take a fast path to their text; aware ones SQLAlchemy's own
        timezones=st.none() | st.just(dt.timezone(dt.timedelta(hours=-5))),
    ),
    lent=st.booleans(),
    note=st.none() | st.text(max_size=10),
)


def _values(book: _PlainBook) -> dict[str, Any]:
    return {
        "shelf_id": book.shelf_id,
        "title": book.title,
        "price": book.price,
        "added": book.added,
        "lent": book.lent,
        "note": book.note,
    }


def _bytes(books: list[_PlainBook], mode: str) -> bytes:
    def sample(ctx: SampleContext) -> None:
        shelves = [_Shelf(id="s1", label="Fiction"), _Shelf(id="s2", label="History")]
        if mode == "orm":
            ctx.db.add_all(shelves)
            ctx.db.flush()
            ctx.db.add_all(_Book(**_values(b)) for b in books)
        elif mode == "objects":
            ctx.insert([*shelves, *(_Book(**_values(b)) for b in books)])
        elif mode == "dicts":
            ctx.insert([{"id": s.id, "label": s.label} for s in shelves], into=_Shelf)
            ctx.insert([_values(b) for b in books], into=_Book)
        else:
            ctx.insert([{"id": s.id, "label": s.label} for s in shelves], into=_Shelf)
            ctx.insert(books, into=_Book)

    return Server("books", version="0", base=_Base, sampler=sample).sample(0, 1).data


@settings(max_examples=25, deadline=None)
@given(books=st.lists(_BOOK, max_size=30))
def test_every_way_of_inserting_gives_the_orms_bytes(books: list[_PlainBook]) -> None:
    expected = _bytes(books, "orm")
    for mode in ("objects", "dicts", "plain"):
        assert _bytes(books, mode) == expected, mode


def test_a_column_no_row_gives_takes_its_default() -> None:
    def sample(ctx: SampleContext) -> None:
        ctx.insert([{"id": "s1", "label": "Fiction"}], into=_Shelf)
        row = {
            "shelf_id": "s1",
            "title": "T",
            "price": Decimal(1),
            "added": dt.datetime(2026, 1, 1),
        }
        ctx.insert([row], into=_Book)

    with Server("defaults", version="0", base=_Base, sampler=sample).session() as session:
        got = session.raw_connection.execute("SELECT id, lent, note FROM books").fetchall()
    assert got == [(1, 0, None)]


def test_dict_rows_must_all_give_the_same_columns() -> None:
    def sample(ctx: SampleContext) -> None:
        ctx.insert([{"id": "s1", "label": "A"}, {"id": "s2"}], into=_Shelf)

    with pytest.raises(TypeError, match="every row needs the keys"):
        Server("ragged", version="0", base=_Base, sampler=sample).sample(0, 1)
