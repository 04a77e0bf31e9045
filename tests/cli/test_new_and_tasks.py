"""``prove-gym new`` writes a plugin that installs and passes conformance; ``prove-gym tasks``
checks shipped tasks and re-records their states only on purpose."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from prove_gym.cli import main
from prove_gym.scaffold import new_plugin

CHECK = """
import asyncio, gymnasium, prove_gym
from mcp import Client
from prove_gym.mcp import ProveMCPServer
from prove_gym.synth import SynthConfig, synthesize
reg = prove_gym.get_registry()
server = reg.get_server("notes")
assert "notes" in reg.servers and server.problems() == [], server.problems()
env = gymnasium.make("prove/notes-v0")
obs, info = env.reset(seed=0)
print("TOOLS", sorted(t["function"]["name"] for t in info["tools"]))

async def tools():
    async with Client(ProveMCPServer(server)) as client:
        listed = await client.list_tools()
        return sorted((t.name, t.output_schema is not None) for t in listed.tools)

print("MCP", asyncio.run(tools()))
result = synthesize(SynthConfig(servers=("notes",), n=6, seed=0, workers=1))
print("SYNTH", len(result.tasks))
"""


def _install(root: Path, site: Path) -> dict[str, str]:
    pip = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "-q",
            "--no-deps",
            "--no-build-isolation",
            "--target",
            str(site),
            str(root),
        ],
        capture_output=True,
        text=True,
    )
    assert pip.returncode == 0, pip.stderr
    return {**os.environ, "PYTHONPATH": str(site), "CI": "true"}


@pytest.mark.slow
def test_a_new_plugin_installs_appears_everywhere_and_passes_conformance(tmp_path: Path) -> None:
    root = tmp_path / "prove-notes"
    assert main(["new", "notes", "--dir", str(root)]) == 0
    env = _install(root, tmp_path / "site")
    out = subprocess.run(
        [sys.executable, "-c", CHECK], capture_output=True, text=True, env=env, timeout=300
    )
    assert out.returncode == 0, out.stderr[-3000:]
    assert "TOOLS ['add_note', 'list_notes', 'retag_note']" in out.stdout
    assert "('add_note', True)" in out.stdout and "SYNTH 6" in out.stdout
    listed = subprocess.run(
        [sys.executable, "-m", "prove_gym", "list"], capture_output=True, text=True, env=env
    )
    assert "prove/notes-v0" in listed.stdout
    tests = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:randomly", "-n", "0", "tests"],
        cwd=root,
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert tests.returncode == 0, tests.stdout[-4000:]


@pytest.mark.slow
def test_a_broken_plugin_fails_conformance_naming_the_tool(tmp_path: Path) -> None:
    root = tmp_path / "prove-notes"
    new_plugin("notes", root)
    tools = root / "prove_notes" / "tools.py"
    source = tools.read_text()
    # A read that writes: list_notes renames the notes and commits it.
    broken = source.replace(
        "    if tag is None:\n",
        "    ctx.sql.raw.execute(\"UPDATE notes SET title = 'changed'\")\n"
        "    ctx.sql.raw.commit()\n"
        "    if tag is None:\n",
    )
    assert broken != source
    tools.write_text(broken)
    env = _install(root, tmp_path / "site")
    tests = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:randomly", "-n", "0", "tests", "-x"],
        cwd=root,
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert tests.returncode != 0
    assert "list_notes" in tests.stdout


def test_new_refuses_a_bad_name_or_a_used_directory(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="lowercase identifier"):
        new_plugin("Not-A-Name", tmp_path / "x")
    (tmp_path / "used").mkdir()
    (tmp_path / "used" / "file").write_text("")
    with pytest.raises(ValueError, match="not empty"):
        new_plugin("notes", tmp_path / "used")


def test_tasks_check_passes_on_a_servers_recorded_states(capsys) -> None:
    assert main(["tasks", "banking"]) == 0
    assert "every recorded final state matches" in capsys.readouterr().out


def _scaffold_registry(tmp_path: Path):
    import importlib

    from prove_gym.registry import Registry

    root = tmp_path / "prove-notes"
    new_plugin("notes", root)
    sys.path.insert(0, str(root))
    try:
        module = importlib.import_module("prove_notes")
    finally:
        sys.path.remove(str(root))
    registry = Registry(load_entrypoints=False)
    registry.register(module, name="notes")
    return registry, root / "prove_notes" / "tasks.jsonl"


def test_rehash_rewrites_only_on_purpose_and_never_over_a_broken_task(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    from prove_gym.cli import tasks_cmd

    registry, path = _scaffold_registry(tmp_path)
    monkeypatch.setattr("prove_gym.get_registry", lambda: registry)
    good = path.read_text()
    rows = [json.loads(line) for line in good.splitlines()]
    rows[0]["final_state_hash"] = "0" * 64  # as if the tools had changed since recording
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    args = tasks_cmd.build_args("notes")
    assert tasks_cmd.run(args) == 1 and "--rehash" in capsys.readouterr().out
    assert tasks_cmd.run(tasks_cmd.build_args("notes", rehash=True)) == 0
    assert [json.loads(line) for line in path.read_text().splitlines()] == [
        json.loads(line) for line in good.splitlines()
    ]
    rows[1]["turns"][1]["steps"][0]["arguments"]["tag"] = "nowhere"  # a gold call that fails
    broken = "".join(json.dumps(r) + "\n" for r in rows)
    path.write_text(broken)
    assert tasks_cmd.run(tasks_cmd.build_args("notes", rehash=True)) == 1
    assert "Nothing was written" in capsys.readouterr().out and path.read_text() == broken


def test_a_new_plugin_passes_the_projects_own_ruff_check_and_format(tmp_path: Path) -> None:
    ruff = pytest.importorskip("ruff", reason="ruff comes with the dev extra")
    root = tmp_path / "prove-memos"  # a name no other test imports (its module is cached)
    new_plugin("memos", root)
    binary = ruff.find_ruff_bin()
    for command in (["check", "."], ["format", "--check", "."]):
        out = subprocess.run([binary, *command], cwd=root, capture_output=True, text=True)
        assert out.returncode == 0, out.stdout + out.stderr
