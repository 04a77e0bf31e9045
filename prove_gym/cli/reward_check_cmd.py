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
    from prove_gym.eval.reward_check import add_arguments

    add_arguments(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from prove_gym.eval.reward_check import run as check

    return check(args)
