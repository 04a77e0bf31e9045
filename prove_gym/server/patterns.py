"""Patterns from a model, matched in linear time: regular expressions and shell globs.

Python's ``re`` backtracks: ``^(\\w+\\s?)*$`` on one modest line can take minutes, and
under ``prove-gym serve`` that blocks every session. Every tool that takes a pattern from
the model compiles it here instead, with RE2 (``google-re2``), whose matching time is
linear in the text. RE2 has no backreferences and no lookaround; such a pattern is
refused with :class:`~prove_gym.server.errors.InvalidArgument` naming the construct.
Globs (``*.log``, ``IMG_2?.jpg``, ``[a-c]*``) are translated to RE2 once; both caches are
small and bounded (``fnmatch`` keeps up to 32,768 compiled patterns).
"""

from __future__ import annotations

import functools
from typing import Protocol

import re2

from prove_gym.server.errors import InvalidArgument

__all__ = ["Matcher", "compile_glob", "compile_regex", "glob_to_regex"]

MAX_PROGRAM_BYTES = 8 << 20
"""Memory RE2 may use for one compiled pattern; a bigger one is refused as too large."""


class Matcher(Protocol):
    """What :func:`compile_regex` and :func:`compile_glob` return (an RE2 pattern)."""

    def search(self, text: str) -> object | None: ...

    def fullmatch(self, text: str) -> object | None: ...


_UNSUPPORTED = (
    ("(?=", "lookahead (?=...)"),
    ("(?!", "negative lookahead (?!...)"),
    ("(?<=", "lookbehind (?<=...)"),
    ("(?<!", "negative lookbehind (?<!...)"),
    ("(?>", "atomic groups (?>...)"),
    ("(?(", "conditionals (?(...)...)"),
    ("(?P=", "named backreferences (?P=name)"),
    ("(?#", "comments (?#...)"),
)


def _options(ignore_case: bool, literal: bool = False) -> re2.Options:
    options = re2.Options()
    options.log_errors = False
    options.max_mem = MAX_PROGRAM_BYTES
    options.case_sensitive = not ignore_case
    options.literal = literal
    return options


@functools.lru_cache(maxsize=256)
def compile_regex(
    pattern: str, *, ignore_case: bool = False, literal: bool = False, cmd: str = "grep"
) -> Matcher:
    """``pattern`` compiled with RE2 (linear-time matching), or ``InvalidArgument``.

    Args:
        pattern: The model's regular expression (RE2 syntax: Python's ``re`` without
            backreferences and lookaround).
        ignore_case: Match regardless of case.
        literal: Match the text as is (like ``grep -F``).
        cmd: The command named in error messages.

    >>> bool(compile_regex(r"ERROR|WARN").search("2026 WARN disk"))
    True
    >>> compile_regex(r"(a)\\1")
    Traceback (most recent call last):
    ...
    prove_gym.server.errors.InvalidArgument: grep: backreferences (\\1) are not supported in '(a)\\\\1': patterns are matched in linear time (RE2 syntax, like grep -E without backreferences); rewrite it without them, or pass fixed=true to search for the text as is.
    """
    for needle, what in _UNSUPPORTED:
        if not literal and needle in pattern:
            raise _unsupported(cmd, pattern, what)
    try:
        compiled: Matcher = re2.compile(pattern, _options(ignore_case, literal))
    except re2.error as exc:
        detail = exc.args[0] if exc.args else ""
        text = detail.decode("utf-8", "replace") if isinstance(detail, bytes) else str(detail)
        if "invalid escape sequence: \\" in text and text[-1:].isdigit():
            raise _unsupported(cmd, pattern, f"backreferences ({text[-2:]})") from None
        if any(w in text for w in ("too large", "bad repetition", "repetition size")):
            raise InvalidArgument(
                f"{cmd}: the regular expression {_shown(pattern)} is too large ({text}): use "
                "smaller repetition counts (at most {{1000}}) or a simpler pattern."
            ) from None
        raise InvalidArgument(
            f"{cmd}: invalid regular expression {_shown(pattern)} ({text}); escape special "
            "characters or pass fixed=true to search for the text as is."
        ) from None
    return compiled


def _unsupported(cmd: str, pattern: str, what: str) -> InvalidArgument:
    return InvalidArgument(
        f"{cmd}: {what} are not supported in {_shown(pattern)}: patterns are matched in linear "
        "time (RE2 syntax, like grep -E without backreferences); rewrite it without them, or "
        "pass fixed=true to search for the text as is."
    )


def _shown(pattern: str) -> str:
    return repr(pattern if len(pattern) <= 80 else pattern[:80] + "…")


def glob_to_regex(pattern: str) -> str:
    """A shell glob as an RE2 pattern matching a whole name, exactly as ``fnmatch`` reads it:
    ``*`` any text, ``?`` one character, ``[abc]``/``[a-z]``/``[!x]`` a class, anything else
    itself.

    >>> glob_to_regex("IMG_2?.[jp]*")
    '(?s:IMG_2.\\\\.[jp].*)'
    """
    out: list[str] = []
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        i += 1
        if c == "*":
            if not out or out[-1] != ".*":  # "**" is "*"
                out.append(".*")
        elif c == "?":
            out.append(".")
        elif c == "[":
            j = i
            if j < n and pattern[j] == "!":
                j += 1
            if j < n and pattern[j] == "]":
                j += 1
            while j < n and pattern[j] != "]":
                j += 1
            if j >= n:  # no closing bracket: a literal "["
                out.append("\\[")
                continue
            out.append(_glob_class(pattern, i, j))
            i = j + 1
        else:
            out.append(_escape(c))
    return "(?s:" + "".join(out) + ")"


def _glob_class(pattern: str, i: int, j: int) -> str:
    """The class ``pattern[i:j]`` (between the brackets) in RE2, as ``fnmatch.translate``
    builds it: empty ranges dropped, ``!`` negates, everything else literal."""
    stuff = pattern[i:j]
    if "-" not in stuff:
        stuff = stuff.replace("\\", "\\\\")
    else:
        chunks = []
        k = i + 2 if pattern[i] == "!" else i + 1
        while True:
            k = pattern.find("-", k, j)
            if k < 0:
                break
            chunks.append(pattern[i:k])
            i = k + 1
            k = k + 3
        chunk = pattern[i:j]
        if chunk:
            chunks.append(chunk)
        else:
            chunks[-1] += "-"
        for k in range(len(chunks) - 1, 0, -1):  # drop empty ranges such as z-a
            if chunks[k - 1][-1] > chunks[k][0]:
                chunks[k - 1] = chunks[k - 1][:-1] + chunks[k][1:]
                del chunks[k]
        stuff = "-".join(s.replace("\\", "\\\\").replace("-", "\\-") for s in chunks)
    stuff = "".join("\\" + ch if ch in "[]&~|" else ch for ch in stuff)
    if not stuff:
        return "\\b\\B"  # an empty class never matches
    if stuff == "!":
        return "."
    if stuff[0] == "!":
        stuff = "^" + stuff[1:]
    elif stuff[0] == "^":
        stuff = "\\" + stuff
    return f"[{stuff}]"


def _escape(c: str) -> str:
    return "\\" + c if c in ".^$*+?()[]{}|\\" else c


@functools.lru_cache(maxsize=256)
def compile_glob(pattern: str, *, ignore_case: bool = False, cmd: str = "find") -> Matcher:
    """A shell glob compiled once (bounded cache) for linear-time ``fullmatch`` of names.

    >>> bool(compile_glob("*.LOG", ignore_case=True).fullmatch("app.log"))
    True
    """
    try:
        compiled: Matcher = re2.compile(glob_to_regex(pattern), _options(ignore_case))
    except re2.error:
        raise InvalidArgument(
            f"{cmd}: invalid name pattern {_shown(pattern)}; use shell patterns such as '*.log', "
            "'IMG_2?.jpg' or 'report-[0-9]*'."
        ) from None
    return compiled
