"""Email state: a company's mailboxes, their threads, messages, drafts, labels, attachments
and contacts.

Mail is append-only: a message, once sent or received, never changes what it says (its
sender, recipients, subject, body, time, thread and attachments are sealed by ``digest``);
only where it is filed (folder, labels, read, starred) can change, and nothing deletes it.
Drafts are the editable part; sending one seals it into a message and marks the draft
``sent``. The rules every state obeys (the tests check them after random call sequences):

- a thread's messages all belong to its mailbox and carry its id; ``message_count`` and
  ``last_message_at`` agree with them, and a message replied to is in the same thread;
- every message's ``digest`` is :func:`message_digest` of its sealed content;
- a sent message sits in the ``sent`` folder, a received one never does;
- a mailbox's message to a colleague's address is delivered, once, to that colleague's
  inbox, in the thread of the same ``conversation``;
- a contact's ``times_emailed`` counts the sent messages of its mailbox addressed to it;
- a draft holds at most ``MAX_RECIPIENTS`` addresses and ``MAX_ATTACHMENT_BYTES`` of at
  most ``MAX_ATTACHMENTS`` files; a sent draft names the message it became;
- a label and the messages it is on belong to the same mailbox; names are unique per mailbox
  regardless of case;
- from env version 2 (:data:`.tools.BOUNCES`), an address that cannot receive mail
  (:func:`bounce_reason`) gets no copy and never becomes a contact: the sender's inbox gets
  one bounce per message instead, in its thread, naming each such address and why;
- every stored time (``sent_at``, ``last_message_at``, ``last_emailed_at``, ``created_at``,
  ``updated_at``, the state's "now") is UTC, without an offset; from env version 3
  (:data:`.tools.TIME_ZONES`) the tools show and take times in the mailbox owner's time
  zone (:class:`MailboxSettings`, :data:`DEFAULT_TIME_ZONE` until one is set).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import re
from collections.abc import Collection
from typing import Any

from sqlalchemy import (
    Boolean,
    DateTime,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    UniqueConstraint,
    func,
    select,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship
from sqlalchemy.orm import Session as OrmSession

from prove_gym.server import added_later

FOLDERS: tuple[str, ...] = ("inbox", "archive", "sent", "trash", "spam")
"""Where a message is filed; "sent" holds exactly the mailbox's own sent mail."""

RESERVED_LABELS: tuple[str, ...] = (
    "inbox",
    "archive",
    "sent",
    "drafts",
    "trash",
    "spam",
    "starred",
    "unread",
    "all mail",
)
"""Names a label may not take (regardless of case): they are folders or built-in views."""

MAX_RECIPIENTS = 50
"""Most addresses (to and cc together) one message may go to."""
MAX_ATTACHMENTS = 10
"""Most files one draft or message may carry."""
MAX_ATTACHMENT_BYTES = 25 * 1024 * 1024
"""Most bytes the attachments of one draft or message may add up to (25 MB)."""
MAX_LABELS = 25
"""Most labels one mailbox may have."""
MAX_BODY = 20000
"""Longest stored body; a forward quoting a long message is cut to fit."""
BLOCKED_EXTENSIONS: tuple[str, ...] = (
    ".exe",
    ".bat",
    ".cmd",
    ".com",
    ".js",
    ".msi",
    ".scr",
    ".vbs",
)
"""File types mail servers reject as attachments."""

MIME_TYPES: dict[str, str] = {
    ".pdf": "application/pdf",
    ".docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    ".xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
    ".pptx": "application/vnd.openxmlformats-officedocument.presentationml.presentation",
    ".csv": "text/csv",
    ".txt": "text/plain",
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".zip": "application/zip",
    ".ics": "text/calendar",
    ".mp4": "video/mp4",
}


class Base(DeclarativeBase):
    pass


class Mailbox(Base):
    """One person's mailbox at the company (its address is unique)."""

    __tablename__ = "mailboxes"
    id: Mapped[str] = mapped_column(String(16), primary_key=True)
    address: Mapped[str] = mapped_column(String(120), unique=True)
    owner_name: Mapped[str] = mapped_column(String(80))
    title: Mapped[str] = mapped_column(String(80))
    created_at: Mapped[dt.datetime] = mapped_column(DateTime)

    labels: Mapped[list[Label]] = relationship(order_by="Label.name, Label.id")


DEFAULT_TIME_ZONE = "UTC"
"""The time zone of a mailbox whose owner has set none (every sampled mailbox): the zone its
times are stored in, so a time shows as stored, with the offset +00:00."""


class MailboxSettings(Base):
    """A mailbox owner's display time zone (from ``prove/email-v3``), as a user's settings
    hold theirs: the tools show every time in it and read the times they take in it. Set
    with set_time_zone; a mailbox without a row is in :data:`DEFAULT_TIME_ZONE`. No sampled
    state has one: the table counts in the state hash only once a zone is set
    (:func:`~prove_gym.server.added_later`)."""

    __tablename__ = "mailbox_settings"
    __table_args__ = added_later()
    mailbox_id: Mapped[str] = mapped_column(ForeignKey("mailboxes.id"), primary_key=True)
    time_zone: Mapped[str] = mapped_column(String(64))
    """An IANA zone name of the pinned ``tzdata`` package, such as "America/New_York"."""
    updated_at: Mapped[dt.datetime] = mapped_column(DateTime)


class Contact(Base):
    """Someone a mailbox knows: added by hand or the first time it emailed them."""

    __tablename__ = "contacts"
    __table_args__ = (UniqueConstraint("mailbox_id", "email"),)
    id: Mapped[str] = mapped_column(String(16), primary_key=True)
    mailbox_id: Mapped[str] = mapped_column(ForeignKey("mailboxes.id"), index=True)
    name: Mapped[str] = mapped_column(String(80))
    email: Mapped[str] = mapped_column(String(120))
    """Lower case: addresses are compared without regard to case."""
    company: Mapped[str] = mapped_column(String(80))
    times_emailed: Mapped[int] = mapped_column(Integer)
    last_emailed_at: Mapped[dt.datetime | None] = mapped_column(DateTime, nullable=True)
    created_at: Mapped[dt.datetime] = mapped_column(DateTime)


class Label(Base):
    __tablename__ = "labels"
    id: Mapped[str] = mapped_column(String(16), primary_key=True)
    mailbox_id: Mapped[str] = mapped_column(ForeignKey("mailboxes.id"), index=True)
    name: Mapped[str] = mapped_column(String(40))
    color: Mapped[str] = mapped_column(String(12))
    created_at: Mapped[dt.datetime] = mapped_column(DateTime)


class Thread(Base):
    """A conversation as one mailbox sees it.

    ``conversation`` is shared by the threads of the same conversation in different
    mailboxes (the id of the message that started it), so a colleague's reply lands in the
    right thread.
    """

    __tablename__ = "threads"
    __table_args__ = (UniqueConstraint("mailbox_id", "conversation"),)
    id: Mapped[str] = mapped_column(String(16), primary_key=True)
    mailbox_id: Mapped[str] = mapped_column(ForeignKey("mailboxes.id"), index=True)
    conversation: Mapped[str] = mapped_column(String(16))
    subject: Mapped[str] = mapped_column(String(200))
    message_count: Mapped[int] = mapped_column(Integer)
    last_message_at: Mapped[dt.datetime] = mapped_column(DateTime)

    messages: Mapped[list[Message]] = relationship(
        back_populates="thread", order_by="Message.sent_at, Message.id"
    )


class MessageLabel(Base):
    __tablename__ = "message_labels"
    message_id: Mapped[str] = mapped_column(ForeignKey("messages.id"), primary_key=True)
    label_id: Mapped[str] = mapped_column(ForeignKey("labels.id"), primary_key=True)


class Message(Base):
    """A sent or received message: its content is sealed, only its filing changes."""

    __tablename__ = "messages"
    __table_args__ = (
        # covers list_mailboxes' counts per folder: the rows themselves (bodies, addresses)
        # are never read to count them
        Index("ix_messages_mailbox_folder_read", "mailbox_id", "folder", "is_read"),
    )
    id: Mapped[str] = mapped_column(String(16), primary_key=True)
    mailbox_id: Mapped[str] = mapped_column(ForeignKey("mailboxes.id"), index=True)
    thread_id: Mapped[str] = mapped_column(ForeignKey("threads.id"), index=True)
    direction: Mapped[str] = mapped_column(String(8))
    """"sent" (written in this mailbox) or "received"."""
    kind: Mapped[str] = mapped_column(String(8))
    """"new", "reply" or "forward"."""
    folder: Mapped[str] = mapped_column(String(8))
    """One of ``FOLDERS``."""
    from_address: Mapped[str] = mapped_column(String(120))
    from_name: Mapped[str] = mapped_column(String(80))
    to_addresses: Mapped[str] = mapped_column(Text)
    """Comma-separated, lower case, in the order written."""
    cc_addresses: Mapped[str] = mapped_column(Text)
    subject: Mapped[str] = mapped_column(String(220))
    body: Mapped[str] = mapped_column(Text)
    sent_at: Mapped[dt.datetime] = mapped_column(DateTime)
    in_reply_to: Mapped[str | None] = mapped_column(String(16), nullable=True)
    """The message of the same thread this one answers or forwards."""
    draft_id: Mapped[str | None] = mapped_column(String(16), nullable=True)
    """The draft it was sent from (sent mail only; sampled history has none)."""
    is_read: Mapped[bool] = mapped_column(Boolean)
    is_starred: Mapped[bool] = mapped_column(Boolean)
    digest: Mapped[str] = mapped_column(String(64))

    thread: Mapped[Thread] = relationship(back_populates="messages")
    attachments: Mapped[list[Attachment]] = relationship(
        primaryjoin="Attachment.message_id == Message.id",
        order_by="Attachment.position, Attachment.id",
        viewonly=True,
    )
    labels: Mapped[list[Label]] = relationship(
        secondary="message_labels", order_by="Label.name, Label.id", viewonly=True
    )


class Draft(Base):
    """An unsent message: everything about it can change until it is sent."""

    __tablename__ = "drafts"
    id: Mapped[str] = mapped_column(String(16), primary_key=True)
    mailbox_id: Mapped[str] = mapped_column(ForeignKey("mailboxes.id"), index=True)
    kind: Mapped[str] = mapped_column(String(8))
    """"new", "reply" or "forward"."""
    thread_id: Mapped[str | None] = mapped_column(ForeignKey("threads.id"), nullable=True)
    in_reply_to: Mapped[str | None] = mapped_column(String(16), nullable=True)
    to_addresses: Mapped[str] = mapped_column(Text)
    cc_addresses: Mapped[str] = mapped_column(Text)
    subject: Mapped[str] = mapped_column(String(220))
    body: Mapped[str] = mapped_column(Text)
    status: Mapped[str] = mapped_column(String(8))
    """"draft" while editable, "sent" once sent (then ``sent_message_id`` is set)."""
    sent_message_id: Mapped[str | None] = mapped_column(String(16), nullable=True)
    created_at: Mapped[dt.datetime] = mapped_column(DateTime)
    updated_at: Mapped[dt.datetime] = mapped_column(DateTime)

    attachments: Mapped[list[Attachment]] = relationship(
        primaryjoin="Attachment.draft_id == Draft.id",
        order_by="Attachment.position, Attachment.id",
        viewonly=True,
    )


class Attachment(Base):
    """A file's metadata, on a draft (``message_id`` null) or on a message (``draft_id``
    null). Sending a draft copies its files onto the message; a delivered copy has its own.
    """

    __tablename__ = "attachments"
    id: Mapped[str] = mapped_column(String(16), primary_key=True)
    message_id: Mapped[str | None] = mapped_column(ForeignKey("messages.id"), nullable=True)
    draft_id: Mapped[str | None] = mapped_column(ForeignKey("drafts.id"), nullable=True)
    position: Mapped[int] = mapped_column(Integer)
    filename: Mapped[str] = mapped_column(String(120))
    mime_type: Mapped[str] = mapped_column(String(80))
    size_bytes: Mapped[int] = mapped_column(Integer)


# ------------------------------------------------------------ domain rules
# Shared by the sampler and the tools, so sampled history and live calls agree exactly.
def split_addresses(value: str) -> list[str]:
    """The addresses of a comma-separated column.

    >>> split_addresses("ana@acme.com,bo@acme.com"), split_addresses("")
    (['ana@acme.com', 'bo@acme.com'], [])
    """
    return [a for a in value.split(",") if a]


def join_addresses(addresses: list[str]) -> str:
    return ",".join(addresses)


def message_digest(
    *,
    mailbox_id: str,
    thread_id: str,
    direction: str,
    from_address: str,
    to: str,
    cc: str,
    subject: str,
    body: str,
    sent_at: dt.datetime,
    in_reply_to: str | None,
    files: list[tuple[str, str, int]],
) -> str:
    """The seal of a message's content: any change to what was sent changes it."""
    payload = json.dumps(
        [
            mailbox_id,
            thread_id,
            direction,
            from_address,
            to,
            cc,
            subject,
            body,
            sent_at.isoformat(),
            in_reply_to,
            [list(f) for f in files],
        ],
        separators=(",", ":"),
    )
    return hashlib.sha256(payload.encode()).hexdigest()


def digest_of(message: Message, files: list[tuple[str, str, int]]) -> str:
    return message_digest(
        mailbox_id=message.mailbox_id,
        thread_id=message.thread_id,
        direction=message.direction,
        from_address=message.from_address,
        to=message.to_addresses,
        cc=message.cc_addresses,
        subject=message.subject,
        body=message.body,
        sent_at=message.sent_at,
        in_reply_to=message.in_reply_to,
        files=files,
    )


def prefixed(prefix: str, subject: str) -> str:
    """A reply's or forward's subject: the prefix once, whatever the original carried.

    >>> prefixed("Re", "RE: re: Budget"), prefixed("Fwd", "Re: Budget")
    ('Re: Budget', 'Fwd: Re: Budget')
    """
    text, tag = subject.strip(), f"{prefix.casefold()}:"
    while text.casefold().startswith(tag):
        text = text[len(tag) :].strip()
    return f"{prefix}: {text}"[:220]


def name_from_address(address: str) -> str:
    """A readable name for an address nobody named.

    >>> name_from_address("ana.silva@acme.com"), name_from_address("billing@acme.com")
    ('Ana Silva', 'Billing')
    """
    local = address.split("@", 1)[0]
    words = [w for w in local.replace("_", ".").replace("-", ".").split(".") if w]
    return (" ".join(w.capitalize() for w in words) or local)[:80]


def company_from_address(address: str) -> str:
    """
    >>> company_from_address("ana@northwind-traders.com")
    'Northwind Traders'
    """
    domain = address.split("@", 1)[-1].split(".")[0]
    return " ".join(w.capitalize() for w in domain.replace("_", "-").split("-") if w)[:80]


def mime_type(filename: str) -> str:
    dot = filename.rfind(".")
    ext = filename[dot:].casefold() if dot >= 0 else ""
    return MIME_TYPES.get(ext, "application/octet-stream")


# ------------------------------------------------------------ delivery
RESERVED_DOMAINS: tuple[str, ...] = ("example.com", "example.net", "example.org")
"""Domains reserved for documentation (RFC 2606): they publish a null MX (RFC 7505), so
every mail server bounces mail to them at once."""
RESERVED_TLDS: tuple[str, ...] = ("example", "invalid", "test", "localhost", "local")
"""Top-level names that are never delegated on the Internet (RFC 2606, RFC 6761, RFC 6762):
no address under them can receive mail."""
MAILER_DAEMON = "mailer-daemon"
"""The local part of the address bounces come from, at the sender's own domain."""
MAILER_DAEMON_NAME = "Mail Delivery Subsystem"
_LABEL = re.compile(r"[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?")
_TLD = re.compile(r"[a-z]{2,63}")


def bounce_reason(address: str, *, company_domains: Collection[str], exists: bool) -> str | None:
    """Why mail to ``address`` (lower case) bounces, as the SMTP reply a server gives, or
    ``None`` when it is delivered. The whole rule, in this order:

    1. ``exists``: a mailbox of the company, or an address the state already knows (a
       contact of some mailbox, or the sender of a message in it), is delivered;
    2. at one of the company's own domains, any other address bounces: the company's
       server knows every mailbox it has (``5.1.1``);
    3. a domain that is not a host name (labels of letters, digits and inner hyphens, a
       top-level name of letters) does not exist (``5.1.2``);
    4. a domain reserved for documentation or never delegated (:data:`RESERVED_DOMAINS`,
       :data:`RESERVED_TLDS`, and their subdomains) accepts no mail (``5.1.2``);
    5. a local part longer than 64 characters is refused (``5.1.3``, RFC 5321);
    6. anything else is delivered: the world outside the company is not modelled, and a
       well-formed address on a public domain is taken to exist.

    >>> bounce_reason("ana@acme.com", company_domains=["acme.com"], exists=False)
    '550 5.1.1 <ana@acme.com>: no such mailbox at acme.com'
    >>> bounce_reason("bo@example.org", company_domains=["acme.com"], exists=False)
    '550 5.1.2 <bo@example.org>: the domain example.org accepts no mail (reserved, RFC 2606)'
    >>> bounce_reason("li@northwind.com", company_domains=["acme.com"], exists=False) is None
    True
    """
    if exists:
        return None
    local, _, domain = address.rpartition("@")
    if domain in company_domains:
        return f"550 5.1.1 <{address}>: no such mailbox at {domain}"
    labels = domain.split(".")
    if (
        len(domain) > 253
        or len(labels) < 2
        or not all(_LABEL.fullmatch(label) for label in labels)
        or not _TLD.fullmatch(labels[-1])
    ):
        return f"550 5.1.2 <{address}>: the domain {domain} does not exist"
    reserved = labels[-1] in RESERVED_TLDS or any(
        domain == d or domain.endswith("." + d) for d in RESERVED_DOMAINS
    )
    if reserved:
        return f"550 5.1.2 <{address}>: the domain {domain} accepts no mail (reserved, RFC 2606)"
    if len(local) > 64:
        return f"550 5.1.3 <{address}>: the local part is longer than 64 characters"
    return None


def bounce_body(subject: str, reasons: dict[str, str], *, reached_others: bool) -> str:
    """The text of a bounce: each address that could not be reached (a line each,
    ``<address>: <reply>``), and why."""
    lines = "\n".join(f"{address}: {why}" for address, why in reasons.items())
    others = "It reached everyone else it was addressed to. " if reached_others else ""
    return (
        f'Your message "{subject}" could not be delivered to '
        f"{'this recipient' if len(reasons) == 1 else 'these recipients'}:\n\n{lines}\n\n"
        f"{others}Check the address, or ask the person for another one, and send it again."
    )


# ------------------------------------------------------------ mail operations
# The one way a message enters the state, for sampled history and live calls alike.
File = tuple[str, str, int]
"""An attachment's (filename, mime type, size in bytes)."""


def new_id(db: OrmSession, column: Any, prefix: str, width: int) -> str:
    """The id after the largest in ``column`` (as ``prove_gym.server.next_id`` numbers)."""
    last = db.scalar(select(column).order_by(func.length(column).desc(), column.desc()).limit(1))
    n = int(str(last).rsplit("_", 1)[1]) + 1 if last else 1
    return f"{prefix}_{n:0{width}d}"


class Mailroom:
    """Where the mail operations find and file rows: by query, in the session (the tools').

    The sampler plays hundreds of messages through the same operations on a database it
    alone writes; its subclass answers the same questions from dictionaries and counts ids
    instead of asking the database for each one.
    """

    def __init__(self, db: OrmSession) -> None:
        self.db = db

    def new_id(self, column: Any, prefix: str, width: int) -> str:
        return new_id(self.db, column, prefix, width)

    def add(self, row: Base) -> None:
        self.db.add(row)

    def flush(self) -> None:
        self.db.flush()

    def thread(self, thread_id: str) -> Thread:
        return self.db.get_one(Thread, thread_id)

    def contact(self, mailbox_id: str, address: str) -> Contact | None:
        return self.db.scalar(
            select(Contact).where(Contact.mailbox_id == mailbox_id, Contact.email == address)
        )

    def mailbox(self, address: str) -> Mailbox | None:
        return self.db.scalar(select(Mailbox).where(Mailbox.address == address))

    def conversation(self, mailbox_id: str, conversation: str) -> Thread | None:
        """The mailbox's thread of ``conversation``, if it has one."""
        return self.db.scalar(
            select(Thread).where(
                Thread.mailbox_id == mailbox_id, Thread.conversation == conversation
            )
        )

    def latest(self, thread_id: str, excluding: str) -> str | None:
        """The id of the thread's latest message other than ``excluding``."""
        return self.db.scalar(
            select(Message.id)
            .where(Message.thread_id == thread_id, Message.id != excluding)
            .order_by(Message.sent_at.desc(), Message.id.desc())
            .limit(1)
        )


def _store(
    room: Mailroom,
    *,
    mailbox_id: str,
    thread: Thread | None,
    direction: str,
    kind: str,
    folder: str,
    from_address: str,
    from_name: str,
    to: list[str],
    cc: list[str],
    subject: str,
    body: str,
    at: dt.datetime,
    in_reply_to: str | None,
    files: list[File],
    is_read: bool,
    draft_id: str | None = None,
    conversation: str | None = None,
) -> Message:
    """Append one message (and its thread when it starts one), sealed by its digest.

    A new thread belongs to ``conversation``, by default the one this message starts.
    """
    message_id = room.new_id(Message.id, "msg", 5)
    if thread is None:
        thread = Thread(
            id=room.new_id(Thread.id, "thr", 4),
            mailbox_id=mailbox_id,
            conversation=conversation or message_id,
            subject=subject[:200],
            message_count=0,
            last_message_at=at,
        )
        room.add(thread)
        room.flush()
    message = Message(
        id=message_id,
        mailbox_id=mailbox_id,
        thread_id=thread.id,
        direction=direction,
        kind=kind,
        folder=folder,
        from_address=from_address,
        from_name=from_name,
        to_addresses=join_addresses(to),
        cc_addresses=join_addresses(cc),
        subject=subject,
        body=body,
        sent_at=at,
        in_reply_to=in_reply_to,
        draft_id=draft_id,
        is_read=is_read,
        is_starred=False,
        digest="",
    )
    message.digest = digest_of(message, files)
    room.add(message)
    room.flush()
    for position, (filename, mime, size) in enumerate(files, start=1):
        room.add(
            Attachment(
                id=room.new_id(Attachment.id, "att", 5),
                message_id=message_id,
                draft_id=None,
                position=position,
                filename=filename,
                mime_type=mime,
                size_bytes=size,
            )
        )
        room.flush()
    thread.message_count += 1
    thread.last_message_at = max(thread.last_message_at, at)
    room.flush()
    return message


def receive(
    room: Mailroom,
    *,
    mailbox: Mailbox,
    thread: Thread | None,
    kind: str,
    from_address: str,
    from_name: str,
    to: list[str],
    cc: list[str],
    subject: str,
    body: str,
    at: dt.datetime,
    in_reply_to: str | None = None,
    files: list[File] = [],  # noqa: B006 - never mutated
    folder: str = "inbox",
    is_read: bool = False,
) -> Message:
    """Mail from outside the company arriving in ``mailbox`` (sampled history only)."""
    return _store(
        room,
        mailbox_id=mailbox.id,
        thread=thread,
        direction="received",
        kind=kind,
        folder=folder,
        from_address=from_address,
        from_name=from_name,
        to=to,
        cc=cc,
        subject=subject,
        body=body,
        at=at,
        in_reply_to=in_reply_to,
        files=files,
        is_read=is_read,
    )


def send(
    room: Mailroom,
    *,
    mailbox: Mailbox,
    thread: Thread | None,
    kind: str,
    to: list[str],
    cc: list[str],
    subject: str,
    body: str,
    at: dt.datetime,
    in_reply_to: str | None = None,
    files: list[File] = [],  # noqa: B006 - never mutated
    draft_id: str | None = None,
    bounced: dict[str, str] | None = None,
) -> tuple[Message, list[Message]]:
    """Send from ``mailbox``: file it in Sent, count it on the contacts it went to (adding
    new ones), and deliver a copy to the inbox of every company mailbox it names.

    ``bounced`` maps the addresses that cannot receive mail to why (:func:`bounce_reason`):
    they are neither counted as contacts nor delivered to, and one bounce
    (:func:`bounce`) lands in the sender's inbox naming them. Without it (the sampled
    history and ``-v0``/``-v1``) every address is taken to exist.

    Returns the sent message and the delivered copies (in address order).
    """
    sent = _store(
        room,
        mailbox_id=mailbox.id,
        thread=thread,
        direction="sent",
        kind=kind,
        folder="sent",
        from_address=mailbox.address,
        from_name=mailbox.owner_name,
        to=to,
        cc=cc,
        subject=subject,
        body=body,
        at=at,
        in_reply_to=in_reply_to,
        files=files,
        is_read=True,
        draft_id=draft_id,
    )
    conversation = room.thread(sent.thread_id).conversation
    copies: list[Message] = []
    seen: set[str] = set()
    for address in [*to, *cc]:
        if address in seen:
            continue
        seen.add(address)
        if bounced and address in bounced:
            continue
        if address != mailbox.address:
            contact = room.contact(mailbox.id, address)
            if contact is None:
                contact = Contact(
                    id=room.new_id(Contact.id, "con", 4),
                    mailbox_id=mailbox.id,
                    name=name_from_address(address),
                    email=address,
                    company=company_from_address(address),
                    times_emailed=0,
                    last_emailed_at=None,
                    created_at=at,
                )
                room.add(contact)
            contact.times_emailed += 1
            last = contact.last_emailed_at
            contact.last_emailed_at = at if last is None else max(last, at)
            room.flush()
        colleague = room.mailbox(address)
        if colleague is None:
            continue
        their = room.conversation(colleague.id, conversation)
        answered = None if their is None else room.latest(their.id, excluding=sent.id)
        copy = _store(
            room,
            mailbox_id=colleague.id,
            thread=their,
            direction="received",
            kind=kind,
            folder="inbox",
            from_address=mailbox.address,
            from_name=mailbox.owner_name,
            to=to,
            cc=cc,
            subject=subject,
            body=body,
            at=at,
            in_reply_to=answered,
            files=files,
            is_read=False,
            conversation=conversation,
        )
        copies.append(copy)
    if bounced:
        reached = any(a not in bounced for a in seen)
        bounce(room, mailbox=mailbox, sent=sent, reasons=bounced, at=at, reached_others=reached)
    return sent, copies


def bounce(
    room: Mailroom,
    *,
    mailbox: Mailbox,
    sent: Message,
    reasons: dict[str, str],
    at: dt.datetime,
    reached_others: bool,
) -> Message:
    """The mailer daemon's report that ``sent`` could not reach the addresses in
    ``reasons``: an unread message in the sender's inbox, in the sent message's thread,
    from ``mailer-daemon@<the sender's domain>``."""
    domain = mailbox.address.rpartition("@")[2]
    return _store(
        room,
        mailbox_id=mailbox.id,
        thread=room.thread(sent.thread_id),
        direction="received",
        kind="reply",
        folder="inbox",
        from_address=f"{MAILER_DAEMON}@{domain}",
        from_name=MAILER_DAEMON_NAME,
        to=[mailbox.address],
        cc=[],
        subject=prefixed("Undeliverable", sent.subject),
        body=bounce_body(sent.subject, reasons, reached_others=reached_others),
        at=at,
        in_reply_to=sent.id,
        files=[],
        is_read=False,
    )
