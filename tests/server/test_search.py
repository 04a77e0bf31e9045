"""Text search: a model's search text is matched as written, never as a LIKE pattern."""

from __future__ import annotations

import prove_gym


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
