"""What is installed, without loading it: every server's name, version and tools, cached.

Listing the servers (``prove-gym list``) needs each server's tools, so it would import every
plugin (about 1.3 CPU-seconds for twenty). :func:`server_catalog` keeps what the listing
shows in a small JSON file keyed by a fingerprint of everything it depends on, so a process
that only lists pays for a look at file metadata instead:

- every entry point of the ``prove_gym`` group (name, value, distribution and version);
- the size and modification time of every file of each plugin's package, and of prove_gym's
  own modules (an edit anywhere changes the key; so does installing or removing a plugin);
- the Python version.

A miss (or ``cache=False``) loads the registry and writes the file atomically, then removes
the stale catalogs of this same installation (its file name starts with a digest of where
prove_gym and the interpreter live), never another checkout's or virtual environment's that
shares the folder. The cache lives in ``$PROVE_GYM_CACHE_DIR``, else ``$XDG_CACHE_HOME/prove_gym``, else
``~/.cache/prove_gym``; where it cannot be written, nothing is cached and nothing fails.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import sys
import tempfile
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

from prove_gym.registry import ENTRY_POINT_GROUP, Registry, get_registry

SCHEMA = 1
"""Bumped when the cached rows change shape."""

_SUFFIXES = (".py", ".json", ".jsonl", ".toml")


def cache_dir() -> Path:
    """Where prove_gym keeps what it caches on disk."""
    explicit = os.environ.get("PROVE_GYM_CACHE_DIR")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(Path.home(), ".cache")
    return Path(base) / "prove_gym"


def _tree(root: Path, digest: Any) -> None:
    """Feed the name, size and modification time of every source file under ``root``."""
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__" and not d.startswith("."))
        for name in sorted(filenames):
            if name.endswith(_SUFFIXES):
                path = os.path.join(dirpath, name)
                stat = os.stat(path)
                rel = os.path.relpath(path, root)
                digest.update(f"{rel}\0{stat.st_size}\0{stat.st_mtime_ns}\n".encode())


def fingerprint() -> str:
    """A digest of the installed plugins and prove_gym's own sources (see the module doc)."""
    digest = hashlib.sha256(f"{SCHEMA}\0{sys.version_info[:2]}\n".encode())
    _tree(Path(__file__).parent, digest)
    found = entry_points(group=ENTRY_POINT_GROUP)
    for ep in sorted(found, key=lambda e: (e.name, e.value)):
        dist = ep.dist
        where = f"{dist.metadata['Name']}=={dist.version}" if dist is not None else ""
        digest.update(f"ep\0{ep.name}\0{ep.value}\0{where}\n".encode())
        module = ep.value.partition(":")[0]
        try:
            spec = importlib.util.find_spec(module)  # imports parent packages, not the plugin
        except (ImportError, ValueError):
            spec = None
        if spec is None:
            digest.update(b"missing\n")
        elif spec.submodule_search_locations:
            for location in sorted(spec.submodule_search_locations):
                _tree(Path(location), digest)
        elif spec.origin:
            stat = os.stat(spec.origin)
            digest.update(f"{stat.st_size}\0{stat.st_mtime_ns}\n".encode())
    return digest.hexdigest()[:32]


def installation() -> str:
    """A short digest of where this prove_gym and interpreter live: the part of a catalog's
    file name that one installation's fingerprints share, so its stale files can be told from
    another installation's."""
    where = f"{Path(__file__).resolve().parent}\0{sys.prefix}"
    return hashlib.sha256(where.encode()).hexdigest()[:12]


def _rows(registry: Registry) -> list[dict[str, Any]]:
    rows = []
    for name, server in registry.servers.items():
        tools = server.visible_tools()
        rows.append(
            {
                "server": name,
                "version": server.version,
                "tools": [[t.name, bool(t.writes)] for t in tools],
                "env_ids": server.env_ids,
            }
        )
    return rows


def server_catalog(*, cache: bool = True) -> list[dict[str, Any]]:
    """Every installed server: ``{"server", "version", "tools": [[name, writes], ...],
    "env_ids": ["prove/<server>-v0", ...]}``.

    Read from the cache when its fingerprint matches, else built from the loaded registry
    (and cached). Servers are in the registry's order (by name), tools in their order.
    """
    if not cache:
        return _rows(get_registry())
    mine = f"catalog-{installation()}-"
    path = cache_dir() / f"{mine}{fingerprint()}.json"
    try:
        rows = json.loads(path.read_text(encoding="utf-8"))
        if isinstance(rows, list):
            return rows
    except (OSError, ValueError):
        pass
    rows = _rows(get_registry())
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".catalog-", suffix=".json")
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump(rows, out)
        os.replace(tmp, path)  # readers see the old file or the whole new one
        for stale in path.parent.glob(f"{mine}*.json"):
            if stale != path:
                stale.unlink(missing_ok=True)
    except OSError:
        pass
    return rows
