"""What the filesystem tools return: the TypedDicts that become their output schemas."""

from __future__ import annotations

from typing import Literal

from prove_gym.server import NotRequired, TypedDict

# What the tools return (their MCP outputSchema); keys a result may leave out are NotRequired.
Kind = Literal["file", "directory"]
Cwd = TypedDict("Cwd", {"cwd": str})
WhoAmI = TypedDict("WhoAmI", {"user": str, "home": str, "hostname": str, "cwd": str})
Cd = TypedDict("Cd", {"cwd": str, "previous": str})
Pushed = TypedDict("Pushed", {"cwd": str, "stack": list[str]})
StackEntry = TypedDict("StackEntry", {"index": int, "path": str})
Dirs = TypedDict("Dirs", {"stack": list[StackEntry]})
Resolved = TypedDict("Resolved", {"path": str, "exists": bool})
Exists = TypedDict("Exists", {"path": str, "exists": bool, "type": Kind | None})
Usage = TypedDict("Usage", {"path": str, "bytes": int, "size": str})
FileSize = TypedDict("FileSize", {"path": str, "size": int})
Group = TypedDict("Group", {"sha256": str, "size": int, "paths": list[str]})
FileType = TypedDict("FileType", {"path": str, "type": str})
FileText = TypedDict("FileText", {"path": str, "size": int, "content": str})
Excerpt = TypedDict("Excerpt", {"path": str, "total_lines": int, "content": str})
Line = TypedDict("Line", {"number": int, "text": str})
Lines = TypedDict("Lines", {"path": str, "total_lines": int, "lines": list[Line]})
WordCount = TypedDict("WordCount", {"path": str, "lines": int, "words": int, "bytes": int})
Match = TypedDict("Match", {"path": str, "line_number": int, "text": str})
Sorted = TypedDict("Sorted", {"path": str, "lines": list[str]})
Counted = TypedDict("Counted", {"count": int, "line": str})
Uniq = TypedDict("Uniq", {"path": str, "lines": list[str] | list[Counted]})
Checksum = TypedDict("Checksum", {"path": str, "algorithm": str, "checksum": str})
Made = TypedDict("Made", {"path": str, "created": list[str]})
Touched = TypedDict("Touched", {"path": str, "created": bool})
Written = TypedDict("Written", {"path": str, "created": bool, "size": int})
Appended = TypedDict("Appended", {"path": str, "size": int, "lines": int})
Replaced = TypedDict("Replaced", {"path": str, "replacements": int, "size": int})
Inserted = TypedDict("Inserted", {"path": str, "inserted": int, "total_lines": int})
Deleted = TypedDict("Deleted", {"path": str, "deleted": list[str], "total_lines": int})
Copied = TypedDict(
    "Copied", {"source": str, "destination": str, "copied": int, "overwritten": bool}
)
Moved = TypedDict("Moved", {"source": str, "destination": str, "replaced": bool})
Renamed = TypedDict("Renamed", {"old_path": str, "new_path": str})
Move = TypedDict("Move", {"from": str, "to": str})  # "from" is a keyword: no class syntax
MovedMany = TypedDict("MovedMany", {"count": int, "moved": list[Move]})
Removed = TypedDict("Removed", {"removed": list[str], "count": int, "truncated": NotRequired[bool]})
RemovedDir = TypedDict("RemovedDir", {"removed": str})
Chmod = TypedDict("Chmod", {"path": str, "mode": str, "permissions": str, "changed": int})


class NodeInfo(TypedDict):
    name: str
    type: Kind
    size: int
    permissions: str
    owner: str
    modified: str


class Listing(TypedDict):
    path: str
    total: NotRequired[int]  # not for a single file
    entries: list[str] | list[NodeInfo]


class Stat(NodeInfo):
    path: str
    mode: str
    entries: NotRequired[int]  # directories
    lines: NotRequired[int]  # files


class Unreadable(TypedDict):
    errors: NotRequired[list[str]]  # one message per directory the walk could not read


class Capped(Unreadable):
    truncated: NotRequired[bool]  # only the first results are given


class Tree(Capped):
    path: str
    tree: str
    directories: int
    files: int


class DiskUsage(Usage, Unreadable):
    files: int
    entries: NotRequired[list[Usage]]  # with per_entry=true


class Found(Capped):
    path: str
    count: int
    matches: list[str]


class ByExtension(Unreadable):
    path: str
    extension: str
    count: int
    total_bytes: int
    files: list[FileSize]


class Duplicates(Unreadable):
    path: str
    groups: list[Group]
    wasted_bytes: int


class Grep(Capped):
    pattern: str
    count: int
    files: list[str]
    matches: list[Match]


class Diff(TypedDict):
    path1: str
    path2: str
    identical: bool
    added_lines: int
    removed_lines: int
    diff: str
