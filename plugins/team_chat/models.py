"""Team chat state: workspaces, people, channels, messages with their threads, reactions, pins.

The acting user is fixed per session: the single :class:`Me` row names them, so it is cloned,
reset and hashed with the rest. The rules every state obeys (the tests check them after
random call sequences):

- history is append-only: a message row is never removed; every change to its text (an
  edit, a deletion) appends a :class:`MessageVersion`, and version 1 keeps what was first
  posted; ``Message.text`` and ``Message.version`` are the newest version's;
- a reply's ``thread_root_id`` names a top-level message of the same channel (threads are
  one level deep); a root's ``reply_count`` is the number of its replies;
- a message's ``reaction_count`` is the number of its reaction rows, and one person reacts
  with one emoji at most once per message;
- a private channel is readable only by its members; posting, replying, reacting and
  pinning need membership; an archived channel is read-only;
- at most ``MAX_PINS`` pinned messages per channel, never a deleted one.
"""

from __future__ import annotations

import datetime as dt
import re

from sqlalchemy import Boolean, DateTime, ForeignKey, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship

MAX_TEXT = 4000
"""Longest message, in characters."""

MAX_PINS = 12
"""Most pinned messages one channel may have."""

MAX_VERSIONS = 20
"""Most versions (the post, its edits and a deletion) one message may have."""

EMOJI: tuple[str, ...] = (
    "+1",
    "-1",
    "100",
    "clap",
    "eyes",
    "fire",
    "heart",
    "joy",
    "pray",
    "raised_hands",
    "rocket",
    "sweat_smile",
    "tada",
    "thinking_face",
    "white_check_mark",
    "wave",
    "warning",
    "bug",
    "coffee",
    "sparkles",
    "muscle",
    "saluting_face",
    "memo",
    "hourglass",
    "ok_hand",
)
"""The emoji a reaction may use, by short name (as ``:tada:`` without the colons)."""

ROLES = ("owner", "admin", "member", "guest")
"""A person's role in a workspace; owners and admins may delete other people's messages."""

HANDLE = re.compile(r"(?<![\w.@])@([a-z][a-z0-9_]{1,30})\b")
"""An @mention in a message's text: ``@mgarcia`` (handles are lower case)."""


class Base(DeclarativeBase):
    pass


class Workspace(Base):
    """A company's chat workspace; people, channels and messages belong to one."""

    __tablename__ = "workspaces"
    id: Mapped[str] = mapped_column(String(12), primary_key=True)
    name: Mapped[str] = mapped_column(String(80))
    domain: Mapped[str] = mapped_column(String(80), unique=True)
    created_at: Mapped[dt.datetime] = mapped_column(DateTime)

    channels: Mapped[list[Channel]] = relationship(order_by="Channel.name")
    memberships: Mapped[list[WorkspaceMember]] = relationship(order_by="WorkspaceMember.user_id")


class User(Base):
    """A person; ``handle`` (unique, lower case) is how messages @mention them."""

    __tablename__ = "users"
    id: Mapped[str] = mapped_column(String(12), primary_key=True)
    handle: Mapped[str] = mapped_column(String(32), unique=True)
    name: Mapped[str] = mapped_column(String(80))
    title: Mapped[str] = mapped_column(String(80))
    email: Mapped[str] = mapped_column(String(120))


class WorkspaceMember(Base):
    """A person's account in a workspace; a deactivated one keeps its history but can do nothing."""

    __tablename__ = "workspace_members"
    workspace_id: Mapped[str] = mapped_column(ForeignKey("workspaces.id"), primary_key=True)
    user_id: Mapped[str] = mapped_column(ForeignKey("users.id"), primary_key=True)
    role: Mapped[str] = mapped_column(String(8))
    active: Mapped[bool] = mapped_column(Boolean)
    joined_at: Mapped[dt.datetime] = mapped_column(DateTime)

    user: Mapped[User] = relationship()


class Me(Base):
    """The signed-in person acting in this session: a single row (id 1)."""

    __tablename__ = "me"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    user_id: Mapped[str] = mapped_column(ForeignKey("users.id"))


class Channel(Base):
    """A conversation in a workspace: public (anyone there may read or join) or private."""

    __tablename__ = "channels"
    __table_args__ = (UniqueConstraint("workspace_id", "name"),)
    id: Mapped[str] = mapped_column(String(12), primary_key=True)
    workspace_id: Mapped[str] = mapped_column(ForeignKey("workspaces.id"), index=True)
    name: Mapped[str] = mapped_column(String(80))
    topic: Mapped[str] = mapped_column(String(250))
    is_private: Mapped[bool] = mapped_column(Boolean)
    archived: Mapped[bool] = mapped_column(Boolean)
    created_by: Mapped[str] = mapped_column(ForeignKey("users.id"))
    created_at: Mapped[dt.datetime] = mapped_column(DateTime)

    members: Mapped[list[ChannelMember]] = relationship(order_by="ChannelMember.user_id")
    pins: Mapped[list[Pin]] = relationship(order_by=lambda: (Pin.pinned_at.desc(), Pin.id.desc()))


class ChannelMember(Base):
    __tablename__ = "channel_members"
    channel_id: Mapped[str] = mapped_column(ForeignKey("channels.id"), primary_key=True)
    user_id: Mapped[str] = mapped_column(ForeignKey("users.id"), primary_key=True)
    joined_at: Mapped[dt.datetime] = mapped_column(DateTime)
    added_by: Mapped[str] = mapped_column(ForeignKey("users.id"))

    user: Mapped[User] = relationship(foreign_keys=[user_id])


class Message(Base):
    """A message: top level in its channel, or a reply in the thread of ``thread_root_id``.

    ``text``, ``version``, ``deleted`` and ``edited_at`` mirror the newest
    :class:`MessageVersion`; the versions are the history and are never changed.
    """

    __tablename__ = "messages"
    id: Mapped[str] = mapped_column(String(16), primary_key=True)
    channel_id: Mapped[str] = mapped_column(ForeignKey("channels.id"), index=True)
    author_id: Mapped[str] = mapped_column(ForeignKey("users.id"), index=True)
    thread_root_id: Mapped[str | None] = mapped_column(
        ForeignKey("messages.id"), nullable=True, index=True
    )
    text: Mapped[str] = mapped_column(Text)
    version: Mapped[int] = mapped_column(Integer)
    deleted: Mapped[bool] = mapped_column(Boolean)
    created_at: Mapped[dt.datetime] = mapped_column(DateTime)
    edited_at: Mapped[dt.datetime | None] = mapped_column(DateTime, nullable=True)
    reply_count: Mapped[int] = mapped_column(Integer)
    last_reply_at: Mapped[dt.datetime | None] = mapped_column(DateTime, nullable=True)
    reaction_count: Mapped[int] = mapped_column(Integer)

    author: Mapped[User] = relationship()
    channel: Mapped[Channel] = relationship()
    versions: Mapped[list[MessageVersion]] = relationship(order_by="MessageVersion.number")
    reactions: Mapped[list[Reaction]] = relationship(
        order_by=lambda: (Reaction.emoji, Reaction.created_at, Reaction.id)
    )
    mentions: Mapped[list[Mention]] = relationship(
        order_by=lambda: (Mention.version, Mention.user_id)
    )


class MessageVersion(Base):
    """One version of a message's text: "posted" (1), then "edited" ones, maybe a "deleted" one."""

    __tablename__ = "message_versions"
    __table_args__ = (UniqueConstraint("message_id", "number"),)
    id: Mapped[str] = mapped_column(String(16), primary_key=True)
    message_id: Mapped[str] = mapped_column(ForeignKey("messages.id"), index=True)
    number: Mapped[int] = mapped_column(Integer)
    kind: Mapped[str] = mapped_column(String(8))
    text: Mapped[str] = mapped_column(Text)
    created_at: Mapped[dt.datetime] = mapped_column(DateTime)


class Mention(Base):
    """A person @mentioned by one version of a message."""

    __tablename__ = "mentions"
    message_id: Mapped[str] = mapped_column(ForeignKey("messages.id"), primary_key=True)
    version: Mapped[int] = mapped_column(Integer, primary_key=True)
    user_id: Mapped[str] = mapped_column(ForeignKey("users.id"), primary_key=True, index=True)


class Reaction(Base):
    __tablename__ = "reactions"
    __table_args__ = (UniqueConstraint("message_id", "user_id", "emoji"),)
    id: Mapped[str] = mapped_column(String(16), primary_key=True)
    message_id: Mapped[str] = mapped_column(ForeignKey("messages.id"), index=True)
    user_id: Mapped[str] = mapped_column(ForeignKey("users.id"))
    emoji: Mapped[str] = mapped_column(String(32))
    created_at: Mapped[dt.datetime] = mapped_column(DateTime)

    user: Mapped[User] = relationship()


class Pin(Base):
    """A message pinned to the top of its channel."""

    __tablename__ = "pins"
    id: Mapped[str] = mapped_column(String(12), primary_key=True)
    channel_id: Mapped[str] = mapped_column(ForeignKey("channels.id"), index=True)
    message_id: Mapped[str] = mapped_column(ForeignKey("messages.id"), unique=True)
    pinned_by: Mapped[str] = mapped_column(ForeignKey("users.id"))
    pinned_at: Mapped[dt.datetime] = mapped_column(DateTime)


# ------------------------------------------------------------ domain rules
# Shared by the sampler and the tools, so sampled history and live calls agree exactly.
def mentioned_handles(text: str) -> list[str]:
    """The distinct handles a text @mentions, in order of first appearance.

    >>> mentioned_handles("@ana and @bo_k, see @ana's note (mail a@b.com)")
    ['ana', 'bo_k']
    """
    seen: list[str] = []
    for handle in HANDLE.findall(text):
        if handle not in seen:
            seen.append(handle)
    return seen


def preview(text: str, width: int = 80) -> str:
    """The start of a message on one line, as lists show it.

    >>> preview("Deploy is done.\\nAll green.", 12)
    'Deploy is d…'
    """
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"
