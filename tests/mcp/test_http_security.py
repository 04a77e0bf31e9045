"""`prove serve --transport http` on any address: Host/Origin checks and bearer-token auth."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "raw-httpx", "version": "0"},
    },
}
SERVE = [sys.executable, "-m", "prove_gym", "serve"]
TOKEN = "s3cret-token-for-the-tests-0123456789"


def _post(url: str, **headers: str) -> int:
    return httpx.post(url, headers={**HEADERS, **headers}, json=INITIALIZE, timeout=10).status_code


def test_a_loopback_address_other_than_127_0_0_1_refuses_hostile_host_and_origin(
    serve_http,
) -> None:
    with serve_http("calendar", "--host", "127.0.0.2") as served:
        url = served.url("/mcp")
        assert _post(url) == 200
        assert _post(url, origin="http://127.0.0.2:1234") == 200
        assert _post(url, origin="http://evil.example") == 403
        assert _post(url, host="evil.example") == 421
        assert httpx.get(served.url("/health"), headers={"host": "evil.example"}).status_code == 421


def test_a_non_loopback_host_without_a_token_is_refused_unless_told_to() -> None:
    done = subprocess.run(
        [*SERVE, "calendar", "--transport", "http", "--host", "0.0.0.0", "--port", "0"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert "--auth-token-env" in done.stderr and "--insecure-no-auth" in done.stderr


def test_insecure_no_auth_serves_a_wildcard_host_but_still_checks_origins(serve_http) -> None:
    with serve_http(
        "calendar",
        "--host",
        "0.0.0.0",
        "--insecure-no-auth",
        "--allowed-origin",
        "https://ok.example",
    ) as served:
        url = served.url("/mcp")
        assert _post(url) == 200
        assert _post(url, origin="https://ok.example") == 200
        assert _post(url, origin="http://127.0.0.1:9") == 403  # no loopback pass on 0.0.0.0
        assert _post(url, origin="http://evil.example") == 403


def test_the_token_is_required_on_every_route_and_read_from_a_file(
    serve_http, tmp_path: Path
) -> None:
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN + "\n")
    with serve_http(
        "calendar",
        "--host",
        "0.0.0.0",
        "--auth-token-file",
        str(token_file),
        "--allowed-host",
        "mcp.example.org",
    ) as served:
        url, host = served.url("/mcp"), "mcp.example.org"
        assert _post(url, host=host) == 401
        assert _post(url, host=host, authorization="Bearer wrong-token-0123456789") == 401
        assert _post(url, host=host, authorization=f"Bearer {TOKEN}") == 200
        bearer = {"authorization": f"Bearer {TOKEN}"}
        assert _post(url, **bearer) == 421  # Host is checked once names are given
        assert _post(url, host="evil.example", **bearer) == 421
        assert _post(url, host=host, origin="http://evil.example", **bearer) == 403
        assert httpx.get(served.url("/health"), headers={"host": host}).status_code == 401
        health = httpx.get(served.url("/health"), headers={"host": host, **bearer})
        assert health.status_code == 200 and health.json()["status"] == "ok"
        assert any("authentication: bearer token required" in line for line in served.log)


async def test_an_mcp_client_with_the_token_from_the_environment_calls_tools(
    serve_http, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PROVE_GYM_TEST_TOKEN", TOKEN)
    with serve_http("calendar", "--auth-token-env", "PROVE_GYM_TEST_TOKEN") as served:
        auth = create_mcp_http_client(headers={"authorization": f"Bearer {TOKEN}"})
        async with (
            auth,
            Client(streamable_http_client(served.url("/mcp"), http_client=auth)) as client,
        ):
            result = await client.call_tool("list_calendars", {})
        assert not result.is_error
        assert _post(served.url("/mcp")) == 401  # loopback too, once a token is configured


def test_a_json_rpc_batch_is_refused_before_it_is_parsed(serve_http) -> None:
    call = {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}}
    with serve_http("calendar") as served:
        response = httpx.post(served.url("/mcp"), headers=HEADERS, json=[call] * 10_000, timeout=10)
        assert response.status_code == 400
        assert "batches are not supported" in response.json()["error"]["message"]
        assert _post(served.url("/mcp")) == 200  # a single request still opens a session
