"""`prove-gym serve` argument handling (serving itself is tested in tests/mcp/)."""

from __future__ import annotations

import pytest

from prove_gym.cli import build_parser, main


def test_an_unknown_server_name_is_an_error_listing_the_installed_ones(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["serve", "no_such_server"]) == 2
    err = capsys.readouterr().err
    assert "no server named 'no_such_server'" in err and "calendar" in err


def test_a_size_below_one_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["serve", "calendar", "--size", "0"]) == 2
    assert "--size must be at least 1" in capsys.readouterr().err


def test_serve_defaults_to_stdio_on_loopback_with_limits() -> None:
    args = build_parser().parse_args(["serve", "calendar", "banking"])
    assert (args.transport, args.host, args.port, args.seed) == ("stdio", "127.0.0.1", 8000, 0)
    assert args.servers == ["calendar", "banking"]
    assert not args.combine and not args.offload
    assert (args.ttl, args.max_sessions) == (None, None)  # the session store's, when serve runs


def test_the_help_shows_the_session_stores_own_limits() -> None:
    from prove_gym.cli import serve_cmd
    from prove_gym.mcp.sessions import DEFAULT_MAX_SESSIONS, DEFAULT_TTL

    assert f"{DEFAULT_TTL:g}" == serve_cmd.TTL_SHOWN
    assert str(DEFAULT_MAX_SESSIONS) == serve_cmd.MAX_SESSIONS_SHOWN


def test_building_the_command_line_imports_no_mcp_sdk() -> None:
    import json
    import subprocess
    import sys

    code = (
        "import json, sys; from prove_gym.cli import build_parser; build_parser(); "
        "print(json.dumps(sorted(m for m in sys.modules if m == 'mcp' or m.startswith('mcp.'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == []  # --help, list, synth... pay nothing for serve


def test_openenv_without_its_extra_says_in_one_line_what_to_install(
    capsys: pytest.CaptureFixture[str],
) -> None:
    import importlib.util

    if importlib.util.find_spec("openenv") is not None:
        pytest.skip("OpenEnv is installed here (tests/adapters/test_openenv.py serves it)")
    assert main(["serve", "--openenv", "calendar"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and "pip install 'prove-gym[openenv]'" in err[0]


def test_mcp_and_openenv_options_are_not_mixed(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["serve", "--openenv", "--combine"]) == 2
    assert "--combine is an MCP option" in capsys.readouterr().err
    assert main(["serve", "calendar", "--tasks", "runs/synth"]) == 2
    assert "add --openenv" in capsys.readouterr().err
    assert main(["serve"]) == 2
    assert "name the servers" in capsys.readouterr().err
