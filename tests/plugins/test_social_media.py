"""The social_media server: counters, follows, requests, blocks and visibility under random call
sequences, one test per domain rule, its tasks, and the conformance suite."""

from __future__ import annotations

import json
import random
import re
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

SOCIAL = prove_gym.get_server("social_media")
ME = "usr_001"
SEEDS = [0, 7]

VISIBLE_POSTS = """
    SELECT {what} FROM posts p JOIN users u ON u.id = p.author_id
    WHERE (p.author_id = :me OR (
      p.author_id NOT IN (SELECT blocked_id FROM blocks WHERE blocker_id = :me
                          UNION SELECT blocker_id FROM blocks WHERE blocked_id = :me)
      AND (NOT u.is_private
           OR p.author_id IN (SELECT followee_id FROM follows WHERE follower_id = :me))))
"""


# ------------------------------------------------------------ the invariants
def rule_violations(session: Session) -> list[str]:
    """Every broken social_media rule, read straight from SQLite (see models.py)."""
    broken: list[str] = []

    def check(what: str, sql: str, *params: Any) -> None:
        found = rows(session, sql, *params)
        if found:
            broken.append(f"{what}: {found[:5]}")

    check(
        "a post's like_count or comment_count is not its rows",
        """SELECT p.id, p.like_count, p.comment_count FROM posts p
           WHERE p.like_count != (SELECT COUNT(*) FROM likes l WHERE l.post_id = p.id)
              OR p.comment_count != (SELECT COUNT(*) FROM comments c WHERE c.post_id = p.id)""",
    )
    check(
        "a person's follower, following or post count is not their rows",
        """SELECT u.id, u.follower_count, u.following_count, u.post_count FROM users u
           WHERE u.follower_count != (SELECT COUNT(*) FROM follows f WHERE f.followee_id = u.id)
              OR u.following_count != (SELECT COUNT(*) FROM follows f WHERE f.follower_id = u.id)
              OR u.post_count != (SELECT COUNT(*) FROM posts p WHERE p.author_id = u.id)""",
    )
    check(
        "a counter is negative",
        """SELECT id FROM users WHERE follower_count < 0 OR following_count < 0 OR post_count < 0
           UNION ALL SELECT id FROM posts WHERE like_count < 0 OR comment_count < 0""",
    )
    check(
        "someone follows, requests or blocks themselves",
        """SELECT follower_id FROM follows WHERE follower_id = followee_id
           UNION ALL SELECT requester_id FROM follow_requests WHERE requester_id = target_id
           UNION ALL SELECT blocker_id FROM blocks WHERE blocker_id = blocked_id""",
    )
    check(
        "a follow request targets a public account, or coexists with the follow it asks for",
        """SELECT r.requester_id, r.target_id FROM follow_requests r
           JOIN users u ON u.id = r.target_id
           WHERE NOT u.is_private OR EXISTS (SELECT 1 FROM follows f
             WHERE f.follower_id = r.requester_id AND f.followee_id = r.target_id)""",
    )
    check(
        "a follow or a follow request crosses a block",
        """SELECT f.follower_id, f.followee_id FROM follows f JOIN blocks b
             ON (b.blocker_id = f.follower_id AND b.blocked_id = f.followee_id)
             OR (b.blocker_id = f.followee_id AND b.blocked_id = f.follower_id)
           UNION ALL
           SELECT r.requester_id, r.target_id FROM follow_requests r JOIN blocks b
             ON (b.blocker_id = r.requester_id AND b.blocked_id = r.target_id)
             OR (b.blocker_id = r.target_id AND b.blocked_id = r.requester_id)""",
    )
    check(
        "a comment is on a post whose author turned comments off after being sampled open",
        """SELECT c.id FROM comments c JOIN posts p ON p.id = c.post_id
           WHERE NOT p.comments_enabled""",
    )
    # visibility through the read tools
    # the signed-in person: the task's principal from -v1 on, else the state's Me row
    me = session.principal or one(session, "SELECT user_id FROM me")
    visible = count(session, VISIBLE_POSTS.format(what="COUNT(*)").replace(":me", "?"), *[me] * 4)
    found = session.call("search_posts", {"limit": 1})
    if not found.ok or found.content["total"] != visible:
        broken.append(f"search_posts finds {found.content} instead of the {visible} visible posts")
    feed = session.call("get_feed", {"limit": 50})
    if not feed.ok:
        broken.append(f"get_feed failed: {feed.message}")
    else:
        expected = rows(
            session,
            """SELECT p.id FROM posts p WHERE p.author_id = ? OR p.author_id IN
               (SELECT followee_id FROM follows WHERE follower_id = ?)
               ORDER BY p.created_at DESC, p.id DESC LIMIT 50""",
            me,
            me,
        )
        if [p["post_id"] for p in feed.content["posts"]] != [p for (p,) in expected]:
            broken.append("the feed is not my and my followees' posts, newest first")
    return broken


# ------------------------------------------------------------ fixtures and helpers
@pytest.fixture
def social() -> Iterator[Session]:
    session = SOCIAL.session(seed=0)
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


def hidden_private(session: Session) -> str:
    """A private account I neither follow nor requested, with no block between us."""
    return one(
        session,
        """SELECT id FROM users WHERE is_private AND id != ?
           AND id NOT IN (SELECT followee_id FROM follows WHERE follower_id = ?)
           AND id NOT IN (SELECT target_id FROM follow_requests WHERE requester_id = ?)
           AND id NOT IN (SELECT blocked_id FROM blocks WHERE blocker_id = ?)
           AND id NOT IN (SELECT blocker_id FROM blocks WHERE blocked_id = ?)
           AND post_count > 0 ORDER BY id""",
        *[ME] * 5,
    )


def stranger(session: Session, *, private: bool = False) -> str:
    """An account I have no relation with at all (no follow, request or block either way)."""
    return one(
        session,
        """SELECT id FROM users WHERE is_private = ? AND id != ?
           AND id NOT IN (SELECT followee_id FROM follows WHERE follower_id = ?)
           AND id NOT IN (SELECT follower_id FROM follows WHERE followee_id = ?)
           AND id NOT IN (SELECT target_id FROM follow_requests WHERE requester_id = ?)
           AND id NOT IN (SELECT requester_id FROM follow_requests WHERE target_id = ?)
           AND id NOT IN (SELECT blocked_id FROM blocks WHERE blocker_id = ?)
           AND id NOT IN (SELECT blocker_id FROM blocks WHERE blocked_id = ?)
           AND post_count > 0 ORDER BY id""",
        private,
        *[ME] * 7,
    )


def post_by(session: Session, author: str, *, liked: bool | None = None) -> str:
    sql = "SELECT id FROM posts WHERE author_id = ? AND comments_enabled"
    if liked is True:
        sql += " AND id IN (SELECT post_id FROM likes WHERE user_id = ?)"
    elif liked is False:
        sql += " AND id NOT IN (SELECT post_id FROM likes WHERE user_id = ?)"
    params = [author] if liked is None else [author, ME]
    return one(session, sql + " ORDER BY id", *params)


def counts(session: Session, user: str) -> tuple[int, int]:
    found = rows(session, "SELECT follower_count, following_count FROM users WHERE id = ?", user)
    return int(found[0][0]), int(found[0][1])


# ------------------------------------------------------------ sampled states
@pytest.mark.parametrize("seed", SEEDS)
def test_a_sampled_network_is_big_enough_and_keeps_every_rule(seed: int) -> None:
    with SOCIAL.session(seed=seed) as session:
        assert count(session, "SELECT COUNT(*) FROM users") == 49
        assert count(session, "SELECT COUNT(*) FROM users WHERE is_private") >= 8
        assert count(session, "SELECT COUNT(*) FROM posts") >= 200
        assert count(session, "SELECT COUNT(*) FROM comments") >= 200
        assert count(session, "SELECT COUNT(*) FROM likes") >= 600
        assert count(session, "SELECT COUNT(*) FROM follows") >= 300
        assert count(session, "SELECT COUNT(*) FROM posts WHERE NOT comments_enabled") > 0
        assert one(session, "SELECT is_private FROM users WHERE id = ?", ME)
        assert count(session, "SELECT COUNT(*) FROM follow_requests WHERE target_id = ?", ME) >= 3
        assert count(session, "SELECT COUNT(*) FROM follow_requests WHERE requester_id = ?", ME) > 0
        assert count(session, "SELECT COUNT(*) FROM blocks WHERE blocker_id = ?", ME) == 2
        assert count(session, "SELECT COUNT(*) FROM blocks WHERE blocked_id = ?", ME) == 2
        assert count(
            session,
            """SELECT COUNT(*) FROM follows f JOIN users u ON u.id = f.followee_id
               WHERE f.follower_id = ? AND u.is_private""",
            ME,
        )
        assert hidden_private(session) and stranger(session)
        assert count(session, "SELECT COUNT(*) FROM posts WHERE created_at >= ?", session.now) == 0
        assert rule_violations(session) == []


def test_larger_sizes_scale_and_stay_consistent() -> None:
    with SOCIAL.session(seed=3, size=2) as session:
        assert count(session, "SELECT COUNT(*) FROM users") == 97
        assert count(session, "SELECT COUNT(*) FROM posts") >= 450
        assert rule_violations(session) == []


@pytest.mark.parametrize(
    ("corruption", "finding"),
    [
        (
            "UPDATE posts SET like_count = like_count + 1 WHERE id = (SELECT MIN(id) FROM posts)",
            "like_count",
        ),
        (
            "DELETE FROM follows WHERE rowid = (SELECT MIN(rowid) FROM follows)",
            "follower, following",
        ),
        (
            "INSERT INTO blocks SELECT followee_id, follower_id, created_at FROM follows "
            "WHERE rowid = (SELECT MIN(rowid) FROM follows)",
            "crosses a block",
        ),
        (
            "UPDATE users SET is_private = 0 WHERE id = (SELECT MIN(target_id) FROM "
            "follow_requests)",
            "targets a public account",
        ),
        (
            "UPDATE posts SET comments_enabled = 0 WHERE id = (SELECT MIN(post_id) FROM comments)",
            "turned comments off",
        ),
        (
            "INSERT INTO follow_requests SELECT follower_id, followee_id, created_at FROM follows "
            "WHERE followee_id IN (SELECT id FROM users WHERE is_private) LIMIT 1",
            "coexists with the follow",
        ),
    ],
)
def test_the_invariants_catch_a_broken_state(
    social: Session, corruption: str, finding: str
) -> None:
    assert rule_violations(social) == []
    social.raw_connection.execute(corruption)
    social.db.expire_all()
    assert any(finding in problem for problem in rule_violations(social))


# ------------------------------------------------------------ private accounts
def test_a_private_accounts_posts_are_hidden_until_a_request_is_approved(
    social: Session,
) -> None:
    target = hidden_private(social)
    post = one(social, "SELECT id FROM posts WHERE author_id = ? ORDER BY id", target)
    profile = call_ok(social, "get_profile", {"user_id": target})
    assert profile["can_see_posts"] is False and profile["posts"] == []
    assert profile["hidden_because"] == "private_account"
    for name, args in [
        ("get_post", {"post_id": post}),
        ("like_post", {"post_id": post}),
        ("comment_on_post", {"post_id": post, "text": "Nice!"}),
        ("search_posts", {"author_id": target}),
        ("list_connections", {"list_name": "followers", "user_id": target}),
    ]:
        message = refused(social, name, args, ErrorKind.PERMISSION_DENIED, "private_account")
        assert "follow request" in message
    hits = call_ok(social, "search_posts", {"limit": 50, "query": ""})
    assert target not in {p["author_id"] for p in hits["posts"]}
    assert post not in {r["post_id"] for r in social.list_entities("post")}
    followers, _ = counts(social, target)
    sent = call_ok(social, "follow_user", {"user_id": target})
    assert sent["status"] == "requested" and sent["relation"] == "i_requested"
    assert counts(social, target)[0] == followers  # a request is not a follow
    refused(social, "follow_user", {"user_id": target}, ErrorKind.CONFLICT, "already_requested")
    refused(social, "get_post", {"post_id": post}, ErrorKind.PERMISSION_DENIED, "private_account")
    cancelled = call_ok(social, "unfollow_user", {"user_id": target})
    assert cancelled["status"] == "request_cancelled"
    assert not count(
        social,
        "SELECT COUNT(*) FROM follow_requests WHERE requester_id = ? AND target_id = ?",
        ME,
        target,
    )
    assert rule_violations(social) == []


def test_an_approved_follower_sees_a_private_account_and_loses_it_on_unfollow(
    social: Session,
) -> None:
    followed = one(
        social,
        """SELECT f.followee_id FROM follows f JOIN users u ON u.id = f.followee_id
           WHERE f.follower_id = ? AND u.is_private AND u.post_count > 0 ORDER BY 1""",
        ME,
    )
    post = one(social, "SELECT id FROM posts WHERE author_id = ? ORDER BY id", followed)
    assert call_ok(social, "get_post", {"post_id": post})["post_id"] == post
    assert call_ok(social, "get_profile", {"user_id": followed})["can_see_posts"]
    before = counts(social, followed)[0]
    gone = call_ok(social, "unfollow_user", {"user_id": followed})
    assert gone["status"] == "unfollowed" and gone["their_follower_count"] == before - 1
    refused(social, "get_post", {"post_id": post}, ErrorKind.PERMISSION_DENIED, "private_account")
    feed = call_ok(social, "get_feed", {"limit": 50})
    assert followed not in {p["author_id"] for p in feed["posts"]}
    refused(
        social,
        "unfollow_user",
        {"user_id": followed},
        ErrorKind.PRECONDITION_FAILED,
        "not_following",
    )
    assert rule_violations(social) == []


def test_i_approve_or_decline_requests_to_follow_my_private_account(social: Session) -> None:
    waiting = [
        r
        for (r,) in rows(
            social, "SELECT requester_id FROM follow_requests WHERE target_id = ? ORDER BY 1", ME
        )
    ]
    listed = call_ok(social, "list_connections", {"list_name": "requests_received"})
    assert sorted(u["user_id"] for u in listed["users"]) == waiting
    mine_before = counts(social, ME)[0]
    approved = call_ok(
        social, "respond_to_follow_request", {"user_id": waiting[0], "decision": "approve"}
    )
    assert approved["follows_me"] and approved["my_follower_count"] == mine_before + 1
    assert approved["pending_requests"] == len(waiting) - 1
    declined = call_ok(
        social, "respond_to_follow_request", {"user_id": waiting[1], "decision": "decline"}
    )
    assert not declined["follows_me"] and declined["my_follower_count"] == mine_before + 1
    for again in waiting[:2]:
        refused(
            social,
            "respond_to_follow_request",
            {"user_id": again, "decision": "approve"},
            ErrorKind.PRECONDITION_FAILED,
            "no_follow_request",
        )
    refused(
        social,
        "list_connections",
        {"list_name": "requests_received", "user_id": waiting[2]},
        ErrorKind.PERMISSION_DENIED,
        "own_lists_only",
    )
    assert rule_violations(social) == []


def test_following_a_public_account_fills_the_feed_newest_first(social: Session) -> None:
    target = stranger(social)
    latest = one(
        social,
        "SELECT id FROM posts WHERE author_id = ? ORDER BY created_at DESC, id DESC",
        target,
    )
    mine = counts(social, ME)[1]
    followed = call_ok(social, "follow_user", {"user_id": target})
    assert followed["status"] == "following" and followed["my_following_count"] == mine + 1
    refused(social, "follow_user", {"user_id": target}, ErrorKind.CONFLICT, "already_following")
    refused(social, "follow_user", {"user_id": ME}, ErrorKind.BAD_ARGUMENTS, "self_follow")
    feed = call_ok(social, "get_feed", {"limit": 50})
    assert latest in {p["post_id"] for p in feed["posts"]} or feed["total"] > 50
    # two posts in the same minute: the higher id comes first
    first = call_ok(social, "create_post", {"text": "First!"})
    second = call_ok(social, "create_post", {"text": "  Second, same minute.  "})
    assert second["text"] == "Second, same minute."
    assert first["posted_at"] == second["posted_at"]
    top = call_ok(social, "get_feed", {"limit": 2})["posts"]
    assert [p["post_id"] for p in top] == [second["post_id"], first["post_id"]]
    stamps = [(p["posted_at"], p["post_id"]) for p in feed["posts"]]
    assert stamps == sorted(stamps, reverse=True)
    assert rule_violations(social) == []


# ------------------------------------------------------------ blocks
def test_someone_who_blocked_me_hides_everything_and_refuses_every_interaction(
    social: Session,
) -> None:
    blocker = one(
        social,
        """SELECT b.blocker_id FROM blocks b JOIN users u ON u.id = b.blocker_id
           WHERE b.blocked_id = ? AND u.post_count > 0 ORDER BY 1""",
        ME,
    )
    post = one(social, "SELECT id FROM posts WHERE author_id = ? ORDER BY id", blocker)
    profile = call_ok(social, "get_profile", {"user_id": blocker})
    assert profile["hidden_because"] == "blocked" and profile["relation"] == "blocked_me"
    for name, args in [
        ("get_post", {"post_id": post}),
        ("like_post", {"post_id": post}),
        ("comment_on_post", {"post_id": post, "text": "Hi"}),
        ("follow_user", {"user_id": blocker}),
        ("search_posts", {"author_id": blocker}),
        ("list_connections", {"list_name": "following", "user_id": blocker}),
    ]:
        refused(social, name, args, ErrorKind.PERMISSION_DENIED, "blocked")
    assert post not in {r["post_id"] for r in social.list_entities("post")}
    # their comments on other people's posts are hidden from me too
    shared = rows(
        social,
        """SELECT c.post_id FROM comments c JOIN posts p ON p.id = c.post_id
           JOIN users u ON u.id = p.author_id
           WHERE c.author_id = ? AND NOT u.is_private AND p.author_id NOT IN
             (SELECT blocker_id FROM blocks WHERE blocked_id = ?
              UNION SELECT blocked_id FROM blocks WHERE blocker_id = ?) ORDER BY 1""",
        blocker,
        ME,
        ME,
    )
    for (pid,) in shared[:3]:
        detail = call_ok(social, "get_post", {"post_id": pid})
        assert blocker not in {c["user_id"] for c in detail["comments"]}
        assert detail["hidden_comments"] >= 1


def test_blocking_removes_follows_both_ways_and_unblocking_restores_none(
    social: Session,
) -> None:
    mutual = one(
        social,
        """SELECT f.followee_id FROM follows f JOIN follows g
             ON g.follower_id = f.followee_id AND g.followee_id = f.follower_id
           WHERE f.follower_id = ? ORDER BY 1""",
        ME,
    )
    followers, following = counts(social, ME)
    post = one(social, "SELECT id FROM posts WHERE author_id = ? ORDER BY id", mutual)
    blocked = call_ok(social, "block_user", {"user_id": mutual})
    assert blocked["i_unfollowed_them"] and blocked["they_unfollowed_me"]
    assert (blocked["my_follower_count"], blocked["my_following_count"]) == (
        followers - 1,
        following - 1,
    )
    assert not count(
        social,
        "SELECT COUNT(*) FROM follows WHERE (follower_id = ? AND followee_id = ?) "
        "OR (follower_id = ? AND followee_id = ?)",
        ME,
        mutual,
        mutual,
        ME,
    )
    refused(social, "block_user", {"user_id": mutual}, ErrorKind.CONFLICT, "already_blocked")
    message = refused(
        social, "follow_user", {"user_id": mutual}, ErrorKind.PRECONDITION_FAILED, "you_blocked"
    )
    assert "Unblock them first" in message
    refused(social, "like_post", {"post_id": post}, ErrorKind.PRECONDITION_FAILED, "you_blocked")
    refused(social, "block_user", {"user_id": ME}, ErrorKind.BAD_ARGUMENTS, "self_follow")
    listed = call_ok(social, "list_connections", {"list_name": "blocked"})
    assert listed["users"][0]["user_id"] == mutual and listed["total"] == 3
    unblocked = call_ok(social, "unblock_user", {"user_id": mutual})
    assert unblocked["relation"] == "no_relation" and counts(social, ME) == (
        followers - 1,
        following - 1,
    )
    refused(
        social, "unblock_user", {"user_id": mutual}, ErrorKind.PRECONDITION_FAILED, "not_blocked"
    )
    assert rule_violations(social) == []


def test_blocking_cancels_follow_requests_both_ways(social: Session) -> None:
    requester = one(
        social, "SELECT requester_id FROM follow_requests WHERE target_id = ? ORDER BY 1", ME
    )
    target = one(
        social, "SELECT target_id FROM follow_requests WHERE requester_id = ? ORDER BY 1", ME
    )
    assert call_ok(social, "block_user", {"user_id": requester})["requests_cancelled"] == 1
    assert call_ok(social, "block_user", {"user_id": target})["requests_cancelled"] == 1
    assert not count(
        social,
        "SELECT COUNT(*) FROM follow_requests WHERE requester_id IN (?, ?) AND target_id = ? "
        "OR requester_id = ? AND target_id IN (?, ?)",
        requester,
        target,
        ME,
        ME,
        requester,
        target,
    )
    assert rule_violations(social) == []


# ------------------------------------------------------------ likes and comments
@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pick=st.integers(min_value=0, max_value=200))
def test_a_person_likes_a_post_at_most_once(pick: int) -> None:
    with SOCIAL.session(seed=0) as session:
        posts = [r["post_id"] for r in session.list_entities("post")]
        post = posts[pick % len(posts)]
        before = count(session, "SELECT like_count FROM posts WHERE id = ?", post)
        if count(session, "SELECT COUNT(*) FROM likes WHERE post_id = ? AND user_id = ?", post, ME):
            refused(session, "like_post", {"post_id": post}, ErrorKind.CONFLICT, "already_liked")
            call_ok(session, "unlike_post", {"post_id": post})
            before -= 1
        liked = call_ok(session, "like_post", {"post_id": post})
        assert liked["liked_by_me"] and liked["like_count"] == before + 1
        refused(session, "like_post", {"post_id": post}, ErrorKind.CONFLICT, "already_liked")
        assert call_ok(session, "get_post", {"post_id": post})["liked_by_me"]
        assert call_ok(session, "unlike_post", {"post_id": post})["like_count"] == before
        refused(
            session, "unlike_post", {"post_id": post}, ErrorKind.PRECONDITION_FAILED, "not_liked"
        )
        assert rule_violations(session) == []


def test_comments_need_comments_on_and_are_listed_oldest_first(social: Session) -> None:
    closed = one(
        social,
        VISIBLE_POSTS.format(what="p.id").replace(":me", "?")
        + " AND NOT p.comments_enabled AND p.author_id != ? ORDER BY p.id",
        *[ME] * 5,
    )
    refused(
        social,
        "comment_on_post",
        {"post_id": closed, "text": "Nice"},
        ErrorKind.PRECONDITION_FAILED,
        "comments_off",
    )
    open_post = one(
        social,
        VISIBLE_POSTS.format(what="p.id").replace(":me", "?")
        + " AND p.comments_enabled AND p.comment_count > 0 ORDER BY p.id",
        *[ME] * 4,
    )
    done = call_ok(social, "comment_on_post", {"post_id": open_post, "text": "Great shot!"})
    detail = call_ok(social, "get_post", {"post_id": open_post})
    assert detail["comment_count"] == done["comment_count"]
    assert detail["comments"][-1]["comment_id"] == done["comment_id"]
    stamps = [(c["commented_at"], c["comment_id"]) for c in detail["comments"]]
    assert stamps == sorted(stamps)
    blank = social.call("comment_on_post", {"post_id": open_post, "text": "   "})
    assert blank.error_kind == ErrorKind.BAD_ARGUMENTS
    assert rule_violations(social) == []


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=st.text(alphabet=st.sampled_from("ab%_\\#ÉéRr n"), max_size=6))
def test_search_is_literal_and_case_insensitive(text: str) -> None:
    with SOCIAL.session(seed=0) as session:
        found = call_ok(session, "search_posts", {"query": text, "limit": 50})
        needle = text.strip().lower()
        for post in found["posts"]:
            assert needle in post["text"].lower()
        people = call_ok(session, "search_users", {"query": text, "limit": 50})
        for u in people["users"]:
            assert u["user_id"] != ME


# ------------------------------------------------------------ plausible call sequences
class SocialRules(RuleBasedStateMachine):
    """Plausible calls on real ids; the rules hold after every one and refusals change nothing."""

    session: Session

    @initialize(seed=st.sampled_from(SEEDS))
    def start(self, seed: int) -> None:
        self.session = SOCIAL.session(seed=seed)
        self.hash = self.session.state_hash()
        self.users = [u for (u,) in rows(self.session, "SELECT id FROM users ORDER BY id")]
        self.posts = [p for (p,) in rows(self.session, "SELECT id FROM posts ORDER BY id")]

    def _call(self, name: str, args: dict[str, Any]) -> None:
        result = self.session.call(name, args)
        assert result.error_kind != ErrorKind.INTERNAL, result.message
        after = self.session.state_hash()
        if not result.ok or not SOCIAL.tools[name].writes:
            assert after == self.hash, f"{name}({args}) -> {result.status} changed the state"
        self.hash = after

    @rule(
        data=st.data(),
        tool=st.sampled_from(
            ["follow_user", "unfollow_user", "block_user", "unblock_user", "get_profile"]
        ),
    )
    def person(self, data: st.DataObject, tool: str) -> None:
        self._call(tool, {"user_id": data.draw(st.sampled_from(self.users))})

    @rule(data=st.data(), decision=st.sampled_from(["approve", "decline"]))
    def respond(self, data: st.DataObject, decision: str) -> None:
        user = data.draw(st.sampled_from(self.users))
        self._call("respond_to_follow_request", {"user_id": user, "decision": decision})

    @rule(data=st.data(), tool=st.sampled_from(["like_post", "unlike_post", "get_post"]))
    def post(self, data: st.DataObject, tool: str) -> None:
        self._call(tool, {"post_id": data.draw(st.sampled_from(self.posts))})

    @rule(data=st.data())
    def comment(self, data: st.DataObject) -> None:
        post = data.draw(st.sampled_from(self.posts))
        self._call("comment_on_post", {"post_id": post, "text": "Love this!"})

    @rule(text=st.sampled_from(["Hello world #first", "  ", "Coffee time."]))
    def create(self, text: str) -> None:
        self._call("create_post", {"text": text})

    @invariant()
    def rules_hold(self) -> None:
        if hasattr(self, "session"):
            assert rule_violations(self.session) == []

    def teardown(self) -> None:
        if hasattr(self, "session"):
            self.session.close()


TestSocialRules = SocialRules.TestCase
TestSocialRules.settings = settings(
    max_examples=6, stateful_step_count=20, deadline=None, suppress_health_check=list(HealthCheck)
)


# ------------------------------------------------------------ conformance
FUZZ_SAMPLES = [
    "usr_001",
    "usr_002",
    "usr_999",
    "post_00001",
    "post_99999",
    "cmt_00001",
    "approve",
    "decline",
    "followers",
    "requests_received",
    "blocked",
    "#running",
    "%",
    "_",
    "Great shot!",
]

TestConformance = conformance_suite(
    "social_media", samples=FUZZ_SAMPLES, invariants=rule_violations
)


# ------------------------------------------------------------ declarations
def test_entity_sources_list_what_exists_and_i_may_see(social: Session) -> None:
    assert set(SOCIAL.entities) == {
        "user",
        "post",
        "followed_user",
        "requester",
        "blocked_user",
        "liked_post",
    }
    users = social.list_entities("user")
    assert {u["user_id"] for u in users} == {
        u for (u,) in rows(social, "SELECT id FROM users WHERE id != ?", ME)
    }
    posts = {p["post_id"] for p in social.list_entities("post")}
    visible = {
        p for (p,) in rows(social, VISIBLE_POSTS.format(what="p.id").replace(":me", "?"), *[ME] * 4)
    }
    assert posts == visible
    for record in users:
        if record["relation"] == "no_relation":
            assert social.call("follow_user", {"user_id": record["user_id"]}).ok
            break
    for record in users:
        if record["request"] == "pending_request":
            args = {"user_id": record["user_id"], "decision": "approve"}
            assert social.call("respond_to_follow_request", args).ok
            break


def test_example_values_fit_their_parameters(social: Session) -> None:
    ctx = social.context()
    rng = random.Random(0)
    for tool in SOCIAL.visible_tools():
        fields = tool.args_model.model_fields
        for name, source in tool.examples.items():
            drawn = [source(ctx, rng) for _ in range(5)] if callable(source) else list(source)
            annotation = fields[name].annotation
            assert annotation is not None, (tool.name, name)
            for value in drawn:
                TypeAdapter(annotation).validate_python(value)
        free = [p.name for p in tool.params if p.required and p.entity is None]
        drawn_from = set(tool.examples) | set(tool.values)  # a value source draws them too
        assert set(free) - {"list_name", "decision"} <= drawn_from, tool.name


def test_the_server_offers_fifteen_tools() -> None:
    assert len(SOCIAL.visible_tools()) == 15
    writes = {t.name for t in SOCIAL.visible_tools() if t.writes}
    assert writes == {
        "create_post",
        "comment_on_post",
        "like_post",
        "unlike_post",
        "follow_user",
        "unfollow_user",
        "respond_to_follow_request",
        "block_user",
        "unblock_user",
    }
    assert {t.name for t in SOCIAL.visible_tools() if t.destructive} == {
        "unfollow_user",
        "block_user",
    }


# ------------------------------------------------------------------- tasks
def test_hand_written_tasks_cover_rules_turns_clarify_and_abstain() -> None:
    tasks = [
        t
        for t in prove_gym.get_registry().tasks("social_media")
        if re.fullmatch(r"social_media-\d{3}", t.id)
    ]
    assert 3 <= len(tasks) <= 8
    kinds = {turn.kind for t in tasks for turn in t.turns}
    assert {"normal", "clarify", "abstain"} <= kinds
    assert any(len(t.turns) > 1 and t.steps for t in tasks)
    assert any(any(s.depends_on for s in t.steps) for t in tasks)


def test_shipped_tasks_are_sorted_unique_and_many() -> None:
    tasks = prove_gym.get_registry().tasks("social_media")
    ids = [t.id for t in tasks]
    assert len(ids) == len(set(ids)) >= 200
    lines = SOCIAL.tasks_file.read_text().splitlines() if SOCIAL.tasks_file else []
    assert [json.loads(line)["id"] for line in lines] == sorted(ids)


# ------------------------------------------------------------ -v1: the task signs someone in
def test_v1_acts_as_the_person_the_task_signs_in() -> None:
    """prove/social_media-v1: 'me' is the task's principal, not the state's Me row (issue
    #50: the task says who the user is); -v0 still acts as the Me row."""
    with SOCIAL.session(seed=0) as v0:
        me = v0.call("search_users", {}).content["me"]["id"]
        assert one(v0, "SELECT user_id FROM me") == me
        # a private account, someone who follows it and someone who neither follows it nor is
        # blocked either way
        private, follower = rows(
            v0,
            "SELECT u.id, f.follower_id FROM users u JOIN follows f ON f.followee_id = u.id "
            "WHERE u.is_private AND f.follower_id != ? AND u.id != ? ORDER BY u.id, f.follower_id",
            me,
            me,
        )[0]
        stranger = one(
            v0,
            "SELECT id FROM users WHERE id NOT IN (?, ?, ?) AND id NOT IN (SELECT follower_id "
            "FROM follows WHERE followee_id = ?) AND id NOT IN (SELECT blocker_id FROM blocks "
            "WHERE blocked_id = ?) AND id NOT IN (SELECT blocked_id FROM blocks WHERE "
            "blocker_id = ?) ORDER BY id",
            private,
            follower,
            me,
            private,
            private,
            private,
        )
        post = one(v0, "SELECT id FROM posts WHERE author_id = ? ORDER BY id", private)
    with SOCIAL.session(seed=0, env_version=1, principal=follower) as s:
        seen = s.call("search_users", {})
        assert seen.content["me"]["id"] == follower
        assert s.call("get_profile", {}).content["user_id"] == follower
        assert s.call("get_post", {"post_id": post}).ok  # an approved follower's view
    with SOCIAL.session(seed=0, env_version=1, principal=stranger) as s:
        before = s.state_hash()
        hidden = s.call("get_post", {"post_id": post})
        assert hidden.error_kind == ErrorKind.PERMISSION_DENIED, hidden
        assert (hidden.message or "").startswith("Rule 'private_account' failed"), hidden
        assert s.call("like_post", {"post_id": post}).error_kind == ErrorKind.PERMISSION_DENIED
        assert s.state_hash() == before
        requested = s.call(
            "follow_user", {"user_id": private}
        )  # another person: named, not acted as
        assert requested.ok, requested
        mine = s.call("list_connections", {"list_name": "requests_sent"}).content
        assert private in {u["user_id"] for u in mine["users"]}


def test_v1_signs_in_only_someone_of_the_state() -> None:
    with pytest.raises(ValueError, match="no user with id 'usr_999'"):
        SOCIAL.session(seed=0, env_version=1, principal="usr_999")
    with pytest.raises(ValueError, match="acts for one user"):
        SOCIAL.session(seed=0, env_version=1)
