"""A long fuzz campaign over every installed server: the conformance suite's checks, counted.

The test suite (``prove_gym.testing.conformance``) stops at the first problem of each
tool after a few dozen calls; this runs the same :class:`CallChecker` over many more
calls and counts what it finds instead of stopping:

- per tool: the fixed hostile battery (``hostile_cases``), then ``--examples`` calls with
  ``fuzz_arguments`` (junk, hostile and plausible values), each on a fresh state;
- per server: ``--sequences`` random call sequences of ``--steps`` calls on one session.

Counted per server: calls, uncaught (``Session.call`` raised), internal errors, path
leaks, partial writes (a failed call changed the state), reads that wrote, results
outside the output schema, errors without a message, slow calls. ``--show`` prints the
first message of each distinct (tool, kind, likely cause).

``--hostile`` weights the campaign towards hostile values: half of each tool's calls carry
every required parameter drawn from ``hostile_values`` and ``hostile_patterns`` (catastrophic
regexes, hostile globs, path-like, huge, deep and odd values), and each server also plays
the hostile assistant actions (``hostile_action_cases``: 10,000-call messages, 10,000-deep
JSON) through an ``Episode``. ``--min-calls N`` raises ``--examples`` so that the campaign
makes at least N calls in all; a TOTAL row sums the servers.

Run: ``python benchmarks/fuzz_servers.py [--servers calendar,banking] [--examples 500]``;
the hostile campaign: ``python benchmarks/fuzz_servers.py --hostile --min-calls 50000``.
"""

from __future__ import annotations

import argparse
import math
import time
from collections import Counter
from typing import Any

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

import prove_gym
from prove_gym import Server
from prove_gym.server.tool import ToolSpec
from prove_gym.testing import (
    fuzz_arguments,
    hostile_cases,
    hostile_patterns,
    hostile_values,
)
from prove_gym.testing.conformance import (
    FINDING_KINDS,
    FUZZ_SEED,
    CallChecker,
    Finding,
    check_hostile_actions,
)

CAMPAIGN = settings(
    deadline=None,
    database=None,
    derandomize=False,
    phases=[Phase.generate],
    suppress_health_check=list(HealthCheck),
)


class Tally:
    """Findings of one server: counts by kind and the first message of each distinct one."""

    def __init__(self) -> None:
        self.calls = 0
        self.counts: Counter[str] = Counter()
        self.first: dict[tuple[str, str, str], str] = {}

    def add(self, tool: str, findings: list[Finding]) -> None:
        self.calls += 1
        for f in findings:
            self.counts[f.kind] += 1
            self.first.setdefault((tool, f.kind, f.cause), f.message)


def hostile_arguments(
    spec: ToolSpec, plausible: dict[str, list[Any]]
) -> st.SearchStrategy[dict[str, Any]]:
    """Every required parameter (and some optional ones), each value hostile or plausible."""
    per_param = {}
    for p in spec.params:
        options = [hostile_values(), hostile_patterns()]
        if plausible.get(p.name):
            options.insert(0, st.sampled_from(plausible[p.name]))
        per_param[p.name] = st.one_of(*options)
    return st.fixed_dictionaries(
        {p.name: per_param[p.name] for p in spec.params if p.required},
        optional={p.name: per_param[p.name] for p in spec.params if not p.required},
    )


def fuzz_tools(server: Server, tally: Tally, examples: int, hostile: bool = False) -> None:
    with server.session(seed=FUZZ_SEED) as session:
        checker = CallChecker(server, session)
        for name, spec in server.tools.items():
            plausible = checker.plausible(spec)
            for arguments in hostile_cases(spec, plausible):
                checker.reset()
                tally.add(name, checker.call(name, arguments)[1])
            strategy = fuzz_arguments(spec, plausible=plausible)
            if hostile:
                strategy = st.one_of(strategy, hostile_arguments(spec, plausible))
            fuzz_one(checker, tally, name, strategy, examples)


def fuzz_one(
    checker: CallChecker,
    tally: Tally,
    name: str,
    strategy: st.SearchStrategy[dict[str, Any]],
    examples: int,
) -> None:
    @settings(CAMPAIGN, max_examples=examples)
    @given(arguments=strategy)
    def fuzz(arguments: dict[str, Any]) -> None:
        checker.reset()
        tally.add(name, checker.call(name, arguments)[1])

    fuzz()


def call_sequences(server: Server, tally: Tally, sequences: int, steps: int) -> None:
    with server.session(seed=FUZZ_SEED) as session:
        checker = CallChecker(server, session)
        calls = st.one_of(
            *(
                st.tuples(st.just(name), fuzz_arguments(spec, plausible=checker.plausible(spec)))
                for name, spec in server.tools.items()
            )
        )

        @settings(CAMPAIGN, max_examples=sequences)
        @given(sequence=st.lists(calls, min_size=1, max_size=steps))
        def run(sequence: list[tuple[str, dict[str, Any]]]) -> None:
            checker.reset()
            for name, arguments in sequence:
                tally.add(name, checker.call(name, arguments)[1])

        run()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--servers", default="", help="comma-separated names (default: all)")
    parser.add_argument("--examples", type=int, default=500, help="fuzzed calls per tool")
    parser.add_argument("--sequences", type=int, default=100, help="call sequences per server")
    parser.add_argument("--steps", type=int, default=30, help="calls per sequence")
    parser.add_argument("--show", action="store_true", help="print one message per finding")
    parser.add_argument("--hostile", action="store_true", help="weight towards hostile values")
    parser.add_argument("--min-calls", type=int, default=0, help="raise --examples to reach this")
    args = parser.parse_args()
    registry = prove_gym.get_registry()
    names = [n for n in args.servers.split(",") if n] or list(registry.servers)
    servers = [registry.get_server(n) for n in names]
    examples = args.examples
    if args.min_calls:
        tools = sum(len(s.tools) for s in servers)
        battery = sum(len(hostile_cases(t)) for s in servers for t in s.tools.values())
        # a sequence averages about (steps + 1) / 2 calls
        sequences = len(servers) * args.sequences * (args.steps + 1) // 2
        examples = max(examples, math.ceil((args.min_calls - battery - sequences) / tools))
    header = ["server", "calls", *FINDING_KINDS, "actions", "seconds"]
    print(" ".join(f"{h:>13}" for h in header))
    total = Tally()
    actions_total = 0
    for server in servers:
        tally = Tally()
        began = time.perf_counter()
        fuzz_tools(server, tally, examples, hostile=args.hostile)
        call_sequences(server, tally, args.sequences, args.steps)
        actions = "-"
        if args.hostile:
            try:
                check_hostile_actions(server, registry=registry)
                actions = "ok"
            except AssertionError as exc:
                actions = "FAILED"
                tally.first[("(episode)", "actions", "")] = str(exc)
            actions_total += actions == "ok"
        row = [server.name, tally.calls, *(tally.counts[k] for k in FINDING_KINDS), actions]
        row.append(f"{time.perf_counter() - began:.0f}")
        print(" ".join(f"{v:>13}" for v in row), flush=True)
        total.calls += tally.calls
        total.counts.update(tally.counts)
        if args.show:
            for (tool, kind, _), message in sorted(tally.first.items()):
                print(f"    [{kind}] {tool}: {message[:300]}".replace("\n", " "))
    row = ["TOTAL", total.calls, *(total.counts[k] for k in FINDING_KINDS)]
    row.append(f"{actions_total}/{len(servers)}" if args.hostile else "-")
    print(" ".join(f"{v:>13}" for v in [*row, ""]), flush=True)


if __name__ == "__main__":
    main()
