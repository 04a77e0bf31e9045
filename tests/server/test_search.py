"""Text search: a model's search text is matched as written, never as a LIKE pattern."""

from __future__ import annotations

import sqlite3

import sqlalchemy as sa
from hypothesis import given, settings
from hypothesis import strategies as st

import prove_gym
from prove_gym.server import Query, contains, search_pattern
from prove_gym.server.sql import Sql


def test_wildcard_characters_in_a_query_match_only_themselves() -> None:
    session = prove_gym.get_server("calendar").session(seed=7)
    every = session.call("search_events", {"query": "a", "limit": 50}).content
    assert len(every) > 5
    for wildcard in ("%", "_", "%%", "a%", "\\"):
        found = session.call("search_events", {"query": wildcard, "limit": 50})
        assert found.ok, found.message
        titles = [e["title"] for e in found.content]
        assert all(wildcard in t or wildcard.replace("%", "") in t for t in titles), titles
        assert len(found.content) < len(every) or wildcard == "a%"


def test_customers_are_found_by_a_fragment_of_any_searched_column() -> None:
    session = prove_gym.get_server("banking").session(seed=7)
    first = session.call("find_customer", {"query": "cus_00"}).content[0]
    surname = first["name"].split()[-1]
    by_name = session.call("find_customer", {"query": surname.upper()}).content
    assert first["customer_id"] in [c["customer_id"] for c in by_name]  # case-insensitive
    assert session.call("find_customer", {"query": "%"}).content == []  # not "everyone"


_TEXT = st.text(alphabet=st.sampled_from("aAbBz09 %_\\-éÉßİıΣσςſKkÅåǅǆ\u00ff\u0178"), max_size=8)


@st.composite
def _value_and_text(draw: st.DrawFn) -> tuple[str, str]:
    """A search text, and a value holding it (or not) with some letters' case changed."""
    text = draw(_TEXT)
    flips = draw(st.lists(st.booleans(), min_size=len(text), max_size=len(text)))
    inner = "".join(c.swapcase() if f else c for c, f in zip(text, flips, strict=True))
    inner = draw(st.sampled_from([inner, text, ""]))
    return draw(_TEXT) + inner + draw(_TEXT), text


@settings(max_examples=300, deadline=None)
@given(pair=_value_and_text())
def test_contains_finds_what_lower_casing_both_sides_finds(pair: tuple[str, str]) -> None:
    """contains() relies on SQLite's LIKE folding exactly the letters its lower() folds
    (ASCII only): on an SQLite where that is not so (case_sensitive_like on, an ICU build),
    searches would find other rows, and this fails."""
    value, text = pair
    table = sa.table("t", sa.column("v", sa.String))
    found = Query(sa.select(table.c.v).where(contains(sa.bindparam("pattern"), table.c.v)))
    raw = sqlite3.connect(":memory:")
    raw.execute("CREATE TABLE t (v TEXT)")
    raw.execute("INSERT INTO t VALUES (?)", (value,))
    sql = Sql(raw)
    expected = raw.execute(
        "SELECT count(*) FROM t WHERE lower(v) LIKE lower(?) ESCAPE '\\'", (search_pattern(text),)
    ).fetchone()[0]
    assert len(sql.all(found, pattern=search_pattern(text))) == expected
    # and it means what a reader expects of ASCII text: found when contained, ignoring case
    if value.isascii() and text.isascii():
        assert expected == (text.lower() in value.lower())
