"""JSON-type compatibility of argument values against an offered parameters schema.

This is the second validity level: *are the values the right JSON types?* It is
deliberately a type check, not a full JSON Schema validation: enum membership,
ranges and formats are value questions that live execution answers (the third
level). Compatibility follows JSON Schema's own rules:

- ``integer`` accepts ``5`` and ``5.0`` (an integral number), never ``True``;
  ``number`` accepts any int or float, never a bool;
- ``string``, ``boolean``, ``array``, ``object`` and ``null`` mean what they say;
  a numeric string such as ``"5"`` is *not* an integer;
- ``anyOf`` / ``oneOf`` accept a value any branch accepts, ``allOf`` one every
  branch accepts, ``$ref`` is resolved against the root's ``$defs``;
- array items and object properties are checked recursively;
- ``null`` is also accepted where the schema's ``default`` is ``null`` (how an
  optional ``str | None = None`` parameter is shown to the model);
- a schema with no ``type`` accepts anything.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

Check = Callable[[Any], bool]


def _accept(_: Any) -> bool:
    return True


_TYPE_CHECKS: dict[str, Check] = {
    "string": lambda v: isinstance(v, str),
    "boolean": lambda v: isinstance(v, bool),
    "integer": lambda v: (
        (isinstance(v, int) and not isinstance(v, bool))
        or (isinstance(v, float) and v.is_integer())
    ),
    "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    "array": lambda v: isinstance(v, list | tuple),
    "object": lambda v: isinstance(v, Mapping),
    "null": lambda v: v is None,
}


def compile_check(schema: Mapping[str, Any], root: Mapping[str, Any] | None = None) -> Check:
    """Compile a (sub)schema into a predicate ``value -> bool`` that checks JSON types.

    Args:
        schema: The schema of one value.
        root: The document ``$ref`` pointers resolve in (default: ``schema``).

    >>> check = compile_check({"type": "integer"})
    >>> check(5), check(5.0), check(5.5), check("5"), check(True)
    (True, True, False, False, False)
    >>> compile_check({"type": "array", "items": {"type": "string"}})(["a", 1])
    False
    """
    return _compile(schema, root if root is not None else schema, 0)


def _compile(schema: Any, root: Mapping[str, Any], depth: int) -> Check:
    if not isinstance(schema, Mapping) or depth > 32:
        return _accept
    checks: list[Check] = []
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/"):
        target: Any = root
        for part in ref[2:].split("/"):
            target = target.get(part) if isinstance(target, Mapping) else None
        checks.append(_compile(target, root, depth + 1))
    kind = schema.get("type")
    if isinstance(kind, str | list):
        kinds = [kind] if isinstance(kind, str) else list(kind)
        if "default" in schema and schema["default"] is None:
            kinds.append("null")
        if all(k in _TYPE_CHECKS for k in kinds):  # unknown type names are not ours to judge
            checks.append(_type_check(kinds))
    for key in ("anyOf", "oneOf"):
        options = schema.get(key)
        if isinstance(options, list) and options:
            checks.append(_any_of([_compile(o, root, depth + 1) for o in options]))
    for sub in schema.get("allOf") or []:
        checks.append(_compile(sub, root, depth + 1))
    items = schema.get("items")
    if isinstance(items, Mapping):
        item_check = _compile(items, root, depth + 1)
        checks.append(lambda v: not isinstance(v, list | tuple) or all(item_check(x) for x in v))
    props = schema.get("properties")
    if isinstance(props, Mapping) and props:
        object_check = ObjectCheck.build(schema, root, depth + 1)
        checks.append(lambda v: not isinstance(v, Mapping) or object_check.types_ok(v))
    if not checks:
        return _accept
    if len(checks) == 1:
        return checks[0]
    return lambda v: all(c(v) for c in checks)


def _any_of(preds: list[Check]) -> Check:
    if len(preds) == 1:
        return preds[0]
    return lambda v: any(p(v) for p in preds)


_PY_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "boolean": (bool,),
    "array": (list, tuple),
    "object": (dict, Mapping),
    "null": (type(None),),
}


def _type_check(kinds: list[str]) -> Check:
    """One predicate for a ``type`` (list): a single ``isinstance`` unless numbers are involved."""
    if all(k in _PY_TYPES for k in kinds):
        types = tuple(t for k in kinds for t in _PY_TYPES[k])
        return lambda v: isinstance(v, types)
    return _any_of([_TYPE_CHECKS[k] for k in kinds])


@dataclass(frozen=True, slots=True)
class ObjectCheck:
    """The checks of one arguments object: required keys, known keys, each value's type.

    Attributes:
        required: Keys that must be present.
        properties: A type predicate per declared key.
        closed: True when the schema forbids undeclared keys (``additionalProperties: false``).
    """

    required: tuple[str, ...]
    properties: dict[str, Check]
    closed: bool

    @classmethod
    def build(
        cls, schema: Mapping[str, Any], root: Mapping[str, Any] | None = None, depth: int = 0
    ) -> ObjectCheck:
        """Compile an object schema (a tool's parameters schema).

        >>> oc = ObjectCheck.build({"type": "object", "properties": {"n": {"type": "integer"}},
        ...                         "required": ["n"], "additionalProperties": False})
        >>> oc.ok({"n": 3}), oc.ok({"n": "3"}), oc.ok({}), oc.ok({"n": 3, "x": 1})
        (True, False, False, False)
        """
        root = root if root is not None else schema
        props = schema.get("properties") or {}
        return cls(
            required=tuple(schema.get("required") or ()),
            properties={k: _compile(v, root, depth + 1) for k, v in props.items()},
            closed=schema.get("additionalProperties") is False,
        )

    def types_ok(self, arguments: Mapping[str, Any]) -> bool:
        """Every present key is declared (if closed) and has a compatible type."""
        props = self.properties
        for key, value in arguments.items():
            check = props.get(key)
            if check is None:
                if self.closed:
                    return False
            elif not check(value):
                return False
        return True

    def ok(self, arguments: Any) -> bool:
        """The structure level: an object, required keys present, every value type-compatible.

        ``None`` stands for ``{}`` (how sessions read a call without arguments).
        """
        if arguments is None:
            arguments = {}
        elif type(arguments) is not dict and not isinstance(arguments, Mapping):
            return False
        for key in self.required:
            if key not in arguments:
                return False
        return self.types_ok(arguments)
