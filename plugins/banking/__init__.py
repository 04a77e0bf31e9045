"""The banking server: customers, accounts, balances, transfers, payees, scheduled payments, cards.

Registered through the ``prove_gym`` entry-point group like any third-party plugin.
"""

from __future__ import annotations

from pathlib import Path

from prove_gym import Server, Task, hookimpl, load_tasks

from .tools import server

TASKS_FILE = Path(__file__).with_name("tasks.jsonl")


@hookimpl
def prove_gym_servers() -> list[Server]:
    return [server]


@hookimpl
def prove_gym_tasks(server: Server) -> list[Task] | None:
    if server.name != "banking":
        return None
    return load_tasks(TASKS_FILE) if TASKS_FILE.exists() else []
