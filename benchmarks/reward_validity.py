"""Reward validity over the shipped tasks (or ``--tasks FILE``): ``prove-gym reward-check``.

The perturbation families, the judge and the report are documented in
:mod:`prove_gym.eval.reward_check`; this script is the same run, kept where the README and
docs/reward.md point. Run: ``python benchmarks/reward_validity.py [--quick] [--json PATH]``.
"""

from __future__ import annotations

from prove_gym.eval.reward_check import main

if __name__ == "__main__":
    main()
