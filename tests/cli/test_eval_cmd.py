"""`prove eval` as a user runs it: baselines to files and a plot, and a local endpoint."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest


def prove(*args: str) -> subprocess.CompletedProcess[str]:
    exe = Path(sys.executable).with_name("prove")
    cmd = [str(exe), *args] if exe.exists() else [sys.executable, "-m", "prove_gym", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300)


def test_prove_eval_oracle_writes_results_a_summary_and_a_plot(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    out = prove("eval", "oracle", "--servers", "calendar", "--out", str(tmp_path), "--no-progress")
    assert out.returncode == 0, out.stderr
    assert "calendar.search_events" in out.stdout
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["policy"] == "oracle"
    assert summary["servers"]["calendar"]["success"] == 1.0
    rows = [json.loads(x) for x in (tmp_path / "results.jsonl").read_text().splitlines()]
    assert len(rows) == summary["overall"]["tasks"] and all(r["success"] for r in rows)
    png = (tmp_path / "eval.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 10_000


def test_prove_eval_pays_the_reward_preset_it_is_given(tmp_path: Path) -> None:
    for preset, top in (("paper", 1.3), ("default", 3.3)):
        out = prove(
            "eval",
            "oracle",
            "--servers",
            "calendar",
            "--reward",
            preset,
            "--limit",
            "3",
            "--out",
            str(tmp_path / preset),
            "--no-progress",
        )
        assert out.returncode == 0, out.stderr
        rows = [
            json.loads(x) for x in (tmp_path / preset / "results.jsonl").read_text().splitlines()
        ]
        assert max(r["total"] for r in rows) == pytest.approx(top)
    wrong = prove("eval", "oracle", "--reward", "papers", "--no-progress")
    assert wrong.returncode == 2 and "known: default, paper" in wrong.stderr


def test_prove_eval_reads_a_task_file_and_limits_it(tmp_path: Path) -> None:
    from prove_gym import get_registry

    tasks = get_registry().tasks("calendar")
    path = tmp_path / "test.jsonl"
    path.write_text("".join(t.to_json() + "\n" for t in tasks))
    out = prove("eval", "random", "--tasks", str(path), "--limit", "2", "--no-progress")
    assert out.returncode == 0, out.stderr
    assert "policy: random    tasks: 2" in out.stdout


class Silent(BaseHTTPRequestHandler):
    """An endpoint whose model never calls a tool."""

    seen: ClassVar[list[dict[str, Any]]] = []

    def log_message(self, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).seen.append(body)
        payload = json.dumps(
            {"choices": [{"message": {"role": "assistant", "content": "I cannot help."}}]}
        ).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)


def test_prove_eval_talks_to_an_openai_compatible_endpoint() -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Silent)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/v1"
        out = prove(
            "eval", "--base-url", url, "--model", "tiny", "--servers", "calendar", "--no-progress"
        )
    finally:
        server.shutdown()
        server.server_close()
    assert out.returncode == 0, out.stderr
    assert "policy: openai:tiny" in out.stdout
    assert Silent.seen and all(b["model"] == "tiny" and b["tools"] for b in Silent.seen)
    from prove_gym import get_registry

    tasks = get_registry().tasks("calendar")
    no_call = sum(not t.steps for t in tasks) / len(tasks)  # only these succeed without a call
    calendar = next(line for line in out.stdout.splitlines() if line.startswith("calendar "))
    assert calendar.split()[3] == f"{100 * no_call:.1f}%"


def test_prove_eval_refuses_a_total_token_cap_without_a_local_model() -> None:
    out = prove("eval", "oracle", "--max-total-tokens", "64", "--no-progress")
    assert out.returncode == 2
    assert "--max-total-tokens applies to a local model only" in out.stderr


def test_prove_eval_names_the_file_and_line_of_a_malformed_task(tmp_path: Path) -> None:
    from prove_gym import get_registry

    path = tmp_path / "test.jsonl"
    path.write_text(get_registry().tasks("calendar")[0].to_json() + '\n{"id": "x", "turns": [}\n')
    out = prove("eval", "oracle", "--tasks", str(path), "--no-progress")
    assert out.returncode == 2
    assert out.stderr.strip() == (
        f"prove-gym eval: error: {path}:2: not JSON (Expecting value at column 23)"
    )
