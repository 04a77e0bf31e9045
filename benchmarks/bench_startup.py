"""Cold start: what a fresh process pays before it can do anything, beside a bare floor.

Each figure is the median CPU time (user + system) of ``--runs`` fresh processes, measured
from the parent with ``resource.getrusage(RUSAGE_CHILDREN)``; the floor is a process that
only imports Gymnasium, run in the same loop. Rows:

- ``import gymnasium`` (the floor) and ``import prove_gym``;
- ``make + reset``: ``gymnasium.make("prove/calendar-v0")`` and one ``reset()``;
- ``all servers``: every installed plugin loaded (``get_registry().servers``);
- ``prove-gym list`` and ``prove-gym --help``;
- ``serve calendar``: ``prove-gym serve calendar`` until it answers ``initialize`` over stdio
  (the process is then closed; its CPU until then is counted).

Run: ``python benchmarks/bench_startup.py [--runs 5]``. Targets (issue #47): make + reset
<= 0.5 s over the floor; ``serve`` answering ``initialize`` <= 1 s; ``list`` <= 1 s; all
twenty servers <= 2 s.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time

PY = sys.executable
CASES: dict[str, list[str]] = {
    "import gymnasium (floor)": [PY, "-c", "import gymnasium"],
    "import prove_gym": [PY, "-c", "import prove_gym"],
    "make + reset (calendar)": [
        PY,
        "-c",
        "import gymnasium, prove_gym; gymnasium.make('prove/calendar-v0').reset(seed=0)",
    ],
    "all servers loaded": [PY, "-c", "import prove_gym; prove_gym.get_registry().servers"],
    "prove-gym list": [PY, "-m", "prove_gym", "list"],
    "prove-gym --help": [PY, "-m", "prove_gym", "--help"],
}
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "bench_startup", "version": "0"},
    },
}


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_once(command: list[str]) -> float:
    before = children_cpu()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    return children_cpu() - before


def serve_once(timeout: float = 60.0) -> tuple[float, float]:
    """CPU and wall time of ``prove-gym serve calendar`` until its reply to ``initialize``."""
    before = children_cpu()
    start = time.perf_counter()
    proc = subprocess.Popen(
        [PY, "-m", "prove_gym", "serve", "calendar"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write((json.dumps(INITIALIZE) + "\n").encode())
    proc.stdin.flush()
    line = proc.stdout.readline()  # the reply (bounded by the timeout below)
    wall = time.perf_counter() - start
    proc.stdin.close()  # end of input: the server exits
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    if b'"result"' not in line:
        raise RuntimeError(f"serve answered initialize with {line[:200]!r}")
    return children_cpu() - before, wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    os.environ.setdefault("PYTHONHASHSEED", "0")
    samples: dict[str, list[float]] = {name: [] for name in CASES}
    serve: list[tuple[float, float]] = []
    for _ in range(args.runs):  # interleaved, so a busy moment hits every row alike
        for name, command in CASES.items():
            samples[name].append(run_once(command))
        serve.append(serve_once())
    floor = statistics.median(samples["import gymnasium (floor)"])
    print(f"median CPU s (user + sys) of {args.runs} fresh processes; floor = import gymnasium")
    print(f"{'case':<28} {'CPU s':>7} {'over floor':>11}")
    for name, values in samples.items():
        cpu = statistics.median(values)
        print(f"{name:<28} {cpu:>7.3f} {cpu - floor:>+11.3f}")
    cpu = statistics.median(c for c, _ in serve)
    wall = statistics.median(w for _, w in serve)
    print(
        f"{'serve calendar: initialize':<28} {cpu:>7.3f} {cpu - floor:>+11.3f}   (wall {wall:.3f} s)"
    )


if __name__ == "__main__":
    main()
