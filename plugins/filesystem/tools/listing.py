"""Listing and inspection: ls, tree, stat, du and the searches (find, duplicates, file types)."""

from __future__ import annotations

import datetime as dt
import hashlib
from collections import Counter
from typing import Annotated, Literal

from pydantic import Field

from prove_gym.server import InvalidArgument, PermissionDenied, ToolContext
from prove_gym.server.patterns import compile_glob

from ._declare import tool
from .args import MAX_NAME, MAX_RESULTS, DirArg, NamePattern, PathArg
from .fitting import a_file, extension_under, name_under
from .fs import Fs, _kind, _perms
from .nodes import AnyNode, Entry
from .results import (
    ByExtension,
    DiskUsage,
    Duplicates,
    FileSize,
    FileType,
    Found,
    Group,
    Listing,
    NodeInfo,
    Stat,
    Tree,
    Usage,
)


def _info(node: AnyNode) -> NodeInfo:
    return {
        "name": node.name,
        "type": _kind(node),
        "size": node.size,
        "permissions": _perms(node.mode, node.is_dir),
        "owner": node.owner,
        "modified": node.modified.isoformat(timespec="minutes"),
    }


def _human(n: int) -> str:
    size = float(n)
    for unit in ("B", "K", "M", "G"):
        if size < 1024 or unit == "G":
            return f"{int(size)}{unit}" if unit == "B" else f"{size:.1f}{unit}"
        size /= 1024
    return f"{n}B"


@tool(
    stands_in_for=("exists",),
    returns="path",
    phrasings=["What's in {path}?", "List the files in {path}", "ls -l {path}"],
)
def ls(
    ctx: ToolContext, path: DirArg = ".", show_hidden: bool = False, long: bool = False
) -> Listing:
    """List a directory (names of directories end with "/"), or describe a single file.

    Args:
        path: Directory to list, such as "." (default), "~/Pictures/2025" or "/tmp".
        show_hidden: Also list names starting with ".", such as ".bashrc" (like ls -a).
        long: Give type, size in bytes, permissions, owner and modification time (like ls -l).
    """
    fs = Fs(ctx)
    node, where = fs.existing(path, "ls")
    if not node.is_dir:
        return {"path": where, "entries": [_info(node)] if long else [node.name]}
    if not fs.can(node, "r"):
        raise PermissionDenied(f"ls: cannot open directory '{where}': Permission denied.")
    kids = [k for k in fs.children(node) if show_hidden or not k.name.startswith(".")]
    return {
        "path": where,
        "total": len(kids),
        "entries": (
            [_info(k) for k in kids] if long else [k.name + ("/" if k.is_dir else "") for k in kids]
        ),
    }


@tool(
    stands_in_for=("ls",),
    returns="path",
    phrasings=["Show the tree of {path}", "Show me the folder structure under {path}"],
    examples={"max_depth": [1, 2, 3]},
)
def tree(
    ctx: ToolContext,
    path: DirArg = ".",
    max_depth: Annotated[int, Field(ge=1, le=6)] = 2,
    show_hidden: bool = False,
) -> Tree:
    """Draw the directory tree under a directory, like the `tree` command.

    Args:
        path: Top directory, such as "~/Projects" or "." (default).
        max_depth: How many levels to descend (1-6), default 2.
        show_hidden: Also show names starting with ".".
    """
    fs = Fs(ctx)
    top, where = fs.directory(path, "tree")
    fs.preload(top, max_depth)
    lines = [where]
    counts: Counter[str] = Counter()
    denied: list[str] = []

    def draw(node: AnyNode, prefix: str, depth: int) -> None:
        kids = [k for k in fs.children(node) if show_hidden or not k.name.startswith(".")]
        for i, kid in enumerate(kids):
            last = i == len(kids) - 1
            lines.append(
                f"{prefix}{'└── ' if last else '├── '}{kid.name}{'/' if kid.is_dir else ''}"
            )
            counts["directories" if kid.is_dir else "files"] += 1
            if kid.is_dir and depth < max_depth:
                if fs.can(kid, "rx"):
                    draw(kid, prefix + ("    " if last else "│   "), depth + 1)
                else:
                    denied.append(fs.path(kid))

    draw(top, "", 1)
    result: Tree = {
        "path": where,
        "tree": "\n".join(lines[:400]),
        "directories": counts["directories"],
        "files": counts["files"],
    }
    if len(lines) > 400:
        result["truncated"] = True
    if denied:
        result["errors"] = [f"tree: {d}: Permission denied" for d in denied]
    return result


@tool(
    stands_in_for=("exists",),
    returns="path",
    phrasings=["Show details of {path}", "When was {path} last modified?", "stat {path}"],
)
def stat(ctx: ToolContext, path: PathArg) -> Stat:
    """Show a file's or directory's metadata: type, size, permissions, owner, modification time.

    Args:
        path: The file or directory, such as "~/.ssh/id_ed25519" or "Documents/Work".
    """
    fs = Fs(ctx)
    node, where = fs.existing(path, "stat")
    info: Stat = {"path": where, **_info(node), "mode": f"0{node.mode:03o}"}
    if node.is_dir:
        info["entries"] = len(fs.children(node))
    else:
        info["lines"] = node.content.count("\n")
    return info


@tool(
    returns="path",
    phrasings=[
        "How much space does {path} take?",
        "du {path}",
        "Which folders in {path} are biggest?",
    ],
)
def du(ctx: ToolContext, path: PathArg = ".", per_entry: bool = False) -> DiskUsage:
    """Disk usage: total bytes of the files under a path (like `du -sh`).

    Args:
        path: File or directory, such as "~/Pictures" or "." (default).
        per_entry: Also give the total of each direct entry of the directory, largest first.
    """
    fs = Fs(ctx)
    node, where = fs.existing(path, "du")
    nodes, denied = fs.walk(node)
    total = sum(n.size for n, _ in nodes if not n.is_dir)
    files = sum(1 for n, _ in nodes if not n.is_dir)
    result: DiskUsage = {"path": where, "bytes": total, "size": _human(total), "files": files}
    if per_entry and node.is_dir and where not in denied:
        entries: list[Usage] = []
        for kid in fs.children(node):
            sub, _ = fs.walk(kid)
            size = sum(n.size for n, _ in sub if not n.is_dir)
            entries.append({"path": fs.path(kid), "bytes": size, "size": _human(size)})
        result["entries"] = sorted(entries, key=lambda e: (-e["bytes"], e["path"]))
    if denied:
        result["errors"] = [f"du: cannot read directory '{d}': Permission denied" for d in denied]
    return result


@tool(
    stands_in_for=("find_by_extension",),
    returns="path",
    phrasings=[
        "Find files named {name} under {path}",
        "Search {path} for anything named '{name}'",
        "Find files bigger than {min_size} bytes in {path}",
    ],
    examples={"min_size": [1000, 2000, 5000]},
    values={"name": name_under},
)
def find(
    ctx: ToolContext,
    path: DirArg = ".",
    name: NamePattern | None = None,
    type: Literal["f", "d"] | None = None,
    min_size: int | None = None,
    max_size: int | None = None,
    modified_within_days: Annotated[int, Field(ge=0)] | None = None,
    max_depth: Annotated[int, Field(ge=0)] | None = None,
    ignore_case: bool = False,
) -> Found:
    """Search a directory tree for entries matching all the given filters (like `find`).

    Args:
        path: Where to start, such as "~/Projects" or "." (default); it is searched recursively.
        name: Shell pattern for the entry's name, such as "*.log", "IMG_2*.jpg" or "README.md".
        type: "f" for files only, "d" for directories only.
        min_size: Only files of at least this many bytes.
        max_size: Only files of at most this many bytes.
        modified_within_days: Only entries modified in the last N days, such as 7.
        max_depth: Descend at most this many levels (1 = direct entries only).
        ignore_case: Match name case-insensitively (like -iname).
    """
    fs = Fs(ctx)
    top, where = fs.directory(path, "find")
    nodes, denied = fs.walk(top, max_depth)
    # More than a century reaches past every file (and past datetime's range): same result.
    since = ctx.now - dt.timedelta(days=min(modified_within_days or 0, 36_500))
    pattern = None
    if name is not None:  # lowered as before: fnmatch -iname semantics, in linear time
        pattern = compile_glob(name.lower() if ignore_case else name, cmd="find")
    matches = []
    for node, _ in nodes:
        if pattern is not None:
            text = node.name.lower() if ignore_case else node.name
            if not pattern.fullmatch(text):
                continue
        if (type == "f" and node.is_dir) or (type == "d" and not node.is_dir):
            continue
        if (min_size is not None or max_size is not None) and node.is_dir:
            continue
        if min_size is not None and node.size < min_size:
            continue
        if max_size is not None and node.size > max_size:
            continue
        if modified_within_days is not None and node.modified < since:
            continue
        matches.append(fs.path(node))
    result: Found = {"path": where, "count": len(matches), "matches": matches[:MAX_RESULTS]}
    if len(matches) > MAX_RESULTS:
        result["truncated"] = True
    if denied:
        result["errors"] = [f"find: '{d}': Permission denied" for d in denied]
    return result


@tool(
    returns="file",
    phrasings=["Find all .{extension} files in {path}", "List every {extension} file under {path}"],
    values={"extension": extension_under},
)
def find_by_extension(
    ctx: ToolContext, extension: Annotated[str, Field(max_length=MAX_NAME)], path: DirArg = "."
) -> ByExtension:
    """Find files with an extension anywhere under a directory, with their sizes.

    Args:
        extension: The extension, with or without the dot, such as "py", ".jpg" or "csv"
            (case-insensitive).
        path: Where to search, such as "~/Pictures" or "." (default).
    """
    ext = extension.strip().lstrip(".").lower()
    if not ext or "/" in ext:
        raise InvalidArgument(f"find_by_extension: invalid extension {extension!r}; use e.g. 'py'.")
    fs = Fs(ctx)
    top, where = fs.directory(path, "find_by_extension")
    nodes, denied = fs.walk(top)
    found: list[FileSize] = [
        {"path": fs.path(n), "size": n.size}
        for n, _ in nodes
        if not n.is_dir and n.name.lower().endswith("." + ext)
    ]
    result: ByExtension = {
        "path": where,
        "extension": ext,
        "count": len(found),
        "total_bytes": sum(f["size"] for f in found),
        "files": found[:MAX_RESULTS],
    }
    if denied:
        result["errors"] = [f"find: '{d}': Permission denied" for d in denied]
    return result


@tool(
    returns="file",
    phrasings=["Are there duplicate files in {path}?", "Find identical files under {path}"],
)
def find_duplicates(ctx: ToolContext, path: DirArg = ".") -> Duplicates:
    """Find groups of files with identical (non-empty) content under a directory.

    Args:
        path: Where to search recursively, such as "~" or "~/Downloads" (default ".").
    """
    fs = Fs(ctx)
    top, where = fs.directory(path, "find_duplicates")
    nodes, denied = fs.walk(top, content=True)
    groups: dict[str, list[Entry]] = {}
    for node, _ in nodes:
        if not node.is_dir and node.size > 0 and fs.can(node, "r"):
            assert node.content is not None  # walk(content=True) loads every file's content
            digest = hashlib.sha256(node.content.encode()).hexdigest()
            groups.setdefault(digest, []).append(node)
    dupes: list[Group] = [
        {"sha256": d, "size": g[0].size, "paths": sorted(fs.path(n) for n in g)}
        for d, g in groups.items()
        if len(g) > 1
    ]
    dupes.sort(key=lambda g: g["paths"][0])
    result: Duplicates = {
        "path": where,
        "groups": dupes,
        "wasted_bytes": sum(g["size"] * (len(g["paths"]) - 1) for g in dupes),
    }
    if denied:
        result["errors"] = [f"find: '{d}': Permission denied" for d in denied]
    return result


FILE_TYPES = {
    "py": "Python script, ASCII text",
    "js": "JavaScript source, ASCII text",
    "go": "Go source, ASCII text",
    "md": "Markdown document, UTF-8 text",
    "txt": "text",
    "csv": "CSV text",
    "json": "JSON data",
    "toml": "TOML configuration text",
    "log": "log file, text",
    "jpg": "JPEG image data",
    "jpeg": "JPEG image data",
    "png": "PNG image data",
    "pdf": "PDF document",
    "deb": "Debian binary package",
    "m3u": "M3U playlist, text",
    "mp4": "ISO Media, MP4 video",
    "vim": "Vim script, ASCII text",
    "mod": "Go module file, text",
    "sh": "shell script, ASCII text",
}


@tool(
    returns="path",
    phrasings=["What kind of file is {path}?", "Identify the file type of {path}"],
    values={"path": a_file},
)
def file_type(ctx: ToolContext, path: PathArg) -> FileType:
    """Guess what a file contains from its name and content, like the `file` command.

    Args:
        path: The file, such as "~/Downloads/invoice-48213.pdf" or "src/app.py".
    """
    node, where = Fs(ctx).existing(path, "file")
    if node.is_dir:
        kind = "directory"
    elif node.size == 0:
        kind = "empty"
    else:
        ext = node.name.rsplit(".", 1)[-1].lower() if "." in node.name.strip(".") else ""
        head = node.content[:40]
        if ext in FILE_TYPES:
            kind = FILE_TYPES[ext]
        elif head.startswith("-----BEGIN OPENSSH PRIVATE KEY"):
            kind = "OpenSSH private key"
        elif head.startswith("ssh-"):
            kind = "OpenSSH public key"
        elif head.startswith("#!"):
            kind = "script, text executable"
        else:
            kind = "ASCII text" if node.content.isascii() else "UTF-8 Unicode text"
    return {"path": where, "type": kind}
