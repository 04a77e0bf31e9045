"""``prove-gym synth``: write a validated, state-grounded training dataset (no LLM needed)."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any


def _range(text: str) -> tuple[int, int]:
    """``"2-5"`` -> (2, 5); ``"3"`` -> (3, 3)."""
    lo, _, hi = text.partition("-")
    try:
        pair = (int(lo), int(hi or lo))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a range such as 2-5, got {text!r}") from None
    if pair[0] > pair[1]:
        raise argparse.ArgumentTypeError(f"range {text!r} is empty")
    return pair


def _shares(text: str) -> tuple[float, float, float]:
    parts = [p for p in text.split(",") if p.strip()]
    if len(parts) != 3:
        raise argparse.ArgumentTypeError("expected three shares: complete,missing,minimal")
    try:
        a, b, c = (float(p) for p in parts)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not numbers: {text!r}") from None
    return a, b, c


def _rate(text: str) -> float:
    value = float(text)
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"a rate is between 0 and 1, got {text}")
    return value


def add_parser(sub: Any) -> None:
    from prove_gym.synth.config import SynthConfig

    d = SynthConfig()
    p = sub.add_parser(
        "synth",
        help="synthesize validated multi-turn tool-use conversations for training",
        description="Sample tool chains over each server's dependency graph, ground them in "
        "live state, execute, render 2-3 user turns, replay-validate, and write JSONL for "
        "trainers. Rates default to the paper's.",
    )
    p.add_argument("--servers", default="all", help="comma-separated servers, or 'all'")
    p.add_argument("--n", type=int, default=d.n, help=f"tasks in all (default {d.n})")
    p.add_argument("--out", required=True, help="output folder")
    p.add_argument("--seed", type=int, default=d.seed, help="master seed")
    p.add_argument(
        "--workers",
        type=int,
        default=1,
        help="blocks run at once: processes, or Ray tasks with --ray (output does not depend on it)",
    )
    p.add_argument(
        "--ray",
        nargs="?",
        const="local",
        metavar="ADDRESS",
        help="run blocks as Ray tasks (pip install 'prove-gym[ray]'): alone, on a local Ray of "
        "--workers CPUs, shut down at the end; with an address (auto, HOST:PORT, "
        "ray://HOST:10001), on that cluster, which must have prove-gym installed",
    )
    g = p.add_argument_group("states")
    g.add_argument(
        "--state-seeds",
        type=int,
        default=d.state_seeds,
        help="size of the state-seed pool (used with --block-states 0)",
    )
    g.add_argument(
        "--test-fraction", type=_rate, default=d.test_fraction, help="share of state seeds held out"
    )
    g.add_argument(
        "--block-states",
        type=int,
        default=d.block_states,
        help="fresh states each group of --state-blocks blocks samples (0: the seed pool only)",
    )
    g.add_argument(
        "--state-blocks",
        type=int,
        default=d.state_blocks,
        help="consecutive blocks of a server that share their fresh states (default 1: "
        "each its own; 4 takes a third less CPU, with about 400 states in 13.5K tasks)",
    )
    g.add_argument(
        "--sizes",
        type=lambda v: tuple(int(x) for x in v.split(",")),
        default=d.sizes,
        metavar="S,S",
        help="sizes of the block states (default 1,2)",
    )
    g.add_argument("--size", type=int, default=None, help="one state size for every task")
    g = p.add_argument_group("conversations")
    g.add_argument("--chain-length", type=_range, default=d.chain_lengths, metavar="LO-HI")
    g.add_argument("--turns", type=_range, default=d.turns, metavar="LO-HI", help="user turns")
    g.add_argument(
        "--info-levels",
        type=_shares,
        default=d.info_levels,
        metavar="C,M,N",
        help="shares of complete,missing,minimal requests (default 0.6,0.2,0.2)",
    )
    g = p.add_argument_group("robustness knobs")
    g.add_argument("--distractor-rate", type=_rate, default=d.distractor_rate)
    g.add_argument("--distractors", type=_range, default=d.distractors, metavar="LO-HI")
    g.add_argument("--strip-enum-rate", type=_rate, default=d.strip_enum_rate)
    g.add_argument("--irrelevant-rate", type=_rate, default=d.irrelevant_rate)
    g.add_argument("--missing-tool-rate", type=_rate, default=d.missing_tool_rate)
    g.add_argument(
        "--abstention-rate",
        type=_rate,
        default=d.abstention_rate,
        help="share of whole tasks whose right answer is no call (paper: 8.3%%)",
    )
    g.add_argument(
        "--recovery-rate",
        type=_rate,
        default=d.recovery_rate,
        help="share of steps that failed once before succeeding whose gold shows the failed "
        "call and its recovery (default 0.5)",
    )
    g.add_argument(
        "--give-up-rate",
        type=_rate,
        default=d.give_up_rate,
        help="share of calls failing on the state as asked (no fix named) whose gold gives "
        "them up: the failed call, then an explanation, no further call (default 0.5)",
    )
    g = p.add_argument_group("validation")
    g.add_argument("--max-error-rate", type=_rate, default=d.max_error_rate)
    g.add_argument("--dedup-threshold", type=_rate, default=d.dedup_threshold)
    g.add_argument(
        "--dedup",
        choices=("calls", "values"),
        default=d.dedup,
        help="near-duplicates by tools and argument names (calls, the paper's) or values too",
    )
    g.add_argument("--max-attempts", type=int, default=d.max_attempts)
    g.add_argument(
        "--block-size",
        type=int,
        default=d.block_size,
        help=f"candidates per work unit, each with states of its own (default {d.block_size})",
    )
    g.add_argument(
        "--view-lag",
        type=int,
        default=d.view_lag,
        help="a block skips what the collector had kept (full mix kinds, near duplicates) "
        "from all blocks of its server but the N-1 right before it; at most N blocks of "
        f"a server run at once (default {d.view_lag}; raise it for a large cluster)",
    )
    g = p.add_argument_group("optional LLM (OpenAI-compatible endpoint)")
    g.add_argument(
        "--writer",
        choices=("template", "llm"),
        default=d.writer,
        help="who writes the user turns: the templates (default) or the endpoint at "
        "--llm-url, each rewrite checked against the gold (a rejected one keeps the template)",
    )
    g.add_argument("--llm-url", help="base URL, such as http://127.0.0.1:8000/v1")
    g.add_argument("--llm-model", help="model name the endpoint serves")
    g.add_argument("--llm-api-key", help="bearer token (default: $OPENAI_API_KEY)")
    g.add_argument(
        "--llm-timeout",
        type=float,
        default=d.llm_timeout,
        help=f"seconds per request (default {d.llm_timeout:g}; a failed turn keeps its template)",
    )
    g.add_argument("--llm-graph", action="store_true", help="also refine the dependency graph")
    g.add_argument("--cache-dir", help="LLM reply cache (default: ~/.cache/prove_gym)")
    p.add_argument(
        "--format",
        default="hermes",
        help="tool-call format of the openrlhf prompts (default: hermes)",
    )
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from prove_gym.synth import SynthConfig, format_report, synthesize, write_dataset

    servers = tuple(s.strip() for s in args.servers.split(",") if s.strip()) or ("all",)
    weights = SynthConfig().length_weights
    lo, hi = args.chain_length
    if (lo, hi) != SynthConfig().chain_lengths:
        weights = ()
    cfg = SynthConfig(
        servers=servers,
        n=args.n,
        seed=args.seed,
        state_seeds=args.state_seeds,
        block_states=args.block_states,
        state_blocks=args.state_blocks,
        sizes=args.sizes,
        test_fraction=args.test_fraction,
        size=args.size,
        chain_lengths=(lo, hi),
        length_weights=weights,
        turns=args.turns,
        info_levels=args.info_levels,
        distractor_rate=args.distractor_rate,
        distractors=args.distractors,
        strip_enum_rate=args.strip_enum_rate,
        irrelevant_rate=args.irrelevant_rate,
        missing_tool_rate=args.missing_tool_rate,
        abstention_rate=args.abstention_rate,
        recovery_rate=args.recovery_rate,
        give_up_rate=args.give_up_rate,
        max_error_rate=args.max_error_rate,
        dedup_threshold=args.dedup_threshold,
        dedup=args.dedup,
        max_attempts=args.max_attempts,
        block_size=args.block_size,
        view_lag=args.view_lag,
        workers=args.workers,
        writer=args.writer,
        llm_url=args.llm_url,
        llm_model=args.llm_model,
        llm_api_key=args.llm_api_key,
        llm_timeout=args.llm_timeout,
        llm_graph=args.llm_graph,
        cache_dir=args.cache_dir,
    )
    try:
        result = synthesize(cfg, progress=not args.no_progress, ray=args.ray)
    except ModuleNotFoundError as exc:
        if exc.name != "ray":
            raise
        print(f"prove-gym synth: error: {exc}", file=sys.stderr)  # how to install it
        return 2
    report = write_dataset(result, args.out, format=args.format)
    print(format_report(report, result.seconds))
    for warning in result.warnings:
        print(f"WARNING: {warning}", file=sys.stderr)
    written = ", ".join(sorted(p.name for p in Path(args.out).iterdir() if p.is_file()))
    print(f"\nwrote {Path(args.out)}{os.sep}: {written}")
    return 0 if not result.missing else 1
