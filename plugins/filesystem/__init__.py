"""The filesystem server: a shell session over a realistic home directory.

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
    if server.name != "filesystem" or not TASKS_FILE.exists():
        return None
    return load_tasks(TASKS_FILE)
