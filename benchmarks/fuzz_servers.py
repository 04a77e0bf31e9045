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

Run: ``python benchmarks/fuzz_servers.py [--servers calendar,banking] [--examples 500]``.
"""

from __future__ import annotations

import argparse
import time
from collections import Counter
from typing import Any

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

import prove_gym
from prove_gym import Server
from prove_gym.testing import fuzz_arguments, hostile_cases
from prove_gym.testing.conformance import FINDING_KINDS, FUZZ_SEED, CallChecker, Finding

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


def fuzz_tools(server: Server, tally: Tally, examples: int) -> None:
    with server.session(seed=FUZZ_SEED) as session:
        checker = CallChecker(server, session)
        for name, spec in server.tools.items():
            plausible = checker.plausible(spec)
            for arguments in hostile_cases(spec, plausible):
                checker.reset()
                tally.add(name, checker.call(name, arguments)[1])
            fuzz_one(checker, tally, name, fuzz_arguments(spec, plausible=plausible), examples)


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
    args = parser.parse_args()
    registry = prove_gym.get_registry()
    names = [n for n in args.servers.split(",") if n] or list(registry.servers)
    header = ["server", "calls", *FINDING_KINDS, "seconds"]
    print(" ".join(f"{h:>13}" for h in header))
    for name in names:
        server = registry.get_server(name)
        tally = Tally()
        began = time.perf_counter()
        fuzz_tools(server, tally, args.examples)
        call_sequences(server, tally, args.sequences, args.steps)
        row = [name, tally.calls, *(tally.counts[k] for k in FINDING_KINDS)]
        row.append(f"{time.perf_counter() - began:.0f}")
        print(" ".join(f"{v:>13}" for v in row), flush=True)
        if args.show:
            for (tool, kind, _), message in sorted(tally.first.items()):
                print(f"    [{kind}] {tool}: {message[:300]}".replace("\n", " "))


if __name__ == "__main__":
    main()
