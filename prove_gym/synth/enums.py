"""Enum stripping that strips: a parameter loses its values from the schema and the text.

A task with ``strip_enums`` offers some tools with their enum values removed (the
paper's robustness knob: the model must work out a valid value from the context or an
error, not read it off a list). Removing the ``enum`` key alone is cosmetic when the
parameter's description still says ``"park", "reverse", "neutral" or "drive"``, so
:func:`stripped_schema` also rewrites the descriptions that state a stripped value.

The task format can replace a tool's parameters schema (``Task.schema_overrides``) but
not its description (the docstring text the model reads above the parameters), so a
parameter whose values that description states keeps its enum: stripping it could not
hide them.

A value is *stated* in a text when it appears quoted (``"park"``, ``'park'``,
```park```) or, for a value that is not a plain lower-case word (``requests_received``,
``charge.succeeded``, ``*``), anywhere as a whole token. A plain word used in prose
("Turn climate control on") is not a statement of the value.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from prove_gym.server.tool import ToolSpec

_PLAIN_WORD = re.compile(r"[a-z]+")
# where a clause that goes on to list values may be cut: "Which list, such as ..."
_CLAUSE_BREAK = re.compile(r"\s*(?:[,:;(]|\s[-\u2013\u2014]\s|\bsuch as\b|\be\.g\.|\bone of\b)")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def states(text: str, value: str) -> bool:
    """Whether ``text`` states ``value`` (see the module docstring).

    >>> states('"park", "reverse" or "drive".', "park"), states("Park first.", "park")
    (True, False)
    >>> states("list_name is one of: requests_received, blocked", "requests_received")
    True
    """
    if any(f"{q}{value}{q}" in text for q in ('"', "'", "`")):
        return True
    if _PLAIN_WORD.fullmatch(value):
        return False
    return re.search(rf"(?<![\w.]){re.escape(value)}(?![\w])", text) is not None


def stated(text: str, values: Iterable[str]) -> list[str]:
    """The ``values`` that ``text`` states, in their order."""
    return [v for v in values if states(text, v)]


def enum_values(prop: Mapping[str, Any]) -> list[str]:
    """A parameter schema's enum values as text (of the value or of its array items)."""
    for node in (prop, prop.get("items")):
        if isinstance(node, Mapping) and isinstance(node.get("enum"), list):
            return [str(v) for v in node["enum"]]
    return []


def scrub(description: str, values: list[str], fallback: str) -> str:
    """``description`` without the sentences or clauses that state any of ``values``.

    A sentence that states one is cut before the clause that lists it ("Which list,
    such as "followers" or "blocked"." -> "Which list."), or dropped when nothing of
    it would be left; ``fallback`` stands in when nothing of the description is.

    >>> scrub('Which list, such as "followers" or "blocked".', ["followers", "blocked"], "x")
    'Which list.'
    >>> scrub('"park", "reverse" or "drive".', ["park", "reverse", "drive"], "The gear.")
    'The gear.'
    """
    sentences: list[str] = []
    for sentence in _SENTENCE_END.split(description.strip()):
        clauses: list[str] = []
        for clause in sentence.split("; "):
            found = stated(clause, values)
            if not found:
                clauses.append(clause.rstrip("."))
                continue
            head = clause[: min(_first_statement(clause, v) for v in found)]
            breaks = [m.start() for m in _CLAUSE_BREAK.finditer(head)]
            head = (head[: breaks[-1]] if breaks else "").strip().rstrip(",:;(")
            if len(head.split()) >= 2:
                clauses.append(head)
        if clauses:
            sentences.append("; ".join(clauses) + ".")
    text = " ".join(sentences).strip()
    text = text[:1].upper() + text[1:]
    return text if text and not stated(text, values) else fallback


def _first_statement(text: str, value: str) -> int:
    starts = [text.find(f"{q}{value}{q}") for q in ('"', "'", "`")]
    if not _PLAIN_WORD.fullmatch(value):
        m = re.search(rf"(?<![\w.]){re.escape(value)}(?![\w])", text)
        starts.append(m.start() if m else -1)
    return min(s for s in starts if s >= 0)


def strippable(spec: ToolSpec) -> dict[str, list[str]]:
    """The parameters of ``spec`` whose enum can be stripped, with their values: those
    with an enum whose values the tool's own description does not state."""
    props = spec.input_schema().get("properties", {})
    out: dict[str, list[str]] = {}
    for name, prop in props.items():
        values = enum_values(prop)
        if values and not stated(spec.description, values):
            out[name] = values
    return out


def stripped_schema(spec: ToolSpec) -> dict[str, Any] | None:
    """``spec``'s parameters schema with every strippable enum gone from the schema and from
    every parameter description; ``None`` when nothing can be stripped."""
    strip = strippable(spec)
    if not strip:
        return None
    schema = spec.input_schema()
    values = [v for vs in strip.values() for v in vs]
    props: dict[str, Any] = {}
    for name, prop in schema.get("properties", {}).items():
        new = _without_enums(prop) if name in strip else dict(prop)
        desc = new.get("description")
        if isinstance(desc, str) and stated(desc, values):
            new["description"] = scrub(desc, values, f"The {name.replace('_', ' ')}.")
        props[name] = new
    return {**schema, "properties": props}


def _without_enums(schema: Any) -> Any:
    if isinstance(schema, dict):
        return {k: _without_enums(v) for k, v in schema.items() if k != "enum"}
    if isinstance(schema, list):
        return [_without_enums(v) for v in schema]
    return schema
