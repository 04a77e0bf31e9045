"""The travel_booking server: flights with fares and seat maps, hotels with nightly rates,
travellers, and itineraries that bundle flight and hotel bookings with exact refunds.

Registered through the ``prove_gym`` entry-point group like any third-party plugin; its
hand-written tasks are the server's ``tasks_file``.
"""

from __future__ import annotations

from prove_gym import Server, hookimpl

from .tools import server


@hookimpl
def prove_gym_servers() -> list[Server]:
    return [server]
