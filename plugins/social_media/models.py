"""Social media state: people (public or private accounts), posts, comments, likes, follows,
follow requests and blocks.

The acting person is fixed per session: the single :class:`Me` row names them, so it is
cloned, reset and hashed with the rest. The rules every state obeys (the tests check them
after random call sequences):

- one like per person per post; a post's ``like_count`` is its like rows and its
  ``comment_count`` its comment rows;
- a person's ``follower_count``, ``following_count`` and ``post_count`` are their rows;
- nobody follows or requests to follow themselves; a follow request only ever targets a
  private account and never coexists with the follow it asks for;
- a block and a follow (or follow request) never join the same two people, either way;
- a private account's posts are visible only to itself and its approved followers; nobody
  sees, follows, likes or comments on the content of someone who blocked them.
"""

from __future__ import annotations

import datetime as dt

from sqlalchemy import Boolean, DateTime, ForeignKey, Integer, String, Text
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship

MAX_POST = 500
"""Longest post, in characters."""

MAX_COMMENT = 300
"""Longest comment, in characters."""

MAX_BIO = 160


class Base(DeclarativeBase):
    pass


class User(Base):
    """A person's account; ``handle`` is unique and lower case (shown as ``@handle``)."""

    __tablename__ = "users"
    id: Mapped[str] = mapped_column(String(12), primary_key=True)
    handle: Mapped[str] = mapped_column(String(32), unique=True)
    name: Mapped[str] = mapped_column(String(80))
    bio: Mapped[str] = mapped_column(String(MAX_BIO))
    location: Mapped[str] = mapped_column(String(80))
    is_private: Mapped[bool] = mapped_column(Boolean)
    verified: Mapped[bool] = mapped_column(Boolean)
    joined_at: Mapped[dt.datetime] = mapped_column(DateTime)
    follower_count: Mapped[int] = mapped_column(Integer)
    following_count: Mapped[int] = mapped_column(Integer)
    post_count: Mapped[int] = mapped_column(Integer)


class Me(Base):
    """The signed-in person acting in this session: a single row (id 1)."""

    __tablename__ = "me"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    user_id: Mapped[str] = mapped_column(ForeignKey("users.id"))


class Post(Base):
    """A post; ``comments_enabled`` false means its author turned comments off."""

    __tablename__ = "posts"
    id: Mapped[str] = mapped_column(String(16), primary_key=True)
    author_id: Mapped[str] = mapped_column(ForeignKey("users.id"), index=True)
    text: Mapped[str] = mapped_column(Text)
    created_at: Mapped[dt.datetime] = mapped_column(DateTime, index=True)
    comments_enabled: Mapped[bool] = mapped_column(Boolean)
    like_count: Mapped[int] = mapped_column(Integer)
    comment_count: Mapped[int] = mapped_column(Integer)

    author: Mapped[User] = relationship()
    comments: Mapped[list[Comment]] = relationship(
        order_by=lambda: (Comment.created_at, Comment.id)
    )
    likes: Mapped[list[Like]] = relationship(order_by=lambda: (Like.created_at, Like.user_id))


class Comment(Base):
    __tablename__ = "comments"
    id: Mapped[str] = mapped_column(String(16), primary_key=True)
    post_id: Mapped[str] = mapped_column(ForeignKey("posts.id"), index=True)
    author_id: Mapped[str] = mapped_column(ForeignKey("users.id"), index=True)
    text: Mapped[str] = mapped_column(Text)
    created_at: Mapped[dt.datetime] = mapped_column(DateTime)

    author: Mapped[User] = relationship()


class Like(Base):
    """One person's like of one post (the primary key makes it one at most)."""

    __tablename__ = "likes"
    post_id: Mapped[str] = mapped_column(ForeignKey("posts.id"), primary_key=True)
    user_id: Mapped[str] = mapped_column(ForeignKey("users.id"), primary_key=True, index=True)
    created_at: Mapped[dt.datetime] = mapped_column(DateTime)

    user: Mapped[User] = relationship()


class Follow(Base):
    """``follower_id`` follows ``followee_id`` (approved, for a private account)."""

    __tablename__ = "follows"
    follower_id: Mapped[str] = mapped_column(ForeignKey("users.id"), primary_key=True)
    followee_id: Mapped[str] = mapped_column(ForeignKey("users.id"), primary_key=True, index=True)
    created_at: Mapped[dt.datetime] = mapped_column(DateTime)


class FollowRequest(Base):
    """A pending request by ``requester_id`` to follow the private account ``target_id``."""

    __tablename__ = "follow_requests"
    requester_id: Mapped[str] = mapped_column(ForeignKey("users.id"), primary_key=True)
    target_id: Mapped[str] = mapped_column(ForeignKey("users.id"), primary_key=True, index=True)
    created_at: Mapped[dt.datetime] = mapped_column(DateTime)


class Block(Base):
    """``blocker_id`` blocked ``blocked_id``."""

    __tablename__ = "blocks"
    blocker_id: Mapped[str] = mapped_column(ForeignKey("users.id"), primary_key=True)
    blocked_id: Mapped[str] = mapped_column(ForeignKey("users.id"), primary_key=True, index=True)
    created_at: Mapped[dt.datetime] = mapped_column(DateTime)


def preview(text: str, width: int = 80) -> str:
    """The start of a text on one line, as lists show it.

    >>> preview("Sunset at the pier.\\nWorth it.", 12)
    'Sunset at t…'
    """
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"
