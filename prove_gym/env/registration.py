"""Gymnasium ids for servers: ``prove/<server>-v<N>``.

``import prove_gym`` registers ``-v0`` for every entry point of the ``prove_gym``
group *by name*, without importing any plugin (so importing a plugin module
first, or a slow plugin, cannot break or slow the import). When the registry
loads the plugins, every server it finds is registered too, with every later
version it declares (``Server(env_versions=...)``), which covers plugins added
at run time. Name a server's entry point after the server.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from importlib.metadata import entry_points
from typing import TYPE_CHECKING

from gymnasium.envs.registration import WrapperSpec

from prove_gym.registry import ENTRY_POINT_GROUP, on_default_servers

if TYPE_CHECKING:
    from prove_gym.server.base import Server


CHECKER = WrapperSpec("EnvChecker", "prove_gym.env.checker:EnvChecker", {})
"""The checker every ``prove/`` id is made with (in place of Gymnasium's own)."""


def env_id(server: str, version: int = 0) -> str:
    """The Gymnasium id of a server's env: ``prove/<server>-v<version>``."""
    return f"prove/{server}-v{version}"


def register_ids(servers: Iterable[str] | Mapping[str, Server]) -> list[str]:
    """Register ``prove/<name>-v0`` for each server, and every later version a loaded
    :class:`~prove_gym.server.base.Server` declares (idempotent); returns the ids."""
    import gymnasium

    ids = []
    for name in servers:
        server = servers[name] if isinstance(servers, Mapping) else None
        versions = [0, *(server.env_versions if server is not None else ())]
        for version in versions:
            eid = env_id(name, version)
            if eid not in gymnasium.registry:
                gymnasium.register(
                    id=eid,
                    entry_point="prove_gym.env.env:ProveEnv",
                    kwargs={"server": name, "env_version": version},
                    # Gymnasium's checker, re-armed by a reset that raises (env/checker.py)
                    disable_env_checker=True,
                    additional_wrappers=(CHECKER,),
                )
            ids.append(eid)
    return ids


def register_entry_point_ids() -> list[str]:
    """Register an id per ``prove_gym`` entry-point name, importing nothing."""
    names = sorted({ep.name for ep in entry_points(group=ENTRY_POINT_GROUP)})
    return register_ids(n for n in names if n.isidentifier() and n.lower() == n)


# Later versions, and servers of plugins added at run time, as the process-wide registry loads them.
on_default_servers(register_ids)
