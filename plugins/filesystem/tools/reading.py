"""Reading files: cat, head, tail, lines, counts, grep, diff, sort, uniq, checksums."""

from __future__ import annotations

import difflib
import hashlib
import re
from itertools import groupby
from typing import Annotated, Literal

from pydantic import Field

from prove_gym.server import (
    InvalidArgument,
    PermissionDenied,
    PreconditionFailed,
    ToolContext,
    WorkLimitExceeded,
)
from prove_gym.server.patterns import compile_regex

from ._declare import tool
from .args import FileArg, LineCount, PathArg
from .fitting import (
    a_file,
    file_beside_first,
    first_text_file,
    line_in_file,
    separator_for_file,
    sortable_file,
    text_choice,
    text_file,
)
from .fs import Fs, _join, _split
from .nodes import AnyNode
from .results import (
    Checksum,
    Counted,
    Diff,
    Excerpt,
    FileText,
    Grep,
    Lines,
    Match,
    Sorted,
    Uniq,
    WordCount,
)

GREP_WORDS = ["TODO", "ERROR", "import", "Attendees", "password", "def ", "WARNING"]


@tool(
    stands_in_for=("head", "tail", "read_lines"),
    returns="file",
    phrasings=["Show me {path}", "What does {path} say?", "cat {path}"],
    values={"path": text_file},
)
def cat(ctx: ToolContext, path: FileArg) -> FileText:
    """Print the whole content of a file.

    Args:
        path: The file, such as "~/notes.txt", "README.md" or "/etc/hosts".
    """
    node, where = Fs(ctx).readable_file(path, "cat")
    return {"path": where, "size": node.size, "content": node.content}


@tool(
    stands_in_for=("read_lines",),
    returns="file",
    phrasings=["Show the first {lines} lines of {path}", "Show me the top of {path}"],
    values={"path": text_file, "lines": text_choice([5, 10, 20])},
)
def head(ctx: ToolContext, path: FileArg, lines: LineCount = 10) -> Excerpt:
    """Print the first lines of a file.

    Args:
        path: The file, such as "logs/app.log" or "~/Documents/Finance/expenses-2025.csv".
        lines: How many lines (1-10000), default 10.
    """
    node, where = Fs(ctx).readable_file(path, "head")
    all_lines = _split(node.content)
    return {"path": where, "total_lines": len(all_lines), "content": _join(all_lines[:lines])}


@tool(
    returns="file",
    phrasings=["Show the last {lines} lines of {path}", "tail {path}"],
    values={"path": text_file, "lines": text_choice([5, 10, 20, 50])},
)
def tail(ctx: ToolContext, path: FileArg, lines: LineCount = 10) -> Excerpt:
    """Print the last lines of a file (the newest entries of a log).

    Args:
        path: The file, such as "logs/error.log" or "/var/log/syslog".
        lines: How many lines (1-10000), default 10.
    """
    node, where = Fs(ctx).readable_file(path, "tail")
    all_lines = _split(node.content)
    return {"path": where, "total_lines": len(all_lines), "content": _join(all_lines[-lines:])}


@tool(
    stands_in_for=("head", "tail"),
    returns="file",
    phrasings=["Show lines {start} to {end} of {path}", "Print line {start} of {path}"],
    examples={"end": [5, 10, 20]},
    values={"path": text_file, "start": line_in_file([1, 2, 5, 10])},
)
def read_lines(
    ctx: ToolContext, path: FileArg, start: Annotated[int, Field(ge=1)], end: int | None = None
) -> Lines:
    """Print numbered lines from start to end inclusive (like `sed -n '5,12p'`), at most 500.

    Args:
        path: The file, such as "src/budget_tracker/reports.py".
        start: First line number, counting from 1.
        end: Last line number (default: start + 19, or the end of the file).
    """
    last = start + 19 if end is None else end
    if last < start:
        raise InvalidArgument(f"read_lines: end ({end}) is before start ({start}).")
    node, where = Fs(ctx).readable_file(path, "read_lines")
    all_lines = _split(node.content)
    if start > len(all_lines):
        raise InvalidArgument(
            f"read_lines: {where} has only {len(all_lines)} lines; start at 1 to {len(all_lines) or 1}."
        )
    last = min(last, len(all_lines), start + 499)
    return {
        "path": where,
        "total_lines": len(all_lines),
        "lines": [{"number": i, "text": all_lines[i - 1]} for i in range(start, last + 1)],
    }


@tool(
    returns="file",
    phrasings=["How many lines are in {path}?", "Count the words in {path}"],
    values={"path": text_file},
)
def wc(ctx: ToolContext, path: FileArg) -> WordCount:
    """Count the lines, words and bytes of a file (like `wc`).

    Args:
        path: The file, such as "notes.txt" or "~/Projects/chat-bot/logs/app.log".
    """
    node, where = Fs(ctx).readable_file(path, "wc")
    return {
        "path": where,
        "lines": node.content.count("\n"),
        "words": len(node.content.split()),
        "bytes": node.size,
    }


@tool(
    returns="file",
    phrasings=[
        "Search {path} for '{pattern}'",
        "Which lines in {path} mention {pattern}?",
        "grep -r {pattern} {path}",
    ],
    values={"pattern": text_choice(GREP_WORDS)},
)
def grep(
    ctx: ToolContext,
    pattern: Annotated[str, Field(min_length=1, max_length=200)],
    path: PathArg,
    recursive: bool = False,
    ignore_case: bool = False,
    fixed: bool = False,
) -> Grep:
    """Find the lines matching a pattern in a file, or in every file under a directory.

    Args:
        pattern: A regular expression such as "ERROR|WARNING" or "def \\w+" (like grep -E;
            no backreferences or lookarounds), or plain text with fixed=true.
        path: A file such as "logs/app.log", or a directory such as "." with recursive=true.
        recursive: Search every file under the directory (like grep -r).
        ignore_case: Match regardless of case (like grep -i).
        fixed: Treat the pattern as plain text, not a regular expression (like grep -F).
    """
    regex = compile_regex(pattern, ignore_case=ignore_case, literal=fixed, cmd="grep")
    fs = Fs(ctx)
    node, where = fs.existing(path, "grep")
    errors: list[str] = []
    files: list[AnyNode]
    if node.is_dir:
        if not recursive:
            raise PreconditionFailed(
                f"grep: {where}: Is a directory (pass recursive=true to search the files in it)."
            )
        if not fs.can(node, "rx"):
            raise PermissionDenied(f"grep: {where}: Permission denied.")
        nodes, denied = fs.walk(node, content=True)
        errors += [f"grep: {d}: Permission denied" for d in denied]
        files = [n for n, _ in nodes if not n.is_dir]
    else:
        files = [node]
    matches: list[Match] = []
    hit_files: list[str] = []
    for f in files:
        if not fs.can(f, "r"):
            errors.append(f"grep: {fs.path(f)}: Permission denied")
            continue
        fpath = fs.path(f)
        assert f.content is not None  # an ORM row, or an entry walked with content=True
        lines = _split(f.content)
        ctx.spend(len(lines), "lines", hint="search a smaller directory or a single file")
        hits: list[Match] = [
            {"path": fpath, "line_number": i, "text": line[:300]}
            for i, line in enumerate(lines, 1)
            if regex.search(line)
        ]
        matches += hits
        if hits:
            hit_files.append(fpath)
    result: Grep = {
        "pattern": pattern,
        "count": len(matches),
        "files": hit_files,
        "matches": matches[:200],
    }
    if len(matches) > 200:
        result["truncated"] = True
    if errors:
        result["errors"] = errors
    return result


@tool(
    returns="file",
    phrasings=["What changed between {path1} and {path2}?", "diff {path1} {path2}"],
    examples={"context": [0, 3]},
    values={"path1": first_text_file, "path2": file_beside_first},
)
def diff(
    ctx: ToolContext,
    path1: FileArg,
    path2: FileArg,
    context: Annotated[int, Field(ge=0, le=10)] = 3,
) -> Diff:
    """Compare two files line by line and show a unified diff (like `diff -u`).

    Args:
        path1: The original file, such as "README.md".
        path2: The changed file, such as "~/Downloads/README (1).md".
        context: Unchanged lines shown around each change (0-10), default 3.
    """
    fs = Fs(ctx)
    a, pa = fs.readable_file(path1, "diff")
    b, pb = fs.readable_file(path2, "diff")
    la, lb = _split(a.content), _split(b.content)
    if len(la) * len(lb) > MAX_DIFF_PAIRS:
        raise WorkLimitExceeded(
            f"diff: {pa} ({len(la)} lines) and {pb} ({len(lb)} lines) are too long to compare "
            f"in one call (at most {MAX_DIFF_PAIRS} line pairs); nothing was changed. Compare "
            "them by checksum, or parts of them read with read_lines."
        )
    out = list(difflib.unified_diff(la, lb, fromfile=pa, tofile=pb, lineterm="", n=context))
    added = sum(1 for x in out[2:] if x.startswith("+"))
    removed = sum(1 for x in out[2:] if x.startswith("-"))
    return {
        "path1": pa,
        "path2": pb,
        "identical": not out,
        "added_lines": added,
        "removed_lines": removed,
        "diff": "\n".join(out[:600]),
    }


MAX_DIFF_PAIRS = 25_000_000
"""difflib is quadratic in the worst case: most (lines of path1) x (lines of path2)."""

_NUMBER = re.compile(r"^\s*([-+]?\d+(?:\.\d+)?)")


@tool(
    name="sort",
    returns="file",
    phrasings=[
        "Sort the lines of {path}",
        "Sort {path} by column {field} separated by '{separator}'",
    ],
    values={
        "path": sortable_file,
        "field": text_choice([1, 2, 3]),
        "separator": separator_for_file,
    },
)
def sort_lines(
    ctx: ToolContext,
    path: FileArg,
    reverse: bool = False,
    numeric: bool = False,
    unique: bool = False,
    ignore_case: bool = False,
    field: Annotated[int, Field(ge=1)] | None = None,
    separator: Annotated[str, Field(min_length=1, max_length=1)] | None = None,
    skip_header: bool = False,
) -> Sorted:
    """Show the lines of a file sorted (the file is not changed), like `sort`.

    Args:
        path: The file, such as "~/Desktop/shopping-list.txt" or "budget.csv".
        reverse: Largest or last first (like sort -r).
        numeric: Compare by number, so 9 comes before 10 (like sort -n).
        unique: Drop repeated lines (like sort -u).
        ignore_case: Compare regardless of case (like sort -f).
        field: Sort by this column, counting from 1 (like sort -k2).
        separator: Column separator for field, such as "," for CSV (default: whitespace).
        skip_header: Keep the first line (a CSV header) on top, unsorted.
    """
    node, where = Fs(ctx).readable_file(path, "sort")
    lines = _split(node.content)
    header = lines[:1] if skip_header else []
    body = lines[1:] if skip_header else lines

    def key(line: str) -> tuple:
        text = line
        if field is not None:
            cols = line.split(separator) if separator else line.split()
            text = cols[field - 1] if len(cols) >= field else ""
        if ignore_case:
            text = text.lower()
        if numeric:
            m = _NUMBER.match(text)
            return (float(m.group(1)) if m else 0.0, line)
        return (text, line)

    body = sorted(body, key=key, reverse=reverse)
    if unique:
        body = list(dict.fromkeys(body))
    return {"path": where, "lines": header + body}


@tool(
    returns="file",
    phrasings=["Count repeated lines in {path}", "Show the distinct lines of {path}"],
    values={"path": text_file},
)
def uniq(
    ctx: ToolContext,
    path: FileArg,
    count: bool = False,
    sort_first: bool = False,
    duplicates_only: bool = False,
    ignore_case: bool = False,
) -> Uniq:
    """Collapse runs of identical adjacent lines, like `uniq` (the file is not changed).

    Args:
        path: The file, such as "~/Music/playlists/focus.m3u".
        count: Prefix each line with how often it occurs (like uniq -c).
        sort_first: Sort the lines first so equal lines anywhere are grouped (like sort | uniq).
        duplicates_only: Only show lines that occur more than once (like uniq -d).
        ignore_case: Treat lines differing only in case as equal (like uniq -i).
    """
    node, where = Fs(ctx).readable_file(path, "uniq")
    lines = _split(node.content)
    if sort_first:
        lines = sorted(lines, key=lambda x: (x.lower(), x) if ignore_case else (x, x))
    # Runs of equal lines; each shows as its first line, as uniq prints it.
    runs = [list(run) for _, run in groupby(lines, key=str.lower if ignore_case else None)]
    if duplicates_only:
        runs = [run for run in runs if len(run) > 1]
    if count:
        counted: list[Counted] = [{"count": len(run), "line": run[0]} for run in runs]
        return {"path": where, "lines": counted}
    return {"path": where, "lines": [run[0] for run in runs]}


@tool(
    returns="file",
    phrasings=["What's the checksum of {path}?", "Compute the {algorithm} hash of {path}"],
    values={"path": a_file},
)
def checksum(
    ctx: ToolContext, path: FileArg, algorithm: Literal["md5", "sha1", "sha256"] = "sha256"
) -> Checksum:
    """Compute a file's checksum (like sha256sum), to check whether two files are identical.

    Args:
        path: The file, such as "~/Downloads/IMG_2041.jpg".
        algorithm: "md5", "sha1" or "sha256" (default).
    """
    node, where = Fs(ctx).readable_file(path, algorithm + "sum")
    digest = hashlib.new(algorithm, node.content.encode()).hexdigest()
    return {"path": where, "algorithm": algorithm, "checksum": digest}
