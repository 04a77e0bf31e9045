"""``next_id``: the identifier after the largest one, counted past the zero padding."""

from __future__ import annotations

from typing import Annotated

from hypothesis import given
from hypothesis import strategies as st
from pydantic import Field
from sqlalchemy import String
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from prove_gym.server import SampleContext, Server, ToolContext, next_id


class Base(DeclarativeBase):
    pass


class Thing(Base):
    __tablename__ = "things"
    id: Mapped[str] = mapped_column(String(32), primary_key=True)


def _empty(ctx: SampleContext) -> None:
    return None


SERVER = Server("ids_probe", version="0.0.1", base=Base, sampler=_empty)


@SERVER.tool(phrasings=["Give me the next id"])
def new_id(ctx: ToolContext, prefix: Annotated[str, Field(max_length=8)] = "t") -> str:
    """The id a new thing would get.

    Args:
        prefix: The id's prefix, such as "t".
    """
    return next_id(ctx, Thing.id, prefix, 4)


def _number(prefix: str, n: int, width: int) -> str:
    return f"{prefix}_{n:0{width}d}"


# ids as samplers and tools write them: zero-padded to the tool's width (4) or narrower,
# more digits only past the padding; and ids of other prefixes in the same column
ids = st.lists(
    st.one_of(
        st.builds(_number, st.just("t"), st.integers(0, 10**6), st.integers(3, 4)),
        st.builds(_number, st.sampled_from(["s", "u", "t0"]), st.integers(0, 10**5), st.just(4)),
    ),
    max_size=40,
    unique=True,
)


def expected_next(values: list[str]) -> str:
    """The reference: every value read, the longest and then the largest wins."""
    if not values:
        return "t_0001"
    last = max(values, key=lambda v: (len(v), v))
    return f"t_{int(last.rsplit('_', 1)[1]) + 1:04d}"


@given(ids)
def test_next_id_follows_the_longest_then_largest_identifier(values: list[str]) -> None:
    with SERVER.session() as session:
        raw = session.raw_connection
        raw.executemany("INSERT INTO things (id) VALUES (?)", [(v,) for v in values])
        raw.commit()
        result = session.call("new_id", {})
        assert result.ok, result
        assert result.content == expected_next(values)


def test_next_id_counts_past_the_padding() -> None:
    for values, expected in [
        ([], "t_0001"),
        (["t_0007", "t_0300"], "t_0301"),
        (["t_9999", "t_10000", "t_2000"], "t_10001"),  # "t_2000" sorts last as text
        (["t_0999", "t_1000"], "t_1001"),
    ]:
        assert expected_next(values) == expected
        with SERVER.session() as session:
            session.raw_connection.executemany(
                "INSERT INTO things (id) VALUES (?)", [(v,) for v in values]
            )
            assert session.call("new_id", {}).content == expected
