"""``prove-gym list`` from the on-disk catalog: the same rows as loading every plugin, a key
that moves with any edit, and a warm listing that imports no plugin."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import prove_gym
from prove_gym import catalog


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("PROVE_GYM_CACHE_DIR", str(tmp_path))
    return tmp_path


def test_the_cached_catalog_is_what_the_loaded_plugins_say(cache: Path) -> None:
    fresh = catalog.server_catalog(cache=False)
    assert [row["server"] for row in fresh] == sorted(prove_gym.get_registry().servers)
    assert sum(len(row["tools"]) for row in fresh) == 343
    first = catalog.server_catalog()  # a miss: built and written
    files = list(cache.glob("catalog-*.json"))
    assert len(files) == 1 and json.loads(files[0].read_text()) == fresh == first
    assert catalog.server_catalog() == fresh  # a hit: read back
    files[0].write_text("{not json")
    assert catalog.server_catalog() == fresh  # a broken file is rebuilt, not trusted
    assert json.loads(files[0].read_text()) == fresh


def test_editing_a_plugin_changes_the_key(tmp_path: Path) -> None:
    before = catalog.fingerprint()
    assert catalog.fingerprint() == before  # stable when nothing changed
    spec = importlib.util.find_spec("prove_plugins.calendar")
    assert spec is not None and spec.submodule_search_locations
    source = Path(next(iter(spec.submodule_search_locations))) / "tools.py"
    stat = source.stat()
    try:
        os.utime(source, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
        assert catalog.fingerprint() != before
    finally:
        os.utime(source, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert catalog.fingerprint() == before


def test_a_miss_evicts_this_installations_stale_files_only(cache: Path) -> None:
    """Checkouts and virtual environments that share one cache folder keep their own files:
    a rebuild removes this installation's stale catalog, not another's."""
    mine = f"catalog-{catalog.installation()}-"
    stale = cache / f"{mine}{'0' * 32}.json"
    other = cache / f"catalog-{'f' * 12}-{'0' * 32}.json"
    for path in (stale, other):
        path.write_text("[]")
    catalog.server_catalog()
    names = sorted(p.name for p in cache.glob("catalog-*.json"))
    assert names == sorted([other.name, f"{mine}{catalog.fingerprint()}.json"])


def test_an_unwritable_cache_lists_anyway(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("PROVE_GYM_CACHE_DIR", str(blocker / "below-a-file"))
    assert catalog.server_catalog() == catalog.server_catalog(cache=False)


def test_a_warm_listing_imports_no_plugin(cache: Path) -> None:
    """The fast path of `prove-gym list`: with the catalog written, listing in a fresh process
    imports no plugin, no SQLAlchemy and no other subcommand's module."""
    catalog.server_catalog()
    code = textwrap.dedent(
        """
        import sys
        from prove_gym.cli import main
        assert main(["list"]) == 0
        loaded = sorted(m for m in sys.modules if m.startswith(("prove_plugins.", "sqlalchemy",
                        "prove_gym.synth", "prove_gym.server")))
        print("LOADED", loaded)
        """
    )
    env = {**os.environ, "PROVE_GYM_CACHE_DIR": str(cache)}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert "343 tools" in done.stdout
    assert "LOADED []" in done.stdout
