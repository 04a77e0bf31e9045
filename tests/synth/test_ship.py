"""``prove-gym tasks --resynthesize``: every server's shipped files rebuilt from the current
generator and the env versions' declarations, the same bytes on every run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import prove_gym
from prove_gym.registry import Registry
from prove_gym.scaffold import new_plugin
from prove_gym.synth.ship import ShipError, derive_version, is_hand_written, resynthesize
from prove_gym.task import load_tasks


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*.jsonl"))}


def _shipped() -> dict[str, bytes]:
    registry = prove_gym.get_registry()
    out = {}
    for name in ("calendar", "trading"):
        server = registry.get_server(name)
        paths = [server.tasks_file, *(v.tasks_file for v in server.env_versions.values())]
        out.update({str(p): p.read_bytes() for p in paths if p is not None})
    return out


def test_resynthesis_writes_the_same_bytes_in_fresh_processes(tmp_path: Path) -> None:
    """Two servers at a small n, in two processes with different hash seeds: the same files,
    each server's hand-written tasks kept, both splits, every version's file derived; the
    shipped files are left alone when --out is given."""
    before = _shipped()
    args = ["tasks", "--resynthesize", "calendar", "trading", "--n", "12"]
    outputs = []
    for hash_seed in ("0", "123"):
        done = subprocess.run(
            [sys.executable, "-m", "prove_gym", *args, "--out", str(tmp_path / hash_seed)],
            env={**os.environ, "PYTHONHASHSEED": hash_seed},
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
        outputs.append(done.stdout)
    first, second = _files(tmp_path / "0"), _files(tmp_path / "123")
    assert first == second
    assert sorted(first) == [
        "calendar/tasks.jsonl",
        "calendar/tasks_v1.jsonl",
        "trading/tasks.jsonl",
        "trading/tasks_v1.jsonl",
        "trading/tasks_v2.jsonl",
        "trading/tasks_v3.jsonl",
        "trading/tasks_v4.jsonl",
    ]
    assert _shipped() == before
    out = outputs[0]
    assert "calendar-v0 (tasks.jsonl): " in out and "trading-v2 (tasks_v2.jsonl): " in out
    assert "each for one portfolio" in out and "re-shipped 2 server(s)" in out

    calendar = load_tasks(tmp_path / "0" / "calendar" / "tasks.jsonl")
    ids = [t.id for t in calendar]
    assert ids == sorted(ids) and len(ids) == len(set(ids))
    hand = [t for t in calendar if is_hand_written(t)]
    assert [t.id for t in hand] == [f"calendar-00{k}" for k in range(1, 6)] == ids[:5]
    made = [t for t in calendar if not is_hand_written(t)]
    assert len(made) == 12 and {t.meta["split"] for t in made} == {"train", "test"}
    v0, v1, v2 = (
        load_tasks(tmp_path / "0" / "trading" / f)
        for f in ("tasks.jsonl", "tasks_v1.jsonl", "tasks_v2.jsonl")
    )
    assert {t.id for t in v2} <= {t.id for t in v1} <= {t.id for t in v0}
    assert all(t.env_versions == {"trading": 1} and not t.principals for t in v1)
    assert all(t.env_versions == {"trading": 2} and set(t.principals) == {"trading"} for t in v2)
    assert all(t.final_state_hash for t in [*calendar, *v0, *v1, *v2])


def _version_files() -> list[Any]:
    registry = prove_gym.get_registry()
    out = []
    for name in registry.servers:
        server = registry.get_server(name)
        previous = server.tasks_file
        for number in sorted(server.env_versions):
            path = server.env_versions[number].tasks_file
            if path is None:
                continue
            slow = name != "trading"  # trading's stand for the rest in the quick run
            marks = [pytest.mark.slow] if slow else []
            out.append(
                pytest.param(name, number, previous, path, marks=marks, id=f"{name}-v{number}")
            )
            previous = path
    return out


@pytest.mark.parametrize(("server", "number", "previous", "path"), _version_files())
def test_each_shipped_version_file_is_derived_from_the_previous_one(
    server: str, number: int, previous: Path, path: Path
) -> None:
    """What the command wrote is what the declarations give: a file edited by hand, or one
    derived with other rules, fails here (re-ship the server, CONTRIBUTING.md, Tasks)."""
    registry = prove_gym.get_registry()
    made = derive_version(registry.get_server(server), number, load_tasks(previous), registry)
    assert [t.to_json() for t in made.tasks] == path.read_text().splitlines()


@pytest.fixture()
def notes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Registry, Path]:
    """The scaffold's ``notes`` server in a registry of its own, its tasks file in tmp_path."""
    import importlib

    root = tmp_path / "prove-notes"
    new_plugin("notes", root)
    monkeypatch.syspath_prepend(str(root))
    for loaded in [m for m in sys.modules if m == "prove_notes" or m.startswith("prove_notes.")]:
        monkeypatch.delitem(sys.modules, loaded)  # another test's scaffold: restored after
    module = importlib.import_module("prove_notes")
    registry = Registry(load_entrypoints=False)
    registry.register(module, name="notes")
    monkeypatch.setattr("prove_gym.get_registry", lambda: registry)
    return registry, root / "prove_notes" / "tasks.jsonl"


def test_resynthesis_over_the_shipped_file_keeps_the_hand_written_tasks_and_replays(
    notes: tuple[Registry, Path], capsys: Any
) -> None:
    from prove_gym.cli import tasks_cmd

    _, path = notes
    hand = path.read_text().splitlines()
    assert tasks_cmd.run(tasks_cmd.build_args("notes", resynthesize=True, n=8)) == 0
    written = path.read_bytes()
    tasks = load_tasks(path)
    assert [t.to_json() for t in tasks if is_hand_written(t)] == hand
    assert len([t for t in tasks if not is_hand_written(t)]) == 8
    assert [t.id for t in tasks] == sorted(t.id for t in tasks)
    assert "notes-v0 (tasks.jsonl): " in capsys.readouterr().out
    assert tasks_cmd.run(tasks_cmd.build_args("notes")) == 0  # every recorded state replays
    assert tasks_cmd.run(tasks_cmd.build_args("notes", resynthesize=True, n=8)) == 0
    assert path.read_bytes() == written  # a re-run from its own output: the same bytes


def test_a_hand_written_task_that_fails_stops_its_server_and_nothing_is_written(
    notes: tuple[Registry, Path], capsys: Any
) -> None:
    from prove_gym.cli import tasks_cmd

    registry, path = notes
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    rows[1]["turns"][1]["steps"][0]["arguments"]["tag"] = "nowhere"  # a gold call that fails
    broken = "".join(json.dumps(r) + "\n" for r in rows)
    path.write_text(broken)
    with pytest.raises(ShipError, match="fix them by hand"):
        resynthesize("notes", n=4, registry=registry)
    assert tasks_cmd.run(tasks_cmd.build_args("notes", resynthesize=True, n=4)) == 1
    assert "notes: not shipped" in capsys.readouterr().out
    assert path.read_text() == broken


def test_the_resynthesis_options_need_resynthesize() -> None:
    from prove_gym.cli import main

    assert main(["tasks", "calendar", "--n", "5"]) == 2
    with pytest.raises(SystemExit):
        main(["tasks", "--rehash", "--resynthesize"])


def test_a_version_that_signs_in_acts_first_for_the_person_earlier_tasks_were_written_for() -> None:
    """social_media's -v0 tasks act as the state's signed-in user (``Server(me=)``), whom the
    user listing leaves out: -v1 keeps them acting for that user, not the first other one."""
    registry = prove_gym.get_registry()
    server = registry.get_server("social_media")
    previous = [
        t for t in registry.tasks("social_media") if t.steps and t.steps[0].name == "unblock_user"
    ][:3]
    assert previous, "no shipped social_media task unblocks someone"
    made = derive_version(server, 1, previous, registry)
    assert [t.id for t in made.tasks] == [t.id for t in previous]
    with server.session(previous[0].seed, previous[0].size) as session:
        me = server.me(session.context())["user"]  # type: ignore[misc]
    assert {t.principals["social_media"] for t in made.tasks} == {me}


def test_the_shipped_tasks_card_says_what_the_files_hold() -> None:
    """docs/tasks.md is `prove-gym tasks --card`'s output for the shipped files: a re-ship
    that does not write it again fails here."""
    from prove_gym.synth.ship import shipped_card

    page = Path(__file__).resolve().parents[2] / "docs" / "tasks.md"
    assert page.read_text(encoding="utf-8") == shipped_card(), (
        "docs/tasks.md is stale: run `prove-gym tasks --card > docs/tasks.md`"
    )
