"""Comparing one argument value the model wrote with the gold value, fairly.

Rules (symmetric, deterministic):

- Numbers compare numerically: ``5 == 5.0``. A string that is a JSON number
  literal compares as that number against a number: ``"5" == 5`` and
  ``"12.50" == 12.5`` (a schema with ``type: number`` may be shown to the model
  while the gold was written as text, or the other way round; the *value* is
  the same, and validity already reports the type). Leading zeros (``"007"``)
  are not a number literal, so identifier strings never collapse into numbers.
  Two strings compare as strings: ``"5.0" != "5"``.
- Booleans equal only booleans: ``True != 1``. ``None`` equals only ``None``.
- Strings compare exactly, unless the tool declares a normalisation for the
  parameter (``ToolSpec.params[i].normalise``), applied to both sides:
  ``casefold`` (``"Ana@X.com" == "ana@x.com"``), ``strip`` (surrounding
  whitespace), ``path`` (repeated slashes, ``.`` segments and a trailing slash
  dropped; ``..`` kept, since resolving it needs the state).
- Lists compare element-wise in order (same length); objects key by key. The
  parameter's normalisation applies to strings nested inside them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from decimal import Decimal, InvalidOperation
from typing import Any

_SCALARS = (str, int, float, bool)
_JSON_NUMBER = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?")


def normalise_string(value: str, how: str | None) -> str:
    """Apply a declared normalisation to a string.

    >>> normalise_string("Ana.Silva@ACME.com", "casefold")
    'ana.silva@acme.com'
    >>> normalise_string("/home//ana/./docs/", "path")
    '/home/ana/docs'
    >>> normalise_string("  x ", "strip")
    'x'
    """
    if how is None:
        return value
    if how == "casefold":
        return value.casefold()
    if how == "strip":
        return value.strip()
    if how == "path":
        absolute = value.startswith("/")
        parts = [p for p in value.split("/") if p not in ("", ".")]
        joined = "/".join(parts)
        return "/" + joined if absolute else (joined or ".")
    raise ValueError(f"unknown normalisation {how!r}; use 'casefold', 'strip' or 'path'")


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _as_decimal(value: Any) -> Decimal | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return Decimal(value)
    if isinstance(value, float):
        try:
            return Decimal(repr(value))
        except InvalidOperation:
            return None
    if isinstance(value, str) and _JSON_NUMBER.fullmatch(value):
        return Decimal(value)
    return None


def values_equal(model: Any, gold: Any, normalise: str | None = None) -> bool:
    """Whether the model's value counts as the gold value (see the module docstring).

    Args:
        model: The value the model wrote.
        gold: The gold value.
        normalise: The parameter's declared normalisation, if any.

    >>> values_equal(5, 5.0), values_equal("5", 5), values_equal("5", "5.0")
    (True, True, False)
    >>> values_equal(True, 1), values_equal("Ana@X.com", "ana@x.com", "casefold")
    (False, True)
    >>> values_equal(["a", 2], ["a", 2.0]), values_equal("007", 7)
    (True, False)
    """
    if isinstance(gold, bool) or isinstance(model, bool):
        return type(gold) is type(model) and gold == model
    if gold is None or model is None:
        return gold is model
    if isinstance(gold, str) and isinstance(model, str):
        if normalise is None:
            return model == gold
        return normalise_string(model, normalise) == normalise_string(gold, normalise)
    if _is_number(gold) and _is_number(model):
        return bool(model == gold)
    if _is_number(gold) or _is_number(model):
        a, b = _as_decimal(model), _as_decimal(gold)
        return a is not None and b is not None and a == b
    if isinstance(gold, list | tuple):
        return (
            isinstance(model, list | tuple)
            and len(model) == len(gold)
            and all(values_equal(m, g, normalise) for m, g in zip(model, gold, strict=True))
        )
    if isinstance(gold, Mapping):
        return (
            isinstance(model, Mapping)
            and model.keys() == gold.keys()
            and all(values_equal(model[k], gold[k], normalise) for k in gold)
        )
    return bool(model == gold)


def pair_score(
    call_arguments: Any, gold_arguments: Mapping[str, Any], normalise: Mapping[str, str]
) -> float:
    """Share of the gold step's arguments whose value the call got right.

    ``|{k : c.args[k] = g.args[k]}| / |g.args|``; a gold step with no arguments
    scores 1.0 (its name and keys were the whole job).

    >>> pair_score({"event_id": "evt_1", "email": "A@x.com"},
    ...            {"event_id": "evt_2", "email": "a@x.com"}, {"email": "casefold"})
    0.5
    """
    if not gold_arguments:
        return 1.0
    if type(call_arguments) is not dict and not isinstance(call_arguments, Mapping):
        return 0.0
    hits = 0
    for key, gold in gold_arguments.items():
        if key in call_arguments:
            model = call_arguments[key]
            if type(model) is type(gold) and type(gold) in _SCALARS and model == gold:
                hits += 1  # the common case, without the general comparison
            elif values_equal(model, gold, normalise.get(key)):
                hits += 1
    return hits / len(gold_arguments)
