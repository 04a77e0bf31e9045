"""The `prove` command as a user runs it: a real subprocess of the installed entry point."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import prove_gym


def prove(*args: str) -> subprocess.CompletedProcess[str]:
    # The entry point installed beside this interpreter (Perl also ships a `prove` on PATH).
    exe = Path(sys.executable).with_name("prove")
    cmd = [str(exe), *args] if exe.exists() else [sys.executable, "-m", "prove_gym", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300)


def test_prove_list_counts_servers_and_tools() -> None:
    out = prove("list")
    assert out.returncode == 0, out.stderr
    servers = prove_gym.get_registry().servers
    total = sum(len(s.visible_tools()) for s in servers.values())
    assert out.stdout.strip().splitlines()[-1] == f"{len(servers)} servers, {total} tools"
    assert "prove/calendar-v0" in out.stdout
    assert "prove/trading-v0, prove/trading-v1" in out.stdout  # every version's id


def test_prove_list_json_is_machine_readable() -> None:
    rows = json.loads(prove("list", "--json").stdout)
    assert {r["server"] for r in rows} == set(prove_gym.get_registry().servers)
    calendar = next(r for r in rows if r["server"] == "calendar")
    assert calendar["tools"] == 17 and "create_event" in calendar["tool_names"]
    trading = next(r for r in rows if r["server"] == "trading")
    assert trading["env_id"] == "prove/trading-v0"
    assert trading["env_ids"] == [
        "prove/trading-v0",
        "prove/trading-v1",
        "prove/trading-v2",
        "prove/trading-v3",
        "prove/trading-v4",
    ]


def test_prove_demo_plays_an_episode_and_shows_the_reward() -> None:
    out = prove("demo")
    assert out.returncode == 0, out.stderr
    assert "[assistant] -> find_free_slot" in out.stdout
    assert "(matches gold)" in out.stdout
    breakdown = json.loads(out.stdout.split("== reward breakdown\n", 1)[1])
    assert breakdown["total"] > 0


def test_prove_without_a_command_prints_help() -> None:
    out = prove()
    assert out.returncode == 2 and "usage: prove" in out.stdout


def test_unknown_server_is_a_clean_error() -> None:
    out = prove("demo", "--server", "nope")
    assert out.returncode == 2
    assert "no server named 'nope'" in out.stderr and "Traceback" not in out.stderr


def test_a_reader_that_stops_early_gets_no_traceback() -> None:
    """``prove-gym graph all | head`` closes the pipe after a few lines: exit quietly (141)."""
    import subprocess
    import sys

    proc = subprocess.Popen(
        [sys.executable, "-m", "prove_gym", "graph", "all"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.readline()  # 260 KB follow: more than a pipe holds
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 141
    assert "Traceback" not in err and "BrokenPipeError" not in err, err


def test_help_imports_no_plugin_stack() -> None:
    """`prove-gym --help` builds every subcommand's parser (synth's from SynthConfig's
    defaults) without SQLAlchemy, pydantic, Faker, Gymnasium or the MCP SDK."""
    code = (
        "import json, sys\n"
        "from prove_gym.cli import build_parser\n"
        "build_parser().format_help()\n"
        "print(json.dumps(sorted({m.split('.')[0] for m in sys.modules} & {'sqlalchemy', "
        "'pydantic', 'faker', 'gymnasium', 'numpy', 'mcp'})))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == []
