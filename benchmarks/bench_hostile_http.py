"""One hostile client among 64 over HTTP: do the others' call latencies hold?

Starts ``prove-gym serve filesystem --transport http`` in a subprocess and opens 64 MCP
sessions with raw JSON-RPC over httpx. 63 of them call cheap read tools in a loop
(``pwd``, ``ls``, ``stat``); their p99 latency is measured twice in the same server
process:

- **idle**: the 64th session sends nothing;
- **attack**: the 64th session sends, in a loop, ``grep`` with the worst pattern
  (``^(\\w+\\s?)*$``, exponential under Python's ``re``) over a file of lines built to
  trigger it, a ``tools/call`` whose arguments nest 10,000 levels deep, and one POST holding
  a JSON-RPC batch of 10,000 ``tools/call`` requests.

The outcome to hold: attack p99 / idle p99 <= 2.

Run: ``python benchmarks/bench_hostile_http.py [--seconds 20] [--sessions 64]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import statistics
import subprocess
import sys
import time
from typing import Any

import httpx

HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
WORST = r"^(\w+\s?)*$"


def start_server(sessions: int) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "prove_gym",
            "serve",
            "filesystem",
            "--transport",
            "http",
            "--port",
            "0",
            "--max-sessions",
            str(sessions + 8),
        ],
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stderr is not None
    for line in proc.stderr:
        found = re.search(r"listening on (http://\S+)", line)
        if found:
            return proc, found.group(1) + "/mcp"
    raise RuntimeError("prove-gym serve did not start")


class Session:
    def __init__(self, client: httpx.AsyncClient, url: str) -> None:
        self.client, self.url, self.headers, self.next_id = client, url, dict(HEADERS), 1

    async def open(self) -> None:
        init = {
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "bench", "version": "0"},
            },
        }
        response = await self.client.post(self.url, headers=self.headers, json=init)
        response.raise_for_status()
        self.headers |= {
            "mcp-session-id": response.headers["mcp-session-id"],
            "mcp-protocol-version": "2025-11-25",
        }
        note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        await self.client.post(self.url, headers=self.headers, json=note)

    def request(self, name: str, arguments: Any) -> dict[str, Any]:
        self.next_id += 1
        return {
            "jsonrpc": "2.0",
            "id": self.next_id,
            "method": "tools/call",
            "params": {"name": name, "arguments": arguments},
        }

    async def call(self, name: str, arguments: Any) -> tuple[float, int]:
        began = time.perf_counter()
        body = json.dumps(self.request(name, arguments))
        response = await self.client.post(self.url, headers=self.headers, content=body)
        return time.perf_counter() - began, response.status_code

    async def post_raw(self, body: str) -> tuple[float, int]:
        began = time.perf_counter()
        response = await self.client.post(self.url, headers=self.headers, content=body)
        return time.perf_counter() - began, response.status_code


NORMAL = [("pwd", {}), ("ls", {"path": "~"}), ("stat", {"path": "~"}), ("whoami", {})]


async def normal_loop(session: Session, stop: asyncio.Event, out: list[float]) -> None:
    i = 0
    while not stop.is_set():
        name, arguments = NORMAL[i % len(NORMAL)]
        elapsed, status = await session.call(name, arguments)
        assert status == 200, status
        out.append(elapsed)
        i += 1


async def hostile_loop(session: Session, stop: asyncio.Event, log: dict[str, list[float]]) -> None:
    deep = '{"a": ' + "[" * 10_000 + "]" * 10_000 + "}"
    deep_body = (
        '{"jsonrpc": "2.0", "id": 99, "method": "tools/call", "params": '
        '{"name": "grep", "arguments": ' + deep + "}}"
    )
    batch = json.dumps([session.request("pwd", {}) for _ in range(10_000)])
    while not stop.is_set():
        for kind, send in (
            (
                "worst regex",
                lambda: session.call("grep", {"pattern": WORST, "path": "~", "recursive": True}),
            ),
            ("deep JSON", lambda: session.post_raw(deep_body)),
            ("10,000-call message", lambda: session.post_raw(batch)),
        ):
            elapsed, status = await send()
            log.setdefault(kind, []).append(elapsed)
            log.setdefault(f"{kind} status", []).append(status)


def p99(values: list[float]) -> float:
    return statistics.quantiles(values, n=100)[98] if len(values) >= 100 else max(values)


async def phase(
    sessions: list[Session], hostile: Session | None, seconds: float
) -> tuple[list[float], dict[str, list[float]]]:
    stop = asyncio.Event()
    latencies: list[float] = []
    log: dict[str, list[float]] = {}
    tasks = [asyncio.create_task(normal_loop(s, stop, latencies)) for s in sessions]
    if hostile is not None:
        tasks.append(asyncio.create_task(hostile_loop(hostile, stop, log)))
    await asyncio.sleep(seconds)
    stop.set()
    await asyncio.gather(*tasks)
    return latencies, log


async def main_async(args: argparse.Namespace) -> None:
    proc, url = start_server(args.sessions)
    try:
        limits = httpx.Limits(max_connections=args.sessions + 8)
        async with httpx.AsyncClient(timeout=120, limits=limits) as client:
            sessions = [Session(client, url) for _ in range(args.sessions)]
            for s in sessions:
                await s.open()
            *normal, hostile = sessions
            slow_file = ("a" * 26 + "!\n") * 400  # each line: 2^26 steps for re
            _elapsed, status = await hostile.call(
                "write_file", {"path": "~/slow.txt", "content": slow_file[:9_990]}
            )
            assert status == 200
            await phase(normal, None, 2)  # warm-up
            idle, _ = await phase(normal, None, args.seconds)
            attack, log = await phase(normal, hostile, args.seconds)
    finally:
        proc.terminate()
        proc.wait(10)
    print(f"sessions: {len(normal)} normal + 1 hostile, {args.seconds:g} s per phase")
    print(
        f"idle:   {len(idle):6d} calls  p50 {statistics.median(idle) * 1e3:7.2f} ms  "
        f"p99 {p99(idle) * 1e3:7.2f} ms"
    )
    print(
        f"attack: {len(attack):6d} calls  p50 {statistics.median(attack) * 1e3:7.2f} ms  "
        f"p99 {p99(attack) * 1e3:7.2f} ms"
    )
    for kind in ("worst regex", "deep JSON", "10,000-call message"):
        times = log.get(kind, [])
        codes = sorted({int(c) for c in log.get(f"{kind} status", [])})
        if times:
            print(f"hostile {kind}: {len(times)} sent, HTTP {codes}, max {max(times) * 1e3:.1f} ms")
    ratio = p99(attack) / p99(idle)
    print(f"p99 ratio attack/idle: {ratio:.2f} (outcome: <= 2.00: {'yes' if ratio <= 2 else 'NO'})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=64)
    parser.add_argument("--seconds", type=float, default=20)
    asyncio.run(main_async(parser.parse_args()))


if __name__ == "__main__":
    main()
