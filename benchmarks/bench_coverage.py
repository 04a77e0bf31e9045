"""Every tool in the gold, at every seed: per tool, its gold calls and the candidates dropped
at it, for ``prove-gym synth --servers all --n 1000`` at several seeds (issue #43 item 8).

For each seed it prints the run's CPU-seconds, candidates and blocks, and the tools no kept
gold calls; then, for the tools with the fewest gold calls over the seeds (and those named
with ``--tools``), the gold calls per seed and the drops that name the tool, by reason
(``step_failed:<tool>``, ``ungroundable:<tool>.<param>``, ``noop_write:<tool>``, ...: the
step of the candidate that ended it). A run is one process, the seeds one after another, so
the CPU-seconds of a seed include the plugins' caches warmed by the seeds before it.

It exits 1 when some seed leaves a tool out: the check that the quick suite cannot afford
(about 30 CPU-seconds a seed).

Run: ``python benchmarks/bench_coverage.py [--seeds 0,1,41,77,2026,4343] [--n 1000]
[--tools food_delivery.assign_courier,filesystem.rmdir] [--fewest 8]``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections import Counter

import prove_gym
from prove_gym.synth import SynthConfig, synthesize

SEEDS = (0, 1, 41, 77, 2026, 4343)
"""The seeds issue #43 item 8 is read at."""


def tool_of(reason: str) -> str | None:
    """The tool a drop reason names (``step_failed:rmdir``, ``ungroundable:rmdir.path``),
    or None (``near_duplicate``, ``share_full:complete``).

    >>> tool_of("ungroundable:assign_courier.order_id"), tool_of("near_duplicate")
    ('assign_courier', None)
    """
    kind, _, rest = reason.partition(":")
    if kind not in ("step_failed", "ungroundable", "noop_write", "unknowable_value") or not rest:
        return None
    return rest.split(".")[0]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", default=",".join(map(str, SEEDS)))
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--tools", default="", help="server.tool,... to show whatever their count")
    ap.add_argument("--fewest", type=int, default=8, help="how many of the rarest tools to show")
    args = ap.parse_args()
    seeds = [int(s) for s in args.seeds.split(",") if s]
    registry = prove_gym.get_registry()
    tools = [
        f"{s}.{t.name}"
        for s in sorted(registry.servers)
        for t in registry.get_server(s).visible_tools()
    ]
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print(f"{len(tools)} tools of {len(registry.servers)} servers, --n {args.n}\n")
    gold: dict[int, Counter[str]] = {}
    drops: dict[int, dict[str, Counter[str]]] = {}
    missing = 0
    for seed in seeds:
        cpu0 = time.process_time()
        result = synthesize(SynthConfig(n=args.n, seed=seed))
        cpu = time.process_time() - cpu0
        gold[seed] = Counter(f"{t.server}.{s.name}" for t in result.tasks for s in t.scored_steps)
        per_tool: dict[str, Counter[str]] = {}
        for server, reasons in result.server_drops.items():
            for reason, count in reasons.items():
                name = tool_of(reason)
                if name is not None:
                    per_tool.setdefault(f"{server}.{name}", Counter())[reason] += count
        drops[seed] = per_tool
        unused = [t for t in tools if not gold[seed][t]]
        missing += bool(unused)
        print(
            f"seed {seed}: {cpu:.1f} CPU-s, {len(result.tasks)} tasks, {result.candidates} "
            f"candidates, {result.blocks} blocks; "
            + (f"unused tools: {', '.join(unused)}" if unused else "every tool used")
        )
    shown = sorted(tools, key=lambda t: (min(gold[s][t] for s in seeds), t))[: args.fewest]
    shown += [t for t in args.tools.split(",") if t and t not in shown]
    print(
        "\ngold calls per seed (" + ", ".join(map(str, seeds)) + ") and the drops naming the tool"
    )
    for t in shown:
        counts = " ".join(f"{gold[s][t]:>3}" for s in seeds)
        total: Counter[str] = Counter()
        for s in seeds:
            total.update(drops[s].get(t, Counter()))
        why = ", ".join(f"{r} {n}" for r, n in total.most_common())
        print(f"  {t:<40} {counts}   drops (all seeds): {why or 'none'}")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
