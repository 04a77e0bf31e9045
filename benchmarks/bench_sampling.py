"""State sampling per server beside its floor: the ratio to track (issue #16).

Synthesis samples a fresh state for every block it draws, at the sizes of
``SynthConfig.sizes`` (1 and 2), so sampling is a large share of its CPU. For each server
and each of those sizes, in one process and with the same data:

- ``sample``: median process-CPU time of ``server.sample(seed, size)`` over ``--n`` seeds
  (``100 + i``): the sampler in its ORM session on an in-memory database, the commit and the
  serialisation.
- ``floor``: median process-CPU time, over the same states, of writing exactly the rows that
  state holds (read back from it, untimed) into a fresh in-memory ``sqlite3`` database:
  its schema (the same DDL, less the change log's triggers, which sampling adds after the
  rows), every table in dependency order with one ``executemany``, one commit. No
  randomness, no objects: the least that producing the state can cost.
- ``ratio``: sample / floor.

The summary adds the medians over all servers: the CPU one state of each server costs.

Run: ``python benchmarks/bench_sampling.py [--servers email,trading] [--n 20]``.
"""

from __future__ import annotations

import argparse
import sqlite3
import statistics
import time
from collections.abc import Callable
from typing import Any

import prove_gym
from prove_gym import Server

SIZES = (1, 2)


def cpu_ms(fn: Callable[..., Any], *args: Any) -> tuple[float, Any]:
    """Process-CPU milliseconds of ``fn(*args)``, and what it returned."""
    t0 = time.process_time()
    out = fn(*args)
    return (time.process_time() - t0) * 1e3, out


def rows_of(server: Server, data: bytes) -> tuple[list[str], list[tuple[str, list[tuple]]]]:
    """The state's DDL (its triggers fire at every row written: sampling adds them last) and
    its rows, table by table in dependency order (parents first)."""
    conn = sqlite3.connect(":memory:")
    conn.deserialize(data)
    ddl = [
        sql
        for (sql,) in conn.execute(
            "SELECT sql FROM sqlite_master WHERE sql IS NOT NULL AND type != 'trigger' "
            "ORDER BY rowid"
        )
    ]
    tables = []
    for table in server.base.metadata.sorted_tables:
        columns = ", ".join(f'"{c.name}"' for c in table.columns)
        rows = conn.execute(f'SELECT {columns} FROM "{table.name}" ORDER BY rowid').fetchall()
        marks = ", ".join("?" for _ in table.columns)
        tables.append((f'INSERT INTO "{table.name}" ({columns}) VALUES ({marks})', rows))
    conn.close()
    return ddl, tables


def insert_floor(ddl: list[str], tables: list[tuple[str, list[tuple]]]) -> None:
    conn = sqlite3.connect(":memory:")
    for sql in ddl:
        conn.execute(sql)
    for insert, rows in tables:
        if rows:
            conn.executemany(insert, rows)
    conn.commit()
    conn.close()


def bench(server: Server, size: int, n: int) -> tuple[float, float]:
    """Median CPU ms of sampling and of its floor, over seeds 100 .. 100 + n - 1."""
    sampled: list[float] = []
    floors: list[float] = []
    for i in range(n):
        ms, template = cpu_ms(server.sample, 100 + i, size)
        sampled.append(ms)
        ddl, tables = rows_of(server, template.data)
        floors.append(cpu_ms(insert_floor, ddl, tables)[0])
    return statistics.median(sampled), statistics.median(floors)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--servers", default="all", help="comma-separated, or all")
    parser.add_argument("--n", type=int, default=20, help="seeds per median")
    args = parser.parse_args()
    registry = prove_gym.get_registry()
    names = sorted(registry.servers) if args.servers == "all" else args.servers.split(",")
    for name in names:  # warm up: imports, mappers, Faker providers
        registry.servers[name].sample(99, 1)
    print(f"{'server':15s} {'size':>4s} {'sample':>10s} {'floor':>10s} {'ratio':>8s}")
    totals = {size: [0.0, 0.0] for size in SIZES}
    for name in names:
        server = registry.servers[name]
        for size in SIZES:
            ours, floor = bench(server, size, args.n)
            totals[size][0] += ours
            totals[size][1] += floor
            print(f"{name:15s} {size:4d} {ours:8.1f}ms {floor:8.2f}ms {ours / floor:7.1f}x")
    print()
    for size, (ours, floor) in totals.items():
        print(
            f"size {size}: one state of each of {len(names)} servers {ours:8.1f} ms CPU, "
            f"floor {floor:6.1f} ms ({ours / floor:.1f}x)"
        )


if __name__ == "__main__":
    main()
