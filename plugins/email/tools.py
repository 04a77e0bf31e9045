"""The email server's 17 tools (19 from prove/email-v3). Docstrings are what the model reads:
keep examples concrete.

Mail is append-only: nothing changes what a sent or received message says, and nothing
deletes it; drafts are the editable part. Business rules have names (``sent_is_final``,
``no_recipients``, ...); a tool that refuses an action raises ``PreconditionFailed`` (or
``Conflict`` for a taken label name) with a message that starts with ``Rule '<name>'
failed:`` and says what would be allowed instead. A refused call changes nothing.
"""

from __future__ import annotations

import datetime as dt
import functools
import random
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Annotated, Any, Literal
from zoneinfo import ZoneInfo

from pydantic import Field
from sqlalchemy import BindParameter, bindparam, case, delete, func, select

from prove_gym.server import (
    Bound,
    Conflict,
    Entity,
    EnvVersion,
    InvalidArgument,
    NotRequired,
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
    zones,
)
from prove_gym.server.sql import record_by_key

from .models import (
    BLOCKED_EXTENSIONS,
    DEFAULT_TIME_ZONE,
    FOLDERS,
    MAILER_DAEMON,
    MAX_ATTACHMENT_BYTES,
    MAX_ATTACHMENTS,
    MAX_BODY,
    MAX_LABELS,
    MAX_RECIPIENTS,
    RESERVED_LABELS,
    Attachment,
    Base,
    Contact,
    Draft,
    Label,
    Mailbox,
    MailboxSettings,
    Mailroom,
    Message,
    MessageLabel,
    Thread,
    bounce_reason,
    join_addresses,
    mime_type,
    prefixed,
    send,
    split_addresses,
)
from .sampler import NEWSLETTERS, SPAM, sample_email

OUT_OF_SCOPE = (
    "Set up an out-of-office reply until Monday.",
    "Unsubscribe me from every newsletter.",
    "Add a signature with my phone number to every message.",
    "Recall the message I sent five minutes ago.",
    "Block every message from the example.com domain.",
    "Change my mailbox password.",
    "Create a rule that files receipts automatically.",
    "Print the last message I received.",
    "Increase my mailbox storage quota.",
    "Schedule a message to be sent tomorrow at 8.",
    "Scan my attachments for viruses.",
)
"""Requests a user of this server might make that no tool (of any server) serves:
synthesis asks them in abstention turns."""

OWNER = 1
"""The env version from which a session acts for one mailbox's owner."""
BOUNCES = 2
"""The env version from which mail to an address that cannot receive it bounces
(:func:`.models.bounce_reason`): no copy, no new contact, a bounce in the sender's inbox."""
DIRECTORY = 2
"""The env version from which list_mailboxes, acting for a mailbox's owner, shows only that
mailbox's folders, drafts and labels; colleagues' mailboxes show what the company directory
does (address, name, title)."""
TIME_ZONES = 3
"""The env version from which every time a tool shows is in the mailbox owner's time zone
with its UTC offset, every time it takes is read in that zone, and the owner reads and sets
the zone (get_time_zone, set_time_zone). Stored times stay UTC."""

TIME_ZONE_RULES: dict[str, str] = {
    "nonexistent_local_time": "From prove/email-v3: a local time skipped when the clocks go "
    "forward in your time zone does not exist; give another time, or an offset.",
    "ambiguous_local_time": "From prove/email-v3: a local time in the hour repeated when the "
    "clocks go back in your time zone happens twice; give an offset (such as "
    "'2026-11-01T01:30-04:00') to say which.",
}
"""The rules email-v3 adds, named in its refusals."""

TIME_ZONE_TEXT = (
    "Time zones: your mailbox shows every time in your time zone with its UTC offset, ISO "
    "8601, such as '2026-03-02T05:15-05:00' (a message's sent_at, a thread's "
    "last_message_at, a draft's updated_at, a contact's last_emailed_at, the Date of a "
    "forwarded message); get_time_zone shows the zone and the current time there, "
    "set_time_zone changes it (an IANA name such as 'America/New_York'; until one is set "
    f"it is {DEFAULT_TIME_ZONE}). A date or time you give (search_messages' after and "
    "before) is read in your zone: a date such as '2026-03-01' is that local day, from its "
    "first moment; a time such as '2026-03-01T09:00' is local unless it names its offset "
    "('2026-03-01T09:00-05:00'). Rules: "
    + " ".join(f"{name}: {text}" for name, text in TIME_ZONE_RULES.items())
)
"""What prove/email-v3 adds, in the words of its instructions."""

server = Server(
    "email",
    out_of_scope=OUT_OF_SCOPE,
    tasks_file=Path(__file__).with_name("tasks.jsonl"),
    version="1.3.0",
    env_versions=[
        EnvVersion(
            OWNER,
            "acts for one mailbox's owner (the task's principal): a call on another "
            "mailbox, or on its messages, threads, drafts or labels, is refused with "
            "permission_denied (rule not_your_mailbox) and changes nothing",
            tasks_file=Path(__file__).with_name("tasks_v1.jsonl"),
            principal=Principal(
                "mailbox",
                "You are signed in to mailbox {id} and act for its owner: you read, write, "
                "file and send only that mailbox's mail (list_mailboxes shows its address). "
                "Calls on another mailbox or its messages, threads, drafts or labels are "
                "refused (rule 'not_your_mailbox').",
            ),
        ),
        EnvVersion(
            BOUNCES,
            "mail to an address that cannot receive it bounces: the address gets no copy and "
            "does not become a contact, and a bounce from the Mail Delivery Subsystem lands in "
            "the sender's inbox, in the message's thread, naming it and why (an unknown "
            "address at the company's own domain, a domain that does not exist or is reserved "
            "and accepts no mail); list_mailboxes shows only the signed-in mailbox's folders, "
            "drafts and labels, and colleagues' mailboxes as the company directory does "
            "(address, name, title); keeps v1's acting mailbox owner",
            tasks_file=Path(__file__).with_name("tasks_v2.jsonl"),
            instructions="Delivery: mail to an address that cannot receive it (an address at "
            "the company's own domain that is no colleague's mailbox, a domain that does not "
            "exist, or one reserved for examples such as example.com) is still sent, but that "
            "address gets nothing and does not become a contact: a bounce ('Undeliverable: "
            "<subject>', from the Mail Delivery Subsystem) arrives in your inbox in the same "
            "thread, naming the address and why. list_mailboxes shows your own mailbox's "
            "folders, drafts and labels, and your colleagues' mailboxes only as the company "
            "directory does (address, name, title).",
        ),
        EnvVersion(
            TIME_ZONES,
            "time zones: every time a tool shows (sent_at, last_message_at, updated_at, "
            "last_emailed_at, a forward's Date) is in the mailbox owner's time zone with its "
            "UTC offset (ISO 8601, such as '2026-03-02T05:15-05:00'); get_time_zone and "
            "set_time_zone read and set the zone (an IANA name; UTC until one is set); "
            "search_messages takes after and before, a date or a time read in that zone "
            "(a date is the local day from its first moment); a local time the zone skips or "
            "repeats is refused (rules nonexistent_local_time, ambiguous_local_time); stored "
            "times stay UTC; keeps v2's bounces and directory and v1's acting mailbox owner",
            tasks_file=Path(__file__).with_name("tasks_v3.jsonl"),
            instructions=TIME_ZONE_TEXT,
        ),
    ],
    base=Base,
    sampler=sample_email,
    description="A company's email: each employee's mailbox with folders (inbox, archive, "
    "sent, trash, spam), threads, labels, attachments' metadata and contacts. Drafts are "
    "written, edited and sent; replies and forwards stay in their thread; mail to a "
    "colleague is delivered to their inbox. Sent mail is append-only: it is never edited "
    "or deleted.",
    instructions="Email conventions: ids look like 'mbx_03' (mailbox), 'thr_0042' (thread), "
    "'msg_00137' (message), 'drf_0012' (draft), 'lbl_007' (label), 'att_00021' "
    "(attachment). Addresses are compared without regard to case. To write mail, make a "
    "draft (create_draft, reply_to_message or forward_message), change it with "
    "update_draft or add_attachment if needed, then send it with send_draft; nothing is "
    "sent before send_draft. What was sent can never be changed or unsent. Reading a "
    "message does not mark it read. Refused calls name the rule that failed and change "
    "nothing.",
)

MailboxRow = Annotated[Record[Mailbox], Entity("mailbox")]
MessageRow = Annotated[Record[Message], Entity("message")]
ThreadRow = Annotated[Record[Thread], Entity("thread")]
DraftRow = Annotated[Record[Draft], Entity("draft")]
LabelRow = Annotated[Record[Label], Entity("label")]
EMAIL = r"^\s*[^@\s,]+@[^@\s,]+\.[^@\s,]+\s*$"
Address = Annotated[str, Field(max_length=120, pattern=EMAIL)]
Addresses = Annotated[list[Address], Entity("contact", many=True), Field(max_length=MAX_RECIPIENTS)]
Subject = Annotated[str, Field(max_length=200)]
Body = Annotated[str, Field(max_length=5000)]
# Longer than any name, address or subject it is matched against.
SearchText = Annotated[str, Field(max_length=200)]
Folder = Literal["inbox", "archive", "sent", "trash", "spam"]
Flag = Literal["read", "unread", "starred", "unstarred"]
LabelName = Annotated[
    str, Field(min_length=1, max_length=40, pattern=r"^\s*[A-Za-z0-9][A-Za-z0-9 &/_.-]*\s*$")
]
Filename = Annotated[
    str, Field(min_length=3, max_length=120, pattern=r"^\s*[^/\\:*?\"<>|]+\.[A-Za-z0-9]{1,8}\s*$")
]
Color = Literal["gray", "red", "orange", "yellow", "green", "teal", "blue", "purple", "pink"]

RULES: dict[str, str] = {
    "sent_is_final": "A sent draft is part of the record: it cannot be edited, deleted, given "
    "attachments or sent again (write a new draft, or reply to the sent message).",
    "sent_stays_in_sent": "Sent mail is append-only: it stays in the Sent folder (it can be "
    "labeled and starred).",
    "no_recipients": "A draft needs at least one 'to' address before it can be sent.",
    "missing_subject": "A draft needs a subject before it can be sent.",
    "too_many_recipients": f"A message goes to at most {MAX_RECIPIENTS} addresses (to and cc "
    "together).",
    "attachment_limit": f"A draft carries at most {MAX_ATTACHMENTS} files of at most "
    f"{MAX_ATTACHMENT_BYTES // (1024 * 1024)} MB together.",
    "blocked_file_type": "Executable files (" + ", ".join(BLOCKED_EXTENSIONS) + ") cannot be "
    "attached.",
    "quarantined_message": "A message in Spam or Trash cannot be replied to or forwarded: move "
    "it back to the inbox first.",
    "reply_draft_exists": "A message has at most one unsent reply draft: edit that draft "
    "instead of starting another.",
    "label_name_taken": "Label names are unique within a mailbox, regardless of case.",
    "reserved_label_name": "A label cannot be named like a folder or built-in view ("
    + ", ".join(RESERVED_LABELS)
    + ").",
    "label_limit": f"A mailbox has at most {MAX_LABELS} labels.",
    "label_other_mailbox": "A label can only be put on (or searched in) messages of its own "
    "mailbox.",
    **TIME_ZONE_RULES,
}


# ----------------------------------------------------------------- results
class LabelOut(TypedDict):
    label_id: str
    name: str
    color: str
    messages: int
    unread: int


class FolderCount(TypedDict):
    folder: str
    messages: int
    unread: int


class MailboxOut(TypedDict):
    mailbox_id: str
    address: str
    owner_name: str
    title: str
    folders: NotRequired[list[FolderCount]]
    """Left out, from prove/email-v2, for a colleague's mailbox (a directory entry)."""
    drafts: NotRequired[int]
    labels: NotRequired[list[LabelOut]]


class ContactOut(TypedDict):
    email: str
    name: str
    company: str
    times_emailed: int
    last_emailed_at: str | None


class ContactList(TypedDict):
    mailbox_id: str
    total: int
    contacts: list[ContactOut]


class AttachmentOut(TypedDict):
    attachment_id: str
    filename: str
    mime_type: str
    size_kb: int


class MessageSummary(TypedDict):
    message_id: str
    thread_id: str
    mailbox_id: str
    folder: str
    direction: str
    from_address: str
    from_name: str
    to: list[str]
    cc: list[str]
    subject: str
    snippet: str
    sent_at: str
    is_read: bool
    is_starred: bool
    labels: list[str]
    attachments: int


class MessageList(TypedDict):
    mailbox_id: str
    total: int
    messages: list[MessageSummary]


class MessageOut(MessageSummary):
    kind: str
    body: str
    in_reply_to: str | None
    label_ids: list[str]
    files: list[AttachmentOut]


class ThreadOut(TypedDict):
    thread_id: str
    mailbox_id: str
    subject: str
    message_count: int
    unread: int
    last_message_at: str
    participants: list[str]
    messages: list[MessageOut]
    drafts: list[str]


class DraftOut(TypedDict):
    draft_id: str
    mailbox_id: str
    kind: str
    status: str
    thread_id: str | None
    in_reply_to: str | None
    to: list[str]
    cc: list[str]
    subject: str
    body: str
    files: list[AttachmentOut]
    attachments_kb: int
    ready_to_send: bool
    problems: list[str]
    updated_at: str


class DraftList(TypedDict):
    mailbox_id: str
    total: int
    drafts: list[DraftOut]


class SentOut(TypedDict):
    message_id: str
    draft_id: str
    thread_id: str
    mailbox_id: str
    folder: str
    to: list[str]
    cc: list[str]
    subject: str
    sent_at: str
    attachments: int
    delivered_to: list[str]
    """Mailbox ids of colleagues whose inbox got a copy."""
    new_contacts: list[str]


class DeletedOut(TypedDict):
    draft_id: str
    deleted: bool
    attachments_removed: int


class FlagOut(TypedDict):
    message_id: str
    is_read: bool
    is_starred: bool
    changed: bool


class FlagResult(TypedDict):
    flag: str
    changed: int
    messages: list[FlagOut]


class MovedOut(TypedDict):
    message_id: str
    thread_id: str
    from_folder: str
    folder: str
    changed: bool


class LabeledOut(TypedDict):
    message_id: str
    label_id: str
    label_name: str
    action: str
    changed: bool
    labels: list[str]


class LabelCreated(LabelOut):
    mailbox_id: str


class TimeZoneOut(TypedDict):
    mailbox_id: str
    time_zone: str
    """The owner's IANA zone, such as "America/New_York"."""
    is_default: bool
    """True while the owner has set no zone (it is then UTC)."""
    utc_offset: str
    """The zone's offset from UTC now, such as "-05:00"."""
    now: str
    """The current time in the zone, with its offset."""


class TimeZoneSet(TimeZoneOut):
    previous: str
    changed: bool


# -------------------------------------------------------------- statements
# The tools read and write through these (ctx.sql): compiled once, run on SQLite directly.
mailbox_table, contact_table, label_table = Mailbox.__table__, Contact.__table__, Label.__table__
thread_table, message_table, draft_table = Thread.__table__, Message.__table__, Draft.__table__
attachment_table = Attachment.__table__
IDS: BindParameter[Any] = bindparam("ids", expanding=True)
QUARANTINE: BindParameter[Any] = bindparam("quarantine", ["trash", "spam"], expanding=True)
"""The folders search_messages leaves out unless asked for one."""
UNREAD = func.sum(case((Message.is_read.is_(False), 1), else_=0))

MAILBOXES = Query(select(mailbox_table).order_by(Mailbox.id))
MAILBOXES_MATCHING = Query(
    select(mailbox_table)
    .where(
        contains(
            bindparam("pattern"), Mailbox.owner_name, Mailbox.title, Mailbox.address, Mailbox.id
        )
    )
    .order_by(Mailbox.id)
)
MAILBOX_BY_ADDRESS = Query(select(mailbox_table).where(Mailbox.address == bindparam("address")))
MAILBOX_ADDRESSES = Query(select(Mailbox.address).order_by(Mailbox.id))
KNOWN_ADDRESSES = Query(  # of the given addresses, those the state knows exist
    select(Contact.email)
    .where(Contact.email.in_(bindparam("emails", expanding=True)))
    .union(
        select(Message.from_address).where(
            Message.from_address.in_(bindparam("emails", expanding=True))
        )
    )
)
OWNER_NAMES = Query(select(Mailbox.owner_name).order_by(Mailbox.id))
FOLDER_COUNTS = Query(
    select(
        Message.mailbox_id, Message.folder, func.count().label("messages"), UNREAD.label("unread")
    )
    .where(Message.mailbox_id.in_(IDS))
    .group_by(Message.mailbox_id, Message.folder)
)
_PER_LABEL = (
    select(MessageLabel.label_id, func.count().label("messages"), UNREAD.label("unread"))
    .join(Message, Message.id == MessageLabel.message_id)
    .group_by(MessageLabel.label_id)
    .subquery()
)
# a mailbox's labels in its relationship's order (Mailbox.labels), with their counts
LABEL_COUNTS = Query(
    select(
        Label.mailbox_id,
        Label.id,
        Label.name,
        Label.color,
        _PER_LABEL.c.messages,
        _PER_LABEL.c.unread,
    )
    .select_from(label_table.outerjoin(_PER_LABEL, _PER_LABEL.c.label_id == Label.id))
    .where(Label.mailbox_id.in_(IDS))
    .order_by(Label.name, Label.id)
)
DRAFT_COUNTS = Query(
    select(Draft.mailbox_id, func.count().label("drafts"))
    .where(Draft.mailbox_id.in_(IDS), Draft.status == "draft")
    .group_by(Draft.mailbox_id)
)
MAILBOX_LABELS = Query(
    select(label_table)
    .where(Label.mailbox_id == bindparam("mailbox_id"))
    .order_by(Label.name, Label.id)
)
CONTACT = Query(
    select(contact_table).where(
        Contact.mailbox_id == bindparam("mailbox_id"), Contact.email == bindparam("email")
    )
)
KNOWN_EMAILS = Query(
    select(Contact.email).where(
        Contact.mailbox_id == bindparam("mailbox_id"),
        Contact.email.in_(bindparam("emails", expanding=True)),
    )
)
THREAD_SUBJECTS = Query(select(Thread.subject).order_by(Thread.id).limit(60))
CONVERSATION = Query(
    select(thread_table).where(
        Thread.mailbox_id == bindparam("mailbox_id"),
        Thread.conversation == bindparam("conversation"),
    )
)
# a thread's messages in its relationship's order (Thread.messages)
THREAD_MESSAGES = Query(
    select(message_table)
    .where(Message.thread_id == bindparam("thread_id"))
    .order_by(Message.sent_at, Message.id)
)
LATEST = Query(
    select(Message.id)
    .where(Message.thread_id == bindparam("thread_id"), Message.id != bindparam("excluding"))
    .order_by(Message.sent_at.desc(), Message.id.desc())
    .limit(1)
)
# the labels on messages, in the relationship's order (Message.labels)
LABELS_ON = Query(
    select(MessageLabel.message_id, Label.id, Label.name)
    .join(Label, Label.id == MessageLabel.label_id)
    .where(MessageLabel.message_id.in_(IDS))
    .order_by(Label.name, Label.id)
)
LINK = Query(
    select(MessageLabel.label_id).where(
        MessageLabel.message_id == bindparam("message_id"),
        MessageLabel.label_id == bindparam("label_id"),
    )
)
UNLINK = Query(
    delete(MessageLabel).where(
        MessageLabel.message_id == bindparam("message_id"),
        MessageLabel.label_id == bindparam("label_id"),
    )
)
# the files of messages and of drafts, in the relationships' order (.attachments)
MESSAGE_FILES = Query(
    select(attachment_table)
    .where(Attachment.message_id.in_(IDS))
    .order_by(Attachment.position, Attachment.id)
)
DRAFT_FILES = Query(
    select(attachment_table)
    .where(Attachment.draft_id.in_(IDS))
    .order_by(Attachment.position, Attachment.id)
)
FILE_COUNTS = Query(
    select(Attachment.message_id, func.count().label("files"))
    .where(Attachment.message_id.in_(IDS))
    .group_by(Attachment.message_id)
)
DELETE_FILE = Query(delete(Attachment).where(Attachment.id == bindparam("id")))
THREAD_DRAFTS = Query(
    select(Draft.id)
    .where(Draft.thread_id == bindparam("thread_id"), Draft.status == "draft")
    .order_by(Draft.id)
)
REPLY_WAITING = Query(
    select(Draft.id)
    .where(
        Draft.in_reply_to == bindparam("message_id"),
        Draft.kind == "reply",
        Draft.status == "draft",
    )
    .order_by(Draft.id)
    .limit(1)
)
DELETE_DRAFT = Query(delete(Draft).where(Draft.id == bindparam("id")))
ALL_CONTACTS = Query(
    select(Contact.email, Contact.mailbox_id, Contact.name).order_by(Contact.mailbox_id, Contact.id)
)
ALL_MESSAGES = Query(
    select(
        Message.id,
        Message.mailbox_id,
        Message.thread_id,
        Message.folder,
        Message.direction,
        Message.from_address,
    ).order_by(Message.id)
)
ALL_THREADS = Query(select(Thread.id, Thread.mailbox_id, Thread.message_count).order_by(Thread.id))
UNSENT_DRAFTS = Query(
    select(Draft.id, Draft.mailbox_id, Draft.thread_id, Draft.to_addresses, Draft.subject)
    .where(Draft.status == "draft")
    .order_by(Draft.id)
)
ALL_LABELS = Query(select(Label.id, Label.mailbox_id, Label.name).order_by(Label.id))
TIME_ZONE_OF = Query(
    select(MailboxSettings.time_zone).where(MailboxSettings.mailbox_id == bindparam("mailbox_id"))
)
SETTINGS_OF = Query(
    select(MailboxSettings.__table__).where(MailboxSettings.mailbox_id == bindparam("mailbox_id"))
)
ALL_ATTACHMENTS = Query(
    select(Attachment.id, Attachment.message_id, Attachment.draft_id).order_by(Attachment.id)
)


@functools.cache
def _contacts_of(matching: bool) -> tuple[Query, Query]:
    """How many of a mailbox's contacts match, and the first ``limit`` of them by name."""
    where = [Contact.mailbox_id == bindparam("mailbox_id")]
    if matching:
        where.append(contains(bindparam("pattern"), Contact.name, Contact.email, Contact.company))
    total = Query(select(func.count()).select_from(contact_table).where(*where))
    rows = select(contact_table).where(*where).order_by(Contact.name, Contact.email)
    return total, Query(rows.limit(bindparam("limit")))


@functools.cache
def _messages_of(
    in_folder: bool,
    labeled: bool,
    unread: bool,
    matching: bool,
    after: bool = False,
    before: bool = False,
) -> tuple[Query, Query]:
    """How many of a mailbox's messages match, and the newest ``limit``: search_messages'
    (``after`` and ``before``: sent at or after, or before, a stored UTC time)."""
    where = [Message.mailbox_id == bindparam("mailbox_id")]
    if after:
        where.append(Message.sent_at >= bindparam("after"))
    if before:
        where.append(Message.sent_at < bindparam("before"))
    if in_folder:
        where.append(Message.folder == bindparam("folder"))
    else:
        where.append(Message.folder.not_in(QUARANTINE))
    if labeled:
        where.append(
            Message.id.in_(
                select(MessageLabel.message_id).where(
                    MessageLabel.label_id == bindparam("label_id")
                )
            )
        )
    if unread:
        where.append(Message.is_read.is_(False))
    if matching:
        where.append(
            contains(
                bindparam("pattern"),
                Message.subject,
                Message.body,
                Message.from_name,
                Message.from_address,
                Message.to_addresses,
                Message.cc_addresses,
            )
        )
    total = Query(select(func.count()).select_from(message_table).where(*where))
    rows = select(message_table).where(*where).order_by(Message.sent_at.desc(), Message.id.desc())
    return total, Query(rows.limit(bindparam("limit")))


_UNSENT = (Draft.mailbox_id == bindparam("mailbox_id"), Draft.status == "draft")
UNSENT_COUNT = Query(select(func.count()).select_from(draft_table).where(*_UNSENT))
UNSENT = Query(
    select(draft_table)
    .where(*_UNSENT)
    .order_by(Draft.updated_at.desc(), Draft.id.desc())
    .limit(bindparam("limit"))
)


def _by(rows: list[Any], key: str) -> dict[Any, list[Any]]:
    """Rows grouped by the column ``key``, each group in the rows' order."""
    out: dict[Any, list[Any]] = {}
    for r in rows:
        out.setdefault(getattr(r, key), []).append(r)
    return out


# ----------------------------------------------------------------- helpers


def _broken(rule: str, detail: str) -> PreconditionFailed:
    """The error for a failed business rule: it names the rule, then says what to do."""
    return PreconditionFailed(f"Rule '{rule}' failed: {detail}")


MIN_YEAR, MAX_YEAR = 1970, 2100
"""The years a search bound may name (far outside any mail, and inside every zone's range)."""
Clock = Callable[[dt.datetime], str]
"""How a tool shows a stored (UTC) time: :func:`_clock`."""


def _minutes(value: dt.datetime) -> str:
    """A stored time as ``-v0`` to ``-v2`` show it: bare, to the minute."""
    return value.isoformat(timespec="minutes")


def _stamp(value: dt.datetime | None, show: Clock) -> str | None:
    return show(value) if value is not None else None


def _zone_name(ctx: ToolContext, mailbox_id: str) -> str | None:
    """The time zone the owner of ``mailbox_id`` set, or ``None`` (:data:`DEFAULT_TIME_ZONE`)."""
    found: str | None = ctx.sql.scalar(TIME_ZONE_OF, mailbox_id=mailbox_id)
    return found


def _zone_of(ctx: ToolContext, mailbox_id: str) -> ZoneInfo:
    """The time zone of the owner of ``mailbox_id`` (from ``-v3``)."""
    return zones.zone(_zone_name(ctx, mailbox_id) or DEFAULT_TIME_ZONE)


def _clock(ctx: ToolContext, mailbox_id: str) -> Clock:
    """How the tools show a stored time of ``mailbox_id``: to the minute before ``-v3``;
    from it, in the mailbox owner's zone with its UTC offset, ISO 8601
    ("2026-03-02T05:15-05:00"). Stored times are UTC."""
    if ctx.env_version < TIME_ZONES:
        return _minutes
    tz = _zone_of(ctx, mailbox_id)
    return lambda when: when.replace(tzinfo=zones.UTC).astimezone(tz).isoformat(timespec="minutes")


def _local_bound(ctx: ToolContext, value: str, name: str, mailbox_id: str) -> dt.datetime:
    """From ``-v3``: the stored (UTC, naive) time a search bound names, read in the mailbox
    owner's zone: a date is its local day's first moment; a local time must happen exactly
    once there (rules ``nonexistent_local_time``, ``ambiguous_local_time``); a time with an
    offset is that moment."""
    text = value.strip()
    tz = _zone_of(ctx, mailbox_id)
    try:
        if len(text) == 10:
            day = dt.date.fromisoformat(text)
            when = dt.datetime.combine(day, dt.time())
        else:
            when = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
        if not MIN_YEAR <= when.year <= MAX_YEAR:
            raise ValueError(when.year)
    except ValueError:
        raise InvalidArgument(
            f"{name} must be a date such as '2026-03-01' or a time such as '2026-03-01T09:00' "
            f"(in your time zone, {tz.key}) or '2026-03-01T09:00-05:00', between the years "
            f"{MIN_YEAR} and {MAX_YEAR}; got {value[:40]!r}."
        ) from None
    if len(text) == 10:
        return zones.day_start(when.date(), tz).replace(tzinfo=None)
    if when.tzinfo is not None:
        return when.astimezone(zones.UTC).replace(tzinfo=None)
    refused = zones.refusal(
        when,
        tz,
        name,
        twice=True,
        zone_is=", your time zone",
        undone="Nothing was searched",
        fix_twice="give the offset of the one you mean.",
    )
    if refused is not None:
        raise _broken(*refused)
    return zones.instant(when, tz).replace(tzinfo=None)


def _clean(addresses: list[str], *, besides: Sequence[str] = ()) -> list[str]:
    """Addresses trimmed, lower-cased, without repeats (nor any in ``besides``), in order."""
    out: list[str] = []
    for a in addresses:
        v = a.strip().casefold()
        if v not in out and v not in besides:
            out.append(v)
    return out


def _line(value: str) -> str:
    return " ".join(value.split())


def _files(atts: list[Any]) -> list[AttachmentOut]:
    return [
        {
            "attachment_id": a.id,
            "filename": a.filename,
            "mime_type": a.mime_type,
            "size_kb": (a.size_bytes + 1023) // 1024,
        }
        for a in atts
    ]


def _summary(m: Any, labels: list[Any], files: int, show: Clock) -> MessageSummary:
    """A message row's summary, given its labels (``LABELS_ON``), how many files it has and
    how its mailbox shows times (:func:`_clock`)."""
    return {
        "message_id": m.id,
        "thread_id": m.thread_id,
        "mailbox_id": m.mailbox_id,
        "folder": m.folder,
        "direction": m.direction,
        "from_address": m.from_address,
        "from_name": m.from_name,
        "to": split_addresses(m.to_addresses),
        "cc": split_addresses(m.cc_addresses),
        "subject": m.subject,
        "snippet": _line(m.body)[:120],
        "sent_at": show(m.sent_at),
        "is_read": m.is_read,
        "is_starred": m.is_starred,
        "labels": [lbl.name for lbl in labels],
        "attachments": files,
    }


def _summaries(ctx: ToolContext, rows: list[Any], show: Clock) -> list[MessageSummary]:
    ids = [m.id for m in rows]
    labels = _by(ctx.sql.all(LABELS_ON, ids=ids), "message_id")
    files = {f.message_id: f.files for f in ctx.sql.all(FILE_COUNTS, ids=ids)}
    return [_summary(m, labels.get(m.id, []), files.get(m.id, 0), show) for m in rows]


def _message_views(ctx: ToolContext, rows: list[Any], show: Clock) -> list[MessageOut]:
    """Message rows (of one mailbox) in full, with their labels and files."""
    ids = [m.id for m in rows]
    labels = _by(ctx.sql.all(LABELS_ON, ids=ids), "message_id")
    files = _by(ctx.sql.all(MESSAGE_FILES, ids=ids), "message_id")
    out: list[MessageOut] = []
    for m in rows:
        on, atts = labels.get(m.id, []), files.get(m.id, [])
        out.append(
            {
                **_summary(m, on, len(atts), show),
                "kind": m.kind,
                "body": m.body,
                "in_reply_to": m.in_reply_to,
                "label_ids": [lbl.id for lbl in on],
                "files": _files(atts),
            }
        )
    return out


def _draft_problems(d: Any) -> list[str]:
    out = []
    if not split_addresses(d.to_addresses):
        out.append("no_recipients: add a 'to' address")
    if not d.subject.strip():
        out.append("missing_subject: give it a subject")
    return out


def _draft(d: Any, files: list[Any], show: Clock) -> DraftOut:
    """A draft row's view, given its files (``DRAFT_FILES``) and how its mailbox shows times."""
    problems = _draft_problems(d) if d.status == "draft" else []
    return {
        "draft_id": d.id,
        "mailbox_id": d.mailbox_id,
        "kind": d.kind,
        "status": d.status,
        "thread_id": d.thread_id,
        "in_reply_to": d.in_reply_to,
        "to": split_addresses(d.to_addresses),
        "cc": split_addresses(d.cc_addresses),
        "subject": d.subject,
        "body": d.body,
        "files": _files(files),
        "attachments_kb": sum((a.size_bytes + 1023) // 1024 for a in files),
        "ready_to_send": d.status == "draft" and not problems,
        "problems": problems,
        "updated_at": show(d.updated_at),
    }


def _editable(d: Any, doing: str) -> None:
    if d.status != "draft":
        raise _broken(
            "sent_is_final",
            f"draft {d.id} was already sent as message {d.sent_message_id}, so it cannot be "
            f"{doing}; what was sent never changes. Write a new draft, or reply to the sent "
            "message to follow up.",
        )


def _check_count(to: list[str], cc: list[str]) -> None:
    if len(to) + len(cc) > MAX_RECIPIENTS:
        raise _broken(
            "too_many_recipients",
            f"the draft would go to {len(to) + len(cc)} addresses (to and cc together); a "
            f"message goes to at most {MAX_RECIPIENTS}. Nothing was changed: split the "
            "recipients over several messages.",
        )


def _not_quarantined(m: Any, doing: str) -> None:
    if m.folder in ("spam", "trash"):
        raise _broken(
            "quarantined_message",
            f"message {m.id} is in '{m.folder}'; a message in Spam or Trash cannot be "
            f"{doing}. Nothing was done: move it back to the 'inbox' first if it is genuine.",
        )


def _new_draft(
    ctx: ToolContext,
    mailbox_id: str,
    *,
    kind: str,
    thread_id: str | None,
    in_reply_to: str | None,
    to: list[str],
    cc: list[str],
    subject: str,
    body: str,
) -> str:
    """Add an unsent draft; its id."""
    draft_id = next_id(ctx, Draft.id, "drf", 4)
    ctx.sql.insert(
        Draft,
        id=draft_id,
        mailbox_id=mailbox_id,
        kind=kind,
        thread_id=thread_id,
        in_reply_to=in_reply_to,
        to_addresses=join_addresses(to),
        cc_addresses=join_addresses(cc),
        subject=subject,
        body=body,
        status="draft",
        sent_message_id=None,
        created_at=ctx.now,
        updated_at=ctx.now,
    )
    return draft_id


def _refreshed(ctx: ToolContext, draft_id: str) -> DraftOut:
    """The draft as it is stored now."""
    d = ctx.sql.one(record_by_key(Draft), key=draft_id)
    return _draft(d, ctx.sql.all(DRAFT_FILES, ids=[draft_id]), _clock(ctx, d.mailbox_id))


class _Room(Mailroom):
    """The mail operations' reads and writes on ``ctx.sql``, for send_draft.

    ``send`` files mail through model objects: it adds new ones and changes others (a
    thread's message_count, a contact's times_emailed) between its flushes. Here they are
    plain objects in no ORM session: the room keeps every one it hands out or is given,
    one object per row, and each flush writes what changed since the last, as the ORM
    does: an INSERT for each row added (in order), then an UPDATE of just the changed
    columns of each row that changed.
    """

    def __init__(self, ctx: ToolContext) -> None:
        self.ctx = ctx
        self.objects: dict[tuple[str, str], Base] = {}
        """Every row the room knows, by table and key."""
        self.stored: dict[tuple[str, str], dict[str, Any]] = {}
        """The column values of each known row as the database has them."""
        self.added: list[Base] = []

    def _known(self, model: type[Base], row: Any) -> Any:
        """The object of a row just read: the one already handed out, if any."""
        key = (model.__tablename__, row.id)
        if key not in self.objects:
            self.objects[key] = model(**row._asdict())
            self.stored[key] = row._asdict()
        return self.objects[key]

    def new_id(self, column: Any, prefix: str, width: int) -> str:
        return next_id(self.ctx, column, prefix, width)

    def add(self, row: Base) -> None:
        self.added.append(row)

    def flush(self) -> None:
        for obj in self.added:
            values = _columns(obj)
            self.ctx.sql.insert(type(obj), **values)
            key = (obj.__tablename__, values["id"])
            self.objects[key], self.stored[key] = obj, values
        self.added.clear()
        for key, obj in self.objects.items():
            values = _columns(obj)
            changed = {k: v for k, v in values.items() if self.stored[key][k] != v}
            if changed:
                self.ctx.sql.update_by_key(type(obj), values["id"], **changed)
                self.stored[key] = values

    def thread(self, thread_id: str) -> Thread:
        key = (Thread.__tablename__, thread_id)
        if key in self.objects:
            return self.objects[key]  # type: ignore[return-value]
        return self._known(Thread, self.ctx.sql.one(record_by_key(Thread), key=thread_id))

    def contact(self, mailbox_id: str, address: str) -> Contact | None:
        row = self.ctx.sql.first(CONTACT, mailbox_id=mailbox_id, email=address)
        return None if row is None else self._known(Contact, row)

    def mailbox(self, address: str) -> Mailbox | None:
        row = self.ctx.sql.first(MAILBOX_BY_ADDRESS, address=address)
        return None if row is None else self._known(Mailbox, row)

    def conversation(self, mailbox_id: str, conversation: str) -> Thread | None:
        row = self.ctx.sql.first(CONVERSATION, mailbox_id=mailbox_id, conversation=conversation)
        return None if row is None else self._known(Thread, row)

    def latest(self, thread_id: str, excluding: str) -> str | None:
        found: str | None = self.ctx.sql.scalar(LATEST, thread_id=thread_id, excluding=excluding)
        return found


def _columns(obj: Base) -> dict[str, Any]:
    """A model object's column values, by column."""
    return {c.key: getattr(obj, c.key) for c in obj.__table__.columns}


# -------------------------------------------------------- example values
def _mailbox_word(ctx: ToolContext, rng: random.Random) -> str:
    names = ctx.sql.scalars(OWNER_NAMES)
    return rng.choice(names).split()[-1]


def _search_word(ctx: ToolContext, rng: random.Random) -> str:
    subjects = ctx.sql.scalars(THREAD_SUBJECTS)
    words = sorted({w for s in subjects for w in s.split() if len(w) > 4 and w[0].isupper()})
    return rng.choice(words) if words else "invoice"


MESSAGES: dict[str, tuple[str, ...]] = {
    "Agenda for Thursday's review": (
        "Here is the agenda for Thursday's review: status, risks, next steps.",
        "Could you add the budget item to Thursday's agenda?",
    ),
    "Follow-up on the proposal": (
        "Following up on the proposal we sent last week. Any questions so far?",
        "Thanks for the feedback on the proposal; the revised version is attached.",
    ),
    "Updated timeline": (
        "The timeline moved by a week; launch is now on the 14th.",
        "Please find the updated timeline below. Let me know if anything is missing.",
    ),
    "Contract questions": (
        "I reviewed the document and left two comments on section 3.",
        "Can you confirm who signs the contract on your side?",
    ),
    "Travel dates for March": (
        "I land on March 9 and leave on the 12th. Does that work?",
        "Could we move the trip to the week of March 16?",
    ),
    "Invoice for February": (
        "The February invoice is attached; payment is due in 30 days.",
        "Can you confirm the invoice for February was paid?",
    ),
}
"""Subjects of new mail, each with bodies that say what it is about (never "Invoice for
February: could we move our call to Thursday?")."""
SUBJECTS = list(MESSAGES)
BODIES = [
    "Hi, could we move our call to Thursday at 3pm? Thanks.",
    "Please find the updated figures below. Let me know if anything is missing.",
    "Thanks for the quick turnaround, this looks great.",
    "Can you confirm the delivery date by Friday?",
    "I reviewed the document and left two comments on section 3.",
]


def body_for_subject(ctx: ToolContext, rng: random.Random, bound: Bound) -> str:
    """A body that fits the mail's subject: the call's own ``subject``, else the subject of
    the draft it changes; a general line (:data:`BODIES`) for a subject with none of its
    own (a reply's "Re: Lunch next week?")."""
    subject = bound.args.get("subject") or bound.records.get("draft_id", {}).get("subject")
    return rng.choice(MESSAGES.get(str(subject), tuple(BODIES)))


NOTES = ["FYI, see below.", "Can you take a look at this?", "Forwarding for your records."]
FILENAMES = ["Q3_report.pdf", "Agenda.docx", "Figures.xlsx", "Site_photo.jpg", "Slides.pptx"]
FILE_SIZES_KB = [48, 120, 350, 900, 2400]
NEW_LABELS = ["Board prep", "Receipts 2026", "Waiting on reply", "Offsite", "Partners"]


# ------------------------------------------------------------------- tools
@server.tool(
    returns=("mailbox", "label"),
    phrasings=["Find the mailbox of {query}", "Which mailboxes are there and how many unread?"],
    examples={"query": _mailbox_word},
)
def list_mailboxes(ctx: ToolContext, query: SearchText | None = None) -> list[MailboxOut]:
    """List mailboxes with message and unread counts per folder, draft counts and labels.

    From prove/email-v2, signed in to a mailbox, only that mailbox shows its folders, drafts
    and labels; a colleague's shows its id, address, owner's name and title, as the company
    directory does.

    Args:
        query: Case-insensitive text in the owner's name, title or address, such as
            "Garcia", "Finance" or "ana.garcia@"; leave it out to list every mailbox.

    Returns:
        [{"mailbox_id": "mbx_03", "address": "ana.garcia@acme.com", "owner_name": "Ana
        Garcia", "folders": [{"folder": "inbox", "messages": 31, "unread": 7}, ...],
        "drafts": 3, "labels": [{"label_id": "lbl_012", "name": "Finance", "messages": 9,
        "unread": 1, "color": "green"}]}], by mailbox id.
    """
    text = (query or "").strip()
    if text:
        rows = ctx.sql.all(MAILBOXES_MATCHING, pattern=search_pattern(text))
    else:
        rows = ctx.sql.all(MAILBOXES)
    directory = ctx.env_version >= DIRECTORY and ctx.principal is not None
    ids = [mb.id for mb in rows if not directory or mb.id == ctx.principal]
    counts = {(c.mailbox_id, c.folder): c for c in ctx.sql.all(FOLDER_COUNTS, ids=ids)}
    labels = _by(ctx.sql.all(LABEL_COUNTS, ids=ids), "mailbox_id")
    unsent = {d.mailbox_id: d.drafts for d in ctx.sql.all(DRAFT_COUNTS, ids=ids)}
    out: list[MailboxOut] = []
    for mb in rows:
        if mb.id not in ids:  # a colleague's mailbox: its directory entry
            out.append(
                {
                    "mailbox_id": mb.id,
                    "address": mb.address,
                    "owner_name": mb.owner_name,
                    "title": mb.title,
                }
            )
            continue
        folders: list[FolderCount] = []
        for f in FOLDERS:
            c = counts.get((mb.id, f))
            folders.append(
                {
                    "folder": f,
                    "messages": c.messages if c else 0,
                    "unread": int(c.unread or 0) if c else 0,
                }
            )
        out.append(
            {
                "mailbox_id": mb.id,
                "address": mb.address,
                "owner_name": mb.owner_name,
                "title": mb.title,
                "folders": folders,
                "drafts": unsent.get(mb.id, 0),
                "labels": [
                    {
                        "label_id": lbl.id,
                        "name": lbl.name,
                        "color": lbl.color,
                        "messages": lbl.messages or 0,
                        "unread": int(lbl.unread or 0),
                    }
                    for lbl in labels.get(mb.id, [])
                ],
            }
        )
    return out


@server.tool(
    returns="contact",
    phrasings=[
        "Who are the contacts of {mailbox_id}?",
        "Find contacts matching '{query}' in mailbox {mailbox_id}",
    ],
    examples={"query": ["Garcia", "acme", "Smith", "gmail"]},
)
def list_contacts(
    ctx: ToolContext,
    mailbox_id: MailboxRow,
    query: SearchText | None = None,
    limit: Annotated[int, Field(ge=1, le=100)] = 25,
) -> ContactList:
    """List a mailbox's contacts by name: people it knows or has emailed.

    Sending mail to a new address adds it as a contact; times_emailed counts the messages
    this mailbox sent to the contact. From prove/email-v3, last_emailed_at is in the
    mailbox owner's time zone with its UTC offset, such as "2026-03-02T05:15-05:00"
    (get_time_zone).

    Args:
        mailbox_id: The mailbox, such as "mbx_03" (see list_mailboxes).
        query: Case-insensitive text in the name, address or company, such as "Garcia" or
            "northwind"; leave it out to list them all.
        limit: Maximum number of contacts to return (1-100), such as 25.

    Returns:
        {"mailbox_id", "total": 14, "contacts": [{"email": "ana.garcia@northwind.com",
        "name": "Ana Garcia", "company": "Northwind", "times_emailed": 3,
        "last_emailed_at": "2026-03-02T10:15"}]}; total counts every match.
    """
    text = (query or "").strip()
    count, matching = _contacts_of(bool(text))
    params = {"mailbox_id": mailbox_id.id, **({"pattern": search_pattern(text)} if text else {})}
    total = ctx.sql.scalar(count, **params) or 0
    rows = ctx.sql.all(matching, limit=limit, **params)
    show = _clock(ctx, mailbox_id.id)
    return {
        "mailbox_id": mailbox_id.id,
        "total": total,
        "contacts": [
            {
                "email": c.email,
                "name": c.name,
                "company": c.company,
                "times_emailed": c.times_emailed,
                "last_emailed_at": _stamp(c.last_emailed_at, show),
            }
            for c in rows
        ],
    }


@server.tool(
    returns=("message", "thread"),
    phrasings=[
        "Find emails mentioning '{query}' in {mailbox_id}",
        "Show the mail in the {folder} folder of {mailbox_id}",
        "Search mailbox {mailbox_id} for messages mentioning {query}",
        "Which messages of {mailbox_id} carry label {label_id}?",
    ],
    examples={"query": _search_word},
)
def search_messages(
    ctx: ToolContext,
    mailbox_id: MailboxRow,
    query: SearchText | None = None,
    folder: Folder | None = None,
    label_id: LabelRow | None = None,
    unread_only: bool = False,
    limit: Annotated[int, Field(ge=1, le=50)] = 20,
) -> MessageList:
    """Search one mailbox's messages, newest first.

    Without folder, every folder except Trash and Spam is searched (like "All Mail").

    Args:
        mailbox_id: The mailbox, such as "mbx_03".
        query: Case-insensitive text in the subject, body, sender's name or address, or
            the recipients, such as "invoice", "Atlas" or "northwind.com".
        folder: Only this folder: "inbox", "archive", "sent", "trash" or "spam".
        label_id: Only messages with this label of the mailbox, such as "lbl_012".
        unread_only: Only unread messages.
        limit: Maximum number of messages to return (1-50), such as 20.

    Returns:
        {"mailbox_id", "total": 12, "messages": [{"message_id": "msg_00137",
        "thread_id": "thr_0042", "folder": "inbox", "from_address": "ana@northwind.com",
        "subject": "Invoice 4411", "snippet": "Hi Sam, please find...", "sent_at":
        "2026-03-02T10:15", "is_read": false, "labels": ["Finance"], "attachments": 1,
        ...}]}; total counts every match.
    """
    return _search(ctx, mailbox_id, query, folder, label_id, unread_only, limit)


SearchBound = Annotated[str, Field(min_length=1, max_length=40)]
"""A date or time search_messages takes from prove/email-v3 (:func:`_local_bound`)."""


def _search_dates(ctx: ToolContext, rng: random.Random) -> str:
    """A date within the month before the state's "now", as a user asks for mail since then."""
    return (ctx.now.date() - dt.timedelta(days=rng.randint(1, 30))).isoformat()


@server.tool(
    name="search_messages",
    since=TIME_ZONES,
    returns=("message", "thread"),
    phrasings=[
        "Find emails mentioning '{query}' in {mailbox_id}",
        "Show the mail in the {folder} folder of {mailbox_id}",
        "Search mailbox {mailbox_id} for messages mentioning {query}",
        "Which messages of {mailbox_id} carry label {label_id}?",
        "Which messages did {mailbox_id} get since {after}?",
        "Show the mail of {mailbox_id} from before {before}",
    ],
    examples={"query": _search_word, "after": _search_dates, "before": _search_dates},
)
def search_messages_v3(
    ctx: ToolContext,
    mailbox_id: MailboxRow,
    query: SearchText | None = None,
    folder: Folder | None = None,
    label_id: LabelRow | None = None,
    unread_only: bool = False,
    after: SearchBound | None = None,
    before: SearchBound | None = None,
    limit: Annotated[int, Field(ge=1, le=50)] = 20,
) -> MessageList:
    """Search one mailbox's messages, newest first, optionally between two dates or times.

    Without folder, every folder except Trash and Spam is searched (like "All Mail"). Times
    are shown and read in the mailbox owner's time zone (get_time_zone): sent_at is a local
    time with its UTC offset, such as "2026-03-02T05:15-05:00". after and before are a date
    ("2026-03-01": that local day, from its first moment), a local time
    ("2026-03-01T09:00") or a time with its offset ("2026-03-01T09:00-05:00"); a local time
    the zone skips when the clocks go forward is refused (rule nonexistent_local_time), and
    so is one in the hour repeated when they go back (rule ambiguous_local_time).

    Args:
        mailbox_id: The mailbox, such as "mbx_03".
        query: Case-insensitive text in the subject, body, sender's name or address, or
            the recipients, such as "invoice", "Atlas" or "northwind.com".
        folder: Only this folder: "inbox", "archive", "sent", "trash" or "spam".
        label_id: Only messages with this label of the mailbox, such as "lbl_012".
        unread_only: Only unread messages.
        after: Only messages sent at or after this date or time, such as "2026-03-01"
            (from the start of March 1 in the owner's zone) or "2026-03-01T09:00".
        before: Only messages sent before this date or time, such as "2026-03-08" (up to
            the end of March 7 in the owner's zone) or "2026-03-07T17:30-05:00".
        limit: Maximum number of messages to return (1-50), such as 20.

    Returns:
        {"mailbox_id", "total": 12, "messages": [{"message_id": "msg_00137",
        "thread_id": "thr_0042", "folder": "inbox", "from_address": "ana@northwind.com",
        "subject": "Invoice 4411", "snippet": "Hi Sam, please find...", "sent_at":
        "2026-03-02T05:15-05:00", "is_read": false, "labels": ["Finance"], "attachments": 1,
        ...}]}; total counts every match.
    """
    return _search(
        ctx, mailbox_id, query, folder, label_id, unread_only, limit, after=after, before=before
    )


def _search(
    ctx: ToolContext,
    mb: Any,
    query: str | None,
    folder: str | None,
    label_id: Any,
    unread_only: bool,
    limit: int,
    *,
    after: str | None = None,
    before: str | None = None,
) -> MessageList:
    """search_messages, in every version (``after`` and ``before`` from ``-v3`` only)."""
    if label_id is not None and label_id.mailbox_id != mb.id:
        raise _broken(
            "label_other_mailbox",
            f"label {label_id.id} ('{label_id.name}') belongs to mailbox {label_id.mailbox_id}, "
            f"not {mb.id}. Use one of {mb.id}'s own labels (list_mailboxes shows them).",
        )
    text = (query or "").strip()
    params: dict[str, Any] = {"mailbox_id": mb.id}
    if folder is not None:
        params["folder"] = folder
    if label_id is not None:
        params["label_id"] = label_id.id
    if text:
        params["pattern"] = search_pattern(text)
    if after is not None:
        params["after"] = _local_bound(ctx, after, "after", mb.id)
    if before is not None:
        params["before"] = _local_bound(ctx, before, "before", mb.id)
    if after is not None and before is not None and params["after"] >= params["before"]:
        raise InvalidArgument(
            f"after ({after.strip()[:40]}) is not before before ({before.strip()[:40]}), so no "
            "message can match; give after an earlier date or time than before."
        )
    count, matching = _messages_of(
        folder is not None,
        label_id is not None,
        unread_only,
        bool(text),
        after is not None,
        before is not None,
    )
    total = ctx.sql.scalar(count, **params) or 0
    ctx.spend(total, "messages", hint="give a query, a folder or a label")
    rows = ctx.sql.all(matching, limit=limit, **params)
    show = _clock(ctx, mb.id)
    return {"mailbox_id": mb.id, "total": total, "messages": _summaries(ctx, rows, show)}


@server.tool(
    returns=("message", "thread", "label", "attachment"),
    phrasings=["Show me message {message_id}", "What does email {message_id} say?"],
)
def get_message(ctx: ToolContext, message_id: MessageRow) -> MessageOut:
    """Read one message in full: body, recipients, labels and attachments' metadata.

    Reading does not mark it read (mark_messages does). From prove/email-v3, sent_at is in
    the mailbox owner's time zone with its UTC offset, such as "2026-03-02T05:15-05:00"
    (get_time_zone).

    Args:
        message_id: The message, such as "msg_00137" (search_messages finds it).

    Returns:
        {"message_id": "msg_00137", "thread_id": "thr_0042", "kind": "reply", "folder":
        "inbox", "from_address", "to": ["sam.lee@acme.com"], "cc": [], "subject":
        "Re: Invoice 4411", "body": "...", "in_reply_to": "msg_00130", "labels":
        ["Finance"], "label_ids": ["lbl_012"], "files": [{"attachment_id": "att_00021",
        "filename": "Invoice_4411.pdf", "mime_type": "application/pdf", "size_kb": 212}],
        ...}.
    """
    (out,) = _message_views(ctx, [message_id], _clock(ctx, message_id.mailbox_id))
    return out


@server.tool(
    stands_in_for=("get_message",),
    returns=("thread", "message", "draft"),
    phrasings=["Show the whole conversation {thread_id}", "Read thread {thread_id}"],
)
def get_thread(ctx: ToolContext, thread_id: ThreadRow) -> ThreadOut:
    """Read a whole conversation: its messages oldest first, and its unsent drafts.

    From prove/email-v3, last_message_at and each message's sent_at are in the mailbox
    owner's time zone with their UTC offset, such as "2026-03-02T05:15-05:00"
    (get_time_zone).

    Args:
        thread_id: The thread, such as "thr_0042" (every message names its thread_id).

    Returns:
        {"thread_id": "thr_0042", "subject": "Invoice 4411", "message_count": 3,
        "unread": 1, "participants": ["ana@northwind.com", "sam.lee@acme.com"],
        "messages": [{"message_id": "msg_00130", "body": "...", ...}, ...],
        "drafts": ["drf_0012"]}.
    """
    t = thread_id
    messages = ctx.sql.all(THREAD_MESSAGES, thread_id=t.id)
    ctx.spend(len(messages), "messages")
    people: list[str] = []
    for m in messages:
        for a in [
            m.from_address,
            *split_addresses(m.to_addresses),
            *split_addresses(m.cc_addresses),
        ]:
            if a not in people:
                people.append(a)
    drafts = ctx.sql.scalars(THREAD_DRAFTS, thread_id=t.id)
    show = _clock(ctx, t.mailbox_id)
    return {
        "thread_id": t.id,
        "mailbox_id": t.mailbox_id,
        "subject": t.subject,
        "message_count": t.message_count,
        "unread": sum(1 for m in messages if not m.is_read),
        "last_message_at": show(t.last_message_at),
        "participants": people,
        "messages": _message_views(ctx, messages, show),
        "drafts": drafts,
    }


@server.tool(
    returns=("draft", "thread"),
    phrasings=["Which drafts does {mailbox_id} have?", "List the unsent drafts of {mailbox_id}"],
)
def list_drafts(
    ctx: ToolContext,
    mailbox_id: MailboxRow,
    limit: Annotated[int, Field(ge=1, le=50)] = 20,
) -> DraftList:
    """List a mailbox's unsent drafts, most recently edited first, with what stops each
    from being sent (problems).

    From prove/email-v3, updated_at is in the mailbox owner's time zone with its UTC
    offset, such as "2026-03-02T05:15-05:00" (get_time_zone).

    Args:
        mailbox_id: The mailbox, such as "mbx_03".
        limit: Maximum number of drafts to return (1-50), such as 20.

    Returns:
        {"mailbox_id", "total": 3, "drafts": [{"draft_id": "drf_0012", "kind": "reply",
        "thread_id": "thr_0042", "to": ["ana@northwind.com"], "subject": "Re: Invoice 4411",
        "body": "...", "files": [], "ready_to_send": true, "problems": [], ...}]}.
    """
    total = ctx.sql.scalar(UNSENT_COUNT, mailbox_id=mailbox_id.id) or 0
    rows = ctx.sql.all(UNSENT, mailbox_id=mailbox_id.id, limit=limit)
    files = _by(ctx.sql.all(DRAFT_FILES, ids=[d.id for d in rows]), "draft_id")
    show = _clock(ctx, mailbox_id.id)
    drafts = [_draft(d, files.get(d.id, []), show) for d in rows]
    return {"mailbox_id": mailbox_id.id, "total": total, "drafts": drafts}


@server.tool(
    writes=True,
    returns="draft",
    normalise={"to": "casefold", "cc": "casefold"},
    phrasings=[
        "Draft an email from {mailbox_id} to {to} with subject {subject} saying {body}",
        "Write a new message in {mailbox_id} to {to} about {subject}: {body}",
        "Start a draft in {mailbox_id} to {to}, copying {cc}, subject {subject}: {body}",
    ],
    examples={"subject": SUBJECTS},
    values={"body": body_for_subject},
)
def create_draft(
    ctx: ToolContext,
    mailbox_id: MailboxRow,
    to: Addresses,
    subject: Subject,
    body: Body,
    cc: Addresses = [],  # noqa: B006 - pydantic copies defaults
) -> DraftOut:
    """Start a new message (a new thread) as a draft; nothing is sent until send_draft.

    From prove/email-v3, the draft's updated_at is in the mailbox owner's time zone with its
    UTC offset, such as "2026-03-02T05:15-05:00" (get_time_zone).

    Args:
        mailbox_id: The mailbox writing it, such as "mbx_03".
        to: Recipient addresses, such as ["ana.garcia@northwind.com"] (list_contacts shows
            known ones); may be empty while drafting, but sending needs one.
        subject: The subject, such as "Agenda for Thursday's review".
        body: The text, such as "Hi Ana, could we move our call to Thursday at 3pm?".
        cc: Addresses to copy, such as ["li.wei@northwind.com"]; default none.

    Returns:
        The draft: {"draft_id": "drf_0031", "kind": "new", "status": "draft", "to": [...],
        "subject", "body", "ready_to_send": true, "problems": [], ...}.
    """
    to_list = _clean(to)
    cc_list = _clean(cc, besides=to_list)
    _check_count(to_list, cc_list)
    draft_id = _new_draft(
        ctx,
        mailbox_id.id,
        kind="new",
        thread_id=None,
        in_reply_to=None,
        to=to_list,
        cc=cc_list,
        subject=_line(subject),
        body=body.strip(),
    )
    return _refreshed(ctx, draft_id)


@server.tool(
    writes=True,
    returns="draft",
    normalise={"to": "casefold", "cc": "casefold"},
    phrasings=[
        "Change the body of draft {draft_id} to: {body}",
        "Set the subject of draft {draft_id} to {subject}",
        "Address draft {draft_id} to {to}",
        "Copy {cc} on draft {draft_id}",
    ],
    examples={"subject": SUBJECTS},
    values={"body": body_for_subject},
)
def update_draft(
    ctx: ToolContext,
    draft_id: DraftRow,
    subject: Subject | None = None,
    body: Body | None = None,
    to: Addresses | None = None,
    cc: Addresses | None = None,
) -> DraftOut:
    """Change an unsent draft; only the fields given change (to and cc replace the lists).

    A reply or forward stays in its thread whatever its subject becomes. From
    prove/email-v3, updated_at is in the mailbox owner's time zone with its UTC offset, such
    as "2026-03-02T05:15-05:00" (get_time_zone).

    Args:
        draft_id: The unsent draft, such as "drf_0012" (see list_drafts).
        subject: New subject, such as "Updated timeline".
        body: New text, replacing the old, such as "Hi Ana, the figures are attached.".
        to: New recipients, such as ["ana.garcia@northwind.com"].
        cc: New addresses to copy, such as ["li.wei@northwind.com"], or [] for none.

    Returns:
        The draft as it is now: {"draft_id", "to", "cc", "subject", "body",
        "ready_to_send", "problems", ...}.
    """
    d = draft_id
    if subject is None and body is None and to is None and cc is None:
        raise InvalidArgument(
            "Give at least one of subject, body, to or cc to change; nothing was changed."
        )
    _editable(d, "edited")
    to_list = _clean(to) if to is not None else split_addresses(d.to_addresses)
    cc_list = _clean(cc if cc is not None else split_addresses(d.cc_addresses), besides=to_list)
    _check_count(to_list, cc_list)
    ctx.sql.update(
        Draft,
        d,
        to_addresses=join_addresses(to_list),
        cc_addresses=join_addresses(cc_list),
        subject=_line(subject) if subject is not None else d.subject,
        body=body.strip() if body is not None else d.body,
        updated_at=ctx.now,
    )
    return _refreshed(ctx, d.id)


@server.tool(
    writes=True,
    returns=("attachment", "draft"),
    normalise={"filename": "strip"},
    phrasings=[
        "Attach {filename} ({size_kb} KB) to draft {draft_id}",
        "Add the file {filename} to draft {draft_id}, it is {size_kb} KB",
    ],
    examples={"filename": FILENAMES, "size_kb": FILE_SIZES_KB},
)
def add_attachment(
    ctx: ToolContext,
    draft_id: DraftRow,
    filename: Filename,
    size_kb: Annotated[int, Field(ge=1, le=MAX_ATTACHMENT_BYTES // 1024)],
) -> DraftOut:
    """Attach a file (its metadata: name and size) to an unsent draft.

    From prove/email-v3, the draft's updated_at is in the mailbox owner's time zone with its
    UTC offset, such as "2026-03-02T05:15-05:00" (get_time_zone).

    Args:
        draft_id: The unsent draft, such as "drf_0012".
        filename: The file's name with its extension, such as "Q3_report.pdf".
        size_kb: Its size in KB (1-25600), such as 350.

    Returns:
        The draft with its files: {"draft_id", "files": [{"attachment_id": "att_00102",
        "filename": "Q3_report.pdf", "mime_type": "application/pdf", "size_kb": 350}],
        "attachments_kb": 350, ...}.
    """
    d = draft_id
    name = filename.strip()
    _editable(d, "given attachments")
    ext = name[name.rfind(".") :].casefold()
    if ext in BLOCKED_EXTENSIONS:
        raise _broken(
            "blocked_file_type",
            f"'{ext}' files cannot be attached ({', '.join(BLOCKED_EXTENSIONS)} are blocked). "
            "Nothing was attached: share such a file another way, or attach it inside a .zip "
            "only if it is not executable.",
        )
    files = ctx.sql.all(DRAFT_FILES, ids=[d.id])
    used = sum(a.size_bytes for a in files)
    if len(files) >= MAX_ATTACHMENTS or used + size_kb * 1024 > MAX_ATTACHMENT_BYTES:
        raise _broken(
            "attachment_limit",
            f"draft {d.id} already carries {len(files)} files of {(used + 1023) // 1024} KB; a "
            f"draft carries at most {MAX_ATTACHMENTS} files of {MAX_ATTACHMENT_BYTES // 1024} "
            "KB together. Nothing was attached: send a smaller file or share a link instead.",
        )
    ctx.sql.insert(
        Attachment,
        id=next_id(ctx, Attachment.id, "att", 5),
        message_id=None,
        draft_id=d.id,
        position=max((a.position for a in files), default=0) + 1,
        filename=name,
        mime_type=mime_type(name),
        size_bytes=size_kb * 1024,
    )
    ctx.sql.update(Draft, d, updated_at=ctx.now)
    return _refreshed(ctx, d.id)


AUTOMATED_SENDERS = frozenset(address for address, _, _ in (*NEWSLETTERS, *SPAM))
"""The sampled state's newsletters, notices and spam: mail no person answers."""


def message_from_a_person(ctx: ToolContext, rng: random.Random, bound: Bound) -> str | None:
    """The message in ``message_id`` if someone would answer it: received from a person,
    not a newsletter, an automated notice, a bounce or spam, and not in spam or trash
    (nobody writes "could we move our call to Thursday?" to updates@cloudstatus.net);
    None otherwise, so synthesis draws another."""
    row = ctx.sql.first(record_by_key(Message), key=str(bound.args.get("message_id", "")))
    if row is None or row.direction != "received" or row.folder in ("spam", "trash"):
        return None
    sender = row.from_address.lower()
    if sender in AUTOMATED_SENDERS or sender.split("@", 1)[0] == MAILER_DAEMON:
        return None
    return str(row.id)


def messages_received(ctx: ToolContext, rng: random.Random, bound: Bound) -> list[str] | None:
    """The messages in ``message_ids`` if each was received and is kept (not in spam or
    trash): one's own sent mail is not marked unread; None otherwise, so synthesis draws
    others."""
    ids = bound.args.get("message_ids") or []
    rows = [
        ctx.sql.first(record_by_key(Message), key=str(i))
        for i in (ids if isinstance(ids, list) else [ids])
    ]
    if not rows or any(
        r is None or r.direction != "received" or r.folder in ("spam", "trash") for r in rows
    ):
        return None
    return [str(r.id) for r in rows if r is not None]


def folder_for_message(ctx: ToolContext, rng: random.Random, bound: Bound) -> str | None:
    """Where a person would file the received message: archive or trash it, bring it back
    to the inbox, or report it as spam only when it comes from outside their company (a
    colleague's mail is not spam); never the folder it is in. None for a message one did
    not receive."""
    row = ctx.sql.first(record_by_key(Message), key=str(bound.args.get("message_id", "")))
    if row is None or row.direction != "received":
        return None
    own = ctx.sql.one(record_by_key(Mailbox), key=row.mailbox_id).address
    colleague = row.from_address.rsplit("@", 1)[-1].lower() == own.rsplit("@", 1)[-1].lower()
    choices = ["archive", "trash", "inbox"] + ([] if colleague else ["spam"])
    choices = [f for f in choices if f != row.folder]
    return rng.choice(choices) if choices else None


def message_kept(ctx: ToolContext, rng: random.Random, bound: Bound) -> str | None:
    """The message in ``message_id`` unless it is in spam or trash (nobody files a message
    they just reported as spam under "Hiring"); None otherwise, so synthesis draws
    another."""
    row = ctx.sql.first(record_by_key(Message), key=str(bound.args.get("message_id", "")))
    return None if row is None or row.folder in ("spam", "trash") else str(row.id)


@server.tool(
    writes=True,
    returns=("draft", "thread"),
    phrasings=[
        "Draft a reply to {message_id} saying {body}",
        "Reply to all on {message_id}: {body}",
        "Answer email {message_id} with: {body}",
    ],
    examples={"body": BODIES},
    values={"message_id": message_from_a_person},
)
def reply_to_message(
    ctx: ToolContext,
    message_id: MessageRow,
    body: Annotated[Body, Field(min_length=1)],
    reply_all: bool = False,
) -> DraftOut:
    """Start a reply to a message as a draft in the same thread; send it with send_draft.

    The reply goes to the sender (to your own sent message: to its recipients); with
    reply_all, everyone else on the message is copied too (never your own address). The
    subject becomes "Re: <subject>". From prove/email-v3, the draft's updated_at is in the
    mailbox owner's time zone with its UTC offset, such as "2026-03-02T05:15-05:00"
    (get_time_zone).

    Args:
        message_id: The message to answer, such as "msg_00137".
        body: The reply's text, such as "Thanks Ana, Thursday works for me.".
        reply_all: Copy everyone who got the message as well; default false.

    Returns:
        The reply draft: {"draft_id": "drf_0032", "kind": "reply", "thread_id":
        "thr_0042", "in_reply_to": "msg_00137", "to": ["ana@northwind.com"], "subject":
        "Re: Invoice 4411", ...}.
    """
    m = message_id
    _not_quarantined(m, "replied to")
    waiting = ctx.sql.scalar(REPLY_WAITING, message_id=m.id)
    if waiting is not None:
        raise _broken(
            "reply_draft_exists",
            f"message {m.id} already has an unsent reply draft, {waiting}. Nothing was "
            "created: change that draft with update_draft (or delete it first).",
        )
    own = ctx.sql.one(record_by_key(Mailbox), key=m.mailbox_id).address
    others = split_addresses(m.to_addresses) + split_addresses(m.cc_addresses)
    if m.direction == "sent":
        to_list = _clean(split_addresses(m.to_addresses), besides=[own]) or [own]
        cc_list = _clean(split_addresses(m.cc_addresses), besides=[own, *to_list])
    else:
        to_list = [m.from_address]
        cc_list = _clean(others, besides=[own, *to_list])
    if not reply_all:
        cc_list = []
    _check_count(to_list, cc_list)
    draft_id = _new_draft(
        ctx,
        m.mailbox_id,
        kind="reply",
        thread_id=m.thread_id,
        in_reply_to=m.id,
        to=to_list,
        cc=cc_list,
        subject=prefixed("Re", m.subject),
        body=body.strip(),
    )
    return _refreshed(ctx, draft_id)


@server.tool(
    writes=True,
    returns=("draft", "thread", "attachment"),
    normalise={"to": "casefold"},
    phrasings=[
        "Forward {message_id} to {to}",
        "Forward email {message_id} to {to} with the note {note}",
        "Send {message_id} on to {to} without its attachments",
    ],
    examples={"note": NOTES},
)
def forward_message(
    ctx: ToolContext,
    message_id: MessageRow,
    to: Annotated[
        list[Address],
        Entity("contact", many=True),
        Field(min_length=1, max_length=MAX_RECIPIENTS),
    ],
    note: Body = "",
    include_attachments: bool = True,
) -> DraftOut:
    """Start a forward of a message as a draft in the same thread; send it with send_draft.

    The draft quotes the original below your note and, unless include_attachments is
    false, carries copies of its files. The subject becomes "Fwd: <subject>". From
    prove/email-v3, the quoted Date and the draft's updated_at are in the mailbox owner's
    time zone with their UTC offset, such as "2026-03-02T05:15-05:00" (get_time_zone).

    Args:
        message_id: The message to forward, such as "msg_00137".
        to: Who to forward it to, such as ["li.wei@northwind.com"].
        note: Text above the quoted message, such as "FYI, see below."; default none.
        include_attachments: Carry the message's files along; default true.

    Returns:
        The forward draft: {"draft_id": "drf_0033", "kind": "forward", "thread_id":
        "thr_0042", "subject": "Fwd: Invoice 4411", "files": [...], ...}.
    """
    m = message_id
    _not_quarantined(m, "forwarded")
    to_list = _clean(to)
    _check_count(to_list, [])
    quoted = (
        "---------- Forwarded message ----------\n"
        f"From: {m.from_name} <{m.from_address}>\n"
        f"Date: {_clock(ctx, m.mailbox_id)(m.sent_at)}\n"
        f"Subject: {m.subject}\n"
        f"To: {', '.join(split_addresses(m.to_addresses))}\n\n"
    )
    text = f"{note.strip()}\n\n{quoted}" if note.strip() else quoted
    room = MAX_BODY - len(text)
    original = m.body if len(m.body) <= room else m.body[: max(room - 6, 0)] + "\n[...]"
    draft_id = _new_draft(
        ctx,
        m.mailbox_id,
        kind="forward",
        thread_id=m.thread_id,
        in_reply_to=m.id,
        to=to_list,
        cc=[],
        subject=prefixed("Fwd", m.subject),
        body=text + original,
    )
    if include_attachments:
        for a in ctx.sql.all(MESSAGE_FILES, ids=[m.id]):
            ctx.sql.insert(
                Attachment,
                id=next_id(ctx, Attachment.id, "att", 5),
                message_id=None,
                draft_id=draft_id,
                position=a.position,
                filename=a.filename,
                mime_type=a.mime_type,
                size_bytes=a.size_bytes,
            )
    return _refreshed(ctx, draft_id)


@server.tool(
    writes=True,
    returns=("message", "thread", "contact"),
    phrasings=["Send draft {draft_id}", "Send the email in draft {draft_id} now"],
)
def send_draft(ctx: ToolContext, draft_id: DraftRow) -> SentOut:
    """Send an unsent draft. What is sent is final: it goes to Sent, can never be edited or
    deleted, and the draft is marked sent.

    A reply or forward joins its thread; a new message starts one. Colleagues at the
    company get a copy in their inbox; addresses the mailbox never wrote to before become
    contacts. From prove/email-v2, an address that cannot receive mail (no colleague's
    mailbox at the company's own domain, a domain that does not exist, or one reserved for
    examples such as example.com) gets nothing and does not become a contact; a bounce
    ("Undeliverable: <subject>") arrives in this mailbox's inbox, in the thread, naming it
    and why. Everyone else still gets the message. From prove/email-v3, sent_at is in the
    mailbox owner's time zone with its UTC offset, such as "2026-03-02T05:15-05:00"
    (get_time_zone).

    Args:
        draft_id: The draft, such as "drf_0012" (see list_drafts; ready_to_send says if it
            can go).

    Returns:
        {"message_id": "msg_00412", "draft_id": "drf_0012", "thread_id": "thr_0042",
        "folder": "sent", "to": [...], "sent_at": "2026-03-10T09:00",
        "delivered_to": ["mbx_02"], "new_contacts": ["li.wei@northwind.com"], ...}.
    """
    d = draft_id
    _editable(d, "sent again")
    to_list = split_addresses(d.to_addresses)
    cc_list = split_addresses(d.cc_addresses)
    if not to_list:
        raise _broken(
            "no_recipients",
            f"draft {d.id} has no 'to' address, so it cannot be sent. Nothing was sent: add "
            "the recipient with update_draft (ask the user who it is for if unsure).",
        )
    if not d.subject.strip():
        raise _broken(
            "missing_subject",
            f"draft {d.id} has no subject, so it cannot be sent. Nothing was sent: give it a "
            "subject with update_draft (ask the user for one if unsure).",
        )
    _check_count(to_list, cc_list)
    room = _Room(ctx)
    mailbox = Mailbox(**ctx.sql.one(record_by_key(Mailbox), key=d.mailbox_id)._asdict())
    known = set(ctx.sql.scalars(KNOWN_EMAILS, mailbox_id=mailbox.id, emails=to_list + cc_list))
    bounced = _undeliverable(ctx, to_list + cc_list) if ctx.env_version >= BOUNCES else {}
    thread = room.thread(d.thread_id) if d.thread_id is not None else None
    files = [(a.filename, a.mime_type, a.size_bytes) for a in ctx.sql.all(DRAFT_FILES, ids=[d.id])]
    sent, copies = send(
        room,
        mailbox=mailbox,
        thread=thread,
        kind=d.kind,
        to=to_list,
        cc=cc_list,
        subject=d.subject,
        body=d.body,
        at=ctx.now,
        in_reply_to=d.in_reply_to,
        files=files,
        draft_id=d.id,
        bounced=bounced,
    )
    ctx.sql.update(Draft, d, status="sent", sent_message_id=sent.id, updated_at=ctx.now)
    return {
        "message_id": sent.id,
        "draft_id": d.id,
        "thread_id": sent.thread_id,
        "mailbox_id": mailbox.id,
        "folder": sent.folder,
        "to": to_list,
        "cc": cc_list,
        "subject": sent.subject,
        "sent_at": _clock(ctx, mailbox.id)(sent.sent_at),
        "attachments": len(files),
        "delivered_to": [c.mailbox_id for c in copies],
        "new_contacts": [
            a
            for a in _clean(to_list + cc_list)
            if a not in known and a != mailbox.address and a not in bounced
        ],
    }


def _undeliverable(ctx: ToolContext, addresses: list[str]) -> dict[str, str]:
    """The addresses (each once, in order) that cannot receive mail, with the SMTP reply
    their server gives (:func:`.models.bounce_reason`)."""
    mailboxes = set(ctx.sql.scalars(MAILBOX_ADDRESSES))
    domains = {a.rpartition("@")[2] for a in mailboxes}
    reasons: dict[str, str] = {}
    for a in dict.fromkeys(addresses):
        why = bounce_reason(a, company_domains=domains, exists=a in mailboxes)
        if why is not None:
            reasons[a] = why
    if reasons:  # an address the state knows (a contact, a sender) exists after all
        for a in ctx.sql.scalars(KNOWN_ADDRESSES, emails=list(reasons)):
            reasons.pop(a, None)
    return reasons


@server.tool(
    writes=True,
    inverse_of="create_draft",
    destructive=True,
    returns="draft",
    phrasings=["Delete draft {draft_id}", "Discard the draft {draft_id}, I won't send it"],
)
def delete_draft(ctx: ToolContext, draft_id: DraftRow) -> DeletedOut:
    """Discard an unsent draft and its attachments for good. Sent mail cannot be deleted.

    Args:
        draft_id: The unsent draft, such as "drf_0012".

    Returns:
        {"draft_id": "drf_0012", "deleted": true, "attachments_removed": 1}.
    """
    d = draft_id
    _editable(d, "deleted")
    files = ctx.sql.all(DRAFT_FILES, ids=[d.id])
    for a in sorted(files, key=lambda a: a.id):  # the ORM deletes rows by key
        ctx.sql.run(DELETE_FILE, id=a.id)
    ctx.sql.run(DELETE_DRAFT, id=d.id)
    return {"draft_id": draft_id.id, "deleted": True, "attachments_removed": len(files)}


@server.tool(
    writes=True,
    returns=("message", "thread"),
    phrasings=[
        "Move message {message_id} to {folder}",
        "Put email {message_id} in the {folder} folder",
    ],
    values={"folder": folder_for_message},
)
def move_message(
    ctx: ToolContext,
    message_id: MessageRow,
    folder: Literal["inbox", "archive", "trash", "spam"],
) -> MovedOut:
    """File a received message in another folder: archive it, trash it, report it as spam,
    or bring it back to the inbox. Nothing is ever deleted for good.

    Args:
        message_id: The received message, such as "msg_00137".
        folder: "inbox", "archive", "trash" or "spam".

    Returns:
        {"message_id": "msg_00137", "thread_id": "thr_0042", "from_folder": "inbox",
        "folder": "archive", "changed": true}.
    """
    m = message_id
    if m.direction == "sent":
        raise _broken(
            "sent_stays_in_sent",
            f"message {m.id} is sent mail; sent mail is append-only and stays in the 'sent' "
            "folder. Nothing was moved: label or star it instead to organise it.",
        )
    before = m.folder
    ctx.sql.update(Message, m, folder=folder)
    return {
        "message_id": m.id,
        "thread_id": m.thread_id,
        "from_folder": before,
        "folder": folder,
        "changed": before != folder,
    }


@server.tool(
    writes=True,
    returns="message",
    phrasings=["Mark {message_ids} as {flag}", "Flag {message_ids} as {flag}"],
    values={"message_ids": messages_received},
)
def mark_messages(
    ctx: ToolContext,
    message_ids: Annotated[
        list[MessageRow], Entity("message", many=True), Field(min_length=1, max_length=50)
    ],
    flag: Flag,
) -> FlagResult:
    """Mark messages read or unread, or star or unstar them.

    Args:
        message_ids: The messages, such as ["msg_00137", "msg_00140"] (1-50).
        flag: "read", "unread", "starred" or "unstarred".

    Returns:
        {"flag": "read", "changed": 2, "messages": [{"message_id": "msg_00137",
        "is_read": true, "is_starred": false, "changed": true}, ...]}.
    """
    out: list[FlagOut] = []
    done: dict[str, Any] = {}
    for m in message_ids:
        if m.id in done:
            continue
        done[m.id] = m
        is_read = flag == "read" if flag in ("read", "unread") else m.is_read
        is_starred = flag == "starred" if flag in ("starred", "unstarred") else m.is_starred
        out.append(
            {
                "message_id": m.id,
                "is_read": is_read,
                "is_starred": is_starred,
                "changed": (m.is_read, m.is_starred) != (is_read, is_starred),
            }
        )
    for o in sorted(out, key=lambda o: o["message_id"]):  # the ORM writes rows by key
        ctx.sql.update(
            Message, done[o["message_id"]], is_read=o["is_read"], is_starred=o["is_starred"]
        )
    return {"flag": flag, "changed": sum(1 for o in out if o["changed"]), "messages": out}


@server.tool(
    writes=True,
    returns="label",
    normalise={"name": "strip"},
    phrasings=[
        "Create a label {name} in {mailbox_id}",
        "Add a new {color} label called {name} to mailbox {mailbox_id}",
    ],
    examples={"name": NEW_LABELS},
)
def create_label(
    ctx: ToolContext,
    mailbox_id: MailboxRow,
    name: LabelName,
    color: Color = "gray",
) -> LabelCreated:
    """Create a label in a mailbox, to put on messages with label_message.

    Args:
        mailbox_id: The mailbox, such as "mbx_03".
        name: The label's name (letters, digits, spaces and & / _ . -), such as "Board prep".
        color: "gray", "red", "orange", "yellow", "green", "teal", "blue", "purple" or
            "pink"; default "gray".

    Returns:
        {"label_id": "lbl_031", "mailbox_id": "mbx_03", "name": "Board prep", "color":
        "gray", "messages": 0, "unread": 0}.
    """
    mb = mailbox_id
    text = " ".join(name.split())
    if text.casefold() in RESERVED_LABELS:
        raise _broken(
            "reserved_label_name",
            f"'{text}' is a folder or built-in view, not a label name. Nothing was created: "
            "choose another name, or file the message with move_message.",
        )
    labels = ctx.sql.all(MAILBOX_LABELS, mailbox_id=mb.id)
    same = [lbl for lbl in labels if lbl.name.casefold() == text.casefold()]
    if same:
        raise Conflict(
            f"Rule 'label_name_taken' failed: mailbox {mb.id} already has the label "
            f"'{same[0].name}' ({same[0].id}). Nothing was created: use that label."
        )
    if len(labels) >= MAX_LABELS:
        raise _broken(
            "label_limit",
            f"mailbox {mb.id} already has {len(labels)} labels, the most it may have. Nothing "
            "was created: reuse an existing label.",
        )
    label_id = next_id(ctx, Label.id, "lbl", 3)
    ctx.sql.insert(Label, id=label_id, mailbox_id=mb.id, name=text, color=color, created_at=ctx.now)
    return {
        "label_id": label_id,
        "mailbox_id": mb.id,
        "name": text,
        "color": color,
        "messages": 0,
        "unread": 0,
    }


@server.tool(
    writes=True,
    returns=("message", "label"),
    phrasings=[
        "Label message {message_id} with {label_id}",
        "Put label {label_id} on email {message_id}",
    ],
    values={"message_id": message_kept},
)
def label_message(
    ctx: ToolContext,
    message_id: MessageRow,
    label_id: LabelRow,
    remove: bool = False,
) -> LabeledOut:
    """Put a label of the message's mailbox on a message, or take it off with remove=true.

    Args:
        message_id: The message, such as "msg_00137".
        label_id: A label of the same mailbox, such as "lbl_012" (list_mailboxes shows them).
        remove: Take the label off instead; default false.

    Returns:
        {"message_id": "msg_00137", "label_id": "lbl_012", "label_name": "Finance",
        "action": "added", "changed": true, "labels": ["Clients", "Finance"]}.
    """
    m, lbl = message_id, label_id
    if lbl.mailbox_id != m.mailbox_id:
        raise _broken(
            "label_other_mailbox",
            f"label {lbl.id} ('{lbl.name}') belongs to mailbox {lbl.mailbox_id} but message "
            f"{m.id} is in mailbox {m.mailbox_id}. Nothing was changed: use a label of "
            f"{m.mailbox_id} (list_mailboxes shows them), or create one there.",
        )
    link = ctx.sql.first(LINK, message_id=m.id, label_id=lbl.id)
    changed = False
    if remove and link is not None:
        ctx.sql.run(UNLINK, message_id=m.id, label_id=lbl.id)
        changed = True
    elif not remove and link is None:
        ctx.sql.insert(MessageLabel, message_id=m.id, label_id=lbl.id)
        changed = True
    return {
        "message_id": m.id,
        "label_id": lbl.id,
        "label_name": lbl.name,
        "action": "removed" if remove else "added",
        "changed": changed,
        "labels": [x.name for x in ctx.sql.all(LABELS_ON, ids=[m.id])],
    }


ZoneName = Annotated[str, Field(min_length=1, max_length=64)]
"""An IANA time zone name, such as "America/New_York" (checked against the pinned data)."""
ZONE_EXAMPLES = [
    "America/New_York",
    "Europe/Berlin",
    "Asia/Tokyo",
    "America/Los_Angeles",
    "Europe/London",
    "Australia/Sydney",
    "UTC",
]


def _time_zone(ctx: ToolContext, mailbox_id: str) -> TimeZoneOut:
    """A mailbox's time zone as get_time_zone shows it."""
    named = _zone_name(ctx, mailbox_id)
    tz = zones.zone(named or DEFAULT_TIME_ZONE)
    now = ctx.now.replace(tzinfo=zones.UTC).astimezone(tz)
    return {
        "mailbox_id": mailbox_id,
        "time_zone": tz.key,
        "is_default": named is None,
        "utc_offset": now.isoformat(timespec="minutes")[16:],
        "now": now.isoformat(timespec="minutes"),
    }


@server.tool(
    since=TIME_ZONES,
    returns="mailbox",
    phrasings=["What time zone is {mailbox_id} in?", "What time is it for {mailbox_id}?"],
)
def get_time_zone(ctx: ToolContext, mailbox_id: MailboxRow) -> TimeZoneOut:
    """Show the time zone a mailbox's owner reads their mail in, and the current time there.

    Every time the tools show is in this zone with its UTC offset, and the dates and times
    search_messages takes are read in it. Until the owner sets one (set_time_zone) it is
    UTC, the zone times are stored in.

    Args:
        mailbox_id: The mailbox, such as "mbx_03".

    Returns:
        {"mailbox_id": "mbx_03", "time_zone": "America/New_York", "is_default": false,
        "utc_offset": "-05:00", "now": "2026-03-02T09:41-05:00"}.
    """
    return _time_zone(ctx, mailbox_id.id)


@server.tool(
    since=TIME_ZONES,
    writes=True,
    idempotent=True,
    returns="mailbox",
    normalise={"time_zone": "strip"},
    phrasings=[
        "Set the time zone of {mailbox_id} to {time_zone}",
        "I'm in {time_zone} now: show {mailbox_id}'s mail in my time",
    ],
    examples={"time_zone": ZONE_EXAMPLES},
)
def set_time_zone(ctx: ToolContext, mailbox_id: MailboxRow, time_zone: ZoneName) -> TimeZoneSet:
    """Set the time zone a mailbox's owner reads their mail in (an IANA name). From then on
    every time the tools show is in it with its UTC offset, and search_messages reads dates
    and times in it; stored mail does not change.

    Args:
        mailbox_id: The mailbox, such as "mbx_03".
        time_zone: An IANA time zone name, such as "America/New_York", "Europe/Berlin" or
            "UTC" (exactly as the IANA database spells it).

    Returns:
        {"mailbox_id": "mbx_03", "time_zone": "Europe/Berlin", "is_default": false,
        "utc_offset": "+01:00", "now": "2026-03-02T15:41+01:00", "previous": "UTC",
        "changed": true}.
    """
    name = time_zone.strip()
    try:
        tz = zones.zone(name)
    except zones.ZoneError:
        near = zones.like(name)
        hint = f"Did you mean '{near}'? " if near else ""
        raise InvalidArgument(
            f"Unknown time zone {name[:64]!r}. {hint}Give an IANA name such as "
            "'America/New_York', 'Europe/Berlin' or 'UTC'. Nothing was changed."
        ) from None
    before = _time_zone(ctx, mailbox_id.id)
    row = ctx.sql.first(SETTINGS_OF, mailbox_id=mailbox_id.id)
    if row is None:
        ctx.sql.insert(
            MailboxSettings, mailbox_id=mailbox_id.id, time_zone=tz.key, updated_at=ctx.now
        )
    elif row.time_zone != tz.key:
        ctx.sql.update(MailboxSettings, row, time_zone=tz.key, updated_at=ctx.now)
    return {
        **_time_zone(ctx, mailbox_id.id),
        "previous": before["time_zone"],
        "changed": row is None or row.time_zone != tz.key,
    }


# ------------------------------------------------------------------ entities
@server.entity(
    "mailbox",
    key="mailbox_id",
    model=Mailbox,
    not_found="Call list_mailboxes with the person's name to find their mailbox's id "
    "(such as 'mbx_03').",
)
def _mailboxes(ctx: ToolContext) -> list[dict[str, Any]]:
    return [
        {"mailbox_id": m.id, "address": m.address, "owner": m.owner_name}
        for m in ctx.sql.all(MAILBOXES)
    ]


@server.entity("contact", key="email")
def _contacts(ctx: ToolContext) -> list[dict[str, Any]]:
    """Contacts by address, with their mailbox (an address is unique within a mailbox)."""
    rows = ctx.sql.all(ALL_CONTACTS)
    return [{"email": c.email, "mailbox_id": c.mailbox_id, "contact_name": c.name} for c in rows]


@server.entity(
    "message",
    key="message_id",
    model=Message,
    owner="mailbox_id",
    not_found="Call search_messages with the mailbox's id (and a word of the subject or the "
    "sender) to find the message's id (such as 'msg_00137').",
)
def _messages(ctx: ToolContext) -> list[dict[str, Any]]:
    rows = ctx.sql.all(ALL_MESSAGES)
    return [
        {
            "message_id": m.id,
            "mailbox_id": m.mailbox_id,
            "thread_id": m.thread_id,
            "in_folder": m.folder,
            "direction": m.direction,
            "sender": m.from_address,
        }
        for m in rows
    ]


@server.entity(
    "thread",
    key="thread_id",
    model=Thread,
    owner="mailbox_id",
    not_found="Call search_messages with the mailbox's id: every message names its thread_id "
    "(such as 'thr_0042').",
)
def _threads(ctx: ToolContext) -> list[dict[str, Any]]:
    rows = ctx.sql.all(ALL_THREADS)
    return [{"thread_id": t.id, "mailbox_id": t.mailbox_id, "size": t.message_count} for t in rows]


@server.entity(
    "draft",
    key="draft_id",
    model=Draft,
    owner="mailbox_id",
    not_found="Call list_drafts with the mailbox's id to find the draft's id (such as 'drf_0012').",
)
def _drafts(ctx: ToolContext) -> list[dict[str, Any]]:
    """Unsent drafts (a sent draft is history)."""
    rows = ctx.sql.all(UNSENT_DRAFTS)
    return [
        {
            "draft_id": d.id,
            "mailbox_id": d.mailbox_id,
            "thread_id": d.thread_id,
            "ready": not _draft_problems(d),
        }
        for d in rows
    ]


@server.entity(
    "label",
    key="label_id",
    model=Label,
    owner="mailbox_id",
    not_found="Call list_mailboxes: it lists each mailbox's labels with their ids "
    "(such as 'lbl_012').",
)
def _labels(ctx: ToolContext) -> list[dict[str, Any]]:
    rows = ctx.sql.all(ALL_LABELS)
    return [
        {"label_id": lbl.id, "mailbox_id": lbl.mailbox_id, "label_name": lbl.name} for lbl in rows
    ]


@server.entity("attachment", key="attachment_id")
def _attachments(ctx: ToolContext) -> list[dict[str, Any]]:
    rows = ctx.sql.all(ALL_ATTACHMENTS)
    return [
        {"attachment_id": a.id, "message_id": a.message_id, "draft_id": a.draft_id} for a in rows
    ]
