"""Tool calls per second through MCP: a calendar read tool beside a one-line echo tool.

Both tools go through the same machinery (``prove-gym serve``: ``ProveMCPServer``,
``Session.call``, the SDK transports); the echo tool belongs to a throwaway
server registered at run time, so the gap between the two rates is the cost of
the calendar tool's own work (an SQLite query, ORM objects, JSON). Each
transport is measured in one run, echo and calendar in alternating blocks, so
load from other processes on the machine hits both alike; the best block of
each is reported, with the median beside it, and so is each ratio.

Transports: in-process ``mcp.Client(server)``; stdio (``prove-gym serve calendar echo``
launched by the SDK's stdio client); streamable HTTP on 127.0.0.1 (``prove-gym serve
calendar echo --transport http``, endpoints /calendar/mcp and /echo/mcp). Those
rows drive one client at a time. The "16 clients" rows drive the same HTTP
server with ``--clients`` concurrent clients (default 16), each its own
``mcp.Client`` and so its own MCP session and server-side state, all calling at
once (an anyio task group, ``--client-calls`` calls each per block); their rates
are the aggregate of all clients. Rows marked "offload" run each call in a
worker thread instead of inline on the event loop.

Three tables: wall-clock calls/s; calls per CPU-second of the client and server
processes together (robust to load from other processes); and, for the
transports with a server process of its own, that process's CPU microseconds
per call (the server's share; the client's is the rest).

Run: ``python benchmarks/bench_mcp.py`` (``--quick`` for a short run,
``--clients 4`` for another concurrency).
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import os
import re
import statistics
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
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
    """Child-process mode: ``prove-gym serve`` with the echo server registered at run time."""
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


Block = Callable[[], Awaitable[int]]
"""One block of calls (one client in a row, or several at once); returns how many it made."""

Rates = dict[str, list[tuple[float, float, float]]]
"""Per tool, for every block: (wall-clock calls/s, calls per CPU-second of client + server
processes, CPU microseconds per call of the server processes alone)."""


async def _rate(block: Block) -> tuple[float, float, float]:
    own, children, wall = time.process_time(), _children_cpu(), time.perf_counter()
    n = await block()
    wall = time.perf_counter() - wall
    children = _children_cpu() - children
    cpu = time.process_time() - own + children
    return n / wall, n / max(cpu, 1e-9), children / n * 1e6


async def _compare(blocks: dict[str, Block], warmup: dict[str, Block], rounds: int) -> Rates:
    for block in warmup.values():  # caches, first-call list_tools, connections
        await block()
    rates: Rates = {k: [] for k in blocks}
    for _ in range(rounds):
        for name, block in blocks.items():
            rates[name].append(await _rate(block))
    return rates


def _serial(call: Call, n: int) -> Block:
    """``n`` calls, one after another."""

    async def block() -> int:
        for _ in range(n):
            await call()
        return n

    return block


def _concurrent(calls: list[Call], n: int) -> Block:
    """``n`` calls by each of ``calls``' clients, all clients at once."""

    async def one(call: Call) -> None:
        for _ in range(n):
            await call()

    async def block() -> int:
        async with anyio.create_task_group() as tg:
            for call in calls:
                tg.start_soon(one, call)
        return n * len(calls)

    return block


async def _compare_serial(calls: dict[str, Call], n: int, rounds: int) -> Rates:
    warmup = {k: _serial(c, max(5, n // 10)) for k, c in calls.items()}
    return await _compare({k: _serial(c, n) for k, c in calls.items()}, warmup, rounds)


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
        return await _compare_serial(calls, n, rounds)


def _serve_argv(*extra: str) -> list[str]:
    return [os.path.abspath(__file__), "--serve", "calendar", "echo", "--seed", str(SEED), *extra]


async def bench_stdio(n: int, rounds: int, offload: bool) -> Rates:
    argv = _serve_argv(*(["--offload"] if offload else []))
    params = StdioServerParameters(command=sys.executable, args=argv)
    async with Client(params) as client:  # one process serving both: tools are prefixed
        calls = {"echo": _checked(client, "echo__echo", ECHO_ARGS)}
        calls.update({t: _checked(client, f"calendar__{t}", a) for t, a in READ_TOOLS.items()})
        return await _compare_serial(calls, n, rounds)


@contextlib.contextmanager
def _http_server(offload: bool) -> Iterator[str]:
    """``prove-gym serve calendar echo --transport http`` in a child process; yields its base URL."""
    argv = _serve_argv("--transport", "http", "--port", "0", *(["--offload"] if offload else []))
    proc = subprocess.Popen([sys.executable, *argv], stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
        match = re.search(r"listening on (http://\S+)", line)
        if not match:
            raise RuntimeError(f"server did not start: {line}{proc.stderr.read()}")
        yield match.group(1)
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()


async def bench_http(n: int, rounds: int, offload: bool) -> Rates:
    with _http_server(offload) as base:
        async with Client(f"{base}/calendar/mcp") as cal, Client(f"{base}/echo/mcp") as ech:
            calls = {"echo": _checked(ech, "echo", ECHO_ARGS)}
            calls.update({t: _checked(cal, t, a) for t, a in READ_TOOLS.items()})
            return await _compare_serial(calls, n, rounds)


@contextlib.asynccontextmanager
async def _clients(url: str, count: int) -> AsyncIterator[list[Client]]:
    """``count`` clients of ``url``, each with its own MCP session (so its own state)."""
    async with contextlib.AsyncExitStack() as stack:
        yield [await stack.enter_async_context(Client(url)) for _ in range(count)]


async def bench_http_concurrent(n: int, rounds: int, offload: bool, clients: int) -> Rates:
    """``clients`` clients per endpoint, all calling at once, ``n`` calls each per block."""
    with _http_server(offload) as base:
        async with (
            _clients(f"{base}/calendar/mcp", clients) as cal,
            _clients(f"{base}/echo/mcp", clients) as ech,
        ):
            calls = {"echo": [_checked(c, "echo", ECHO_ARGS) for c in ech]}
            calls.update({t: [_checked(c, t, a) for c in cal] for t, a in READ_TOOLS.items()})
            warmup = {k: _concurrent(c, max(3, n // 5)) for k, c in calls.items()}
            blocks = {k: _concurrent(c, n) for k, c in calls.items()}
            return await _compare(blocks, warmup, rounds)


def direct_micros(n: int, rounds: int) -> dict[str, float]:
    """CPU microseconds per ``Session.call`` with no MCP at all (best block), per tool."""
    calendar = prove_gym.get_server("calendar").session(SEED)
    echo_session = echo_server.session(SEED)
    calls: dict[str, Callable[[], Any]] = {"echo": lambda: echo_session.call("echo", ECHO_ARGS)}
    calls.update({t: functools.partial(calendar.call, t, a) for t, a in READ_TOOLS.items()})
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
    parser.add_argument("--calls", type=int, default=None, help="calls per block (one client)")
    parser.add_argument("--rounds", type=int, default=None, help="blocks per tool")
    parser.add_argument("--clients", type=int, default=16, help="concurrent HTTP clients")
    parser.add_argument(
        "--client-calls", type=int, default=None, help="calls per concurrent client per block"
    )
    args = parser.parse_args()
    n = args.calls or (50 if args.quick else 300)
    rounds = args.rounds or (2 if args.quick else 5)
    per_client = args.client_calls or (10 if args.quick else 40)
    clients = args.clients
    concurrent = f"{clients} client{'s' if clients > 1 else ''}"
    runs: list[tuple[str, Callable[[], Awaitable[Rates]]]] = [
        ("in-process", lambda: bench_inprocess(n, rounds, False)),
        ("in-process, offload", lambda: bench_inprocess(n, rounds, True)),
        ("stdio", lambda: bench_stdio(n, rounds, False)),
        ("http", lambda: bench_http(n, rounds, False)),
        ("http, offload", lambda: bench_http(n, rounds, True)),
        (f"http {concurrent}", lambda: bench_http_concurrent(per_client, rounds, False, clients)),
        (
            f"http {concurrent}, offload",
            lambda: bench_http_concurrent(per_client, rounds, True, clients),
        ),
    ]
    direct = direct_micros(n, rounds)
    results = []
    for label, bench in runs:
        results.append((label, anyio.run(bench)))
        print(f"measured {label}", file=sys.stderr, flush=True)
    print(
        f"one client: best of {rounds} blocks of {n} calls; {concurrent}: best of {rounds} "
        f"blocks of {per_client} calls per client (median in brackets); seed {SEED}"
    )
    print()
    for index, title in (
        (0, "wall clock: calls/s"),
        (1, "CPU: calls per CPU-second of client + server processes (robust to other load)"),
    ):
        print(title)
        print(_header("ratio"))
        for label, rates in results:
            print(_row(label, rates, index, max, lambda tool, echo: f"{tool / echo:.0%}"))
        print()
    print("server process alone: CPU microseconds per call (lower is better); extra = tool - echo")
    print(_header("extra"))
    for label, rates in results:
        if not label.startswith("in-process"):  # those have no server process of their own
            print(_row(label, rates, 2, min, lambda tool, echo: f"{tool - echo:+,.0f}"))
    print()
    print("ratio = the read tool's best rate / the echo tool's best rate (medians in brackets),")
    print("same transport and clients (target >= 70%).")
    print("For scale, Session.call alone with no MCP, CPU us per call:")
    print("  " + ", ".join(f"{t} {us:,.0f}" for t, us in direct.items()))


def _header(compare: str) -> str:
    header = f"{'transport':<28}{'echo':>16}"
    for tool in READ_TOOLS:
        header += f"{tool:>20}{compare:>16}"
    return header


def _row(
    label: str,
    rates: Rates,
    index: int,
    best: Callable[[list[float]], float],
    compare: Callable[[float, float], str],
) -> str:
    """One transport's best (and median) value per tool, each compared with echo's
    (best with best, and median with median in brackets)."""
    values = {t: [r[index] for r in rs] for t, rs in rates.items()}
    echo, median = best(values["echo"]), statistics.median(values["echo"])
    row = f"{label:<28}{_fmt(values['echo'], best):>16}"
    for tool in READ_TOOLS:
        vs_best = compare(best(values[tool]), echo)
        vs_median = compare(statistics.median(values[tool]), median)
        row += f"{_fmt(values[tool], best):>20}{f'{vs_best} ({vs_median})':>16}"
    return row


def _fmt(values: list[float], best: Callable[[list[float]], float]) -> str:
    return f"{best(values):,.0f} ({statistics.median(values):,.0f})"


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--serve":
        sys.exit(_serve(sys.argv[2:]))
    main()
