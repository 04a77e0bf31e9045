"""The shopping server: a catalog with variants and stock, carts, coupons, checkout, orders,
returns and refunds.

Registered through the ``prove_gym`` entry-point group like any third-party plugin; its
hand-written and synthesized tasks are the server's ``tasks_file``.
"""

from __future__ import annotations

from prove_gym import Server, hookimpl

from .tools import server


@hookimpl
def prove_gym_servers() -> list[Server]:
    return [server]
