"""Gymnasium's passive environment checker, kept usable after a reset that raises.

``gymnasium.make`` wraps every env in :class:`gymnasium.wrappers.PassiveEnvChecker`,
which checks the first ``reset`` and the first ``step``. When that first ``reset``
raises (a malformed task in ``options``), Gymnasium's wrapper has already marked reset
as checked without keeping its result, and the next ``step`` fails inside the checker
(``cannot unpack non-iterable NoneType object``) however good the later reset was.
:class:`EnvChecker` is the same checker, except that a reset which raises is checked
again on the next call. ``prove/<server>-vN`` ids use it in place of Gymnasium's own
(``disable_env_checker`` in their spec turns Gymnasium's off, so checks do not run twice).
"""

from __future__ import annotations

from typing import Any

from gymnasium.wrappers import PassiveEnvChecker


class EnvChecker(PassiveEnvChecker):
    """:class:`~gymnasium.wrappers.PassiveEnvChecker`, re-armed by a reset that raises."""

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        first = not self.checked_reset
        try:
            return super().reset(seed=seed, options=options)
        except BaseException:
            if first:
                self.checked_reset = False  # nothing was checked: check the next reset
            raise
