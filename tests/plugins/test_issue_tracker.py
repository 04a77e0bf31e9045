"""The issue tracker server: its workflow and sprint rules under random call sequences,
precise rule checks, its hand-written tasks, and the conformance suite."""

from __future__ import annotations

import datetime as dt
import itertools
import sqlite3
import time
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

import prove_gym
from prove_gym import ErrorKind, Session, ToolResult
from prove_gym.server import canonical_state_hash
from prove_gym.synth.ship import is_hand_written
from prove_gym.testing.conformance import conformance_suite
from prove_gym.testing.sql import rows

TRACKER = prove_gym.get_server("issue_tracker")
SEEDS = [0, 1, 2, 7]

# The workflow as the server documents it, written out here independently of the code.
ALLOWED = {
    ("todo", "in_progress"),
    ("todo", "blocked"),
    ("in_progress", "in_review"),
    ("in_progress", "todo"),
    ("in_progress", "blocked"),
    ("in_review", "done"),
    ("in_review", "in_progress"),
    ("in_review", "blocked"),
    ("blocked", "todo"),
    ("blocked", "in_progress"),
    ("done", "reopened"),
    ("reopened", "todo"),
    ("reopened", "in_progress"),
}
STATUSES = ["todo", "in_progress", "in_review", "blocked", "done", "reopened"]


def column(session: Session, sql: str, *params: Any) -> list[Any]:
    return [r[0] for r in rows(session, sql, *params)]


def rule_violations(session: Session) -> list[str]:
    """Every broken invariant of the server's state, read straight from SQLite."""
    broken = []
    projects = set(column(session, "SELECT id FROM projects"))
    members = set(rows(session, "SELECT project_id, user_id FROM project_members"))
    sprints = {r[0]: r[1:] for r in rows(session, "SELECT id, project_id, state FROM sprints")}
    issues = rows(session, "SELECT id, project_id, status, assignee_id, sprint_id FROM issues")
    history: dict[str, list[tuple]] = {}
    for issue_id, frm, to in rows(
        session,
        "SELECT issue_id, from_status, to_status FROM issue_transitions ORDER BY length(id), id",
    ):
        history.setdefault(issue_id, []).append((frm, to))
    for issue_id, project_id, status, assignee, sprint_id in issues:
        if status not in STATUSES:
            broken.append(f"{issue_id} has the unknown status {status!r}")
        if project_id not in projects:
            broken.append(f"{issue_id} belongs to the missing project {project_id}")
        if assignee is not None and (project_id, assignee) not in members:
            broken.append(f"{issue_id} is assigned to {assignee}, not a member of {project_id}")
        if status in ("in_progress", "in_review") and assignee is None:
            broken.append(f"{issue_id} is {status} without an assignee")
        if sprint_id is not None:
            if sprint_id not in sprints:
                broken.append(f"{issue_id} is in the missing sprint {sprint_id}")
            else:
                sprint_project, state = sprints[sprint_id]
                if sprint_project != project_id:
                    broken.append(f"{issue_id} is in {sprint_id} of another project")
                if state == "closed" and status != "done":
                    broken.append(f"{issue_id} is {status} inside the closed sprint {sprint_id}")
        steps = history.get(issue_id, [])
        if not steps or steps[0] != (None, "todo"):
            broken.append(f"{issue_id}'s history does not start with its creation in todo")
            continue
        for (_, before), (frm, to) in itertools.pairwise(steps):
            if frm != before or (frm, to) not in ALLOWED:
                broken.append(f"{issue_id} recorded the move {frm} -> {to} after {before}")
        if steps[-1][1] != status:
            broken.append(f"{issue_id} is {status} but its history ends in {steps[-1][1]}")
    if set(history) - {i[0] for i in issues}:
        broken.append("the history names issues that do not exist")
    for project_id, n in rows(
        session, "SELECT project_id, count(*) FROM sprints WHERE state = 'active' GROUP BY 1"
    ):
        if n > 1:
            broken.append(f"{project_id} has {n} active sprints")
    return broken


def closed_sprint_issues(session: Session) -> dict[str, set[str]]:
    found: dict[str, set[str]] = {
        s: set() for s in column(session, "SELECT id FROM sprints WHERE state = 'closed'")
    }
    for issue_id, sprint_id in rows(
        session,
        "SELECT i.id, i.sprint_id FROM issues i JOIN sprints s ON s.id = i.sprint_id "
        "WHERE s.state = 'closed'",
    ):
        found[sprint_id].add(issue_id)
    return found


def hash_of(snapshot: bytes) -> str:
    conn = sqlite3.connect(":memory:")
    try:
        conn.deserialize(snapshot)
        return canonical_state_hash(conn, TRACKER.base.metadata)
    finally:
        conn.close()


def checked_call(session: Session, name: str, args: Any) -> ToolResult:
    """Call a tool and check what holds for every call: no crash, failures change nothing.

    The state is compared by its canonical hash; identical database bytes (the usual case,
    checked first because it is cheap) imply identical hashes.
    """
    before = session.snapshot()
    result = session.call(name, args)
    assert result.error_kind != ErrorKind.INTERNAL, result.message
    if not result.ok:
        assert result.message, f"{name} failed without a message"
    if not result.ok or not TRACKER.tools[name].writes:
        unchanged = session.snapshot() == before or session.state_hash() == hash_of(before)
        why = "it failed" if not result.ok else "it only reads"
        assert unchanged, f"{name}({args}) changed the state though {why}"
    return result


# ------------------------------------------------------------- stateful
GHOSTS = {
    "issue": ["iss_9999", "WEB-1", ""],
    "user": ["usr_999", "nobody"],
    "sprint": ["spr_999"],
    "project": ["prj_99", "WEB"],
    "label": ["no-such-label"],
}


class IssueTrackerRules(RuleBasedStateMachine):
    """Random sequences of valid and invalid calls; the invariants must hold after every one."""

    session: Session

    @initialize(seed=st.sampled_from(SEEDS), data=st.data())
    def open_session(self, seed: int, data: st.DataObject) -> None:
        self.session = TRACKER.session(seed=seed)
        self.closed = closed_sprint_issues(self.session)
        self.transitions = set(column(self.session, "SELECT id FROM issue_transitions"))
        # A few issues of every status get most of the calls, so that sequences go deep.
        by_status = column(
            self.session,
            "SELECT min(id) FROM issues WHERE project_id != 'prj_05' GROUP BY status, project_id",
        )
        self.focus = data.draw(st.lists(st.sampled_from(by_status), min_size=4, max_size=10))

    def pick(self, data: st.DataObject, kind: str, sql: str, *params: Any) -> str:
        """An id from the live state (most of the time) or one that does not exist."""
        live = column(self.session, sql, *params)
        if not live or data.draw(st.integers(0, 9), label="ghost?") == 0:
            return data.draw(st.sampled_from(GHOSTS[kind]), label=kind)
        return data.draw(st.sampled_from(live), label=kind)

    def issue(self, data: st.DataObject) -> str:
        if data.draw(st.integers(0, 9), label="focus?") < 6:
            return data.draw(st.sampled_from(self.focus), label="issue")
        return self.pick(data, "issue", "SELECT id FROM issues")

    def user(self, data: st.DataObject) -> str:
        return self.pick(data, "user", "SELECT id FROM users")

    def sprint(self, data: st.DataObject) -> str:
        return self.pick(data, "sprint", "SELECT id FROM sprints")

    def project(self, data: st.DataObject) -> str:
        return self.pick(data, "project", "SELECT id FROM projects")

    def call(self, name: str, args: dict[str, Any]) -> ToolResult:
        return checked_call(self.session, name, args)

    @rule(
        data=st.data(),
        any_status=st.booleans(),
        note=st.sampled_from(["Waiting on QA", None, ""]),
    )
    def transition(self, data: st.DataObject, any_status: bool, note: str | None) -> None:
        """Half of the moves follow the workflow graph, half go anywhere."""
        issue_id = self.issue(data)
        status = column(self.session, "SELECT status FROM issues WHERE id = ?", issue_id)
        nexts = [to for frm, to in sorted(ALLOWED) if status and frm == status[0]]
        choices = STATUSES if any_status or not nexts else nexts
        args: dict[str, Any] = {
            "issue_id": issue_id,
            "to_status": data.draw(st.sampled_from(choices)),
        }
        if note is not None:
            args["comment"] = note
        self.call("transition_issue", args)

    @rule(data=st.data(), detour=st.booleans())
    def walk_an_issue_forward(self, data: st.DataObject, detour: bool) -> None:
        """Assign a member, then try each step to done (maybe blocked on the way)."""
        issue_id = self.issue(data)
        found = rows(self.session, "SELECT project_id FROM issues WHERE id = ?", issue_id)
        if found:
            team = column(
                self.session,
                "SELECT m.user_id FROM project_members m JOIN users u ON u.id = m.user_id "
                "WHERE m.project_id = ? AND u.active",
                found[0][0],
            )
            if team:
                self.call(
                    "assign_issue",
                    {"issue_id": issue_id, "assignee_id": data.draw(st.sampled_from(team))},
                )
        steps = ["reopened", "in_progress", "in_review", "done"]
        if detour:
            steps[2:2] = ["blocked", "in_progress"]
        for status in steps:
            args = {"issue_id": issue_id, "to_status": status}
            if status == "blocked":
                args["comment"] = "Waiting for the vendor"
            self.call("transition_issue", args)

    @rule(data=st.data(), unassign=st.booleans())
    def assign(self, data: st.DataObject, unassign: bool) -> None:
        assignee = None if unassign else self.user(data)
        self.call("assign_issue", {"issue_id": self.issue(data), "assignee_id": assignee})

    @rule(data=st.data())
    def add_member(self, data: st.DataObject) -> None:
        self.call(
            "add_project_member", {"project_id": self.project(data), "user_id": self.user(data)}
        )

    @rule(data=st.data(), where=st.sampled_from(["same project", "not closed", "any"]))
    def plan_into_sprint(self, data: st.DataObject, where: str) -> None:
        issue_id = self.issue(data)
        sql = {
            "same project": "SELECT s.id FROM sprints s JOIN issues i "
            "ON i.project_id = s.project_id WHERE i.id = ? AND s.state != 'closed'",
            "not closed": "SELECT id FROM sprints WHERE state != 'closed' AND ? IS NOT NULL",
            "any": "SELECT id FROM sprints WHERE ? IS NOT NULL",
        }[where]
        sprint_id = self.pick(data, "sprint", sql, issue_id)
        self.call("add_issue_to_sprint", {"issue_id": issue_id, "sprint_id": sprint_id})

    @rule(data=st.data())
    def roll_the_sprint_over(self, data: st.DataObject) -> None:
        """Close a project's active sprint into its next planned one, then start that one."""
        project_id = self.project(data)
        active = column(
            self.session,
            "SELECT id FROM sprints WHERE project_id = ? AND state = 'active'",
            project_id,
        )
        planned = column(
            self.session,
            "SELECT id FROM sprints WHERE project_id = ? AND state = 'planned' ORDER BY id",
            project_id,
        )
        if active:
            args = {"sprint_id": active[0]}
            if planned:
                args["move_open_issues_to"] = planned[0]
            self.call("close_sprint", args)
        if planned:
            self.call("start_sprint", {"sprint_id": planned[0]})

    @rule(data=st.data(), carry=st.booleans(), likely=st.booleans())
    def close(self, data: st.DataObject, carry: bool, likely: bool) -> None:
        where = "WHERE state = 'active'" if likely else ""
        args = {"sprint_id": self.pick(data, "sprint", f"SELECT id FROM sprints {where}")}
        if carry:
            args["move_open_issues_to"] = self.pick(
                data,
                "sprint",
                "SELECT t.id FROM sprints t JOIN sprints s ON s.project_id = t.project_id "
                "WHERE s.id = ? AND t.state = 'planned'"
                if likely
                else "SELECT id FROM sprints WHERE ? IS NOT NULL",
                args["sprint_id"],
            )
        self.call("close_sprint", args)

    @rule(data=st.data(), likely=st.booleans())
    def start_a_sprint(self, data: st.DataObject, likely: bool) -> None:
        where = "WHERE state = 'planned'" if likely else ""
        self.call(
            "start_sprint",
            {"sprint_id": self.pick(data, "sprint", f"SELECT id FROM sprints {where}")},
        )

    @rule(data=st.data(), offset=st.integers(-3, 20), length=st.integers(-1, 35))
    def plan_sprint(self, data: st.DataObject, offset: int, length: int) -> None:
        begin = self.session.now.date() + dt.timedelta(days=offset)
        self.call(
            "create_sprint",
            {
                "project_id": self.project(data),
                "name": data.draw(st.sampled_from(["Hardening", "Sprint X", " "])),
                "start_date": begin.isoformat(),
                "end_date": (begin + dt.timedelta(days=length)).isoformat(),
            },
        )

    @rule(data=st.data(), with_assignee=st.booleans())
    def file_issue(self, data: st.DataObject, with_assignee: bool) -> None:
        args: dict[str, Any] = {
            "project_id": self.project(data),
            "title": data.draw(st.sampled_from(["Crash on save", "", "Add export"])),
            "labels": data.draw(
                st.lists(st.sampled_from(["regression", "ux", "nope"]), max_size=2)
            ),
        }
        if with_assignee:
            args["assignee_id"] = self.user(data)
        self.call("create_issue", args)

    @rule(
        data=st.data(),
        name=st.sampled_from(["add_label", "remove_label"]),
        label=st.sampled_from(["regression", "UX", "backend", "no-such-label"]),
    )
    def relabel(self, data: st.DataObject, name: str, label: str) -> None:
        self.call(name, {"issue_id": self.issue(data), "label": label})

    @rule(data=st.data(), body=st.sampled_from(["Looks good", "  ", "x" * 5001]))
    def comment(self, data: st.DataObject, body: str) -> None:
        self.call("add_comment", {"issue_id": self.issue(data), "body": body})

    @rule(
        data=st.data(),
        points=st.sampled_from([None, 3, 4]),
        priority=st.sampled_from([None, "high", "urgent"]),
    )
    def edit(self, data: st.DataObject, points: int | None, priority: str | None) -> None:
        args = {"issue_id": self.issue(data), "story_points": points, "priority": priority}
        self.call("update_issue", {k: v for k, v in args.items() if v is not None})

    @rule(data=st.data(), name=st.sampled_from(["get_issue", "list_comments", "get_workflow"]))
    def read(self, data: st.DataObject, name: str) -> None:
        self.call(name, {"issue_id": self.issue(data)})

    @invariant()
    def the_invariants_hold(self) -> None:
        if hasattr(self, "session"):
            assert rule_violations(self.session) == []

    @invariant()
    def closed_sprints_never_gain_issues(self) -> None:
        if hasattr(self, "session"):
            now = closed_sprint_issues(self.session)
            for sprint_id, issues in now.items():
                if sprint_id in self.closed:
                    gained = issues - self.closed[sprint_id]
                    assert not gained, f"closed sprint {sprint_id} gained {gained}"
            self.closed = now

    @invariant()
    def the_status_history_is_append_only(self) -> None:
        if hasattr(self, "session"):
            ids = set(column(self.session, "SELECT id FROM issue_transitions"))
            assert self.transitions <= ids
            self.transitions = ids

    def teardown(self) -> None:
        if hasattr(self, "session"):
            self.session.close()


TestIssueTrackerRules = IssueTrackerRules.TestCase
TestIssueTrackerRules.settings = settings(
    max_examples=40,
    stateful_step_count=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)


# ------------------------------------------------------------ conformance
FUZZ_SAMPLES = [
    "iss_0001",
    "iss_9999",
    "WEB-3",
    "prj_01",
    "prj_05",
    "prj_99",
    "usr_001",
    "usr_999",
    "spr_001",
    "spr_999",
    "regression",
    "in_progress",
    "done",
    "high",
    "bug",
    "2026-03-02",
    "2999-01-01",
]

TestConformance = conformance_suite(
    "issue_tracker", samples=FUZZ_SAMPLES, invariants=rule_violations
)


# ------------------------------------------------------------------- state
def test_sampled_states_obey_the_rules_and_are_rich() -> None:
    statuses: set[str] = set()
    for seed in range(6):
        with TRACKER.session(seed=seed) as s:
            assert rule_violations(s) == [], seed
            statuses.update(column(s, "SELECT DISTINCT status FROM issues"))
            assert len(column(s, "SELECT id FROM issues")) >= 250
            assert len(column(s, "SELECT id FROM comments")) >= 200
            states = column(s, "SELECT DISTINCT state FROM sprints")
            assert set(states) == {"planned", "active", "closed"}
            assert len(column(s, "SELECT id FROM projects WHERE archived")) == 1
            for kind in TRACKER.entities:
                assert s.list_entities(kind), f"no {kind} to ground requests in (seed {seed})"
    assert statuses == set(STATUSES)


def test_sampling_one_state_takes_well_under_half_a_second() -> None:
    TRACKER.sample(11)  # warm up imports and Faker
    spent = []
    for seed in (12, 13, 14):
        began = time.process_time()  # CPU time: other processes on the machine do not count
        TRACKER.sample(seed)
        spent.append(time.process_time() - began)
    assert min(spent) < 0.5


# ------------------------------------------------------------ rules
@pytest.fixture
def s() -> Session:
    with TRACKER.session(seed=7) as session:
        yield session


def find(s: Session, sql: str, *params: Any) -> Any:
    found = column(s, sql + " ORDER BY 1 LIMIT 1", *params)
    assert found, sql
    return found[0]


def member_of(s: Session, project_id: str) -> str:
    return find(
        s,
        "SELECT user_id FROM project_members m JOIN users u ON u.id = m.user_id "
        "WHERE project_id = ? AND u.active",
        project_id,
    )


def test_todo_cannot_jump_to_done_and_the_error_names_the_rule_and_next_states(s) -> None:
    issue = find(s, "SELECT id FROM issues WHERE status = 'todo' AND project_id != 'prj_05'")
    before = s.state_hash()
    result = s.call("transition_issue", {"issue_id": issue, "to_status": "done"})
    assert result.error_kind == ErrorKind.PRECONDITION_FAILED
    assert "Rule 'workflow_transition' failed" in result.message
    assert "Allowed next states from 'todo': in_progress, blocked" in result.message
    assert s.state_hash() == before


def test_an_issue_reaches_done_through_progress_and_review_and_each_step_is_recorded(s) -> None:
    issue = find(
        s,
        "SELECT id FROM issues WHERE status = 'todo' AND project_id = 'prj_01' "
        "AND assignee_id IS NULL",
    )
    first = s.call("transition_issue", {"issue_id": issue, "to_status": "in_progress"})
    assert "Rule 'assignee_required' failed" in first.message
    assert s.call("assign_issue", {"issue_id": issue, "assignee_id": member_of(s, "prj_01")}).ok
    for status in ("in_progress", "in_review", "done"):
        assert s.call("transition_issue", {"issue_id": issue, "to_status": status}).ok
    detail = s.call("get_issue", {"issue_id": issue}).content
    moves = [(h["from_status"], h["to_status"]) for h in detail["history"]]
    assert moves[-3:] == [
        ("todo", "in_progress"),
        ("in_progress", "in_review"),
        ("in_review", "done"),
    ]
    assert detail["resolved_at"] == s.now.isoformat(timespec="minutes")
    assert detail["next_statuses"] == ["reopened"]


def test_blocking_needs_a_reason_that_becomes_a_comment(s) -> None:
    issue = find(s, "SELECT id FROM issues WHERE status = 'todo' AND project_id = 'prj_02'")
    refused = s.call("transition_issue", {"issue_id": issue, "to_status": "blocked"})
    assert "Rule 'blocked_reason_required' failed" in refused.message
    done = s.call(
        "transition_issue",
        {"issue_id": issue, "to_status": "blocked", "comment": "Waiting for the SDK fix"},
    ).content
    last = s.call("list_comments", {"issue_id": issue, "newest_first": True, "limit": 1}).content
    assert last[0]["comment_id"] == done["comment_id"]
    assert last[0]["body"] == "Waiting for the SDK fix"


def test_assignees_must_be_active_members_until_added_to_the_project(s) -> None:
    issue = find(s, "SELECT id FROM issues WHERE project_id = 'prj_01' AND status = 'todo'")
    outsider = find(
        s,
        "SELECT id FROM users WHERE active AND id NOT IN "
        "(SELECT user_id FROM project_members WHERE project_id = 'prj_01')",
    )
    refused = s.call("assign_issue", {"issue_id": issue, "assignee_id": outsider})
    assert "Rule 'assignee_membership' failed" in refused.message
    assert "add_project_member" in refused.message
    assert s.call("add_project_member", {"project_id": "prj_01", "user_id": outsider}).ok
    assert (
        s.call("assign_issue", {"issue_id": issue, "assignee_id": outsider}).content["assignee_id"]
        == outsider
    )
    gone = column(s, "SELECT id FROM users WHERE NOT active")
    if gone:
        again = s.call("add_project_member", {"project_id": "prj_02", "user_id": gone[0]})
        assert "Rule 'user_inactive' failed" in again.message


def test_work_in_progress_cannot_be_unassigned(s) -> None:
    issue = find(s, "SELECT id FROM issues WHERE status = 'in_progress' AND project_id != 'prj_05'")
    result = s.call("assign_issue", {"issue_id": issue, "assignee_id": None})
    assert "Rule 'assignee_required' failed" in result.message


def test_a_closed_sprint_takes_no_issues_and_closing_carries_open_work_over(s) -> None:
    active = find(s, "SELECT id FROM sprints WHERE state = 'active'")
    project = column(s, "SELECT project_id FROM sprints WHERE id = ?", active)[0]
    target = find(s, "SELECT id FROM sprints WHERE state = 'planned' AND project_id = ?", project)
    open_before = set(
        column(s, "SELECT id FROM issues WHERE sprint_id = ? AND status != 'done'", active)
    )
    closed = s.call("close_sprint", {"sprint_id": active, "move_open_issues_to": target}).content
    assert set(closed["moved_issue_ids"]) == open_before and closed["moved_to"] == target
    assert set(column(s, "SELECT status FROM issues WHERE sprint_id = ?", active)) <= {"done"}
    backlog = find(
        s,
        "SELECT id FROM issues WHERE project_id = ? AND sprint_id IS NULL AND status = 'todo'",
        project,
    )
    refused = s.call("add_issue_to_sprint", {"issue_id": backlog, "sprint_id": active})
    assert "Rule 'sprint_closed' failed" in refused.message
    assert s.call("close_sprint", {"sprint_id": active}).error_kind == ErrorKind.PRECONDITION_FAILED


def test_a_project_has_one_active_sprint_at_a_time(s) -> None:
    active = find(s, "SELECT id FROM sprints WHERE state = 'active'")
    project = column(s, "SELECT project_id FROM sprints WHERE id = ?", active)[0]
    planned = find(s, "SELECT id FROM sprints WHERE state = 'planned' AND project_id = ?", project)
    refused = s.call("start_sprint", {"sprint_id": planned})
    assert "Rule 'one_active_sprint' failed" in refused.message and active in refused.message
    assert s.call("close_sprint", {"sprint_id": active}).ok
    started = s.call("start_sprint", {"sprint_id": planned}).content
    assert started["state"] == "active" and started["start_date"] == s.now.date().isoformat()


def test_sprints_only_take_open_issues_of_their_own_project(s) -> None:
    sprint = find(s, "SELECT id FROM sprints WHERE state = 'planned' AND project_id = 'prj_02'")
    foreign = find(s, "SELECT id FROM issues WHERE project_id = 'prj_03' AND status = 'todo'")
    assert (
        "Rule 'same_project' failed"
        in s.call("add_issue_to_sprint", {"issue_id": foreign, "sprint_id": sprint}).message
    )
    finished = find(s, "SELECT id FROM issues WHERE project_id = 'prj_02' AND status = 'done'")
    assert (
        "Rule 'done_issue_not_planned' failed"
        in s.call("add_issue_to_sprint", {"issue_id": finished, "sprint_id": sprint}).message
    )


def test_reopening_an_issue_of_a_closed_sprint_moves_it_to_the_backlog(s) -> None:
    issue = find(
        s,
        "SELECT i.id FROM issues i JOIN sprints p ON p.id = i.sprint_id "
        "WHERE p.state = 'closed' AND i.project_id != 'prj_05'",
    )
    sprint = column(s, "SELECT sprint_id FROM issues WHERE id = ?", issue)[0]
    result = s.call("transition_issue", {"issue_id": issue, "to_status": "reopened"}).content
    assert result["removed_from_closed_sprint"] == sprint
    assert column(s, "SELECT sprint_id FROM issues WHERE id = ?", issue) == [None]


def test_archived_projects_are_read_only(s) -> None:
    issue = find(s, "SELECT id FROM issues WHERE project_id = 'prj_05'")
    assert s.call("get_issue", {"issue_id": issue}).ok
    for name, args in [
        ("create_issue", {"project_id": "prj_05", "title": "Anything"}),
        ("add_comment", {"issue_id": issue, "body": "Still here?"}),
        ("update_issue", {"issue_id": issue, "priority": "low"}),
    ]:
        assert "Rule 'project_archived' failed" in s.call(name, args).message


def test_new_issues_get_the_next_id_and_key_and_a_creation_record(s) -> None:
    made = s.call(
        "create_issue",
        {"project_id": "prj_02", "title": "Crash on launch", "type": "bug", "labels": ["UX"]},
    ).content
    count = len(column(s, "SELECT id FROM issues"))
    assert made["issue_id"] == f"iss_{count:04d}" and made["key"].startswith("MOB-")
    assert made["labels"] == ["ux"] and made["status"] == "todo"
    assert made["history"] == [
        {"from_status": None, "to_status": "todo", "actor_id": "usr_001", "at": made["created_at"]}
    ]


def test_an_issue_key_in_place_of_an_id_gets_a_pointer_to_the_id(s) -> None:
    issue_id, key = rows(s, "SELECT id, key FROM issues ORDER BY id LIMIT 1")[0]
    result = s.call("get_issue", {"issue_id": key})
    assert result.error_kind == ErrorKind.NOT_FOUND and issue_id in result.message
    found = s.call("search_issues", {"query": key}).content["issues"][0]
    assert found["issue_id"] == issue_id


# ------------------------------------------------------------------- tasks
TASKS = prove_gym.get_registry().tasks("issue_tracker")


def test_hand_written_tasks_cover_chains_turns_clarify_and_abstain() -> None:
    hand = [t for t in TASKS if is_hand_written(t)]
    assert 3 <= len(hand) <= 5
    kinds = {turn.kind for t in hand for turn in t.turns}
    assert {"normal", "clarify", "abstain"} <= kinds
    assert any(len(t.turns) > 1 for t in hand)
    assert any(step.depends_on for t in hand for step in t.steps)
