"""``prove-gym reward-check``: does the reward rank trajectories by their outcome, on this task set?"""

from __future__ import annotations

import argparse
from typing import Any


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "reward-check",
        help="perturb every task's gold trajectory, run each live, and report per family the "
        "mean reward and how well it ranks them against a state-based judge (ROC AUC)",
        description="Reward validity on any task set: the oracle trajectory of each task is "
        "perturbed into near misses (a dropped call, a duplicated write, a wrong id, a call "
        "where the user must be asked first, ...); each runs live and is labelled correct or "
        "not by its final state and answers; the report gives, per config and family, the "
        "mean reward and the ROC AUC of reward against that label.",
    )
    add_arguments(p)
    p.set_defaults(func=run)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``prove-gym reward-check`` and ``benchmarks/reward_validity.py``."""
    parser.add_argument(
        "source",
        nargs="?",
        default=None,
        help="a folder prove-gym synth wrote, or a .jsonl task file (default: shipped tasks)",
    )
    parser.add_argument("--tasks", default=None, help=argparse.SUPPRESS)  # the old spelling
    parser.add_argument(
        "--reward",
        default=None,
        help="the config to check first: a preset (default, paper) or name=W[,name=W] "
        "weights on the default (state=0.3,answers=0)",
    )
    parser.add_argument("--quick", action="store_true", help="2 variants per family (default 5)")
    parser.add_argument("--variants", type=int, default=None, help="variants per family and task")
    parser.add_argument("--limit", type=int, default=None, help="at most this many tasks")
    parser.add_argument("--servers", default=None, help="comma-separated servers (default: all)")
    parser.add_argument("--json", default=None, help="write every figure and trajectory here")
    parser.add_argument(
        "--turns",
        action="store_true",
        help="also judge every user turn and pay its turn reward (credit per turn): per family "
        "the AUC of turn rewards against the per-turn judge",
    )


def run(args: argparse.Namespace) -> int:
    from prove_gym.eval.reward_check import run as check

    return check(args)
