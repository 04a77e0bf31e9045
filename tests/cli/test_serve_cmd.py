"""`prove serve` argument handling (serving itself is tested in tests/mcp/)."""

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
    assert args.ttl > 0 and args.max_sessions > 0 and not args.combine and not args.offload
