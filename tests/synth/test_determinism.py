"""Same seed and flags give byte-identical files, whatever the number of workers."""

from __future__ import annotations

from pathlib import Path

from prove_gym.cli import main

ARGS = ["synth", "--servers", "calendar,vehicle", "--n", "16", "--state-seeds", "2"]
ARGS += ["--block-size", "8", "--no-progress"]


def files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def test_two_runs_with_the_same_seed_write_identical_files_with_any_worker_count(
    tmp_path: Path, capsys
) -> None:
    assert main([*ARGS, "--seed", "3", "--out", str(tmp_path / "a")]) == 0
    assert main([*ARGS, "--seed", "3", "--out", str(tmp_path / "b")]) == 0
    assert main([*ARGS, "--seed", "3", "--workers", "2", "--out", str(tmp_path / "c")]) == 0
    a, b, c = (files(tmp_path / x) for x in "abc")
    assert set(a) == {
        "train.jsonl",
        "test.jsonl",
        "openrlhf.jsonl",
        "openrlhf.test.jsonl",
        "trl.jsonl",
        "trl.test.jsonl",
        "report.json",
    }
    assert a == b
    assert a == c
    assert a["train.jsonl"].count(b"\n") + a["test.jsonl"].count(b"\n") == 16


def test_another_seed_writes_another_dataset(tmp_path: Path, capsys) -> None:
    assert main([*ARGS, "--seed", "3", "--out", str(tmp_path / "a")]) == 0
    assert main([*ARGS, "--seed", "4", "--out", str(tmp_path / "b")]) == 0
    assert files(tmp_path / "a")["train.jsonl"] != files(tmp_path / "b")["train.jsonl"]
