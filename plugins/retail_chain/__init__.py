"""The retail_chain server: a chain's stores, products, per-store inventory, transfers between
stores, restock orders and store-scoped sales, every action scoped by the employee's location.

Registered through the ``prove_gym`` entry-point group like any third-party plugin; its
hand-written tasks are the server's ``tasks_file``.
"""

from __future__ import annotations

from prove_gym import Server, hookimpl

from .tools import server


@hookimpl
def prove_gym_servers() -> list[Server]:
    return [server]
