"""The work budget of one call: runaway work ends with bad_arguments and changes nothing."""

from __future__ import annotations

import time

import pytest
from sqlalchemy import Integer, String, text
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from prove_gym import ErrorKind, SampleContext, Server, ToolContext
from prove_gym.server import Query, WorkLimitExceeded
from prove_gym.server.budget import MAX_UNITS, WorkBudget


class _Base(DeclarativeBase):
    pass


class Item(_Base):
    __tablename__ = "items"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String)


def _sample(ctx: SampleContext) -> None:
    ctx.db.add(Item(id=1, name="first"))


_COUNT_TO_A_BILLION = Query(
    text(
        "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c "
        "WHERE x < 1000000000) SELECT count(*) FROM c"
    )
)


def _server() -> Server:
    server = Server("budgeted", version="0", base=_Base, sampler=_sample)

    @server.tool(writes=True)
    def walk_forever(ctx: ToolContext) -> dict[str, int]:
        """Add an item, then visit entries without end."""
        ctx.sql.insert(Item, id=2, name="half-done")
        n = 0
        while True:
            ctx.spend(1, "entries", hint="give a smaller folder")
            n += 1

    @server.tool(writes=True)
    def query_forever(ctx: ToolContext) -> dict[str, int]:
        """Add an item, then run a query that counts to a billion."""
        ctx.sql.insert(Item, id=3, name="half-done")
        return {"count": ctx.sql.scalar(_COUNT_TO_A_BILLION)}

    @server.tool(writes=True)
    def add_item(ctx: ToolContext, name: str) -> dict[str, int]:
        """Add an item after a short walk.

        Args:
            name: Its name, such as "second".
        """
        ctx.spend(MAX_UNITS, "entries")
        ctx.sql.insert(Item, id=4, name=name)
        return {"id": 4}

    return server


@pytest.mark.parametrize("tool", ["walk_forever", "query_forever"])
def test_a_runaway_call_ends_with_bad_arguments_and_no_change(tool: str) -> None:
    session = _server().session(seed=0)
    before = session.state_hash()
    began = time.perf_counter()
    result = session.call(tool, {})
    # the count budgets stopped it, not the wall-clock last resort (MAX_SECONDS = 20)
    assert time.perf_counter() - began < 15
    assert result.error_kind == ErrorKind.BAD_ARGUMENTS
    assert result.message.startswith(f"{tool} stopped: ")
    assert "nothing was changed" in result.message
    assert session.state_hash() == before
    # the next call gets a whole budget of its own, and SQL runs unhindered after it
    assert session.call("add_item", {"name": "second"}).ok


def test_spending_past_the_units_or_the_deadline_raises_with_the_hint() -> None:
    budget = WorkBudget(max_units=3)
    budget.start("find")
    budget.spend(3)
    with pytest.raises(WorkLimitExceeded, match=r"more than 3 lines .* Narrow it: look less\."):
        budget.spend(1, "lines", hint="look less")
    late = WorkBudget(max_seconds=0.0)
    late.start("grep")
    time.sleep(0.001)
    with pytest.raises(WorkLimitExceeded, match="ran past the 0 s a call may take"):
        late.spend()
