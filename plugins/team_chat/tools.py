"""The team chat server's 11 tools. Docstrings are what the model reads: keep examples concrete.

The model acts as one signed-in person ("me", see list_channels). Membership and privacy gate
everything: a private channel is readable only by its members; posting, replying, reacting
and pinning need membership of the channel; an archived channel is read-only.

History is append-only: posting creates a message with version 1; an edit or a deletion
appends a new version (a deletion leaves a tombstone), so earlier text is never lost
(get_thread shows it). Business rules have names (``not_a_member``, ``not_author``, ...); a
tool that refuses an action raises with a message that starts with ``Rule '<name>' failed:``
and says what would be allowed instead. A refused call changes nothing.
"""

from __future__ import annotations

import datetime as dt
import functools
import random
from pathlib import Path
from typing import Annotated, Any

from pydantic import Field
from sqlalchemy import bindparam, delete, func, or_, select
from sqlalchemy.sql.elements import BindParameter

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
    TypedDict,
    contains,
    next_id,
    search_pattern,
)

from .models import (
    EMOJI,
    MAX_PINS,
    MAX_TEXT,
    MAX_VERSIONS,
    Base,
    Channel,
    ChannelMember,
    Me,
    Mention,
    Message,
    MessageVersion,
    Pin,
    Reaction,
    User,
    Workspace,
    WorkspaceMember,
    mentioned_handles,
    preview,
)
from .sampler import sample_team_chat

OUT_OF_SCOPE = (
    "Add a custom emoji for our team.",
    "Set my status to away for the afternoon.",
    "Create a new workspace for the marketing team.",
    "Archive the old release channel.",
    "Install the calendar integration.",
    "Bookmark the release thread for me.",
    "Turn off notifications for the random channel.",
    "Share my screen in the channel.",
    "Export the channel's history.",
    "Create a poll about where to have lunch.",
    "Change the channel's topic.",
)
"""Requests a user of this server might make that no tool (of any server) serves:
synthesis asks them in abstention turns."""

SIGNED_IN = 1
"""The env version from which the task says who is signed in (its principal, any user of the
state): every tool acts as that person, where -v0 acts as the state's own Me row."""

server = Server(
    "team_chat",
    out_of_scope=OUT_OF_SCOPE,
    me=lambda ctx: {"user": _me(ctx).id},
    tasks_file=Path(__file__).with_name("tasks.jsonl"),
    version="1.1.0",
    env_versions=[
        EnvVersion(
            SIGNED_IN,
            "acts for the person the task signs in (its principal, any user): every tool "
            "reads 'me' as them, so the workspaces, channels and messages they may read, "
            "post in, edit or delete follow their own seats, memberships and role (rules "
            "not_in_workspace, private_channel, not_a_member, not_author, ...); other people "
            "are named as before and never acted as",
            tasks_file=Path(__file__).with_name("tasks_v1.jsonl"),
            principal=Principal(
                "user",
                "You are signed in as {id} and act as them ('me'): list_channels shows their "
                "handle, workspaces and role. You read private channels, post, react, pin and "
                "edit only as they may; deleting others' messages needs their workspace "
                "role to be owner or admin. Refused calls name the rule.",
            ),
        )
    ],
    base=Base,
    sampler=sample_team_chat,
    description="A team chat (like Slack) seen by one signed-in person: workspaces, public "
    "and private channels with their members, messages and threaded replies, emoji "
    "reactions, @mentions and pinned messages. History is append-only: edits and deletions "
    "add new versions of a message and never erase what was said.",
    instructions="Team chat conventions: ids look like 'ws_01' (workspace), 'chan_004' "
    "(channel), 'usr_017' (person; their @handle such as '@mgarcia' is how messages mention "
    "them), 'msg_00412' (message). You act as the signed-in person ('me' in list_channels). "
    "Private channels are visible and readable only by their members; to post, reply, react "
    "or pin in a channel you must be a member (join a public one by adding yourself); "
    "archived channels are read-only. Only a message's author can edit it; its author or a "
    "workspace admin can delete it. Edits and deletions keep the earlier versions. "
    "Refused calls name the rule that failed and change nothing.",
)

WorkspaceRow = Annotated[Record[Workspace], Entity("workspace")]
ChannelRow = Annotated[Record[Channel], Entity("channel")]
MessageRow = Annotated[Record[Message], Entity("message")]
# Another person (or a channel or message of anyone's): a session acts as its principal
# without naming them, so these only say whom the act is about (shared: never refused for
# whose it is; membership, privacy and roles decide).
UserRow = Annotated[Record[User], Entity("user", shared=True)]
Text = Annotated[str, Field(min_length=1, max_length=MAX_TEXT)]
SearchText = Annotated[str, Field(max_length=200)]
EmojiName = Annotated[
    str, Field(min_length=1, max_length=40, pattern=r"^\s*:?[A-Za-z0-9_+-]+:?\s*$")
]
Limit = Annotated[int, Field(ge=1, le=50)]

RULES: dict[str, str] = {
    "private_channel": "A private channel is readable only by its members.",
    "not_a_member": "Posting, replying, reacting and pinning in a channel need membership.",
    "members_invite": "Only members of a channel can add other people to it.",
    "not_in_workspace": "Only people of the channel's workspace can join it.",
    "user_deactivated": "A deactivated account cannot join channels or be @mentioned.",
    "already_member": "A person is a member of a channel at most once.",
    "channel_archived": "An archived channel is read-only.",
    "not_author": "Only its author can edit a message; its author or a workspace owner or "
    "admin can delete it.",
    "message_deleted": "A deleted message cannot be edited, replied to, reacted to or pinned.",
    "edit_unchanged": "An edit must change the text.",
    "edit_limit": f"A message keeps at most {MAX_VERSIONS} versions.",
    "message_pinned": "A pinned message cannot be deleted: unpin it first.",
    "pin_limit": f"A channel has at most {MAX_PINS} pinned messages.",
    "already_pinned": "A message is pinned at most once.",
    "not_pinned": "Only a pinned message can be unpinned.",
    "already_reacted": "A person reacts to a message with the same emoji at most once.",
    "no_reaction": "Only your own existing reaction can be removed.",
    "unknown_emoji": "Reactions use the workspace's emoji set.",
    "unknown_mention": "An @mention must name an active person of the workspace.",
    "mention_not_in_channel": "In a private channel, @mentions must name its members.",
}


# ----------------------------------------------------------------- results
class PersonOut(TypedDict):
    user_id: str
    handle: str
    name: str
    title: str
    role: str
    active: bool


class MeOut(TypedDict):
    user_id: str
    handle: str
    name: str


class ChannelBrief(TypedDict):
    channel_id: str
    name: str
    topic: str
    is_private: bool
    archived: bool
    is_member: bool
    member_count: int
    message_count: int
    last_message_at: str | None


class WorkspaceOut(TypedDict):
    workspace_id: str
    name: str
    domain: str
    my_role: str
    channels: list[ChannelBrief]
    people: list[PersonOut]


class ChannelsOut(TypedDict):
    me: MeOut
    workspaces: list[WorkspaceOut]


class ReactionOut(TypedDict):
    emoji: str
    count: int
    by: list[str]
    mine: bool


class MessageOut(TypedDict):
    message_id: str
    channel_id: str
    author_id: str
    author: str
    text: str
    posted_at: str
    version: int
    edited_at: str | None
    deleted: bool
    thread_root_id: str | None
    reply_count: int
    last_reply_at: str | None
    reactions: list[ReactionOut]
    mentions: list[str]
    pinned: bool


class VersionOut(TypedDict):
    version: int
    kind: str
    text: str
    at: str


class HistoryMessage(MessageOut):
    history: list[VersionOut]


class MemberOut(TypedDict):
    user_id: str
    handle: str
    name: str


class PinOut(TypedDict):
    message_id: str
    author: str
    preview: str
    pinned_by: str
    pinned_at: str


class ChannelDetail(TypedDict):
    channel_id: str
    workspace_id: str
    name: str
    topic: str
    is_private: bool
    archived: bool
    is_member: bool
    members: list[MemberOut]
    pins: list[PinOut]
    total_messages: int
    messages: list[MessageOut]


class ThreadOut(TypedDict):
    channel_id: str
    channel_name: str
    thread_root_id: str
    reply_count: int
    root: HistoryMessage
    replies: list[HistoryMessage]


class SearchHit(MessageOut):
    workspace_id: str
    channel_name: str


class SearchOut(TypedDict):
    total: int
    messages: list[SearchHit]


class ReplyOut(MessageOut):
    thread_reply_count: int


class ReactionResult(TypedDict):
    message_id: str
    channel_id: str
    emoji: str
    action: str
    reaction_count: int
    reactions: list[ReactionOut]


class PinResult(TypedDict):
    message_id: str
    channel_id: str
    pinned: bool
    pin_count: int
    pins: list[PinOut]


class MembershipOut(TypedDict):
    channel_id: str
    name: str
    user_id: str
    handle: str
    joined_self: bool
    member_count: int
    members: list[MemberOut]


# -------------------------------------------------------------- statements
# The tools read and write through these (ctx.sql): compiled once, run on SQLite directly.
workspaces_t, users_t, seats_t = Workspace.__table__, User.__table__, WorkspaceMember.__table__
channels_t, channel_members_t = Channel.__table__, ChannelMember.__table__
messages_t, pins_t = Message.__table__, Pin.__table__
authors, pinners = users_t.alias("authors"), users_t.alias("pinners")

ME = Query(select(users_t).join(Me.__table__, Me.user_id == User.id).where(Me.id == 1))
USER = Query(select(users_t).where(User.id == bindparam("id")))
USER_BY_HANDLE = Query(select(users_t).where(User.handle == bindparam("handle")))
USER_HANDLE = Query(select(User.handle).where(User.id == bindparam("id")))
SEAT = Query(
    select(seats_t).where(
        WorkspaceMember.workspace_id == bindparam("workspace_id"),
        WorkspaceMember.user_id == bindparam("user_id"),
    )
)
_MY_WORKSPACE_IDS = select(WorkspaceMember.workspace_id).where(  # a subquery
    WorkspaceMember.user_id == bindparam("me")
)
_MY_CHANNEL_IDS = select(ChannelMember.channel_id).where(  # a subquery
    ChannelMember.user_id == bindparam("me")
)
# a message ``me`` can read (of a channel joined to Message), in SQL: not deleted, in a
# channel of my workspaces that is public or that I am in (_readable's rule)
_LIVE_AND_READABLE = (
    Message.deleted.is_(False),
    Channel.workspace_id.in_(_MY_WORKSPACE_IDS),
    or_(Channel.is_private.is_(False), Channel.id.in_(_MY_CHANNEL_IDS)),
)
_MY_WORKSPACES = (  # my workspaces with my role in each
    select(workspaces_t, WorkspaceMember.role)
    .join(WorkspaceMember, WorkspaceMember.workspace_id == Workspace.id)
    .where(WorkspaceMember.user_id == bindparam("me"))
)
MY_WORKSPACES = Query(_MY_WORKSPACES.order_by(Workspace.id))
MY_WORKSPACE = Query(_MY_WORKSPACES.where(Workspace.id == bindparam("workspace_id")))
PEOPLE = Query(  # a workspace's people with their seats, A to Z by handle
    select(
        User.id, User.handle, User.name, User.title, WorkspaceMember.role, WorkspaceMember.active
    )
    .select_from(seats_t.join(users_t, User.id == WorkspaceMember.user_id))
    .where(WorkspaceMember.workspace_id == bindparam("workspace_id"))
    .order_by(User.handle, User.id)
)
ACTIVE_PEOPLE = Query(  # the active people of my workspaces
    select(WorkspaceMember.user_id, WorkspaceMember.workspace_id, User.handle, User.name)
    .select_from(seats_t.join(users_t, User.id == WorkspaceMember.user_id))
    .where(WorkspaceMember.workspace_id.in_(_MY_WORKSPACE_IDS), WorkspaceMember.active.is_(True))
    .order_by(WorkspaceMember.user_id, WorkspaceMember.workspace_id)
)

CHANNEL = Query(select(channels_t).where(Channel.id == bindparam("id")))
CHANNELS = Query(select(channels_t).order_by(Channel.id))
WORKSPACE_CHANNELS = Query(
    select(channels_t)
    .where(Channel.workspace_id == bindparam("workspace_id"))
    .order_by(Channel.name, Channel.id)
)
IN_CHANNEL = Query(
    select(ChannelMember.user_id).where(
        ChannelMember.channel_id == bindparam("channel_id"),
        ChannelMember.user_id == bindparam("user_id"),
    )
)
MEMBER_COUNT = Query(
    select(func.count())
    .select_from(channel_members_t)
    .where(ChannelMember.channel_id == bindparam("channel_id"))
)
MEMBERS = Query(  # a channel's members, A to Z by handle
    select(User.id, User.handle, User.name)
    .join(ChannelMember, ChannelMember.user_id == User.id)
    .where(ChannelMember.channel_id == bindparam("channel_id"))
    .order_by(User.handle, User.id)
)
ADDABLE = Query(  # an active person of the workspace who is not in the channel yet
    select(WorkspaceMember.user_id)
    .where(
        WorkspaceMember.workspace_id == bindparam("workspace_id"),
        WorkspaceMember.active.is_(True),
        WorkspaceMember.user_id.not_in(
            select(ChannelMember.user_id).where(ChannelMember.channel_id == bindparam("channel_id"))
        ),
    )
    .order_by(func.substr(WorkspaceMember.user_id, -2), WorkspaceMember.user_id)
    .limit(1)
)

MESSAGE = Query(select(messages_t).where(Message.id == bindparam("id")))
_TOP_LEVEL = (Message.channel_id == bindparam("channel_id"), Message.thread_root_id.is_(None))
TOP_LEVEL_STATS = Query(  # how many top-level messages a channel has, and the latest's time
    select(func.count(Message.id).label("messages"), func.max(Message.created_at).label("latest"))
    .select_from(messages_t)
    .where(*_TOP_LEVEL)
)
LATEST_TOP_LEVEL = Query(
    select(messages_t)
    .where(*_TOP_LEVEL)
    .order_by(Message.created_at.desc(), Message.id.desc())
    .limit(bindparam("limit"))
)
THREAD_REPLIES = Query(
    select(messages_t)
    .where(Message.thread_root_id == bindparam("root_id"))
    .order_by(Message.created_at, Message.id)
)
LIVE_MESSAGES = Query(  # the messages ``me`` can read
    select(
        Message.id,
        Message.channel_id,
        Message.author_id,
        Message.thread_root_id,
        Channel.workspace_id,
    )
    .join(Channel, Channel.id == Message.channel_id)
    .where(*_LIVE_AND_READABLE)
    .order_by(Message.id)
)
# What a message shows besides its row, read for a list of messages (``ids``) at once: one
# statement each however many messages a list or a thread has, grouped by message in Python
# (each ordered by message first, then as the relationship orders one message's).
_IDS: BindParameter[str] = bindparam("ids", expanding=True)
EXTRAS_OF = Query(  # each message's author's handle, and its pin (None: not pinned)
    select(Message.id, User.handle, Pin.id.label("pin_id"))
    .select_from(
        messages_t.outerjoin(users_t, User.id == Message.author_id).outerjoin(
            pins_t, Pin.message_id == Message.id
        )
    )
    .where(Message.id.in_(_IDS))
)
VERSIONS_OF = Query(  # Message.versions
    select(
        MessageVersion.message_id,
        MessageVersion.number,
        MessageVersion.kind,
        MessageVersion.text,
        MessageVersion.created_at,
    )
    .where(MessageVersion.message_id.in_(_IDS))
    .order_by(MessageVersion.message_id, MessageVersion.number)
)
MENTIONED_OF = Query(  # the handles each version @mentions (Message.mentions' order)
    select(Mention.message_id, Mention.version, User.handle)
    .join(Mention, Mention.user_id == User.id)
    .where(Mention.message_id.in_(_IDS))
    .order_by(Mention.message_id, Mention.version, Mention.user_id)
)

REACTIONS_OF = Query(  # Message.reactions with who reacted: by emoji, then time
    select(Reaction.message_id, Reaction.emoji, Reaction.user_id, User.handle)
    .join(User, User.id == Reaction.user_id)
    .where(Reaction.message_id.in_(_IDS))
    .order_by(Reaction.message_id, Reaction.emoji, Reaction.created_at, Reaction.id)
)
MY_REACTION = Query(
    select(Reaction.id).where(
        Reaction.message_id == bindparam("message_id"),
        Reaction.user_id == bindparam("user_id"),
        Reaction.emoji == bindparam("emoji"),
    )
)
MY_EMOJI = Query(
    select(Reaction.message_id, Reaction.emoji)
    .where(Reaction.user_id == bindparam("me"))
    .order_by(Reaction.id)
)
DELETE_REACTION = Query(delete(Reaction).where(Reaction.id == bindparam("id")))

PIN_OF = Query(select(Pin.id).where(Pin.message_id == bindparam("message_id")))
PINNED_IDS = Query(select(Pin.message_id).order_by(Pin.message_id))
PIN_COUNT = Query(
    select(func.count()).select_from(pins_t).where(Pin.channel_id == bindparam("channel_id"))
)
OLDEST_PIN = Query(
    select(Pin.message_id)
    .where(Pin.channel_id == bindparam("channel_id"))
    .order_by(Pin.pinned_at, Pin.id)
    .limit(1)
)
PINS = Query(  # Channel.pins, newest first, with the message and the people's handles
    select(
        Pin.message_id,
        authors.c.handle.label("author"),
        Message.text,
        pinners.c.handle.label("pinned_by"),
        Pin.pinned_at,
    )
    .select_from(
        pins_t.join(messages_t, Message.id == Pin.message_id)
        .join(authors, authors.c.id == Message.author_id)
        .join(pinners, pinners.c.id == Pin.pinned_by)
    )
    .where(Pin.channel_id == bindparam("channel_id"))
    .order_by(Pin.pinned_at.desc(), Pin.id.desc())
)
DELETE_PIN = Query(delete(Pin).where(Pin.id == bindparam("id")))


@functools.cache
def _messages_matching(
    by_workspace: bool, by_channel: bool, by_author: bool, by_text: bool, mentions_me: bool
) -> tuple[Query, Query]:
    """How many messages I can read match the filters given, and the newest ``limit`` of them
    with their channel's workspace and name: search_messages'."""
    conditions: list[Any] = list(_LIVE_AND_READABLE)
    if by_workspace:
        conditions.append(Channel.workspace_id == bindparam("workspace_id"))
    if by_channel:
        conditions.append(Channel.id == bindparam("channel_id"))
    if by_author:
        conditions.append(Message.author_id == bindparam("author_id"))
    if by_text:
        conditions.append(contains(bindparam("pattern"), Message.text))
    if mentions_me:
        conditions.append(
            select(Mention.user_id)
            .where(
                Mention.message_id == Message.id,
                Mention.version == Message.version,
                Mention.user_id == bindparam("me"),
            )
            .exists()
        )
    found = messages_t.join(channels_t, Channel.id == Message.channel_id)
    count = Query(select(func.count()).select_from(found).where(*conditions))
    page = Query(
        select(messages_t, Channel.workspace_id, Channel.name.label("channel_name"))
        .select_from(found)
        .where(*conditions)
        .order_by(Message.created_at.desc(), Message.id.desc())
        .limit(bindparam("limit"))
    )
    return count, page


# ----------------------------------------------------------------- helpers
def _broken(rule: str, detail: str) -> PreconditionFailed:
    """The error for a failed business rule: it names the rule, then says what to do."""
    return PreconditionFailed(f"Rule '{rule}' failed: {detail}")


def _denied(rule: str, detail: str) -> PermissionDenied:
    return PermissionDenied(f"Rule '{rule}' failed: {detail}")


def _stamp(value: dt.datetime | None) -> str | None:
    return value.isoformat(timespec="minutes") if value is not None else None


def _now(ctx: ToolContext) -> dt.datetime:
    return ctx.now.replace(microsecond=0)


def _me(ctx: ToolContext) -> Any:
    """The signed-in person's row of ``users``: the one the task signs in (from env version
    1), else the one the state's Me row names."""
    if ctx.principal is not None:
        return ctx.sql.one(USER, id=ctx.principal)
    return ctx.sql.one(ME)


def message_of_someone_else(ctx: ToolContext, rng: random.Random, bound: Bound) -> str | None:
    """The message in ``message_id`` if a person would react or reply to it: someone
    else's and not deleted (nobody gives their own message a +1 or answers it "Agreed");
    None otherwise, so synthesis draws another."""
    row = ctx.sql.first(MESSAGE, id=str(bound.args.get("message_id", "")))
    if row is None or row.deleted or row.author_id == _me(ctx).id:
        return None
    return str(row.id)


def message_with_replies(ctx: ToolContext, rng: random.Random, bound: Bound) -> str | None:
    """The message in ``message_id`` if asking what people replied to it makes sense: a
    thread's first message, there before the conversation began (one just posted has no
    replies to read), with replies; None otherwise (a reply, whose thread is another's),
    so synthesis draws another."""
    row = ctx.sql.first(MESSAGE, id=str(bound.args.get("message_id", "")))
    if row is None or row.deleted or row.thread_root_id is not None or row.created_at >= _now(ctx):
        return None
    return str(row.id) if row.reply_count > 0 else None


def _seat(ctx: ToolContext, workspace_id: str, user_id: str) -> Any | None:
    return ctx.sql.first(SEAT, workspace_id=workspace_id, user_id=user_id)


def _in_channel(ctx: ToolContext, channel_id: str, user_id: str) -> bool:
    return ctx.sql.first(IN_CHANNEL, channel_id=channel_id, user_id=user_id) is not None


def _label(ch: Any) -> str:
    return f"#{ch.name} ({ch.id})"


def _readable(ctx: ToolContext, ch: Any, me: Any) -> bool:
    if _seat(ctx, ch.workspace_id, me.id) is None:
        return False
    return not ch.is_private or _in_channel(ctx, ch.id, me.id)


def _require_read(ctx: ToolContext, ch: Any, me: Any) -> Any:
    """Refuse unless ``me`` may read channel ``ch``; my seat in its workspace."""
    seat = _seat(ctx, ch.workspace_id, me.id)
    if seat is None:
        raise _denied(
            "not_in_workspace",
            f"you are not in the workspace of {ch.id}; only channels of your own workspaces "
            "can be read.",
        )
    if ch.is_private and not _in_channel(ctx, ch.id, me.id):
        raise _denied(
            "private_channel",
            f"{ch.id} is a private channel and you are not a member, so it cannot be read or "
            "used. Ask one of its members to add you.",
        )
    return seat


def _require_write(ctx: ToolContext, ch: Any, me: Any, doing: str) -> None:
    """The channel is readable, not archived and ``me`` is a member: may ``doing`` happen."""
    _require_read(ctx, ch, me)
    if ch.archived:
        raise _broken(
            "channel_archived",
            f"{_label(ch)} is archived and read-only, so you cannot {doing} there. Use an "
            "active channel instead.",
        )
    if not _in_channel(ctx, ch.id, me.id):
        raise _broken(
            "not_a_member",
            f"you are not a member of {_label(ch)}, so you cannot {doing} there. It is public: "
            f"join it first with add_channel_member (user_id {me.id}), then try again.",
        )


def _require_live(m: Any, doing: str) -> None:
    if m.deleted:
        raise _broken(
            "message_deleted",
            f"{m.id} was deleted (only its earlier versions remain in the history), so you "
            f"cannot {doing} it. Pick a message that still exists.",
        )


def _mentions(ctx: ToolContext, ch: Any, text: str) -> list[Any]:
    """The people ``text`` @mentions; refuses unknown, deactivated or (private) outside ones."""
    people: list[Any] = []
    for handle in mentioned_handles(text):
        user = ctx.sql.first(USER_BY_HANDLE, handle=handle)
        seat = _seat(ctx, ch.workspace_id, user.id) if user is not None else None
        if user is None or seat is None:
            raise _broken(
                "unknown_mention",
                f"nobody in this workspace has the handle @{handle}; nothing was posted. "
                "Check the handle in the workspace's people list, or write the text "
                "without the @.",
            )
        if not seat.active:
            raise _broken(
                "user_deactivated",
                f"@{handle} ({user.name}) has a deactivated account and cannot be mentioned; "
                "nothing was posted. Leave out the mention.",
            )
        if ch.is_private and not _in_channel(ctx, ch.id, user.id):
            raise _broken(
                "mention_not_in_channel",
                f"@{handle} is not a member of the private channel {_label(ch)} and could "
                "not read the message; nothing was posted. Add them to the channel first, "
                "or leave out the mention.",
            )
        people.append(user)
    return people


def _clean(text: str) -> str:
    body = "\n".join(line.rstrip() for line in text.strip().splitlines())
    if not body:
        raise InvalidArgument("text must not be empty or blank; write the message's words.")
    return body


def _reactions_of(ctx: ToolContext, messages: list[Any], me: Any) -> dict[str, list[ReactionOut]]:
    """The reactions of each message by its id, by emoji; none for a deleted message."""
    live = [m.id for m in messages if not m.deleted]
    if not live:
        return {}
    out: dict[str, dict[str, ReactionOut]] = {}
    for r in ctx.sql.all(REACTIONS_OF, ids=live):  # by message, then emoji, then time
        entry = out.setdefault(r.message_id, {}).setdefault(
            r.emoji, {"emoji": r.emoji, "count": 0, "by": [], "mine": False}
        )
        entry["count"] += 1
        entry["by"].append(r.handle)
        entry["mine"] = entry["mine"] or r.user_id == me.id
    return {message_id: list(by_emoji.values()) for message_id, by_emoji in out.items()}


def _reactions(ctx: ToolContext, m: Any, me: Any) -> list[ReactionOut]:
    return _reactions_of(ctx, [m], me).get(m.id, [])


def _messages_out(ctx: ToolContext, messages: list[Any], me: Any) -> list[MessageOut]:
    """Messages' rows as lists show them (rows of ``messages``), in the order given."""
    if not messages:
        return []
    ids = [m.id for m in messages]
    extras = {e.id: e for e in ctx.sql.all(EXTRAS_OF, ids=ids)}
    reactions = _reactions_of(ctx, messages, me)
    mentions: dict[tuple[str, int], list[str]] = {}
    for row in ctx.sql.all(MENTIONED_OF, ids=ids):
        mentions.setdefault((row.message_id, row.version), []).append(row.handle)
    return [
        {
            "message_id": m.id,
            "channel_id": m.channel_id,
            "author_id": m.author_id,
            "author": extras[m.id].handle,
            "text": m.text,
            "posted_at": m.created_at.isoformat(timespec="minutes"),
            "version": m.version,
            "edited_at": _stamp(m.edited_at),
            "deleted": m.deleted,
            "thread_root_id": m.thread_root_id,
            "reply_count": m.reply_count,
            "last_reply_at": _stamp(m.last_reply_at),
            "reactions": reactions.get(m.id, []),
            "mentions": mentions.get((m.id, m.version), []),
            "pinned": extras[m.id].pin_id is not None,
        }
        for m in messages
    ]


def _message_out(ctx: ToolContext, m: Any, me: Any) -> MessageOut:
    """A message's row as lists show it (``m``: a row of ``messages``)."""
    return _messages_out(ctx, [m], me)[0]


def _histories_out(ctx: ToolContext, messages: list[Any], me: Any) -> list[HistoryMessage]:
    """Messages as lists show them, each with its history (every version, oldest first)."""
    if not messages:
        return []
    history: dict[str, list[VersionOut]] = {}
    for v in ctx.sql.all(VERSIONS_OF, ids=[m.id for m in messages]):
        history.setdefault(v.message_id, []).append(
            {
                "version": v.number,
                "kind": v.kind,
                "text": v.text,
                "at": v.created_at.isoformat(timespec="minutes"),
            }
        )
    return [
        {**out, "history": history.get(m.id, [])}
        for m, out in zip(messages, _messages_out(ctx, messages, me), strict=True)
    ]


def _history_out(ctx: ToolContext, m: Any, me: Any) -> HistoryMessage:
    return _histories_out(ctx, [m], me)[0]


def _pins(ctx: ToolContext, channel_id: str) -> list[PinOut]:
    return [
        {
            "message_id": p.message_id,
            "author": p.author,
            "preview": preview(p.text),
            "pinned_by": p.pinned_by,
            "pinned_at": p.pinned_at.isoformat(timespec="minutes"),
        }
        for p in ctx.sql.all(PINS, channel_id=channel_id)
    ]


def _members(ctx: ToolContext, channel_id: str) -> list[MemberOut]:
    return [
        {"user_id": u.id, "handle": u.handle, "name": u.name}
        for u in ctx.sql.all(MEMBERS, channel_id=channel_id)
    ]


def _insert_mentions(ctx: ToolContext, message_id: str, version: int, people: list[Any]) -> None:
    rows = [{"message_id": message_id, "version": version, "user_id": u.id} for u in people]
    ctx.sql.insert_many(Mention, rows)


def _append_version(ctx: ToolContext, m: Any, kind: str, text: str, **changes: Any) -> Any:
    """Give message ``m`` a new version (and set ``changes`` on it); its updated row."""
    number = m.version + 1
    m = ctx.sql.update(Message, m, version=number, text=text, **changes)
    ctx.sql.insert(
        MessageVersion,
        id=next_id(ctx, MessageVersion.id, "ver", 5),
        message_id=m.id,
        number=number,
        kind=kind,
        text=text,
        created_at=_now(ctx),
    )
    return m


def _new_message(ctx: ToolContext, ch: Any, me: Any, text: str, root: Any | None) -> Any:
    """Post ``text`` in ``ch`` (in the thread of ``root``): version 1 and its mentions; its row."""
    people = _mentions(ctx, ch, text)
    now = _now(ctx)
    message_id = next_id(ctx, Message.id, "msg", 5)
    ctx.sql.insert(
        Message,
        id=message_id,
        channel_id=ch.id,
        author_id=me.id,
        thread_root_id=root.id if root is not None else None,
        text=text,
        version=1,
        deleted=False,
        created_at=now,
        edited_at=None,
        reply_count=0,
        last_reply_at=None,
        reaction_count=0,
    )
    ctx.sql.insert(
        MessageVersion,
        id=next_id(ctx, MessageVersion.id, "ver", 5),
        message_id=message_id,
        number=1,
        kind="posted",
        text=text,
        created_at=now,
    )
    _insert_mentions(ctx, message_id, 1, people)
    return ctx.sql.one(MESSAGE, id=message_id)


def _emoji(value: str) -> str:
    name = value.strip().strip(":").lower()
    if name not in EMOJI:
        raise InvalidArgument(
            f"Rule 'unknown_emoji' failed: :{name}: is not in this workspace's emoji set. "
            f"Use one of: {', '.join(EMOJI)}."
        )
    return name


# -------------------------------------------------------- example values
FAVOURITES = ("+1", "eyes", "white_check_mark", "tada", "heart", "rocket", "raised_hands", "pray")


def _search_word(ctx: ToolContext, rng: random.Random) -> str:
    words = [
        "deploy",
        "release",
        "lunch",
        "Phoenix",
        "Atlas",
        "Acme",
        "Globex",
        "postmortem",
        "offer",
        "Figma",
        "survey",
        "ticket",
    ]
    return rng.choice(words)


POSTS = [
    "Standup is moved to 10:30 tomorrow.",
    "The staging environment is back up, thanks for your patience.",
    "Reminder: please update your tickets before the sprint review.",
    "I'm out of office on Friday, ping me before Thursday if you need anything.",
    "Deploy of the billing service is done, all checks green.",
    "Notes from today's sync are in the shared drive.",
]
REPLIES = [
    "Thanks, I'll take a look this afternoon.",
    "Done, let me know if anything is still off.",
    "Can we discuss this in standup tomorrow?",
    "Agreed, let's go with that.",
    "I can pick this up.",
]
EDITS = [
    "Correction: the meeting is at 3pm, not 2pm.",
    "Update: this is fixed now, thanks everyone.",
    "Edited: the doc link is in the channel topic.",
    "Please ignore the earlier numbers, the final count is 42.",
]


# ------------------------------------------------------------------- tools
@server.tool(
    returns=("workspace", "channel", "user"),
    phrasings=[
        "Which channels can I see in {workspace_id}?",
        "Find the {query} channel",
        "Is there a {query} channel in our workspace?",
    ],
    examples={"query": ["engineering", "design", "support", "releases", "random"]},
)
def list_channels(
    ctx: ToolContext,
    workspace_id: WorkspaceRow | None = None,
    query: SearchText | None = None,
) -> ChannelsOut:
    """List my workspaces with the channels I can see and the people in them.

    Private channels appear only to their members. Each channel says whether I am a member
    (is_member) and whether it is private or archived; people carry the @handle used to
    mention them.

    Args:
        workspace_id: Only this workspace, such as "ws_01"; leave it out for all of mine.
        query: Case-insensitive text matched against channel names and topics and against
            people's names, handles and titles, such as "design" or "garcia"; leave it out
            to list everything.

    Returns:
        {"me": {"user_id": "usr_001", "handle": "jlee", ...}, "workspaces":
        [{"workspace_id": "ws_01", "name": "Northwind Labs", "my_role": "admin",
        "channels": [{"channel_id": "chan_003", "name": "engineering", "is_private": false,
        "archived": false, "is_member": true, "member_count": 12, ...}],
        "people": [{"user_id": "usr_017", "handle": "mgarcia", "name": "Maria Garcia",
        "role": "member", "active": true, ...}]}]}.
    """
    me = _me(ctx)
    text = (query or "").strip().lower()
    if workspace_id is not None:
        if _seat(ctx, workspace_id.id, me.id) is None:
            raise _denied(
                "not_in_workspace",
                f"you are not a member of {workspace_id.id}; leave out workspace_id to see "
                "your workspaces.",
            )
        workspaces = ctx.sql.all(MY_WORKSPACE, me=me.id, workspace_id=workspace_id.id)
    else:
        workspaces = ctx.sql.all(MY_WORKSPACES, me=me.id)
    out: list[WorkspaceOut] = []
    for ws in workspaces:
        channels: list[ChannelBrief] = []
        for ch in ctx.sql.all(WORKSPACE_CHANNELS, workspace_id=ws.id):
            member = _in_channel(ctx, ch.id, me.id)
            if ch.is_private and not member:
                continue
            if text and text not in ch.name.lower() and text not in ch.topic.lower():
                continue
            top = ctx.sql.one(TOP_LEVEL_STATS, channel_id=ch.id)
            channels.append(
                {
                    "channel_id": ch.id,
                    "name": ch.name,
                    "topic": ch.topic,
                    "is_private": ch.is_private,
                    "archived": ch.archived,
                    "is_member": member,
                    "member_count": ctx.sql.scalar(MEMBER_COUNT, channel_id=ch.id),
                    "message_count": top.messages,
                    "last_message_at": _stamp(top.latest),
                }
            )
        people: list[PersonOut] = []
        for u in ctx.sql.all(PEOPLE, workspace_id=ws.id):
            if text and not any(text in f.lower() for f in (u.name, u.handle, u.title)):
                continue
            people.append(
                {
                    "user_id": u.id,
                    "handle": u.handle,
                    "name": u.name,
                    "title": u.title,
                    "role": u.role,
                    "active": u.active,
                }
            )
        out.append(
            {
                "workspace_id": ws.id,
                "name": ws.name,
                "domain": ws.domain,
                "my_role": ws.role,
                "channels": channels,
                "people": people,
            }
        )
    return {"me": {"user_id": me.id, "handle": me.handle, "name": me.name}, "workspaces": out}


@server.tool(
    returns=("channel", "message", "user"),
    phrasings=[
        "What's new in {channel_id}?",
        "Show me the last {limit} messages in {channel_id}",
        "What's pinned in channel {channel_id}?",
    ],
    examples={"limit": [5, 10, 20]},
)
def read_channel(ctx: ToolContext, channel_id: ChannelRow, limit: Limit = 20) -> ChannelDetail:
    """Read a channel: its members, pinned messages and latest top-level messages, newest first.

    Replies are not listed here: a message with reply_count > 0 has a thread (see
    get_thread). A deleted message shows as deleted with empty text. Public channels can be
    read without joining; private ones only by members.

    Args:
        channel_id: The channel, such as "chan_004" (see list_channels).
        limit: How many top-level messages to return (1-50), such as 20.

    Returns:
        {"channel_id": "chan_004", "name": "engineering", "is_member": true, "members":
        [{"user_id": "usr_017", "handle": "mgarcia", ...}], "pins": [{"message_id":
        "msg_00388", "preview": "Release 3.2.0 is out...", ...}], "total_messages": 27,
        "messages": [{"message_id": "msg_00412", "author": "mgarcia", "text": "...",
        "reply_count": 3, "reactions": [{"emoji": "tada", "count": 2, "by": ["jlee",
        "tkim"], "mine": true}], "version": 1, "pinned": false, ...}]}.
    """
    ch = channel_id
    me = _me(ctx)
    _require_read(ctx, ch, me)
    total = ctx.sql.one(TOP_LEVEL_STATS, channel_id=ch.id).messages
    messages = ctx.sql.all(LATEST_TOP_LEVEL, channel_id=ch.id, limit=limit)
    return {
        "channel_id": ch.id,
        "workspace_id": ch.workspace_id,
        "name": ch.name,
        "topic": ch.topic,
        "is_private": ch.is_private,
        "archived": ch.archived,
        "is_member": _in_channel(ctx, ch.id, me.id),
        "members": _members(ctx, ch.id),
        "pins": _pins(ctx, ch.id),
        "total_messages": total,
        "messages": _messages_out(ctx, messages, me),
    }


@server.tool(
    returns=("message", "channel"),
    values={"message_id": message_with_replies},
    phrasings=[
        "Show me the thread on {message_id}",
        "What did people reply to {message_id}?",
    ],
)
def get_thread(ctx: ToolContext, message_id: MessageRow) -> ThreadOut:
    """Show a message's thread: the root message and every reply, oldest reply first.

    Given a reply, it shows the whole thread the reply belongs to. Each message carries its
    full history: version 1 is what was first posted, later versions are edits, and a
    deletion adds a last, empty version of kind "deleted".

    Args:
        message_id: Any message of the thread, such as "msg_00412".

    Returns:
        {"channel_id": "chan_004", "channel_name": "engineering", "thread_root_id":
        "msg_00412", "reply_count": 2, "root": {"message_id": "msg_00412", "text": "...",
        "version": 2, "history": [{"version": 1, "kind": "posted", "text": "...", "at":
        "2026-03-02T09:14"}, {"version": 2, "kind": "edited", ...}], ...}, "replies":
        [{"message_id": "msg_00415", "thread_root_id": "msg_00412", ...}]}.
    """
    me = _me(ctx)
    root = message_id
    if root.thread_root_id is not None:
        root = ctx.sql.one(MESSAGE, id=root.thread_root_id)
    ch = ctx.sql.one(CHANNEL, id=root.channel_id)
    _require_read(ctx, ch, me)
    replies = ctx.sql.all(THREAD_REPLIES, root_id=root.id)
    root_out, *replies_out = _histories_out(ctx, [root, *replies], me)
    return {
        "channel_id": ch.id,
        "channel_name": ch.name,
        "thread_root_id": root.id,
        "reply_count": root.reply_count,
        "root": root_out,
        "replies": replies_out,
    }


@server.tool(
    returns=("message", "channel", "user"),
    phrasings=[
        "Search our chat for messages about {query}",
        "Find what {author_id} wrote about {query}",
        "Find messages in {channel_id} that mention {query}",
    ],
    examples={"query": _search_word},
)
def search_messages(
    ctx: ToolContext,
    query: SearchText | None = None,
    workspace_id: WorkspaceRow | None = None,
    channel_id: ChannelRow | None = None,
    author_id: UserRow | None = None,
    mentions_me: bool = False,
    limit: Limit = 20,
) -> SearchOut:
    """Search the current text of messages (threads included) in every channel I can read.

    Deleted messages are never found; an edited message is found by its newest text.
    Results are newest first.

    Args:
        query: Case-insensitive text in the message, such as "deploy" or "@mgarcia"; leave
            it out to list the latest messages that match the other filters.
        workspace_id: Only this workspace, such as "ws_01".
        channel_id: Only this channel, such as "chan_004".
        author_id: Only messages written by this person, such as "usr_017".
        mentions_me: true for only the messages that @mention me.
        limit: Maximum number of messages to return (1-50), such as 20.

    Returns:
        {"total": 4, "messages": [{"message_id": "msg_00412", "workspace_id": "ws_01",
        "channel_id": "chan_004", "channel_name": "engineering", "author": "mgarcia",
        "text": "...", "thread_root_id": null, ...}]}; total counts every match.
    """
    me = _me(ctx)
    if channel_id is not None:
        _require_read(ctx, channel_id, me)
        if workspace_id is not None and channel_id.workspace_id != workspace_id.id:
            raise InvalidArgument(
                f"channel {channel_id.id} belongs to workspace {channel_id.workspace_id}, not "
                f"{workspace_id.id}; pass workspace_id {channel_id.workspace_id!r} or leave it "
                "out."
            )
    text = (query or "").strip().lower()
    params: dict[str, Any] = {"me": me.id}
    if workspace_id is not None:
        params["workspace_id"] = workspace_id.id
    if channel_id is not None:
        params["channel_id"] = channel_id.id
    if author_id is not None:
        params["author_id"] = author_id.id
    if text:
        params["pattern"] = search_pattern(text)
    count, page = _messages_matching(
        workspace_id is not None,
        channel_id is not None,
        author_id is not None,
        bool(text),
        mentions_me,
    )
    total = ctx.sql.scalar(count, **params)
    hits = ctx.sql.all(page, limit=limit, **params)
    return {
        "total": total,
        "messages": [
            {**out, "workspace_id": m.workspace_id, "channel_name": m.channel_name}
            for m, out in zip(hits, _messages_out(ctx, hits, me), strict=True)
        ],
    }


@server.tool(
    writes=True,
    returns="message",
    phrasings=[
        "Post '{text}' in {channel_id}",
        "Tell everyone in channel {channel_id}: {text}",
    ],
    examples={"text": POSTS},
)
def post_message(ctx: ToolContext, channel_id: ChannelRow, text: Text) -> MessageOut:
    """Post a new top-level message in a channel I am a member of.

    Write @handle to mention someone, such as "@mgarcia can you review?": they must be an
    active person of the workspace and, in a private channel, a member of it.

    Args:
        channel_id: The channel, such as "chan_004" (see list_channels).
        text: The message, at most 4000 characters, such as "Deploy is done, all green."

    Returns:
        {"message_id": "msg_00631", "channel_id": "chan_004", "author": "jlee", "text":
        "Deploy is done, all green.", "version": 1, "mentions": [], ...}.
    """
    me = _me(ctx)
    _require_write(ctx, channel_id, me, "post")
    m = _new_message(ctx, channel_id, me, _clean(text), None)
    return _message_out(ctx, m, me)


@server.tool(
    writes=True,
    returns="message",
    phrasings=[
        "Reply '{text}' to message {message_id}",
        "Answer in the thread of {message_id}: {text}",
    ],
    examples={"text": REPLIES},
    values={"message_id": message_of_someone_else},
)
def reply_in_thread(ctx: ToolContext, message_id: MessageRow, text: Text) -> ReplyOut:
    """Reply in a message's thread. Replying to a reply adds to the same thread (threads are
    one level deep).

    Args:
        message_id: The message to reply to, such as "msg_00412".
        text: The reply, at most 4000 characters, such as "On it, fix by noon."

    Returns:
        {"message_id": "msg_00632", "thread_root_id": "msg_00412", "thread_reply_count": 4,
        "text": "On it, fix by noon.", ...}.
    """
    me = _me(ctx)
    root = message_id
    if root.thread_root_id is not None:
        root = ctx.sql.one(MESSAGE, id=root.thread_root_id)
    ch = ctx.sql.one(CHANNEL, id=root.channel_id)
    _require_write(ctx, ch, me, "reply")
    _require_live(root, "reply to")
    reply = _new_message(ctx, ch, me, _clean(text), root)
    root = ctx.sql.update(
        Message, root, reply_count=root.reply_count + 1, last_reply_at=reply.created_at
    )
    return {**_message_out(ctx, reply, me), "thread_reply_count": root.reply_count}


@server.tool(
    writes=True,
    returns="message",
    phrasings=[
        "Change message {message_id} to say '{text}'",
        "Edit {message_id} so it reads: {text}",
    ],
    examples={"text": EDITS},
)
def edit_message(ctx: ToolContext, message_id: MessageRow, text: Text) -> HistoryMessage:
    """Edit one of my own messages: the new text becomes a new version; the old one is kept.

    Args:
        message_id: My message, such as "msg_00412" (its author must be me).
        text: The whole new text, at most 4000 characters, such as "Standup moved to 10:30."

    Returns:
        {"message_id": "msg_00412", "text": "Standup moved to 10:30.", "version": 2,
        "edited_at": "2026-03-14T09:00", "history": [{"version": 1, "kind": "posted", ...},
        {"version": 2, "kind": "edited", ...}], ...}.
    """
    me = _me(ctx)
    m = message_id
    ch = ctx.sql.one(CHANNEL, id=m.channel_id)
    _require_read(ctx, ch, me)
    if m.author_id != me.id:
        author = ctx.sql.scalar(USER_HANDLE, id=m.author_id)
        raise _broken(
            "not_author",
            f"{m.id} was written by @{author}, and only its author can edit it. "
            f"Post a correction or reply in its thread instead.",
        )
    _require_live(m, "edit")
    if ch.archived:
        raise _broken(
            "channel_archived",
            f"{_label(ch)} is archived and read-only, so its messages cannot be edited.",
        )
    body = _clean(text)
    if body == m.text:
        raise _broken(
            "edit_unchanged",
            f"{m.id} already says exactly that; nothing was changed. Send the new wording.",
        )
    if m.version >= MAX_VERSIONS:
        raise _broken(
            "edit_limit",
            f"{m.id} already has {m.version} versions, the most kept. Post a new message instead.",
        )
    people = _mentions(ctx, ch, body)
    m = _append_version(ctx, m, "edited", body, edited_at=_now(ctx))
    _insert_mentions(ctx, m.id, m.version, people)
    return _history_out(ctx, m, me)


@server.tool(
    writes=True,
    inverse_of="post_message",
    destructive=True,
    returns="message",
    phrasings=["Delete message {message_id}", "Remove {message_id} from the channel"],
)
def delete_message(ctx: ToolContext, message_id: MessageRow) -> HistoryMessage:
    """Delete a message: it shows as deleted from now on, and the history keeps every version.

    My own messages can always be deleted; other people's only where I am a workspace owner
    or admin. A pinned message must be unpinned first. Replies in its thread stay.

    Args:
        message_id: The message, such as "msg_00412".

    Returns:
        {"message_id": "msg_00412", "deleted": true, "text": "", "version": 3, "history":
        [..., {"version": 3, "kind": "deleted", "text": "", ...}], ...}.
    """
    me = _me(ctx)
    m = message_id
    ch = ctx.sql.one(CHANNEL, id=m.channel_id)
    seat = _require_read(ctx, ch, me)
    _require_live(m, "delete")
    if m.author_id != me.id and (seat is None or seat.role not in ("owner", "admin")):
        author = ctx.sql.scalar(USER_HANDLE, id=m.author_id)
        raise _broken(
            "not_author",
            f"{m.id} was written by @{author}; you may delete only your own messages "
            "here (your role in this workspace is "
            f"{seat.role if seat else 'none'}). Ask its author or a workspace admin.",
        )
    if ch.archived:
        raise _broken(
            "channel_archived",
            f"{_label(ch)} is archived and read-only, so its messages cannot be deleted.",
        )
    if ctx.sql.first(PIN_OF, message_id=m.id) is not None:
        raise _broken(
            "message_pinned",
            f"{m.id} is pinned in {_label(ch)}; nothing was deleted. Unpin it first, then "
            "delete it.",
        )
    if m.version >= MAX_VERSIONS:
        raise _broken("edit_limit", f"{m.id} already has {m.version} versions, the most kept.")
    m = _append_version(ctx, m, "deleted", "", deleted=True)
    return _history_out(ctx, m, me)


@server.tool(
    writes=True,
    returns="message",
    phrasings=[
        "React to {message_id} with :{emoji}:",
        "Add a {emoji} reaction to message {message_id}",
    ],
    examples={"emoji": ["+1", "eyes", "white_check_mark", "tada", "heart", "rocket"]},
    values={"message_id": message_of_someone_else},
)
def react(
    ctx: ToolContext, message_id: MessageRow, emoji: EmojiName, remove: bool = False
) -> ReactionResult:
    """Add my emoji reaction to a message, or take mine back with remove=true.

    Args:
        message_id: The message, such as "msg_00412".
        emoji: The emoji's short name, such as "tada", "+1", "eyes" or "white_check_mark"
            (":tada:" works too).
        remove: true to remove my existing reaction with that emoji instead of adding one.

    Returns:
        {"message_id": "msg_00412", "emoji": "tada", "action": "added", "reaction_count": 5,
        "reactions": [{"emoji": "tada", "count": 3, "by": ["jlee", ...], "mine": true}]}.
    """
    me = _me(ctx)
    m = message_id
    name = _emoji(emoji)
    _require_write(ctx, ctx.sql.one(CHANNEL, id=m.channel_id), me, "react")
    _require_live(m, "react to")
    mine = ctx.sql.scalar(MY_REACTION, message_id=m.id, user_id=me.id, emoji=name)
    if remove:
        if mine is None:
            raise _broken(
                "no_reaction",
                f"you have no :{name}: reaction on {m.id}, so there is nothing to remove.",
            )
        m = ctx.sql.update(Message, m, reaction_count=m.reaction_count - 1)
        ctx.sql.run(DELETE_REACTION, id=mine)
    else:
        if mine is not None:
            raise Conflict(
                f"Rule 'already_reacted' failed: you already reacted to {m.id} with :{name}:; "
                "nothing changed."
            )
        reaction_id = next_id(ctx, Reaction.id, "rxn", 5)
        m = ctx.sql.update(Message, m, reaction_count=m.reaction_count + 1)
        ctx.sql.insert(
            Reaction,
            id=reaction_id,
            message_id=m.id,
            user_id=me.id,
            emoji=name,
            created_at=_now(ctx),
        )
    return {
        "message_id": m.id,
        "channel_id": m.channel_id,
        "emoji": name,
        "action": "removed" if remove else "added",
        "reaction_count": m.reaction_count,
        "reactions": _reactions(ctx, m, me),
    }


@server.tool(
    writes=True,
    returns="message",
    phrasings=["Pin {message_id} in its channel", "Pin message {message_id} so everyone sees it"],
)
def pin_message(ctx: ToolContext, message_id: MessageRow, unpin: bool = False) -> PinResult:
    """Pin a message to the top of its channel, or unpin it with unpin=true.

    A channel holds at most 12 pins; a deleted message cannot be pinned.

    Args:
        message_id: The message, such as "msg_00412".
        unpin: true to unpin the message instead of pinning it.

    Returns:
        {"message_id": "msg_00412", "channel_id": "chan_004", "pinned": true, "pin_count": 3,
        "pins": [{"message_id": "msg_00412", "preview": "...", "pinned_by": "jlee", ...}]}.
    """
    me = _me(ctx)
    m = message_id
    ch = ctx.sql.one(CHANNEL, id=m.channel_id)
    _require_write(ctx, ch, me, "unpin messages" if unpin else "pin messages")
    pin = ctx.sql.scalar(PIN_OF, message_id=m.id)
    if unpin:
        if pin is None:
            raise _broken("not_pinned", f"{m.id} is not pinned in {_label(ch)}; nothing to unpin.")
        ctx.sql.run(DELETE_PIN, id=pin)
    else:
        _require_live(m, "pin")
        if pin is not None:
            raise Conflict(
                f"Rule 'already_pinned' failed: {m.id} is already pinned in {_label(ch)}."
            )
        count = ctx.sql.scalar(PIN_COUNT, channel_id=ch.id)
        if count >= MAX_PINS:
            oldest = ctx.sql.scalar(OLDEST_PIN, channel_id=ch.id)
            raise _broken(
                "pin_limit",
                f"{_label(ch)} already has {count} pinned messages, the most allowed; nothing "
                f"was pinned. Unpin one first (the oldest pin is {oldest}).",
            )
        ctx.sql.insert(
            Pin,
            id=next_id(ctx, Pin.id, "pin", 4),
            channel_id=ch.id,
            message_id=m.id,
            pinned_by=me.id,
            pinned_at=_now(ctx),
        )
    pins = _pins(ctx, ch.id)
    return {
        "message_id": m.id,
        "channel_id": ch.id,
        "pinned": not unpin,
        "pin_count": len(pins),
        "pins": pins,
    }


@server.tool(
    writes=True,
    returns=("channel", "user"),
    phrasings=[
        "Add {user_id} to channel {channel_id}",
        "Invite {user_id} to {channel_id}",
    ],
)
def add_channel_member(ctx: ToolContext, channel_id: ChannelRow, user_id: UserRow) -> MembershipOut:
    """Add a person to a channel; pass my own user id to join a public channel myself.

    Only members of a channel can add others; nobody can join a private channel by
    themselves. The person must have an active account in the channel's workspace.

    Args:
        channel_id: The channel, such as "chan_004" (see list_channels).
        user_id: The person to add, such as "usr_017", or my own id (list_channels' "me")
            to join.

    Returns:
        {"channel_id": "chan_004", "name": "engineering", "user_id": "usr_017", "handle":
        "mgarcia", "joined_self": false, "member_count": 13, "members": [...]}.
    """
    me = _me(ctx)
    ch, user = channel_id, user_id
    _require_read(ctx, ch, me)
    seat = _seat(ctx, ch.workspace_id, user.id)
    if seat is None:
        raise _broken(
            "not_in_workspace",
            f"{user.name} ({user.id}) is not in the workspace of {_label(ch)}, so they cannot "
            "join it. Pick someone from that workspace's people list.",
        )
    if not seat.active:
        raise _broken(
            "user_deactivated",
            f"{user.name} ({user.id}) has a deactivated account and cannot join channels.",
        )
    if ch.archived:
        raise _broken(
            "channel_archived",
            f"{_label(ch)} is archived and read-only; nobody can join it.",
        )
    if _in_channel(ctx, ch.id, user.id):
        raise Conflict(
            f"Rule 'already_member' failed: {user.name} ({user.id}) is already a member of "
            f"{_label(ch)}; nothing changed."
        )
    joining = user.id == me.id
    if not joining and not _in_channel(ctx, ch.id, me.id):
        raise _broken(
            "members_invite",
            f"only members of {_label(ch)} can add people to it, and you are not one. Join "
            f"it first by adding yourself ({me.id}), then add {user.name}.",
        )
    ctx.sql.insert(
        ChannelMember, channel_id=ch.id, user_id=user.id, joined_at=_now(ctx), added_by=me.id
    )
    members = _members(ctx, ch.id)
    return {
        "channel_id": ch.id,
        "name": ch.name,
        "user_id": user.id,
        "handle": user.handle,
        "joined_self": joining,
        "member_count": len(members),
        "members": members,
    }


# --------------------------------------------------------------- entities
# What exists and is worth asking about, for grounding synthesized requests.
@server.entity(
    "workspace",
    key="workspace_id",
    model=Workspace,
    not_found="Call list_channels to see your workspaces and their ids (such as 'ws_01').",
)
def _workspaces(ctx: ToolContext) -> list[dict[str, Any]]:
    me = _me(ctx)
    return [{"workspace_id": w.id, "name": w.name} for w in ctx.sql.all(MY_WORKSPACES, me=me.id)]


@server.entity(
    "channel",
    key="channel_id",
    model=Channel,
    shared=True,
    not_found="Call list_channels to see the channels you can see and their ids (such as "
    "'chan_004').",
)
def _channels(ctx: ToolContext) -> list[dict[str, Any]]:
    """Channels visible to me, each with someone who could be added to it (``user_id``)."""
    me = _me(ctx)
    out = []
    for ch in ctx.sql.all(CHANNELS):
        if not _readable(ctx, ch, me):
            continue
        member = _in_channel(ctx, ch.id, me.id)
        candidate = None
        if not ch.archived and not member and not ch.is_private:
            candidate = me.id
        elif not ch.archived and member:
            candidate = ctx.sql.scalar(ADDABLE, workspace_id=ch.workspace_id, channel_id=ch.id)
        out.append(
            {
                "channel_id": ch.id,
                "workspace_id": ch.workspace_id,
                "name": ch.name,
                "is_private": ch.is_private,
                "archived": ch.archived,
                "is_member": member,
                "user_id": candidate,
            }
        )
    return out


@server.entity(
    "message",
    key="message_id",
    model=Message,
    shared=True,
    not_found="Call read_channel or search_messages to find the message's id (such as "
    "'msg_00412').",
)
def _messages(ctx: ToolContext) -> list[dict[str, Any]]:
    """Messages that still exist in channels I can read, with an emoji I have not used on it."""
    me = _me(ctx)
    pinned = set(ctx.sql.scalars(PINNED_IDS))
    used: dict[str, set[str]] = {}
    for r in ctx.sql.all(MY_EMOJI, me=me.id):
        used.setdefault(r.message_id, set()).add(r.emoji)
    out = []
    for m in ctx.sql.all(LIVE_MESSAGES, me=me.id):
        n = int(m.id.rsplit("_", 1)[1])
        mine = used.get(m.id)  # (most messages have none of my reactions: all are free)
        free = FAVOURITES if mine is None else [e for e in FAVOURITES if e not in mine]
        out.append(
            {
                "message_id": m.id,
                "channel_id": m.channel_id,
                "workspace_id": m.workspace_id,
                "author_id": m.author_id,
                "mine": m.author_id == me.id,
                "pinned": m.id in pinned,
                "is_reply": m.thread_root_id is not None,
                "emoji": free[n % len(free)] if free else None,
            }
        )
    return out


@server.entity(
    "user",
    key="user_id",
    model=User,
    not_found="Call list_channels to see the people of your workspaces and their ids (such "
    "as 'usr_017').",
)
def _users(ctx: ToolContext) -> list[dict[str, Any]]:
    """Active people of my workspaces (someone in two workspaces is listed under the first)."""
    me = _me(ctx)
    seen: set[str] = set()
    out = []
    for seat in ctx.sql.all(ACTIVE_PEOPLE, me=me.id):
        if seat.user_id in seen:
            continue
        seen.add(seat.user_id)
        out.append(
            {
                "user_id": seat.user_id,
                "handle": seat.handle,
                "name": seat.name,
                "workspace_id": seat.workspace_id,
                "me": seat.user_id == me.id,
            }
        )
    return out
