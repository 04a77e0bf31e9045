"""Lists a tool returns come in their declared order, whatever the garbage collector does."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

import prove_gym


@pytest.fixture
def no_gc() -> Iterator[None]:
    """Reference cycles (event <-> invitee) then outlive the call that loaded them."""
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def test_get_event_lists_invitees_by_email_after_one_is_added(no_gc: None) -> None:
    session = prove_gym.get_server("calendar").session(seed=0)
    event_id = session.list_entities("event")[0]["event_id"]
    assert session.call("add_invitee", {"event_id": event_id, "email": "aaa@example.com"}).ok
    invitees = session.call("get_event", {"event_id": event_id}).content["invitees"]
    emails = [i["email"] for i in invitees]
    assert "aaa@example.com" in emails and emails == sorted(emails)


def test_get_project_lists_members_by_user_id_after_one_is_added(no_gc: None) -> None:
    session = prove_gym.get_server("issue_tracker").session(seed=0)
    members = session.call("get_project", {"project_id": "prj_01"}).content["members"]
    current = {m["user_id"] for m in members}
    users = [u for u in session.list_entities("user") if u["user_id"] not in current]
    added = next(
        u["user_id"]
        for u in users
        if session.call("add_project_member", {"project_id": "prj_01", "user_id": u["user_id"]}).ok
    )
    ids = [
        m["user_id"]
        for m in session.call("get_project", {"project_id": "prj_01"}).content["members"]
    ]
    assert added in ids and ids == sorted(ids)
