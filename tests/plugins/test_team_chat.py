"""The team_chat server: append-only history, threads, reactions, pins and privacy under random
call sequences, one test per domain rule, its tasks, and the conformance suite."""

from __future__ import annotations

import json
import random
import re
import weakref
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule
from pydantic import TypeAdapter

import prove_gym
from prove_gym import ErrorKind, Session
from prove_gym.testing.conformance import conformance_suite
from prove_gym.testing.sql import count, one, rows

CHAT = prove_gym.get_server("team_chat")
ME = "usr_001"
SEEDS = [0, 7]
HANDLE = re.compile(r"(?<![\w.@])@([a-z][a-z0-9_]{1,30})\b")


# ------------------------------------------------------------ the invariants
_SEEN: weakref.WeakKeyDictionary[Session, dict[str, tuple]] = weakref.WeakKeyDictionary()
"""Per session: every message version seen so far (id -> its row), to prove append-only."""


def rule_violations(session: Session) -> list[str]:
    """Every broken team_chat rule, read straight from SQLite (see plugins/team_chat/models.py)."""
    broken: list[str] = []

    def check(what: str, sql: str, *params: Any) -> None:
        found = rows(session, sql, *params)
        if found:
            broken.append(f"{what}: {found[:5]}")

    # history is append-only
    versions = {
        vid: (mid, n, kind, text)
        for vid, mid, n, kind, text in rows(
            session, "SELECT id, message_id, number, kind, text FROM message_versions"
        )
    }
    for mid, channel, author, root, posted in rows(
        session, "SELECT id, channel_id, author_id, thread_root_id, created_at FROM messages"
    ):
        versions[f"row:{mid}"] = (channel, author, root, posted)  # never changes, never goes
    seen = _SEEN.setdefault(session, {})
    changed = [vid for vid, row in seen.items() if versions.get(vid) != row]
    if changed:
        broken.append(f"messages or their versions vanished or changed: {changed[:5]}")
    seen.update(versions)
    check(
        "a message's versions are not 1..version, or its first version is not 'posted'",
        """SELECT m.id, m.version, COUNT(v.id), MIN(v.number), MAX(v.number)
           FROM messages m LEFT JOIN message_versions v ON v.message_id = m.id
           GROUP BY m.id
           HAVING COUNT(v.id) != m.version OR MIN(v.number) != 1 OR MAX(v.number) != m.version
              OR SUM(v.number = 1 AND v.kind != 'posted') > 0
              OR SUM(v.number > 1 AND v.kind = 'posted') > 0""",
    )
    check(
        "a message's text, deleted flag or edited_at disagree with its newest version",
        """SELECT m.id FROM messages m JOIN message_versions v
             ON v.message_id = m.id AND v.number = m.version
           WHERE m.text != v.text OR m.deleted != (v.kind = 'deleted')
              OR (m.edited_at IS NULL) != NOT EXISTS (SELECT 1 FROM message_versions e
                  WHERE e.message_id = m.id AND e.kind = 'edited')""",
    )
    check(
        "a version follows a deletion",
        """SELECT v.message_id FROM message_versions v JOIN message_versions d
             ON d.message_id = v.message_id AND d.kind = 'deleted' AND v.number > d.number""",
    )
    # threads
    check(
        "a reply's thread root is in another channel, or is itself a reply",
        """SELECT r.id, r.channel_id, t.channel_id FROM messages r JOIN messages t
             ON t.id = r.thread_root_id
           WHERE t.channel_id != r.channel_id OR t.thread_root_id IS NOT NULL""",
    )
    check(
        "a root's reply_count or last_reply_at disagrees with its replies",
        """SELECT m.id, m.reply_count, COUNT(r.id) FROM messages m
           LEFT JOIN messages r ON r.thread_root_id = m.id
           GROUP BY m.id
           HAVING m.reply_count != COUNT(r.id)
              OR COALESCE(m.last_reply_at, '') != COALESCE(MAX(r.created_at), '')""",
    )
    # reactions
    check(
        "a message's reaction_count is not its reaction rows",
        """SELECT m.id, m.reaction_count, COUNT(x.id) FROM messages m
           LEFT JOIN reactions x ON x.message_id = m.id
           GROUP BY m.id HAVING m.reaction_count != COUNT(x.id)""",
    )
    # pins
    check(
        "a channel has too many pins, or a pin is in another channel or on a deleted message",
        """SELECT p.channel_id, COUNT(*) FROM pins p GROUP BY p.channel_id HAVING COUNT(*) > 12
           UNION ALL
           SELECT p.id, m.channel_id FROM pins p JOIN messages m ON m.id = p.message_id
           WHERE m.channel_id != p.channel_id OR m.deleted""",
    )
    # membership
    check(
        "a channel member is not in the channel's workspace",
        """SELECT cm.channel_id, cm.user_id FROM channel_members cm
           JOIN channels c ON c.id = cm.channel_id
           LEFT JOIN workspace_members w ON w.workspace_id = c.workspace_id
             AND w.user_id = cm.user_id
           WHERE w.user_id IS NULL""",
    )
    # mentions follow the text of their version
    mentioned: dict[tuple[str, int], set[str]] = {}
    for mid, n, uid in rows(session, "SELECT message_id, version, user_id FROM mentions"):
        mentioned.setdefault((mid, n), set()).add(uid)
    handles = dict(rows(session, "SELECT handle, id FROM users"))
    wrong = [
        (mid, n)
        for key, (mid, n, _, text) in sorted(versions.items())
        if not key.startswith("row:")
        if {handles[h] for h in HANDLE.findall(text) if h in handles}
        != mentioned.get((mid, n), set())
    ]
    if wrong:
        broken.append(f"mentions disagree with their version's text: {wrong[:5]}")
    # private channels are readable only by members
    me = one(session, "SELECT user_id FROM me")
    hidden = [
        c
        for (c,) in rows(
            session,
            """SELECT id FROM channels WHERE is_private AND id NOT IN
               (SELECT channel_id FROM channel_members WHERE user_id = ?) ORDER BY id""",
            me,
        )
    ]
    for channel in hidden:
        result = session.call("read_channel", {"channel_id": channel})
        if result.error_kind != ErrorKind.PERMISSION_DENIED:
            broken.append(f"read_channel({channel}) of a private channel I am not in: {result}")
    readable = count(
        session,
        """SELECT COUNT(*) FROM messages m JOIN channels c ON c.id = m.channel_id
           WHERE NOT m.deleted AND (NOT c.is_private OR c.id IN
             (SELECT channel_id FROM channel_members WHERE user_id = ?))""",
        me,
    )
    found = session.call("search_messages", {"limit": 1})
    if not found.ok or found.content["total"] != readable:
        broken.append(f"search finds {found.content} instead of the {readable} readable messages")
    listed = session.call("list_channels", {})
    if listed.ok:
        shown = {c["channel_id"] for w in listed.content["workspaces"] for c in w["channels"]}
        if shown & set(hidden):
            broken.append(
                f"list_channels shows private channels I am not in: {shown & set(hidden)}"
            )
    return broken


# ------------------------------------------------------------ fixtures and helpers
@pytest.fixture
def chat() -> Iterator[Session]:
    session = CHAT.session(seed=0)
    yield session
    session.close()


def call_ok(session: Session, name: str, args: dict[str, Any]) -> Any:
    result = session.call(name, args)
    assert result.ok, f"{name}({args}): {result.message}"
    return result.content


def refused(session: Session, name: str, args: dict[str, Any], kind: ErrorKind, rule: str) -> str:
    """Call, expect a refusal naming ``rule`` that changes nothing; returns the message."""
    before = session.state_hash()
    result = session.call(name, args)
    assert result.error_kind == kind, (name, args, result.error_kind, result.message)
    assert f"Rule '{rule}'" in (result.message or ""), result.message
    assert session.state_hash() == before, f"refused {name} changed the state"
    return result.message or ""


def my_channel(session: Session, *, workspace: str = "ws_01", private: bool = False) -> str:
    return one(
        session,
        """SELECT c.id FROM channels c JOIN channel_members cm ON cm.channel_id = c.id
           WHERE cm.user_id = ? AND c.workspace_id = ? AND NOT c.archived AND c.is_private = ?
             AND c.name NOT IN ('general', 'random') ORDER BY c.id""",
        ME,
        workspace,
        private,
    )


def hidden_channel(session: Session) -> str:
    return one(
        session,
        """SELECT id FROM channels WHERE is_private AND id NOT IN
           (SELECT channel_id FROM channel_members WHERE user_id = ?) ORDER BY id""",
        ME,
    )


def outside_channel(session: Session) -> str:
    """A public, active channel I am not a member of."""
    return one(
        session,
        """SELECT id FROM channels WHERE NOT is_private AND NOT archived AND id NOT IN
           (SELECT channel_id FROM channel_members WHERE user_id = ?) ORDER BY id""",
        ME,
    )


def message_in(session: Session, channel: str, *, author: str | None = None) -> str:
    sql = """SELECT id FROM messages WHERE channel_id = ? AND NOT deleted
             AND thread_root_id IS NULL AND id NOT IN (SELECT message_id FROM pins)"""
    params: list[Any] = [channel]
    if author is not None:
        sql += " AND author_id = ?"
        params.append(author)
    else:
        sql += " AND author_id != ?"
        params.append(ME)
    return one(session, sql + " ORDER BY id", *params)


def handle_of(session: Session, user: str) -> str:
    return one(session, "SELECT handle FROM users WHERE id = ?", user)


# ------------------------------------------------------------ sampled states
@pytest.mark.parametrize("seed", SEEDS)
def test_a_sampled_chat_is_big_enough_and_keeps_every_rule(seed: int) -> None:
    with CHAT.session(seed=seed) as session:
        assert count(session, "SELECT COUNT(*) FROM workspaces") == 2
        assert count(session, "SELECT COUNT(*) FROM channels") >= 16
        assert count(session, "SELECT COUNT(*) FROM messages") >= 400
        assert count(session, "SELECT COUNT(*) FROM messages WHERE thread_root_id IS NOT NULL") > 50
        assert count(session, "SELECT COUNT(*) FROM messages WHERE version > 1 AND NOT deleted")
        assert count(session, "SELECT COUNT(*) FROM messages WHERE deleted") > 0
        assert count(session, "SELECT COUNT(*) FROM messages WHERE author_id = ?", ME) > 10
        assert count(session, "SELECT COUNT(*) FROM mentions WHERE user_id = ?", ME) > 0
        roles = dict(
            rows(session, "SELECT workspace_id, role FROM workspace_members WHERE user_id = ?", ME)
        )
        assert roles == {"ws_01": "admin", "ws_02": "member"}
        assert hidden_channel(session) and outside_channel(session)
        assert count(session, "SELECT COUNT(*) FROM pins GROUP BY channel_id ORDER BY 1 DESC") == 12
        assert rule_violations(session) == []


def test_larger_sizes_scale_and_stay_consistent() -> None:
    with CHAT.session(seed=3, size=2) as session:
        assert count(session, "SELECT COUNT(*) FROM workspaces") == 4
        assert count(session, "SELECT COUNT(*) FROM messages") >= 800
        assert rule_violations(session) == []


@pytest.mark.parametrize(
    ("corruption", "finding"),
    [
        (
            "UPDATE message_versions SET text = 'rewritten' WHERE number = 1 AND message_id = "
            "(SELECT MIN(message_id) FROM message_versions)",
            "vanished or changed",
        ),
        (
            "UPDATE messages SET reaction_count = reaction_count + 1 WHERE id = "
            "(SELECT MIN(message_id) FROM reactions)",
            "reaction_count",
        ),
        (
            "UPDATE messages SET channel_id = (SELECT MAX(id) FROM channels) WHERE id = "
            "(SELECT MIN(id) FROM messages WHERE thread_root_id IS NOT NULL)",
            "thread root",
        ),
        (
            "DELETE FROM mentions WHERE rowid = (SELECT MIN(rowid) FROM mentions)",
            "mentions disagree",
        ),
        (
            "DELETE FROM messages WHERE id = (SELECT MAX(id) FROM messages WHERE deleted)",
            "vanished or changed",
        ),
    ],
)
def test_the_invariants_catch_a_broken_state(chat: Session, corruption: str, finding: str) -> None:
    assert rule_violations(chat) == []
    chat.raw_connection.execute(corruption)
    chat.db.expire_all()
    assert any(finding in problem for problem in rule_violations(chat))


# ------------------------------------------------------------ privacy and membership
def test_a_private_channel_is_invisible_and_unreadable_to_non_members(chat: Session) -> None:
    channel = hidden_channel(chat)
    inside = one(chat, "SELECT id FROM messages WHERE channel_id = ? ORDER BY id", channel)
    listed = call_ok(chat, "list_channels", {})
    assert channel not in {c["channel_id"] for w in listed["workspaces"] for c in w["channels"]}
    for name, args in [
        ("read_channel", {"channel_id": channel}),
        ("get_thread", {"message_id": inside}),
        ("search_messages", {"channel_id": channel}),
        ("post_message", {"channel_id": channel, "text": "hello"}),
        ("react", {"message_id": inside, "emoji": "eyes"}),
        ("add_channel_member", {"channel_id": channel, "user_id": ME}),
    ]:
        message = refused(chat, name, args, ErrorKind.PERMISSION_DENIED, "private_channel")
        assert "Ask one of its members" in message
    hits = call_ok(chat, "search_messages", {"limit": 50})
    assert channel not in {m["channel_id"] for m in hits["messages"]}
    assert channel not in {r["channel_id"] for r in chat.list_entities("channel")}


def test_a_public_channel_is_readable_but_posting_needs_joining(chat: Session) -> None:
    channel = outside_channel(chat)
    seen = call_ok(chat, "read_channel", {"channel_id": channel, "limit": 3})
    assert seen["is_member"] is False and len(seen["messages"]) == 3
    message = refused(
        chat,
        "post_message",
        {"channel_id": channel, "text": "hi"},
        ErrorKind.PRECONDITION_FAILED,
        "not_a_member",
    )
    assert ME in message and "join" in message
    other = message_in(chat, channel)
    for name, args in [
        ("reply_in_thread", {"message_id": other, "text": "hi"}),
        ("react", {"message_id": other, "emoji": "eyes"}),
        ("pin_message", {"message_id": other}),
    ]:
        refused(chat, name, args, ErrorKind.PRECONDITION_FAILED, "not_a_member")
    someone = one(
        chat,
        """SELECT user_id FROM workspace_members WHERE workspace_id = (SELECT workspace_id
           FROM channels WHERE id = ?) AND active AND user_id != ? AND user_id NOT IN
           (SELECT user_id FROM channel_members WHERE channel_id = ?) ORDER BY user_id""",
        channel,
        ME,
        channel,
    )
    refused(
        chat,
        "add_channel_member",
        {"channel_id": channel, "user_id": someone},
        ErrorKind.PRECONDITION_FAILED,
        "members_invite",
    )
    joined = call_ok(chat, "add_channel_member", {"channel_id": channel, "user_id": ME})
    assert joined["joined_self"] and ME in {m["user_id"] for m in joined["members"]}
    posted = call_ok(chat, "post_message", {"channel_id": channel, "text": "  Hello all!\n"})
    assert posted["text"] == "Hello all!" and posted["version"] == 1
    added = call_ok(chat, "add_channel_member", {"channel_id": channel, "user_id": someone})
    assert added["member_count"] == joined["member_count"] + 1
    refused(
        chat,
        "add_channel_member",
        {"channel_id": channel, "user_id": someone},
        ErrorKind.CONFLICT,
        "already_member",
    )
    assert rule_violations(chat) == []


def test_only_active_people_of_the_workspace_can_be_added(chat: Session) -> None:
    channel = my_channel(chat)
    stranger = one(
        chat,
        "SELECT user_id FROM workspace_members WHERE workspace_id = 'ws_02' AND user_id NOT IN "
        "(SELECT user_id FROM workspace_members WHERE workspace_id = 'ws_01') ORDER BY user_id",
    )
    refused(
        chat,
        "add_channel_member",
        {"channel_id": channel, "user_id": stranger},
        ErrorKind.PRECONDITION_FAILED,
        "not_in_workspace",
    )
    gone = one(
        chat,
        "SELECT user_id FROM workspace_members WHERE workspace_id = 'ws_01' AND NOT active "
        "AND user_id NOT IN (SELECT user_id FROM channel_members WHERE channel_id = ?) "
        "ORDER BY user_id",
        channel,
    )
    refused(
        chat,
        "add_channel_member",
        {"channel_id": channel, "user_id": gone},
        ErrorKind.PRECONDITION_FAILED,
        "user_deactivated",
    )


def test_an_archived_channel_is_read_only(chat: Session) -> None:
    channel = one(
        chat,
        "SELECT c.id FROM channels c JOIN channel_members cm ON cm.channel_id = c.id "
        "WHERE c.archived AND cm.user_id = ? ORDER BY c.id",
        ME,
    )
    assert call_ok(chat, "read_channel", {"channel_id": channel})["archived"] is True
    mine = one(
        chat,
        "SELECT id FROM messages WHERE channel_id = ? AND NOT deleted ORDER BY id",
        channel,
    )
    for name, args in [
        ("post_message", {"channel_id": channel, "text": "anyone here?"}),
        ("reply_in_thread", {"message_id": mine, "text": "late reply"}),
        ("react", {"message_id": mine, "emoji": "wave"}),
        ("pin_message", {"message_id": mine}),
    ]:
        refused(chat, name, args, ErrorKind.PRECONDITION_FAILED, "channel_archived")


# ------------------------------------------------------------ append-only history
@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    texts=st.lists(
        st.text(alphabet="abcdefgh ijk!?.,", min_size=1, max_size=40).filter(str.strip),
        min_size=1,
        max_size=4,
    )
)
def test_edits_append_versions_and_never_change_what_was_posted(texts: list[str]) -> None:
    with CHAT.session(seed=0) as session:
        channel = my_channel(session)
        posted = call_ok(session, "post_message", {"channel_id": channel, "text": "first words"})
        mid = posted["message_id"]
        expected = ["first words"]
        for text in texts:
            clean = text.strip()
            result = session.call("edit_message", {"message_id": mid, "text": text})
            if clean == expected[-1]:
                assert result.error_kind == ErrorKind.PRECONDITION_FAILED
                assert "Rule 'edit_unchanged'" in (result.message or "")
                continue
            assert result.ok, result.message
            expected.append(clean)
        thread = call_ok(session, "get_thread", {"message_id": mid})
        history = thread["root"]["history"]
        assert [v["text"] for v in history] == expected
        assert [v["kind"] for v in history] == ["posted"] + ["edited"] * (len(expected) - 1)
        assert thread["root"]["text"] == expected[-1]
        assert thread["root"]["version"] == len(expected)
        assert rule_violations(session) == []


def test_only_the_author_edits_and_admins_may_delete_others_messages(chat: Session) -> None:
    admin_side = my_channel(chat, workspace="ws_01")
    other = message_in(chat, admin_side)
    message = refused(
        chat,
        "edit_message",
        {"message_id": other, "text": "rewritten"},
        ErrorKind.PRECONDITION_FAILED,
        "not_author",
    )
    assert "reply" in message
    gone = call_ok(chat, "delete_message", {"message_id": other})  # admin of ws_01
    assert gone["deleted"] and gone["history"][-1]["kind"] == "deleted"
    member_side = my_channel(chat, workspace="ws_02")
    theirs = message_in(chat, member_side)
    message = refused(
        chat,
        "delete_message",
        {"message_id": theirs},
        ErrorKind.PRECONDITION_FAILED,
        "not_author",
    )
    assert "member" in message
    mine = call_ok(chat, "post_message", {"channel_id": member_side, "text": "oops, wrong channel"})
    assert call_ok(chat, "delete_message", {"message_id": mine["message_id"]})["deleted"]


def test_a_deleted_message_stays_as_a_tombstone_with_its_history(chat: Session) -> None:
    channel = my_channel(chat)
    mid = call_ok(
        chat, "post_message", {"channel_id": channel, "text": "Quarterly numbers attached"}
    )["message_id"]
    call_ok(chat, "edit_message", {"message_id": mid, "text": "Quarterly numbers v2 attached"})
    call_ok(chat, "reply_in_thread", {"message_id": mid, "text": "thanks"})
    gone = call_ok(chat, "delete_message", {"message_id": mid})
    assert (gone["text"], gone["version"], gone["reactions"]) == ("", 3, [])
    assert [v["text"] for v in gone["history"]] == [
        "Quarterly numbers attached",
        "Quarterly numbers v2 attached",
        "",
    ]
    thread = call_ok(chat, "get_thread", {"message_id": mid})
    assert thread["root"]["deleted"] and len(thread["replies"]) == 1
    for name, args in [
        ("edit_message", {"message_id": mid, "text": "back"}),
        ("delete_message", {"message_id": mid}),
        ("reply_in_thread", {"message_id": mid, "text": "hello?"}),
        ("react", {"message_id": mid, "emoji": "eyes"}),
        ("pin_message", {"message_id": mid}),
    ]:
        refused(chat, name, args, ErrorKind.PRECONDITION_FAILED, "message_deleted")
    assert call_ok(chat, "search_messages", {"query": "Quarterly numbers"})["total"] == 0
    assert count(chat, "SELECT COUNT(*) FROM messages WHERE id = ?", mid) == 1
    assert rule_violations(chat) == []


# ------------------------------------------------------------ threads
def test_a_reply_to_a_reply_joins_the_root_thread(chat: Session) -> None:
    channel = my_channel(chat)
    root = one(
        chat,
        "SELECT id FROM messages WHERE channel_id = ? AND reply_count > 0 AND NOT deleted "
        "ORDER BY id",
        channel,
    )
    before = count(chat, "SELECT reply_count FROM messages WHERE id = ?", root)
    reply = one(chat, "SELECT id FROM messages WHERE thread_root_id = ? ORDER BY id", root)
    made = call_ok(chat, "reply_in_thread", {"message_id": reply, "text": "Agreed."})
    assert made["thread_root_id"] == root and made["thread_reply_count"] == before + 1
    thread = call_ok(chat, "get_thread", {"message_id": reply})
    assert thread["thread_root_id"] == root
    assert [r["message_id"] for r in thread["replies"]][-1] == made["message_id"]
    top = call_ok(chat, "read_channel", {"channel_id": channel, "limit": 50})
    assert made["message_id"] not in {m["message_id"] for m in top["messages"]}
    assert rule_violations(chat) == []


# ------------------------------------------------------------ mentions
def test_mentions_must_name_people_who_can_read_the_message(chat: Session) -> None:
    public = my_channel(chat)
    refused(
        chat,
        "post_message",
        {"channel_id": public, "text": "@nobody_here please check"},
        ErrorKind.PRECONDITION_FAILED,
        "unknown_mention",
    )
    stranger = one(
        chat,
        "SELECT handle FROM users u JOIN workspace_members w ON w.user_id = u.id "
        "WHERE w.workspace_id = 'ws_02' AND u.id != ? ORDER BY u.id",
        ME,
    )
    refused(
        chat,
        "post_message",
        {"channel_id": public, "text": f"@{stranger} hi"},
        ErrorKind.PRECONDITION_FAILED,
        "unknown_mention",
    )
    gone = one(
        chat,
        "SELECT handle FROM users u JOIN workspace_members w ON w.user_id = u.id "
        "WHERE w.workspace_id = 'ws_01' AND NOT w.active ORDER BY u.id",
    )
    refused(
        chat,
        "post_message",
        {"channel_id": public, "text": f"thanks @{gone}"},
        ErrorKind.PRECONDITION_FAILED,
        "user_deactivated",
    )
    private = my_channel(chat, private=True)
    outsider = one(
        chat,
        "SELECT u.handle FROM users u JOIN workspace_members w ON w.user_id = u.id "
        "WHERE w.workspace_id = (SELECT workspace_id FROM channels WHERE id = ?) AND w.active "
        "AND u.id NOT IN (SELECT user_id FROM channel_members WHERE channel_id = ?) ORDER BY u.id",
        private,
        private,
    )
    refused(
        chat,
        "post_message",
        {"channel_id": private, "text": f"@{outsider} see this"},
        ErrorKind.PRECONDITION_FAILED,
        "mention_not_in_channel",
    )
    me = handle_of(chat, ME)
    note = call_ok(chat, "post_message", {"channel_id": public, "text": f"note to self @{me}"})
    assert note["mentions"] == [me]
    found = call_ok(chat, "search_messages", {"mentions_me": True, "limit": 50})["messages"]
    assert note["message_id"] in {m["message_id"] for m in found}
    call_ok(chat, "edit_message", {"message_id": note["message_id"], "text": "note to self"})
    found = call_ok(chat, "search_messages", {"mentions_me": True, "limit": 50})["messages"]
    assert note["message_id"] not in {m["message_id"] for m in found}
    assert rule_violations(chat) == []


# ------------------------------------------------------------ reactions
@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(spelling=st.sampled_from(["tada", ":tada:", " TADA ", ":Tada:"]))
def test_reactions_are_counted_once_per_person_and_emoji(spelling: str) -> None:
    with CHAT.session(seed=0) as session:
        channel = my_channel(session)
        mid = message_in(session, channel)
        before = count(session, "SELECT reaction_count FROM messages WHERE id = ?", mid)
        mine = count(
            session,
            "SELECT COUNT(*) FROM reactions WHERE message_id = ? AND user_id = ? AND emoji = 'tada'",
            mid,
            ME,
        )
        if mine:
            call_ok(session, "react", {"message_id": mid, "emoji": "tada", "remove": True})
            before -= 1
        added = call_ok(session, "react", {"message_id": mid, "emoji": spelling})
        assert added["emoji"] == "tada" and added["reaction_count"] == before + 1
        assert any(r["emoji"] == "tada" and r["mine"] for r in added["reactions"])
        refused(
            session,
            "react",
            {"message_id": mid, "emoji": "tada"},
            ErrorKind.CONFLICT,
            "already_reacted",
        )
        removed = call_ok(session, "react", {"message_id": mid, "emoji": spelling, "remove": True})
        assert removed["reaction_count"] == before
        refused(
            session,
            "react",
            {"message_id": mid, "emoji": "tada", "remove": True},
            ErrorKind.PRECONDITION_FAILED,
            "no_reaction",
        )
        refused(
            session,
            "react",
            {"message_id": mid, "emoji": "party_parrot"},
            ErrorKind.BAD_ARGUMENTS,
            "unknown_emoji",
        )
        assert rule_violations(session) == []


# ------------------------------------------------------------ pins
def test_pins_are_limited_and_a_pinned_message_cannot_be_deleted(chat: Session) -> None:
    full = one(
        chat,
        "SELECT p.channel_id FROM pins p JOIN channel_members cm ON cm.channel_id = p.channel_id "
        "AND cm.user_id = ? GROUP BY p.channel_id HAVING COUNT(*) = 12 ORDER BY 1",
        ME,
    )
    candidate = message_in(chat, full)
    message = refused(
        chat,
        "pin_message",
        {"message_id": candidate},
        ErrorKind.PRECONDITION_FAILED,
        "pin_limit",
    )
    oldest = one(
        chat, "SELECT message_id FROM pins WHERE channel_id = ? ORDER BY pinned_at, id", full
    )
    assert oldest in message
    refused(chat, "pin_message", {"message_id": oldest}, ErrorKind.CONFLICT, "already_pinned")
    refused(
        chat,
        "delete_message",
        {"message_id": oldest},
        ErrorKind.PRECONDITION_FAILED,
        "message_pinned",
    )
    unpinned = call_ok(chat, "pin_message", {"message_id": oldest, "unpin": True})
    assert unpinned["pin_count"] == 11 and not unpinned["pinned"]
    refused(
        chat,
        "pin_message",
        {"message_id": oldest, "unpin": True},
        ErrorKind.PRECONDITION_FAILED,
        "not_pinned",
    )
    pinned = call_ok(chat, "pin_message", {"message_id": candidate})
    assert pinned["pin_count"] == 12 and pinned["pins"][0]["message_id"] == candidate
    assert call_ok(chat, "delete_message", {"message_id": oldest})["deleted"]
    assert rule_violations(chat) == []


# ------------------------------------------------------------ plausible call sequences
class TeamChatRules(RuleBasedStateMachine):
    """Plausible calls on real ids; the rules hold after every one and refusals change nothing."""

    session: Session

    @initialize(seed=st.sampled_from(SEEDS))
    def start(self, seed: int) -> None:
        self.session = CHAT.session(seed=seed)
        self.hash = self.session.state_hash()
        self.channels = [c for (c,) in rows(self.session, "SELECT id FROM channels ORDER BY id")]
        self.users = [u for (u,) in rows(self.session, "SELECT id FROM users ORDER BY id")]

    def _messages(self) -> list[str]:
        return [m for (m,) in rows(self.session, "SELECT id FROM messages ORDER BY id")]

    def _call(self, name: str, args: dict[str, Any]) -> None:
        result = self.session.call(name, args)
        assert result.error_kind != ErrorKind.INTERNAL, result.message
        after = self.session.state_hash()
        if not result.ok or not CHAT.tools[name].writes:
            assert after == self.hash, f"{name}({args}) -> {result.status} changed the state"
        self.hash = after

    @rule(data=st.data(), text=st.sampled_from(["Ship it", "@nobody hi", "  ", "Done."]))
    def post(self, data: st.DataObject, text: str) -> None:
        channel = data.draw(st.sampled_from(self.channels))
        self._call("post_message", {"channel_id": channel, "text": text})

    @rule(data=st.data(), tool=st.sampled_from(["reply_in_thread", "edit_message"]))
    def write_text(self, data: st.DataObject, tool: str) -> None:
        mid = data.draw(st.sampled_from(self._messages()))
        text = data.draw(st.sampled_from(["On it", "Fixed, thanks", "On it"]))
        self._call(tool, {"message_id": mid, "text": text})

    @rule(data=st.data())
    def delete(self, data: st.DataObject) -> None:
        self._call("delete_message", {"message_id": data.draw(st.sampled_from(self._messages()))})

    @rule(data=st.data(), emoji=st.sampled_from(["tada", "eyes", "+1"]), remove=st.booleans())
    def react(self, data: st.DataObject, emoji: str, remove: bool) -> None:
        mid = data.draw(st.sampled_from(self._messages()))
        self._call("react", {"message_id": mid, "emoji": emoji, "remove": remove})

    @rule(data=st.data(), unpin=st.booleans())
    def pin(self, data: st.DataObject, unpin: bool) -> None:
        mid = data.draw(st.sampled_from(self._messages()))
        self._call("pin_message", {"message_id": mid, "unpin": unpin})

    @rule(data=st.data())
    def add_member(self, data: st.DataObject) -> None:
        channel = data.draw(st.sampled_from(self.channels))
        user = data.draw(st.sampled_from([ME, *self.users]))
        self._call("add_channel_member", {"channel_id": channel, "user_id": user})

    @rule(data=st.data())
    def read(self, data: st.DataObject) -> None:
        self._call("get_thread", {"message_id": data.draw(st.sampled_from(self._messages()))})

    @invariant()
    def rules_hold(self) -> None:
        if hasattr(self, "session"):
            assert rule_violations(self.session) == []

    def teardown(self) -> None:
        if hasattr(self, "session"):
            self.session.close()


TestTeamChatRules = TeamChatRules.TestCase
TestTeamChatRules.settings = settings(
    max_examples=8, stateful_step_count=20, deadline=None, suppress_health_check=list(HealthCheck)
)


# ------------------------------------------------------------ conformance
FUZZ_SAMPLES = [
    "ws_01",
    "ws_09",
    "chan_006",
    "chan_999",
    "msg_00001",
    "msg_99999",
    "usr_001",
    "usr_999",
    "tada",
    ":+1:",
    "party_parrot",
    "@nobody hello",
    "Deploy is done",
    "deploy",
    "%",
    "_",
]

TestConformance = conformance_suite("team_chat", samples=FUZZ_SAMPLES, invariants=rule_violations)


# ------------------------------------------------------------ declarations
def test_entity_sources_list_entities_that_exist_and_i_can_see(chat: Session) -> None:
    tables = {
        "workspace": ("workspaces", "id"),
        "channel": ("channels", "id"),
        "message": ("messages", "id"),
        "user": ("users", "id"),
    }
    assert set(CHAT.entities) == set(tables)
    for kind, source in CHAT.entities.items():
        records = chat.list_entities(kind)
        table, column = tables[kind]
        assert records, kind
        ids = {i for (i,) in rows(chat, f"SELECT {column} FROM {table}")}
        assert {r[source.key] for r in records} <= ids, kind
    hidden = hidden_channel(chat)
    assert hidden not in {r["channel_id"] for r in chat.list_entities("channel")}
    for record in chat.list_entities("channel"):
        if record["user_id"] is not None:  # a suggested new member really can be added
            result = chat.call(
                "add_channel_member",
                {"channel_id": record["channel_id"], "user_id": record["user_id"]},
            )
            assert result.ok, (record, result.message)
            break
    for record in chat.list_entities("message")[:40]:
        assert record["emoji"] is not None


def test_example_values_fit_their_parameters(chat: Session) -> None:
    ctx = chat.context()
    rng = random.Random(0)
    for tool in CHAT.visible_tools():
        fields = tool.args_model.model_fields
        for name, source in tool.examples.items():
            drawn = [source(ctx, rng) for _ in range(5)] if callable(source) else list(source)
            annotation = fields[name].annotation
            assert annotation is not None, (tool.name, name)
            for value in drawn:
                TypeAdapter(annotation).validate_python(value)
        free = [p.name for p in tool.params if p.required and p.entity is None]
        assert set(free) <= set(tool.examples), tool.name


def test_the_server_offers_eleven_tools() -> None:
    assert len(CHAT.visible_tools()) == 11
    writes = {t.name for t in CHAT.visible_tools() if t.writes}
    assert writes == {
        "post_message",
        "reply_in_thread",
        "edit_message",
        "delete_message",
        "react",
        "pin_message",
        "add_channel_member",
    }
    assert {t.name for t in CHAT.visible_tools() if t.destructive} == {"delete_message"}


# ------------------------------------------------------------------- tasks
def test_hand_written_tasks_cover_rules_turns_clarify_and_abstain() -> None:
    tasks = [
        t
        for t in prove_gym.get_registry().tasks("team_chat")
        if re.fullmatch(r"team_chat-\d{3}", t.id)
    ]
    assert 3 <= len(tasks) <= 8
    kinds = {turn.kind for t in tasks for turn in t.turns}
    assert {"normal", "clarify", "abstain"} <= kinds
    assert any(len(t.turns) > 1 and t.steps for t in tasks)
    assert any(any(s.depends_on for s in t.steps) for t in tasks)


def test_shipped_tasks_are_sorted_unique_and_many() -> None:
    tasks = prove_gym.get_registry().tasks("team_chat")
    ids = [t.id for t in tasks]
    assert len(ids) == len(set(ids)) >= 200
    lines = CHAT.tasks_file.read_text().splitlines() if CHAT.tasks_file else []
    assert [json.loads(line)["id"] for line in lines] == sorted(ids)


# ------------------------------------------------------------ -v1: the task signs someone in
def test_v1_acts_as_the_person_the_task_signs_in_with_their_own_role() -> None:
    """prove/team_chat-v1: 'me' is the task's principal, not the state's Me row (issue #50:
    the task says who the user is); deleting others' messages stays a workspace admin's."""
    with CHAT.session(seed=0) as v0:
        me = v0.call("list_channels", {}).content["me"]["user_id"]
        assert one(v0, "SELECT user_id FROM me") == me
        message, author, workspace = rows(
            v0,
            "SELECT m.id, m.author_id, c.workspace_id FROM messages m JOIN channels c ON "
            "c.id = m.channel_id WHERE NOT c.is_private AND NOT c.archived AND NOT m.deleted "
            "AND m.id NOT IN (SELECT message_id FROM pins) ORDER BY m.id",
        )[0]
        seats = "SELECT user_id FROM workspace_members WHERE workspace_id = ? AND user_id != ? "
        member = one(
            v0, seats + "AND role = 'member' AND active ORDER BY user_id", workspace, author
        )
        admin = one(
            v0,
            seats + "AND role IN ('owner', 'admin') AND active ORDER BY user_id",
            workspace,
            author,
        )
    with CHAT.session(seed=0, env_version=1, principal=member) as s:
        assert s.call("list_channels", {}).content["me"]["user_id"] == member
        before = s.state_hash()
        refused = s.call("delete_message", {"message_id": message})
        assert refused.error_kind == ErrorKind.PRECONDITION_FAILED, refused  # as in -v0
        assert (refused.message or "").startswith("Rule 'not_author' failed"), refused
        assert s.state_hash() == before
    with CHAT.session(seed=0, env_version=1, principal=admin) as s:
        deleted = s.call("delete_message", {"message_id": message})
        assert deleted.ok and deleted.content["deleted"], deleted


def test_v1_a_private_channel_is_read_only_by_the_signed_in_persons_membership() -> None:
    with CHAT.session(seed=0) as v0:
        channel, workspace = rows(
            v0, "SELECT id, workspace_id FROM channels WHERE is_private ORDER BY id"
        )[0]
        inside = one(
            v0, "SELECT user_id FROM channel_members WHERE channel_id = ? ORDER BY 1", channel
        )
        outside = one(
            v0,
            "SELECT user_id FROM workspace_members WHERE workspace_id = ? AND user_id NOT IN "
            "(SELECT user_id FROM channel_members WHERE channel_id = ?) ORDER BY user_id",
            workspace,
            channel,
        )
    with CHAT.session(seed=0, env_version=1, principal=outside) as s:
        hidden = s.call("read_channel", {"channel_id": channel})
        assert hidden.error_kind == ErrorKind.PERMISSION_DENIED, hidden
        seen = s.call("list_channels", {"workspace_id": workspace}).content["workspaces"][0]
        assert channel not in {c["channel_id"] for c in seen["channels"]}
    with CHAT.session(seed=0, env_version=1, principal=inside) as s:
        assert s.call("read_channel", {"channel_id": channel}).ok
        seen = s.call("list_channels", {"workspace_id": workspace}).content["workspaces"][0]
        assert channel in {c["channel_id"] for c in seen["channels"]}
