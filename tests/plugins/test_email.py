"""The email server: append-only mail and its counts under random call sequences, delivery
between colleagues, one test per domain rule, its tasks, and the conformance suite."""

from __future__ import annotations

import datetime as dt
import json
import random
import re
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule
from prove_plugins.email.models import (
    MAX_ATTACHMENT_BYTES,
    MAX_ATTACHMENTS,
    MAX_LABELS,
    MAX_RECIPIENTS,
    bounce_reason,
    message_digest,
    split_addresses,
)
from prove_plugins.email.tools import SUBJECTS
from pydantic import TypeAdapter

import prove_gym
from prove_gym import ErrorKind, Session
from prove_gym.server import Bound, zones
from prove_gym.testing.conformance import conformance_suite
from prove_gym.testing.sql import count, one, rows

EMAIL = prove_gym.get_server("email")
SEEDS = [0, 7, 11]


# ------------------------------------------------------------ the invariants
def mail_violations(session: Session) -> list[str]:
    """Every broken email rule, read straight from SQLite (see plugins/email/models.py)."""
    broken: list[str] = []

    def check(what: str, sql: str, *params: Any) -> None:
        found = rows(session, sql, *params)
        if found:
            broken.append(f"{what}: {found[:5]}")

    check(
        "a message is in a thread of another mailbox",
        """SELECT m.id FROM messages m JOIN threads t ON t.id = m.thread_id
           WHERE m.mailbox_id != t.mailbox_id""",
    )
    check(
        "a thread's message_count or last_message_at disagrees with its messages",
        """SELECT t.id, t.message_count, COUNT(m.id), t.last_message_at, MAX(m.sent_at)
           FROM threads t LEFT JOIN messages m ON m.thread_id = t.id GROUP BY t.id
           HAVING t.message_count != COUNT(m.id) OR t.last_message_at != MAX(m.sent_at)""",
    )
    check(
        "a message answers a message of another thread",
        """SELECT m.id FROM messages m JOIN messages p ON p.id = m.in_reply_to
           WHERE p.thread_id != m.thread_id""",
    )
    check(
        "sent mail outside Sent, or received mail in Sent, or an unknown folder",
        """SELECT id, direction, folder FROM messages
           WHERE (direction = 'sent') != (folder = 'sent')
              OR folder NOT IN ('inbox', 'archive', 'sent', 'trash', 'spam')""",
    )
    check(
        "an attachment on both or neither of a message and a draft, or too many or too big",
        """SELECT id FROM attachments WHERE (message_id IS NULL) = (draft_id IS NULL)
           UNION ALL SELECT COALESCE(message_id, draft_id) FROM attachments
           GROUP BY message_id, draft_id HAVING COUNT(*) > ? OR SUM(size_bytes) > ?""",
        MAX_ATTACHMENTS,
        MAX_ATTACHMENT_BYTES,
    )
    check(
        "a sent draft that names no message sent from it, or an unsent one that does",
        """SELECT d.id FROM drafts d LEFT JOIN messages m ON m.id = d.sent_message_id
           WHERE d.status NOT IN ('draft', 'sent')
              OR (d.status = 'sent') != (m.id IS NOT NULL)
              OR (m.id IS NOT NULL AND (m.draft_id != d.id OR m.direction != 'sent'))""",
    )
    check(
        "a label on a message of another mailbox",
        """SELECT ml.message_id, ml.label_id FROM message_labels ml
           JOIN messages m ON m.id = ml.message_id JOIN labels l ON l.id = ml.label_id
           WHERE m.mailbox_id != l.mailbox_id""",
    )
    check(
        "two labels of a mailbox share a name, or a mailbox has too many",
        """SELECT mailbox_id, LOWER(name) FROM labels GROUP BY mailbox_id, LOWER(name)
           HAVING COUNT(*) > 1
           UNION ALL SELECT mailbox_id, COUNT(*) FROM labels GROUP BY mailbox_id
           HAVING COUNT(*) > ?""",
        MAX_LABELS,
    )
    files: dict[str, list[tuple[str, str, int]]] = {}
    for mid, name, mime, size in rows(
        session,
        """SELECT message_id, filename, mime_type, size_bytes FROM attachments
           WHERE message_id IS NOT NULL ORDER BY message_id, position, id""",
    ):
        files.setdefault(mid, []).append((name, mime, size))

    bounced = bounces_in(session)
    if session.env_version < 2 and bounced:
        broken.append(f"bounces before prove/email-v2: {sorted(bounced)[:5]}")
    sent: list[tuple[str, str, str, str, str, str]] = []
    for r in rows(
        session,
        """SELECT id, mailbox_id, thread_id, direction, from_address, to_addresses,
                  cc_addresses, subject, body, sent_at, in_reply_to, digest
           FROM messages ORDER BY id""",
    ):
        expected = message_digest(
            mailbox_id=r[1],
            thread_id=r[2],
            direction=r[3],
            from_address=r[4],
            to=r[5],
            cc=r[6],
            subject=r[7],
            body=r[8],
            sent_at=dt.datetime.fromisoformat(r[9]),
            in_reply_to=r[10],
            files=files.get(r[0], []),
        )
        if expected != r[11]:
            broken.append(f"message {r[0]}'s sealed content changed")
        if r[3] == "sent":
            sent.append((r[0], r[1], r[2], r[5], r[6], r[9]))
    # contacts count the sent mail addressed to them
    emailed: dict[tuple[str, str], int] = {}
    for mid, mailbox, _, to, cc, _ in sent:
        own = one(session, "SELECT address FROM mailboxes WHERE id = ?", mailbox)
        for a in set(split_addresses(to) + split_addresses(cc)) - {own} - bounced.get(mid, set()):
            emailed[(mailbox, a)] = emailed.get((mailbox, a), 0) + 1
    have = {
        (m, e): n
        for m, e, n in rows(session, "SELECT mailbox_id, email, times_emailed FROM contacts")
    }
    for key, n in sorted(emailed.items()):
        if have.get(key) != n:
            broken.append(f"contact {key} times_emailed {have.get(key)} != {n} sent")
    for key, n in sorted(have.items()):
        if n and key not in emailed:
            broken.append(f"contact {key} counts {n} messages never sent")
    # mail to a colleague lands once in their inbox side of the same conversation
    mailboxes = dict(rows(session, "SELECT address, id FROM mailboxes"))
    for mid, _, thread, to, cc, at in sent:
        conversation = one(session, "SELECT conversation FROM threads WHERE id = ?", thread)
        for a in sorted(set(split_addresses(to) + split_addresses(cc))):
            if a not in mailboxes:
                continue
            copies = count(
                session,
                """SELECT COUNT(*) FROM messages m JOIN threads t ON t.id = m.thread_id
                   WHERE m.mailbox_id = ? AND m.direction = 'received' AND m.sent_at = ?
                     AND t.conversation = ? AND m.subject = (SELECT subject FROM messages
                     WHERE id = ?)""",
                mailboxes[a],
                at,
                conversation,
                mid,
            )
            if copies != 1:
                broken.append(f"{mid} to colleague {a}: {copies} delivered copies")
    for did, to, cc in rows(session, "SELECT id, to_addresses, cc_addresses FROM drafts"):
        if len(split_addresses(to)) + len(split_addresses(cc)) > MAX_RECIPIENTS:
            broken.append(f"draft {did} has too many recipients")
    if session.env_version >= 2:
        broken += bounce_violations(session, bounced)
    zoned = rows(session, "SELECT mailbox_id, time_zone FROM mailbox_settings ORDER BY 1")
    if session.env_version < 3 and zoned:
        broken.append(f"time zones set before prove/email-v3: {zoned[:5]}")
    if any(zones.like(name) != name for _, name in zoned):
        broken.append(f"a time zone that is no IANA zone of the pinned data: {zoned[:5]}")
    return broken


BOUNCED_LINE = re.compile(r"^(\S+@\S+): 550 5\.1\.[123] ", re.MULTILINE)


def bounces_in(session: Session) -> dict[str, set[str]]:
    """The addresses each sent message bounced from, read from the bounces' text."""
    out: dict[str, set[str]] = {}
    for answered, body in rows(
        session,
        """SELECT in_reply_to, body FROM messages WHERE direction = 'received'
           AND from_address LIKE 'mailer-daemon@%' ORDER BY id""",
    ):
        out.setdefault(answered, set()).update(BOUNCED_LINE.findall(body))
    return out


def bounce_violations(session: Session, bounced: dict[str, set[str]]) -> list[str]:
    """prove/email-v2's delivery rule, checked from the tables: each message sent in the
    session bounced from exactly the addresses the rule says cannot receive mail, once, in
    its own thread and mailbox, and none of them became a contact."""
    broken: list[str] = []
    boxes = {a for (a,) in rows(session, "SELECT address FROM mailboxes")}
    domains = {a.rpartition("@")[2] for a in boxes}
    known = boxes | {a for (a,) in rows(session, "SELECT email FROM contacts")}
    known |= {a for (a,) in rows(session, "SELECT from_address FROM messages")}
    for mid, mailbox, thread, to, cc in rows(
        session,
        """SELECT id, mailbox_id, thread_id, to_addresses, cc_addresses FROM messages
           WHERE direction = 'sent' AND draft_id IS NOT NULL ORDER BY id""",
    ):
        addresses = set(split_addresses(to) + split_addresses(cc))
        expected = {
            a
            for a in addresses
            if bounce_reason(a, company_domains=domains, exists=a in known) is not None
        }
        if bounced.get(mid, set()) != expected:
            broken.append(f"{mid} bounced from {bounced.get(mid)}, the rule says {expected}")
        where = rows(
            session,
            """SELECT mailbox_id, thread_id FROM messages WHERE in_reply_to = ?
               AND from_address LIKE 'mailer-daemon@%'""",
            mid,
        )
        if len(where) != (1 if expected else 0) or any(w != (mailbox, thread) for w in where):
            broken.append(f"{mid}: bounces {where}, expected one in {mailbox}/{thread}")
        contacts = {
            e for (e,) in rows(session, "SELECT email FROM contacts WHERE mailbox_id = ?", mailbox)
        }
        if expected & contacts:
            broken.append(f"{mid}: bounced addresses became contacts: {expected & contacts}")
    return broken


# ------------------------------------------------------------ fixtures
@pytest.fixture
def mail() -> Iterator[Session]:
    session = EMAIL.session(seed=0)
    yield session
    session.close()


def call_ok(session: Session, name: str, args: dict[str, Any]) -> Any:
    result = session.call(name, args)
    assert result.ok, f"{name}({args}): {result.message}"
    return result.content


def refused(
    session: Session, name: str, args: dict[str, Any], rule: str, kind: ErrorKind | None = None
) -> str:
    """Call, expect a refusal naming ``rule`` that changes nothing; returns the message."""
    before = session.state_hash()
    result = session.call(name, args)
    assert not result.ok, (name, args, result.content)
    assert result.error_kind == (kind or ErrorKind.PRECONDITION_FAILED), (
        result.error_kind,
        result.message,
    )
    assert rule in (result.message or ""), result.message
    assert session.state_hash() == before, f"refused {name} changed the state"
    return result.message or ""


def inbox_message(session: Session, mailbox: str = "mbx_01") -> str:
    """A received message from outside the company, in the inbox."""
    return one(
        session,
        """SELECT m.id FROM messages m JOIN mailboxes b ON b.id = m.mailbox_id
           WHERE m.mailbox_id = ? AND m.folder = 'inbox' AND m.direction = 'received'
             AND m.from_address NOT LIKE '%' || substr(b.address, instr(b.address, '@'))
             AND m.id NOT IN (SELECT in_reply_to FROM drafts WHERE in_reply_to IS NOT NULL)
           ORDER BY m.id""",
        mailbox,
    )


def address_of(session: Session, mailbox: str) -> str:
    return one(session, "SELECT address FROM mailboxes WHERE id = ?", mailbox)


def new_draft(session: Session, **extra: Any) -> str:
    args = {
        "mailbox_id": "mbx_01",
        "to": ["ana.silva@example.com"],
        "subject": "Hello",
        "body": "Hi Ana.",
        **extra,
    }
    return call_ok(session, "create_draft", args)["draft_id"]


# ------------------------------------------------------------ sampled states
@pytest.mark.parametrize("seed", SEEDS)
def test_a_sampled_company_is_big_enough_and_keeps_every_rule(seed: int) -> None:
    with EMAIL.session(seed=seed) as session:
        assert count(session, "SELECT COUNT(*) FROM mailboxes") == 5
        assert count(session, "SELECT COUNT(*) FROM messages") >= 250
        assert count(session, "SELECT COUNT(*) FROM threads") >= 100
        assert count(session, "SELECT COUNT(*) FROM contacts") >= 60
        assert count(session, "SELECT COUNT(*) FROM drafts WHERE status = 'draft'") >= 10
        assert count(session, "SELECT COUNT(*) FROM attachments") >= 20
        folders = {f for (f,) in rows(session, "SELECT DISTINCT folder FROM messages")}
        assert {"inbox", "archive", "sent", "spam"} <= folders
        internal = count(
            session,
            """SELECT COUNT(*) FROM messages m JOIN mailboxes b ON b.address = m.from_address
               WHERE m.direction = 'received'""",
        )
        assert internal > 0, "no mail between colleagues"
        assert mail_violations(session) == []


def test_larger_sizes_scale_and_stay_consistent() -> None:
    with EMAIL.session(seed=3, size=2) as session:
        assert count(session, "SELECT COUNT(*) FROM mailboxes") == 10
        assert mail_violations(session) == []


# ------------------------------------------------------------ drafts and sending
def test_a_reply_joins_the_thread_and_sending_seals_it(mail: Session) -> None:
    msg = inbox_message(mail)
    thread, sender, subject = rows(
        mail, "SELECT thread_id, from_address, subject FROM messages WHERE id = ?", msg
    )[0]
    size = count(mail, "SELECT message_count FROM threads WHERE id = ?", thread)
    draft = call_ok(mail, "reply_to_message", {"message_id": msg, "body": "Thanks, noted."})
    assert draft["thread_id"] == thread and draft["to"] == [sender]
    assert draft["subject"].startswith("Re: ") and not draft["subject"].startswith("Re: Re:")
    assert "drf" in draft["draft_id"] and draft["ready_to_send"]
    sent = call_ok(mail, "send_draft", {"draft_id": draft["draft_id"]})
    assert sent["thread_id"] == thread and sent["folder"] == "sent"
    assert count(mail, "SELECT message_count FROM threads WHERE id = ?", thread) == size + 1
    got = call_ok(mail, "get_message", {"message_id": sent["message_id"]})
    assert got["in_reply_to"] == msg and got["body"] == "Thanks, noted."
    assert subject in got["subject"]
    assert call_ok(mail, "list_drafts", {"mailbox_id": "mbx_01"})["drafts"] == [
        d
        for d in call_ok(mail, "list_drafts", {"mailbox_id": "mbx_01"})["drafts"]
        if d["draft_id"] != draft["draft_id"]
    ]
    assert mail_violations(mail) == []


def test_what_was_sent_is_final(mail: Session) -> None:
    draft = new_draft(mail)
    sent = call_ok(mail, "send_draft", {"draft_id": draft})
    for name, args in [
        ("update_draft", {"draft_id": draft, "body": "changed"}),
        ("delete_draft", {"draft_id": draft}),
        ("add_attachment", {"draft_id": draft, "filename": "a.pdf", "size_kb": 10}),
        ("send_draft", {"draft_id": draft}),
    ]:
        message = refused(mail, name, args, "sent_is_final")
        assert sent["message_id"] in message
    refused(
        mail,
        "move_message",
        {"message_id": sent["message_id"], "folder": "trash"},
        "sent_stays_in_sent",
    )
    # filing a sent message by label or star is allowed and leaves its content sealed
    label = one(mail, "SELECT id FROM labels WHERE mailbox_id = 'mbx_01' ORDER BY id")
    call_ok(mail, "label_message", {"message_id": sent["message_id"], "label_id": label})
    call_ok(mail, "mark_messages", {"message_ids": [sent["message_id"]], "flag": "starred"})
    assert mail_violations(mail) == []


def test_a_draft_needs_a_recipient_and_a_subject_to_be_sent(mail: Session) -> None:
    nobody = new_draft(mail, to=[])
    refused(mail, "send_draft", {"draft_id": nobody}, "no_recipients")
    listed = call_ok(mail, "list_drafts", {"mailbox_id": "mbx_01"})["drafts"]
    assert [d["ready_to_send"] for d in listed if d["draft_id"] == nobody] == [False]
    blank = new_draft(mail, subject="   ")
    refused(mail, "send_draft", {"draft_id": blank}, "missing_subject")
    call_ok(mail, "update_draft", {"draft_id": blank, "subject": "Now titled"})
    call_ok(mail, "send_draft", {"draft_id": blank})
    result = mail.call("update_draft", {"draft_id": nobody})
    assert result.error_kind == ErrorKind.BAD_ARGUMENTS


def test_recipients_are_capped_and_cleaned(mail: Session) -> None:
    many = [f"p{i}@example.com" for i in range(30)]
    more = [f"q{i}@example.com" for i in range(25)]
    draft = new_draft(mail, to=many)
    refused(mail, "update_draft", {"draft_id": draft, "cc": more}, "too_many_recipients")
    result = mail.call(
        "create_draft", {"mailbox_id": "mbx_01", "to": many + more, "subject": "x", "body": "y"}
    )
    assert result.error_kind == ErrorKind.BAD_ARGUMENTS


@settings(max_examples=15, deadline=None)
@given(
    to=st.lists(st.sampled_from(["Ana@X.com", "ana@x.com ", "bo@y.org", "CY@z.net"]), max_size=4),
    cc=st.lists(st.sampled_from(["ana@x.com", "bo@y.org", "di@w.io"]), max_size=3),
)
def test_addresses_are_lower_cased_once_and_never_both_to_and_cc(
    to: list[str], cc: list[str]
) -> None:
    with EMAIL.session(seed=0) as session:
        draft = call_ok(
            session,
            "create_draft",
            {"mailbox_id": "mbx_02", "to": to, "cc": cc, "subject": "s", "body": "b"},
        )
        assert draft["to"] == list(dict.fromkeys(a.strip().lower() for a in to))
        assert not set(draft["to"]) & set(draft["cc"])
        assert len(draft["cc"]) == len(set(draft["cc"]))
        assert all(a == a.lower() for a in draft["to"] + draft["cc"])


def test_attachments_are_limited_in_type_number_and_size(mail: Session) -> None:
    draft = new_draft(mail)
    refused(
        mail,
        "add_attachment",
        {"draft_id": draft, "filename": "setup.EXE", "size_kb": 5},
        "blocked_file_type",
    )
    done = call_ok(
        mail, "add_attachment", {"draft_id": draft, "filename": "Plan.pdf", "size_kb": 20000}
    )
    assert done["files"][0]["mime_type"] == "application/pdf"
    refused(
        mail,
        "add_attachment",
        {"draft_id": draft, "filename": "Big.zip", "size_kb": 6000},
        "attachment_limit",
    )
    small = new_draft(mail)
    for i in range(MAX_ATTACHMENTS):
        call_ok(mail, "add_attachment", {"draft_id": small, "filename": f"f{i}.txt", "size_kb": 1})
    refused(
        mail,
        "add_attachment",
        {"draft_id": small, "filename": "one_more.txt", "size_kb": 1},
        "attachment_limit",
    )
    sent = call_ok(mail, "send_draft", {"draft_id": small})
    assert sent["attachments"] == MAX_ATTACHMENTS
    assert mail_violations(mail) == []


def test_spam_and_trash_cannot_be_answered_until_moved_back(mail: Session) -> None:
    spam = one(mail, "SELECT id FROM messages WHERE folder = 'spam' ORDER BY id")
    refused(mail, "reply_to_message", {"message_id": spam, "body": "Hi"}, "quarantined_message")
    refused(
        mail,
        "forward_message",
        {"message_id": spam, "to": ["it@example.com"]},
        "quarantined_message",
    )
    moved = call_ok(mail, "move_message", {"message_id": spam, "folder": "inbox"})
    assert moved == {**moved, "from_folder": "spam", "folder": "inbox", "changed": True}
    call_ok(mail, "reply_to_message", {"message_id": spam, "body": "Hi"})
    msg = inbox_message(mail, "mbx_02")
    call_ok(mail, "move_message", {"message_id": msg, "folder": "trash"})
    refused(mail, "reply_to_message", {"message_id": msg, "body": "Hi"}, "quarantined_message")


def test_a_message_has_at_most_one_unsent_reply_draft(mail: Session) -> None:
    msg = inbox_message(mail)
    first = call_ok(mail, "reply_to_message", {"message_id": msg, "body": "One"})
    message = refused(
        mail, "reply_to_message", {"message_id": msg, "body": "Two"}, "reply_draft_exists"
    )
    assert first["draft_id"] in message
    call_ok(mail, "delete_draft", {"draft_id": first["draft_id"]})
    call_ok(mail, "reply_to_message", {"message_id": msg, "body": "Two"})


def test_reply_all_copies_everyone_but_yourself(mail: Session) -> None:
    msg = one(
        mail,
        """SELECT id FROM messages WHERE direction = 'received' AND cc_addresses != ''
             AND folder IN ('inbox', 'archive') ORDER BY id""",
    )
    frm, to, cc, box = rows(
        mail,
        "SELECT from_address, to_addresses, cc_addresses, mailbox_id FROM messages WHERE id = ?",
        msg,
    )[0]
    own = address_of(mail, box)
    draft = call_ok(mail, "reply_to_message", {"message_id": msg, "body": "All", "reply_all": True})
    assert draft["to"] == [frm]
    expected = [a for a in split_addresses(to) + split_addresses(cc) if a not in (own, frm)]
    assert draft["cc"] == list(dict.fromkeys(expected))


def test_mail_to_a_colleague_lands_in_their_inbox_and_the_answer_comes_back(
    mail: Session,
) -> None:
    colleague = address_of(mail, "mbx_02")
    draft = new_draft(mail, to=[colleague], subject="Room booking")
    sent = call_ok(mail, "send_draft", {"draft_id": draft})
    assert sent["delivered_to"] == ["mbx_02"]
    copy = one(
        mail,
        "SELECT id FROM messages WHERE mailbox_id = 'mbx_02' AND subject = 'Room booking'",
    )
    got = call_ok(mail, "get_message", {"message_id": copy})
    assert got["folder"] == "inbox" and not got["is_read"]
    reply = call_ok(mail, "reply_to_message", {"message_id": copy, "body": "Booked."})
    back = call_ok(mail, "send_draft", {"draft_id": reply["draft_id"]})
    assert back["delivered_to"] == ["mbx_01"]
    thread = call_ok(mail, "get_thread", {"thread_id": sent["thread_id"]})
    assert [m["subject"] for m in thread["messages"]] == ["Room booking", "Re: Room booking"]
    assert thread["message_count"] == 2 and thread["unread"] == 1
    assert mail_violations(mail) == []


def test_forwards_quote_the_original_and_carry_its_files_on_request(mail: Session) -> None:
    msg = one(
        mail,
        """SELECT m.id FROM messages m JOIN attachments a ON a.message_id = m.id
           WHERE m.folder IN ('inbox', 'archive', 'sent') ORDER BY m.id""",
    )
    files = count(mail, "SELECT COUNT(*) FROM attachments WHERE message_id = ?", msg)
    fwd = call_ok(
        mail, "forward_message", {"message_id": msg, "to": ["Li@Example.com"], "note": "FYI"}
    )
    assert fwd["subject"].startswith("Fwd: ") and fwd["to"] == ["li@example.com"]
    assert fwd["body"].startswith("FYI") and "Forwarded message" in fwd["body"]
    assert len(fwd["files"]) == files and fwd["kind"] == "forward"
    bare = call_ok(
        mail,
        "forward_message",
        {"message_id": msg, "to": ["li@example.com"], "include_attachments": False},
    )
    assert bare["files"] == []
    sent = call_ok(mail, "send_draft", {"draft_id": fwd["draft_id"]})
    assert sent["new_contacts"] == ["li@example.com"]
    box = one(mail, "SELECT mailbox_id FROM messages WHERE id = ?", msg)
    contacts = call_ok(mail, "list_contacts", {"mailbox_id": box, "query": "li@example"})
    assert [c["times_emailed"] for c in contacts["contacts"]] == [1]
    assert mail_violations(mail) == []


def test_labels_keep_to_their_mailbox_and_their_names_unique(mail: Session) -> None:
    existing = one(mail, "SELECT name FROM labels WHERE mailbox_id = 'mbx_01' ORDER BY id")
    refused(
        mail,
        "create_label",
        {"mailbox_id": "mbx_01", "name": existing.upper()},
        "label_name_taken",
        ErrorKind.CONFLICT,
    )
    refused(mail, "create_label", {"mailbox_id": "mbx_01", "name": "Spam"}, "reserved_label_name")
    made = call_ok(mail, "create_label", {"mailbox_id": "mbx_01", "name": " Board  prep "})
    assert made["name"] == "Board prep"
    other = inbox_message(mail, "mbx_02")
    refused(
        mail,
        "label_message",
        {"message_id": other, "label_id": made["label_id"]},
        "label_other_mailbox",
    )
    refused(
        mail,
        "search_messages",
        {"mailbox_id": "mbx_02", "label_id": made["label_id"]},
        "label_other_mailbox",
    )
    mine = inbox_message(mail)
    on = call_ok(mail, "label_message", {"message_id": mine, "label_id": made["label_id"]})
    assert on["changed"] and "Board prep" in on["labels"]
    again = call_ok(mail, "label_message", {"message_id": mine, "label_id": made["label_id"]})
    assert not again["changed"]
    found = call_ok(mail, "search_messages", {"mailbox_id": "mbx_01", "label_id": made["label_id"]})
    assert [m["message_id"] for m in found["messages"]] == [mine]
    off = call_ok(
        mail, "label_message", {"message_id": mine, "label_id": made["label_id"], "remove": True}
    )
    assert off["changed"] and "Board prep" not in off["labels"]
    have = count(mail, "SELECT COUNT(*) FROM labels WHERE mailbox_id = 'mbx_01'")
    for i in range(MAX_LABELS - have):
        call_ok(mail, "create_label", {"mailbox_id": "mbx_01", "name": f"Extra {i}"})
    refused(mail, "create_label", {"mailbox_id": "mbx_01", "name": "One more"}, "label_limit")


def test_flags_change_only_what_they_name_and_count_changes(mail: Session) -> None:
    unread = [
        i
        for (i,) in rows(
            mail,
            "SELECT id FROM messages WHERE is_read = 0 AND mailbox_id = 'mbx_01' "
            "ORDER BY id LIMIT 2",
        )
    ]
    done = call_ok(mail, "mark_messages", {"message_ids": unread + unread[:1], "flag": "read"})
    assert done["changed"] == len(unread) and len(done["messages"]) == len(unread)
    again = call_ok(mail, "mark_messages", {"message_ids": unread, "flag": "read"})
    assert again["changed"] == 0
    box = call_ok(mail, "list_mailboxes", {"query": "mbx_01"})[0]
    assert sum(f["unread"] for f in box["folders"]) == count(
        mail, "SELECT COUNT(*) FROM messages WHERE mailbox_id = 'mbx_01' AND is_read = 0"
    )


def test_search_is_ordered_newest_first_and_skips_spam_and_trash(mail: Session) -> None:
    found = call_ok(mail, "search_messages", {"mailbox_id": "mbx_01", "limit": 50})
    keys = [(m["sent_at"], m["message_id"]) for m in found["messages"]]
    assert keys == sorted(keys, reverse=True)
    assert {m["folder"] for m in found["messages"]} <= {"inbox", "archive", "sent"}
    assert found["total"] == count(
        mail,
        "SELECT COUNT(*) FROM messages WHERE mailbox_id = 'mbx_01' "
        "AND folder NOT IN ('spam', 'trash')",
    )


# ------------------------------------------------------------ random sequences
class EmailRules(RuleBasedStateMachine):
    """Plausible mail calls; the rules hold after every one, a failed call or a read changes
    nothing, and no message that existed before ever changes what it says."""

    session: Session

    @initialize(seed=st.sampled_from(SEEDS))
    def start(self, seed: int) -> None:
        self.session = EMAIL.session(seed=seed)
        self.hash = self.session.state_hash()
        self.sealed = dict(rows(self.session, "SELECT id, digest FROM messages"))

    def _ids(self, sql: str) -> list[str]:
        return [i for (i,) in rows(self.session, sql)]

    def _call(self, name: str, args: dict[str, Any]) -> Any:
        result = self.session.call(name, args)
        assert result.error_kind != ErrorKind.INTERNAL, result.message
        after = self.session.state_hash()
        if not result.ok or not EMAIL.tools[name].writes:
            assert after == self.hash, f"{name}({args}) changed state: {result.message}"
        self.hash = after
        return result

    @rule(data=st.data(), reply_all=st.booleans())
    def reply(self, data: st.DataObject, reply_all: bool) -> None:
        msg = data.draw(st.sampled_from(self._ids("SELECT id FROM messages ORDER BY id")))
        self._call("reply_to_message", {"message_id": msg, "body": "Ok", "reply_all": reply_all})

    @rule(data=st.data())
    def forward(self, data: st.DataObject) -> None:
        msg = data.draw(st.sampled_from(self._ids("SELECT id FROM messages ORDER BY id")))
        to = data.draw(
            st.sampled_from(
                [*self._ids("SELECT address FROM mailboxes ORDER BY id"), "x@example.com"]
            )
        )
        self._call("forward_message", {"message_id": msg, "to": [to]})

    @rule(data=st.data())
    def send(self, data: st.DataObject) -> None:
        draft = data.draw(st.sampled_from(self._ids("SELECT id FROM drafts ORDER BY id")))
        self._call("send_draft", {"draft_id": draft})

    @rule(data=st.data())
    def edit(self, data: st.DataObject) -> None:
        draft = data.draw(st.sampled_from(self._ids("SELECT id FROM drafts ORDER BY id")))
        change = data.draw(
            st.sampled_from(
                [{"body": "New"}, {"to": []}, {"subject": ""}, {"cc": ["cc@example.com"]}]
            )
        )
        self._call("update_draft", {"draft_id": draft, **change})

    @rule(data=st.data(), size=st.sampled_from([1, 9000, 20000]))
    def attach(self, data: st.DataObject, size: int) -> None:
        draft = data.draw(st.sampled_from(self._ids("SELECT id FROM drafts ORDER BY id")))
        self._call("add_attachment", {"draft_id": draft, "filename": "x.pdf", "size_kb": size})

    @rule(data=st.data(), folder=st.sampled_from(["inbox", "archive", "trash", "spam"]))
    def move(self, data: st.DataObject, folder: str) -> None:
        msg = data.draw(st.sampled_from(self._ids("SELECT id FROM messages ORDER BY id")))
        self._call("move_message", {"message_id": msg, "folder": folder})

    @rule(data=st.data(), remove=st.booleans())
    def label(self, data: st.DataObject, remove: bool) -> None:
        msg = data.draw(st.sampled_from(self._ids("SELECT id FROM messages ORDER BY id")))
        label = data.draw(st.sampled_from(self._ids("SELECT id FROM labels ORDER BY id")))
        self._call("label_message", {"message_id": msg, "label_id": label, "remove": remove})

    @rule(data=st.data())
    def delete(self, data: st.DataObject) -> None:
        draft = data.draw(st.sampled_from(self._ids("SELECT id FROM drafts ORDER BY id")))
        self._call("delete_draft", {"draft_id": draft})

    @invariant()
    def the_mail_rules_hold(self) -> None:
        if hasattr(self, "session"):
            assert mail_violations(self.session) == []
            now = dict(rows(self.session, "SELECT id, digest FROM messages"))
            assert {k: now.get(k) for k in self.sealed} == self.sealed, "mail was changed"

    def teardown(self) -> None:
        if hasattr(self, "session"):
            self.session.close()


TestEmailRules = EmailRules.TestCase
TestEmailRules.settings = settings(
    max_examples=8,
    stateful_step_count=12,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)


# ------------------------------------------------------------ conformance
FUZZ_SAMPLES = [
    "mbx_01",
    "mbx_99",
    "msg_00001",
    "msg_99999",
    "thr_0001",
    "thr_9999",
    "drf_0001",
    "drf_9999",
    "lbl_001",
    "lbl_999",
    "att_00001",
    "ana.garcia@example.com",
    "not-an-address",
    "inbox",
    "spam",
    "sent",
    "read",
    "starred",
    "Spam",
    "Board prep",
    "report.pdf",
    "setup.exe",
    "Re: Q3 budget review",
]

TestConformance = conformance_suite("email", samples=FUZZ_SAMPLES, invariants=mail_violations)


# ------------------------------------------------------------ declarations
def test_entity_sources_list_entities_that_exist(mail: Session) -> None:
    tables = {
        "mailbox": ("mailboxes", "id"),
        "contact": ("contacts", "email"),
        "message": ("messages", "id"),
        "thread": ("threads", "id"),
        "draft": ("drafts", "id"),
        "label": ("labels", "id"),
        "attachment": ("attachments", "id"),
    }
    assert set(EMAIL.entities) == set(tables)
    for kind, source in EMAIL.entities.items():
        records = mail.list_entities(kind)
        table, column = tables[kind]
        assert records, kind
        ids = {i for (i,) in rows(mail, f"SELECT {column} FROM {table}")}
        assert {r[source.key] for r in records} <= ids, kind
    sent = {i for (i,) in rows(mail, "SELECT id FROM drafts WHERE status = 'sent'")}
    assert not sent & {r["draft_id"] for r in mail.list_entities("draft")}


def test_example_values_fit_their_parameters(mail: Session) -> None:
    ctx = mail.context()
    rng = random.Random(0)
    for tool in EMAIL.visible_tools():
        fields = tool.args_model.model_fields
        for name, source in tool.examples.items():
            drawn = [source(ctx, rng) for _ in range(5)] if callable(source) else list(source)
            annotation = fields[name].annotation
            assert annotation is not None, (tool.name, name)
            for value in drawn:
                TypeAdapter(annotation).validate_python(value)
        for name, made in tool.values.items():  # a value source of a plain value, too
            if name in tool.entity_params:
                continue
            annotation = fields[name].annotation
            assert annotation is not None, (tool.name, name)
            made_any = False
            for subject in (None, *SUBJECTS):
                drawn_args = {"subject": subject} if subject else {}
                # a received message from outside the company (a folder source files it)
                drawn_args["message_id"] = "msg_00008"
                value = made(ctx, rng, Bound(drawn_args))
                if value is None:  # nothing fits this draw: synthesis draws another
                    continue
                made_any = True
                TypeAdapter(annotation).validate_python(value)
            assert made_any, (tool.name, name)
        free = [p.name for p in tool.params if p.required and p.entity is None]
        literal = {n for n in free if "enum" in tool.input_schema()["properties"][n]}
        assert set(free) - literal <= set(tool.examples) | set(tool.values), tool.name


def test_the_server_offers_seventeen_tools_and_names_its_rules() -> None:
    assert len(EMAIL.visible_tools()) == 17
    writes = {t.name for t in EMAIL.visible_tools() if t.writes}
    assert writes == {
        "create_draft",
        "update_draft",
        "add_attachment",
        "reply_to_message",
        "forward_message",
        "send_draft",
        "delete_draft",
        "move_message",
        "mark_messages",
        "create_label",
        "label_message",
    }
    assert {t.name for t in EMAIL.visible_tools() if t.destructive} == {"delete_draft"}


# ------------------------------------------------------------------- tasks
def test_hand_written_tasks_cover_chains_turns_clarify_and_abstain() -> None:
    tasks = [
        t for t in prove_gym.get_registry().tasks("email") if re.fullmatch(r"email-\d{3}", t.id)
    ]
    assert 3 <= len(tasks) <= 8
    kinds = {turn.kind for t in tasks for turn in t.turns}
    assert {"normal", "clarify", "abstain"} <= kinds
    assert any(len(t.turns) > 1 and t.steps for t in tasks)
    assert any(any(s.depends_on for s in t.steps) for t in tasks)


def test_shipped_tasks_are_sorted_unique_and_many() -> None:
    tasks = prove_gym.get_registry().tasks("email")
    ids = [t.id for t in tasks]
    assert len(ids) == len(set(ids)) >= 200
    lines = EMAIL.tasks_file.read_text().splitlines() if EMAIL.tasks_file else []
    assert [json.loads(line)["id"] for line in lines] == sorted(ids)
    assert all(json.loads(line)["servers"] == ["email"] for line in lines)


def test_v1_reads_and_sends_only_as_the_mailbox_owner() -> None:
    """prove/email-v1 acts for one mailbox's owner (issue #50: read and send as any mailbox)."""
    email = prove_gym.get_server("email")
    with email.session(seed=0) as plain:
        message, theirs = rows(plain, "SELECT id, mailbox_id FROM messages ORDER BY id")[0]
        mine = one(plain, "SELECT id FROM mailboxes WHERE id != ? ORDER BY id", theirs)
    with email.session(seed=0, env_version=1, principal=mine) as s:
        before = s.state_hash()
        read = s.call("get_message", {"message_id": message})
        assert read.error_kind == ErrorKind.PERMISSION_DENIED
        assert f"message '{message}' is another mailbox's; you act for mailbox '{mine}'" in (
            read.message or ""
        )
        assert theirs not in (read.message or "")  # whose it is is not told
        sent = s.call(
            "create_draft",
            {"mailbox_id": theirs, "to": ["a@example.com"], "subject": "Hi", "body": "Hello"},
        )
        assert sent.error_kind == ErrorKind.PERMISSION_DENIED
        assert (sent.message or "").startswith(
            f"Rule 'not_your_mailbox' failed: mailbox '{theirs}' is not yours"
        )
        assert s.state_hash() == before
        own = {"mailbox_id": mine, "to": ["a@example.com"], "subject": "Hi", "body": "Hello"}
        assert s.call("create_draft", own).ok


# ------------------------------------------------------------ prove/email-v2
def _send(session: Session, mailbox: str, to: list[str], cc: list[str] = []) -> dict[str, Any]:  # noqa: B006
    draft = call_ok(
        session,
        "create_draft",
        {"mailbox_id": mailbox, "to": to, "cc": cc, "subject": "Quarterly plan", "body": "Hi."},
    )["draft_id"]
    return call_ok(session, "send_draft", {"draft_id": draft})


def _bounces(session: Session, sent: str) -> list[tuple[str, str, str, str, str, bool]]:
    return rows(
        session,
        """SELECT mailbox_id, thread_id, folder, from_address, body, is_read FROM messages
           WHERE in_reply_to = ? AND direction = 'received' ORDER BY id""",
        sent,
    )


def test_v2_bounces_mail_to_an_address_that_does_not_exist() -> None:
    """Issue #50: mail to a nonexistent address was 'sent' with no bounce and the address
    became a contact. From -v2 the sender gets a bounce naming it and why; -v1 keeps its
    meaning (delivered to nobody, counted as a contact)."""
    with EMAIL.session(seed=0) as plain:
        mine, colleague = (
            a for (a,) in rows(plain, "SELECT address FROM mailboxes ORDER BY id")[:2]
        )
    domain = mine.rpartition("@")[2]
    typo = f"no.such.person@{domain}"
    to = [typo, colleague]
    cc = ["bo@example.org", "li.wei@northwind-traders.com"]
    with EMAIL.session(seed=0, env_version=1, principal="mbx_01") as v1:
        sent = _send(v1, "mbx_01", to, cc)
        assert {typo, "bo@example.org"} <= set(sent["new_contacts"])
        assert _bounces(v1, sent["message_id"]) == []
        assert count(v1, "SELECT COUNT(*) FROM contacts WHERE email = ?", typo) == 1
    with EMAIL.session(seed=0, env_version=2, principal="mbx_01") as v2:
        sent = _send(v2, "mbx_01", to, cc)
        assert sent["delivered_to"] == ["mbx_02"]  # the colleague still gets it
        assert typo not in sent["new_contacts"] and "bo@example.org" not in sent["new_contacts"]
        assert cc[1] in sent["new_contacts"]
        ((box, thread, folder, sender, body, is_read),) = _bounces(v2, sent["message_id"])
        assert (box, thread, folder, is_read) == ("mbx_01", sent["thread_id"], "inbox", False)
        assert sender == f"mailer-daemon@{domain}"
        assert f"{typo}: 550 5.1.1 <{typo}>: no such mailbox at {domain}" in body
        assert "bo@example.org: 550 5.1.2" in body and "reserved" in body
        assert colleague not in body and cc[1] not in body
        assert "It reached everyone else" in body
        for gone in (typo, "bo@example.org"):
            assert count(v2, "SELECT COUNT(*) FROM contacts WHERE email = ?", gone) == 0
        found = call_ok(v2, "search_messages", {"mailbox_id": "mbx_01", "query": "Undeliverable"})
        assert [m["subject"] for m in found["messages"]] == ["Undeliverable: Quarterly plan"]
        assert mail_violations(v2) == []


def test_v2_a_message_nobody_could_receive_still_is_sent_and_bounces_once() -> None:
    with EMAIL.session(seed=7, env_version=2, principal="mbx_02") as s:
        sent = _send(s, "mbx_02", ["ana@acme.invalid", "x@bad_domain.com"], ["y@mail.test"])
        assert sent["folder"] == "sent" and sent["delivered_to"] == sent["new_contacts"] == []
        ((*_, body, _),) = _bounces(s, sent["message_id"])
        assert body.count(": 550 5.1.2 ") == 3 and "reached everyone else" not in body
        assert mail_violations(s) == []


def test_v2_an_address_the_state_knows_is_delivered_even_at_the_company_domain() -> None:
    """The rule's first clause: a contact or a correspondent exists, whatever its domain (the
    sampler draws outside companies whose domain can be the company's own)."""
    with EMAIL.session(seed=0, env_version=2, principal="mbx_01") as s:
        known = one(s, "SELECT email FROM contacts WHERE mailbox_id = 'mbx_01' ORDER BY id")
        sender = one(
            s,
            """SELECT from_address FROM messages WHERE mailbox_id = 'mbx_03'
               AND direction = 'received' ORDER BY id""",
        )
        sent = _send(s, "mbx_01", [known, sender])
        assert _bounces(s, sent["message_id"]) == []


LOCAL = st.from_regex(r"[a-z][a-z0-9._-]{0,20}", fullmatch=True)
DOMAIN = st.sampled_from(
    [
        "{company}",
        "example.com",
        "mail.example.net",
        "acme.test",
        "northwind-traders.com",
        "globex.io",
        "bad_domain.com",
        "-dash.com",
        "x.c0m",
        "localhost.localhost",
    ]
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(local=LOCAL, domain=DOMAIN, as_cc=st.booleans())
def test_v2_bounces_exactly_what_the_rule_says_for_any_address(
    local: str, domain: str, as_cc: bool
) -> None:
    with EMAIL.session(seed=11, env_version=2, principal="mbx_01") as s:
        boxes = [a for (a,) in rows(s, "SELECT address FROM mailboxes ORDER BY id")]
        company = boxes[0].rpartition("@")[2]
        address = f"{local}@{domain.format(company=company)}"
        known = address in boxes or count(
            s, "SELECT COUNT(*) FROM contacts WHERE email = ?", address
        ) + count(s, "SELECT COUNT(*) FROM messages WHERE from_address = ?", address)
        why = bounce_reason(address, company_domains={company}, exists=bool(known))
        before = s.state_hash()
        draft = s.call(
            "create_draft",
            {
                "mailbox_id": "mbx_01",
                "to": [boxes[1]] if as_cc else [address],
                "cc": [address] if as_cc else [],
                "subject": "Hello",
                "body": "Hi.",
            },
        )
        if not draft.ok:  # the schema refused the address: nothing was written
            assert draft.error_kind == ErrorKind.BAD_ARGUMENTS and s.state_hash() == before
            return
        sent = call_ok(s, "send_draft", {"draft_id": draft.content["draft_id"]})
        bounced = _bounces(s, sent["message_id"])
        if why is None:
            assert bounced == []
        else:
            assert len(bounced) == 1 and f"{address}: {why}" in bounced[0][4]
            assert address not in sent["new_contacts"]
        assert mail_violations(s) == []


@given(
    address=st.emails(),
    company=st.sampled_from(["acme.com", "globex.io"]),
    exists=st.booleans(),
)
@settings(max_examples=200, deadline=None)
def test_the_delivery_rule_is_total_and_names_its_reason(
    address: str, company: str, exists: bool
) -> None:
    why = bounce_reason(address.casefold(), company_domains={company}, exists=exists)
    assert why == bounce_reason(address.casefold(), company_domains={company}, exists=exists)
    if exists:
        assert why is None
    elif address.casefold().endswith("@" + company):
        assert why is not None and why.startswith("550 5.1.1 ")
    if why is not None:
        assert why.startswith("550 5.1.") and f"<{address.casefold()}>" in why
    if address.casefold().rpartition("@")[2] in ("example.com", "example.org", "a.invalid"):
        assert exists or why is not None


def test_v2_list_mailboxes_shows_colleagues_as_the_directory_does() -> None:
    """The open remainder of issue #50 item 1: email-v1 acts for one mailbox's owner, but
    list_mailboxes still showed every mailbox's folder counts, drafts and labels."""
    with EMAIL.session(seed=0, env_version=1, principal="mbx_01") as v1:
        before = call_ok(v1, "list_mailboxes", {})
        assert all("labels" in mb for mb in before)  # -v1 keeps its meaning
    with EMAIL.session(seed=0, env_version=2, principal="mbx_01") as v2:
        listed = call_ok(v2, "list_mailboxes", {})
        assert [mb["mailbox_id"] for mb in listed] == [mb["mailbox_id"] for mb in before]
        own, *others = listed
        assert own == before[0] and own["mailbox_id"] == "mbx_01"
        for mb in others:
            assert set(mb) == {"mailbox_id", "address", "owner_name", "title"}
        name = others[0]["owner_name"].split()[-1]
        found = call_ok(v2, "list_mailboxes", {"query": name})
        assert others[0] in found and all("labels" not in mb for mb in found if mb != own)


# ------------------------------------------------------------ prove/email-v3
ZONES = sorted(zones._names().values())


def _zoned(seed: int, mailbox: str, zone: str | None) -> Session:
    """A -v3 session acting for ``mailbox``, its owner in ``zone`` (None: never set)."""
    session = EMAIL.session(seed=seed, env_version=3, principal=mailbox)
    if zone is not None:
        call_ok(session, "set_time_zone", {"mailbox_id": mailbox, "time_zone": zone})
    return session


def _instant(shown: str) -> dt.datetime:
    """A time a -v3 tool shows, as a UTC moment (it must carry its offset)."""
    when = dt.datetime.fromisoformat(shown)
    assert when.tzinfo is not None, shown
    return when.astimezone(dt.UTC)


def _stored(value: str) -> dt.datetime:
    return dt.datetime.fromisoformat(value).replace(tzinfo=dt.UTC)


def test_v3_shows_one_message_in_each_owners_zone_with_its_offset() -> None:
    """Issue #50 item 2: email had no time zones. A message mbx_01 sent to a colleague is
    one moment; from -v3 its sender in New York and its recipient in Tokyo each see it in
    their own zone with the offset, and -v2 still shows the stored time bare."""
    with EMAIL.session(seed=0) as plain:
        sent, received, stored = rows(
            plain,
            """SELECT s.id, r.id, s.sent_at FROM messages s JOIN messages r
               ON r.from_address = s.from_address AND r.sent_at = s.sent_at
               AND r.subject = s.subject AND r.direction = 'received'
               WHERE s.mailbox_id = 'mbx_01' AND s.direction = 'sent'
               AND r.mailbox_id = 'mbx_02' ORDER BY s.id""",
        )[0]
    at = _stored(stored)
    bare = at.replace(tzinfo=None).isoformat(timespec="minutes")
    with EMAIL.session(seed=0, env_version=2, principal="mbx_01") as v2:
        assert call_ok(v2, "get_message", {"message_id": sent})["sent_at"] == bare
    with _zoned(0, "mbx_01", None) as utc:
        assert call_ok(utc, "get_message", {"message_id": sent})["sent_at"] == bare + "+00:00"
    with _zoned(0, "mbx_01", "America/New_York") as ny, _zoned(0, "mbx_02", "Asia/Tokyo") as tk:
        theirs = call_ok(ny, "get_message", {"message_id": sent})["sent_at"]
        mine = call_ok(tk, "get_message", {"message_id": received})["sent_at"]
        assert theirs.endswith("-05:00") and mine.endswith("+09:00")
        assert theirs != mine and _instant(theirs) == _instant(mine) == at
        thread = call_ok(
            tk,
            "get_thread",
            {"thread_id": one(tk, "SELECT thread_id FROM messages WHERE id = ?", received)},
        )
        assert _instant(thread["last_message_at"]) == _stored(
            one(tk, "SELECT last_message_at FROM threads WHERE id = ?", thread["thread_id"])
        )
        assert all(m["sent_at"].endswith("+09:00") for m in thread["messages"])
        contacts = call_ok(ny, "list_contacts", {"mailbox_id": "mbx_01", "limit": 100})
        assert any(c["last_emailed_at"] for c in contacts["contacts"])
        for c in contacts["contacts"]:
            assert c["last_emailed_at"] is None or c["last_emailed_at"][-6:] in ("-05:00", "-04:00")
        assert mail_violations(ny) == mail_violations(tk) == []


def test_v3_every_time_written_is_shown_in_the_owners_zone() -> None:
    """A draft's updated_at, a sent message's sent_at and a forward's quoted Date: the
    state's now (UTC) in Berlin, at +01:00 in March."""
    with _zoned(0, "mbx_01", "Europe/Berlin") as s:
        now = s.context().now.replace(tzinfo=dt.UTC)
        local = now.astimezone(zones.zone("Europe/Berlin")).isoformat(timespec="minutes")
        draft = call_ok(
            s,
            "create_draft",
            {"mailbox_id": "mbx_01", "to": ["li.wei@northwind.com"], "subject": "Hi", "body": "."},
        )
        assert draft["updated_at"] == local and local.endswith("+01:00")
        assert (
            call_ok(s, "list_drafts", {"mailbox_id": "mbx_01"})["drafts"][0]["updated_at"] == local
        )
        assert call_ok(s, "send_draft", {"draft_id": draft["draft_id"]})["sent_at"] == local
        message = inbox_message(s)
        stored = one(s, "SELECT sent_at FROM messages WHERE id = ?", message)
        forward = call_ok(s, "forward_message", {"message_id": message, "to": ["a@b.com"]})
        shown = (
            _stored(stored).astimezone(zones.zone("Europe/Berlin")).isoformat(timespec="minutes")
        )
        assert f"\nDate: {shown}\n" in forward["body"]
        # stored times stay UTC
        assert one(s, "SELECT sent_at FROM messages WHERE draft_id = ?", draft["draft_id"]) == (
            now.replace(tzinfo=None).isoformat(sep=" ", timespec="microseconds")
        )


def _local_day(session: Session, mailbox: str, tz: str, day: dt.date) -> list[str]:
    """The ids of the mailbox's messages outside Trash and Spam sent on ``day`` in ``tz``,
    newest first, worked out from the stored UTC times here, not by the server."""
    zone = zones.zone(tz)
    found = [
        (at, mid)
        for mid, at in rows(
            session,
            """SELECT id, sent_at FROM messages WHERE mailbox_id = ?
               AND folder NOT IN ('trash', 'spam')""",
            mailbox,
        )
        if _stored(at).astimezone(zone).date() == day
    ]
    return [mid for _, mid in sorted(found, reverse=True)]


def _day_search(session: Session, mailbox: str, day: dt.date) -> list[str]:
    found = call_ok(
        session,
        "search_messages",
        {
            "mailbox_id": mailbox,
            "after": day.isoformat(),
            "before": (day + dt.timedelta(days=1)).isoformat(),
            "limit": 50,
        },
    )
    assert found["total"] == len(found["messages"])
    return [m["message_id"] for m in found["messages"]]


def test_v3_a_search_by_date_finds_the_owners_local_day() -> None:
    """A message sent late in the UTC evening is the next day in Tokyo: searching Tokyo's
    day finds it, searching the UTC day there does not, and the UTC owner finds it on the
    UTC day."""
    with _zoned(0, "mbx_01", "Asia/Tokyo") as tokyo, _zoned(0, "mbx_01", None) as utc:
        mid, at = rows(
            tokyo,
            """SELECT id, sent_at FROM messages WHERE mailbox_id = 'mbx_01'
               AND folder NOT IN ('trash', 'spam') AND time(sent_at) >= '15:00' ORDER BY id""",
        )[0]
        day = _stored(at).date()
        assert mid in _day_search(tokyo, "mbx_01", day + dt.timedelta(days=1))
        assert mid not in _day_search(tokyo, "mbx_01", day)
        assert mid in _day_search(utc, "mbx_01", day)
        for d in (day, day + dt.timedelta(days=1)):
            assert _day_search(tokyo, "mbx_01", d) == _local_day(tokyo, "mbx_01", "Asia/Tokyo", d)
            assert _day_search(utc, "mbx_01", d) == _local_day(utc, "mbx_01", "UTC", d)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(zone=st.sampled_from(ZONES), days=st.integers(min_value=0, max_value=44))
def test_v3_a_day_search_holds_exactly_the_local_day_in_any_zone(zone: str, days: int) -> None:
    with _zoned(11, "mbx_01", zone) as s:
        day = dt.date(2026, 3, 10) + dt.timedelta(days=days)
        assert _day_search(s, "mbx_01", day) == _local_day(s, "mbx_01", zone, day)


def test_v3_the_day_the_clocks_go_forward_is_23_hours_and_its_skipped_hour_is_refused() -> None:
    """Berlin's 2026-03-29 runs from 23:00 UTC the day before to 22:00 UTC; times before
    the change show +01:00, after it +02:00; 02:30 that morning does not exist, and 02:30 on
    2026-10-25 happens twice: both are refused by their rules, an offset says which."""
    with _zoned(11, "mbx_01", "Europe/Berlin") as s:
        day = dt.date(2026, 3, 29)
        found = _day_search(s, "mbx_01", day)
        assert found == _local_day(s, "mbx_01", "Europe/Berlin", day)
        lo, hi = "2026-03-28 23:00", "2026-03-29 22:00"
        assert len(found) == count(
            s,
            """SELECT COUNT(*) FROM messages WHERE mailbox_id = 'mbx_01' AND sent_at >= ?
               AND sent_at < ? AND folder NOT IN ('trash', 'spam')""",
            lo,
            hi,
        )
        shown = call_ok(
            s,
            "search_messages",
            {"mailbox_id": "mbx_01", "after": "2026-03-20", "before": "2026-04-08", "limit": 50},
        )["messages"]
        for m in shown:
            summer = _instant(m["sent_at"]) >= dt.datetime(2026, 3, 29, 1, tzinfo=dt.UTC)
            assert m["sent_at"].endswith("+02:00" if summer else "+01:00"), m["sent_at"]
        assert {m["sent_at"][-6:] for m in shown} == {"+01:00", "+02:00"}
        before = s.state_hash()
        for bound, rule in (
            ("2026-03-29T02:30", "nonexistent_local_time"),
            ("2026-10-25T02:30", "ambiguous_local_time"),
        ):
            for name in ("after", "before"):
                refused(s, "search_messages", {"mailbox_id": "mbx_01", name: bound}, rule)
        assert s.state_hash() == before
        for offset in ("+02:00", "+01:00"):
            call_ok(
                s, "search_messages", {"mailbox_id": "mbx_01", "after": f"2026-10-25T02:30{offset}"}
            )
        after = call_ok(
            s, "search_messages", {"mailbox_id": "mbx_01", "after": "2026-03-29T03:00", "limit": 50}
        )
        assert all(
            _instant(m["sent_at"]) >= dt.datetime(2026, 3, 29, 1, tzinfo=dt.UTC)
            for m in after["messages"]
        )


def test_v3_bounds_must_be_in_order_and_well_formed() -> None:
    with _zoned(0, "mbx_01", None) as s:
        for args in (
            {"after": "2026-03-02", "before": "2026-03-02"},
            {"after": "2026-03-03", "before": "2026-03-02T23:59"},
            {"after": "yesterday"},
            {"before": "2026/03/01"},
            {"after": "0001-01-01"},
            {"before": "9999-12-31T23:59+14:00"},
        ):
            result = s.call("search_messages", {"mailbox_id": "mbx_01", **args})
            assert result.error_kind == ErrorKind.BAD_ARGUMENTS, args
        assert call_ok(s, "search_messages", {"mailbox_id": "mbx_01", "after": "2026-03-02T10:00Z"})


def test_v3_set_time_zone_takes_an_iana_name_and_says_what_changed() -> None:
    with _zoned(0, "mbx_01", None) as s:
        zone = call_ok(s, "get_time_zone", {"mailbox_id": "mbx_01"})
        now = s.context().now
        assert zone == {
            "mailbox_id": "mbx_01",
            "time_zone": "UTC",
            "is_default": True,
            "utc_offset": "+00:00",
            "now": now.isoformat(timespec="minutes") + "+00:00",
        }
        before = s.state_hash()
        wrong = s.call("set_time_zone", {"mailbox_id": "mbx_01", "time_zone": "america/new_york"})
        assert wrong.error_kind == ErrorKind.BAD_ARGUMENTS
        assert "Did you mean 'America/New_York'?" in (wrong.message or "")
        assert s.state_hash() == before
        first = call_ok(s, "set_time_zone", {"mailbox_id": "mbx_01", "time_zone": " Asia/Kolkata "})
        assert (first["time_zone"], first["previous"], first["changed"]) == (
            "Asia/Kolkata",
            "UTC",
            True,
        )
        assert first["utc_offset"] == "+05:30" and not first["is_default"]
        changed = s.state_hash()
        again = call_ok(s, "set_time_zone", {"mailbox_id": "mbx_01", "time_zone": "Asia/Kolkata"})
        assert not again["changed"] and s.state_hash() == changed
        assert call_ok(s, "get_time_zone", {"mailbox_id": "mbx_01"}) == {
            k: v for k, v in again.items() if k not in ("previous", "changed")
        }
        moved = call_ok(s, "set_time_zone", {"mailbox_id": "mbx_01", "time_zone": "Europe/Paris"})
        assert (moved["previous"], moved["utc_offset"], moved["changed"]) == (
            "Asia/Kolkata",
            "+01:00",
            True,
        )
        assert rows(s, "SELECT mailbox_id, time_zone FROM mailbox_settings") == [
            ("mbx_01", "Europe/Paris")
        ]
        other = s.call("set_time_zone", {"mailbox_id": "mbx_02", "time_zone": "UTC"})
        assert other.error_kind == ErrorKind.PERMISSION_DENIED
        assert "not_your_mailbox" in (other.message or "")


HOSTILE_ZONES = st.one_of(
    st.sampled_from(ZONES),
    st.sampled_from(ZONES).map(str.swapcase),
    st.sampled_from(["../../etc/passwd", "/etc/localtime", "Europe/../UTC", "UTC\x00", "", " "]),
    st.text(max_size=100),
    st.text(alphabet="Aa/_-+0.9", max_size=70),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(name=HOSTILE_ZONES)
def test_v3_any_zone_text_is_a_zone_of_the_pinned_data_or_bad_arguments(name: str) -> None:
    with _zoned(7, "mbx_02", None) as s:
        before = s.state_hash()
        result = s.call("set_time_zone", {"mailbox_id": "mbx_02", "time_zone": name})
        if name.strip() in ZONES and len(name) <= 64:
            assert result.ok and result.content["time_zone"] == name.strip()
        else:
            assert result.error_kind == ErrorKind.BAD_ARGUMENTS, (name, result.message)
            assert s.state_hash() == before
            assert len(result.message or "") < 600
        assert mail_violations(s) == []


def test_v3_adds_two_tools_and_search_bounds_only_from_its_version() -> None:
    assert [t.name for t in EMAIL.visible_tools(3)][-2:] == ["get_time_zone", "set_time_zone"]
    assert len(EMAIL.visible_tools(3)) == 19
    for version in (0, 1, 2):
        names = {t.name for t in EMAIL.visible_tools(version)}
        assert not names & {"get_time_zone", "set_time_zone"}, version
        search = EMAIL.tools_for(version)["search_messages"]
        assert "after" not in search.input_schema()["properties"], version
    search = EMAIL.tools_for(3)["search_messages"]
    assert {"after", "before"} <= set(search.input_schema()["properties"])
    texts = EMAIL.env_versions[3].instructions + EMAIL.env_versions[3].changes
    for named in ("nonexistent_local_time", "ambiguous_local_time"):
        assert named in texts and named in search.description
    assert "UTC" in EMAIL.env_versions[3].instructions
