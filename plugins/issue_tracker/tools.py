"""The issue tracker's 20 tools. Docstrings are what the model reads: keep examples concrete.

Business rules have names (``workflow_transition``, ``assignee_membership``, ...); a tool
that refuses an action raises ``PreconditionFailed`` with a message that starts with
``Rule '<name>' failed:`` and says what would be allowed instead. ``get_workflow`` lists
the rules and the transition graph.
"""

from __future__ import annotations

import datetime as dt
import functools
import random
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field
from sqlalchemy import bindparam, case, delete, func, select

from prove_gym.server import (
    Bound,
    Conflict,
    Entity,
    InvalidArgument,
    NotFound,
    NotRequired,
    PreconditionFailed,
    Query,
    Record,
    Server,
    ToolContext,
    TypedDict,
    contains,
    next_id,
    parse_date,
    search_pattern,
)
from prove_gym.server.sql import record_by_key

from .models import (
    NEEDS_ASSIGNEE,
    PRIORITIES,
    STATUSES,
    STORY_POINTS,
    TRANSITIONS,
    Base,
    Comment,
    Issue,
    IssueLabel,
    IssueTransition,
    Label,
    Project,
    ProjectMember,
    Settings,
    Sprint,
    User,
)
from .sampler import sample_issue_tracker

OUT_OF_SCOPE = (
    "Connect this project to our GitHub repository.",
    "Generate a burndown chart for the current sprint.",
    "Estimate how long the backlog will take to finish.",
    "Merge the open pull request for the login bug.",
    "Export every open issue to a CSV file.",
    "Create a new workflow status called QA Ready.",
    "Archive the whole project.",
    "Set up a webhook that posts updates to our chat.",
    "Run the test suite on the main branch.",
    "Delete the oldest issue for good.",
    "Rename the project key.",
)
"""Requests a user of this server might make that no tool (of any server) serves:
synthesis asks them in abstention turns."""

server = Server(
    "issue_tracker",
    out_of_scope=OUT_OF_SCOPE,
    tasks_file=Path(__file__).with_name("tasks.jsonl"),
    version="1.0.0",
    base=Base,
    sampler=sample_issue_tracker,
    me=lambda ctx: {"user": _acting_user(ctx)},
    description="A team issue tracker with projects and their members, issues (bugs, features, "
    "tasks), labels, comments, sprints, and a workflow that controls how an issue's status may "
    "change.",
    instructions="Issue tracker conventions: ids look like 'prj_01' (project), 'iss_0042' "
    "(issue; its human key looks like 'WEB-42'), 'usr_007' (user), 'spr_012' (sprint). "
    "Statuses follow a workflow: todo -> in_progress -> in_review -> done; call get_workflow "
    "for the allowed moves and the rules. Dates are ISO dates such as '2026-03-02'.",
)

# Required user and sprint ids arrive as rows (the core looks them up and answers not_found).
# Project and issue ids, optional ids and ids checked only after other rules stay ids: _find
# looks them up, and points to the id when a project or issue key was sent instead.
UserRow = Annotated[Record[User], Entity("user")]
SprintRow = Annotated[Record[Sprint], Entity("sprint")]
ProjectId = Annotated[str, Entity("project")]
IssueId = Annotated[str, Entity("issue")]
UserId = Annotated[str, Entity("user")]
SprintId = Annotated[str, Entity("sprint")]
LabelName = Annotated[str, Entity("label")]
Limit = Annotated[int, Field(ge=1, le=100)]
# Longer than any title, key, name or email it could match; SQLite refuses LIKE patterns over
# 50,000 bytes, so a huge query would otherwise fail inside the tool.
SearchText = Annotated[str, Field(max_length=1000)]

Status = Literal["todo", "in_progress", "in_review", "blocked", "done", "reopened"]
Priority = Literal["low", "medium", "high", "critical"]
IssueType = Literal["bug", "feature", "task", "improvement"]
MemberRole = Literal["developer", "qa", "designer", "pm"]

RULES: dict[str, str] = {
    "workflow_transition": "An issue's status moves only along the workflow graph. 'done' can "
    "only be reached from 'in_review', and 'in_review' only from 'in_progress', so an issue in "
    "'todo' must go todo -> in_progress -> in_review -> done.",
    "assignee_required": "Statuses 'in_progress' and 'in_review' need an assignee: assign the "
    "issue before starting work, and do not unassign an issue that is being worked on.",
    "blocked_reason_required": "Moving an issue to 'blocked' needs a comment saying what blocks it.",
    "assignee_membership": "An assignee must be a member of the issue's project (get_project "
    "lists the members; add_project_member adds one).",
    "user_inactive": "Deactivated users cannot be assigned issues or added to projects.",
    "sprint_closed": "A closed sprint takes no more issues.",
    "same_project": "An issue can only be planned into a sprint of its own project.",
    "done_issue_not_planned": "A 'done' issue cannot be added to a sprint; reopen it first.",
    "sprint_state": "Only a 'planned' sprint can be started and only an 'active' sprint closed.",
    "one_active_sprint": "A project has at most one active sprint; close it before starting "
    "another.",
    "project_archived": "Archived projects are read-only: no new issues, sprints, members, "
    "comments or changes.",
}

MAX_SPRINT_DAYS = 28
PRIORITY_RANK = {p: i for i, p in enumerate(PRIORITIES)}


# ----------------------------------------------------------------- results
class ProjectSummary(TypedDict):
    project_id: str
    key: str
    name: str
    lead_id: str
    archived: bool
    open_issues: int
    active_sprint_id: str | None


class Member(TypedDict):
    user_id: str
    name: str
    role: str
    active: bool


class SprintSummary(TypedDict):
    sprint_id: str
    project_id: str
    name: str
    goal: str
    state: str
    start_date: str
    end_date: str
    issue_count: int
    done_count: int


class ProjectDetail(TypedDict):
    project_id: str
    key: str
    name: str
    description: str
    archived: bool
    lead_id: str
    members: list[Member]
    active_sprint: SprintSummary | None
    issue_counts: dict[str, int]


class UserRecord(TypedDict):
    user_id: str
    name: str
    email: str
    title: str
    active: bool
    is_you: bool


class IssueSummary(TypedDict):
    issue_id: str
    key: str
    project_id: str
    title: str
    type: str
    status: str
    priority: str
    assignee_id: str | None
    assignee_name: str | None
    sprint_id: str | None
    story_points: int | None
    labels: list[str]


class StatusChange(TypedDict):
    from_status: str | None
    to_status: str
    actor_id: str
    at: str


class IssueDetail(IssueSummary):
    description: str
    reporter_id: str
    created_at: str
    updated_at: str
    resolved_at: str | None
    next_statuses: list[str]
    comment_count: int
    history: list[StatusChange]


class IssueSearch(TypedDict):
    total: int
    issues: list[IssueSummary]


class Transitioned(TypedDict):
    issue_id: str
    key: str
    from_status: str
    to_status: str
    next_statuses: list[str]
    transition_id: str
    comment_id: str | None
    removed_from_closed_sprint: str | None


class Assigned(TypedDict):
    issue_id: str
    key: str
    assignee_id: str | None
    assignee_name: str | None
    previous_assignee_id: str | None


class IssueLabels(TypedDict):
    issue_id: str
    labels: list[str]


class NewComment(TypedDict):
    comment_id: str
    issue_id: str
    author_id: str
    body: str
    created_at: str


class CommentRecord(TypedDict):
    comment_id: str
    author_id: str
    author_name: str | None
    body: str
    created_at: str


class SprintClosed(TypedDict):
    sprint_id: str
    state: str
    completed_issue_ids: list[str]
    moved_issue_ids: list[str]
    moved_to: str


class SprintPlanned(TypedDict):
    issue_id: str
    key: str
    sprint_id: str
    previous_sprint_id: str | None
    sprint: SprintSummary


class SprintList(TypedDict):
    project_id: str
    today: str
    sprints: list[SprintSummary]


class Rule(TypedDict):
    rule: str
    description: str


class IssueMoves(TypedDict):
    issue_id: str
    key: str
    status: str
    assignee_id: str | None
    next_statuses: list[str]
    conditions: dict[str, str]


class Workflow(TypedDict):
    statuses: list[str]
    initial_status: str
    transitions: dict[str, list[str]]
    needs_assignee: list[str]
    rules: list[Rule]
    issue: NotRequired[IssueMoves]


class MemberAdded(TypedDict):
    project_id: str
    user_id: str
    name: str
    role: str
    member_count: int


# -------------------------------------------------------------- statements
# The tools read and write through these (ctx.sql): compiled once, run on SQLite directly.
# Rows are named tuples typed as the ORM types them; a row a tool changes is written with
# ctx.sql.update, which (as the ORM did) writes only the columns whose value differs.
ACTING_USER = Query(select(Settings.acting_user_id).where(Settings.id == 1))
USER_NAME = Query(select(User.name).where(User.id == bindparam("id")))
# the project or issue whose human key (upper-cased) is 'key', such as 'WEB' or 'WEB-42'
KEY_OWNER: dict[type, Query] = {
    Project: Query(select(Project.id).where(func.upper(Project.key) == bindparam("key"))),
    Issue: Query(select(Issue.id).where(func.upper(Issue.key) == bindparam("key"))),
}
_LIVE_PROJECT_IDS = select(Project.id).where(Project.archived.is_(False))
MEMBER = Query(
    select(ProjectMember.user_id).where(
        ProjectMember.project_id == bindparam("project_id"),
        ProjectMember.user_id == bindparam("user_id"),
    )
)
# a project's members (by user id, as Project.members is ordered) with their user's name
MEMBERS = Query(
    select(ProjectMember.user_id, User.name, ProjectMember.role, User.active)
    .join(User.__table__, User.id == ProjectMember.user_id)
    .where(ProjectMember.project_id == bindparam("project_id"))
    .order_by(ProjectMember.user_id)
)
MEMBER_COUNT = Query(
    select(func.count()).where(ProjectMember.project_id == bindparam("project_id"))
)
# a project has at most one active sprint (one_active_sprint)
ACTIVE_SPRINT = Query(  # at most one; ordered all the same, so a broken rule stays deterministic
    select(Sprint.__table__)
    .where(Sprint.project_id == bindparam("project_id"), Sprint.state == "active")
    .order_by(Sprint.id)
)
SPRINT_NAMED = Query(
    select(Sprint.id).where(
        Sprint.project_id == bindparam("project_id"), func.lower(Sprint.name) == bindparam("name")
    )
)
# within a statement that lists projects: a project's number of open issues, and the id of
# its active sprint (a project has at most one; NULL without)
_OPEN_ISSUE_COUNT = (
    select(func.count())
    .where(Issue.project_id == Project.id, Issue.status != "done")
    .scalar_subquery()
)
_ACTIVE_SPRINT_ID = (
    select(Sprint.id)
    .where(Sprint.project_id == Project.id, Sprint.state == "active")
    .order_by(Sprint.id)
    .limit(1)
    .scalar_subquery()
)
STATUS_COUNTS = Query(
    select(Issue.status, func.count().label("n"))
    .where(Issue.project_id == bindparam("project_id"))
    .group_by(Issue.status)
)
SPRINT_STATUS_COUNTS = Query(
    select(Issue.status, func.count().label("n"))
    .where(Issue.sprint_id == bindparam("sprint_id"))
    .group_by(Issue.status)
)
SPRINT_ISSUES = Query(
    select(Issue.id, Issue.status, Issue.sprint_id, Issue.updated_at)
    .where(Issue.sprint_id == bindparam("sprint_id"))
    .order_by(Issue.id)
)
# an issue with its assignee's name
_ISSUES = select(Issue.__table__, User.name.label("assignee_name")).outerjoin(
    User.__table__, User.id == Issue.assignee_id
)
ISSUE = Query(_ISSUES.where(Issue.id == bindparam("id")))
# what _issue_summary reads: an issue's row without its description and times
_SUMMARY_COLUMNS = (
    Issue.id,
    Issue.key,
    Issue.project_id,
    Issue.title,
    Issue.type,
    Issue.status,
    Issue.priority,
    Issue.assignee_id,
    User.name.label("assignee_name"),
    Issue.sprint_id,
    Issue.story_points,
)
LABEL_NAMED = Query(select(Label.__table__).where(func.lower(Label.name) == bindparam("name")))
LABEL_NAMES = Query(select(Label.name).order_by(Label.name))
HAS_LABEL = Query(
    select(IssueLabel.label_id).where(
        IssueLabel.issue_id == bindparam("issue_id"), IssueLabel.label_id == bindparam("label_id")
    )
)
REMOVE_LABEL = Query(
    delete(IssueLabel).where(
        IssueLabel.issue_id == bindparam("issue_id"), IssueLabel.label_id == bindparam("label_id")
    )
)
# the label names of some issues, each issue's in name order
LABELS_OF = Query(
    select(IssueLabel.issue_id, Label.name)
    .join(Label.__table__, Label.id == IssueLabel.label_id)
    .where(IssueLabel.issue_id.in_(bindparam("issue_ids", expanding=True)))
    .order_by(IssueLabel.issue_id, Label.name)
)
HISTORY = Query(
    select(
        IssueTransition.from_status,
        IssueTransition.to_status,
        IssueTransition.actor_id,
        IssueTransition.at,
    )
    .where(IssueTransition.issue_id == bindparam("issue_id"))
    .order_by(func.length(IssueTransition.id), IssueTransition.id)
)
COMMENT_COUNT = Query(select(func.count()).where(Comment.issue_id == bindparam("issue_id")))
# what the entity listings offer
ENTITY_PROJECTS = Query(
    select(Project.id, Project.key, Project.name)
    .where(Project.archived.is_(False))
    .order_by(Project.id)
)
ENTITY_USERS = Query(
    select(User.id, User.name, User.email, User.title)
    .where(User.active.is_(True))
    .order_by(User.id)
)
ENTITY_ISSUES = Query(
    select(Issue.id, Issue.key, Issue.title, Issue.project_id, Issue.status, Issue.assignee_id)
    .where(Issue.project_id.in_(_LIVE_PROJECT_IDS))
    .order_by(Issue.id)
)
ENTITY_SPRINTS = Query(
    select(Sprint.id, Sprint.name, Sprint.project_id, Sprint.state)
    .where(Sprint.state != "closed")
    .order_by(Sprint.id)
)
ENTITY_LABELS = Query(select(Label.name, Label.description).order_by(Label.id))
ENTITY_COMMENTS = Query(select(Comment.id, Comment.issue_id).order_by(Comment.id))

# search_issues' optional filters: each takes the parameter of its name
ISSUE_FILTERS: dict[str, Any] = {
    "project_id": Issue.project_id == bindparam("project_id"),
    "pattern": contains(bindparam("pattern"), Issue.title, Issue.key),
    "status": Issue.status == bindparam("status"),
    "assignee_id": Issue.assignee_id == bindparam("assignee_id"),
    "priority": Issue.priority == bindparam("priority"),
    "type": Issue.type == bindparam("type"),
    "label_id": Issue.id.in_(
        select(IssueLabel.issue_id).where(IssueLabel.label_id == bindparam("label_id"))
    ),
    "sprint_id": Issue.sprint_id == bindparam("sprint_id"),
}


@functools.cache
def _issue_search(filters: tuple[str, ...], unassigned: bool) -> tuple[Query, Query]:
    """How many issues pass ``filters`` (names in ISSUE_FILTERS; ``unassigned``: only those
    with no assignee), and the first ``limit`` of them: an exact match of the upper-cased
    ``key`` first, then the most urgent, then the oldest. search_issues' statements."""
    where = [ISSUE_FILTERS[name] for name in filters]
    if unassigned:
        where.append(Issue.assignee_id.is_(None))
    count = Query(select(func.count()).select_from(Issue.__table__).where(*where))
    rank = case(PRIORITY_RANK, value=Issue.priority, else_=-1)
    # upper(key) = 'key' without an upper() call per row: 'key' is upper-cased (no lower-case
    # ASCII letter in it), and NOCASE, like upper(), folds ASCII letters only
    exact = case((Issue.key.collate("NOCASE") == bindparam("key"), 0), else_=1)
    page = (
        select(*_SUMMARY_COLUMNS)
        .outerjoin(User.__table__, User.id == Issue.assignee_id)
        .where(*where)
        .order_by(exact, rank.desc(), Issue.id)
        .limit(bindparam("limit"))
    )
    return count, Query(page)


@functools.cache
def _projects_listed(include_archived: bool) -> Query:
    """Projects by id, each with its number of open issues and its active sprint's id:
    list_projects' statement (one, instead of two more per project)."""
    stmt = select(
        Project.__table__,
        _OPEN_ISSUE_COUNT.label("open_issues"),
        _ACTIVE_SPRINT_ID.label("active_sprint_id"),
    ).order_by(Project.id)
    if not include_archived:
        stmt = stmt.where(Project.archived.is_(False))
    return Query(stmt)


@functools.cache
def _users_listed(of_project: bool, by_text: bool, include_inactive: bool) -> Query:
    """Users by id, at most ``limit``: list_users' statement."""
    stmt = select(User.__table__).order_by(User.id).limit(bindparam("limit"))
    if of_project:
        stmt = stmt.join(ProjectMember.__table__, ProjectMember.user_id == User.id).where(
            ProjectMember.project_id == bindparam("project_id")
        )
    if by_text:
        stmt = stmt.where(contains(bindparam("pattern"), User.name, User.email, User.title))
    if not include_inactive:
        stmt = stmt.where(User.active.is_(True))
    return Query(stmt)


@functools.cache
def _comments_listed(newest_first: bool) -> Query:
    """An issue's comments with their author's name, at most ``limit``: list_comments'."""
    columns = (Comment.created_at, Comment.id)
    order = [c.desc() for c in columns] if newest_first else list(columns)
    return Query(
        select(Comment.__table__, User.name.label("author_name"))
        .outerjoin(User.__table__, User.id == Comment.author_id)
        .where(Comment.issue_id == bindparam("issue_id"))
        .order_by(*order)
        .limit(bindparam("limit"))
    )


@functools.cache
def _sprints_listed(by_state: bool) -> Query:
    """A project's sprints, oldest first: list_sprints' statement."""
    stmt = select(Sprint.__table__).where(Sprint.project_id == bindparam("project_id"))
    if by_state:
        stmt = stmt.where(Sprint.state == bindparam("state"))
    return Query(stmt.order_by(Sprint.start_date, Sprint.id))


# ----------------------------------------------------------------- helpers
def _find(ctx: ToolContext, model: type, id_: str) -> Any:
    """The row with this id, or NotFound with the entity's hint (as the core answers for rows)
    and, when a project or issue key such as 'WEB-42' was sent as the id, the id to pass."""
    row = ctx.sql.first(record_by_key(model), key=id_)
    if row is None:
        source = next(s for s in server.entities.values() if s.model is model)
        message = source.missing(id_)
        if model in KEY_OWNER:
            real = ctx.sql.scalar(KEY_OWNER[model], key=id_.upper())
            if real is not None:
                message += f" {id_!r} is the key of {source.kind} {real}; pass that id."
        raise NotFound(message)
    return row


def _broken(rule: str, detail: str) -> PreconditionFailed:
    """The error for a failed business rule: it names the rule, then says what to do."""
    return PreconditionFailed(f"Rule '{rule}' failed: {detail}")


def _acting_user(ctx: ToolContext) -> str:
    acting_user_id: str = ctx.sql.one(ACTING_USER).acting_user_id
    return acting_user_id


def _writable(ctx: ToolContext, project_id: str) -> Any:
    """The project, unless it is archived (read-only)."""
    project = ctx.sql.one(record_by_key(Project), key=project_id)
    if project.archived:
        raise _broken(
            "project_archived",
            f"project {project.id} ({project.name}) is archived and read-only; pick an active "
            "project (list_projects).",
        )
    return project


def _label(ctx: ToolContext, name: str) -> Any:
    label = ctx.sql.first(LABEL_NAMED, name=name.strip().lower())
    if label is None:
        names = ", ".join(ctx.sql.scalars(LABEL_NAMES))
        raise NotFound(f"No label named {name!r}. Existing labels: {names}.")
    return label


def _check_assignable(ctx: ToolContext, project: Any, user: Any) -> None:
    if not user.active:
        raise _broken(
            "user_inactive",
            f"{user.name} ({user.id}) is deactivated and cannot be assigned; choose an active "
            "member of the project (get_project).",
        )
    if ctx.sql.first(MEMBER, project_id=project.id, user_id=user.id) is None:
        raise _broken(
            "assignee_membership",
            f"{user.name} ({user.id}) is not a member of project {project.id} ({project.key}). "
            f"Add them with add_project_member first, or assign one of the members listed by "
            f"get_project('{project.id}').",
        )


def _clean_text(text: str, name: str, longest: int) -> str:
    text = text.strip()
    if not text:
        raise InvalidArgument(f"{name} must not be empty.")
    if len(text) > longest:
        raise InvalidArgument(
            f"{name} is {len(text)} characters long; keep it to {longest} at most."
        )
    return text


def _check_points(points: int) -> None:
    if points not in STORY_POINTS:
        allowed = ", ".join(map(str, STORY_POINTS))
        raise InvalidArgument(f"story_points must be one of {allowed}, got {points}.")


def _user_name(ctx: ToolContext, user_id: str | None) -> str | None:
    if user_id is None:
        return None
    name: str | None = ctx.sql.scalar(USER_NAME, id=user_id)
    return name


def _label_names_by_issue(ctx: ToolContext, issue_ids: list[str]) -> dict[str, list[str]]:
    """The label names of each issue, sorted (one statement for all the issues)."""
    names: dict[str, list[str]] = {issue_id: [] for issue_id in issue_ids}
    for link in ctx.sql.all(LABELS_OF, issue_ids=issue_ids):
        names[link.issue_id].append(link.name)
    return names


def _label_names(ctx: ToolContext, issue_id: str) -> list[str]:
    return _label_names_by_issue(ctx, [issue_id])[issue_id]


def _issue_summary(issue: Any, labels: list[str]) -> IssueSummary:
    """An issue's summary from its row (with ``assignee_name``, as ``_ISSUES`` reads it)."""
    return {
        "issue_id": issue.id,
        "key": issue.key,
        "project_id": issue.project_id,
        "title": issue.title,
        "type": issue.type,
        "status": issue.status,
        "priority": issue.priority,
        "assignee_id": issue.assignee_id,
        "assignee_name": issue.assignee_name,
        "sprint_id": issue.sprint_id,
        "story_points": issue.story_points,
        "labels": labels,
    }


def _issue_detail(ctx: ToolContext, issue_id: str) -> IssueDetail:
    issue = ctx.sql.one(ISSUE, id=issue_id)
    return {
        **_issue_summary(issue, _label_names(ctx, issue.id)),
        "description": issue.description,
        "reporter_id": issue.reporter_id,
        "created_at": issue.created_at.isoformat(timespec="minutes"),
        "updated_at": issue.updated_at.isoformat(timespec="minutes"),
        "resolved_at": issue.resolved_at.isoformat(timespec="minutes")
        if issue.resolved_at
        else None,
        "next_statuses": list(TRANSITIONS[issue.status]),
        "comment_count": ctx.sql.scalar(COMMENT_COUNT, issue_id=issue.id) or 0,
        "history": [
            {
                "from_status": t.from_status,
                "to_status": t.to_status,
                "actor_id": t.actor_id,
                "at": t.at.isoformat(timespec="minutes"),
            }
            for t in ctx.sql.all(HISTORY, issue_id=issue.id)
        ],
    }


def _sprint_summary(ctx: ToolContext, sprint: Any) -> SprintSummary:
    counts = {row.status: row.n for row in ctx.sql.all(SPRINT_STATUS_COUNTS, sprint_id=sprint.id)}
    return {
        "sprint_id": sprint.id,
        "project_id": sprint.project_id,
        "name": sprint.name,
        "goal": sprint.goal,
        "state": sprint.state,
        "start_date": sprint.start_date.isoformat(),
        "end_date": sprint.end_date.isoformat(),
        "issue_count": sum(counts.values()),
        "done_count": counts.get("done", 0),
    }


def _record(ctx: ToolContext, issue_id: str, to_status: str, from_status: str | None) -> str:
    """Append one row to the status history and return its id."""
    transition_id = next_id(ctx, IssueTransition.id, "trn", 5)
    ctx.sql.insert(
        IssueTransition,
        id=transition_id,
        issue_id=issue_id,
        from_status=from_status,
        to_status=to_status,
        actor_id=_acting_user(ctx),
        at=ctx.now,
    )
    return transition_id


def _add_comment(ctx: ToolContext, issue_id: str, body: str) -> dict[str, Any]:
    """Write a comment as the acting user; the values written (its columns)."""
    comment = {
        "id": next_id(ctx, Comment.id, "cmt", 5),
        "issue_id": issue_id,
        "author_id": _acting_user(ctx),
        "body": body,
        "created_at": ctx.now,
    }
    ctx.sql.insert(Comment, **comment)
    return comment


def _future_day(ctx: ToolContext, rng: random.Random, lo: int = 1, hi: int = 21) -> str:
    return (ctx.now + dt.timedelta(days=rng.randint(lo, hi))).date().isoformat()


def _sprint_start(ctx: ToolContext, rng: random.Random) -> str:
    return _future_day(ctx, rng, 14, 28)


def _sprint_end(ctx: ToolContext, rng: random.Random, bound: Bound) -> str | None:
    """The last day of a sprint that starts on ``start_date``: one, two (most often) or
    three weeks on, never the next day."""
    try:
        start = dt.date.fromisoformat(str(bound.args.get("start_date")))
    except ValueError:
        return None
    return (start + dt.timedelta(days=rng.choice([6, 13, 13, 20]))).isoformat()


def _sprint_name(ctx: ToolContext, rng: random.Random, bound: Bound) -> str:
    """A new sprint's name, a quarter's kickoff named for the quarter its start falls in
    (never "Q3 kickoff sprint" in December)."""
    try:
        quarter = (dt.date.fromisoformat(str(bound.args.get("start_date"))).month - 1) // 3 + 1
    except ValueError:
        return rng.choice(["Sprint 42", "Release hardening"])
    return rng.choice(["Sprint 42", "Release hardening", f"Q{quarter} kickoff sprint"])


NEW_ISSUES: dict[str, tuple[frozenset[str], frozenset[str]]] = {
    "Checkout button does nothing on Safari": (
        frozenset({"bug"}),
        frozenset({"frontend", "regression", "customer-reported", "hotfix", "needs-triage", "ux"}),
    ),
    "Add CSV export to the orders dashboard": (
        frozenset({"feature", "improvement"}),
        frozenset({"frontend", "backend", "good-first-issue", "customer-reported", "ux"}),
    ),
    "Upgrade PostgreSQL to 16": (
        frozenset({"task", "improvement"}),
        frozenset({"backend", "tech-debt", "performance", "security"}),
    ),
    "Password reset email arrives twice": (
        frozenset({"bug"}),
        frozenset({"backend", "regression", "customer-reported", "needs-triage", "security"}),
    ),
    "Improve search relevance for short queries": (
        frozenset({"improvement", "feature"}),
        frozenset({"backend", "performance", "ux", "customer-reported"}),
    ),
    "Fix the flaky checkout integration test": (
        frozenset({"bug", "task"}),
        frozenset({"flaky-test", "tech-debt", "backend"}),
    ),
    "Document the webhook retry policy": (
        frozenset({"task"}),
        frozenset({"documentation", "good-first-issue", "backend"}),
    ),
    "Screen reader skips the date picker": (
        frozenset({"bug"}),
        frozenset({"accessibility", "frontend", "ux", "customer-reported"}),
    ),
}
"""Titles of new issues, each with the types and labels it fits (a Safari bug is no
feature, and no flaky test)."""


def _retitle(ctx: ToolContext, rng: random.Random, bound: Bound) -> str | None:
    """A new title for the issue in ``issue_id`` that fits what it is: a bug keeps a bug's
    title (never "Document the webhook retry policy" for a regression), not its own; None
    when none fits, so synthesis draws another issue."""
    issue = ctx.sql.first(ISSUE, id=str(bound.args.get("issue_id", "")))
    if issue is None:
        return None
    fits = [t for t, (types, _) in NEW_ISSUES.items() if issue.type in types and t != issue.title]
    return rng.choice(fits) if fits else None


def _issue_title(ctx: ToolContext, rng: random.Random, bound: Bound) -> str | None:
    """A title that fits every label drawn for the new issue ("Screen reader skips the
    date picker" for one labelled accessibility) and its type, where one is given; None
    when none does, so synthesis draws other labels."""
    kind = bound.args.get("type")
    labels = {str(v).strip().lower() for v in bound.args.get("labels") or []}
    fits = [
        title
        for title, (types, fitting) in NEW_ISSUES.items()
        if (kind is None or kind in types) and labels <= fitting
    ]
    return rng.choice(fits) if fits else None


def _issue_type(ctx: ToolContext, rng: random.Random, bound: Bound) -> str:
    """A type that fits the new issue's title (drawn first): "Checkout button does nothing
    on Safari" is a bug, never a feature."""
    fitting = NEW_ISSUES.get(str(bound.args.get("title", "")))
    return rng.choice(sorted(fitting[0] if fitting else ("bug", "feature", "task", "improvement")))


COMMENT_BODIES = [
    "Reproduced on staging, looking into it now.",
    "Fixed in the latest build, please verify.",
    "Can we raise the priority? Three customers reported this today.",
    "Waiting for design sign-off before starting.",
]


# ------------------------------------------------------------------- tools
@server.tool(
    returns=("project", "user", "sprint"),
    phrasings=["Which projects do we have?", "List our projects"],
)
def list_projects(ctx: ToolContext, include_archived: bool = False) -> list[ProjectSummary]:
    """List projects with their key, lead, number of open issues and active sprint.

    Args:
        include_archived: Also list archived (read-only) projects.
    """
    out: list[ProjectSummary] = []
    for p in ctx.sql.all(_projects_listed(include_archived)):
        out.append(
            {
                "project_id": p.id,
                "key": p.key,
                "name": p.name,
                "lead_id": p.lead_id,
                "archived": p.archived,
                "open_issues": p.open_issues,
                "active_sprint_id": p.active_sprint_id,
            }
        )
    return out


@server.tool(
    returns=("project", "user", "sprint"),
    phrasings=["Show me project {project_id}", "Who is on the team of project {project_id}?"],
)
def get_project(ctx: ToolContext, project_id: ProjectId) -> ProjectDetail:
    """Get a project with its members, its active sprint and issue counts per status.

    Args:
        project_id: The project, such as "prj_01" (see list_projects).
    """
    p = _find(ctx, Project, project_id)
    counts = {row.status: row.n for row in ctx.sql.all(STATUS_COUNTS, project_id=p.id)}
    active = ctx.sql.first(ACTIVE_SPRINT, project_id=p.id)
    return {
        "project_id": p.id,
        "key": p.key,
        "name": p.name,
        "description": p.description,
        "archived": p.archived,
        "lead_id": p.lead_id,
        "members": [
            {"user_id": m.user_id, "name": m.name, "role": m.role, "active": m.active}
            for m in ctx.sql.all(MEMBERS, project_id=p.id)
        ],
        "active_sprint": _sprint_summary(ctx, active) if active else None,
        "issue_counts": {s: counts.get(s, 0) for s in STATUSES},
    }


@server.tool(
    returns="user",
    phrasings=[
        "Find {query} in the user directory",
        "Who are the members of project {project_id}?",
    ],
    examples={"query": ["engineer", "designer", "manager", "qa"]},
)
def list_users(
    ctx: ToolContext,
    project_id: ProjectId | None = None,
    query: SearchText | None = None,
    include_inactive: bool = False,
    limit: Limit = 50,
) -> list[UserRecord]:
    """List people in the workspace, optionally only a project's members or those matching a query.

    Args:
        project_id: Only members of this project, such as "prj_02".
        query: Case-insensitive fragment of a name, email or job title, such as "garcia" or
            "designer".
        include_inactive: Also list deactivated users (they cannot be assigned).
        limit: Maximum number of users to return (1-100).
    """
    params: dict[str, Any] = {"limit": limit}
    if project_id is not None:
        _find(ctx, Project, project_id)
        params["project_id"] = project_id
    if query and query.strip():
        params["pattern"] = search_pattern(query.strip())
    stmt = _users_listed("project_id" in params, "pattern" in params, include_inactive)
    me = _acting_user(ctx)
    return [
        {
            "user_id": u.id,
            "name": u.name,
            "email": u.email,
            "title": u.title,
            "active": u.active,
            "is_you": u.id == me,
        }
        for u in ctx.sql.all(stmt, **params)
    ]


@server.tool(
    returns=("issue", "user", "sprint"),
    phrasings=[
        "Find issues about {query}",
        "Which {status} issues are in project {project_id}?",
        "What is {assignee_id} working on?",
        "Show the {priority} priority issues in {project_id}",
    ],
    examples={"query": ["checkout", "timeout", "crash", "upgrade", "dark mode", "webhook"]},
)
def search_issues(
    ctx: ToolContext,
    project_id: ProjectId | None = None,
    query: SearchText | None = None,
    status: Status | None = None,
    assignee_id: UserId | None = None,
    unassigned: bool = False,
    priority: Priority | None = None,
    type: IssueType | None = None,
    label: LabelName | None = None,
    sprint_id: SprintId | None = None,
    limit: Limit = 20,
) -> IssueSearch:
    """Search issues by text and filters; an exact key match first, then the most urgent
    (critical to low, then oldest).

    Args:
        project_id: Only this project, such as "prj_01".
        query: Case-insensitive text in the title or the key, such as "checkout" or "WEB-42".
        status: Only this status: "todo", "in_progress", "in_review", "blocked", "done" or
            "reopened".
        assignee_id: Only issues assigned to this user, such as "usr_007".
        unassigned: Only issues with no assignee.
        priority: Only this priority: "low", "medium", "high" or "critical".
        type: Only this type: "bug", "feature", "task" or "improvement".
        label: Only issues with this label, such as "regression".
        sprint_id: Only issues in this sprint, such as "spr_012".
        limit: Maximum number of issues to return (1-100).

    Returns:
        {"total": number of matching issues, "issues": the first `limit` of them}.
    """
    if unassigned and assignee_id is not None:
        raise InvalidArgument("Pass assignee_id or unassigned=true, not both.")
    filters: dict[str, Any] = {}  # the ISSUE_FILTERS that apply, with their values
    if project_id is not None:
        _find(ctx, Project, project_id)
        filters["project_id"] = project_id
    if query and query.strip():
        filters["pattern"] = search_pattern(query.strip())
    if status is not None:
        filters["status"] = status
    if assignee_id is not None:
        _find(ctx, User, assignee_id)
        filters["assignee_id"] = assignee_id
    if priority is not None:
        filters["priority"] = priority
    if type is not None:
        filters["type"] = type
    if label is not None:
        filters["label_id"] = _label(ctx, label).id
    if sprint_id is not None:
        _find(ctx, Sprint, sprint_id)
        filters["sprint_id"] = sprint_id
    count, page = _issue_search(tuple(filters), unassigned)
    rows = ctx.sql.all(page, key=(query or "").strip().upper(), limit=limit, **filters)
    # a page with room left holds every match: counting them again would find as many
    total = len(rows) if len(rows) < limit else ctx.sql.scalar(count, **filters) or 0
    names = _label_names_by_issue(ctx, [i.id for i in rows])
    return {"total": total, "issues": [_issue_summary(i, names[i.id]) for i in rows]}


@server.tool(
    returns=("issue", "user", "sprint"),
    phrasings=["Show me issue {issue_id}", "What is the status of {issue_id}?"],
)
def get_issue(ctx: ToolContext, issue_id: IssueId) -> IssueDetail:
    """Get one issue with its description, labels, allowed next statuses and status history.

    Args:
        issue_id: The issue, such as "iss_0042" (not its key "WEB-42"; search_issues finds ids).
    """
    return _issue_detail(ctx, _find(ctx, Issue, issue_id).id)


@server.tool(
    writes=True,
    returns=("issue", "project"),
    phrasings=[
        "File a {type} in project {project_id}: '{title}'",
        "Create an issue '{title}' in {project_id} with {priority} priority",
        "Open a ticket in {project_id} titled '{title}' and assign it to {assignee_id}",
    ],
    examples={
        "description": ["Steps to reproduce: open the cart, remove an item, refresh."],
        "story_points": [1, 2, 3, 5, 8],
    },
    values={"title": _issue_title, "type": _issue_type},
)
def create_issue(
    ctx: ToolContext,
    project_id: ProjectId,
    title: str,
    type: IssueType = "task",
    priority: Priority = "medium",
    description: str = "",
    assignee_id: UserId | None = None,
    labels: Annotated[list[str], Entity("label", many=True)] | None = None,
    story_points: int | None = None,
) -> IssueDetail:
    """Create an issue in a project's backlog; it starts in status "todo" and you are its reporter.

    Args:
        project_id: The project, such as "prj_01".
        title: One-line summary, such as "Checkout button does nothing on Safari".
        type: "bug", "feature", "task" or "improvement".
        priority: "low", "medium", "high" or "critical".
        description: Details, such as steps to reproduce or acceptance criteria.
        assignee_id: A member of the project to assign, such as "usr_007".
        labels: Label names, such as ["regression", "frontend"].
        story_points: Estimate: one of 0, 1, 2, 3, 5, 8, 13, 21.
    """
    project = _find(ctx, Project, project_id)
    _writable(ctx, project.id)
    title = _clean_text(title, "title", 200)
    if story_points is not None:
        _check_points(story_points)
    found_labels = [_label(ctx, name) for name in dict.fromkeys(labels or [])]
    if assignee_id is not None:
        _check_assignable(ctx, project, _find(ctx, User, assignee_id))
    # written in the ORM's flush order: the issue, the project's counter, the issue's labels
    issue_id = next_id(ctx, Issue.id, "iss", 4)
    ctx.sql.insert(
        Issue,
        id=issue_id,
        key=f"{project.key}-{project.next_issue_number}",
        project_id=project.id,
        type=type,
        title=title,
        description=description.strip(),
        status="todo",
        priority=priority,
        story_points=story_points,
        assignee_id=assignee_id,
        reporter_id=_acting_user(ctx),
        sprint_id=None,
        created_at=ctx.now,
        updated_at=ctx.now,
        resolved_at=None,
    )
    ctx.sql.update(Project, project, next_issue_number=project.next_issue_number + 1)
    label_ids = dict.fromkeys(lbl.id for lbl in found_labels)
    ctx.sql.insert_many(IssueLabel, [{"issue_id": issue_id, "label_id": i} for i in label_ids])
    _record(ctx, issue_id, "todo", None)
    return _issue_detail(ctx, issue_id)


@server.tool(
    writes=True,
    idempotent=True,
    returns="issue",
    phrasings=[
        "Change the priority of {issue_id} to {priority}",
        "Rename issue {issue_id} to '{title}'",
        "Estimate {issue_id} at {story_points} points",
    ],
    values={"title": _retitle},
    examples={
        "description": ["Updated after triage: only affects Safari 17."],
        "story_points": [1, 2, 3, 5, 8],
    },
)
def update_issue(
    ctx: ToolContext,
    issue_id: IssueId,
    title: str | None = None,
    description: str | None = None,
    priority: Priority | None = None,
    type: IssueType | None = None,
    story_points: int | None = None,
) -> IssueDetail:
    """Change an issue's fields; only the fields you pass change. Status, assignee, labels and
    sprint have their own tools (transition_issue, assign_issue, add_label, add_issue_to_sprint).

    Args:
        issue_id: The issue, such as "iss_0042".
        title: New one-line summary.
        description: New description (replaces the old one).
        priority: "low", "medium", "high" or "critical".
        type: "bug", "feature", "task" or "improvement".
        story_points: New estimate: one of 0, 1, 2, 3, 5, 8, 13, 21.
    """
    issue = _find(ctx, Issue, issue_id)
    if all(v is None for v in (title, description, priority, type, story_points)):
        raise InvalidArgument(
            "Nothing to change: pass at least one of title, description, priority, type, "
            "story_points."
        )
    _writable(ctx, issue.project_id)
    changes: dict[str, Any] = {}
    if title is not None:
        changes["title"] = _clean_text(title, "title", 200)
    if story_points is not None:
        _check_points(story_points)
        changes["story_points"] = story_points
    if description is not None:
        changes["description"] = description.strip()
    if priority is not None:
        changes["priority"] = priority
    if type is not None:
        changes["type"] = type
    ctx.sql.update(Issue, issue, **changes, updated_at=ctx.now)
    return _issue_detail(ctx, issue.id)


NOTES_BY_STATUS: dict[str, tuple[str, ...]] = {
    "todo": ("Back to the backlog until next sprint.", "Not started yet, deprioritised."),
    "in_progress": ("Picking this up now.", "Starting on it today."),
    "in_review": ("PR is up, ready for review.", "Fix pushed, please review."),
    "blocked": ("Blocked by the payments API change.", "Waiting for the security review."),
    "done": ("Fix merged and verified on staging.", "Shipped in today's release."),
    "reopened": ("Still happening on the latest build.", "Reproduced again after the fix."),
}
"""Notes a person leaves when moving an issue to each status (synthesis draws from them):
"Blocked by ..." goes with blocked, never with in progress."""


def _note_for_status(ctx: ToolContext, rng: random.Random, bound: Bound) -> str | None:
    """A note that says why the issue moves to the ``to_status`` drawn."""
    notes = NOTES_BY_STATUS.get(str(bound.args.get("to_status", "")))
    return rng.choice(notes) if notes else None


@server.tool(
    writes=True,
    returns="issue",
    phrasings=[
        "Move {issue_id} to {to_status}",
        "Start working on {issue_id}",
        "Mark {issue_id} as {to_status} with the note '{comment}'",
    ],
    values={"comment": _note_for_status},
)
def transition_issue(
    ctx: ToolContext,
    issue_id: IssueId,
    to_status: Status,
    comment: str | None = None,
) -> Transitioned:
    """Move an issue to another status along the workflow (see get_workflow).

    Allowed moves: todo -> in_progress | blocked; in_progress -> in_review | todo | blocked;
    in_review -> done | in_progress | blocked; blocked -> todo | in_progress;
    done -> reopened; reopened -> todo | in_progress. "in_progress" and "in_review" need an
    assignee; "blocked" needs a comment. Reopening an issue of a closed sprint moves it to the
    backlog.

    Args:
        issue_id: The issue, such as "iss_0042".
        to_status: The new status: "todo", "in_progress", "in_review", "blocked", "done" or
            "reopened".
        comment: A note added to the issue's comments, such as "Fix merged, ready for QA";
            required when moving to "blocked" (say what blocks it).
    """
    issue = _find(ctx, Issue, issue_id)
    _writable(ctx, issue.project_id)
    current = issue.status
    allowed = TRANSITIONS[current]
    if to_status not in allowed:
        reason = (
            f"{issue.id} is already '{current}'."
            if to_status == current
            else f"{issue.id} cannot move from '{current}' to '{to_status}'."
        )
        hint = ""
        if to_status == "done" and current in ("todo", "reopened", "blocked"):
            hint = " To finish it, move it to 'in_progress', then 'in_review', then 'done'."
        raise _broken(
            "workflow_transition",
            f"{reason} Allowed next states from '{current}': {', '.join(allowed)}.{hint}",
        )
    if to_status in NEEDS_ASSIGNEE and issue.assignee_id is None:
        raise _broken(
            "assignee_required",
            f"{issue.id} has no assignee, and '{to_status}' needs one. Assign a project member "
            f"with assign_issue first. Allowed next states from '{current}': {', '.join(allowed)}.",
        )
    note = (
        _clean_text(comment, "comment", 5000) if comment is not None and comment.strip() else None
    )
    if to_status == "blocked" and note is None:
        raise _broken(
            "blocked_reason_required",
            f"moving {issue.id} to 'blocked' needs a comment saying what blocks it, such as "
            "'Waiting for the security review'.",
        )
    moved_from: str | None = None
    sprint_id = issue.sprint_id
    sprint = ctx.sql.first(record_by_key(Sprint), key=sprint_id) if sprint_id else None
    if to_status == "reopened" and sprint is not None and sprint.state == "closed":
        moved_from, sprint_id = issue.sprint_id, None
    ctx.sql.update(
        Issue,
        issue,
        sprint_id=sprint_id,
        status=to_status,
        resolved_at=ctx.now if to_status == "done" else None,
        updated_at=ctx.now,
    )
    transition_id = _record(ctx, issue.id, to_status, current)
    comment_id = _add_comment(ctx, issue.id, note)["id"] if note is not None else None
    return {
        "issue_id": issue.id,
        "key": issue.key,
        "from_status": current,
        "to_status": to_status,
        "next_statuses": list(TRANSITIONS[to_status]),
        "transition_id": transition_id,
        "comment_id": comment_id,
        "removed_from_closed_sprint": moved_from,
    }


@server.tool(
    writes=True,
    idempotent=True,
    returns=("issue", "user"),
    phrasings=["Assign {issue_id} to {assignee_id}", "Give issue {issue_id} to {assignee_id}"],
)
def assign_issue(ctx: ToolContext, issue_id: IssueId, assignee_id: UserId | None) -> Assigned:
    """Assign an issue to a member of its project, or unassign it with assignee_id null.

    Args:
        issue_id: The issue, such as "iss_0042".
        assignee_id: An active member of the issue's project, such as "usr_007", or null to
            unassign (not allowed while the issue is "in_progress" or "in_review").
    """
    issue = _find(ctx, Issue, issue_id)
    project = _writable(ctx, issue.project_id)
    previous = issue.assignee_id
    if assignee_id is None:
        if issue.status in NEEDS_ASSIGNEE:
            raise _broken(
                "assignee_required",
                f"{issue.id} is '{issue.status}' and must keep an assignee. Reassign it to "
                "another member instead, or move it back to 'todo' first.",
            )
    else:
        _check_assignable(ctx, project, _find(ctx, User, assignee_id))
    if previous != assignee_id:
        issue = ctx.sql.update(Issue, issue, assignee_id=assignee_id, updated_at=ctx.now)
    return {
        "issue_id": issue.id,
        "key": issue.key,
        "assignee_id": issue.assignee_id,
        "assignee_name": _user_name(ctx, issue.assignee_id),
        "previous_assignee_id": previous,
    }


@server.tool(
    writes=True,
    returns=("issue", "label"),
    phrasings=["Label {issue_id} as {label}", "Add the {label} label to issue {issue_id}"],
    normalise={"label": "casefold"},
)
def add_label(ctx: ToolContext, issue_id: IssueId, label: LabelName) -> IssueLabels:
    """Add an existing workspace label to an issue.

    Args:
        issue_id: The issue, such as "iss_0042".
        label: The label name, such as "regression" (an unknown name lists the existing ones).
    """
    issue = _find(ctx, Issue, issue_id)
    found = _label(ctx, label)
    _writable(ctx, issue.project_id)
    if ctx.sql.first(HAS_LABEL, issue_id=issue.id, label_id=found.id) is not None:
        raise Conflict(f"{issue.id} already has the label '{found.name}'.")
    ctx.sql.update(Issue, issue, updated_at=ctx.now)  # as the ORM's flush: the issue first
    ctx.sql.insert(IssueLabel, issue_id=issue.id, label_id=found.id)
    return {"issue_id": issue.id, "labels": _label_names(ctx, issue.id)}


@server.tool(
    writes=True,
    inverse_of="add_label",
    destructive=True,
    returns=("issue", "label"),
    phrasings=["Remove the {label} label from {issue_id}", "Untag {issue_id} as {label}"],
    normalise={"label": "casefold"},
)
def remove_label(ctx: ToolContext, issue_id: IssueId, label: LabelName) -> IssueLabels:
    """Remove a label from an issue.

    Args:
        issue_id: The issue, such as "iss_0042".
        label: The label name as shown on the issue, such as "needs-triage".
    """
    issue = _find(ctx, Issue, issue_id)
    found = _label(ctx, label)
    _writable(ctx, issue.project_id)
    if ctx.sql.first(HAS_LABEL, issue_id=issue.id, label_id=found.id) is None:
        current = ", ".join(_label_names(ctx, issue.id)) or "none"
        raise NotFound(f"{issue.id} does not have the label '{found.name}'. Its labels: {current}.")
    ctx.sql.update(Issue, issue, updated_at=ctx.now)  # as the ORM's flush: updates, then deletes
    ctx.sql.run(REMOVE_LABEL, issue_id=issue.id, label_id=found.id)
    return {"issue_id": issue.id, "labels": _label_names(ctx, issue.id)}


@server.tool(
    writes=True,
    returns=("comment", "issue"),
    phrasings=["Comment on {issue_id}: '{body}'", "Add a note to issue {issue_id} saying {body}"],
    examples={"body": COMMENT_BODIES},
)
def add_comment(ctx: ToolContext, issue_id: IssueId, body: str) -> NewComment:
    """Add a comment to an issue, written as you.

    Args:
        issue_id: The issue, such as "iss_0042".
        body: The comment text (at most 5000 characters), such as "Reproduced on staging."
    """
    issue = _find(ctx, Issue, issue_id)
    _writable(ctx, issue.project_id)
    comment = _add_comment(ctx, issue.id, _clean_text(body, "body", 5000))
    ctx.sql.update(Issue, issue, updated_at=ctx.now)
    return {
        "comment_id": comment["id"],
        "issue_id": issue.id,
        "author_id": comment["author_id"],
        "body": comment["body"],
        "created_at": comment["created_at"].isoformat(timespec="minutes"),
    }


@server.tool(
    returns=("comment", "user"),
    phrasings=["Show the comments on {issue_id}", "What did people say on issue {issue_id}?"],
)
def list_comments(
    ctx: ToolContext, issue_id: IssueId, limit: int = 20, newest_first: bool = False
) -> list[CommentRecord]:
    """List an issue's comments, oldest first unless newest_first is set.

    Args:
        issue_id: The issue, such as "iss_0042".
        limit: Maximum number of comments to return (1-100).
        newest_first: Start from the most recent comment.
    """
    issue = _find(ctx, Issue, issue_id)
    # Checked here, not with Field(ge=1, le=100): an unknown issue is reported first.
    if not 1 <= limit <= 100:
        raise InvalidArgument(f"limit must be between 1 and 100, got {limit}.")
    rows = ctx.sql.all(_comments_listed(newest_first), issue_id=issue.id, limit=limit)
    return [
        {
            "comment_id": c.id,
            "author_id": c.author_id,
            "author_name": c.author_name,
            "body": c.body,
            "created_at": c.created_at.isoformat(timespec="minutes"),
        }
        for c in rows
    ]


@server.tool(
    writes=True,
    returns=("sprint", "project"),
    phrasings=[
        "Plan a sprint '{name}' in {project_id} from {start_date} to {end_date}",
        "Create sprint {name} for project {project_id}, {start_date} to {end_date}, goal: {goal}",
    ],
    examples={
        "start_date": _sprint_start,
        "goal": ["Ship guest checkout", "Burn down the bug backlog"],
    },
    values={"end_date": _sprint_end, "name": _sprint_name},
)
def create_sprint(
    ctx: ToolContext,
    project_id: ProjectId,
    name: str,
    start_date: str,
    end_date: str,
    goal: str = "",
) -> SprintSummary:
    """Plan a new sprint for a project; it starts in state "planned".

    Args:
        project_id: The project, such as "prj_01".
        name: Unique within the project, such as "WEB Sprint 42".
        start_date: First day, today or later, such as "2026-03-02" (list_sprints shows today).
        end_date: Last day, 1 to 28 days after start_date, such as "2026-03-15".
        goal: What the sprint should achieve, such as "Ship guest checkout".
    """
    project = _find(ctx, Project, project_id)
    _writable(ctx, project.id)
    name = name.strip()
    if not name or len(name) > 80:
        raise InvalidArgument("name must be 1 to 80 characters long.")
    start = parse_date(start_date, "start_date")
    end = parse_date(end_date, "end_date")
    today = ctx.now.date()
    if start < today:
        raise InvalidArgument(
            f"start_date {start.isoformat()} is in the past; today is {today.isoformat()}."
        )
    if not 1 <= (end - start).days <= MAX_SPRINT_DAYS:
        raise InvalidArgument(
            f"end_date must be 1 to {MAX_SPRINT_DAYS} days after start_date "
            f"({start.isoformat()}), got {end.isoformat()}."
        )
    clash = ctx.sql.scalar(SPRINT_NAMED, project_id=project.id, name=name.lower())
    if clash is not None:
        raise Conflict(f"Project {project.id} already has a sprint named {name!r} ({clash}).")
    sprint_id = next_id(ctx, Sprint.id, "spr", 3)
    ctx.sql.insert(
        Sprint,
        id=sprint_id,
        project_id=project.id,
        name=name,
        goal=goal.strip(),
        state="planned",
        start_date=start,
        end_date=end,
        started_at=None,
        closed_at=None,
    )
    return _sprint_summary(ctx, ctx.sql.one(record_by_key(Sprint), key=sprint_id))


@server.tool(
    writes=True,
    returns="sprint",
    phrasings=["Start sprint {sprint_id}", "Kick off sprint {sprint_id}"],
)
def start_sprint(ctx: ToolContext, sprint_id: SprintRow) -> SprintSummary:
    """Start a planned sprint: it becomes the project's active sprint, running from today for
    its planned length.

    Args:
        sprint_id: A planned sprint, such as "spr_012" (see list_sprints).
    """
    sprint = sprint_id  # the core has resolved the id to its row
    _writable(ctx, sprint.project_id)
    if sprint.state != "planned":
        raise _broken(
            "sprint_state",
            f"sprint {sprint.id} is '{sprint.state}'; only a 'planned' sprint can be started.",
        )
    active = ctx.sql.first(ACTIVE_SPRINT, project_id=sprint.project_id)
    if active is not None:
        raise _broken(
            "one_active_sprint",
            f"project {sprint.project_id} already has the active sprint {active.id} "
            f"({active.name}); close it with close_sprint before starting {sprint.id}.",
        )
    length = sprint.end_date - sprint.start_date
    today = ctx.now.date()
    sprint = ctx.sql.update(
        Sprint,
        sprint,
        state="active",
        started_at=ctx.now,
        start_date=today,
        end_date=today + length,
    )
    return _sprint_summary(ctx, sprint)


@server.tool(
    writes=True,
    returns=("sprint", "issue"),
    phrasings=[
        "Close sprint {sprint_id}",
        "Close sprint {sprint_id} and carry the unfinished work over to {move_open_issues_to}",
    ],
)
def close_sprint(
    ctx: ToolContext, sprint_id: SprintRow, move_open_issues_to: SprintId | None = None
) -> SprintClosed:
    """Close the active sprint. Done issues stay in it; unfinished ones move to another sprint of
    the same project or, by default, back to the backlog. A closed sprint takes no more issues.

    Args:
        sprint_id: The active sprint, such as "spr_012".
        move_open_issues_to: A planned or active sprint of the same project for the unfinished
            issues, such as "spr_013"; omit to move them to the backlog.
    """
    sprint = sprint_id  # the core has resolved the id to its row
    _writable(ctx, sprint.project_id)
    if sprint.state != "active":
        raise _broken(
            "sprint_state",
            f"sprint {sprint.id} is '{sprint.state}'; only an 'active' sprint can be closed.",
        )
    target: Any = None
    if move_open_issues_to is not None:
        target = _find(ctx, Sprint, move_open_issues_to)
        if target.id == sprint.id:
            raise InvalidArgument(
                "move_open_issues_to must be another sprint than the one closing."
            )
        if target.project_id != sprint.project_id:
            raise _broken(
                "same_project",
                f"sprint {target.id} belongs to project {target.project_id}, not "
                f"{sprint.project_id}; pick a planned sprint of {sprint.project_id} (list_sprints).",
            )
        if target.state == "closed":
            raise _broken(
                "sprint_closed",
                f"sprint {target.id} is closed and takes no issues; pick a planned sprint or "
                "omit move_open_issues_to to use the backlog.",
            )
    issues = ctx.sql.all(SPRINT_ISSUES, sprint_id=sprint.id)
    completed = [i.id for i in issues if i.status == "done"]
    moved = []
    for issue in issues:  # by id, as the ORM's flush wrote them; then the sprint
        if issue.status != "done":
            ctx.sql.update(
                Issue, issue, sprint_id=target.id if target else None, updated_at=ctx.now
            )
            moved.append(issue.id)
    sprint = ctx.sql.update(Sprint, sprint, state="closed", closed_at=ctx.now)
    return {
        "sprint_id": sprint.id,
        "state": sprint.state,
        "completed_issue_ids": completed,
        "moved_issue_ids": moved,
        "moved_to": target.id if target else "backlog",
    }


@server.tool(
    writes=True,
    idempotent=True,
    returns=("issue", "sprint"),
    phrasings=["Add {issue_id} to sprint {sprint_id}", "Plan issue {issue_id} into {sprint_id}"],
)
def add_issue_to_sprint(ctx: ToolContext, issue_id: IssueId, sprint_id: SprintRow) -> SprintPlanned:
    """Put an issue into a planned or active sprint of its project (moving it out of its
    current sprint, if any).

    Args:
        issue_id: The issue, such as "iss_0042"; it must not be "done".
        sprint_id: A planned or active sprint of the same project, such as "spr_012".
    """
    issue, sprint = _find(ctx, Issue, issue_id), sprint_id  # the core resolved sprint_id
    _writable(ctx, issue.project_id)
    if sprint.state == "closed":
        raise _broken(
            "sprint_closed",
            f"sprint {sprint.id} ({sprint.name}) is closed and takes no issues; pick a planned "
            "or active sprint of the project (list_sprints).",
        )
    if sprint.project_id != issue.project_id:
        raise _broken(
            "same_project",
            f"sprint {sprint.id} belongs to project {sprint.project_id}, but {issue.id} is in "
            f"{issue.project_id}; call list_sprints('{issue.project_id}') for its sprints.",
        )
    if issue.status == "done":
        raise _broken(
            "done_issue_not_planned",
            f"{issue.id} is 'done'; move it to 'reopened' with transition_issue before planning "
            "it again.",
        )
    previous = issue.sprint_id
    if previous == sprint.id:
        raise Conflict(f"{issue.id} is already in sprint {sprint.id}.")
    ctx.sql.update(Issue, issue, sprint_id=sprint.id, updated_at=ctx.now)
    return {
        "issue_id": issue.id,
        "key": issue.key,
        "sprint_id": sprint.id,
        "previous_sprint_id": previous,
        "sprint": _sprint_summary(ctx, sprint),
    }


@server.tool(
    returns="sprint",
    phrasings=[
        "List the sprints of project {project_id}",
        "Which {state} sprints does {project_id} have?",
    ],
)
def list_sprints(
    ctx: ToolContext,
    project_id: ProjectId,
    state: Literal["planned", "active", "closed"] | None = None,
) -> SprintList:
    """List a project's sprints, oldest first, with issue counts; also tells today's date.

    Args:
        project_id: The project, such as "prj_01".
        state: Only sprints in this state: "planned", "active" or "closed".
    """
    project = _find(ctx, Project, project_id)
    params: dict[str, Any] = {"project_id": project.id}
    if state is not None:
        params["state"] = state
    rows = ctx.sql.all(_sprints_listed(state is not None), **params)
    return {
        "project_id": project.id,
        "today": ctx.now.date().isoformat(),
        "sprints": [_sprint_summary(ctx, s) for s in rows],
    }


@server.tool(
    returns="issue",
    phrasings=["What statuses can {issue_id} move to?", "Explain the workflow rules"],
)
def get_workflow(ctx: ToolContext, issue_id: IssueId | None = None) -> Workflow:
    """The workflow: statuses, the allowed moves between them, and the named business rules;
    with issue_id, also where that issue can go next.

    Args:
        issue_id: An issue to check, such as "iss_0042".
    """
    out: Workflow = {
        "statuses": list(STATUSES),
        "initial_status": "todo",
        "transitions": {s: list(t) for s, t in TRANSITIONS.items()},
        "needs_assignee": sorted(NEEDS_ASSIGNEE),
        "rules": [{"rule": name, "description": text} for name, text in RULES.items()],
    }
    if issue_id is not None:
        issue = _find(ctx, Issue, issue_id)
        blocked = {}
        for status in TRANSITIONS[issue.status]:
            if status in NEEDS_ASSIGNEE and issue.assignee_id is None:
                blocked[status] = "assignee_required: assign the issue first"
            elif status == "blocked":
                blocked[status] = "blocked_reason_required: pass a comment"
        out["issue"] = {
            "issue_id": issue.id,
            "key": issue.key,
            "status": issue.status,
            "assignee_id": issue.assignee_id,
            "next_statuses": list(TRANSITIONS[issue.status]),
            "conditions": blocked,
        }
    return out


@server.tool(
    writes=True,
    returns=("project", "user"),
    phrasings=[
        "Add {user_id} to project {project_id}",
        "Make {user_id} a {role} on project {project_id}",
    ],
)
def add_project_member(
    ctx: ToolContext, project_id: ProjectId, user_id: UserRow, role: MemberRole = "developer"
) -> MemberAdded:
    """Add an active user to a project's team, so issues of the project can be assigned to them.

    Args:
        project_id: The project, such as "prj_03".
        user_id: The user to add, such as "usr_014" (see list_users).
        role: "developer", "qa", "designer" or "pm".
    """
    project, user = _find(ctx, Project, project_id), user_id  # the core resolved user_id
    _writable(ctx, project.id)
    if not user.active:
        raise _broken(
            "user_inactive",
            f"{user.name} ({user.id}) is deactivated and cannot join projects.",
        )
    if ctx.sql.first(MEMBER, project_id=project.id, user_id=user.id) is not None:
        raise Conflict(f"{user.name} ({user.id}) is already a member of {project.id}.")
    ctx.sql.insert(
        ProjectMember, project_id=project.id, user_id=user.id, role=role, joined_on=ctx.now.date()
    )
    return {
        "project_id": project.id,
        "user_id": user.id,
        "name": user.name,
        "role": role,
        "member_count": ctx.sql.scalar(MEMBER_COUNT, project_id=project.id),
    }


# --------------------------------------------------------------- entities
# What exists and is worth asking about, for grounding synthesized requests.
@server.entity(
    "project",
    key="project_id",
    model=Project,
    not_found="Call list_projects to see the project ids.",
)
def _projects(ctx: ToolContext) -> list[dict]:
    """Live (not archived) projects."""
    return [
        {"project_id": p.id, "key": p.key, "name": p.name} for p in ctx.sql.all(ENTITY_PROJECTS)
    ]


@server.entity("user", key="user_id", model=User, not_found="Call list_users to find the user id.")
def _users(ctx: ToolContext) -> list[dict]:
    """Active users (deactivated ones cannot be assigned)."""
    return [
        {"user_id": u.id, "name": u.name, "email": u.email, "title": u.title}
        for u in ctx.sql.all(ENTITY_USERS)
    ]


@server.entity(
    "issue",
    key="issue_id",
    model=Issue,
    not_found="Call search_issues to find the issue id.",
)
def _issues(ctx: ToolContext) -> list[dict]:
    """Issues of live projects, with a status they can legally move to next."""
    out = []
    for i in ctx.sql.all(ENTITY_ISSUES):
        moves = [
            s
            for s in TRANSITIONS[i.status]
            if s != "blocked" and (s not in NEEDS_ASSIGNEE or i.assignee_id is not None)
        ]
        record = {
            "issue_id": i.id,
            "key": i.key,
            "title": i.title,
            "project_id": i.project_id,
            "status": i.status,
        }
        if i.assignee_id is not None:
            record["assignee_id"] = i.assignee_id
        if moves:
            record["to_status"] = moves[0]
        out.append(record)
    return out


@server.entity(
    "sprint",
    key="sprint_id",
    model=Sprint,
    not_found="Call list_sprints with the project id to see its sprints.",
)
def _sprints(ctx: ToolContext) -> list[dict]:
    """Planned and active sprints (closed ones take no changes)."""
    return [
        {"sprint_id": s.id, "name": s.name, "project_id": s.project_id, "state": s.state}
        for s in ctx.sql.all(ENTITY_SPRINTS)
    ]


@server.entity("label", key="label")
def _labels(ctx: ToolContext) -> list[dict]:
    return [{"label": lb.name, "description": lb.description} for lb in ctx.sql.all(ENTITY_LABELS)]


@server.entity("comment", key="comment_id")
def _comments(ctx: ToolContext) -> list[dict]:
    return [{"comment_id": c.id, "issue_id": c.issue_id} for c in ctx.sql.all(ENTITY_COMMENTS)]
