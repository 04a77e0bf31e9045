"""`prove-gym serve` driven by the official TypeScript MCP SDK client, over stdio and HTTP.

Every tool of every server is called with good and bad arguments
(``tests/interop/conftest.py`` plans them); the client validates every result itself
(the protocol's schema, each tool's ``outputSchema``), and the report it prints is
checked against the env's own results. Needs node (20 or later) and the SDK installed by
``bash .ci/install-interop.sh``; skipped with that hint otherwise, unless
``PROVE_GYM_REQUIRE_INTEROP=1`` (CI, once the script is wired in) makes that a failure.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

TS = Path(__file__).parent / "ts"
SCRIPT = TS / "interop.mjs"
SDK = TS / "node_modules" / "@modelcontextprotocol" / "sdk" / "package.json"
NODE_TIMEOUT_S = 300
"""Bound on one run of the script (it takes about 20 s for every server on a 2-core machine)."""


def _missing() -> str | None:
    node = shutil.which("node")
    if node is None:
        return "node is not on PATH"
    version = subprocess.run([node, "--version"], capture_output=True, text=True, timeout=30)
    major = int(version.stdout.strip().lstrip("v").split(".")[0] or 0)
    if major < 20:
        return f"node {version.stdout.strip()} is older than 20"
    if not SDK.exists():
        return "the TypeScript MCP SDK is not installed in tests/interop/ts/node_modules"
    return None


MISSING = _missing()
if MISSING is not None and os.environ.get("PROVE_GYM_REQUIRE_INTEROP") == "1":
    raise RuntimeError(
        f"PROVE_GYM_REQUIRE_INTEROP=1 but {MISSING}: run bash .ci/install-interop.sh"
    )
pytestmark = [
    pytest.mark.slow,  # about 50 s on a 2-core machine: every tool of every server, twice
    pytest.mark.skipif(
        MISSING is not None,
        reason=f"TypeScript-client interop: {MISSING}; run `bash .ci/install-interop.sh` (npm ci)",
    ),
]


def _run_node(connections: list[Any], tmp_path: Path) -> list[dict[str, Any]]:
    """Run interop.mjs on ``connections`` (one after another: on 2 cores, sessions in
    parallel were slower); the per-connection reports."""
    plan = tmp_path / "plan.json"
    payload = {"timeoutMs": 30_000, "connections": [c.as_json() for c in connections]}
    plan.write_text(json.dumps(payload, allow_nan=False))
    done = subprocess.run(
        ["node", str(SCRIPT), str(plan)],
        capture_output=True,
        text=True,
        timeout=NODE_TIMEOUT_S,
        cwd=TS,
    )
    assert done.stdout, f"interop.mjs printed no report (exit {done.returncode}): {done.stderr}"
    report = json.loads(done.stdout)
    assert done.returncode == 0, f"the TypeScript client failed:\n{done.stderr[-6000:]}"
    assert report["unexpected"] == []
    return report["connections"]


def test_the_typescript_client_accepts_every_result_over_stdio(
    stdio_session: Any, check: Any, tmp_path: Path
) -> None:
    reports = _run_node([stdio_session], tmp_path)
    check([stdio_session], reports)


def test_the_typescript_client_accepts_every_result_over_http(
    http_sessions: list[Any], check: Any, tmp_path: Path
) -> None:
    reports = _run_node(http_sessions, tmp_path)
    check(http_sessions, reports)
