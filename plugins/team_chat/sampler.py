"""A realistic team chat: size 1 gives 2 workspaces of ~20 people each, ~22 channels (public,
private and archived ones), ~600 messages of which ~200 are thread replies, ~70 edited and a
few deleted ones, ~500 reactions and ~40 pins; size n gives 2n workspaces.

The signed-in person ("me") belongs to every workspace: an admin of the first, a plain
member of the second. They are in most public channels but not all, in some private ones
and not others, so membership and privacy matter to what they may read and write. History
covers the 30 days before "now" (an archived channel's, the months before); every message's
text is kept as versions (posted, edited, deleted) exactly as the live tools append them, and
@mentions only name people who may read the channel.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from operator import attrgetter
from random import Random
from typing import Any

from prove_gym.server import SampleContext

from .models import (
    EMOJI,
    MAX_PINS,
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
)

HISTORY_DAYS = 30

COMPANIES = [
    ("Northwind Labs", "northwind"),
    ("Bluefin Analytics", "bluefin"),
    ("Copperleaf Health", "copperleaf"),
    ("Harbor & Pine", "harborpine"),
    ("Orbit Freight", "orbitfreight"),
    ("Tallgrass Software", "tallgrass"),
    ("Lumen Robotics", "lumen"),
    ("Kestrel Media", "kestrel"),
]
TITLES = [
    "Software Engineer",
    "Senior Software Engineer",
    "Staff Engineer",
    "Product Manager",
    "Product Designer",
    "Engineering Manager",
    "Data Analyst",
    "Support Lead",
    "Account Executive",
    "Marketing Manager",
    "QA Engineer",
    "Site Reliability Engineer",
    "Recruiter",
    "Head of Operations",
]
PROJECTS = ["Phoenix", "Atlas", "Helios", "Nimbus", "Orion", "Juniper"]
CUSTOMERS = ["Acme Corp", "Globex", "Initech", "Umbrella Health", "Stark Logistics", "Hooli"]
DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday"]
DOCS = ["the RFC", "the runbook", "the Q3 plan", "the launch checklist", "the design doc"]

# name -> (topic, private, archived, templates)
CHANNELS: dict[str, tuple[str, bool, bool, list[str]]] = {
    "general": (
        "Company-wide announcements and work-based matters",
        False,
        False,
        [
            "Reminder: all-hands is on {day} at {time}. Bring your questions!",
            "Welcome {person} to the team! They're joining as {title}.",
            "The office will be closed on {day} for maintenance.",
            "Payroll runs a day early this month, on {day}.",
            "Please fill in the engagement survey by {day}, it takes 5 minutes.",
            "New laptop refresh policy is live, details in {doc}.",
            "Huge thanks to {person} for organising the offsite.",
        ],
    ),
    "random": (
        "Non-work banter and water cooler conversation",
        False,
        False,
        [
            "Anyone up for lunch at the ramen place on {day}?",
            "The coffee machine on floor 3 is fixed again.",
            "Who left a very sad plant in the kitchen?",
            "Board game night on {day} at {time}, {person} is bringing snacks.",
            "Pic from the hike last weekend, the view was worth it.",
            "Does anyone have a spare HDMI adapter?",
        ],
    ),
    "engineering": (
        "Engineering discussion, code review requests, architecture",
        False,
        False,
        [
            "Can someone review my PR for the {project} retry logic? It's small, {n} files.",
            "{person} the flaky test in the payments suite is back, can you take a look?",
            "Heads up: I'm bumping the Postgres client to v{version} on {day}.",
            "CI is taking {n} minutes again, I think the cache is broken.",
            "Proposal for the {project} queue redesign is in {doc}, comments welcome.",
            "Does anyone know why the staging deploy needs a manual approval now?",
            "I'll be pairing with {person} on the migration this afternoon.",
        ],
    ),
    "product": (
        "Roadmap, specs and customer feedback",
        False,
        False,
        [
            "Draft spec for {project} v2 is ready for review, see {doc}.",
            "{customer} asked again for SSO on the starter plan.",
            "Roadmap review moved to {day} at {time}.",
            "We shipped {n} of the {m} items planned for this sprint.",
            "{person} can you share the churn numbers from last quarter?",
            "User interviews for {project} are booked for {day}.",
        ],
    ),
    "design": (
        "Design critiques and UI work",
        False,
        False,
        [
            "New onboarding mocks are up in Figma, feedback by {day} please.",
            "{person} do we have a dark mode version of the empty states?",
            "Design crit {day} at {time}: the {project} settings page.",
            "Updated the icon set, {n} new icons in the library.",
            "Accessibility audit found {n} contrast issues, tracking them in {doc}.",
        ],
    ),
    "incidents": (
        "Production incidents. Page the on-call for anything urgent.",
        False,
        False,
        [
            "Elevated 5xx on the API since {time}, investigating.",
            "{person} you're on call this week, the disk alert on db-{n} fired again.",
            "Postmortem for last {day}'s outage is in {doc}.",
            "Resolved: queue backlog drained, latency back to normal.",
            "Rolling back release {version}, error rate doubled after deploy.",
        ],
    ),
    "releases": (
        "Release announcements and changelogs",
        False,
        False,
        [
            "Release {version} is out: {n} fixes and the new export dialog.",
            "Code freeze for {version} starts {day} at {time}.",
            "{person} please confirm the migration notes for {version}.",
            "Hotfix {version} deployed to production.",
            "Changelog for {version} is in {doc}.",
        ],
    ),
    "support": (
        "Customer support escalations",
        False,
        False,
        [
            "{customer} can't log in since this morning, ticket #{ticket}.",
            "Escalating ticket #{ticket} from {customer}: invoices show the wrong currency.",
            "{person} can you check the export bug {customer} reported?",
            "We closed {n} tickets yesterday, queue is at {m}.",
            "Macro for password resets updated, see {doc}.",
        ],
    ),
    "sales": (
        "Deals, pipeline and customer calls",
        False,
        False,
        [
            "Signed {customer}! {n} seats on the annual plan.",
            "{person} can you join the {customer} demo on {day} at {time}?",
            "Pipeline review {day}: we're at {n}% of the quarter target.",
            "{customer} wants a security questionnaire filled by {day}.",
        ],
    ),
    "leadership": (
        "Leadership team, confidential",
        True,
        False,
        [
            "Board deck draft is in {doc}, comments by {day}.",
            "Headcount plan for next quarter: {n} new roles.",
            "{person} let's discuss the reorg proposal on {day}.",
            "Budget review moved to {day} at {time}.",
        ],
    ),
    "hiring": (
        "Open roles, candidates and interview loops",
        True,
        False,
        [
            "Candidate for the {title} role has a final loop on {day}.",
            "{person} can you do the system design interview on {day} at {time}?",
            "We made an offer for {title}, waiting to hear back.",
            "{n} new applications for the {title} opening this week.",
        ],
    ),
    "proj-{project}": (
        "Private working channel for project {Project}",
        True,
        False,
        [
            "{Project} milestone {n} is on track for {day}.",
            "{person} the vendor contract for {Project} needs legal review.",
            "Blocked on the data export from {customer}, chasing them.",
            "Updated the {Project} timeline in {doc}.",
        ],
    ),
    "offsite-2025": (
        "Planning the 2025 team offsite (done, archived)",
        False,
        True,
        [
            "Venue shortlist is in {doc}, vote by {day}.",
            "{person} can you book the bus for {n} people?",
            "Agenda for day {n} is final.",
            "Thanks everyone, the offsite was great!",
        ],
    ),
}
REPLIES = [
    "On it.",
    "Thanks, looking now.",
    "+1, makes sense to me.",
    "Done, let me know if anything else is off.",
    "Can we talk about this in standup?",
    "I can take that one.",
    "Good catch, fixing.",
    "Sounds good!",
    "What's the deadline for this?",
    "{person} might know more about this.",
    "I added some notes in {doc}.",
    "Same here, seeing it since {time}.",
    "Approved.",
    "Let's do {day} instead.",
    "Merged, thanks!",
]
EDITS = [
    " (edit: moved to {day})",
    " (edit: link fixed)",
    " Update: resolved.",
    " cc {person}",
    " (edit: typo)",
]
COMMON = ["+1", "eyes", "white_check_mark", "tada", "heart", "joy", "raised_hands", "fire"]
QUARTERS = ("00", "15", "30", "45")

# The values a template's slots and a message's times are drawn from, built once. Drawing
# with ``rng.choice(values)`` takes exactly what ``rng.randint(a, b)`` takes when there are
# ``b - a + 1`` values (one index below that length), so the states are the same; it skips
# randint's argument checks and the ``str``/``timedelta`` built from the number each time
# (tens of thousands of draws a state).
HOURS = [str(hour) for hour in range(9, 18)]
SMALL_COUNTS = [str(n) for n in range(2, 41)]
LARGE_COUNTS = [str(n) for n in range(41, 91)]
VERSION_MAJOR = [str(n) for n in range(2, 6)]
VERSION_MINOR = [str(n) for n in range(15)]
VERSION_PATCH = [str(n) for n in range(10)]
TICKETS = range(10000, 100000)
WORK_HOURS = range(8, 19)
MINUTES = range(60)
DAYS_BACK = [dt.timedelta(days=d) for d in range(HISTORY_DAYS)]
REPLY_GAPS = [dt.timedelta(minutes=m) for m in range(2, 241)]
REACTION_DELAYS = [dt.timedelta(minutes=m) for m in range(1, 301)]
JOIN_DELAYS = [dt.timedelta(days=d) for d in range(61)]
PER_WORKSPACE = 20
"""Active people per workspace besides me; two guests and two deactivated accounts join them."""


@dataclass(slots=True)
class _Msg:
    at: dt.datetime
    channel: str
    author: str
    root: _Msg | None
    versions: list[tuple[str, str, dt.datetime]]
    """(kind, text, time) for each version, in order."""
    reactions: list[tuple[str, str, dt.datetime]] = field(default_factory=list)
    """(user_id, emoji, time)."""
    replies: int = 0
    last_reply: dt.datetime | None = None
    pinned: tuple[str, dt.datetime] | None = None
    id: str = ""


_AT = attrgetter("at")


def sample_team_chat(ctx: SampleContext) -> None:
    """Fill an empty team chat database (see the module docstring for sizes)."""
    _Chat(ctx).build()


class _Chat:
    def __init__(self, ctx: SampleContext) -> None:
        self.ctx = ctx
        self.rng: Random = ctx.rng
        self.now = ctx.now.replace(second=0, microsecond=0)
        self.users: list[dict[str, Any]] = []
        self.handles: set[str] = set()
        self.rows: dict[str, list[dict[str, Any]]] = {
            "workspaces": [],
            "workspace_members": [],
            "channels": [],
            "channel_members": [],
        }
        self.messages: list[_Msg] = []
        self.handle_of: dict[str, str] = {}

    # ------------------------------------------------------------ people
    def person(self) -> str:
        fake = self.ctx.fake
        while True:
            first, last = fake.first_name(), fake.last_name()
            base = "".join(c for c in (first[0] + last).lower() if c.isalnum() and c.isascii())
            if len(base) < 2 or not base[0].isalpha():
                continue
            handle, n = base, 1
            while handle in self.handles:
                n += 1
                handle = f"{base}{n}"
            break
        self.handles.add(handle)
        uid = f"usr_{len(self.users) + 1:03d}"
        self.users.append(
            {
                "id": uid,
                "handle": handle,
                "name": f"{first} {last}",
                "title": self.rng.choice(TITLES),
                "email": "",
            }
        )
        self.handle_of[uid] = handle
        return uid

    # ------------------------------------------------------------ build
    def build(self) -> None:
        rng = self.rng
        me = self.person()
        self.users[0]["title"] = "Engineering Manager"
        companies = rng.sample(COMPANIES, len(COMPANIES))
        n_ws = 2 * self.ctx.size
        for w in range(n_ws):
            name, slug = companies[w % len(companies)]
            if w >= len(companies):
                name, slug = f"{name} {w // len(companies) + 1}", f"{slug}{w // len(companies) + 1}"
            wid = f"ws_{w + 1:02d}"
            role = "admin" if w == 0 else ("member" if w == 1 else rng.choice(["admin", "member"]))
            self.workspace(wid, name, slug, me, role)
        self.write()

    def workspace(self, wid: str, name: str, slug: str, me: str, my_role: str) -> None:
        rng = self.rng
        created = self.now - dt.timedelta(days=rng.randint(400, 1500))
        self.rows["workspaces"].append(
            {"id": wid, "name": name, "domain": f"{slug}.chat", "created_at": created}
        )
        people: list[str] = []
        role: dict[str, str] = {me: my_role}
        active: dict[str, bool] = {me: True}
        for i in range(PER_WORKSPACE + 4):
            uid = self.person()
            people.append(uid)
            role[uid] = (
                "owner" if i == 0 else "admin" if i == 1 else "guest" if i in (2, 3) else "member"
            )
            active[uid] = i < PER_WORKSPACE + 2
        for uid in [me, *people]:
            user = self.users[int(uid.split("_")[1]) - 1]
            if not user["email"]:
                user["email"] = f"{user['handle']}@{slug}.example.com"
            self.rows["workspace_members"].append(
                {
                    "workspace_id": wid,
                    "user_id": uid,
                    "role": role[uid],
                    "active": active[uid],
                    "joined_at": created + dt.timedelta(days=rng.randint(0, 300)),
                }
            )
        staff = [u for u in people if role[u] != "guest"]
        guests = [u for u in people if role[u] == "guest"]
        # channels: the defaults, a random selection of the rest, maybe a project channel
        optional = [c for c in CHANNELS if c not in ("general", "random", "releases")]
        names = ["general", "random", "releases", *sorted(rng.sample(optional, 7))]
        project = rng.choice(PROJECTS)
        # me stays out of one public and one private channel; joins most of the others
        outside_public = next(c for c in names[3:] if not CHANNELS[c][1] and not CHANNELS[c][2])
        outside_private = next((c for c in names if CHANNELS[c][1]), None)
        for cname in names:
            topic, private, archived, templates = CHANNELS[cname]
            real = cname.replace("{project}", project.lower())
            topic = topic.replace("{Project}", project)
            cid = f"chan_{len(self.rows['channels']) + 1:03d}"
            if cname in ("general", "random"):
                members = [me, *people]
            else:
                pool = staff if private else people
                members = rng.sample(pool, rng.randint(len(pool) // 3, len(pool) * 2 // 3))
                if not private and guests and rng.random() < 0.4:
                    members.append(guests[0])
                if cname == "releases" or (
                    cname not in (outside_public, outside_private) and rng.random() < 0.8
                ):
                    members.append(me)
            members = sorted(set(members))
            owner = next((u for u in members if u != me and active[u]), members[0])
            c_created = created + dt.timedelta(days=rng.randint(1, 200))
            self.rows["channels"].append(
                {
                    "id": cid,
                    "workspace_id": wid,
                    "name": real,
                    "topic": topic,
                    "is_private": private,
                    "archived": archived,
                    "created_by": owner,
                    "created_at": c_created,
                }
            )
            for uid in members:
                self.rows["channel_members"].append(
                    {
                        "channel_id": cid,
                        "user_id": uid,
                        "joined_at": c_created + rng.choice(JOIN_DELAYS),
                        "added_by": owner,
                    }
                )
            speakers = [u for u in members if active[u]]
            # mentions name people who can read the channel (and are still around)
            readers = (
                [u for u in members if active[u]]
                if private
                else [u for u in [me, *people] if active[u]]
            )
            fill = _Filler(rng, project, self.handle_of, readers)
            self.history(cid, archived, templates, speakers, fill, me, pin_all=cname == "releases")

    def history(
        self,
        cid: str,
        archived: bool,
        templates: list[str],
        speakers: list[str],
        fill: _Filler,
        me: str,
        *,
        pin_all: bool,
    ) -> None:
        rng = self.rng
        choice, random = rng.choice, rng.random
        span_end = self.now - dt.timedelta(days=70 if archived else 0, hours=1)
        count = rng.randint(16, 30) if not pin_all else 24
        i_speak = me in speakers
        roots: list[_Msg] = []
        posted: list[_Msg] = []  # this channel's messages, in the order they are drawn
        for _ in range(count):
            day = span_end - choice(DAYS_BACK)
            at = day.replace(hour=choice(WORK_HOURS), minute=choice(MINUTES))
            if at >= span_end:
                at = span_end - dt.timedelta(minutes=rng.randint(5, 600))
            author = me if i_speak and random() < 0.12 else choice(speakers)
            text = fill.text(choice(templates), exclude=author)
            root = self.message(cid, author, None, text, at)
            roots.append(root)
            posted.append(root)
        for root in roots:
            if random() < 0.35:
                at = root.at
                for _ in range(rng.randint(1, 6)):
                    at = at + choice(REPLY_GAPS)
                    if at >= span_end:
                        break
                    author = me if i_speak and random() < 0.1 else choice(speakers)
                    reply = self.message(
                        cid, author, root, fill.text(choice(REPLIES), exclude=author), at
                    )
                    posted.append(reply)
                    root.replies += 1
                    root.last_reply = reply.at
        live = sorted(posted, key=_AT)  # stable: drawn order among equal times
        two_days = dt.timedelta(days=2)
        for m in live:
            latest = m.last_reply or m.at
            limit = min(span_end, latest + two_days)
            if random() < 0.1 and latest < limit:
                at = latest + (limit - latest) * random()
                at = at.replace(second=0, microsecond=0)
                if at > latest:
                    edited = m.versions[-1][1] + fill.text(choice(EDITS), exclude=m.author)
                    m.versions.append(("edited", edited, at))
            if random() < 0.4:
                emojis = (
                    rng.sample(COMMON, rng.randint(1, 3)) if random() < 0.8 else [choice(EMOJI)]
                )
                since = m.versions[-1][2]
                for emoji in emojis:
                    for uid in rng.sample(speakers, min(len(speakers), rng.randint(1, 4))):
                        at = since + choice(REACTION_DELAYS)
                        m.reactions.append((uid, emoji, min(at, span_end)))
        # pins: a few top-level messages; the releases channel is at the limit
        tops = list(roots)
        n_pins = MAX_PINS if pin_all else rng.choice([0, 0, 1, 2, 3])
        for m in rng.sample(tops, min(n_pins, len(tops))):
            m.pinned = (rng.choice(speakers), min(m.at + dt.timedelta(hours=1), span_end))
        # a few deletions (tombstones), never of a pinned message
        for m in live:
            if m.pinned is None and rng.random() < 0.03:
                last = max([m.versions[-1][2], *(r[2] for r in m.reactions)])
                at = min(last + dt.timedelta(minutes=rng.randint(5, 600)), span_end)
                if at > m.versions[-1][2]:
                    m.versions.append(("deleted", "", at))

    def message(self, cid: str, author: str, root: _Msg | None, text: str, at: dt.datetime) -> _Msg:
        at = at.replace(second=0, microsecond=0)
        m = _Msg(at, cid, author, root, [("posted", text, at)])
        self.messages.append(m)  # in the order drawn: sorts by time keep it among equals
        return m

    # ------------------------------------------------------------ write
    def write(self) -> None:
        self.ctx.insert(self.users, into=User)
        self.ctx.insert([{"id": 1, "user_id": "usr_001"}], into=Me)
        self.ctx.insert(self.rows["workspaces"], into=Workspace)
        self.ctx.insert(self.rows["workspace_members"], into=WorkspaceMember)
        self.ctx.insert(self.rows["channels"], into=Channel)
        self.ctx.insert(self.rows["channel_members"], into=ChannelMember)
        by_handle = {u["handle"]: u["id"] for u in self.users}
        ordered = sorted(self.messages, key=_AT)  # stable: drawn order among equal times
        for n, m in enumerate(ordered, 1):
            m.id = f"msg_{n:05d}"
        messages: list[dict[str, Any]] = []
        versions: list[tuple[dt.datetime, str, int, str, str]] = []
        mentions: list[dict[str, Any]] = []
        reactions: list[tuple[dt.datetime, str, str, str]] = []
        pins: list[tuple[dt.datetime, str, str, str]] = []
        for m in ordered:
            mid = m.id
            edited_at = None
            for number, (vkind, vtext, vat) in enumerate(m.versions, 1):
                versions.append((vat, mid, number, vkind, vtext))
                if vkind == "edited":
                    edited_at = vat
                if "@" not in vtext:  # most texts mention no one: no need to parse them
                    continue
                for handle in mentioned_handles(vtext):
                    if handle in by_handle:
                        mentions.append(
                            {"message_id": mid, "version": number, "user_id": by_handle[handle]}
                        )
            kind, text, _ = m.versions[-1]
            messages.append(
                {
                    "id": mid,
                    "channel_id": m.channel,
                    "author_id": m.author,
                    "thread_root_id": m.root.id if m.root is not None else None,
                    "text": text,
                    "version": len(m.versions),
                    "deleted": kind == "deleted",
                    "created_at": m.at,
                    "edited_at": edited_at,
                    "reply_count": m.replies,
                    "last_reply_at": m.last_reply,
                    "reaction_count": len(m.reactions),
                }
            )
            if m.reactions:
                reactions += [(at_, mid, uid, emoji) for uid, emoji, at_ in m.reactions]
            if m.pinned is not None:
                pins.append((m.pinned[1], m.id, m.channel, m.pinned[0]))
        self.ctx.insert(messages, into=Message)
        versions.sort()
        self.ctx.insert(
            [
                {
                    "id": f"ver_{n:05d}",
                    "message_id": mid,
                    "number": number,
                    "kind": kind,
                    "text": text,
                    "created_at": at,
                }
                for n, (at, mid, number, kind, text) in enumerate(versions, 1)
            ],
            into=MessageVersion,
        )
        if mentions:
            self.ctx.insert(mentions, into=Mention)
        unique = sorted(reactions)
        if unique:
            self.ctx.insert(
                [
                    {
                        "id": f"rxn_{n:05d}",
                        "message_id": mid,
                        "user_id": uid,
                        "emoji": emoji,
                        "created_at": at,
                    }
                    for n, (at, mid, uid, emoji) in enumerate(unique, 1)
                ],
                into=Reaction,
            )
        pins.sort()
        if pins:
            self.ctx.insert(
                [
                    {
                        "id": f"pin_{n:04d}",
                        "channel_id": cid,
                        "message_id": mid,
                        "pinned_by": by,
                        "pinned_at": at,
                    }
                    for n, (at, mid, cid, by) in enumerate(pins, 1)
                ],
                into=Pin,
            )


class _Filler:
    """Fills a template's slots; {person} becomes an @mention of someone who can read it."""

    def __init__(self, rng: Random, project: str, handles: dict[str, str], readers: list[str]):
        self.rng, self.project, self.handles, self.readers = rng, project, handles, readers
        self.mentions: dict[str, list[str]] = {}
        """Per excluded author: the @mentions of the others who can read (all of them if none)."""

    def text(self, template: str, *, exclude: str) -> str:
        rng = self.rng
        mentions = self.mentions.get(exclude)
        if mentions is None:
            others = [u for u in self.readers if u != exclude] or self.readers
            mentions = self.mentions[exclude] = [f"@{self.handles[u]}" for u in others]
        choice = rng.choice
        values = {
            "person": choice(mentions),
            "day": choice(DAYS),
            "time": f"{choice(HOURS)}:{choice(QUARTERS)}",
            "n": choice(SMALL_COUNTS),
            "m": choice(LARGE_COUNTS),
            "version": f"{choice(VERSION_MAJOR)}.{choice(VERSION_MINOR)}.{choice(VERSION_PATCH)}",
            "project": self.project,
            "Project": self.project,
            "customer": choice(CUSTOMERS),
            "doc": choice(DOCS),
            "title": choice(TITLES),
            "ticket": str(choice(TICKETS)),
        }
        return template.format_map(values)
