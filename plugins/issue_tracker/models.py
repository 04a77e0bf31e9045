"""Issue tracker state: users, projects and their members, issues, labels, comments, sprints.

Every status change of an issue is kept in ``issue_transitions`` (the first row of an issue
records its creation in "todo"), so the history can be checked against the workflow.
Times are naive datetimes in UTC.
"""

from __future__ import annotations

import datetime as dt

from sqlalchemy import (
    Boolean,
    Date,
    DateTime,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship

STATUSES: tuple[str, ...] = ("todo", "in_progress", "in_review", "blocked", "done", "reopened")
"""Every status an issue can have."""

TRANSITIONS: dict[str, tuple[str, ...]] = {
    "todo": ("in_progress", "blocked"),
    "in_progress": ("in_review", "todo", "blocked"),
    "in_review": ("done", "in_progress", "blocked"),
    "blocked": ("todo", "in_progress"),
    "done": ("reopened",),
    "reopened": ("todo", "in_progress"),
}
"""The workflow: the statuses each status may move to. "done" is only reachable from
"in_review", which is only reachable from "in_progress"."""

NEEDS_ASSIGNEE: frozenset[str] = frozenset({"in_progress", "in_review"})
"""Statuses in which an issue must have an assignee (someone is working on it)."""

PRIORITIES: tuple[str, ...] = ("low", "medium", "high", "critical")
ISSUE_TYPES: tuple[str, ...] = ("bug", "feature", "task", "improvement")
STORY_POINTS: tuple[int, ...] = (0, 1, 2, 3, 5, 8, 13, 21)
SPRINT_STATES: tuple[str, ...] = ("planned", "active", "closed")


class Base(DeclarativeBase):
    pass


class Settings(Base):
    """The workspace and the user the assistant acts for: a single row."""

    __tablename__ = "settings"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    workspace: Mapped[str] = mapped_column(String(80))
    acting_user_id: Mapped[str] = mapped_column(ForeignKey("users.id"))


class User(Base):
    __tablename__ = "users"
    id: Mapped[str] = mapped_column(String(16), primary_key=True)
    name: Mapped[str] = mapped_column(String(80))
    email: Mapped[str] = mapped_column(String(120), unique=True)
    title: Mapped[str] = mapped_column(String(80), default="")
    active: Mapped[bool] = mapped_column(Boolean, default=True)


class Project(Base):
    __tablename__ = "projects"
    id: Mapped[str] = mapped_column(String(16), primary_key=True)
    key: Mapped[str] = mapped_column(String(10), unique=True)
    name: Mapped[str] = mapped_column(String(80), unique=True)
    description: Mapped[str] = mapped_column(Text, default="")
    lead_id: Mapped[str] = mapped_column(ForeignKey("users.id"))
    archived: Mapped[bool] = mapped_column(Boolean, default=False)
    next_issue_number: Mapped[int] = mapped_column(Integer, default=1)

    members: Mapped[list[ProjectMember]] = relationship(
        back_populates="project", cascade="all, delete-orphan", order_by="ProjectMember.user_id"
    )


class ProjectMember(Base):
    __tablename__ = "project_members"
    project_id: Mapped[str] = mapped_column(ForeignKey("projects.id"), primary_key=True)
    user_id: Mapped[str] = mapped_column(ForeignKey("users.id"), primary_key=True)
    role: Mapped[str] = mapped_column(String(20))
    joined_on: Mapped[dt.date] = mapped_column(Date)

    project: Mapped[Project] = relationship(back_populates="members")
    user: Mapped[User] = relationship()


class Label(Base):
    """Workspace-wide labels; issues of any project can carry them."""

    __tablename__ = "labels"
    id: Mapped[str] = mapped_column(String(16), primary_key=True)
    name: Mapped[str] = mapped_column(String(40), unique=True)
    color: Mapped[str] = mapped_column(String(16))
    description: Mapped[str] = mapped_column(Text, default="")


class Sprint(Base):
    __tablename__ = "sprints"
    __table_args__ = (UniqueConstraint("project_id", "name"),)
    id: Mapped[str] = mapped_column(String(16), primary_key=True)
    project_id: Mapped[str] = mapped_column(ForeignKey("projects.id"))
    name: Mapped[str] = mapped_column(String(80))
    goal: Mapped[str] = mapped_column(Text, default="")
    state: Mapped[str] = mapped_column(String(16))  # planned | active | closed
    start_date: Mapped[dt.date] = mapped_column(Date)
    end_date: Mapped[dt.date] = mapped_column(Date)
    started_at: Mapped[dt.datetime | None] = mapped_column(DateTime, nullable=True)
    closed_at: Mapped[dt.datetime | None] = mapped_column(DateTime, nullable=True)


class IssueLabel(Base):
    __tablename__ = "issue_labels"
    issue_id: Mapped[str] = mapped_column(ForeignKey("issues.id"), primary_key=True)
    label_id: Mapped[str] = mapped_column(ForeignKey("labels.id"), primary_key=True)
    label: Mapped[Label] = relationship(lazy="joined")


class Issue(Base):
    __tablename__ = "issues"
    # a project's issues by status: its open-issue and per-status counts read the index alone
    __table_args__ = (Index("ix_issues_project_status", "project_id", "status"),)
    id: Mapped[str] = mapped_column(String(16), primary_key=True)
    key: Mapped[str] = mapped_column(String(20), unique=True)
    project_id: Mapped[str] = mapped_column(ForeignKey("projects.id"))
    type: Mapped[str] = mapped_column(String(16))  # bug | feature | task | improvement
    title: Mapped[str] = mapped_column(String(200))
    description: Mapped[str] = mapped_column(Text, default="")
    status: Mapped[str] = mapped_column(String(16))
    priority: Mapped[str] = mapped_column(String(16))  # low | medium | high | critical
    story_points: Mapped[int | None] = mapped_column(Integer, nullable=True)
    assignee_id: Mapped[str | None] = mapped_column(ForeignKey("users.id"), nullable=True)
    reporter_id: Mapped[str] = mapped_column(ForeignKey("users.id"))
    sprint_id: Mapped[str | None] = mapped_column(ForeignKey("sprints.id"), nullable=True)
    created_at: Mapped[dt.datetime] = mapped_column(DateTime)
    updated_at: Mapped[dt.datetime] = mapped_column(DateTime)
    resolved_at: Mapped[dt.datetime | None] = mapped_column(DateTime, nullable=True)

    labels: Mapped[list[IssueLabel]] = relationship(
        cascade="all, delete-orphan", order_by="IssueLabel.label_id", lazy="selectin"
    )


class Comment(Base):
    __tablename__ = "comments"
    id: Mapped[str] = mapped_column(String(16), primary_key=True)
    issue_id: Mapped[str] = mapped_column(ForeignKey("issues.id"))
    author_id: Mapped[str] = mapped_column(ForeignKey("users.id"))
    body: Mapped[str] = mapped_column(Text)
    created_at: Mapped[dt.datetime] = mapped_column(DateTime)


class IssueTransition(Base):
    """One status change; ``from_status`` is NULL on the row that records the creation."""

    __tablename__ = "issue_transitions"
    id: Mapped[str] = mapped_column(String(16), primary_key=True)
    issue_id: Mapped[str] = mapped_column(ForeignKey("issues.id"))
    from_status: Mapped[str | None] = mapped_column(String(16), nullable=True)
    to_status: Mapped[str] = mapped_column(String(16))
    actor_id: Mapped[str] = mapped_column(ForeignKey("users.id"))
    at: Mapped[dt.datetime] = mapped_column(DateTime)
