"""Hypothesis strategies for testing server plugins (install the ``dev`` extra for hypothesis).

>>> from prove_gym.testing import fuzz_arguments, junk_arguments
>>> strategy = junk_arguments(server.tools["get_event"], samples=["evt_0001", "evt_9999"])  # doctest: +SKIP
>>> strategy = fuzz_arguments(server.tools["get_event"], samples=["evt_0001"])  # doctest: +SKIP
"""

from __future__ import annotations

import operator
from collections.abc import Mapping, Sequence
from typing import Any

from hypothesis import strategies as st

from prove_gym.server.tool import ToolSpec

HUGE_INTS: tuple[int, ...] = (10**30, -(10**30), 2**63, 2**64, -(2**63) - 1, 2**53 + 1)
"""Integers past SQLite's 64-bit range (and past exact floats): an unbounded ``int``
parameter that reaches the database fails with ``OverflowError``."""

ODD_NUMBERS: tuple[float, ...] = (
    0,
    -1,
    -0.0,
    -(10**6),
    0.5,
    1e308,
    -1e308,
    5e-324,
    float("nan"),
    float("inf"),
    float("-inf"),
)
"""Zero, negatives, extremes, and the NaN/Infinity that Python's ``json.loads`` accepts."""

PATH_LIKE: tuple[str, ...] = (
    "../../etc/passwd",
    "/root",
    "/root/.ssh/id_rsa",
    "/etc/shadow",
    "/proc/self/environ",
    "/dev/null",
    "~",
    "~/../../..",
    "..",
    "/",
    "//",
    "./",
    "C:\\Windows\\System32",
    "\\\\server\\share",
    "file:///etc/passwd",
)
"""Strings that look like paths of the machine the server runs on."""

PATTERN_LIKE: tuple[str, ...] = (
    "^(\\w+\\s?)*$",
    "(a+)+$",
    ".*",
    "[",
    "(",
    "\\",
    "*",
    "?",
    "%",
    "_",
    "%%",
    "{",
    "{0}",
    "{name}",
    "%s",
    "' OR '1'='1",
    "'; DROP TABLE users; --",
    '"',
    "<script>alert(1)</script>",
    "$(id)",
)
"""Regular-expression, SQL ``LIKE``, format-string and injection look-alikes."""

REDOS_PATTERNS: tuple[str, ...] = (
    "^(\\w+\\s?)*$",
    "(a+)+$",
    "(a|aa)*c",
    "(.*a){12}",
    "(x+x+)+y",
    "(\\w+) \\1",
    "(?=a)a",
    "(?<!x)y",
    "x{1000}{1000}",
    "(a{999}){999}",
    "[[:alpha:]]+",
)
"""Regular expressions that backtrack for minutes in Python's ``re`` (nested or ambiguous
repetition) or that a linear-time engine refuses (backreferences, lookaround, huge counts)."""

GLOB_PATTERNS: tuple[str, ...] = (
    "*" * 200 + "a",
    "*a" * 100 + "b",
    "[" * 100,
    "[!]*",
    "[z-a]*",
    "**/*.log",
    "?" * 255,
)
"""Shell patterns with many stars, unclosed or empty classes: slow or huge under ``fnmatch``."""

ODD_TEXT: tuple[str, ...] = (
    "",
    " ",
    "\t\n\r",
    "\x00",
    "a\x00b",
    "\ud800",
    "x\udfffy",
    "\u202e",
    "\ufeff",
    "\u200b",
    "é",
    "𝔘𝔫𝔦𝔠𝔬𝔡𝔢",
    "🙂",
    "null",
    "None",
    "NaN",
    "-1",
    "1e309",
    "true",
    "[]",
    "{}",
)
"""Empty and blank strings, NUL bytes, lone surrogates, invisible and astral characters,
and strings that spell other JSON types."""


def long_strings() -> st.SearchStrategy[str]:
    """Strings of 1,000 to 100,000 characters (built by repetition, so they are cheap);
    up to four bytes each in UTF-8, so a cap counted in characters is not one in bytes."""
    return st.builds(
        operator.mul,
        st.sampled_from(["a", "é", "🙂", "evt_0001 ", "../", "%"]),
        st.sampled_from([1_000, 10_000, 15_000, 100_000]),
    )


def hostile_patterns() -> st.SearchStrategy[str]:
    """Catastrophic and unsupported regular expressions, hostile globs, and random pattern
    syntax built from their characters."""
    return st.sampled_from(REDOS_PATTERNS + GLOB_PATTERNS) | st.text(
        alphabet="()[]{}*+?|\\^$.!-aw1:=<", min_size=1, max_size=40
    )


def hostile_strings() -> st.SearchStrategy[str]:
    """Path-like, pattern-like (catastrophic regexes and globs too), odd and very long strings."""
    return (
        st.sampled_from(PATH_LIKE + PATTERN_LIKE + ODD_TEXT) | hostile_patterns() | long_strings()
    )


def hostile_numbers() -> st.SearchStrategy[int | float]:
    """Huge integers, zero, negatives, extremes, NaN and infinities."""
    return st.one_of(
        st.sampled_from(HUGE_INTS + ODD_NUMBERS),
        st.integers(min_value=-(2**70), max_value=2**70),
    )


def _nest(leaf: Any, depth: int, as_dict: bool) -> Any:
    value = leaf
    for _ in range(depth):
        value = {"a": value} if as_dict else [value]
    return value


def nested_values() -> st.SearchStrategy[Any]:
    """Lists or objects nested 2 to 1,000 deep (a JSON parser accepts about that many)."""
    return st.builds(
        _nest,
        st.sampled_from(["x", 1, None]),
        st.sampled_from([2, 20, 200, 1000]),
        st.booleans(),
    )


def hostile_values(samples: Sequence[Any] = ()) -> st.SearchStrategy[Any]:
    """Values a careless or adversarial client might send, mixed with ``samples``.

    Args:
        samples: Plausible values of the server (ids, dates, enum words) to mix in.
    """
    options: list[st.SearchStrategy[Any]] = [
        hostile_strings(),
        hostile_numbers(),
        nested_values(),
        st.none(),
        st.booleans(),
    ]
    if samples:
        options.insert(0, st.sampled_from(list(samples)))
    return st.one_of(*options)


def junk_arguments(
    spec: ToolSpec, samples: Sequence[Any] = (), *, text_size: int = 30
) -> st.SearchStrategy[dict[str, Any]]:
    """Random argument dicts a confused model might send to ``spec``.

    Keys mix the tool's real parameter names with junk; values are JSON
    scalars of every type (finite floats: JSON has no NaN), short lists and
    dicts of them, and ``samples``, the server's plausible-looking values
    (real and unknown ids, dates, enum words) that reach deeper into the tool.

    Args:
        spec: The tool to fuzz.
        samples: Server-specific values to mix in, such as ``["evt_0001", "evt_9999"]``.
        text_size: Longest random string.
    """
    options = [
        st.none(),
        st.booleans(),
        st.integers(-(10**6), 10**6),
        st.floats(allow_nan=False, allow_infinity=False),
        st.text(max_size=text_size),
    ]
    if samples:
        options.append(st.sampled_from(list(samples)))
    scalars = st.one_of(*options)
    values = st.one_of(
        scalars,
        st.lists(scalars, max_size=3),
        st.dictionaries(st.text(max_size=5), scalars, max_size=2),
    )
    names = [p.name for p in spec.params]
    keys = st.sampled_from(names) | st.text(max_size=8) if names else st.text(max_size=8)
    return st.dictionaries(keys, values, max_size=len(names) + 2)


def fuzz_arguments(
    spec: ToolSpec,
    samples: Sequence[Any] = (),
    *,
    plausible: Mapping[str, Sequence[Any]] | None = None,
    hostile: bool = True,
) -> st.SearchStrategy[dict[str, Any]]:
    """Argument dicts for fuzzing ``spec``: junk, well-formed, plausible and hostile.

    A third are :func:`junk_arguments` (wrong keys and types); the rest carry
    every required parameter (and some optional ones), each value drawn from
    the parameter's plausible values (``plausible``, the tool's own list
    ``examples``, ``samples`` of the right type), from its JSON schema (enum
    words, integers at and past their bounds, arrays of the item type), or
    from :func:`hostile_values`, so calls get past validation into the tool.

    Args:
        spec: The tool to fuzz.
        samples: Server-wide plausible values, such as ``["evt_0001", "evt_9999", "weekly"]``.
        plausible: Per-parameter plausible values, such as real ids read from the state.
        hostile: Mix in :func:`hostile_values`; without them, calls stay closer to what a
            model would send and succeed more often (for long call sequences).
    """
    schema = spec.input_schema()
    props: Mapping[str, Any] = schema.get("properties", {})
    defs: Mapping[str, Any] = schema.get("$defs", {})
    plausible = plausible or {}
    anything = hostile_values(samples) if hostile else st.one_of(st.none(), st.booleans())
    per_param: dict[str, st.SearchStrategy[Any]] = {}
    for p in spec.params:
        examples = spec.examples.get(p.name)
        own = list(plausible.get(p.name, ()))
        if isinstance(examples, Sequence) and not isinstance(examples, str):
            own += list(examples)
        options = [_from_schema(props.get(p.name, {}), defs, samples, depth=0), anything]
        if own:
            options.insert(0, st.sampled_from(own))
        per_param[p.name] = st.one_of(*options)
    well_formed = st.fixed_dictionaries(
        {p.name: per_param[p.name] for p in spec.params if p.required},
        optional={p.name: per_param[p.name] for p in spec.params if not p.required},
    )
    return st.one_of(junk_arguments(spec, samples), well_formed, well_formed)


def _deep_call(name: str, depth: int) -> str:
    """A Hermes tool call whose arguments nest ``depth`` levels deep, as text (no recursion)."""
    return (
        '<tool_call>{"name": "' + name + '", "arguments": {"a": ' + "[" * depth + "]" * depth + "}}"
        "</tool_call>"
    )


def hostile_actions(tool_names: Sequence[str]) -> st.SearchStrategy[Any]:
    """Whole assistant actions a hostile policy might send to an env (Hermes text or
    structured calls): thousands of calls in one message, arguments nested 10,000 deep
    (text and structured), NaN and huge numbers in JSON, lone surrogates, megabyte text.

    Args:
        tool_names: Tools of the server, to call by name.
    """
    names = st.sampled_from(list(tool_names) or ["no_such_tool"])

    def many(name: str, n: int) -> str:
        return "".join(f'<tool_call>{{"name": "{name}", "arguments": {{}}}}</tool_call>' * n)

    return st.one_of(
        st.builds(many, names, st.sampled_from([100, 1_000, 10_000])),
        st.builds(_deep_call, names, st.sampled_from([1_000, 10_000])),
        st.builds(
            lambda name, depth: [{"name": name, "arguments": {"a": _nest("x", depth, False)}}],
            names,
            st.sampled_from([1_000, 10_000]),
        ),
        st.builds(
            lambda name, text: (
                f'<tool_call>{{"name": "{name}", "arguments": {{"x": {text}}}}}</tool_call>'
            ),
            names,
            st.sampled_from(["NaN", "Infinity", "1e999999", "9" * 5_000, '"\\ud800"']),
        ),
        st.builds(lambda name: [{"name": name, "arguments": {"q": "x" * 1_000_000}}], names),
        st.just("<tool_call>" * 10_000),
    )


def hostile_action_cases(tool: str) -> list[Any]:
    """One hostile assistant action of each family of :func:`hostile_actions`, calling ``tool``
    (a fixed list: a 10,000-deep value has no printable repr for hypothesis to report)."""
    many = f'<tool_call>{{"name": "{tool}", "arguments": {{}}}}</tool_call>'
    return [
        many * 10_000,
        [{"name": tool, "arguments": {}}] * 10_000,
        _deep_call(tool, 10_000),
        [{"name": tool, "arguments": {"a": _nest("x", 10_000, False)}}],
        {"role": "assistant", "content": "", "tool_calls": [_nest({}, 10_000, True)]},
        f'<tool_call>{{"name": "{tool}", "arguments": {{"x": NaN, "y": {"9" * 5_000}}}}}</tool_call>',
        f'<tool_call>{{"name": "{tool}", "arguments": {{"x": "\\ud800"}}}}</tool_call>',
        [{"name": tool, "arguments": {"q": "x" * 1_000_000}}],
        "<tool_call>" * 10_000,
    ]


def _battery() -> list[Any]:
    """One value of each hostile family (built per use: a 1,000-deep list has no repr)."""
    return [
        "\ud800",
        "a\x00b",
        "",
        "../../etc/passwd",
        "^(\\w+\\s?)*$",
        "(\\w+) \\1",
        "*a" * 100 + "b",
        "%",
        "x" * 100_000,
        "🙂" * 15_000,
        10**30,
        2**64,
        -1,
        0,
        float("nan"),
        _nest("x", 1000, False),
    ]


def hostile_cases(
    spec: ToolSpec, plausible: Mapping[str, Sequence[Any]] | None = None
) -> list[dict[str, Any]]:
    """A fixed battery of argument dicts: a well-formed call with one value made hostile.

    The base call fills every required parameter with its first plausible value
    (``plausible``, then the tool's list ``examples``, then a value of the schema's
    type); each case replaces one parameter by one hostile value (a lone surrogate, a
    NUL byte, an empty, path-like, pattern-like, 100,000-character or 60,000-byte
    string, a huge, negative or zero number, NaN, a list nested 1,000 deep), so that
    value gets past the other parameters' validation into the tool.

    Args:
        spec: The tool.
        plausible: Per-parameter plausible values, such as real ids read from the state.
    """
    plausible = plausible or {}
    props: Mapping[str, Any] = spec.input_schema().get("properties", {})
    base: dict[str, Any] = {}
    for p in spec.params:
        if p.required:
            base[p.name] = first_value(
                props.get(p.name, {}), plausible.get(p.name, ()), spec.examples.get(p.name)
            )
    cases = [dict(base)]
    for p in spec.params:
        cases += [{**base, p.name: value} for value in _battery()]
    return cases


def first_value(schema: Mapping[str, Any], plausible: Sequence[Any], examples: Any) -> Any:
    """The value a well-formed call gives a parameter: its first plausible value (that the
    schema's enum allows, where it has one: a record field named like the parameter may be
    another kind's, an order's ``status`` for a courier's), else its first listed example,
    enum value or a value of its schema's type."""
    allowed = [
        v for option in [schema, *(schema.get("anyOf") or ())] for v in (option.get("enum") or ())
    ]
    if allowed:
        plausible = [v for v in plausible if any(v == a and type(v) is type(a) for a in allowed)]
    if plausible:
        return plausible[0]
    if isinstance(examples, Sequence) and not isinstance(examples, str) and examples:
        return examples[0]
    if schema.get("enum"):
        return schema["enum"][0]
    kind = schema.get("type")
    if kind is None:
        options = schema.get("anyOf") or schema.get("oneOf") or []
        kind = next((o.get("type") for o in options if o.get("type") != "null"), None)
    defaults = {"string": "x", "integer": 1, "number": 1.0, "boolean": True, "array": []}
    return defaults.get(kind) if isinstance(kind, str) else None


def _from_schema(
    schema: Mapping[str, Any], defs: Mapping[str, Any], samples: Sequence[Any], *, depth: int
) -> st.SearchStrategy[Any]:
    """Values shaped like a (pydantic) JSON schema, with its bounds and just past them."""
    if depth > 4:
        return st.none()
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        return _from_schema(defs.get(ref.rsplit("/", 1)[-1], {}), defs, samples, depth=depth + 1)
    if "enum" in schema:
        return st.sampled_from(list(schema["enum"]))
    if "const" in schema:
        return st.just(schema["const"])
    options = schema.get("anyOf") or schema.get("oneOf")
    if options:
        return st.one_of(*(_from_schema(o, defs, samples, depth=depth + 1) for o in options))
    kind = schema.get("type")
    if isinstance(kind, list):
        return st.one_of(
            *(_from_schema({**schema, "type": k}, defs, samples, depth=depth) for k in kind)
        )
    if kind == "string":
        texts = [s for s in samples if isinstance(s, str)]
        strings: st.SearchStrategy[Any] = st.text(max_size=20)
        return st.one_of(st.sampled_from(texts), strings) if texts else strings
    if kind in ("integer", "number"):
        low, high = _bounds(schema)
        edges = [v for b in (low, high) if b is not None for v in (b - 1, b, b + 1)]
        lo = int(low) if low is not None else (int(high) if high is not None else 0) - 1000
        hi = max(int(high) if high is not None else lo + 2000, lo)
        numbers: st.SearchStrategy[Any] = st.integers(min_value=lo, max_value=hi)
        if kind == "number":
            numbers |= st.floats(allow_nan=False, allow_infinity=False, width=32)
        return st.one_of(st.sampled_from(edges), numbers) if edges else numbers
    if kind == "boolean":
        return st.booleans()
    if kind == "null":
        return st.none()
    if kind == "array":
        items = schema.get("items", {})
        return st.lists(_from_schema(items, defs, samples, depth=depth + 1), max_size=4)
    if kind == "object":
        fields = schema.get("properties") or {}
        if fields:
            return st.fixed_dictionaries(
                {k: _from_schema(v, defs, samples, depth=depth + 1) for k, v in fields.items()}
            )
        return st.dictionaries(st.text(max_size=5), st.integers() | st.text(max_size=5), max_size=3)
    return hostile_values(samples)


def _bounds(schema: Mapping[str, Any]) -> tuple[float | None, float | None]:
    low = schema.get("minimum", schema.get("exclusiveMinimum"))
    high = schema.get("maximum", schema.get("exclusiveMaximum"))
    return low, high
