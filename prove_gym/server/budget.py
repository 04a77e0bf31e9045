"""A work budget per tool call: no argument can make one call run away.

Every call gets a fresh :class:`WorkBudget`. Tools spend it where their work grows with
the arguments or the state (entries visited by a walk, lines scanned by a search) through
``ctx.spend(n, ...)``; the core spends it on SQL too, through SQLite's progress handler,
so a query over a huge table stops as well. Past either limit, or past the wall-clock
limit, the call ends with :class:`~prove_gym.server.errors.WorkLimitExceeded`
(``bad_arguments``) and, like every failed call, changes nothing.

The unit and SQL-step limits are counts, so whether a call fits them is the same on
every machine: they are what bounds a call. The wall-clock limit is only a last resort
for a tool that forgets to spend, set far above any legitimate call (a loaded machine
must never turn a valid call into an error, or the same seed could pay another reward).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from prove_gym.server.errors import WorkLimitExceeded

MAX_UNITS = 200_000
"""Units of tool work (entries visited, lines scanned, rows built) one call may spend."""

MAX_SQL_STEPS = 50_000_000
"""SQLite virtual-machine steps one call may run (about half a second of queries)."""

MAX_SECONDS = 20.0
"""Wall-clock seconds one call may run (a last resort; see the module docstring)."""

SQL_TICK = 10_000
"""SQLite calls the progress handler every this many virtual-machine steps."""


@dataclass(slots=True)
class WorkBudget:
    """What one call may still spend.

    Args:
        max_units: Units of tool work (see :data:`MAX_UNITS`).
        max_sql_steps: SQLite virtual-machine steps (see :data:`MAX_SQL_STEPS`).
        max_seconds: Wall-clock seconds (see :data:`MAX_SECONDS`).

    >>> budget = WorkBudget(max_units=10)
    >>> budget.start("find")
    >>> budget.spend(4, "entries")
    >>> budget.spend(7, "entries", hint="give a smaller directory")
    Traceback (most recent call last):
    ...
    prove_gym.server.errors.WorkLimitExceeded: find stopped: it would visit more than 10 entries in one call; nothing was changed. Narrow it: give a smaller directory.
    """

    max_units: int = MAX_UNITS
    max_sql_steps: int = MAX_SQL_STEPS
    max_seconds: float = MAX_SECONDS
    tool: str = "the call"
    units: int = 0
    sql_steps: int = 0
    deadline: float = float("inf")
    """When the call must end (``time.monotonic()``); none until :meth:`start`."""
    exceeded: str | None = None
    """Why the SQL progress handler stopped a query (``None`` while within budget)."""

    def start(self, tool: str) -> None:
        """Begin a call of ``tool`` with the whole budget."""
        self.tool = tool
        self.units = 0
        self.sql_steps = 0
        self.exceeded = None
        self.deadline = time.monotonic() + self.max_seconds

    def spend(self, n: int = 1, what: str = "entries", *, hint: str = "") -> None:
        """Spend ``n`` units of work; raises :class:`WorkLimitExceeded` past the budget.

        Args:
            n: Units spent now (entries visited, lines scanned).
            what: What a unit is, for the message ("entries", "lines").
            hint: How the model can ask for less, such as "give a deeper path or max_depth".
        """
        self.units += n
        if self.units > self.max_units:
            raise WorkLimitExceeded(
                self._message(f"it would visit more than {self.max_units} {what}", hint)
            )
        if time.monotonic() > self.deadline:
            raise WorkLimitExceeded(
                self._message(f"it ran past the {self.max_seconds:g} s a call may take", hint)
            )

    def sql_tick(self) -> int:
        """SQLite's progress handler: nonzero interrupts the running statement."""
        self.sql_steps += SQL_TICK
        if self.sql_steps > self.max_sql_steps:
            self.exceeded = "its queries would scan more rows than one call may"
        elif time.monotonic() > self.deadline:
            self.exceeded = f"it ran past the {self.max_seconds:g} s a call may take"
        return 1 if self.exceeded else 0

    def interrupted(self) -> WorkLimitExceeded:
        """The error for a query the progress handler stopped."""
        return WorkLimitExceeded(self._message(self.exceeded or "it did too much work", ""))

    def _message(self, why: str, hint: str) -> str:
        fix = f" Narrow it: {hint}." if hint else " Ask for less at once (narrower filters)."
        return f"{self.tool} stopped: {why} in one call; nothing was changed.{fix}"
