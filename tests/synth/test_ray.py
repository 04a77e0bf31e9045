"""``prove-gym synth --ray``: Ray tasks write the same bytes as one process and a process pool."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from prove_gym.cli import main

ray = pytest.importorskip("ray")

ARGS = ["synth", "--servers", "calendar,vehicle", "--n", "8", "--state-seeds", "2"]
ARGS += ["--block-size", "4", "--seed", "11", "--no-progress"]
# every block after the first starts from what the collector kept: identity must hold
ARGS += ["--view-lag", "1"]


def digests(folder: Path) -> dict[str, str]:
    """sha256 of every file the run wrote, by name."""
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir())}


@pytest.mark.slow
def test_a_local_ray_writes_the_same_files_as_one_process_and_a_process_pool(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Blocks run in whatever order Ray finishes them; the collector keeps block order."""
    monkeypatch.setenv("RAY_USAGE_STATS_ENABLED", "0")  # no prompt, no report home
    monkeypatch.setenv("RAY_ACCEL_ENV_VAR_OVERRIDE_ON_ZERO", "0")  # no GPUs: silence the tip
    assert not ray.is_initialized()
    runs = {
        "one process": ["--workers", "1"],
        "process pool": ["--workers", "2"],
        "ray": ["--workers", "2", "--ray"],
    }
    try:
        for name, flags in runs.items():
            assert main([*ARGS, *flags, "--out", str(tmp_path / name)]) == 0, name
        assert not ray.is_initialized()  # --ray alone shuts down the Ray it started
    finally:
        if ray.is_initialized():
            ray.shutdown()
    written = {name: digests(tmp_path / name) for name in runs}
    assert len(written["one process"]) == 8  # tasks, exports of both splits, report, card
    assert written["process pool"] == written["one process"]
    assert written["ray"] == written["one process"]
