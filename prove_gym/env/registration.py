"""Gymnasium ids for servers: ``prove/<server>-v0``.

``import prove_gym`` registers an id for every entry point of the ``prove_gym``
group *by name*, without importing any plugin (so importing a plugin module
first, or a slow plugin, cannot break or slow the import). When the registry
loads the plugins, every server it finds is registered too, which covers
plugins added at run time. Name a server's entry point after the server.
"""

from __future__ import annotations

from collections.abc import Iterable
from importlib.metadata import entry_points

from prove_gym.registry import ENTRY_POINT_GROUP


def env_id(server: str, version: int = 0) -> str:
    """The Gymnasium id of a server's env: ``prove/<server>-v<version>``."""
    return f"prove/{server}-v{version}"


def register_ids(servers: Iterable[str]) -> list[str]:
    """Register ``prove/<name>-v0`` for each server name (idempotent); returns the ids."""
    import gymnasium

    ids = []
    for name in servers:
        eid = env_id(name)
        if eid not in gymnasium.registry:
            gymnasium.register(
                id=eid, entry_point="prove_gym.env.env:ProveEnv", kwargs={"server": name}
            )
        ids.append(eid)
    return ids


def register_entry_point_ids() -> list[str]:
    """Register an id per ``prove_gym`` entry-point name, importing nothing."""
    names = sorted({ep.name for ep in entry_points(group=ENTRY_POINT_GROUP)})
    return register_ids(n for n in names if n.isidentifier() and n.lower() == n)
