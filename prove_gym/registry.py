"""The plugin registry: one pluggy ``PluginManager`` fed by the ``prove_gym`` entry points.

Nothing in the core imports a server by name. Built-in servers live under
``plugins/`` and are announced in ``pyproject.toml`` under
``[project.entry-points.prove_gym]``, exactly like a third-party package.

Plugins load when they are first needed: the registry knows every entry point's name
at once, and imports a plugin the first time its server is asked for by name
(:meth:`Registry.get_server`, :meth:`Registry.tasks`; an entry point is named after its
server). Whatever lists every server, format or component (:attr:`Registry.servers`,
:attr:`Registry.formats`, ...) loads every plugin first, so nothing is ever missed;
a process that plays one server pays for that one.
"""

from __future__ import annotations

import importlib.util
import threading
from collections.abc import Callable, Iterable, Mapping
from importlib.metadata import EntryPoint, entry_points
from typing import TYPE_CHECKING, Any, cast

import pluggy

from prove_gym import hookspecs

if TYPE_CHECKING:
    from prove_gym.formats import ToolCallFormat
    from prove_gym.reward.components import RewardComponent
    from prove_gym.server.base import Server
    from prove_gym.server.tool import ToolSpec
    from prove_gym.task import Task

ENTRY_POINT_GROUP = "prove_gym"
_HOOK_PREFIX = "prove_gym_"


class _BuiltinFormats:
    """The core's own plugin: the built-in tool-call formats, through the hook a third-party
    plugin would use."""

    @hookspecs.hookimpl
    def prove_gym_tool_call_formats(self) -> dict[str, ToolCallFormat]:
        from prove_gym.formats import ChatTemplateFormat, HermesFormat, JsonFormat

        formats: dict[str, ToolCallFormat] = {"hermes": HermesFormat(), "json": JsonFormat()}
        if importlib.util.find_spec("transformers") is not None:
            formats["chat_template"] = ChatTemplateFormat()  # its tokenizer is built on first use
        return formats


class PluginError(Exception):
    """A plugin is broken: a misspelled hook, a duplicate server, format or component name."""


class Registry:
    """Servers, tool-call formats and reward components contributed by every installed plugin.

    Args:
        load_entrypoints: Load the ``prove_gym`` entry-point group (default).
            Tests pass ``False`` to start from the built-in formats only.
    """

    def __init__(self, *, load_entrypoints: bool = True) -> None:
        self.pm = pluggy.PluginManager(ENTRY_POINT_GROUP)
        self.pm.add_hookspecs(hookspecs)
        self._known_hooks = {n for n in dir(hookspecs) if n.startswith(_HOOK_PREFIX)}
        self._servers: dict[str, Server] | None = None
        self._formats: dict[str, ToolCallFormat] | None = None
        self._components: dict[str, RewardComponent] | None = None
        self._tasks: dict[str, list[Task]] = {}
        self._lock = threading.RLock()
        # Bumped by every register(): what callers cached from this registry is stale.
        self.generation = 0
        # Entry points not imported yet, by name (a server's entry point bears its name).
        self._pending: dict[str, EntryPoint] = {}
        # Called with the servers of each plugin as it loads (get_registry registers env ids).
        self.on_servers: list[Any] = []
        self.register(_BuiltinFormats(), name="prove_gym.builtin")
        if load_entrypoints:
            found = entry_points(group=ENTRY_POINT_GROUP)
            for ep in sorted(found, key=lambda e: (e.name, e.value)):
                if ep.name not in self._pending and not self.pm.has_plugin(ep.name):
                    self._pending[ep.name] = ep

    # ------------------------------------------------------ loading plugins
    def _load(self, name: str) -> bool:
        """Import and register the pending entry point ``name``; False if there is none."""
        with self._lock:
            ep = self._pending.pop(name, None)
            if ep is None:
                return False
            if self.pm.is_blocked(ep.name) or self.pm.has_plugin(ep.name):
                return True
            plugin = ep.load()
            self._check_names(plugin)
            before = set(self._loaded_servers())
            self.pm.register(plugin, name=ep.name)
            self.pm.check_pending()
            self._servers = self._formats = self._components = None
            added = {n: s for n, s in self._loaded_servers().items() if n not in before}
        for callback in self.on_servers:
            callback(added)
        return True

    def load_all(self) -> None:
        """Import every installed plugin not loaded yet (in entry-point name order)."""
        with self._lock:
            names = list(self._pending)
        for name in names:
            self._load(name)

    @property
    def server_names(self) -> list[str]:
        """Every installed server's name, sorted, without importing any plugin.

        Taken from the entry-point names (a server's entry point is named after it) and the
        servers of plugins already loaded.
        """
        with self._lock:
            names = set(self._loaded_servers()) | set(self._pending)
        return sorted(names)

    # -------------------------------------------------------------- plugins
    def register(self, plugin: Any, name: str | None = None) -> None:
        """Add a plugin object or module at run time (tests, notebooks)."""
        self._check_names(plugin)
        with self._lock:
            self.pm.register(plugin, name=name)
            self.pm.check_pending()
            self.generation += 1
            self._servers = None
            self._formats = None
            self._components = None
            self._tasks.clear()

    def _check_names(self, plugin: Any) -> None:
        for attr in dir(plugin):
            if attr.startswith(_HOOK_PREFIX) and attr not in self._known_hooks:
                raise PluginError(
                    f"plugin {getattr(plugin, '__name__', plugin)!r} defines {attr!r}, which is "
                    f"not a prove_gym hook (misspelled?). Known hooks: {sorted(self._known_hooks)}"
                )

    def plugin_names(self) -> list[str]:
        """Names of the registered plugins (entry-point names for installed ones)."""
        self.load_all()
        return sorted(n for n, _ in self.pm.list_name_plugin())

    # -------------------------------------------------------------- servers
    @property
    def servers(self) -> dict[str, Server]:
        """All servers by name, sorted by name (every installed plugin is loaded first)."""
        self.load_all()
        return self._loaded_servers()

    def _loaded_servers(self) -> dict[str, Server]:
        """The servers of the plugins loaded so far, sorted by name."""
        with self._lock:
            if self._servers is None:
                found: dict[str, Server] = {}
                owner: dict[str, str] = {}
                for impl in self.pm.hook.prove_gym_servers.get_hookimpls():
                    servers = cast("list[Server] | None", impl.function()) or []
                    for server in servers:
                        if server.name in found:
                            raise PluginError(
                                f"server {server.name!r} is provided by both "
                                f"{owner[server.name]!r} and {impl.plugin_name!r}"
                            )
                        found[server.name] = server
                        owner[server.name] = impl.plugin_name
                self._servers = dict(sorted(found.items()))
            return self._servers

    def get_server(self, name: str) -> Server:
        """The server called ``name``, its plugin loaded if it was not; a ``KeyError`` lists
        the installed ones."""
        found = self._loaded_servers().get(name)
        if found is None and self._load(name):
            found = self._loaded_servers().get(name)
        if found is None:  # an entry point not named after its server: look everywhere
            found = self.servers.get(name)
        if found is None:
            raise KeyError(
                f"no server named {name!r}; installed servers: {', '.join(self.servers)}"
            )
        return found

    def get_tool(self, qualified_name: str, env_version: int = 0) -> ToolSpec:
        """A tool by ``"server.tool"`` name, as env version ``env_version`` of its server
        defines it (:meth:`Server.tools_for <prove_gym.server.base.Server.tools_for>`)."""
        server_name, _, tool_name = qualified_name.partition(".")
        server = self.get_server(server_name)
        found = server.tools_for(env_version).get(tool_name)
        if found is None:
            raise KeyError(f"server {server_name!r} has no tool {tool_name!r}")
        return found

    def tasks(self, server: str, env_version: int = 0) -> list[Task]:
        """Hand-written tasks for ``server``, sorted by id (may be empty).

        The server's own ``tasks_file`` and whatever plugins add through
        ``prove_gym_tasks``. Sorted so that an env drawing a task with its
        seeded RNG draws the same task whatever order the plugins loaded in.
        With ``env_version``, that version's own tasks when it declares a
        ``tasks_file`` (:class:`~prove_gym.server.base.EnvVersion`), else these.
        """
        version = self.get_server(server).env_versions.get(env_version) if env_version else None
        if env_version and version is None:
            raise ValueError(
                f"{server} has no env version {env_version}; its ids: "
                f"{self.get_server(server).env_ids}"
            )
        if version is not None and version.tasks_file is not None:
            from prove_gym.task import load_tasks

            key = f"{server}-v{env_version}"
            with self._lock:
                if key not in self._tasks:
                    self._tasks[key] = sorted(load_tasks(version.tasks_file), key=lambda t: t.id)
                return self._tasks[key]
        with self._lock:
            if server not in self._tasks:
                srv = self.get_server(server)
                results = self.pm.hook.prove_gym_tasks(server=srv)
                tasks = [t for group in results if group for t in group]
                if srv.tasks_file is not None:
                    from prove_gym.task import load_tasks

                    tasks += load_tasks(srv.tasks_file)
                self._tasks[server] = sorted(tasks, key=lambda t: t.id)
            return self._tasks[server]

    # ------------------------------------------- formats, reward components
    @property
    def formats(self) -> dict[str, ToolCallFormat]:
        """Every tool-call format by name (see ``prove_gym_tool_call_formats``)."""
        self.load_all()
        return self._loaded_formats()

    def _loaded_formats(self) -> dict[str, ToolCallFormat]:
        with self._lock:
            if self._formats is None:
                merged = _merge("tool-call format", self.pm.hook.prove_gym_tool_call_formats())
                self._formats = dict(sorted(merged.items()))
            return self._formats

    def get_format(self, name: str) -> ToolCallFormat:
        """The tool-call format called ``name``; a ``KeyError`` lists the registered ones."""
        found = self._loaded_formats().get(name)  # the built-in ones need no plugin loaded
        if found is not None:
            return found
        try:
            return self.formats[name]
        except KeyError:
            hint = (
                " (chat_template renders with a model's own tokenizer: it needs transformers, "
                'which pip install "prove-gym[trl]" brings)'
                if name == "chat_template"
                else ""
            )
            raise KeyError(
                f"no tool-call format named {name!r}; registered: {', '.join(self.formats)}{hint}"
            ) from None

    @property
    def reward_components(self) -> dict[str, RewardComponent]:
        """Reward components plugins make available, by name (none is active by default)."""
        self.load_all()
        with self._lock:
            if self._components is None:
                found: dict[str, RewardComponent] = {}
                for group in self.pm.hook.prove_gym_reward_components():
                    for component in group or []:
                        if component.name in found:
                            raise PluginError(
                                f"two plugins provide the reward component {component.name!r}"
                            )
                        found[component.name] = component
                self._components = dict(sorted(found.items()))
            return self._components

    def reward_component(self, name: str) -> RewardComponent:
        """A plugin's reward component by name; a ``KeyError`` lists the available ones."""
        try:
            return self.reward_components[name]
        except KeyError:
            raise KeyError(
                f"no reward component named {name!r}; available: "
                f"{', '.join(self.reward_components) or '(none)'}"
            ) from None


def _merge(what: str, groups: Iterable[dict[str, Any] | None]) -> dict[str, Any]:
    merged: dict[str, Any] = {}
    for group in groups:
        for name, value in (group or {}).items():
            if name in merged:
                raise PluginError(f"two plugins provide the {what} {name!r}")
            merged[name] = value
    return merged


_default: Registry | None = None
_default_lock = threading.Lock()
_server_listeners: list[Callable[[Mapping[str, Server]], object]] = []


def on_default_servers(listener: Callable[[Mapping[str, Server]], object]) -> None:
    """Call ``listener`` with the servers of every plugin the process-wide registry loads.

    How a higher layer follows the plugins without the registry importing it: the env
    registers its Gymnasium ids this way (``prove_gym.env.registration``). A listener added
    after the registry exists is called at once with the servers loaded so far.
    """
    with _default_lock:
        _server_listeners.append(listener)
        if _default is not None:
            listener(_default._loaded_servers())
            _default.on_servers.append(listener)


def get_registry() -> Registry:
    """The process-wide registry, loaded from entry points on first use."""
    global _default
    with _default_lock:
        if _default is None:
            _default = Registry()
            for listener in _server_listeners:
                listener(_default._loaded_servers())
                _default.on_servers.append(listener)  # each plugin's servers as it loads
        return _default


def get_server(name: str) -> Server:
    """Shortcut for ``get_registry().get_server(name)``."""
    return get_registry().get_server(name)
