"""`prove-gym lint-data DIR`: one line per flaw class with examples, exit 1 over a limit."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from prove_gym.cli import main


def task(task_id: str, second: str) -> dict:
    return {
        "id": task_id,
        "servers": ["calendar"],
        "turns": [
            {"user": "Find the design review.",
             "steps": [{"id": "s1", "name": "search_events", "arguments": {"query": "design review"}}]},
            {"user": second, "steps": []},
        ],
    }  # fmt: skip


def write(folder: Path, *tasks: dict) -> Path:
    folder.mkdir()
    (folder / "train.jsonl").write_text("".join(json.dumps(t) + "\n" for t in tasks))
    (folder / "test.jsonl").write_text("")
    return folder


def test_a_clean_dataset_passes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = write(tmp_path / "data", task("t-1", "What time is it?"))
    assert main(["lint-data", str(data)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("1 tasks\n") and out.rstrip().endswith("every class within its limit")
    assert "late_greeting                 0 tasks" in out


def test_a_flawed_dataset_fails_naming_the_class_and_the_task(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = write(
        tmp_path / "data",
        task("t-1", "What time is it?"),
        task("t-2", "Hello. Is it 2026-08-15T17:00 yet?"),
    )
    assert main(["lint-data", str(data)]) == 1
    out = capsys.readouterr().out
    lines = out.splitlines()
    greeting = lines.index(next(x for x in lines if x.startswith("late_greeting")))
    assert "    1 tasks ( 50.0%)  limit 0    OVER" in lines[greeting]
    assert lines[greeting + 1] == "    t-2: turn 2: Hello. Is it 2026-08-15T17:00 yet?"
    assert "    t-2: Hello. Is it 2026-08-15T17:00 yet?" in lines  # iso_datetime
    assert lines[-1] == "over the limit: iso_datetime, late_greeting"
    # a limit per class, or for all of them
    assert (
        main(["lint-data", str(data), "--max", "late_greeting=1", "--max", "iso_datetime=50%"]) == 0
    )
    assert main(["lint-data", str(data / "train.jsonl"), "--max", "all=1"]) == 0


def test_bad_arguments_exit_2_with_a_message(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["lint-data", str(tmp_path / "nowhere")]) == 2
    assert "no such file or folder" in capsys.readouterr().err
    data = write(tmp_path / "data", task("t-1", "Thanks."))
    assert main(["lint-data", str(data), "--max", "typo=1"]) == 2
    assert "no flaw class 'typo'" in capsys.readouterr().err
    assert main(["lint-data", str(data), "--max", "late_greeting=lots"]) == 2


def test_the_classes_are_listed(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["lint-data", "--classes", "unused"]) == 0
    out = capsys.readouterr().out
    assert "raw_enum_token (limit 1%): " in out and "clarify_with_independent (limit 0)" in out
