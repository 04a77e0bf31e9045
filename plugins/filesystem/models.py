"""Filesystem state: one tree of nodes (directories and files) and the shell session.

The tree is a table of :class:`Node` rows linked by ``parent_id``; the root has
no parent and an empty name. Paths are never stored: they are derived by
walking up the parents, so a move is a single ``parent_id``/``name`` update.
The session (user, home, current and previous directory, ``pushd`` stack) is
stored too, so it is part of the state, the hash and every clone.
"""

from __future__ import annotations

import datetime as dt

from sqlalchemy import DateTime, ForeignKey, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column


class Base(DeclarativeBase):
    pass


class Node(Base):
    """A directory (``kind="dir"``) or a regular file (``kind="file"``).

    ``mode`` holds the nine permission bits (``0o644``); only the owner's bits
    apply to the session user's own nodes and the "other" bits to nodes owned
    by someone else (``root``). ``size`` is the UTF-8 length of ``content`` in
    bytes for files and 0 for directories.
    """

    __tablename__ = "nodes"
    __table_args__ = (UniqueConstraint("parent_id", "name"),)
    id: Mapped[str] = mapped_column(String(16), primary_key=True)
    parent_id: Mapped[str | None] = mapped_column(ForeignKey("nodes.id"), nullable=True, index=True)
    name: Mapped[str] = mapped_column(String(255))
    kind: Mapped[str] = mapped_column(String(4))
    owner: Mapped[str] = mapped_column(String(32))
    mode: Mapped[int] = mapped_column(Integer)
    size: Mapped[int] = mapped_column(Integer, default=0)
    content: Mapped[str] = mapped_column(Text, default="")
    modified: Mapped[dt.datetime] = mapped_column(DateTime)

    @property
    def is_dir(self) -> bool:
        return self.kind == "dir"


class Shell(Base):
    """The login session: a single row (id 1)."""

    __tablename__ = "shell"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    user: Mapped[str] = mapped_column(String(32))
    hostname: Mapped[str] = mapped_column(String(64))
    home_id: Mapped[str] = mapped_column(ForeignKey("nodes.id"))
    cwd_id: Mapped[str] = mapped_column(ForeignKey("nodes.id"))
    oldpwd_id: Mapped[str | None] = mapped_column(ForeignKey("nodes.id"), nullable=True)


class DirStackEntry(Base):
    """One entry of the ``pushd`` directory stack; the highest position is the top."""

    __tablename__ = "dir_stack"
    position: Mapped[int] = mapped_column(Integer, primary_key=True)
    node_id: Mapped[str] = mapped_column(ForeignKey("nodes.id"))
