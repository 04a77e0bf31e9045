"""A realistic issue tracker: size 1 gives 5 projects (one archived), 32 users, ~300 issues
with comments, labels and a workflow-consistent status history, and past, active and future
sprints around "now".

Every sampled state satisfies the server's rules: statuses follow the workflow from "todo",
issues in progress or in review have an assignee, assignees are members of the issue's
project, closed sprints hold only finished issues, and a project has at most one active sprint.
"""

from __future__ import annotations

import datetime as dt
import random
from dataclasses import dataclass, field

from prove_gym.server import SampleContext

from .models import (
    NEEDS_ASSIGNEE,
    PRIORITIES,
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


@dataclass(frozen=True)
class ProjectSpec:
    key: str
    name: str
    description: str
    components: tuple[str, ...]
    features: tuple[str, ...]
    archived: bool = False
    share: float = 0.2


PROJECTS = (
    ProjectSpec(
        "WEB",
        "Web Storefront",
        "The customer-facing online store: catalog, search, cart and checkout.",
        (
            "checkout page",
            "product listing",
            "search bar",
            "shopping cart",
            "login form",
            "account settings",
            "header navigation",
            "wishlist",
            "product detail page",
            "order history",
        ),
        (
            "guest checkout",
            "saved payment methods",
            "product comparison",
            "gift cards",
            "size guide",
            "recently viewed items",
            "address autocomplete",
            "promo code field",
        ),
        share=0.27,
    ),
    ProjectSpec(
        "MOB",
        "Mobile App",
        "The iOS and Android shopping app.",
        (
            "push notifications",
            "onboarding flow",
            "offline mode",
            "settings screen",
            "photo upload",
            "biometric login",
            "home feed",
            "order tracking screen",
            "in-app chat",
        ),
        (
            "dark mode",
            "Apple Pay",
            "widget for order status",
            "deep links from email",
            "barcode scanner",
            "haptic feedback",
            "tablet layout",
        ),
        share=0.23,
    ),
    ProjectSpec(
        "PAY",
        "Payments API",
        "Card payments, refunds, payouts and invoicing for every storefront.",
        (
            "refund endpoint",
            "webhook delivery",
            "currency conversion",
            "invoice PDF generator",
            "idempotency middleware",
            "card tokenization",
            "payout scheduler",
            "3-D Secure flow",
            "fraud scoring",
        ),
        (
            "partial refunds",
            "SEPA direct debit",
            "webhook retries with backoff",
            "multi-currency payouts",
            "invoice reminders",
            "Apple Pay merchant validation",
        ),
        share=0.2,
    ),
    ProjectSpec(
        "DATA",
        "Data Platform",
        "Event ingestion, the warehouse and the dashboards built on it.",
        (
            "nightly ETL job",
            "event ingestion service",
            "dashboard exports",
            "warehouse schema",
            "orders pipeline",
            "metrics API",
            "data quality checks",
            "Kafka consumer",
        ),
        (
            "incremental loads",
            "column-level lineage",
            "self-serve CSV exports",
            "anomaly alerts",
            "GDPR deletion jobs",
            "cost dashboard",
        ),
        share=0.2,
    ),
    ProjectSpec(
        "OPS",
        "Internal Tools",
        "Admin console and back-office tooling (archived: replaced by the new console).",
        (
            "admin console",
            "audit log",
            "feature flag service",
            "deployment script",
            "support ticket importer",
        ),
        ("bulk user import", "role-based access", "audit log export"),
        archived=True,
        share=0.1,
    ),
)

LABELS = (
    ("regression", "red", "Worked before, broken by a recent change"),
    ("security", "darkred", "Security or privacy impact"),
    ("performance", "orange", "Slow responses, memory or CPU usage"),
    ("ux", "purple", "User experience and copy"),
    ("accessibility", "teal", "Screen readers, contrast, keyboard navigation"),
    ("tech-debt", "gray", "Cleanup that makes future work cheaper"),
    ("customer-reported", "yellow", "Raised by a customer through support"),
    ("good-first-issue", "green", "Small and well-defined, good for newcomers"),
    ("needs-triage", "pink", "Not yet reviewed by the team lead"),
    ("documentation", "blue", "Docs, runbooks and READMEs"),
    ("backend", "navy", "Server-side change"),
    ("frontend", "cyan", "Browser or app UI change"),
    ("flaky-test", "brown", "A test that fails intermittently"),
    ("hotfix", "magenta", "Must ship outside the normal release train"),
)

JOB_TITLES = (
    "Software Engineer",
    "Senior Software Engineer",
    "Staff Engineer",
    "QA Engineer",
    "Product Designer",
    "Product Manager",
    "Data Engineer",
    "Site Reliability Engineer",
    "Engineering Manager",
)
ROLE_FOR_TITLE = {
    "QA Engineer": "qa",
    "Product Designer": "designer",
    "Product Manager": "pm",
}

TRIGGERS = (
    "the session expires",
    "the cart has more than 50 items",
    "the user switches language",
    "a coupon is removed",
    "the network drops mid-request",
    "the page is refreshed twice",
    "two tabs are open",
    "the locale is set to de-DE",
    "the input contains emoji",
    "the request takes longer than 30 seconds",
)
SYMPTOMS = (
    "shows a blank screen",
    "displays the wrong total",
    "throws a 500 error",
    "freezes for several seconds",
    "loses the entered data",
    "renders overlapping text",
    "sends duplicate requests",
    "shows an outdated price",
    "logs the user out",
    "returns stale results",
)
PLATFORMS = (
    "Safari 17",
    "Chrome on Android",
    "Firefox",
    "iOS 18",
    "Android 14",
    "Edge",
    "staging",
    "production",
)
DEPENDENCIES = (
    ("React", "19"),
    ("Django", "5.1"),
    ("PostgreSQL", "16"),
    ("Node.js", "22"),
    ("Kotlin", "2.0"),
    ("Airflow", "2.9"),
    ("OpenSSL", "3.3"),
    ("Spring Boot", "3.3"),
)
PERSONAS = ("returning customer", "support agent", "store manager", "finance analyst", "new user")
BENEFITS = (
    "I can finish faster",
    "I make fewer mistakes",
    "I do not have to contact support",
    "I can trust the numbers",
    "I can work on the go",
)

BUG_TITLES = (
    "{Component} crashes when {trigger}",
    "{Component} {symptom} on {platform}",
    "Regression: {component} {symptom} after last release",
    "Timeout in {component} under heavy load",
    "{Component} {symptom} when {trigger}",
    "Intermittent failure in {component} on {platform}",
)
FEATURE_TITLES = (
    "Add {feature}",
    "Support {feature} in the {component}",
    "As a {persona}, I want {feature} so that {benefit}",
    "Prototype {feature}",
)
TASK_TITLES = (
    "Upgrade {dep} to {version}",
    "Write a runbook for the {component}",
    "Add monitoring and alerts for the {component}",
    "Migrate the {component} to the new config service",
    "Remove the legacy {component} code path",
    "Load-test the {component}",
)
IMPROVEMENT_TITLES = (
    "Improve {component} performance",
    "Better error messages in the {component}",
    "Refactor {component} error handling",
    "Reduce the {component} bundle size",
    "Make the {component} keyboard accessible",
    "Clearer empty state for the {component}",
)

COMMENTS = (
    "Reproduced on {platform}; attaching the logs.",
    "I think this comes from the change to the {component} last week.",
    "Can we get this into the current sprint? A customer is waiting on it.",
    "PR is up for review, tests are green.",
    "Moved the fix behind a feature flag so we can roll it out gradually.",
    "Could not reproduce on {platform}. Can you share the exact steps?",
    "Design approved, see the attached mockups.",
    "QA passed on staging.",
    "This depends on the {component} refactor landing first.",
    "Bumping priority: support has had {n} tickets about this today.",
    "Added a regression test so this does not come back.",
    "Let's pair on this tomorrow morning.",
)
BLOCKERS = (
    "waiting for the security review",
    "waiting on an API change from the payments team",
    "needs a decision from product",
    "the staging environment is down",
    "waiting for the vendor to fix their SDK",
)

STEPS = (
    "Click the primary button.",
    "Go back and try again.",
    "Change the quantity and save.",
    "Rotate the device.",
    "Switch to another tab and come back.",
    "Submit the form.",
)
EXPECTED = (
    "the page keeps the entered data",
    "the request succeeds",
    "the total matches the line items",
    "a clear error message is shown",
    "the screen loads within two seconds",
)
CONTEXTS = (
    "Requested by {n} customers through support this quarter.",
    "The {component} is the main source of complaints from the {persona} segment.",
    "Follow-up from the last incident review of the {component}.",
    "Part of the quarterly roadmap; product has signed off on the scope.",
    "Today a {persona} needs {n} clicks for this; we want it in one.",
    "Engineering proposal: keeps the {component} maintainable as traffic grows.",
)
CRITERIA = (
    "Works on desktop and mobile browsers",
    "Covered by automated tests",
    "Behind a feature flag, off by default",
    "Copy reviewed by the UX writer",
    "Metrics dashboard shows adoption",
    "No increase in p95 latency",
    "Documented in the team wiki",
    "Accessible with keyboard and screen reader",
    "Rolled out to 10% of users first",
)

SPRINT_GOALS = (
    "Ship {feature}",
    "Stabilise the {component}",
    "Burn down the bug backlog",
    "Performance week: the {component}",
    "Prepare the quarterly release",
)


@dataclass
class _IssueDraft:
    project: Project
    spec: ProjectSpec
    created_at: dt.datetime
    status: str
    sprint: Sprint | None
    window_end: dt.datetime
    walk: list[str] = field(default_factory=list)


def _walk_to(target: str, rng: random.Random) -> list[str]:
    """Statuses an issue passes through after its creation in "todo", ending at ``target``."""
    if target == "todo":
        return ["in_progress", "todo"] if rng.random() < 0.1 else []
    if target == "in_progress":
        return ["blocked", "in_progress"] if rng.random() < 0.15 else ["in_progress"]
    if target == "in_review":
        return ["in_progress", "in_review"]
    if target == "blocked":
        return rng.choice(
            [["blocked"], ["in_progress", "blocked"], ["in_progress", "in_review", "blocked"]]
        )
    done = ["in_progress", "in_review"]
    if rng.random() < 0.2:
        done += ["in_progress", "in_review"]
    done.append("done")
    if target == "done":
        return done
    return [*done, "reopened"]  # reopened


def _is_valid_walk(walk: list[str]) -> bool:
    current = "todo"
    for status in walk:
        if status not in TRANSITIONS[current]:
            return False
        current = status
    return True


def _between(rng: random.Random, start: dt.datetime, end: dt.datetime, k: int) -> list[dt.datetime]:
    """``k`` sorted times in [start, end], to the minute."""
    span = max(int((end - start).total_seconds() // 60), 1)
    return [start + dt.timedelta(minutes=m) for m in sorted(rng.randint(1, span) for _ in range(k))]


def _title(spec: ProjectSpec, kind: str, rng: random.Random) -> str:
    component = rng.choice(spec.components)
    dep, version = rng.choice(DEPENDENCIES)
    pool = {
        "bug": BUG_TITLES,
        "feature": FEATURE_TITLES,
        "task": TASK_TITLES,
        "improvement": IMPROVEMENT_TITLES,
    }[kind]
    return rng.choice(pool).format(
        Component=component[0].upper() + component[1:],
        component=component,
        trigger=rng.choice(TRIGGERS),
        symptom=rng.choice(SYMPTOMS),
        platform=rng.choice(PLATFORMS),
        feature=rng.choice(spec.features),
        persona=rng.choice(PERSONAS),
        benefit=rng.choice(BENEFITS),
        dep=dep,
        version=version,
    )


def _description(rng: random.Random, spec: ProjectSpec, kind: str) -> str:
    component = rng.choice(spec.components)
    if kind == "bug":
        return (
            f"Steps to reproduce:\n1. Open the {component}.\n2. Wait until {rng.choice(TRIGGERS)}.\n"
            f"3. {rng.choice(STEPS)}\n\nExpected: {rng.choice(EXPECTED)}.\n"
            f"Actual: it {rng.choice(SYMPTOMS)}.\n\nSeen on {rng.choice(PLATFORMS)}, "
            f"build {rng.randint(1, 9)}.{rng.randint(0, 30)}.{rng.randint(0, 99)}."
        )
    criteria = "\n".join(f"- {c}" for c in rng.sample(CRITERIA, k=rng.randint(2, 4)))
    context = rng.choice(CONTEXTS).format(
        component=component, persona=rng.choice(PERSONAS), n=rng.randint(3, 40)
    )
    return f"{context}\n\nAcceptance criteria:\n{criteria}"


def sample_issue_tracker(ctx: SampleContext) -> None:
    """Fill an empty issue tracker database (see the module docstring for sizes)."""
    rng, fake, now = ctx.rng, ctx.fake, ctx.now
    today = now.date()
    # users, settings, labels, projects, their members and sprints, inserted as add_all and
    # a flush would insert them, but off the ORM's unit of work
    orm_rows: list[Base] = []

    # ---------------------------------------------------------------- users
    users: list[User] = []
    n_users = 32 * ctx.size
    departed = set(rng.sample(range(1, n_users), k=max(2, n_users // 12)))
    used_names: set[str] = set()
    for i in range(n_users):
        name = f"{fake.first_name()} {fake.last_name()}"
        while name in used_names:
            name = f"{fake.first_name()} {fake.last_name()}"
        used_names.add(name)
        email = name.lower().replace(" ", ".").replace("'", "") + "@northwind.dev"
        title = "Engineering Manager" if i == 0 else rng.choice(JOB_TITLES)
        users.append(
            User(
                id=f"usr_{i + 1:03d}",
                name=name,
                email=email,
                title=title,
                active=i not in departed,
            )
        )
    orm_rows.extend(users)
    me = users[0]
    orm_rows.append(Settings(id=1, workspace="Northwind Engineering", acting_user_id=me.id))
    active = [u for u in users if u.active]

    labels = [
        Label(id=f"lbl_{i + 1:02d}", name=n, color=c, description=d)
        for i, (n, c, d) in enumerate(LABELS)
    ]
    orm_rows.extend(labels)

    # ------------------------------------------------------ projects, members
    projects: list[Project] = []
    project_members: list[ProjectMember] = []
    members: dict[str, list[User]] = {}
    for i, spec in enumerate(PROJECTS):
        team = rng.sample(active[1:], k=rng.randint(5, 8))
        inactive = [u for u in users if not u.active]
        if inactive and rng.random() < 0.6:
            team.append(rng.choice(inactive))  # someone who has left but still owns old issues
        lead = team[0]
        project = Project(
            id=f"prj_{i + 1:02d}",
            key=spec.key,
            name=spec.name,
            description=spec.description,
            lead_id=lead.id,
            archived=spec.archived,
            next_issue_number=1,
        )
        if i == 0 or rng.random() < 0.4:
            team.append(me)
        for user in dict.fromkeys(team):
            role = "lead" if user is lead else ROLE_FOR_TITLE.get(user.title, "developer")
            project_members.append(
                ProjectMember(
                    project_id=project.id,
                    user_id=user.id,
                    role=role,
                    joined_on=today - dt.timedelta(days=rng.randint(60, 900)),
                )
            )
        members[project.id] = list(dict.fromkeys(team))
        projects.append(project)
    orm_rows += projects
    orm_rows += project_members  # (the ORM wrote them by cascade from project.members)

    # -------------------------------------------------------------- sprints
    sprints: dict[str, list[Sprint]] = {}
    sprint_no = 0
    idle = rng.randrange(len(PROJECTS) - 1)  # one live project sits between two sprints

    def new_sprint(
        project: Project, n: int, start: dt.date, state: str, spec: ProjectSpec
    ) -> Sprint:
        nonlocal sprint_no
        sprint_no += 1
        end = start + dt.timedelta(days=13)
        goal = rng.choice(SPRINT_GOALS).format(
            feature=rng.choice(spec.features), component=rng.choice(spec.components)
        )
        start_time = dt.datetime.combine(start, dt.time(9, 30))
        return Sprint(
            id=f"spr_{sprint_no:03d}",
            project_id=project.id,
            name=f"{project.key} Sprint {n}",
            goal=goal,
            state=state,
            start_date=start,
            end_date=end,
            started_at=None if state == "planned" else start_time,
            closed_at=dt.datetime.combine(end, dt.time(17, 0)) if state == "closed" else None,
        )

    for i, (project, spec) in enumerate(zip(projects, PROJECTS, strict=True)):
        n_past = rng.randint(3, 5)
        days = dt.timedelta(days=14)
        if spec.archived:
            first = today - dt.timedelta(days=120) - n_past * days
            plan = [("closed", first + k * days) for k in range(n_past)]
        elif i == idle:  # the last sprint closed a few days ago; the next one starts soon
            first = today - dt.timedelta(days=rng.randint(1, 4)) - (n_past + 1) * days
            nxt = today + dt.timedelta(days=rng.randint(1, 3))
            plan = [("closed", first + k * days) for k in range(n_past + 1)]
            plan += [("planned", nxt + k * days) for k in range(rng.randint(1, 2))]
        else:
            current = today - dt.timedelta(days=rng.randint(1, 12))
            states = ["closed"] * n_past + ["active"] + ["planned"] * rng.randint(1, 2)
            first = current - n_past * days
            plan = [(s, first + k * days) for k, s in enumerate(states)]
        base = rng.randint(5, 30)
        sprints[project.id] = [
            new_sprint(project, base + k, start, state, spec)
            for k, (state, start) in enumerate(plan)
        ]
        orm_rows.extend(sprints[project.id])

    # --------------------------------------------------------------- issues
    n_issues = 300 * ctx.size
    drafts: list[_IssueDraft] = []
    for project, spec in zip(projects, PROJECTS, strict=True):
        own = sprints[project.id]
        closed = [s for s in own if s.state == "closed"]
        running = [s for s in own if s.state == "active"]
        planned = [s for s in own if s.state == "planned"]
        for _ in range(round(n_issues * spec.share)):
            bucket = rng.choices(
                ["closed", "active", "planned", "backlog"],
                weights=[25, 25 if running else 0, 12 if planned else 0, 38],
            )[0]
            if spec.archived:
                bucket = "closed" if rng.random() < 0.7 else "backlog"
            sprint: Sprint | None = None
            if bucket == "closed":
                sprint = rng.choice(closed)
                start = dt.datetime.combine(sprint.start_date, dt.time(9))
                created = start - dt.timedelta(minutes=rng.randint(60, 40 * 24 * 60))
                status, end = "done", dt.datetime.combine(sprint.end_date, dt.time(16))
            elif bucket == "active":
                sprint = running[0]
                start = dt.datetime.combine(sprint.start_date, dt.time(9))
                created = start - dt.timedelta(minutes=rng.randint(60, 30 * 24 * 60))
                status = rng.choices(
                    ["todo", "in_progress", "in_review", "done", "blocked"],
                    weights=[25, 30, 15, 20, 10],
                )[0]
                end = now
            elif bucket == "planned":
                sprint = rng.choice(planned)
                created = now - dt.timedelta(minutes=rng.randint(60, 60 * 24 * 60))
                status = "reopened" if rng.random() < 0.1 else "todo"
                end = now
            else:
                created = now - dt.timedelta(minutes=rng.randint(60, 180 * 24 * 60))
                if spec.archived:
                    status = rng.choice(["todo", "done"])
                else:
                    status = rng.choices(
                        ["todo", "blocked", "reopened", "done", "in_progress"],
                        weights=[62, 8, 7, 15, 8],
                    )[0]
                end = now
            drafts.append(
                _IssueDraft(project, spec, created, status, sprint, max(end, created), [])
            )

    drafts.sort(key=lambda d: (d.created_at, d.project.key))
    # Thousands of rows: plain INSERTs are several times faster than ORM objects here.
    issues: list[dict] = []
    transitions: list[dict] = []
    comments: list[dict] = []
    issue_labels: list[dict] = []

    def add_comment(issue_id: str, author: User, body: str, at: dt.datetime) -> None:
        comments.append(
            {
                "id": f"cmt_{len(comments) + 1:05d}",
                "issue_id": issue_id,
                "author_id": author.id,
                "body": body,
                "created_at": at,
            }
        )

    def add_transition(
        issue_id: str, frm: str | None, to: str, actor: str, at: dt.datetime
    ) -> None:
        transitions.append(
            {
                "id": f"trn_{len(transitions) + 1:05d}",
                "issue_id": issue_id,
                "from_status": frm,
                "to_status": to,
                "actor_id": actor,
                "at": at,
            }
        )

    for n, draft in enumerate(drafts, 1):
        project, spec = draft.project, draft.spec
        team = members[project.id]
        working = [u for u in team if u.active]
        kind = rng.choices(["bug", "feature", "task", "improvement"], weights=[40, 25, 20, 15])[0]
        title = _title(spec, kind, rng)
        walk = _walk_to(draft.status, rng)
        assert _is_valid_walk(walk), (draft.status, walk)
        if draft.status in NEEDS_ASSIGNEE or any(s in NEEDS_ASSIGNEE for s in walk):
            assignee: User | None = rng.choice(working if draft.status != "done" else team)
        else:
            assignee = rng.choice(working) if rng.random() < 0.45 else None
        if assignee is not None and not assignee.active and draft.status != "done":
            assignee = rng.choice(working)
        issue_id = f"iss_{n:04d}"
        reporter = rng.choice([*team, me]).id
        issue = {
            "id": issue_id,
            "key": f"{project.key}-{project.next_issue_number}",
            "project_id": project.id,
            "type": kind,
            "title": title,
            "description": _description(rng, spec, kind),
            "status": draft.status,
            "priority": rng.choices(PRIORITIES, weights=[20, 45, 27, 8])[0],
            "story_points": (
                rng.choice([1, 2, 3, 3, 5, 5, 8, 13])
                if draft.sprint is not None or rng.random() < 0.4
                else None
            ),
            "assignee_id": assignee.id if assignee else None,
            "reporter_id": reporter,
            "sprint_id": draft.sprint.id if draft.sprint else None,
            "created_at": draft.created_at,
            "updated_at": draft.created_at,
            "resolved_at": None,
        }
        project.next_issue_number += 1
        actor_pool = [assignee] if assignee else working

        # status history: creation, then the walk at increasing times inside the window
        add_transition(issue_id, None, "todo", reporter, draft.created_at)
        lo = draft.created_at
        if draft.sprint is not None and draft.sprint.started_at is not None:
            lo = max(lo, draft.sprint.started_at)
        times = _between(rng, lo, max(draft.window_end, lo), len(walk))
        previous = "todo"
        last_change = draft.created_at
        for status, at in zip(walk, times, strict=True):
            add_transition(issue_id, previous, status, rng.choice(actor_pool).id, at)
            if status == "blocked":
                add_comment(
                    issue_id, rng.choice(actor_pool), f"Blocked: {rng.choice(BLOCKERS)}.", at
                )
            issue["resolved_at"] = at if status == "done" else None
            previous, last_change = status, at

        n_comments = rng.choice([0, 0, 1, 1, 2, 3, 4])
        for at in _between(
            rng, draft.created_at, max(draft.window_end, draft.created_at), n_comments
        ):
            body = rng.choice(COMMENTS).format(
                platform=rng.choice(PLATFORMS),
                component=rng.choice(spec.components),
                n=rng.randint(2, 9),
            )
            add_comment(issue_id, rng.choice(team), body, at)
            last_change = max(last_change, at)
        issue["updated_at"] = last_change

        chosen = rng.sample(labels, k=rng.choice([0, 1, 1, 2, 2, 3]))
        if kind == "bug" and rng.random() < 0.3:
            chosen.append(labels[0])  # regression
        for label in dict.fromkeys(chosen):
            issue_labels.append({"issue_id": issue_id, "label_id": label.id})
        issues.append(issue)

    # in the order the ORM's flush wrote these tables (its unit of work's, not the schema's
    # sorted_tables): the same pages, hence the same bytes
    by_model: dict[type, list[Base]] = {}
    for row in orm_rows:
        by_model.setdefault(type(row), []).append(row)
    for mapped in (Label, Project, Settings, Sprint, User, ProjectMember):
        ctx.insert(by_model.get(mapped, []))
    for model, records in (
        (Issue, issues),
        (IssueTransition, transitions),
        (Comment, comments),
        (IssueLabel, issue_labels),
    ):
        ctx.insert(records, into=model)
