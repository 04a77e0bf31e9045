"""Column types that keep states exact and hashes stable."""

from __future__ import annotations

from decimal import ROUND_HALF_EVEN, Decimal
from typing import Any

from sqlalchemy import BigInteger
from sqlalchemy.engine import Dialect
from sqlalchemy.types import TypeDecorator


class Money(TypeDecorator[Decimal]):
    """Exact money: a ``Decimal`` in Python, an integer of minor units (cents) in SQLite.

    Floats never touch money, sums in SQL stay exact, and the state hash does
    not depend on float formatting.

    >>> Money().process_bind_param(Decimal("12.34"), None)
    1234
    >>> Money().process_result_value(1234, None)
    Decimal('12.34')
    """

    impl = BigInteger
    cache_ok = True

    def __init__(self, places: int = 2) -> None:
        super().__init__()
        self.places = places
        self._quantum = Decimal(1).scaleb(-places)

    def process_bind_param(self, value: Any, dialect: Dialect | None) -> int | None:
        if value is None:
            return None
        amount = Decimal(str(value)) if not isinstance(value, Decimal) else value
        return int(amount.quantize(self._quantum, rounding=ROUND_HALF_EVEN).scaleb(self.places))

    def process_result_value(self, value: Any, dialect: Dialect | None) -> Decimal | None:
        if value is None:
            return None
        return Decimal(int(value)).scaleb(-self.places).quantize(self._quantum)
