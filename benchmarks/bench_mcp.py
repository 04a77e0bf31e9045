"""Tool calls per second through MCP: a calendar read tool beside a one-line echo tool.

Both tools go through the same machinery (``prove serve``: ``ProveMCPServer``,
``Session.call``, the SDK transports); the echo tool belongs to a throwaway
server registered at run time, so the gap between the two rates is the cost of
the calendar tool's own work (an SQLite query, ORM objects, JSON). Each
transport is measured in one run, echo and calendar in alternating blocks, and
the best block of each is reported, so load from other processes on the
machine hits both alike.

Transports: in-process ``mcp.Client(server)``; stdio (``prove serve calendar echo``
launched by the SDK's stdio client); streamable HTTP on 127.0.0.1 (``prove serve
calendar echo --transport http``, endpoints /calendar/mcp and /echo/mcp). Rows
marked "offload" run each call in a worker thread instead of inline on the
event loop.

Run: ``python benchmarks/bench_mcp.py`` (``--quick`` for a short run).
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
from mcp import Client, StdioServerParameters
from sqlalchemy import Integer
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

import prove_gym
from prove_gym import SampleContext, Server, ToolContext
from prove_gym.mcp import ProveMCPServer

READ_TOOLS: dict[str, dict[str, Any]] = {
    "list_calendars": {},
    "get_event": {"event_id": "evt_0001"},
}
ECHO_ARGS = {"text": "hello"}
SEED = 7


# ------------------------------------------------------------- the echo server
class EchoBase(DeclarativeBase):
    pass


class Row(EchoBase):
    __tablename__ = "rows"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)


def _sample_one_row(ctx: SampleContext) -> None:
    ctx.db.add(Row(id=1))


echo_server = Server("echo", version="1.0", base=EchoBase, sampler=_sample_one_row)


@echo_server.tool(phrasings=["Say {text}"])
def echo(ctx: ToolContext, text: str) -> dict:
    """Return the text unchanged.

    Args:
        text: Any text, such as "hello".
    """
    return {"text": text}


class EchoPlugin:
    """Adds the echo server to the registry of this process (a runtime plugin)."""

    @prove_gym.hookimpl
    def prove_gym_servers(self) -> list[Server]:
        return [echo_server]


def _serve(argv: list[str]) -> int:
    """Child-process mode: ``prove serve`` with the echo server registered at run time."""
    from prove_gym.cli import main

    prove_gym.get_registry().register(EchoPlugin(), name="bench-echo")
    return main(["serve", *argv])


# ------------------------------------------------------------------ measuring
Call = Callable[[], Awaitable[Any]]


def _children_cpu() -> float:
    """CPU seconds used so far by this process's child processes (the served ones)."""
    ticks = os.sysconf("SC_CLK_TCK")
    total = 0.0
    me = str(os.getpid())
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[1] == me:  # ppid
            total += (int(fields[11]) + int(fields[12])) / ticks  # utime + stime
    return total


def _cpu_now() -> float:
    return time.process_time() + _children_cpu()


Rates = dict[str, list[tuple[float, float]]]
"""Per tool: (wall-clock calls/s, calls per CPU-second) of every block."""


async def _rate(call: Call, n: int) -> tuple[float, float]:
    cpu, wall = _cpu_now(), time.perf_counter()
    for _ in range(n):
        await call()
    wall, cpu = time.perf_counter() - wall, _cpu_now() - cpu
    return n / wall, n / max(cpu, 1e-9)


async def _compare(calls: dict[str, Call], n: int, rounds: int) -> Rates:
    for call in calls.values():  # warm up: caches, first-call list_tools
        for _ in range(max(5, n // 10)):
            await call()
    rates: Rates = {k: [] for k in calls}
    for _ in range(rounds):
        for name, call in calls.items():
            rates[name].append(await _rate(call, n))
    return rates


def _checked(client: Client, name: str, args: dict[str, Any]) -> Call:
    async def call() -> Any:
        result = await client.call_tool(name, args)
        if result.is_error:
            raise RuntimeError(f"{name} failed: {result.content}")
        return result

    return call


async def bench_inprocess(n: int, rounds: int, offload: bool) -> Rates:
    calendar = ProveMCPServer(prove_gym.get_server("calendar"), seed=SEED, offload=offload)
    echo_srv = ProveMCPServer(echo_server, seed=SEED, offload=offload)
    async with Client(calendar) as cal, Client(echo_srv) as ech:
        calls = {"echo": _checked(ech, "echo", ECHO_ARGS)}
        calls.update({t: _checked(cal, t, a) for t, a in READ_TOOLS.items()})
        return await _compare(calls, n, rounds)


def _serve_argv(*extra: str) -> list[str]:
    return [os.path.abspath(__file__), "--serve", "calendar", "echo", "--seed", str(SEED), *extra]


async def bench_stdio(n: int, rounds: int, offload: bool) -> Rates:
    argv = _serve_argv(*(["--offload"] if offload else []))
    params = StdioServerParameters(command=sys.executable, args=argv)
    async with Client(params) as client:  # one process serving both: tools are prefixed
        calls = {"echo": _checked(client, "echo__echo", ECHO_ARGS)}
        calls.update({t: _checked(client, f"calendar__{t}", a) for t, a in READ_TOOLS.items()})
        return await _compare(calls, n, rounds)


async def bench_http(n: int, rounds: int, offload: bool) -> Rates:
    argv = _serve_argv("--transport", "http", "--port", "0", *(["--offload"] if offload else []))
    proc = subprocess.Popen([sys.executable, *argv], stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
        match = re.search(r"listening on (http://\S+)", line)
        if not match:
            raise RuntimeError(f"server did not start: {line}{proc.stderr.read()}")
        base = match.group(1)
        async with Client(f"{base}/calendar/mcp") as cal, Client(f"{base}/echo/mcp") as ech:
            calls = {"echo": _checked(ech, "echo", ECHO_ARGS)}
            calls.update({t: _checked(cal, t, a) for t, a in READ_TOOLS.items()})
            return await _compare(calls, n, rounds)
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()


def direct_micros(n: int, rounds: int) -> dict[str, float]:
    """CPU microseconds per ``Session.call`` with no MCP at all (best block), per tool."""
    calendar = prove_gym.get_server("calendar").session(SEED)
    echo_session = echo_server.session(SEED)
    calls = {"echo": lambda: echo_session.call("echo", ECHO_ARGS)}
    calls.update({t: (lambda t=t, a=a: calendar.call(t, a)) for t, a in READ_TOOLS.items()})
    best: dict[str, float] = {}
    for name, call in calls.items():
        for _ in range(n // 10):
            call()
        times = []
        for _ in range(rounds):
            start = time.process_time()
            for _ in range(n):
                call()
            times.append((time.process_time() - start) / n)
        best[name] = min(times) * 1e6
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer calls (a smoke run)")
    parser.add_argument("--calls", type=int, default=None, help="calls per block")
    parser.add_argument("--rounds", type=int, default=None, help="blocks per tool")
    args = parser.parse_args()
    n = args.calls or (50 if args.quick else 300)
    rounds = args.rounds or (2 if args.quick else 5)
    runs = [
        ("in-process", bench_inprocess, False),
        ("in-process, offload", bench_inprocess, True),
        ("stdio", bench_stdio, False),
        ("http", bench_http, False),
        ("http, offload", bench_http, True),
    ]
    direct = direct_micros(n, rounds)
    results = []
    for label, bench, offload in runs:
        results.append((label, anyio.run(bench, n, rounds, offload)))
        print(f"measured {label}", file=sys.stderr, flush=True)
    for index, title in (
        (0, "wall clock: calls/s"),
        (1, "CPU: calls per CPU-second of client + server processes (robust to other load)"),
    ):
        print(f"{title}; best of {rounds} blocks of {n} calls (median in brackets), seed {SEED}")
        header = f"{'transport':<22}{'echo':>16}"
        for tool in READ_TOOLS:
            header += f"{tool:>20}{'ratio':>8}"
        print(header)
        for label, rates in results:
            per_tool = {t: [r[index] for r in rs] for t, rs in rates.items()}
            echo_best = max(per_tool["echo"])
            row = f"{label:<22}{_fmt(per_tool['echo']):>16}"
            for tool in READ_TOOLS:
                row += f"{_fmt(per_tool[tool]):>20}{max(per_tool[tool]) / echo_best:>8.0%}"
            print(row)
        print()
    print("ratio = the read tool's best rate / the echo tool's best rate, same transport")
    print("(target >= 70%). For scale, Session.call alone with no MCP, CPU us per call: ")
    print("  " + ", ".join(f"{t} {us:,.0f}" for t, us in direct.items()))


def _fmt(rates: list[float]) -> str:
    return f"{max(rates):,.0f} ({statistics.median(rates):,.0f})"


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--serve":
        sys.exit(_serve(sys.argv[2:]))
    main()
