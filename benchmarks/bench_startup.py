"""Cold start: what a fresh process pays before it can do anything, beside a bare floor.

Each figure is the median CPU time (user + system) of ``--runs`` fresh processes, in two
columns:

- ``ready``: the CPU the process has used when it is ready: for a ``python -c`` row, read
  by the process itself (``getrusage(RUSAGE_SELF)``) after its last statement; for
  ``serve``, read from ``/proc/<pid>/stat`` the moment its answer to ``initialize``
  arrives (the issue's "answers ``initialize`` after launch").
- ``process``: the whole process, its exit included (``getrusage(RUSAGE_CHILDREN)`` in
  the parent once it has ended). Exit costs CPython a walk and a free of every object
  (about 0.1 s for SQLAlchemy's alone); it is paid after the work, not before it.

The floor is a process that only imports Gymnasium, run in the same loop. Rows:

- ``import gymnasium`` (the floor) and ``import prove_gym``;
- ``make + reset``: ``gymnasium.make("prove/calendar-v0")`` and one ``reset()``;
- ``all servers``: every installed plugin loaded (``get_registry().servers``);
- ``prove-gym list`` and ``prove-gym --help`` (``process`` only: a command is done when
  its process is);
- ``serve calendar``: ``prove-gym serve calendar`` until it answers ``initialize`` over
  stdio (the process is then closed).

Before measuring, prove_gym's and the plugins' modules are byte-compiled (``compileall``),
as an installed wheel's are: a shell with ``PYTHONDONTWRITEBYTECODE=1`` would otherwise
compile prove_gym's sources again in every process (about 0.1 CPU-second). The listing
cache (:mod:`prove_gym.catalog`) is a private temporary folder, written once before the
runs: a cache folder shared with other checkouts would hold another key's listing.

Run: ``python benchmarks/bench_startup.py [--runs 5]``. Targets (issue #47): make + reset
<= 0.5 s over the floor; ``serve`` answering ``initialize`` <= 1 s; ``list`` <= 1 s; all
twenty servers <= 2 s.
"""

from __future__ import annotations

import argparse
import compileall
import importlib.util
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PY = sys.executable
READY = (
    "\nimport resource as _r\n_u = _r.getrusage(_r.RUSAGE_SELF)\nprint(_u.ru_utime + _u.ru_stime)"
)
CASES: dict[str, list[str]] = {
    "import gymnasium (floor)": [PY, "-c", "import gymnasium" + READY],
    "import prove_gym": [PY, "-c", "import prove_gym" + READY],
    "make + reset (calendar)": [
        PY,
        "-c",
        "import gymnasium, prove_gym; gymnasium.make('prove/calendar-v0').reset(seed=0)" + READY,
    ],
    "all servers loaded": [
        PY,
        "-c",
        "import prove_gym; prove_gym.get_registry().servers" + READY,
    ],
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
TICK = os.sysconf("SC_CLK_TCK")


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_once(command: list[str]) -> tuple[float, float | None]:
    """(CPU of the whole process, CPU it reported when ready or ``None``)."""
    before = children_cpu()
    done = subprocess.run(command, check=True, capture_output=True, text=True)
    ready = float(done.stdout.split()[-1]) if command[1] == "-c" else None
    return children_cpu() - before, ready


def proc_cpu(pid: int) -> float:
    """User + system CPU seconds of a running process, from ``/proc/<pid>/stat``."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    fields = stat[stat.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / TICK  # utime, stime (fields 14 and 15)


def serve_once(timeout: float = 60.0) -> tuple[float, float, float]:
    """CPU of ``prove-gym serve calendar`` when its answer to ``initialize`` arrives, the
    wall time until then, and the CPU of the whole process."""
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
    ready = proc_cpu(proc.pid)
    proc.stdin.close()  # end of input: the server exits
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    if b'"result"' not in line:
        raise RuntimeError(f"serve answered initialize with {line[:200]!r}")
    return ready, wall, children_cpu() - before


def byte_compile() -> None:
    """Write the ``.pyc`` of prove_gym's and the plugins' modules (see the module doc)."""
    for package in ("prove_gym", "prove_plugins"):
        spec = importlib.util.find_spec(package)
        for location in (spec.submodule_search_locations or []) if spec else []:
            compileall.compile_dir(location, quiet=1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    os.environ.setdefault("PYTHONHASHSEED", "0")
    os.environ["PROVE_GYM_CACHE_DIR"] = tempfile.mkdtemp(prefix="bench_startup-")
    byte_compile()
    run_once(CASES["prove-gym list"])  # writes the listing cache
    samples: dict[str, list[tuple[float, float | None]]] = {name: [] for name in CASES}
    serve: list[tuple[float, float, float]] = []
    for _ in range(args.runs):  # interleaved, so a busy moment hits every row alike
        for name, command in CASES.items():
            samples[name].append(run_once(command))
        serve.append(serve_once())
    floor = statistics.median(p for p, _ in samples["import gymnasium (floor)"])
    floor_ready = statistics.median(r or 0.0 for _, r in samples["import gymnasium (floor)"])
    print(f"median CPU s (user + sys) of {args.runs} fresh processes; floor = import gymnasium")
    print(f"{'case':<28} {'ready':>7} {'over floor':>11} {'process':>8} {'over floor':>11}")
    for name, values in samples.items():
        cpu = statistics.median(p for p, _ in values)
        if values[0][1] is None:
            shown = f"{'':>7} {'':>11}"
        else:
            ready = statistics.median(r or 0.0 for _, r in values)
            shown = f"{ready:>7.3f} {ready - floor_ready:>+11.3f}"
        print(f"{name:<28} {shown} {cpu:>8.3f} {cpu - floor:>+11.3f}")
    ready = statistics.median(r for r, _, _ in serve)
    wall = statistics.median(w for _, w, _ in serve)
    cpu = statistics.median(c for _, _, c in serve)
    print(
        f"{'serve calendar: initialize':<28} {ready:>7.3f} {ready - floor_ready:>+11.3f} "
        f"{cpu:>8.3f} {cpu - floor:>+11.3f}   (wall until the answer {wall:.3f} s)"
    )


if __name__ == "__main__":
    main()
