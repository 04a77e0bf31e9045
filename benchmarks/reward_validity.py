"""Reward validity over the shipped tasks (or a task set): the run of ``prove-gym reward-check``.

The perturbation families, the judge and the report are documented in
:mod:`prove_gym.eval.reward_check`; this script is the same run with the same options, kept
where the README and docs/reward.md point.
Run: ``python benchmarks/reward_validity.py [DIR|FILE] [--quick] [--turns] [--json PATH]``.
"""

from __future__ import annotations

import sys

from prove_gym.cli import main

if __name__ == "__main__":
    sys.exit(main(["reward-check", *sys.argv[1:]]))
