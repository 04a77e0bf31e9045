"""The social media server's 15 tools. Docstrings are what the model reads: keep examples concrete.

The model acts as one signed-in person ("me", see search_users). Visibility gates everything:
a private account's posts (and its follower lists) are visible only to itself and its approved
followers; someone who blocked me hides all their content from me, and I cannot follow, like or
comment on it; blocking removes follows and follow requests both ways.

Business rules have names (``private_account``, ``blocked``, ``already_liked``, ...); a tool that
refuses an action raises with a message that starts with ``Rule '<name>' failed:`` and says
what would be allowed instead. A refused call changes nothing.
"""

from __future__ import annotations

import datetime as dt
import functools
import random
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field
from sqlalchemy import bindparam, delete, func, or_, select

from prove_gym.server import (
    Bound,
    Conflict,
    Entity,
    EnvVersion,
    InvalidArgument,
    PermissionDenied,
    PreconditionFailed,
    Principal,
    Query,
    Record,
    Server,
    ToolContext,
    ToolError,
    TypedDict,
    contains,
    next_id,
    search_pattern,
)

from .models import (
    MAX_COMMENT,
    MAX_POST,
    Base,
    Block,
    Comment,
    Follow,
    FollowRequest,
    Like,
    Me,
    Post,
    User,
    preview,
)
from .sampler import sample_social_media

OUT_OF_SCOPE = (
    "Go live and stream a video.",
    "Schedule a post for tomorrow morning.",
    "Hide my likes count from other people.",
    "Change my profile picture.",
    "Verify my account with a blue check.",
    "Boost my latest post as a paid ad.",
    "Download all my data.",
    "Edit the post I published this morning.",
    "Mute the #crypto hashtag.",
    "Create a group for my book club.",
    "Report a harassing comment to the moderators.",
)
"""Requests a user of this server might make that no tool (of any server) serves:
synthesis asks them in abstention turns."""

SIGNED_IN = 1
"""The env version from which the task says who is signed in (its principal, any user of the
state): every tool acts as that person, where -v0 acts as the state's own Me row."""

server = Server(
    "social_media",
    out_of_scope=OUT_OF_SCOPE,
    me=lambda ctx: {"user": _me(ctx).id},
    tasks_file=Path(__file__).with_name("tasks.jsonl"),
    version="1.1.0",
    env_versions=[
        EnvVersion(
            SIGNED_IN,
            "acts for the person the task signs in (its principal, any user): every tool "
            "reads 'me' as them, so what they may see, follow, like or comment on follows "
            "their own follows and blocks (rules private_account, blocked, you_blocked, ...); "
            "other people and posts are named as before and never acted as",
            tasks_file=Path(__file__).with_name("tasks_v1.jsonl"),
            principal=Principal(
                "user",
                "You are signed in as {id} and act as them ('me'): search_users shows their "
                "handle. You see, follow, like and comment only as they may: a private "
                "account's posts only once they follow it, nothing across a block. Refused "
                "calls name the rule.",
            ),
        )
    ],
    base=Base,
    sampler=sample_social_media,
    description="A social network (like Instagram or X) seen by one signed-in person: public "
    "and private accounts, posts with comments and likes, follows and follow requests, blocks, "
    "and a home feed of the people I follow, newest first.",
    instructions="Social network conventions: ids look like 'usr_017' (a person; their "
    "@handle such as '@maria_lopez' is how people know them), 'post_00412' (a post) and "
    "'cmt_00087' (a comment). You act as the signed-in person ('me' in search_users). A "
    "private account's posts and follower lists are visible only to its approved followers: "
    "following a private account sends a follow request that its owner approves or declines. "
    "Someone who blocked you hides all their content from you, and you cannot follow, like or "
    "comment on it; you cannot interact with people you blocked until you unblock them. "
    "Blocking removes follows and follow requests in both directions. One like per person "
    "per post. Refused calls name the rule that failed and change nothing.",
)

# Rows: the core looks the id up before the tool runs (not_found hints: see the entities below).
# Another person (or a post of anyone's): a session acts as its principal without naming
# them, so a user or post parameter only says whom the act is about (shared: never refused
# for whose it is; the visibility rules decide).
UserRow = Annotated[Record[User], Entity("user", shared=True)]
PostRow = Annotated[Record[Post], Entity("post")]
FollowedRow = Annotated[Record[User], Entity("followed_user")]
RequesterRow = Annotated[Record[User], Entity("requester")]
BlockedRow = Annotated[Record[User], Entity("blocked_user")]
LikedPostRow = Annotated[Record[Post], Entity("liked_post")]
PostText = Annotated[str, Field(min_length=1, max_length=MAX_POST)]
CommentText = Annotated[str, Field(min_length=1, max_length=MAX_COMMENT)]
SearchText = Annotated[str, Field(max_length=200)]
Limit = Annotated[int, Field(ge=1, le=50)]
ListName = Literal["followers", "following", "requests_received", "requests_sent", "blocked"]
Decision = Literal["approve", "decline"]

MAX_LISTED = 50
"""Most comments or likers get_post shows (the counts say how many there are)."""

RULES: dict[str, str] = {
    "private_account": "A private account's posts and follower lists are visible only to its "
    "approved followers.",
    "blocked": "Someone who blocked you hides their content: you cannot see, follow, like or "
    "comment on it.",
    "you_blocked": "You cannot follow, like or comment on the content of someone you blocked "
    "until you unblock them.",
    "self_follow": "Nobody follows or blocks themselves.",
    "already_following": "A person follows another at most once.",
    "already_requested": "A follow request is sent at most once while it is pending.",
    "not_following": "Only a follow or a pending follow request can be undone.",
    "no_follow_request": "Only a pending follow request to you can be approved or declined.",
    "already_liked": "A person likes a post at most once.",
    "not_liked": "Only your own existing like can be removed.",
    "comments_off": "Nobody can comment on a post whose author turned comments off.",
    "already_blocked": "A person is blocked at most once.",
    "not_blocked": "Only someone you blocked can be unblocked.",
    "own_lists_only": "Follow requests and blocks are visible only to their own account.",
}


# ----------------------------------------------------------------- results
class MeOut(TypedDict):
    id: str
    handle: str
    name: str
    is_private: bool


class UserBrief(TypedDict):
    user_id: str
    handle: str
    name: str
    bio: str
    is_private: bool
    verified: bool
    follower_count: int
    relation: str
    follows_me: bool
    requested_to_follow_me: bool


class UsersOut(TypedDict):
    me: MeOut
    total: int
    users: list[UserBrief]


class PostOut(TypedDict):
    post_id: str
    author_id: str
    author: str
    text: str
    posted_at: str
    like_count: int
    comment_count: int
    comments_enabled: bool
    liked_by_me: bool


class ProfileOut(TypedDict):
    user_id: str
    handle: str
    name: str
    bio: str
    location: str
    is_private: bool
    verified: bool
    joined_at: str
    follower_count: int
    following_count: int
    post_count: int
    is_me: bool
    relation: str
    follows_me: bool
    requested_to_follow_me: bool
    can_see_posts: bool
    hidden_because: str | None
    posts: list[PostOut]


class FeedOut(TypedDict):
    total: int
    posts: list[PostOut]


class CommentOut(TypedDict):
    comment_id: str
    user_id: str
    handle: str
    text: str
    commented_at: str


class LikerOut(TypedDict):
    user_id: str
    handle: str
    liked_at: str


class PostDetail(PostOut):
    comments: list[CommentOut]
    hidden_comments: int
    liked_by: list[LikerOut]


class ConnectionOut(TypedDict):
    user_id: str
    handle: str
    name: str
    is_private: bool
    since: str


class ConnectionsOut(TypedDict):
    owner_id: str
    owner_handle: str
    list_name: str
    total: int
    users: list[ConnectionOut]


class CommentResult(TypedDict):
    comment_id: str
    post_id: str
    text: str
    commented_at: str
    comment_count: int


class LikeResult(TypedDict):
    post_id: str
    author_id: str
    liked_by_me: bool
    like_count: int


class FollowResult(TypedDict):
    user_id: str
    handle: str
    status: str
    relation: str
    their_follower_count: int
    my_following_count: int


class RequestResult(TypedDict):
    user_id: str
    handle: str
    decision: str
    follows_me: bool
    my_follower_count: int
    pending_requests: int


class BlockResult(TypedDict):
    user_id: str
    handle: str
    blocked: bool
    relation: str
    i_unfollowed_them: bool
    they_unfollowed_me: bool
    requests_cancelled: int
    my_following_count: int
    my_follower_count: int


# -------------------------------------------------------------- statements
# The tools read and write through these (ctx.sql): compiled once, run on SQLite directly.
# Rows are named tuples typed as the ORM types them; a row a tool changes is written with
# ctx.sql.update, which (as the ORM did) writes only the columns whose value differs.
users_t, posts_t, comments_t = User.__table__, Post.__table__, Comment.__table__
likes_t, follows_t = Like.__table__, Follow.__table__
requests_t, blocks_t = FollowRequest.__table__, Block.__table__

ME = Query(  # the signed-in person (the single Me row names them)
    select(users_t).select_from(Me.__table__.join(users_t, User.id == Me.user_id)).where(Me.id == 1)
)
USER = Query(select(users_t).where(User.id == bindparam("id")))
OTHER_USERS = Query(select(users_t).where(User.id != bindparam("me")).order_by(User.id))
PRIVACY = Query(select(User.id, User.is_private).order_by(User.id))

# one row of a pair (its primary key), to ask whether it exists
BLOCK = Query(
    select(blocks_t).where(
        Block.blocker_id == bindparam("blocker"), Block.blocked_id == bindparam("blocked")
    )
)
FOLLOW = Query(
    select(follows_t).where(
        Follow.follower_id == bindparam("follower"), Follow.followee_id == bindparam("followee")
    )
)
REQUEST = Query(
    select(requests_t).where(
        FollowRequest.requester_id == bindparam("requester"),
        FollowRequest.target_id == bindparam("target"),
    )
)
LIKE = Query(
    select(likes_t).where(
        Like.post_id == bindparam("post_id"), Like.user_id == bindparam("user_id")
    )
)
BLOCKED_BY = Query(  # whom ``me`` blocked
    select(Block.blocked_id).where(Block.blocker_id == bindparam("me")).order_by(Block.blocked_id)
)
BLOCKERS_OF = Query(  # who blocked ``me``
    select(Block.blocker_id).where(Block.blocked_id == bindparam("me")).order_by(Block.blocker_id)
)
_FOLLOWED_BY_ME = select(Follow.followee_id).where(Follow.follower_id == bindparam("me"))
_REQUESTED_BY_ME = select(FollowRequest.target_id).where(
    FollowRequest.requester_id == bindparam("me")
)
FOLLOWED = Query(_FOLLOWED_BY_ME.order_by(Follow.followee_id))
PENDING_REQUESTS = Query(  # requests waiting for ``me`` to answer
    select(func.count()).select_from(requests_t).where(FollowRequest.target_id == bindparam("me"))
)

# posts with their author's handle
_POSTS = select(posts_t, User.handle.label("author")).select_from(
    posts_t.join(users_t, User.id == Post.author_id)
)
_NEWEST_FIRST = (Post.created_at.desc(), Post.id.desc())
POST = Query(_POSTS.where(Post.id == bindparam("id")))
POSTS_BY = Query(
    _POSTS.where(Post.author_id == bindparam("author_id"))
    .order_by(*_NEWEST_FIRST)
    .limit(bindparam("limit"))
)
POSTS_OF = Query(  # the posts of ``authors``, by id
    _POSTS.where(Post.author_id.in_(bindparam("authors", expanding=True))).order_by(Post.id)
)
# mine and those of the people I follow, but nobody's in a block with me (``pair``)
_IN_FEED = (
    or_(Post.author_id == bindparam("me"), Post.author_id.in_(_FOLLOWED_BY_ME)),
    Post.author_id.not_in(bindparam("pair", expanding=True)),
)
FEED_TOTAL = Query(select(func.count()).select_from(posts_t).where(*_IN_FEED))
FEED = Query(_POSTS.where(*_IN_FEED).order_by(*_NEWEST_FIRST).limit(bindparam("limit")))
LIKED_AMONG = Query(  # which of the posts ``ids`` ``user_id`` liked
    select(Like.post_id)
    .where(Like.user_id == bindparam("user_id"), Like.post_id.in_(bindparam("ids", expanding=True)))
    .order_by(Like.post_id)
)
LIKED_IDS = Query(
    select(Like.post_id).where(Like.user_id == bindparam("user_id")).order_by(Like.post_id)
)
LIKED_POSTS = Query(
    _POSTS.join(likes_t, Like.post_id == Post.id)
    .where(Like.user_id == bindparam("user_id"))
    .order_by(Post.id)
)
# a post's comments with their author's handle, in Post.comments' order
COMMENTS_OF = Query(
    select(comments_t, User.handle)
    .select_from(comments_t.join(users_t, User.id == Comment.author_id))
    .where(Comment.post_id == bindparam("post_id"))
    .order_by(Comment.created_at, Comment.id)
)
# a post's likes with the liker's handle, newest first (Post.likes' order, reversed)
LIKES_OF = Query(
    select(likes_t, User.handle)
    .select_from(likes_t.join(users_t, User.id == Like.user_id))
    .where(Like.post_id == bindparam("post_id"))
    .order_by(Like.created_at.desc(), Like.user_id.desc())
)

# the people in my lists (entities)
FOLLOWED_OR_REQUESTED = Query(
    select(users_t)
    .where(or_(User.id.in_(_FOLLOWED_BY_ME), User.id.in_(_REQUESTED_BY_ME)))
    .order_by(User.id)
)
REQUESTERS = Query(
    select(users_t)
    .select_from(users_t.join(requests_t, FollowRequest.requester_id == User.id))
    .where(FollowRequest.target_id == bindparam("me"))
    .order_by(User.id)
)
BLOCKED_USERS = Query(
    select(users_t)
    .select_from(users_t.join(blocks_t, Block.blocked_id == User.id))
    .where(Block.blocker_id == bindparam("me"))
    .order_by(User.id)
)

DELETE_FOLLOW = Query(
    delete(Follow).where(
        Follow.follower_id == bindparam("follower"), Follow.followee_id == bindparam("followee")
    )
)
DELETE_REQUEST = Query(
    delete(FollowRequest).where(
        FollowRequest.requester_id == bindparam("requester"),
        FollowRequest.target_id == bindparam("target"),
    )
)
DELETE_REQUESTS_BETWEEN = Query(  # either way between ``me`` and ``other``
    delete(FollowRequest).where(
        or_(
            (FollowRequest.requester_id == bindparam("me"))
            & (FollowRequest.target_id == bindparam("other")),
            (FollowRequest.requester_id == bindparam("other"))
            & (FollowRequest.target_id == bindparam("me")),
        )
    )
)
DELETE_LIKE = Query(
    delete(Like).where(Like.post_id == bindparam("post_id"), Like.user_id == bindparam("user_id"))
)
DELETE_BLOCK = Query(
    delete(Block).where(
        Block.blocker_id == bindparam("blocker"), Block.blocked_id == bindparam("blocked")
    )
)

# list_connections: per list, the model, the column of the listed person and of the owner
_LISTS: dict[str, tuple[Any, Any, Any]] = {
    "followers": (Follow, Follow.follower_id, Follow.followee_id),
    "following": (Follow, Follow.followee_id, Follow.follower_id),
    "requests_received": (FollowRequest, FollowRequest.requester_id, FollowRequest.target_id),
    "requests_sent": (FollowRequest, FollowRequest.target_id, FollowRequest.requester_id),
    "blocked": (Block, Block.blocked_id, Block.blocker_id),
}


@functools.cache
def _users_matching(by_text: bool) -> tuple[Query, Query]:
    """How many people but me match, and the first ``limit`` of them by handle: search_users'."""
    conditions: list[Any] = [User.id != bindparam("me")]
    if by_text:
        conditions.append(
            contains(bindparam("pattern"), User.handle, User.name, User.bio, User.location)
        )
    count = Query(select(func.count()).select_from(users_t).where(*conditions))
    page = Query(
        select(users_t).where(*conditions).order_by(User.handle, User.id).limit(bindparam("limit"))
    )
    return count, page


@functools.cache
def _posts_matching(by_author: bool, by_text: bool) -> tuple[Query, Query]:
    """How many posts of ``authors`` match, and the newest ``limit`` of them: search_posts'."""
    conditions: list[Any] = [Post.author_id.in_(bindparam("authors", expanding=True))]
    if by_author:
        conditions.append(Post.author_id == bindparam("author_id"))
    if by_text:
        conditions.append(contains(bindparam("pattern"), Post.text))
    count = Query(select(func.count()).select_from(posts_t).where(*conditions))
    page = Query(_POSTS.where(*conditions).order_by(*_NEWEST_FIRST).limit(bindparam("limit")))
    return count, page


@functools.cache
def _connections(list_name: str) -> tuple[Query, Query]:
    """How many people are in ``owner_id``'s list, and the newest ``limit`` connections (each
    person with ``since``): list_connections'."""
    model, other, owner = _LISTS[list_name]
    since = model.created_at
    joined = users_t.join(model.__table__, User.id == other)
    count = Query(select(func.count()).select_from(joined).where(owner == bindparam("owner_id")))
    page = Query(
        select(User.id, User.handle, User.name, User.is_private, since.label("since"))
        .select_from(joined)
        .where(owner == bindparam("owner_id"))
        .order_by(since.desc(), User.id)
        .limit(bindparam("limit"))
    )
    return count, page


# ----------------------------------------------------------------- helpers
def _broken(rule: str, detail: str) -> PreconditionFailed:
    """The error for a failed business rule: it names the rule, then says what to do."""
    return PreconditionFailed(f"Rule '{rule}' failed: {detail}")


def _denied(rule: str, detail: str) -> PermissionDenied:
    return PermissionDenied(f"Rule '{rule}' failed: {detail}")


def _conflict(rule: str, detail: str) -> Conflict:
    return Conflict(f"Rule '{rule}' failed: {detail}")


def _stamp(value: dt.datetime) -> str:
    return value.isoformat(timespec="minutes")


def _now(ctx: ToolContext) -> dt.datetime:
    return ctx.now.replace(second=0, microsecond=0)


def _me(ctx: ToolContext) -> Any:
    """My row of the users table: the person the task signs in (from env version 1), else
    the one the state's Me row names."""
    if ctx.principal is not None:
        return ctx.sql.one(USER, id=ctx.principal)
    return ctx.sql.one(ME)


def _who(u: Any) -> str:
    return f"@{u.handle} ({u.id})"


def _blocks(ctx: ToolContext, blocker: str, blocked: str) -> bool:
    return ctx.sql.first(BLOCK, blocker=blocker, blocked=blocked) is not None


def _follows(ctx: ToolContext, follower: str, followee: str) -> bool:
    return ctx.sql.first(FOLLOW, follower=follower, followee=followee) is not None


def _requested(ctx: ToolContext, requester: str, target: str) -> bool:
    return ctx.sql.first(REQUEST, requester=requester, target=target) is not None


def _relation(ctx: ToolContext, me: Any, other: Any) -> str:
    """My side of the relation: i_blocked, blocked_me, i_follow, i_requested or no_relation."""
    if _blocks(ctx, me.id, other.id):
        return "i_blocked"
    if _blocks(ctx, other.id, me.id):
        return "blocked_me"
    if _follows(ctx, me.id, other.id):
        return "i_follow"
    if _requested(ctx, me.id, other.id):
        return "i_requested"
    return "no_relation"


def _hidden_because(ctx: ToolContext, me: Any, author: Any) -> str | None:
    """Why ``me`` cannot see ``author``'s posts (a rule name), or None when they can."""
    if author.id == me.id:
        return None
    if _blocks(ctx, author.id, me.id):
        return "blocked"
    if _blocks(ctx, me.id, author.id):
        return "you_blocked"
    if author.is_private and not _follows(ctx, me.id, author.id):
        return "private_account"
    return None


def _visibility_error(rule: str, author: Any, doing: str) -> ToolError:
    if rule == "blocked":
        return _denied(
            "blocked",
            f"{_who(author)} has blocked you, so you cannot {doing} their content; nothing "
            "was changed. Tell the user this is not possible.",
        )
    if rule == "you_blocked":
        return _broken(
            "you_blocked",
            f"you have blocked {_who(author)} (relation 'i_blocked'), so you cannot {doing} "
            "their content; nothing was changed. Unblock them first if the user wants that.",
        )
    return _denied(
        "private_account",
        f"{_who(author)} has a private account and you are not an approved follower, so you "
        f"cannot {doing} their content; nothing was changed. Send them a follow request and "
        "wait until they approve it.",
    )


def _require_visible(ctx: ToolContext, me: Any, author: Any, doing: str) -> None:
    rule = _hidden_because(ctx, me, author)
    if rule is not None:
        raise _visibility_error(rule, author, doing)


def _visible_authors(ctx: ToolContext, me: Any) -> list[str]:
    """Ids of everyone whose posts ``me`` may see, sorted."""
    blocked = _block_pair_ids(ctx, me)
    followed = set(ctx.sql.scalars(FOLLOWED, me=me.id))
    out = []
    for uid, private in ctx.sql.all(PRIVACY):
        ctx.spend(1, "people", hint="narrow the search")
        if uid == me.id or (uid not in blocked and (not private or uid in followed)):
            out.append(uid)
    return out


def _block_pair_ids(ctx: ToolContext, me: Any) -> set[str]:
    """Everyone in a block with ``me``, either way."""
    return set(ctx.sql.scalars(BLOCKED_BY, me=me.id)) | set(ctx.sql.scalars(BLOCKERS_OF, me=me.id))


def _clean(text: str, what: str) -> str:
    body = "\n".join(line.rstrip() for line in text.strip().splitlines())
    if not body:
        raise InvalidArgument(f"{what} must not be empty or blank; write the words to publish.")
    return body


def _post_out(p: Any, author: str, liked: bool) -> PostOut:
    """A post row as results show it; ``author``: its author's handle."""
    return {
        "post_id": p.id,
        "author_id": p.author_id,
        "author": author,
        "text": p.text,
        "posted_at": _stamp(p.created_at),
        "like_count": p.like_count,
        "comment_count": p.comment_count,
        "comments_enabled": p.comments_enabled,
        "liked_by_me": liked,
    }


def _posts_out(ctx: ToolContext, posts: list[Any], me: Any) -> list[PostOut]:
    """Rows of ``_POSTS`` (a post with its author's handle), saying which ones I liked."""
    ids = [p.id for p in posts]
    liked = set(ctx.sql.scalars(LIKED_AMONG, user_id=me.id, ids=ids)) if ids else set()
    return [_post_out(p, p.author, p.id in liked) for p in posts]


def _brief(ctx: ToolContext, me: Any, u: Any) -> UserBrief:
    return {
        "user_id": u.id,
        "handle": u.handle,
        "name": u.name,
        "bio": u.bio,
        "is_private": u.is_private,
        "verified": u.verified,
        "follower_count": u.follower_count,
        "relation": _relation(ctx, me, u),
        "follows_me": _follows(ctx, u.id, me.id),
        "requested_to_follow_me": _requested(ctx, u.id, me.id),
    }


def _count_follow(ctx: ToolContext, follower: Any, followee: Any, step: int) -> tuple[Any, Any]:
    """Move both people's counts by ``step`` (a follow added or removed): their new rows.

    Written in id order, as the ORM flushed them.
    """
    changes = {
        follower.id: {"following_count": follower.following_count + step},
        followee.id: {"follower_count": followee.follower_count + step},
    }
    new = {
        u.id: ctx.sql.update(User, u, **changes[u.id])
        for u in sorted((follower, followee), key=lambda u: u.id)
    }
    return new[follower.id], new[followee.id]


def _unfollow(ctx: ToolContext, follower: Any, followee: Any) -> tuple[Any, Any] | None:
    """Remove the follow, if there is one: both people's new rows (``None``: there was none).

    As the ORM flushed it: both counts, then the follow's delete.
    """
    if not _follows(ctx, follower.id, followee.id):
        return None
    follower, followee = _count_follow(ctx, follower, followee, -1)
    ctx.sql.run(DELETE_FOLLOW, follower=follower.id, followee=followee.id)
    return follower, followee


def _add_follow(ctx: ToolContext, follower: Any, followee: Any) -> tuple[Any, Any]:
    """Add the follow: both people's new rows (the follow written first, as the ORM did)."""
    ctx.sql.insert(Follow, follower_id=follower.id, followee_id=followee.id, created_at=_now(ctx))
    return _count_follow(ctx, follower, followee, +1)


# -------------------------------------------------------- example values
POSTS = [
    "Morning run done, 8 km along the river. #running",
    "Trying a new sourdough recipe this weekend, wish me luck! #baking",
    "Finally finished reading Piranesi. What should I read next? #books",
    "Sunset from the pier tonight. #photography",
    "Big news: I started a new job today! #career",
    "Anyone have a good ramen spot downtown? #food",
]
COMMENTS_FOR: list[tuple[tuple[str, ...], list[str]]] = [
    (("what should i read",), ["Try Project Hail Mary, you won't regret it!"]),
    (("spot", "shop", "recommendation", "place"), ["Try the little place by the station!"]),
    (("playlist",), ["Anything by Fleetwood Mac, trust me."]),
    (("?",), ["Following, I'd love to know too!"]),
    (
        ("new job", "big news", "first", "finished", "started", "shipped", "thank you", "wins"),
        ["Love this, congrats!", "So happy for you!", "Well deserved!"],
    ),
    (("#photography", "sunset", "shot", "view"), ["Great shot!", "Where is this?"]),
    (("recipe", "#baking", "sourdough", "bakery", "croissant", "#food"), ["Recipe please!"]),
    (("#running", " run", "climb", "workout", "#fitness"), ["Keep going, you've got this!"]),
]
"""Comments that answer a post, by words of its text, first match first: a suggestion for
a post that asks for one, congratulations for news, praise for a photo."""
OTHER_COMMENTS = ["Totally agree.", "Love this!", "This made my day.", "Ha, been there."]
"""Comments for a post none of :data:`COMMENTS_FOR` fits."""


def comment_for_post(ctx: ToolContext, rng: random.Random, bound: Bound) -> str | None:
    """A comment that answers the post in ``post_id`` (not "Love this, congrats!" under
    "Coffee shop recommendations near the pier?"); None for a post it cannot read."""
    post = ctx.sql.first(POST, id=str(bound.args.get("post_id", "")))
    if post is None:
        return None
    text = f" {post.text.lower()}"
    for words, comments in COMMENTS_FOR:
        if any(w in text for w in words):
            return rng.choice(comments)
    return rng.choice(OTHER_COMMENTS)


SEARCH = ["#running", "sourdough", "sunset", "coffee", "#books", "climbing", "ramen", "pier"]
PEOPLE_SEARCH = ["garcia", "photographer", "runner", "Lisbon", "coffee", "designer", "baker"]


# ------------------------------------------------------------------- tools
@server.tool(
    returns="user",
    phrasings=[
        "Find people matching '{query}'",
        "Who on here is a {query}?",
        "Look up the account of {query}",
    ],
    examples={"query": PEOPLE_SEARCH},
)
def search_users(ctx: ToolContext, query: SearchText | None = None, limit: Limit = 20) -> UsersOut:
    """Find people by handle, name, bio or location; also says who I am ("me").

    Every person shows my relation to them: "i_follow", "i_requested" (my follow request is
    pending), "no_relation", "i_blocked" or "blocked_me"; and whether they follow me or asked
    to. Sorted by handle.

    Args:
        query: Case-insensitive text in the handle, name, bio or location, such as "garcia",
            "photographer" or "Lisbon"; leave it out to list everyone.
        limit: Maximum number of people to return (1-50), such as 20.

    Returns:
        {"me": {"id": "usr_001", "handle": "jlee", ...}, "total": 3, "users":
        [{"user_id": "usr_017", "handle": "maria_lopez", "name": "Maria Lopez",
        "is_private": true, "relation": "i_follow", "follows_me": false, ...}]}.
    """
    me = _me(ctx)
    text = (query or "").strip()
    count, page = _users_matching(bool(text))
    params: dict[str, Any] = {"me": me.id}
    if text:
        params["pattern"] = search_pattern(text)
    total = ctx.sql.scalar(count, **params) or 0
    people = ctx.sql.all(page, **params, limit=limit)
    return {
        "me": {"id": me.id, "handle": me.handle, "name": me.name, "is_private": me.is_private},
        "total": total,
        "users": [_brief(ctx, me, u) for u in people],
    }


@server.tool(
    returns=("user", "post"),
    phrasings=[
        "Show me the profile of {user_id}",
        "What has {user_id} posted lately?",
        "How many followers does {user_id} have?",
    ],
    examples={"limit": [3, 5, 10]},
)
def get_profile(ctx: ToolContext, user_id: UserRow | None = None, limit: Limit = 10) -> ProfileOut:
    """Show a person's profile, counts, my relation to them and their latest posts I may see.

    Posts are listed newest first, only when I may see them: a private account's posts only
    if I am an approved follower; nobody's posts across a block (hidden_because then names
    the rule: "private_account", "blocked" or "you_blocked").

    Args:
        user_id: The person, such as "usr_017"; leave it out for my own profile.
        limit: How many of their latest posts to return (1-50), such as 10.

    Returns:
        {"user_id": "usr_017", "handle": "maria_lopez", "is_private": true,
        "follower_count": 212, "relation": "i_requested", "can_see_posts": false,
        "hidden_because": "private_account", "posts": [], ...}.
    """
    me = _me(ctx)
    u = user_id if user_id is not None else me
    hidden = _hidden_because(ctx, me, u)
    posts: list[Any] = []
    if hidden is None:
        posts = ctx.sql.all(POSTS_BY, author_id=u.id, limit=limit)
    is_me = u.id == me.id
    return {
        "user_id": u.id,
        "handle": u.handle,
        "name": u.name,
        "bio": u.bio,
        "location": u.location,
        "is_private": u.is_private,
        "verified": u.verified,
        "joined_at": u.joined_at.date().isoformat(),
        "follower_count": u.follower_count,
        "following_count": u.following_count,
        "post_count": u.post_count,
        "is_me": is_me,
        "relation": "me" if is_me else _relation(ctx, me, u),
        "follows_me": not is_me and _follows(ctx, u.id, me.id),
        "requested_to_follow_me": not is_me and _requested(ctx, u.id, me.id),
        "can_see_posts": hidden is None,
        "hidden_because": hidden,
        "posts": _posts_out(ctx, posts, me),
    }


@server.tool(
    returns=("post", "user"),
    phrasings=[
        "What's new in my feed?",
        "Show me the latest {limit} posts from people I follow",
    ],
    examples={"limit": [5, 10, 20]},
)
def get_feed(ctx: ToolContext, limit: Limit = 20) -> FeedOut:
    """My home feed: posts by the people I follow and my own, newest first.

    Posts posted at the same minute are ordered by id, highest first. Nothing from someone
    in a block with me appears.

    Args:
        limit: How many posts to return (1-50), such as 20.

    Returns:
        {"total": 143, "posts": [{"post_id": "post_00412", "author_id": "usr_017",
        "author": "maria_lopez", "text": "Sunset from the pier tonight. #photography",
        "posted_at": "2026-03-02T19:14", "like_count": 12, "comment_count": 3,
        "comments_enabled": true, "liked_by_me": false}]}.
    """
    me = _me(ctx)
    pair = sorted(_block_pair_ids(ctx, me))
    total = ctx.sql.scalar(FEED_TOTAL, me=me.id, pair=pair) or 0
    posts = ctx.sql.all(FEED, me=me.id, pair=pair, limit=limit)
    return {"total": total, "posts": _posts_out(ctx, posts, me)}


@server.tool(
    returns=("post", "user"),
    phrasings=[
        "Show me post {post_id} with its comments",
        "Who liked {post_id}?",
        "What did people comment on {post_id}?",
    ],
)
def get_post(ctx: ToolContext, post_id: PostRow) -> PostDetail:
    """Show one post with its comments (oldest first) and who liked it (newest like first).

    Only a post I may see: not from a private account I am not an approved follower of, and
    not across a block. Comments and likes by people in a block with me are left out
    (hidden_comments counts the comments left out). At most 50 of each are listed.

    Args:
        post_id: The post, such as "post_00412".

    Returns:
        {"post_id": "post_00412", "author": "maria_lopez", "text": "...", "like_count": 12,
        "comment_count": 3, "liked_by_me": true, "comments": [{"comment_id": "cmt_00087",
        "user_id": "usr_023", "handle": "tkim", "text": "Great shot!", "commented_at":
        "2026-03-02T20:01"}], "hidden_comments": 0, "liked_by": [{"user_id": "usr_001",
        "handle": "jlee", "liked_at": "2026-03-03T08:30"}]}.
    """
    me = _me(ctx)
    p = post_id
    author = ctx.sql.one(USER, id=p.author_id)
    _require_visible(ctx, me, author, "see")
    pair = _block_pair_ids(ctx, me)
    comments = ctx.sql.all(COMMENTS_OF, post_id=p.id)
    shown = [c for c in comments if c.author_id not in pair]
    likers = [x for x in ctx.sql.all(LIKES_OF, post_id=p.id) if x.user_id not in pair]
    liked = ctx.sql.first(LIKE, post_id=p.id, user_id=me.id) is not None
    return {
        **_post_out(p, author.handle, liked),
        "comments": [
            {
                "comment_id": c.id,
                "user_id": c.author_id,
                "handle": c.handle,
                "text": c.text,
                "commented_at": _stamp(c.created_at),
            }
            for c in shown[:MAX_LISTED]
        ],
        "hidden_comments": len(comments) - len(shown),
        "liked_by": [
            {"user_id": x.user_id, "handle": x.handle, "liked_at": _stamp(x.created_at)}
            for x in likers[:MAX_LISTED]
        ],
    }


@server.tool(
    returns=("post", "user"),
    phrasings=[
        "Search posts for '{query}'",
        "Find posts about {query}",
        "What has {author_id} posted about {query}?",
    ],
    examples={"query": SEARCH},
)
def search_posts(
    ctx: ToolContext,
    query: SearchText | None = None,
    author_id: UserRow | None = None,
    limit: Limit = 20,
) -> FeedOut:
    """Search the text of every post I may see (hashtags included), newest first.

    Private accounts' posts are found only if I am an approved follower; nothing across a
    block is found.

    Args:
        query: Case-insensitive text in the post, such as "sourdough" or "#running"; leave it
            out to list the latest posts matching the other filters.
        author_id: Only posts by this person, such as "usr_017" (or my own id).
        limit: Maximum number of posts to return (1-50), such as 20.

    Returns:
        {"total": 4, "posts": [{"post_id": "post_00412", "author": "maria_lopez",
        "text": "Ran 12 km this morning, legs are done. #running", ...}]}; total counts every
        match.
    """
    me = _me(ctx)
    if author_id is not None:
        _require_visible(ctx, me, author_id, "see")
    params: dict[str, Any] = {"authors": _visible_authors(ctx, me)}
    if author_id is not None:
        params["author_id"] = author_id.id
    text = (query or "").strip()
    if text:
        params["pattern"] = search_pattern(text)
    count, page = _posts_matching(author_id is not None, bool(text))
    total = ctx.sql.scalar(count, **params) or 0
    posts = ctx.sql.all(page, **params, limit=limit)
    return {"total": total, "posts": _posts_out(ctx, posts, me)}


@server.tool(
    returns="user",
    phrasings=[
        "Who are the {list_name} of {user_id}?",
        "Show my {list_name} list",
        "List the people who follow {user_id}",
    ],
    examples={"limit": [10, 20, 50]},
)
def list_connections(
    ctx: ToolContext,
    list_name: ListName,
    user_id: UserRow | None = None,
    limit: Limit = 50,
) -> ConnectionsOut:
    """List someone's followers or the accounts they follow; or my own follow requests or blocks.

    list_name is one of: "followers", "following", "requests_received" (people waiting for
    me to approve them), "requests_sent" (my pending requests), "blocked" (people I blocked).
    The last three exist only for my own account. A private account's lists are visible
    only to its approved followers. Newest connection first.

    Args:
        list_name: Which list, such as "followers" or "requests_received".
        user_id: Whose list, such as "usr_017"; leave it out for my own.
        limit: Maximum number of people to return (1-50), such as 50.

    Returns:
        {"owner_id": "usr_001", "owner_handle": "jlee", "list_name": "requests_received", "total": 2,
        "users": [{"user_id": "usr_044", "handle": "sam_ortiz", "name": "Sam Ortiz",
        "is_private": false, "since": "2026-03-01T10:12"}]}.
    """
    me = _me(ctx)
    u = user_id if user_id is not None else me
    if list_name in ("requests_received", "requests_sent", "blocked") and u.id != me.id:
        raise _denied(
            "own_lists_only",
            f"the {list_name} list of {_who(u)} is visible only to them; leave out user_id to "
            f"see your own {list_name}.",
        )
    if u.id != me.id:
        rule = _hidden_because(ctx, me, u)
        if rule is not None:
            raise _visibility_error(rule, u, f"see the {list_name} list of")
    count, page = _connections(list_name)
    total = ctx.sql.scalar(count, owner_id=u.id) or 0
    found = ctx.sql.all(page, owner_id=u.id, limit=limit)
    return {
        "owner_id": u.id,
        "owner_handle": u.handle,
        "list_name": list_name,
        "total": total,
        "users": [
            {
                "user_id": x.id,
                "handle": x.handle,
                "name": x.name,
                "is_private": x.is_private,
                "since": _stamp(x.since),
            }
            for x in found
        ],
    }


@server.tool(
    writes=True,
    returns="post",
    phrasings=["Post '{text}'", "Share this on my profile: {text}"],
    examples={"text": POSTS},
)
def create_post(ctx: ToolContext, text: PostText) -> PostOut:
    """Publish a new post on my profile; it appears at the top of my followers' feeds.

    Args:
        text: The post, at most 500 characters, such as "Morning run done, 8 km along the
            river. #running".

    Returns:
        {"post_id": "post_00913", "author_id": "usr_001", "author": "jlee", "text": "...",
        "posted_at": "2026-03-04T12:00", "like_count": 0, "comment_count": 0,
        "comments_enabled": true, "liked_by_me": false}.
    """
    me = _me(ctx)
    body = _clean(text, "text")
    post_id = next_id(ctx, Post.id, "post", 5)
    # as the ORM flushed them: my post count, then the post
    me = ctx.sql.update(User, me, post_count=me.post_count + 1)
    ctx.sql.insert(
        Post,
        id=post_id,
        author_id=me.id,
        text=body,
        created_at=_now(ctx),
        comments_enabled=True,
        like_count=0,
        comment_count=0,
    )
    return _posts_out(ctx, [ctx.sql.one(POST, id=post_id)], me)[0]


@server.tool(
    writes=True,
    returns="post",
    phrasings=["Comment '{text}' on {post_id}", "Reply to post {post_id} saying {text}"],
    values={"text": comment_for_post},
)
def comment_on_post(ctx: ToolContext, post_id: PostRow, text: CommentText) -> CommentResult:
    """Comment on a post I may see, unless its author turned comments off.

    Args:
        post_id: The post, such as "post_00412".
        text: The comment, at most 300 characters, such as "Great shot!".

    Returns:
        {"comment_id": "cmt_00480", "post_id": "post_00412", "text": "Great shot!",
        "commented_at": "2026-03-04T12:00", "comment_count": 4}.
    """
    me = _me(ctx)
    p = post_id
    body = _clean(text, "text")
    author = ctx.sql.one(USER, id=p.author_id)
    _require_visible(ctx, me, author, "comment on")
    if not p.comments_enabled:
        raise _broken(
            "comments_off",
            f"{_who(author)} turned comments off on {p.id} (comments 'closed'); nothing "
            "was posted. Pick a post whose comments are 'open', or like it instead.",
        )
    comment_id = next_id(ctx, Comment.id, "cmt", 5)
    at = _now(ctx)
    # as the ORM flushed them: the post's count, then the comment
    p = ctx.sql.update(Post, p, comment_count=p.comment_count + 1)
    ctx.sql.insert(Comment, id=comment_id, post_id=p.id, author_id=me.id, text=body, created_at=at)
    return {
        "comment_id": comment_id,
        "post_id": p.id,
        "text": body,
        "commented_at": _stamp(at),
        "comment_count": p.comment_count,
    }


def post_of_someone_else(ctx: ToolContext, rng: random.Random, bound: Bound) -> str | None:
    """The post in ``post_id`` if a person would like it: someone else's (the tool takes
    one's own, but nobody asks for that); None otherwise, so synthesis draws another."""
    post = ctx.sql.first(POST, id=str(bound.args.get("post_id", "")))
    if post is None or post.author_id == _me(ctx).id:
        return None
    return str(post.id)


@server.tool(
    writes=True,
    returns=("post", "liked_post"),
    phrasings=["Like post {post_id}", "Give {post_id} a like"],
    values={"post_id": post_of_someone_else},
)
def like_post(ctx: ToolContext, post_id: PostRow) -> LikeResult:
    """Like a post I may see (my own included); one like per person per post.

    Args:
        post_id: The post, such as "post_00412".

    Returns:
        {"post_id": "post_00412", "author_id": "usr_017", "liked_by_me": true,
        "like_count": 13}.
    """
    me = _me(ctx)
    p = post_id
    _require_visible(ctx, me, ctx.sql.one(USER, id=p.author_id), "like")
    if ctx.sql.first(LIKE, post_id=p.id, user_id=me.id) is not None:
        raise _conflict(
            "already_liked",
            f"you already like {p.id} (status 'liked_by_me'); a person likes a post at most "
            "once, so nothing changed. Pick a post whose status is 'not_liked_by_me'.",
        )
    # as the ORM flushed them: the post's count, then the like
    p = ctx.sql.update(Post, p, like_count=p.like_count + 1)
    ctx.sql.insert(Like, post_id=p.id, user_id=me.id, created_at=_now(ctx))
    return {
        "post_id": p.id,
        "author_id": p.author_id,
        "liked_by_me": True,
        "like_count": p.like_count,
    }


@server.tool(
    writes=True,
    inverse_of="like_post",
    returns="post",
    phrasings=["Unlike post {post_id}", "Take back my like on {post_id}"],
)
def unlike_post(ctx: ToolContext, post_id: LikedPostRow) -> LikeResult:
    """Remove my like from a post (always allowed when I liked it).

    Args:
        post_id: The post, such as "post_00412".

    Returns:
        {"post_id": "post_00412", "author_id": "usr_017", "liked_by_me": false,
        "like_count": 12}.
    """
    me = _me(ctx)
    p = post_id
    if ctx.sql.first(LIKE, post_id=p.id, user_id=me.id) is None:
        raise _broken(
            "not_liked",
            f"you have not liked {p.id} (status 'not_liked_by_me'), so there is no like to "
            "remove; nothing changed. Pick a post whose status is 'liked_by_me'.",
        )
    # as the ORM flushed them: the post's count, then the like's delete
    p = ctx.sql.update(Post, p, like_count=p.like_count - 1)
    ctx.sql.run(DELETE_LIKE, post_id=p.id, user_id=me.id)
    return {
        "post_id": p.id,
        "author_id": p.author_id,
        "liked_by_me": False,
        "like_count": p.like_count,
    }


@server.tool(
    writes=True,
    returns=("user", "followed_user"),
    phrasings=["Follow {user_id}", "Start following {user_id}"],
)
def follow_user(ctx: ToolContext, user_id: UserRow) -> FollowResult:
    """Follow someone: a public account at once; a private one gets a follow request instead.

    status is "following" or "requested" (the private account's owner must approve it
    before I see their posts).

    Args:
        user_id: The person to follow, such as "usr_017".

    Returns:
        {"user_id": "usr_017", "handle": "maria_lopez", "status": "requested", "relation":
        "i_requested", "their_follower_count": 212, "my_following_count": 16}.
    """
    me = _me(ctx)
    u = user_id
    if u.id == me.id:
        raise InvalidArgument(
            "Rule 'self_follow' failed: you cannot follow yourself. Pass another person's id."
        )
    rule = _hidden_because(ctx, me, u)
    if rule in ("blocked", "you_blocked"):
        raise _visibility_error(rule, u, "follow")
    if _follows(ctx, me.id, u.id):
        raise _conflict(
            "already_following",
            f"you already follow {_who(u)} (relation 'i_follow'); nothing changed. Pick "
            "someone with relation 'no_relation'.",
        )
    if _requested(ctx, me.id, u.id):
        raise _conflict(
            "already_requested",
            f"your follow request to {_who(u)} is still pending (relation 'i_requested'); "
            "nothing changed. Wait for them to answer it.",
        )
    if u.is_private:
        ctx.sql.insert(FollowRequest, requester_id=me.id, target_id=u.id, created_at=_now(ctx))
        status = "requested"
    else:
        me, u = _add_follow(ctx, me, u)
        status = "following"
    return {
        "user_id": u.id,
        "handle": u.handle,
        "status": status,
        "relation": _relation(ctx, me, u),
        "their_follower_count": u.follower_count,
        "my_following_count": me.following_count,
    }


@server.tool(
    writes=True,
    inverse_of="follow_user",
    destructive=True,
    returns="user",
    phrasings=["Unfollow {user_id}", "Stop following {user_id}"],
)
def unfollow_user(ctx: ToolContext, user_id: FollowedRow) -> FollowResult:
    """Stop following someone, or cancel my pending follow request to them.

    status is "unfollowed" or "request_cancelled". Unfollowing a private account hides its
    posts again until a new request is approved.

    Args:
        user_id: The person, such as "usr_017".

    Returns:
        {"user_id": "usr_017", "handle": "maria_lopez", "status": "unfollowed", "relation":
        "no_relation", "their_follower_count": 211, "my_following_count": 15}.
    """
    me = _me(ctx)
    u = user_id
    unfollowed = _unfollow(ctx, me, u)
    if unfollowed is not None:
        me, u = unfollowed
        status = "unfollowed"
    else:
        if not _requested(ctx, me.id, u.id):
            raise _broken(
                "not_following",
                f"you do not follow {_who(u)} and have no pending request to them (relation "
                f"'{_relation(ctx, me, u)}'); nothing changed. Pick someone with relation "
                "'i_follow' or 'i_requested'.",
            )
        ctx.sql.run(DELETE_REQUEST, requester=me.id, target=u.id)
        status = "request_cancelled"
    return {
        "user_id": u.id,
        "handle": u.handle,
        "status": status,
        "relation": _relation(ctx, me, u),
        "their_follower_count": u.follower_count,
        "my_following_count": me.following_count,
    }


@server.tool(
    writes=True,
    returns="user",
    phrasings=[
        "{decision} the follow request from {user_id}",
        "Let {user_id} follow me",
        "Decline {user_id}'s request to follow me",
    ],
)
def respond_to_follow_request(
    ctx: ToolContext, user_id: RequesterRow, decision: Decision
) -> RequestResult:
    """Approve or decline someone's pending request to follow my private account.

    Approving makes them a follower (they then see my posts); declining removes the request.

    Args:
        user_id: The person who asked, such as "usr_044" (see my "requests_received").
        decision: "approve" or "decline".

    Returns:
        {"user_id": "usr_044", "handle": "sam_ortiz", "decision": "approve", "follows_me":
        true, "my_follower_count": 14, "pending_requests": 4}.
    """
    me = _me(ctx)
    u = user_id
    if not _requested(ctx, u.id, me.id):
        state = "they already follow you" if _follows(ctx, u.id, me.id) else "no request"
        raise _broken(
            "no_follow_request",
            f"{_who(u)} has no pending request to follow you ({state}, request "
            "'no_request'); nothing changed. Pick someone from your received follow requests "
            "(request 'pending_request').",
        )
    # as the ORM flushed them: the follow and both counts (approved), then the request's delete
    if decision == "approve":
        u, me = _add_follow(ctx, u, me)
    ctx.sql.run(DELETE_REQUEST, requester=u.id, target=me.id)
    pending = ctx.sql.scalar(PENDING_REQUESTS, me=me.id)
    return {
        "user_id": u.id,
        "handle": u.handle,
        "decision": decision,
        "follows_me": _follows(ctx, u.id, me.id),
        "my_follower_count": me.follower_count,
        "pending_requests": pending or 0,
    }


@server.tool(
    writes=True,
    destructive=True,
    inverse_of="follow_user",
    returns=("user", "blocked_user"),
    phrasings=["Block {user_id}", "I don't want {user_id} to see my posts anymore, block them"],
)
def block_user(ctx: ToolContext, user_id: UserRow) -> BlockResult:
    """Block someone: they no longer see my content, and follows and follow requests between
    us are removed in both directions (unblocking later does not restore them).

    Args:
        user_id: The person to block, such as "usr_031".

    Returns:
        {"user_id": "usr_031", "handle": "dan_w", "blocked": true, "relation": "i_blocked",
        "i_unfollowed_them": true, "they_unfollowed_me": false, "requests_cancelled": 0,
        "my_following_count": 15, "my_follower_count": 13}.
    """
    me = _me(ctx)
    u = user_id
    if u.id == me.id:
        raise InvalidArgument(
            "Rule 'self_follow' failed: you cannot block yourself. Pass another person's id."
        )
    if _blocks(ctx, me.id, u.id):
        raise _conflict(
            "already_blocked",
            f"you already blocked {_who(u)} (relation 'i_blocked'); nothing changed.",
        )
    # as the ORM wrote them: my follow of them, theirs of me (each: both counts, then the
    # follow), the requests either way, then the block
    mine = _unfollow(ctx, me, u)
    if mine is not None:
        me, u = mine
    theirs = _unfollow(ctx, u, me)
    if theirs is not None:
        u, me = theirs
    cancelled = ctx.sql.run(DELETE_REQUESTS_BETWEEN, me=me.id, other=u.id)
    ctx.sql.insert(Block, blocker_id=me.id, blocked_id=u.id, created_at=_now(ctx))
    return {
        "user_id": u.id,
        "handle": u.handle,
        "blocked": True,
        "relation": _relation(ctx, me, u),
        "i_unfollowed_them": mine is not None,
        "they_unfollowed_me": theirs is not None,
        "requests_cancelled": cancelled,
        "my_following_count": me.following_count,
        "my_follower_count": me.follower_count,
    }


@server.tool(
    writes=True,
    inverse_of="block_user",
    returns="user",
    phrasings=["Unblock {user_id}", "Remove {user_id} from my blocked list"],
)
def unblock_user(ctx: ToolContext, user_id: BlockedRow) -> BlockResult:
    """Unblock someone I blocked. Earlier follows are not restored: follow them again if wanted.

    Args:
        user_id: The person, such as "usr_031" (see my "blocked" list).

    Returns:
        {"user_id": "usr_031", "handle": "dan_w", "blocked": false, "relation":
        "no_relation", "i_unfollowed_them": false, "they_unfollowed_me": false,
        "requests_cancelled": 0, "my_following_count": 15, "my_follower_count": 13}.
    """
    me = _me(ctx)
    u = user_id
    if not _blocks(ctx, me.id, u.id):
        raise _broken(
            "not_blocked",
            f"you have not blocked {_who(u)} (relation '{_relation(ctx, me, u)}'); nothing "
            "changed. Pick someone with relation 'i_blocked'.",
        )
    ctx.sql.run(DELETE_BLOCK, blocker=me.id, blocked=u.id)
    return {
        "user_id": u.id,
        "handle": u.handle,
        "blocked": False,
        "relation": _relation(ctx, me, u),
        "i_unfollowed_them": False,
        "they_unfollowed_me": False,
        "requests_cancelled": 0,
        "my_following_count": me.following_count,
        "my_follower_count": me.follower_count,
    }


# --------------------------------------------------------------- entities
# What exists and is worth asking about, for grounding synthesized requests.
@server.entity(
    "user",
    key="user_id",
    model=User,
    not_found="Call search_users to find the person's id (such as 'usr_017').",
)
def _users(ctx: ToolContext) -> list[dict[str, Any]]:
    """Everyone but me, with my relation to them and whether they asked to follow me."""
    me = _me(ctx)
    out = []
    for u in ctx.sql.all(OTHER_USERS, me=me.id):
        out.append(
            {
                "user_id": u.id,
                "handle": u.handle,
                "name": u.name,
                "account": "private" if u.is_private else "public",
                "relation": _relation(ctx, me, u),
                "request": "pending_request" if _requested(ctx, u.id, me.id) else "no_request",
            }
        )
    return out


@server.entity(
    "post",
    key="post_id",
    model=Post,
    shared=True,
    not_found="Call get_feed, search_posts or get_profile to find the post's id (such as "
    "'post_00412').",
)
def _posts(ctx: ToolContext) -> list[dict[str, Any]]:
    """Posts I may see, with their author and whether I liked them."""
    me = _me(ctx)
    liked = set(ctx.sql.scalars(LIKED_IDS, user_id=me.id))
    out = []
    for p in ctx.sql.all(POSTS_OF, authors=_visible_authors(ctx, me)):
        out.append(
            {
                "post_id": p.id,
                "user_id": p.author_id,
                "author": p.author,
                "preview": preview(p.text, 60),
                "like": "liked_by_me" if p.id in liked else "not_liked_by_me",
                "comments": "open" if p.comments_enabled else "closed",
            }
        )
    return out


@server.entity(
    "followed_user",
    key="user_id",
    model=User,
    not_found="Call list_connections with list_name 'following' or 'requests_sent' to find "
    "the people you follow or asked to follow (ids such as 'usr_017').",
)
def _followed(ctx: ToolContext) -> list[dict[str, Any]]:
    """People I follow or have a pending follow request to."""
    me = _me(ctx)
    return [
        {"user_id": u.id, "handle": u.handle, "name": u.name, "relation": _relation(ctx, me, u)}
        for u in ctx.sql.all(FOLLOWED_OR_REQUESTED, me=me.id)
    ]


@server.entity(
    "requester",
    key="user_id",
    model=User,
    not_found="Call list_connections with list_name 'requests_received' to see who asked to "
    "follow you (ids such as 'usr_044').",
)
def _requesters(ctx: ToolContext) -> list[dict[str, Any]]:
    """People waiting for me to approve or decline their request to follow me."""
    me = _me(ctx)
    return [
        {"user_id": u.id, "handle": u.handle, "name": u.name, "request": "pending_request"}
        for u in ctx.sql.all(REQUESTERS, me=me.id)
    ]


@server.entity(
    "blocked_user",
    key="user_id",
    model=User,
    not_found="Call list_connections with list_name 'blocked' to see whom you blocked (ids "
    "such as 'usr_031').",
)
def _blocked(ctx: ToolContext) -> list[dict[str, Any]]:
    """People I blocked."""
    me = _me(ctx)
    return [
        {"user_id": u.id, "handle": u.handle, "name": u.name, "relation": "i_blocked"}
        for u in ctx.sql.all(BLOCKED_USERS, me=me.id)
    ]


@server.entity(
    "liked_post",
    key="post_id",
    model=Post,
    shared=True,
    not_found="Call get_feed, search_posts or get_post to find a post you liked (its "
    "liked_by_me is true; ids such as 'post_00412').",
)
def _liked(ctx: ToolContext) -> list[dict[str, Any]]:
    """Posts I liked (whether or not I may still see them)."""
    me = _me(ctx)
    return [
        {"post_id": p.id, "user_id": p.author_id, "author": p.author, "like": "liked_by_me"}
        for p in ctx.sql.all(LIKED_POSTS, user_id=me.id)
    ]
