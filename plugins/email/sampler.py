"""A realistic company mail system: size 1 gives 5 mailboxes with ~70 contacts, ~30 labels,
~150 threads, ~400 messages (internal mail delivered to both sides), ~80 attachments and
~20 drafts; size n gives n times as many mailboxes.

The history covers the 45 days before "now". Each thread is played in time order through
the same operations the live tools use (:func:`.models.send` and :func:`.models.receive`):
a message to a colleague lands in the colleague's inbox, in the matching thread, and every
sent message counts on the contacts it went to. The operations look rows up in the
sampler's own dictionaries (``_Room``) instead of querying, and every row is inserted at the
end (:meth:`SampleContext.insert`). Older mail is mostly read and often archived; recent
mail is often unread; a few messages are starred, in Trash or in Spam.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from sqlalchemy.orm import Session as OrmSession

from prove_gym.server import SampleContext

from .models import (
    Attachment,
    Base,
    Contact,
    Draft,
    File,
    Label,
    Mailbox,
    Mailroom,
    Message,
    MessageLabel,
    Thread,
    join_addresses,
    mime_type,
    prefixed,
    receive,
    send,
)

HISTORY_DAYS = 45
TITLES = [
    "Account Manager",
    "Engineering Lead",
    "Finance Director",
    "Head of People",
    "Operations Manager",
    "Product Designer",
    "Sales Lead",
    "Office Manager",
    "Marketing Manager",
    "Legal Counsel",
]
LABELS: list[tuple[str, str]] = [
    ("Clients", "blue"),
    ("Finance", "green"),
    ("Hiring", "purple"),
    ("Travel", "orange"),
    ("Vendors", "teal"),
    ("Follow up", "red"),
    ("Legal", "gray"),
    ("Projects", "yellow"),
    ("Team", "pink"),
]
PROJECTS = ["Atlas", "Beacon", "Cobalt", "Delta", "Evergreen", "Falcon", "Granite", "Horizon"]
CITIES = ["Lisbon", "Denver", "Austin", "Berlin", "Toronto", "Chicago", "Dublin", "Madrid"]
ROLES = ["Senior Backend Engineer", "Account Executive", "Data Analyst", "Office Coordinator"]


@dataclass(frozen=True)
class Topic:
    label: str
    subject: str
    opening: tuple[str, ...]
    replies: tuple[str, ...]
    files: tuple[tuple[str, int, int], ...] = ()
    """(filename pattern, smallest KB, largest KB) of what the opening message may carry."""


TOPICS: tuple[Topic, ...] = (
    Topic(
        "Finance",
        "Q{q} budget review",
        (
            "Attached is the draft budget for Q{q}. Could you check the travel and software "
            "lines before Thursday?",
            "Finance needs our Q{q} numbers by Friday. Can you confirm the headcount plan?",
        ),
        (
            "Thanks, the software line looks high. Can we move the {project} licences to Q{q2}?",
            "Looks good to me. I added two comments on the travel line.",
            "Confirmed, headcount stays flat. Numbers are final on my side.",
        ),
        (("Budget_Q{q}_draft.xlsx", 40, 900),),
    ),
    Topic(
        "Vendors",
        "Invoice {n} from {company}",
        (
            "Please find invoice {n} attached for the services delivered last month. Payment "
            "is due within 30 days.",
            "Our invoice {n} is attached. Let us know if the purchase order number is missing.",
        ),
        (
            "Thanks, forwarded to accounts payable. We will pay by the due date.",
            "Could you add our PO number to the invoice? It is PO-{po}.",
            "Received, thank you. Payment is scheduled for next week.",
        ),
        (("Invoice_{n}.pdf", 60, 400),),
    ),
    Topic(
        "Legal",
        "Contract renewal - {company}",
        (
            "Our agreement renews on the first of next month. The redlined contract is "
            "attached for your review.",
            "Before we renew, we would like to discuss the liability clause in section 7.",
        ),
        (
            "Thanks. Legal has a few comments on section 7; I will send them by Wednesday.",
            "We accept the changes. Please send the final version for signature.",
            "Can we set up a short call to go through the open points?",
        ),
        (("Contract_{company_slug}_2026.docx", 80, 600), ("Redlines.pdf", 100, 1200)),
    ),
    Topic(
        "Hiring",
        "Interview schedule for {role}",
        (
            "Here is the interview plan for the {role} role. Can you take the technical round "
            "on Tuesday at 2pm?",
            "We have three candidates for {role} this week. The schedule is attached.",
        ),
        (
            "Tuesday works. Please send me the candidate's CV beforehand.",
            "I can do Wednesday morning instead, Tuesday is full.",
            "Done, feedback is in the tracker. Strong yes from me.",
        ),
        (("Interview_plan.pdf", 30, 200), ("CV_candidate.pdf", 50, 400)),
    ),
    Topic(
        "Travel",
        "Flight and hotel for the {city} offsite",
        (
            "I booked flights for the {city} offsite. The itinerary is attached; the hotel is "
            "confirmed for three nights.",
            "Can you confirm your dates for {city}? I need them to book the hotel block.",
        ),
        (
            "Thanks! I arrive a day early, can you extend my hotel night?",
            "Dates confirmed: arriving Monday, leaving Thursday.",
            "Perfect, see you in {city}.",
        ),
        (("Itinerary_{city}.pdf", 40, 300), ("Hotel_confirmation.pdf", 30, 150)),
    ),
    Topic(
        "Projects",
        "{project} kickoff notes",
        (
            "Notes from today's {project} kickoff are below. Owners and dates are in the "
            "attached plan; please flag anything missing.",
            "Sharing the {project} kickoff deck ahead of Monday's meeting.",
        ),
        (
            "Thanks for the notes. The design milestone should move one week later.",
            "I added the open risks to the plan.",
            "Looks complete. I will own the data migration.",
        ),
        (("{project}_plan.pptx", 800, 9000),),
    ),
    Topic(
        "Clients",
        "Proposal: {project} phase 2",
        (
            "As discussed, our proposal for phase 2 of {project} is attached, with pricing and "
            "a timeline.",
            "Following our call, here is the scope we suggest for {project} phase 2.",
        ),
        (
            "Thanks, we are reviewing it internally and will come back next week.",
            "Can you split the pricing into two milestones?",
            "We would like to go ahead. What are the next steps?",
        ),
        (("{project}_phase2_proposal.pdf", 200, 3000),),
    ),
    Topic(
        "Clients",
        "Quick question about the {project} timeline",
        (
            "Is the {project} launch still planned for the end of the month? Our marketing "
            "team needs to know.",
            "Could you share an updated timeline for {project}? We heard it might slip.",
        ),
        (
            "Yes, the launch date holds. I will send the detailed plan tomorrow.",
            "It moves by one week; the new date is in the attached plan.",
            "Thanks for checking, I will confirm after our stand-up.",
        ),
    ),
    Topic(
        "Vendors",
        "Order {n} shipping update",
        (
            "Your order {n} has shipped and should arrive within three business days.",
            "Order {n} is delayed at the warehouse; the new delivery date is next Tuesday.",
        ),
        (
            "Thanks for the update. Please deliver to the reception desk.",
            "Can you expedite it? We need it before Friday.",
        ),
    ),
    Topic(
        "Team",
        "Lunch next week?",
        (
            "Are you free for lunch next week? Tuesday or Thursday work for me.",
            "The team lunch is on Thursday at 12:30, the usual place.",
        ),
        (
            "Thursday works, see you then!",
            "Count me in.",
            "Sorry, I am travelling that week. Next time!",
        ),
    ),
    Topic(
        "Follow up",
        "Updated deck for the {company} meeting",
        (
            "I updated the deck for Thursday's meeting with {company}. Can you review the "
            "pricing slide?",
            "Here is the final deck for the {company} meeting.",
        ),
        (
            "Looks great. One typo on slide 4.",
            "I changed the pricing slide, please check.",
        ),
        (("{company_slug}_meeting.pptx", 1500, 12000),),
    ),
    Topic(
        "Team",
        "Security review findings",
        (
            "The security review found two medium issues. Details are in the attached sheet; "
            "can your team fix them this sprint?",
        ),
        (
            "Thanks, both are scheduled for this sprint.",
            "The first one is fixed; the second needs a vendor update.",
        ),
        (("Security_findings.xlsx", 30, 250),),
    ),
)
NEWSLETTERS = [
    ("news@saasweekly.com", "SaaS Weekly", "This week in SaaS: pricing pages that convert"),
    ("digest@productpulse.io", "Product Pulse", "Your weekly product digest"),
    ("events@cityconf.org", "CityConf", "Early-bird tickets end Friday"),
    ("updates@cloudstatus.net", "CloudStatus", "Scheduled maintenance this weekend"),
]
SPAM = [
    ("winner@prize-claims.biz", "Prize Department", "Congratulations! You have won a gift card"),
    ("support@secure-acc0unt.com", "Account Security", "Urgent: verify your account now"),
    ("deals@cheap-meds.info", "Best Deals", "Limited offer just for you"),
    ("ceo@invoice-pay.co", "CEO Office", "Wire transfer needed today"),
]
SIGN_OFFS = ["Best,", "Thanks,", "Kind regards,", "Cheers,", "Best regards,"]


def sample_email(ctx: SampleContext) -> None:
    """Fill an empty email database (see the module docstring for sizes)."""
    sampler = _Sampler(ctx)
    sampler.run()
    ctx.insert(sampler.room.rows)


class _Room(Mailroom):
    """The mail operations' lookups answered from dictionaries, ids counted in Python.

    The sampler alone writes the state, so it can keep every row it files; they are
    inserted at the end, all at once.
    """

    def __init__(self, db: OrmSession) -> None:
        super().__init__(db)
        self.rows: list[Base] = []
        self.last_id: dict[str, int] = {}
        self.mailboxes: dict[str, Mailbox] = {}
        self.contacts: dict[tuple[str, str], Contact] = {}
        self.labels: list[Label] = []
        self.threads: dict[str, Thread] = {}
        self.conversations: dict[tuple[str, str], Thread] = {}
        self.messages: dict[str, list[Message]] = {}
        """Each thread's messages, in the order they were filed."""

    def new_id(self, column: object, prefix: str, width: int) -> str:
        n = self.last_id[prefix] = self.last_id.get(prefix, 0) + 1
        return f"{prefix}_{n:0{width}d}"

    def add(self, row: Base) -> None:
        self.rows.append(row)
        if isinstance(row, Mailbox):
            self.mailboxes[row.address] = row
        elif isinstance(row, Contact):
            self.contacts[row.mailbox_id, row.email] = row
        elif isinstance(row, Label):
            self.labels.append(row)
        elif isinstance(row, Thread):
            self.threads[row.id] = row
            self.conversations[row.mailbox_id, row.conversation] = row
            self.messages[row.id] = []
        elif isinstance(row, Message):
            self.messages[row.thread_id].append(row)

    def flush(self) -> None:
        pass

    def thread(self, thread_id: str) -> Thread:
        return self.threads[thread_id]

    def contact(self, mailbox_id: str, address: str) -> Contact | None:
        return self.contacts.get((mailbox_id, address))

    def mailbox(self, address: str) -> Mailbox | None:
        return self.mailboxes.get(address)

    def conversation(self, mailbox_id: str, conversation: str) -> Thread | None:
        return self.conversations.get((mailbox_id, conversation))

    def latest(self, thread_id: str, excluding: str) -> str | None:
        others = [m for m in self.messages[thread_id] if m.id != excluding]
        return max(others, key=lambda m: (m.sent_at, m.id)).id if others else None


class _Sampler:
    def __init__(self, ctx: SampleContext) -> None:
        self.rng, self.fake, self.now = ctx.rng, ctx.fake, ctx.now
        self.size = ctx.size
        self.start = ctx.now - dt.timedelta(days=HISTORY_DAYS)
        self.room = _Room(ctx.db)
        self._known_of: dict[str, tuple[int, list[tuple[str, str, str]]]] = {}
        """Per mailbox id: the contact count when :meth:`_known` last read, and what it read."""

    # ------------------------------------------------------------ helpers
    def _person(self) -> str:
        return f"{self.fake.first_name()} {self.fake.last_name()}"

    def _slug(self, text: str) -> str:
        return "".join(c for c in text.lower().replace(" ", "-") if c.isalnum() or c == "-")

    def _address(self, name: str, domain: str) -> str:
        parts = [self._slug(p) for p in name.split()[:2]]
        return f"{'.'.join(p for p in parts if p)}@{domain}"

    def _when(self, earliest: dt.datetime) -> dt.datetime:
        """A working-hours moment between ``earliest`` and now."""
        span = max(int((self.now - earliest).total_seconds() // 60), 1)
        at = earliest + dt.timedelta(minutes=self.rng.randrange(span))
        at = at.replace(hour=self.rng.randint(8, 18), second=0, microsecond=0)
        at = max(at, earliest + dt.timedelta(minutes=5))
        return min(at, self.now - dt.timedelta(minutes=5))

    def _later(self, at: dt.datetime) -> dt.datetime | None:
        nxt = at + dt.timedelta(minutes=self.rng.randint(20, 60 * 30))
        return nxt if nxt < self.now else None

    def _body(self, greeting_to: str, text: str, signer: str) -> str:
        hello = self.rng.choice(["Hi", "Hello", "Dear"])
        first = greeting_to.split()[0] if greeting_to else "there"
        return f"{hello} {first},\n\n{text}\n\n{self.rng.choice(SIGN_OFFS)}\n{signer}"

    def _fill(self, template: str, slots: dict[str, str]) -> str:
        return template.format(**slots)

    def _slots(self, company: str) -> dict[str, str]:
        q = self.rng.randint(1, 4)
        return {
            "q": str(q),
            "q2": str(q % 4 + 1),
            "n": f"{self.rng.randint(1000, 9999)}",
            "po": f"{self.rng.randint(10000, 99999)}",
            "company": company,
            "company_slug": company.split()[0].replace(",", ""),
            "project": self.rng.choice(PROJECTS),
            "city": self.rng.choice(CITIES),
            "role": self.rng.choice(ROLES),
        }

    def _files(self, topic: Topic, slots: dict[str, str]) -> list[File]:
        if not topic.files or self.rng.random() > 0.55:
            return []
        chosen = topic.files[: self.rng.randint(1, len(topic.files))]
        out: list[File] = []
        for pattern, low, high in chosen:
            name = self._fill(pattern, slots)
            out.append((name, mime_type(name), self.rng.randint(low, high) * 1024))
        return out

    # ------------------------------------------------------------ the state
    def run(self) -> None:
        company = self.fake.company()
        domain = f"{self._slug(company.split()[0].replace(',', ''))}.com"
        self.mailboxes: list[Mailbox] = []
        taken: set[str] = set()
        for i in range(5 * self.size):
            name = self._person()
            address = self._address(name, domain)
            while address in taken:
                name = self._person()
                address = self._address(name, domain)
            taken.add(address)
            mailbox = Mailbox(
                id=f"mbx_{i + 1:02d}",
                address=address,
                owner_name=name,
                title=TITLES[i % len(TITLES)],
                created_at=self.start - dt.timedelta(days=self.rng.randint(90, 900)),
            )
            self.room.add(mailbox)
            self.mailboxes.append(mailbox)
        self.people = self._outsiders(taken)
        for mailbox in self.mailboxes:
            self._contacts(mailbox)
            self._labels(mailbox)
        plan: list[tuple[dt.datetime, int, Mailbox]] = []
        for mailbox in self.mailboxes:
            for _ in range(self.rng.randint(16, 22)):
                plan.append((self._when(self.start), len(plan), mailbox))
        # threads are played in the order they start, so ids follow time
        for at, _, mailbox in sorted(plan, key=lambda p: (p[0], p[1])):
            if self.rng.random() < 0.2 and len(self.mailboxes) > 1:
                self._internal_thread(mailbox, at)
            else:
                self._external_thread(mailbox, at)
        for mailbox in self.mailboxes:
            self._bulk(mailbox)
        self._file_and_flag()
        for mailbox in self.mailboxes:
            self._drafts(mailbox)

    def _outsiders(self, taken: set[str]) -> list[tuple[str, str, str]]:
        """External people: (name, address, company)."""
        people: list[tuple[str, str, str]] = []
        for _ in range(6 * self.size):
            company = self.fake.company()
            domain = f"{self._slug(company.split()[0].replace(',', ''))}.com"
            for _ in range(self.rng.randint(3, 6)):
                name = self._person()
                address = self._address(name, domain)
                if address in taken:
                    continue
                taken.add(address)
                people.append((name, address, company))
        return people

    def _contacts(self, mailbox: Mailbox) -> None:
        for name, address, company in self.rng.sample(self.people, 12):
            self.room.add(
                Contact(
                    id=self.room.new_id(Contact.id, "con", 4),
                    mailbox_id=mailbox.id,
                    name=name,
                    email=address,
                    company=company,
                    times_emailed=0,
                    last_emailed_at=None,
                    created_at=self.start - dt.timedelta(days=self.rng.randint(1, 400)),
                )
            )

    def _labels(self, mailbox: Mailbox) -> None:
        for name, color in sorted(self.rng.sample(LABELS, self.rng.randint(4, 7))):
            self.room.add(
                Label(
                    id=self.room.new_id(Label.id, "lbl", 3),
                    mailbox_id=mailbox.id,
                    name=name,
                    color=color,
                    created_at=mailbox.created_at + dt.timedelta(days=self.rng.randint(1, 60)),
                )
            )

    def _known(self, mailbox: Mailbox) -> list[tuple[str, str, str]]:
        """The mailbox's contacts outside the company, in id order (the order ids were counted).

        Kept per mailbox until a contact is added (sending adds them; none is removed, and
        the fields read here never change): each thread asks, and reading the mapped
        contacts' attributes again each time was an eighth of the sampler's time.
        """
        count = len(self.room.contacts)
        kept = self._known_of.get(mailbox.id)
        if kept is not None and kept[0] == count:
            return kept[1]
        ours = f"@{self._domain}".lower()
        known = [
            (c.name, c.email, c.company)
            for c in self.room.contacts.values()
            if c.mailbox_id == mailbox.id and not c.email.lower().endswith(ours)
        ]
        self._known_of[mailbox.id] = (count, known)
        return known

    @property
    def _domain(self) -> str:
        return self.mailboxes[0].address.split("@", 1)[1]

    def _external_thread(self, mailbox: Mailbox, at: dt.datetime) -> None:
        rng = self.rng
        known = self._known(mailbox)
        who = rng.sample(known, rng.choice([1, 1, 1, 2]))
        topic = rng.choice(TOPICS)
        slots = self._slots(who[0][2])
        subject = self._fill(topic.subject, slots)
        thread: Thread | None = None
        last: Message | None = None
        incoming = rng.random() < 0.6
        for turn in range(rng.choice([1, 2, 2, 3, 3, 4, 5])):
            text = self._fill(rng.choice(topic.opening if turn == 0 else topic.replies), slots)
            files = self._files(topic, slots) if turn == 0 else []
            subj = subject if turn == 0 else prefixed("Re", subject)
            kind = "new" if turn == 0 else "reply"
            reply_to = last.id if last is not None else None
            if incoming:
                name, address, _ = who[0]
                cc = [p[1] for p in who[1:]]
                last = receive(
                    self.room,
                    mailbox=mailbox,
                    thread=thread,
                    kind=kind,
                    from_address=address,
                    from_name=name,
                    to=[mailbox.address],
                    cc=cc,
                    subject=subj,
                    body=self._body(mailbox.owner_name, text, name),
                    at=at,
                    in_reply_to=reply_to,
                    files=files,
                )
            else:
                last, _ = send(
                    self.room,
                    mailbox=mailbox,
                    thread=thread,
                    kind=kind,
                    to=[who[0][1]],
                    cc=[p[1] for p in who[1:]],
                    subject=subj,
                    body=self._body(who[0][0], text, mailbox.owner_name),
                    at=at,
                    in_reply_to=reply_to,
                    files=files,
                )
            thread = self.room.thread(last.thread_id)
            incoming = not incoming
            nxt = self._later(at)
            if nxt is None:
                break
            at = nxt

    def _internal_thread(self, mailbox: Mailbox, at: dt.datetime) -> None:
        rng = self.rng
        colleague = rng.choice([m for m in self.mailboxes if m.id != mailbox.id])
        topic = rng.choice([t for t in TOPICS if t.label in ("Team", "Projects", "Finance")])
        slots = self._slots("the client")
        subject = self._fill(topic.subject, slots)
        sides = [mailbox, colleague]
        threads: dict[str, Thread] = {}
        last: dict[str, str] = {}
        for turn in range(rng.choice([1, 2, 2, 3])):
            me, them = sides[turn % 2], sides[(turn + 1) % 2]
            text = self._fill(rng.choice(topic.opening if turn == 0 else topic.replies), slots)
            sent, copies = send(
                self.room,
                mailbox=me,
                thread=threads.get(me.id),
                kind="new" if turn == 0 else "reply",
                to=[them.address],
                cc=[],
                subject=subject if turn == 0 else prefixed("Re", subject),
                body=self._body(them.owner_name, text, me.owner_name),
                at=at,
                in_reply_to=last.get(me.id),
                files=self._files(topic, slots) if turn == 0 else [],
            )
            for m in (sent, *copies):
                threads[m.mailbox_id] = self.room.thread(m.thread_id)
                last[m.mailbox_id] = m.id
            nxt = self._later(at)
            if nxt is None:
                break
            at = nxt

    def _bulk(self, mailbox: Mailbox) -> None:
        """Newsletters and spam: received, never answered."""
        rng = self.rng
        for address, name, subject in rng.sample(NEWSLETTERS, rng.randint(2, 4)):
            receive(
                self.room,
                mailbox=mailbox,
                thread=None,
                kind="new",
                from_address=address,
                from_name=name,
                to=[mailbox.address],
                cc=[],
                subject=subject,
                body=f"{subject}.\n\nRead the full issue on our website.\n\nUnsubscribe: "
                f"https://{address.split('@')[1]}/unsubscribe",
                at=self._when(self.now - dt.timedelta(days=10)),
            )
        for address, name, subject in rng.sample(SPAM, rng.randint(1, 3)):
            receive(
                self.room,
                mailbox=mailbox,
                thread=None,
                kind="new",
                from_address=address,
                from_name=name,
                to=[mailbox.address],
                cc=[],
                subject=subject,
                body=f"{subject}! Click the link below to claim it within 24 hours.",
                at=self._when(self.now - dt.timedelta(days=20)),
                folder="spam",
            )

    def _file_and_flag(self) -> None:
        """Read, archive, trash, star and label received mail as its owner would have."""
        rng = self.rng
        labels: dict[str, dict[str, str]] = {}
        for label in self.room.labels:
            labels.setdefault(label.mailbox_id, {})[label.name] = label.id
        topic_label = {t.subject.split(" ")[0]: t.label for t in TOPICS}
        for thread in self.room.threads.values():  # in id order
            messages = sorted(self.room.messages[thread.id], key=lambda m: (m.sent_at, m.id))
            age = self.now - thread.last_message_at
            first_word = messages[0].subject.split(" ")[0]
            label_name = topic_label.get(first_word)
            if label_name is None and messages[0].subject.startswith("Flight"):
                label_name = "Travel"
            label_id = labels.get(thread.mailbox_id, {}).get(label_name or "")
            tag = label_id is not None and rng.random() < 0.45
            archived = age > dt.timedelta(days=7) and rng.random() < 0.5
            trashed = not archived and age > dt.timedelta(days=3) and rng.random() < 0.06
            for m in messages:
                if m.direction == "received" and m.folder == "inbox":
                    recent = self.now - m.sent_at < dt.timedelta(days=3)
                    m.is_read = rng.random() < (0.4 if recent else 0.93)
                    if archived and m.is_read:
                        m.folder = "archive"
                    elif trashed:
                        m.folder = "trash"
                    m.is_starred = rng.random() < 0.08
                if tag and label_id is not None and m.folder != "spam":
                    self.room.add(MessageLabel(message_id=m.id, label_id=label_id))

    def _drafts(self, mailbox: Mailbox) -> None:
        rng = self.rng
        known = self._known(mailbox)
        # replies in progress to the latest unanswered messages
        bulk = {a for a, _, _ in NEWSLETTERS}
        unanswered = [
            m
            for thread in self.room.threads.values()
            if thread.mailbox_id == mailbox.id
            for m in self.room.messages[thread.id]
            if m.direction == "received"
            and m.folder == "inbox"
            and m.kind != "forward"
            and m.from_address not in bulk
            and m.sent_at == thread.last_message_at
        ]
        waiting = sorted(unanswered, key=lambda m: (m.sent_at, m.id), reverse=True)[:2]
        made: list[Draft] = []
        for m in waiting:
            made.append(
                self._draft(
                    mailbox,
                    kind="reply",
                    thread_id=m.thread_id,
                    in_reply_to=m.id,
                    to=[m.from_address],
                    subject=prefixed("Re", m.subject),
                    after=m.sent_at,
                    body=rng.choice(
                        [
                            "Thanks for this, I will get back to you by Friday.",
                            "Thanks! Quick question before I confirm:",
                            "",
                        ]
                    ),
                )
            )
        for _ in range(rng.randint(1, 3)):
            name, address, company = rng.choice(known)
            topic = rng.choice(TOPICS)
            slots = self._slots(company)
            made.append(
                self._draft(
                    mailbox,
                    kind="new",
                    thread_id=None,
                    in_reply_to=None,
                    to=[address] if rng.random() < 0.8 else [],
                    subject=self._fill(topic.subject, slots) if rng.random() < 0.85 else "",
                    body=self._body(name, self._fill(topic.opening[0], slots), mailbox.owner_name),
                )
            )
        if made and rng.random() < 0.6:
            draft = rng.choice(made)
            name = rng.choice(["Notes.pdf", "Agenda.docx", "Photo.jpg", "Figures.xlsx"])
            self.room.add(
                Attachment(
                    id=self.room.new_id(Attachment.id, "att", 5),
                    message_id=None,
                    draft_id=draft.id,
                    position=1,
                    filename=name,
                    mime_type=mime_type(name),
                    size_bytes=rng.randint(20, 4000) * 1024,
                )
            )

    def _draft(
        self,
        mailbox: Mailbox,
        *,
        kind: str,
        thread_id: str | None,
        in_reply_to: str | None,
        to: list[str],
        subject: str,
        body: str,
        after: dt.datetime | None = None,
    ) -> Draft:
        created = self._when(max(after or self.start, self.now - dt.timedelta(days=5)))
        draft = Draft(
            id=self.room.new_id(Draft.id, "drf", 4),
            mailbox_id=mailbox.id,
            kind=kind,
            thread_id=thread_id,
            in_reply_to=in_reply_to,
            to_addresses=join_addresses(to),
            cc_addresses="",
            subject=subject,
            body=body,
            status="draft",
            sent_message_id=None,
            created_at=created,
            updated_at=created,
        )
        self.room.add(draft)
        return draft
