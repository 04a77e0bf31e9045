"""Gymnasium ids for servers: ``prove/<server>-v<N>``.

``import prove_gym`` registers ``-v0`` for every entry point of the ``prove_gym``
group *by name*, without importing any plugin (so importing a plugin module
first, or a slow plugin, cannot break or slow the import). When the registry
loads the plugins, every server it finds is registered too, with every later
version it declares (``Server(env_versions=...)``), which covers plugins added
at run time. Name a server's entry point after the server.

Nor does ``import prove_gym`` import Gymnasium (with NumPy, about 0.15 CPU-seconds and
a quarter of a small process's objects), which a process that serves MCP, lists servers
or synthesizes tasks never uses: where Gymnasium is imported already, the ids are
registered at once; else they are kept, and registered the moment Gymnasium's own import
finishes (a one-shot import hook, :class:`_AfterGymnasiumImport`). Either way
``gymnasium.make("prove/calendar-v0")`` finds them, whichever of the two was imported first.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import sys
import threading
import warnings
from collections.abc import Iterable, Mapping, Sequence
from importlib.metadata import entry_points
from types import ModuleType
from typing import TYPE_CHECKING, Any

from prove_gym.registry import ENTRY_POINT_GROUP, on_default_servers

if TYPE_CHECKING:
    from prove_gym.server.base import Server

CHECKER = ("EnvChecker", "prove_gym.env.checker:EnvChecker")
"""The checker every ``prove/`` id is made with, in place of Gymnasium's own (a
``WrapperSpec``'s name and entry point)."""

_Servers = Iterable[str] | Mapping[str, "Server"]


def env_id(server: str, version: int = 0) -> str:
    """The Gymnasium id of a server's env: ``prove/<server>-v<version>``."""
    return f"prove/{server}-v{version}"


def _ids(servers: _Servers) -> list[tuple[str, str, int]]:
    """(id, server, version) for ``-v0`` of each server and every later version a loaded
    :class:`~prove_gym.server.base.Server` declares."""
    found = []
    for name in servers:
        server = servers[name] if isinstance(servers, Mapping) else None
        for version in [0, *(server.env_versions if server is not None else ())]:
            found.append((env_id(name, version), name, version))
    return found


def register_ids(servers: _Servers) -> list[str]:
    """Register ``prove/<name>-v0`` for each server, and every later version a loaded
    :class:`~prove_gym.server.base.Server` declares (idempotent); returns the ids.
    Imports Gymnasium."""
    import gymnasium
    from gymnasium.envs.registration import WrapperSpec

    ids = []
    for eid, name, version in _ids(servers):
        if eid not in gymnasium.registry:
            gymnasium.register(
                id=eid,
                entry_point="prove_gym.env.env:ProveEnv",
                kwargs={"server": name, "env_version": version},
                # Gymnasium's checker, re-armed by a reset that raises (env/checker.py)
                disable_env_checker=True,
                additional_wrappers=(WrapperSpec(*CHECKER, {}),),
            )
        ids.append(eid)
    return ids


_lock = threading.Lock()
_waiting: list[_Servers] = []  # what to register once Gymnasium is imported
_hook: _AfterGymnasiumImport | None = None


def register_when_imported(servers: _Servers) -> list[str]:
    """Register the ids of ``servers`` now if Gymnasium is imported, else as soon as it is;
    returns the ids either way."""
    ids = [eid for eid, _, _ in _ids(servers)]
    with _lock:
        if "gymnasium" not in sys.modules:
            _waiting.append(dict(servers) if isinstance(servers, Mapping) else list(servers))
            _install_hook()
            return ids
    register_ids(servers)
    return ids


def _install_hook() -> None:
    global _hook
    if _hook is None:
        _hook = _AfterGymnasiumImport()
        sys.meta_path.insert(0, _hook)


def _register_waiting() -> None:
    """Register what waited for Gymnasium (called once its import has finished)."""
    with _lock:
        waiting = list(_waiting)
        _waiting.clear()
    for servers in waiting:
        try:
            register_ids(servers)
        except Exception as exc:  # never let a registration break `import gymnasium`
            warnings.warn(f"prove_gym could not register its Gymnasium ids: {exc!r}", stacklevel=2)


class _AfterGymnasiumImport(importlib.abc.MetaPathFinder):
    """A one-shot import hook: finds ``gymnasium`` with the finders after it, and has its
    loader register the waiting ids once the module has run. It leaves ``sys.meta_path``
    as it finds Gymnasium, and the module keeps its own loader."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        global _hook
        if fullname != "gymnasium":
            return None
        with _lock:
            if self in sys.meta_path:
                sys.meta_path.remove(self)
            _hook = None
        spec = importlib.util.find_spec(fullname)
        if spec is not None and spec.loader is not None:
            spec.loader = _ThenRegister(spec.loader)
        return spec


class _ThenRegister(importlib.abc.Loader):
    """Runs a module with its own loader, puts that loader back, then registers."""

    def __init__(self, loader: Any) -> None:
        self.loader = loader

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        created: ModuleType | None = self.loader.create_module(spec)
        return created

    def exec_module(self, module: ModuleType) -> None:
        if module.__spec__ is not None:
            module.__spec__.loader = self.loader
        module.__loader__ = self.loader
        self.loader.exec_module(module)
        _register_waiting()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.loader, name)


def register_entry_point_ids() -> list[str]:
    """Register an id per ``prove_gym`` entry-point name, importing nothing (Gymnasium
    included: see the module's doc)."""
    names = sorted({ep.name for ep in entry_points(group=ENTRY_POINT_GROUP)})
    return register_when_imported([n for n in names if n.isidentifier() and n.lower() == n])


# Later versions, and servers of plugins added at run time, as the process-wide registry loads them.
on_default_servers(register_when_imported)
