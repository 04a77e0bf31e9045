"""The filesystem's 40 tools: a shell session over one directory tree.

Docstrings are what the model reads: keep examples concrete. Paths resolve
like in a shell (absolute, relative to the current directory, ``.``, ``..``,
``~``); every error names the command, the path and the problem the way a
shell would ("rm: cannot remove '/home/ana/x': Is a directory") and then says
what to do next. Paths are not primary keys (they resolve against the current
directory), so path parameters stay strings the tools resolve themselves.
"""

from __future__ import annotations

import datetime as dt
import difflib
import hashlib
import inspect
import posixpath
import random
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import groupby
from pathlib import Path
from typing import Annotated, Any, Literal, NamedTuple, TypeVar

from pydantic import Field
from sqlalchemy import bindparam, delete, func, literal, select, update

from prove_gym.server import (
    Conflict,
    Entity,
    InvalidArgument,
    NotFound,
    NotRequired,
    PermissionDenied,
    PreconditionFailed,
    Query,
    Server,
    ToolContext,
    TypedDict,
    WorkLimitExceeded,
)
from prove_gym.server.patterns import compile_glob, compile_regex

from .models import Base, DirStackEntry, Node, Shell
from .sampler import sample_filesystem

server = Server(
    "filesystem",
    tasks_file=Path(__file__).with_name("tasks.jsonl"),
    version="1.0.0",
    base=Base,
    sampler=sample_filesystem,
    description="A Unix-like filesystem seen through a shell session: a home directory with "
    "documents, projects, photos and logs; navigation (cd, pushd), listing and search "
    "(ls, find, grep, du), reading (cat, head, tail, diff) and changes (mkdir, write, cp, mv, "
    "rm, chmod) with file permissions.",
    instructions="Filesystem conventions: paths work as in a shell: absolute "
    "('/home/ana/notes.txt'), relative to the current directory ('Documents/todo.md', "
    "'../Pictures', '.'), or from the home directory ('~/Projects'). The current directory "
    "persists between calls: cd, pushd and popd change it and pwd shows it. Permissions are "
    "enforced: a file without write permission cannot be changed, and a directory without "
    "write permission takes no new entries and loses none (chmod changes that for your own "
    "files). Results give absolute paths.",
)

MAX_PATH = 4096
"""Longest path (PATH_MAX), in characters."""
MAX_NAME = 255
"""Longest file name or name pattern (NAME_MAX)."""

PathArg = Annotated[str, Entity("path"), Field(max_length=MAX_PATH)]
FileArg = Annotated[str, Entity("file"), Field(max_length=MAX_PATH)]
DirArg = Annotated[str, Entity("directory"), Field(max_length=MAX_PATH)]
NewPath = Annotated[str, Field(max_length=MAX_PATH)]
NamePattern = Annotated[str, Field(max_length=MAX_NAME)]
LineCount = Annotated[int, Field(ge=1, le=10000)]

MAX_FILE_BYTES = 1_000_000
MAX_NODES = 20_000
"""Most files and directories the tree may hold (more is "No space left on device")."""
MAX_TOTAL_BYTES = 32_000_000
"""Most bytes all files together may hold."""
MAX_RESULTS = 300
MAX_STACK = 20
NARROW = "give a deeper path (a subdirectory) or a max_depth"
PATH_PARAMS = ("path", "source", "destination", "path1", "path2")
F = TypeVar("F", bound=Callable[..., Any])


def tool(**options: Any) -> Callable[[F], F]:
    """``server.tool`` with ``normalise="path"`` for every path argument (``PATH_PARAMS``):
    the reward then takes "~/Documents/" and "~/Documents" for the same answer."""

    def register(fn: F) -> F:
        params = inspect.signature(fn).parameters
        normalise: dict[str, Literal["path"]] = {p: "path" for p in PATH_PARAMS if p in params}
        return server.tool(fn, normalise=normalise, **options)

    return register


# ----------------------------------------------------------------- results
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


# ----------------------------------------------------------------- helpers
class NodeRow(NamedTuple):
    """One row of the ``nodes`` table, content included: a node a tool reads or changes."""

    id: str
    parent_id: str | None
    name: str
    kind: str
    owner: str
    mode: int
    size: int
    content: str
    modified: dt.datetime

    @property
    def is_dir(self) -> bool:
        return self.kind == "dir"


class Entry(NamedTuple):
    """A node as a call reads it, for paths, listings and walks: its content only when it was
    read with it (``None`` otherwise; :meth:`Fs.full` reads it)."""

    id: str
    parent_id: str | None
    name: str
    kind: str
    owner: str
    mode: int
    size: int
    modified: dt.datetime
    content: str | None = None

    @property
    def is_dir(self) -> bool:
        return self.kind == "dir"


AnyNode = NodeRow | Entry


@dataclass(slots=True)
class Loc:
    """A resolved path: the node if it exists, else the existing parent and the new name."""

    path: str
    parent: Entry | None
    name: str
    node: NodeRow | None
    slash: bool


# -------------------------------------------------------------- statements
# The tools read and write through these (ctx.sql): compiled once, run on SQLite directly.
# A call reads what it touches: a path one level at a time (the (parent_id, name) index),
# a node's ancestors for its path, and the subtree a walk or listing needs, never more.
_COLUMNS = [Node.__table__.c[name] for name in Entry._fields if name != "content"]
ROOT = Query(select(*_COLUMNS).where(Node.parent_id.is_(None)))
# With its content: the last name of a path is often the file a tool reads.
CHILD = Query(
    select(*_COLUMNS, Node.content).where(
        Node.parent_id == bindparam("parent_id"), Node.name == bindparam("name")
    )
)
# The tools list entries by (name.lower(), name), with Python's lower(): SQLite's folds ASCII
# only, so :meth:`Fs.children` sorts again (the same order unless a name is not ASCII).
CHILDREN = Query(
    select(*_COLUMNS)
    .where(Node.parent_id == bindparam("parent_id"))
    .order_by(func.lower(Node.name), Node.name)
)


def _ancestors() -> Query:
    """A node (``id``) and its ancestors up to the root, the node first."""
    up = select(*_COLUMNS, literal(0).label("height")).where(Node.id == bindparam("id"))
    chain = up.cte("chain", recursive=True)
    parent = Node.__table__.alias("parent")
    chain = chain.union_all(
        select(*(parent.c[c.key] for c in _COLUMNS), chain.c.height + 1).where(
            parent.c.id == chain.c.parent_id
        )
    )
    return Query(select(*(chain.c[c.key] for c in _COLUMNS)).order_by(chain.c.height))


def _subtree(*, content: bool) -> Query:
    """The nodes under ``id`` (itself at depth 0) down to ``max_depth`` levels, with depth."""
    top = select(Node.id, literal(0).label("depth")).where(Node.id == bindparam("id"))
    under = top.cte("under", recursive=True)
    kid = Node.__table__.alias("kid")
    under = under.union_all(
        select(kid.c.id, under.c.depth + 1).where(
            kid.c.parent_id == under.c.id, under.c.depth < bindparam("max_depth")
        )
    )
    columns = [*_COLUMNS, Node.content] if content else _COLUMNS
    return Query(
        select(*columns, under.c.depth)
        .join_from(Node.__table__, under, Node.id == under.c.id)
        .order_by(under.c.depth, Node.parent_id, func.lower(Node.name), Node.name)
    )


ANCESTORS = _ancestors()
SUBTREE = _subtree(content=False)
SUBTREE_WITH_CONTENT = _subtree(content=True)
# The root's subtree is the whole table (see Fs.preload).
TREE = Query(select(*_COLUMNS).order_by(Node.parent_id, func.lower(Node.name), Node.name))
TREE_WITH_CONTENT = Query(
    select(*_COLUMNS, Node.content).order_by(Node.parent_id, func.lower(Node.name), Node.name)
)
ALL_LEVELS = MAX_NODES  # no tree is deeper than it has nodes: max_depth for a whole subtree
NODE = Query(select(Node.__table__).where(Node.id == bindparam("id")))
USAGE = Query(select(func.count(), func.coalesce(func.sum(Node.size), 0)))
LAST_NODE_ID = Query(select(func.max(Node.id)))
MOVE_NODES = Query(
    update(Node)
    .where(Node.id.in_(bindparam("ids", expanding=True)))
    .values(parent_id=bindparam("parent_id"))
)
SET_MODE = Query(
    update(Node).where(Node.id.in_(bindparam("ids", expanding=True))).values(mode=bindparam("mode"))
)
DELETE_NODES = Query(delete(Node).where(Node.id.in_(bindparam("ids", expanding=True))))
SHELL = Query(select(Shell.__table__).where(Shell.id == 1))
STACK = Query(select(DirStackEntry.node_id).order_by(DirStackEntry.position.desc()))
STACK_SIZE = Query(select(func.count()).select_from(DirStackEntry.__table__))
STACK_TOP = Query(select(DirStackEntry.__table__).order_by(DirStackEntry.position.desc()).limit(1))
TOP_POSITION = Query(select(func.max(DirStackEntry.position)))
POP = Query(delete(DirStackEntry).where(DirStackEntry.position == bindparam("position")))
UNSTACK = Query(
    delete(DirStackEntry).where(DirStackEntry.node_id.in_(bindparam("ids", expanding=True)))
)


def _sort_key(n: AnyNode) -> tuple[str, str]:
    return (n.name.lower(), n.name)


def _kind(node: AnyNode) -> Kind:
    return "directory" if node.is_dir else "file"


def _perms(mode: int, is_dir: bool) -> str:
    bits = "".join(ch if mode & (1 << (8 - i)) else "-" for i, ch in enumerate("rwxrwxrwx"))
    return ("d" if is_dir else "-") + bits


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


def _split(content: str) -> list[str]:
    """Lines of a file, without the final newline's empty tail."""
    if not content:
        return []
    body = content[:-1] if content.endswith("\n") else content
    return body.split("\n")


def _join(lines: list[str]) -> str:
    return "".join(line + "\n" for line in lines)


def _as_line(text: str) -> str:
    """Text as ``echo`` writes it: a newline is added unless it ends with one (or is empty)."""
    return text if not text or text.endswith("\n") else text + "\n"


class Fs:
    """The tree and session as the tools see them (one per call).

    Nodes are read as the call needs them and kept until the tree changes (:meth:`changed`):
    a path resolves one level at a time, a node's path comes from its ancestors (read in one
    statement), and walks and listings read the subtree under their top in one statement.
    """

    def __init__(self, ctx: ToolContext) -> None:
        self.ctx = ctx
        self.sql = ctx.sql
        shell = self.sql.first(SHELL)
        if shell is None:  # pragma: no cover - every sampled state has one
            raise PreconditionFailed("The shell session is missing.")
        self.shell = shell
        self.user = shell.user
        self._root: Entry | None = None
        self._rows: dict[str, Entry] = {}  # the nodes read so far, by id
        self._names: dict[tuple[str | None, str], Entry] = {}  # the same, by parent and name
        self._kids: dict[str, list[Entry]] = {}  # the entries of the nodes listed, sorted
        self._paths: dict[str, str] = {}
        self._whole: dict[str, bool] = {}  # nodes read with all under them: with content?

    # ---------------------------------------------------------- structure
    def full(self, node: AnyNode) -> NodeRow:
        """The whole row of a node, content included (listings and walks leave it out)."""
        if isinstance(node, NodeRow):
            return node
        if node.content is not None:  # read with it
            return NodeRow(**node._asdict())
        return NodeRow._make(self.sql.one(NODE, id=node.id))

    def _keep(self, rows: list[Any]) -> list[Entry]:
        """Rows read as entries, remembered for this call."""
        entries = [Entry(*r) for r in rows]
        for e in entries:
            self._rows[e.id] = e
            self._names[e.parent_id, e.name] = e
            if e.parent_id is None:
                self._root = e
        return entries

    def entry(self, node_id: str) -> Entry:
        """The node ``node_id`` (read with its ancestors, which its path needs)."""
        found = self._rows.get(node_id)
        if found is None:
            chain = self._keep(self.sql.all(ANCESTORS, id=node_id))
            if not chain:
                raise KeyError(node_id)
            found = chain[0]
        return found

    @property
    def root(self) -> Entry:
        if self._root is None:
            self._keep([self.sql.one(ROOT)])
            assert self._root is not None
        return self._root

    @property
    def cwd(self) -> Entry:
        return self.entry(self.shell.cwd_id)

    @property
    def home(self) -> Entry:
        return self.entry(self.shell.home_id)

    def parent(self, node: AnyNode) -> Entry | None:
        return self.entry(node.parent_id) if node.parent_id is not None else None

    def path(self, node: AnyNode) -> str:
        chain: list[Entry] = []  # up to the first ancestor whose path is known (no recursion)
        current: str | None = node.id
        while current is not None and current not in self._paths:
            row = self.entry(current)
            chain.append(row)
            current = row.parent_id
        base = self._paths[current] if current is not None else ""
        for row in reversed(chain):
            base = "/" if row.parent_id is None else base.rstrip("/") + "/" + row.name
            self._paths[row.id] = base
        return base

    def preload(self, top: AnyNode, max_depth: int | None = None, *, content: bool = False) -> None:
        """Read the nodes under ``top`` (``max_depth`` levels; all without one) in one
        statement, with file contents if asked, for the walks and listings that follow."""
        known = self._whole.get(top.id)
        if known is not None and (known or not content):
            return  # read already, whole
        if top.parent_id is None:  # the root's subtree is the whole table: a scan, no recursion
            entries = listed = self._keep(self.sql.all(TREE_WITH_CONTENT if content else TREE))
            whole = True
        else:
            depth = ALL_LEVELS if max_depth is None else min(max_depth, ALL_LEVELS)
            rows = self.sql.all(
                SUBTREE_WITH_CONTENT if content else SUBTREE, id=top.id, max_depth=depth
            )
            entries = self._keep([r[:-1] for r in rows])
            listed = [e for e, r in zip(entries, rows, strict=True) if r.depth < depth]
            whole = max_depth is None
        kids: dict[str, list[Entry]] = {e.id: [] for e in listed if e.is_dir}  # entries read
        for e in entries:
            if e.parent_id in kids:
                kids[e.parent_id].append(e)
        for node_id, group in kids.items():
            group.sort(key=_sort_key)
            self._kids[node_id] = group
        if whole:
            self._whole.update((e.id, content) for e in listed)

    def changed(self) -> None:
        """Forget the nodes read after a change to the tree."""
        self._root = None
        self._rows = {}
        self._names = {}
        self._kids = {}
        self._paths = {}
        self._whole = {}

    def children(self, node: AnyNode) -> list[Entry]:
        kids = self._kids.get(node.id)
        if kids is None:
            # sorted again: Python's lower() folds more than SQLite's (see CHILDREN)
            kids = sorted(self._keep(self.sql.all(CHILDREN, parent_id=node.id)), key=_sort_key)
            self._kids[node.id] = kids
        return list(kids)

    def child(self, parent: AnyNode, name: str) -> Entry | None:
        known = self._names.get((parent.id, name))
        if known is not None or parent.id in self._kids:  # read already (listed: all of them)
            return known
        found = self.sql.first(CHILD, parent_id=parent.id, name=name)
        return None if found is None else self._keep([found])[0]

    def walk(
        self, top: AnyNode, max_depth: int | None = None, *, content: bool = False
    ) -> tuple[list[tuple[Entry, int]], list[str]]:
        """Pre-order (entry, depth) under ``top`` (itself at depth 0) and the unreadable dirs."""
        self.preload(top, max_depth, content=content)
        out: list[tuple[Entry, int]] = []
        denied: list[str] = []

        stack: list[tuple[Entry, int]] = [(self._rows[top.id], 0)]
        while stack:  # iterative: a tree may be deeper than Python's recursion limit
            node, depth = stack.pop()
            self.ctx.spend(1, "entries", hint=NARROW)
            out.append((node, depth))
            if not node.is_dir or (max_depth is not None and depth >= max_depth):
                continue
            if not self.can(node, "rx"):
                denied.append(self.path(node))
                continue
            stack += [(kid, depth + 1) for kid in reversed(self._kids.get(node.id, []))]
        return out, denied

    def subtree(self, top: AnyNode, *, content: bool = False) -> list[Entry]:
        """Every node under ``top`` (itself first), ignoring permissions."""
        self.preload(top, content=content)
        out = [self._rows[top.id]]
        for node in out:
            self.ctx.spend(1, "entries", hint="give a smaller directory")
            if node.is_dir:
                out.extend(self._kids.get(node.id, []))
        return out

    def is_inside(self, node: AnyNode, ancestor: AnyNode) -> bool:
        current: AnyNode | None = node
        while current is not None:
            if current.id == ancestor.id:
                return True
            current = self.parent(current)
        return False

    def need_space(self, cmd: str, target: str, nodes: int, size: int) -> None:
        """Refuse to add ``nodes`` entries and ``size`` bytes past the tree's limits."""
        count, total = self.sql.one(USAGE)
        if count + nodes > MAX_NODES or total + size > MAX_TOTAL_BYTES:
            raise PreconditionFailed(
                f"{cmd}: cannot create '{target}': No space left on device (the disk holds at "
                f"most {MAX_NODES} entries and {MAX_TOTAL_BYTES} bytes; it has {count} and "
                f"{total}); remove files with rm first."
            )

    def next_number(self) -> int:
        last = self.sql.scalar(LAST_NODE_ID)
        return int(last.split("_")[1]) + 1 if last else 1

    # -------------------------------------------------------- permissions
    def can(self, node: AnyNode, what: Literal["r", "w", "x", "rx", "wx", "rwx"]) -> bool:
        """Whether the user has every permission in ``what`` (owner bits on their own nodes)."""
        bits = (node.mode >> 6) & 7 if node.owner == self.user else node.mode & 7
        return all(bits & {"r": 4, "w": 2, "x": 1}[c] for c in what)

    def fix(self, node: AnyNode, yours: str, theirs: str = "") -> str:
        """How to get past a permission error: ``yours`` on the user's own node, else its owner."""
        return yours if node.owner == self.user else f"it belongs to {node.owner}{theirs}"

    def need_writable_dir(self, cmd: str, verb: str, target: str, directory: AnyNode) -> None:
        if not self.can(directory, "wx"):
            where = self.path(directory)
            fix = self.fix(
                directory, f"chmod u+w {where} first", "; choose a directory under your home"
            )
            raise PermissionDenied(
                f"{cmd}: cannot {verb} '{target}': Permission denied (the directory {where} "
                f"is not writable; {fix})."
            )

    def need_writable_file(self, cmd: str, node: AnyNode, path: str) -> None:
        if not self.can(node, "w"):
            fix = self.fix(node, f"chmod u+w {path} first", "; copy it under your home to edit it")
            raise PermissionDenied(
                f"{cmd}: {path}: Permission denied (the file is read-only; {fix})."
            )

    # ---------------------------------------------------------- resolving
    def absolute(self, raw: str, cmd: str) -> str:
        """``raw`` as an absolute path, ``~``, ``.`` and ``..`` resolved without looking them up."""
        text = raw.strip()
        if not text:
            raise InvalidArgument(
                f"{cmd}: empty path; give a path such as 'Documents', '~/notes.txt' or '/tmp'."
            )
        if text == "~" or text.startswith("~/"):
            base, rest = self.path(self.home), text[1:].lstrip("/")
        elif text.startswith("~"):
            raise InvalidArgument(
                f"{cmd}: {text}: only '~' (your home, {self.path(self.home)}) is supported, "
                "not '~user'."
            )
        elif text.startswith("/"):
            base, rest = "/", text
        else:
            base, rest = self.path(self.cwd), text
        full = posixpath.normpath(posixpath.join(base, rest)) if rest else base
        return "/" + full.lstrip("/")

    def locate(self, raw: str, cmd: str) -> Loc:
        """Resolve ``raw`` like a shell; the last component may be missing."""
        text = raw.strip()
        if "\x00" in text or len(text) > 4096:
            raise InvalidArgument(f"{cmd}: invalid path {raw[:80]!r}.")
        full = self.absolute(text, cmd)
        parts = [p for p in full.split("/") if p]
        slash = text.endswith("/") or text.endswith("/.")
        current, parent = self.root, None
        for i, part in enumerate(parts):
            if not current.is_dir:
                raise PreconditionFailed(
                    f"{cmd}: {full}: Not a directory ({self.path(current)} is a file)."
                )
            if not self.can(current, "x"):
                raise PermissionDenied(
                    f"{cmd}: {full}: Permission denied (you may not enter {self.path(current)})."
                )
            if len(part) > 255:
                raise InvalidArgument(f"{cmd}: {part[:40]}...: File name too long (max 255).")
            nxt = self.child(current, part)
            if nxt is None:
                if i == len(parts) - 1:
                    return Loc(full, current, part, None, slash)
                raise self.missing(cmd, full, current, part)
            parent, current = current, nxt
            self._paths[current.id] = "/" + "/".join(parts[: i + 1])  # the path walked so far
        if slash and not current.is_dir:
            raise PreconditionFailed(f"{cmd}: {full}/: Not a directory.")
        return Loc(full, parent, current.name, self.full(current), slash)

    def missing(self, cmd: str, full: str, parent: AnyNode, name: str) -> NotFound:
        where = self.path(parent)
        names = [n.name for n in self.children(parent)] if self.can(parent, "r") else []
        close = [n for n in names if n.lower() == name.lower() and n != name]
        close += difflib.get_close_matches(name, [n for n in names if n not in close], 3, 0.6)
        fix = f"run ls {where} to see what is there."
        if close:
            fix = f"did you mean {' or '.join(map(repr, close[:3]))}?"
        hint = f"{where} has no entry {name!r}; {fix}"
        if "*" in name or "?" in name:
            hint = (
                f"patterns such as {name!r} are not expanded in paths; use find with "
                f"name={name!r}, or move_matching to move matching entries"
            )
        if cmd in ("cd", "pushd"):
            return NotFound(f"{cmd}: no such file or directory: {full} ({hint})")
        return NotFound(f"{cmd}: {full}: No such file or directory ({hint})")

    def existing(self, raw: str, cmd: str) -> tuple[NodeRow, str]:
        loc = self.locate(raw, cmd)
        if loc.node is None:
            assert loc.parent is not None
            raise self.missing(cmd, loc.path, loc.parent, loc.name)
        return loc.node, loc.path

    def readable_file(self, raw: str, cmd: str) -> tuple[NodeRow, str]:
        node, path = self.existing(raw, cmd)
        if node.is_dir:
            raise PreconditionFailed(
                f"{cmd}: {path}: Is a directory (use ls {path} to list it, or give a file in it)."
            )
        if not self.can(node, "r"):
            raise PermissionDenied(
                f"{cmd}: {path}: Permission denied (the file is not readable; "
                f"{self.fix(node, 'chmod u+r it first')})."
            )
        return node, path

    def editable_file(self, raw: str, cmd: str) -> tuple[NodeRow, str]:
        node, path = self.readable_file(raw, cmd)
        self.need_writable_file(cmd, node, path)
        return node, path

    def directory(self, raw: str, cmd: str, *, readable: bool = True) -> tuple[NodeRow, str]:
        node, path = self.existing(raw, cmd)
        if not node.is_dir:
            raise PreconditionFailed(
                f"{cmd}: {path}: Not a directory (it is a file; give its directory instead)."
            )
        if readable and not self.can(node, "rx"):
            raise PermissionDenied(f"{cmd}: cannot open directory '{path}': Permission denied.")
        return node, path

    def enter(self, raw: str, cmd: str) -> tuple[NodeRow, str]:
        """A directory to make current (``cd``, ``pushd``): it needs execute permission."""
        node, path = self.existing(raw, cmd)
        if not node.is_dir:
            raise PreconditionFailed(
                f"{cmd}: not a directory: {path} (it is a file; cd to its directory)."
            )
        if not self.can(node, "x"):
            raise PermissionDenied(
                f"{cmd}: permission denied: {path} (no execute permission on it; "
                f"{self.fix(node, 'chmod u+x it first')})."
            )
        return node, path

    def new_entry(self, raw: str, cmd: str, verb: str) -> Loc:
        """A path that may be created: its parent exists, is a directory and is writable."""
        loc = self.locate(raw, cmd)
        if loc.node is None:
            assert loc.parent is not None
            check_name(cmd, loc.name)
            self.need_writable_dir(cmd, verb, loc.path, loc.parent)
        return loc

    # ------------------------------------------------------------ changes
    def chdir(self, node: AnyNode) -> None:
        """Make ``node`` the current directory; the one before becomes OLDPWD (``cd -``)."""
        self.shell = self.sql.update(Shell, self.shell, oldpwd_id=self.shell.cwd_id, cwd_id=node.id)

    def stack(self) -> list[str]:
        """The directory stack: the current directory, then the pushd entries, top first."""
        return [self.path(self.cwd)] + [self.path(self.entry(n)) for n in self.sql.scalars(STACK)]

    def save(self, *changes: tuple[AnyNode, dict[str, Any]]) -> None:
        """Set columns of nodes: one ``UPDATE`` per node whose values differ, in key order as
        the ORM's flush wrote them; a node named twice (the directory a move leaves and
        enters) is one row."""
        rows: dict[str, tuple[AnyNode, dict[str, Any]]] = {}
        for node, values in changes:
            rows.setdefault(node.id, (node, {}))[1].update(values)
        for key in sorted(rows):
            node, values = rows[key]
            self.sql.update(Node, node, **values)
        self.changed()

    def add(self, parent: AnyNode, name: str, kind: str, *, mode: int) -> NodeRow:
        """A new empty file or directory of the user's."""
        self.need_space("create", self.path(parent).rstrip("/") + "/" + name, 1, 0)
        node = NodeRow(
            id=f"n_{self.next_number():05d}",
            parent_id=parent.id,
            name=name,
            kind=kind,
            owner=self.user,
            mode=mode,
            size=0,
            content="",
            modified=self.ctx.now,
        )
        self.sql.insert(Node, **node._asdict())
        self.sql.update(Node, parent, modified=self.ctx.now)
        self.changed()
        return node

    def set_content(self, cmd: str, node: NodeRow, path: str, content: str) -> NodeRow:
        """``node`` with ``content`` written (and its size and modification time)."""
        size = len(content.encode())
        if size > MAX_FILE_BYTES:
            raise InvalidArgument(
                f"{cmd}: {path}: File too large ({size} bytes; the limit is {MAX_FILE_BYTES})."
            )
        if size > node.size:
            self.need_space(cmd, path, 0, size - node.size)
        return self.sql.update(Node, node, content=content, size=size, modified=self.ctx.now)

    def write(self, cmd: str, raw: str, text: str, *, append: bool) -> tuple[NodeRow, str, bool]:
        """Write (or append) ``text`` to a file, created if missing: (node, path, created)."""
        loc = self.new_entry(raw, cmd, "create")
        node = loc.node
        if node is None:
            if loc.slash:
                raise PreconditionFailed(f"{cmd}: {loc.path}/: Not a directory.")
            assert loc.parent is not None
            node = self.add(loc.parent, loc.name, "file", mode=0o644)
        elif node.is_dir:
            raise PreconditionFailed(f"{cmd}: {loc.path}: Is a directory (give a file path).")
        else:
            self.need_writable_file(cmd, node, loc.path)
            text = node.content + text if append else text
        node = self.set_content(cmd, node, loc.path, text)
        return node, loc.path, loc.node is None

    def guard_cwd(self, cmd: str, verb: str, node: AnyNode, path: str) -> None:
        cwd = self.cwd
        if self.is_inside(cwd, node):
            raise PreconditionFailed(
                f"{cmd}: cannot {verb} '{path}': it contains your current directory "
                f"{self.path(cwd)}; cd somewhere outside it first."
            )

    def remove(self, nodes: Sequence[AnyNode]) -> None:
        """Delete nodes (whole subtrees) and the session's references to them."""
        ids = [n.id for n in nodes]
        if self.shell.oldpwd_id in ids:
            self.shell = self.sql.update(Shell, self.shell, oldpwd_id=None)
        self.sql.run(UNSTACK, ids=ids)
        for start in range(0, len(ids), 500):
            self.sql.run(DELETE_NODES, ids=ids[start : start + 500])
        self.changed()

    def copy_tree(self, source: AnyNode, parent: AnyNode, name: str) -> int:
        """Copy ``source`` (and everything under it) as ``parent/name``; returns the count."""
        entries = self.subtree(source, content=True)
        target = self.path(parent).rstrip("/") + "/" + name
        self.need_space("cp", target, len(entries), sum(e.size for e in entries))
        number = self.next_number()
        new_ids: dict[str, str] = {}
        rows = []
        for e in entries:
            new_ids[e.id] = f"n_{number:05d}"
            number += 1
            top = e.id == source.id
            rows.append(
                e._asdict()
                | {
                    "id": new_ids[e.id],
                    "parent_id": parent.id if top else new_ids[e.parent_id or ""],
                    "name": name if top else e.name,
                    "owner": self.user,
                    "modified": self.ctx.now,
                }
            )
        self.sql.insert_many(Node, rows)
        self.sql.update(Node, parent, modified=self.ctx.now)
        self.changed()
        return len(rows)


def check_name(cmd: str, name: str) -> None:
    if name in ("", ".", ".."):
        raise InvalidArgument(f"{cmd}: invalid name {name!r}; give a name such as 'notes.txt'.")
    if "/" in name or "\x00" in name or any(ord(c) < 32 for c in name):
        raise InvalidArgument(
            f"{cmd}: invalid name {name!r}: names cannot contain '/' or control characters."
        )
    if len(name) > 255:
        raise InvalidArgument(f"{cmd}: {name[:40]}...: File name too long (max 255).")


# ------------------------------------------------------- example values
def _home_dirs(ctx: ToolContext) -> list[str]:
    fs = Fs(ctx)
    home = fs.home
    nodes, _ = fs.walk(home, max_depth=2)
    return [
        "~" + fs.path(n)[len(fs.path(home)) :]
        for n, _ in nodes
        if n.is_dir and fs.can(n, "w") and not n.name.startswith(".")
    ]


def _new_file(ctx: ToolContext, rng: random.Random) -> str:
    name = rng.choice(["summary.txt", "ideas.md", "notes-2026.txt", "draft.md", "checklist.txt"])
    return f"{rng.choice(_home_dirs(ctx))}/{name}"


def _new_dir(ctx: ToolContext, rng: random.Random) -> str:
    name = rng.choice(["archive", "backup", "drafts", "2026", "old-logs", "shared"])
    return f"{rng.choice(_home_dirs(ctx))}/{name}"


CONTENTS = [
    "Remember to renew the passport before June.",
    "TODO: update the README with install steps",
    "Meeting moved to Thursday 10:00.",
    'export PATH="$HOME/bin:$PATH"',
]
GREP_WORDS = ["TODO", "ERROR", "import", "Attendees", "password", "def ", "WARNING"]
MODES = ["644", "600", "755", "u+w", "a-w", "u+x", "go-rwx"]


# ------------------------------------------------------------------- tools
# ---- session and navigation
@tool(returns="directory", phrasings=["Where am I?", "What's the current directory?"])
def pwd(ctx: ToolContext) -> Cwd:
    """Print the current working directory, e.g. {"cwd": "/home/ana/Documents"}."""
    fs = Fs(ctx)
    return {"cwd": fs.path(fs.cwd)}


@tool(
    returns="directory",
    phrasings=["Who am I logged in as?", "What's my user name and home directory?"],
)
def whoami(ctx: ToolContext) -> WhoAmI:
    """Show the user name, home directory, host name and current directory of this session."""
    fs = Fs(ctx)
    return {
        "user": fs.user,
        "home": fs.path(fs.home),
        "hostname": fs.shell.hostname,
        "cwd": fs.path(fs.cwd),
    }


@tool(
    writes=True,
    returns="directory",
    phrasings=["Go to {path}", "cd into {path}", "Change directory to {path}"],
)
def cd(ctx: ToolContext, path: DirArg = "~") -> Cd:
    """Change the current directory; later relative paths start from there.

    Args:
        path: Directory to enter, such as "Documents", "../Pictures", "~/Projects/todo-cli",
            "/tmp", "~" for home (the default) or "-" for the previous directory.
    """
    fs = Fs(ctx)
    target: AnyNode
    if path.strip() == "-":
        if fs.shell.oldpwd_id is None:
            raise PreconditionFailed("cd: OLDPWD not set (no previous directory yet); give a path.")
        target, where = fs.entry(fs.shell.oldpwd_id), fs.path(fs.entry(fs.shell.oldpwd_id))
        if not fs.can(target, "x"):
            raise PermissionDenied(f"cd: permission denied: {where}")
    else:
        target, where = fs.enter(path, "cd")
    previous = fs.path(fs.cwd)
    fs.chdir(target)
    return {"cwd": where, "previous": previous}


@tool(
    writes=True,
    returns="directory",
    phrasings=["pushd {path}", "Remember where I am and go to {path}"],
)
def pushd(ctx: ToolContext, path: DirArg) -> Pushed:
    """Save the current directory on the directory stack and cd to another one (popd returns).

    Args:
        path: Directory to enter, such as "~/Projects/api-gateway/logs" or "../Downloads".
    """
    fs = Fs(ctx)
    target, where = fs.enter(path, "pushd")
    count = fs.sql.scalar(STACK_SIZE) or 0
    if count >= MAX_STACK:
        raise PreconditionFailed(
            f"pushd: directory stack full ({MAX_STACK} entries); popd some entries first."
        )
    top = fs.sql.scalar(TOP_POSITION) or 0
    fs.sql.insert(DirStackEntry, position=top + 1, node_id=fs.shell.cwd_id)
    fs.chdir(target)
    return {"cwd": where, "stack": fs.stack()}


@tool(writes=True, returns="directory", phrasings=["popd", "Go back to the directory I pushed"])
def popd(ctx: ToolContext) -> Pushed:
    """Return to the directory on top of the directory stack (saved by pushd) and drop it."""
    fs = Fs(ctx)
    entry = fs.sql.first(STACK_TOP)
    if entry is None:
        raise PreconditionFailed("popd: directory stack empty (use pushd to save a directory).")
    target = fs.entry(entry.node_id)
    if not fs.can(target, "x"):
        raise PermissionDenied(
            f"popd: permission denied: {fs.path(target)} (chmod u+x it, then popd again)."
        )
    fs.chdir(target)
    fs.sql.run(POP, position=entry.position)
    return {"cwd": fs.path(target), "stack": fs.stack()}


@tool(returns="directory", phrasings=["Show the directory stack", "Which directories did I pushd?"])
def dirs(ctx: ToolContext) -> Dirs:
    """Show the directory stack, current directory first, then the pushd entries (top first)."""
    return {"stack": [{"index": i, "path": p} for i, p in enumerate(Fs(ctx).stack())]}


@tool(
    returns="path",
    phrasings=["What is the full path of {path}?", "Resolve {path} to an absolute path"],
)
def realpath(ctx: ToolContext, path: PathArg) -> Resolved:
    """Resolve a path against the current directory into an absolute path. Every component but
    the last must exist; "exists" tells whether the last one does.

    Args:
        path: A path such as "../Downloads/report.pdf", "." or "~/Documents".
    """
    loc = Fs(ctx).locate(path, "realpath")
    return {"path": loc.path, "exists": loc.node is not None}


@tool(returns="path", phrasings=["Does {path} exist?", "Check whether {path} is there"])
def exists(ctx: ToolContext, path: PathArg) -> Exists:
    """Test whether a path exists and whether it is a file or a directory (like `test -e`).
    Never fails for a missing path: it answers {"exists": false}.

    Args:
        path: A path such as "~/Documents/resume.md" or "Projects/old-site".
    """
    try:
        loc = Fs(ctx).locate(path, "exists")
    except (NotFound, PreconditionFailed, PermissionDenied):
        return {"path": path, "exists": False, "type": None}
    kind = None if loc.node is None else _kind(loc.node)
    return {"path": loc.path, "exists": loc.node is not None, "type": kind}


# ---- listing and inspection
@tool(
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
    returns="path",
    phrasings=[
        "Find files named {name} under {path}",
        "Search {path} for {name}",
        "Find files bigger than {min_size} bytes in {path}",
    ],
    examples={
        "name": ["*.log", "README.md", "*.csv", "IMG_*", "test_*.py", "*report*"],
        "min_size": [1000, 2000, 5000],
    },
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
    examples={"extension": ["py", "md", "jpg", "log", "csv", "txt", "pdf"]},
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


# ---- reading
@tool(returns="file", phrasings=["Show me {path}", "What does {path} say?", "cat {path}"])
def cat(ctx: ToolContext, path: FileArg) -> FileText:
    """Print the whole content of a file.

    Args:
        path: The file, such as "~/notes.txt", "README.md" or "/etc/hosts".
    """
    node, where = Fs(ctx).readable_file(path, "cat")
    return {"path": where, "size": node.size, "content": node.content}


@tool(
    returns="file",
    phrasings=["Show the first {lines} lines of {path}", "head {path}"],
    examples={"lines": [5, 10, 20]},
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
    examples={"lines": [5, 10, 20, 50]},
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
    returns="file",
    phrasings=["Show lines {start} to {end} of {path}", "Print line {start} of {path}"],
    examples={"start": [1, 2, 5, 10], "end": [5, 10, 20]},
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
    examples={"pattern": GREP_WORDS},
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
    examples={"field": [1, 2, 3], "separator": [",", ":"]},
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


# ---- creating and editing
@tool(
    writes=True,
    idempotent=True,
    returns="directory",
    phrasings=["Create a folder {path}", "mkdir {path}", "Make a new directory called {path}"],
    examples={"path": _new_dir},
)
def mkdir(ctx: ToolContext, path: NewPath, parents: bool = False) -> Made:
    """Create a directory (permissions rwxr-xr-x).

    Args:
        path: The new directory, such as "~/Documents/Taxes 2026" or "backup" (in the current
            directory).
        parents: Also create missing parent directories and succeed if it already exists
            (like mkdir -p).
    """
    fs = Fs(ctx)
    text = path.strip()
    if not parents:
        try:
            loc = fs.new_entry(text, "mkdir", "create directory")
        except NotFound:
            full = fs.absolute(text, "mkdir")
            raise NotFound(
                f"mkdir: cannot create directory '{full}': No such file or directory (the parent "
                f"{posixpath.dirname(full)} does not exist; pass parents=true to create missing "
                "parents too)."
            ) from None
        if loc.node is not None:
            raise Conflict(f"mkdir: cannot create directory '{loc.path}': File exists.")
        assert loc.parent is not None
        fs.add(loc.parent, loc.name, "dir", mode=0o755)
        return {"path": loc.path, "created": [loc.path]}
    # mkdir -p: walk the lexical absolute path, creating what is missing.
    full = fs.absolute(text, "mkdir")
    if len(full) > MAX_PATH:
        raise InvalidArgument(
            f"mkdir: cannot create directory '{full[:80]}...': File name too long (a path has "
            f"at most {MAX_PATH} characters)."
        )
    parts = [p for p in full.split("/") if p]
    for part in parts:
        check_name("mkdir", part)
    created: list[str] = []
    current: AnyNode = fs.root
    for i, part in enumerate(parts):
        if not current.is_dir:
            raise PreconditionFailed(f"mkdir: cannot create directory '{full}': Not a directory.")
        if not fs.can(current, "x"):
            raise PermissionDenied(f"mkdir: cannot create directory '{full}': Permission denied.")
        nxt: AnyNode | None = fs.child(current, part)
        if nxt is None:
            target = fs.path(current).rstrip("/") + "/" + part
            fs.need_writable_dir("mkdir", "create directory", target, current)
            # Everything below a new directory is new too: add it in one go (no reloads).
            created += _mkdirs(fs, current, parts[i:], target)
            return {"path": full, "created": created}
        current = nxt
    if not current.is_dir:
        raise Conflict(f"mkdir: cannot create directory '{full}': File exists (it is a file).")
    return {"path": full, "created": created}


def _mkdirs(fs: Fs, parent: AnyNode, names: list[str], first: str) -> list[str]:
    """Create ``names`` as a chain of new directories under ``parent``; their paths."""
    fs.need_space("mkdir", first, len(names), 0)
    number = fs.next_number()
    rows, paths, parent_id, where = [], [], parent.id, first.rsplit("/", 1)[0]
    for name in names:
        where = where.rstrip("/") + "/" + name
        node_id = f"n_{number:05d}"
        number += 1
        rows.append(
            {
                "id": node_id,
                "parent_id": parent_id,
                "name": name,
                "kind": "dir",
                "owner": fs.user,
                "mode": 0o755,
                "size": 0,
                "content": "",
                "modified": fs.ctx.now,
            }
        )
        paths.append(where)
        parent_id = node_id
    fs.sql.insert_many(Node, rows)
    fs.sql.update(Node, parent, modified=fs.ctx.now)
    fs.changed()
    return paths


@tool(
    writes=True,
    idempotent=True,
    returns="file",
    phrasings=["Create an empty file {path}", "touch {path}"],
    examples={"path": _new_file},
)
def touch(ctx: ToolContext, path: NewPath) -> Touched:
    """Create an empty file, or set an existing file's modification time to now.

    Args:
        path: The file, such as "~/Projects/todo-cli/CHANGELOG.md" or "notes.txt".
    """
    fs = Fs(ctx)
    loc = fs.new_entry(path, "touch", "touch")
    if loc.node is not None:
        fs.sql.update(Node, loc.node, modified=ctx.now)
        return {"path": loc.path, "created": False}
    if loc.slash:
        raise PreconditionFailed(f"touch: cannot touch '{loc.path}/': Not a directory.")
    assert loc.parent is not None
    fs.add(loc.parent, loc.name, "file", mode=0o644)
    return {"path": loc.path, "created": True}


@tool(
    writes=True,
    destructive=True,
    idempotent=True,
    returns="file",
    phrasings=[
        "Write '{content}' to {path}",
        "Create {path} containing '{content}'",
        "Replace the contents of {path} with '{content}'",
    ],
    examples={"path": _new_file, "content": CONTENTS},
)
def write_file(ctx: ToolContext, path: NewPath, content: str) -> Written:
    """Write text to a file, creating it or replacing everything in it (like
    `echo "text" > file`). A final newline is added unless the text ends with one.

    Args:
        path: The file, such as "~/Documents/ideas.md" or "notes.txt".
        content: The full new text, such as "Buy milk\\nCall the bank".
    """
    node, where, created = Fs(ctx).write("write_file", path, _as_line(content), append=False)
    return {"path": where, "created": created, "size": node.size}


@tool(
    writes=True,
    returns="file",
    phrasings=["Append '{content}' to {path}", "Add the line '{content}' at the end of {path}"],
    examples={"content": CONTENTS},
)
def append_file(
    ctx: ToolContext, path: FileArg, content: Annotated[str, Field(min_length=1)]
) -> Appended:
    """Add text at the end of a file, creating the file if needed (like `echo "text" >> file`).
    A final newline is added unless the text ends with one.

    Args:
        path: The file, such as "~/todo.md" or "logs/app.log".
        content: The text to add, such as "- [ ] Call the dentist".
    """
    node, where, _ = Fs(ctx).write("append_file", path, _as_line(content), append=True)
    return {"path": where, "size": node.size, "lines": node.content.count("\n")}


@tool(
    writes=True,
    destructive=True,
    returns="file",
    phrasings=[
        "Replace '{find}' with '{replace}' in {path}",
        "In {path}, change {find} to {replace}",
    ],
    examples={"find": ["TODO", "localhost", "2025"], "replace": ["DONE", "127.0.0.1", "2026"]},
)
def replace_in_file(
    ctx: ToolContext,
    path: FileArg,
    find: Annotated[str, Field(min_length=1)],
    replace: str,
    replace_all: bool = True,
) -> Replaced:
    """Replace text in a file (like `sed -i 's/old/new/g'`, but plain text, not a regex).

    Args:
        path: The file, such as "~/.gitconfig" or "README.md".
        find: The exact text to look for, such as "defaultBranch = master".
        replace: What to put instead, such as "defaultBranch = main" ("" deletes it).
        replace_all: Replace every occurrence (default) or only the first.
    """
    fs = Fs(ctx)
    node, where = fs.editable_file(path, "replace_in_file")
    n = node.content.count(find)
    if n == 0:
        raise NotFound(
            f"replace_in_file: {find!r} does not occur in {where}; nothing was changed "
            "(check the exact text with grep or cat)."
        )
    # The size the result would have, before building it (1 MB x 10,000 characters is 10 GB).
    grows = len(replace.encode()) - len(find.encode())
    size = node.size + (n if replace_all else 1) * grows
    if size > MAX_FILE_BYTES:
        raise InvalidArgument(
            f"replace_in_file: {where}: File too large ({size} bytes after the replacement; the "
            f"limit is {MAX_FILE_BYTES}); nothing was changed."
        )
    new = node.content.replace(find, replace, -1 if replace_all else 1)
    node = fs.set_content("replace_in_file", node, where, new)
    return {"path": where, "replacements": n if replace_all else 1, "size": node.size}


@tool(
    writes=True,
    returns="file",
    phrasings=[
        "Insert '{text}' at line {line_number} of {path}",
        "Add '{text}' before line {line_number} in {path}",
    ],
    examples={"line_number": [1, 2, 3], "text": ["# Reviewed", "TODO: check this", "import os"]},
)
def insert_lines(ctx: ToolContext, path: FileArg, line_number: int, text: str) -> Inserted:
    """Insert one or more lines before a line number (1 = at the top; last line + 1 = at the end).

    Args:
        path: The file, such as "~/todo.md".
        line_number: Where the new text starts, such as 1 for the top.
        text: The line(s) to insert, such as "# Shopping" (use "\\n" between several lines).
    """
    fs = Fs(ctx)
    node, where = fs.editable_file(path, "insert_lines")
    lines = _split(node.content)
    if not 1 <= line_number <= len(lines) + 1:
        raise InvalidArgument(
            f"insert_lines: line_number must be between 1 and {len(lines) + 1} for {where} "
            f"({len(lines)} lines), got {line_number}."
        )
    new = _split(_as_line(text)) or [""]
    lines[line_number - 1 : line_number - 1] = new
    fs.set_content("insert_lines", node, where, _join(lines))
    return {"path": where, "inserted": len(new), "total_lines": len(lines)}


@tool(
    writes=True,
    destructive=True,
    returns="file",
    phrasings=["Delete line {start} of {path}", "Remove lines {start} to {end} from {path}"],
    examples={"start": [1, 2, 3], "end": [3, 4, 5]},
)
def delete_lines(ctx: ToolContext, path: FileArg, start: int, end: int | None = None) -> Deleted:
    """Delete the lines from start to end inclusive (like `sed -i '3,5d'`).

    Args:
        path: The file, such as "~/Desktop/shopping-list.txt".
        start: First line to delete, counting from 1.
        end: Last line to delete (default: only the start line).
    """
    fs = Fs(ctx)
    node, where = fs.editable_file(path, "delete_lines")
    lines = _split(node.content)
    last = start if end is None else end
    if not 1 <= start <= last <= len(lines):
        raise InvalidArgument(
            f"delete_lines: {where} has {len(lines)} lines; give 1 <= start <= end <= "
            f"{len(lines)} (got start={start}, end={end})."
        )
    removed = lines[start - 1 : last]
    del lines[start - 1 : last]
    fs.set_content("delete_lines", node, where, _join(lines))
    return {"path": where, "deleted": removed, "total_lines": len(lines)}


# ---- copying, moving, removing
@dataclass(slots=True)
class Target:
    parent: AnyNode
    name: str
    path: str
    existing: AnyNode | None


def _target(fs: Fs, cmd: str, source: NodeRow, src_path: str, destination: str) -> Target:
    """Where ``source`` lands for ``cmd source destination`` (into a directory, or as a name)."""
    loc = fs.locate(destination, cmd)
    verb = "move" if cmd == "mv" else "copy"
    parent: AnyNode
    existing: AnyNode | None
    if loc.node is not None and loc.node.is_dir:
        parent, name = loc.node, source.name
        path = loc.path.rstrip("/") + "/" + name
        if not fs.can(parent, "x"):
            raise PermissionDenied(f"{cmd}: cannot access '{loc.path}': Permission denied.")
        existing = fs.child(parent, name)
        if existing is not None and existing.id == source.id:
            raise PreconditionFailed(
                f"{cmd}: '{src_path}' and '{path}' are the same file (give another destination)."
            )
    elif loc.node is not None:
        assert loc.parent is not None
        parent, name, path, existing = loc.parent, loc.name, loc.path, loc.node
        if existing.id == source.id:
            raise PreconditionFailed(f"{cmd}: '{src_path}' and '{path}' are the same file.")
    else:
        assert loc.parent is not None
        if loc.slash:
            raise NotFound(
                f"{cmd}: cannot {verb} '{src_path}' to '{loc.path}/': Not a directory (create "
                "it with mkdir first, or drop the trailing '/' to use it as the new name)."
            )
        check_name(cmd, loc.name)
        parent, name, path, existing = loc.parent, loc.name, loc.path, None
    if source.is_dir and fs.is_inside(parent, source):
        raise PreconditionFailed(
            f"{cmd}: cannot {verb} a directory, '{src_path}', into itself, '{path}'."
        )
    if existing is not None:
        if existing.is_dir and not source.is_dir:
            raise PreconditionFailed(
                f"{cmd}: cannot overwrite directory '{path}' with non-directory '{src_path}'."
            )
        if not existing.is_dir and source.is_dir:
            raise PreconditionFailed(
                f"{cmd}: cannot overwrite non-directory '{path}' with directory '{src_path}'."
            )
    return Target(parent, name, path, existing)


@tool(
    writes=True,
    idempotent=True,
    destructive=True,
    returns="path",
    phrasings=["Copy {source} to {destination}", "Make a copy of {source} in {destination}"],
)
def cp(
    ctx: ToolContext,
    source: PathArg,
    destination: DirArg,
    recursive: bool = False,
    no_clobber: bool = False,
) -> Copied:
    """Copy a file or (with recursive=true) a directory. If destination is an existing
    directory the copy goes inside it with the same name; otherwise destination is the new
    path. An existing file at the destination is overwritten unless no_clobber is true.

    Args:
        source: What to copy, such as "~/Documents/Work/budget.csv" or "Projects/todo-cli".
        destination: A directory such as "~/Desktop" or a new path such as "budget-backup.csv".
        recursive: Required to copy a directory and everything in it (like cp -r).
        no_clobber: Fail instead of overwriting an existing file (like cp -n).
    """
    fs = Fs(ctx)
    src, src_path = fs.existing(source, "cp")
    if src.is_dir and not recursive:
        raise PreconditionFailed(
            f"cp: -r not specified; omitting directory '{src_path}' (pass recursive=true to copy "
            "it with its contents)."
        )
    for node in fs.subtree(src):
        if not fs.can(node, "r") or (node.is_dir and not fs.can(node, "x")):
            raise PermissionDenied(
                f"cp: cannot open '{fs.path(node)}' for reading: Permission denied; nothing was "
                "copied."
            )
    t = _target(fs, "cp", src, src_path, destination)
    if t.existing is not None:
        if src.is_dir:
            raise Conflict(
                f"cp: cannot copy '{src_path}' to '{t.path}': it already exists; remove it first "
                "or choose another destination name."
            )
        if no_clobber:
            raise Conflict(f"cp: not overwriting '{t.path}' (no_clobber=true); nothing was copied.")
        fs.need_writable_file("cp", t.existing, t.path)
        fs.set_content("cp", fs.full(t.existing), t.path, src.content)
        return {"source": src_path, "destination": t.path, "copied": 1, "overwritten": True}
    fs.need_writable_dir("cp", "create", t.path, t.parent)
    count = fs.copy_tree(src, t.parent, t.name)
    return {"source": src_path, "destination": t.path, "copied": count, "overwritten": False}


def _need_removable(fs: Fs, cmd: str, node: NodeRow, path: str) -> Entry:
    if node.parent_id is None:
        raise PermissionDenied(f"{cmd}: cannot move or remove '/': Device or resource busy.")
    parent = fs.parent(node)
    assert parent is not None
    fs.need_writable_dir(cmd, "move" if cmd == "mv" else "remove", path, parent)
    return parent


def _move(fs: Fs, cmd: str, node: NodeRow, path: str, t: Target) -> None:
    old_parent = _need_removable(fs, cmd, node, path)
    fs.need_writable_dir(cmd, "move", path, t.parent)
    if t.existing is not None:
        if t.existing.is_dir and fs.children(t.existing):
            raise PreconditionFailed(
                f"{cmd}: cannot move '{path}' to '{t.path}': Directory not empty (give another "
                "destination name, or remove the existing directory first)."
            )
        fs.guard_cwd(cmd, "replace", t.existing, t.path)
        fs.remove([t.existing])
    moved = (node, {"parent_id": t.parent.id, "name": t.name})
    left = (old_parent, {"modified": fs.ctx.now})
    entered = (t.parent, {"modified": fs.ctx.now})
    if isinstance(t.parent, NodeRow) or t.parent.id == old_parent.id:
        fs.save(moved, left, entered)  # into a directory given as the destination, or in place
    else:
        # A new path in another directory: the ORM flushed the entry and the directory it
        # left before it read the directory entered; writing in that order keeps the bytes.
        fs.save(moved, left)
        fs.save(entered)


@tool(
    writes=True,
    idempotent=True,
    destructive=True,
    returns="path",
    phrasings=[
        "Move {source} to {destination}",
        "mv {source} {destination}",
        "Put {source} into {destination}",
    ],
)
def mv(ctx: ToolContext, source: PathArg, destination: DirArg) -> Moved:
    """Move or rename a file or directory. If destination is an existing directory the entry
    moves inside it; otherwise destination is the new path. An existing file at the
    destination is replaced.

    Args:
        source: What to move, such as "~/Downloads/invoice-48213.pdf" or "old-notes".
        destination: A directory such as "~/Documents/Finance", or a new path such as
            "../archive/notes-2025.txt".
    """
    fs = Fs(ctx)
    node, path = fs.existing(source, "mv")
    t = _target(fs, "mv", node, path, destination)
    replaced = t.existing is not None
    _move(fs, "mv", node, path, t)
    return {"source": path, "destination": t.path, "replaced": replaced}


@tool(
    writes=True,
    idempotent=True,
    returns="path",
    phrasings=["Rename {path} to {new_name}", "Call {path} {new_name} instead"],
    examples={"new_name": ["final-report.txt", "old-notes.md", "archive-2025", "draft-v2.md"]},
)
def rename(
    ctx: ToolContext, path: PathArg, new_name: Annotated[str, Field(max_length=MAX_NAME)]
) -> Renamed:
    """Rename a file or directory where it is; never overwrites an existing entry.

    Args:
        path: The entry to rename, such as "~/Documents/Work/Q3-report.txt".
        new_name: Its new name (no '/'), such as "Q3-report-final.txt".
    """
    fs = Fs(ctx)
    if "/" in new_name:
        raise InvalidArgument(
            f"rename: new_name must be a plain name without '/', such as 'report-final.txt'; use "
            f"mv to move {path!r} to another directory."
        )
    check_name("rename", new_name)
    node, where = fs.existing(path, "rename")
    parent = _need_removable(fs, "rename", node, where)
    target = fs.path(parent).rstrip("/") + "/" + new_name
    if node.name == new_name:
        raise PreconditionFailed(f"rename: '{where}' is already called {new_name!r}.")
    if fs.child(parent, new_name) is not None:
        raise Conflict(
            f"rename: cannot rename '{where}' to '{target}': File exists (pick another name, or "
            "use mv to replace it)."
        )
    fs.save((node, {"name": new_name}), (parent, {"modified": ctx.now}))
    return {"old_path": where, "new_path": target}


@tool(
    writes=True,
    idempotent=True,
    returns="path",
    phrasings=[
        "Move all {pattern} files from {path} to {destination}",
        "Move every file matching {pattern} into {destination}",
    ],
    examples={"pattern": ["*.jpg", "*.pdf", "*.log", "*.txt", "*.csv", "IMG_*"]},
)
def move_matching(
    ctx: ToolContext, pattern: NamePattern, destination: DirArg, path: DirArg = "."
) -> MovedMany:
    """Move every entry of a directory whose name matches a shell pattern into another
    directory (like `mv *.jpg ~/Pictures/`). Nothing moves if any name is already taken there.

    Args:
        pattern: Shell pattern for names, such as "*.pdf", "IMG_*.jpg" or "report-202?.txt".
        destination: Existing directory to move them into, such as "~/Documents/Finance".
        path: Directory whose entries are matched (not recursive), default ".".
    """
    if not pattern.strip() or "/" in pattern:
        raise InvalidArgument(
            f"move_matching: pattern must be a name pattern without '/', such as '*.pdf', got "
            f"{pattern!r}; set path to choose the directory."
        )
    fs = Fs(ctx)
    src_dir, src_where = fs.directory(path, "mv")
    dest, dest_where = fs.directory(destination, "mv", readable=False)
    if not fs.can(dest, "x"):
        raise PermissionDenied(f"mv: cannot access '{dest_where}': Permission denied.")
    hidden_ok = pattern.startswith(".")
    matcher = compile_glob(pattern, cmd="mv")
    kids = fs.children(src_dir)
    ctx.spend(len(kids), "entries", hint="move from a smaller directory")
    picked = [
        k
        for k in kids
        if matcher.fullmatch(k.name)
        and (hidden_ok or not k.name.startswith("."))
        and k.id != dest.id
    ]
    if not picked:
        raise NotFound(
            f"mv: cannot stat '{src_where.rstrip('/')}/{pattern}': No such file or directory "
            f"(no name in {src_where} matches; run ls {src_where} to check)."
        )
    if dest.id == src_dir.id:
        raise PreconditionFailed(f"mv: {dest_where} is the directory the entries are already in.")
    for k in picked:
        if k.is_dir and fs.is_inside(dest, k):
            raise PreconditionFailed(
                f"mv: cannot move '{fs.path(k)}' to a subdirectory of itself, '{dest_where}'."
            )
        if fs.child(dest, k.name) is not None:
            raise Conflict(
                f"mv: '{dest_where.rstrip('/')}/{k.name}' already exists; nothing was moved "
                "(rename or remove it first)."
            )
    fs.need_writable_dir("mv", "move", src_where, src_dir)
    fs.need_writable_dir("mv", "move", dest_where, dest)
    moved: list[Move] = [
        {"from": fs.path(k), "to": dest_where.rstrip("/") + "/" + k.name} for k in picked
    ]
    fs.sql.run(MOVE_NODES, ids=[k.id for k in picked], parent_id=dest.id)
    fs.save((src_dir, {"modified": ctx.now}), (dest, {"modified": ctx.now}))
    return {"count": len(moved), "moved": moved}


@tool(
    writes=True,
    destructive=True,
    idempotent=True,
    returns="path",
    phrasings=["Delete {path}", "Remove {path}", "rm -r {path}"],
)
def rm(ctx: ToolContext, path: PathArg, recursive: bool = False, force: bool = False) -> Removed:
    """Delete a file, or a directory with everything in it when recursive is true. There is
    no undo. Read-only (write-protected) files are only removed with force=true.

    Args:
        path: What to delete, such as "~/Downloads/old-installer.deb" or "build".
        recursive: Required to delete a directory and its contents (like rm -r).
        force: Also delete write-protected files without asking (like rm -f).
    """
    fs = Fs(ctx)
    node, where = fs.existing(path, "rm")
    if node.is_dir and not recursive:
        raise PreconditionFailed(
            f"rm: cannot remove '{where}': Is a directory (pass recursive=true to delete it with "
            "everything inside, or use rmdir if it is empty)."
        )
    if node.parent_id is None:
        raise PermissionDenied("rm: it is dangerous to operate recursively on '/'; refusing.")
    fs.guard_cwd("rm", "remove", node, where)
    parent = _need_removable(fs, "rm", node, where)
    nodes = fs.subtree(node)
    for n in nodes:
        if n.is_dir and fs.children(n) and not fs.can(n, "rwx"):
            raise PermissionDenied(
                f"rm: cannot remove entries of '{fs.path(n)}': Permission denied (the directory "
                f"is read-only; chmod u+w it first); nothing was removed."
            )
    if not force:
        for n in nodes:
            if not fs.can(n, "w"):
                what = "directory" if n.is_dir else "regular file"
                raise PreconditionFailed(
                    f"rm: cannot remove write-protected {what} '{fs.path(n)}' without confirmation; "
                    "pass force=true to remove it anyway; nothing was removed."
                )
    paths = [fs.path(n) for n in nodes]
    fs.sql.update(Node, parent, modified=ctx.now)
    fs.remove(nodes)
    result: Removed = {"removed": paths[:50], "count": len(paths)}
    if len(paths) > 50:
        result["truncated"] = True
    return result


@tool(
    writes=True,
    idempotent=True,
    destructive=True,
    returns="directory",
    phrasings=["Remove the empty folder {path}", "rmdir {path}"],
)
def rmdir(ctx: ToolContext, path: DirArg) -> RemovedDir:
    """Remove an empty directory (use rm with recursive=true for a non-empty one).

    Args:
        path: The empty directory, such as "~/Projects/chat-bot/logs/archive".
    """
    fs = Fs(ctx)
    node, where = fs.existing(path, "rmdir")
    if not node.is_dir:
        raise PreconditionFailed(
            f"rmdir: failed to remove '{where}': Not a directory (use rm to delete a file)."
        )
    if node.parent_id is None:
        raise PermissionDenied("rmdir: failed to remove '/': Device or resource busy.")
    if fs.children(node):
        raise PreconditionFailed(
            f"rmdir: failed to remove '{where}': Directory not empty (ls it, or use rm with "
            "recursive=true to delete it with its contents)."
        )
    fs.guard_cwd("rmdir", "remove", node, where)
    parent = _need_removable(fs, "rmdir", node, where)
    fs.sql.update(Node, parent, modified=ctx.now)
    fs.remove([node])
    return {"removed": where}


_SYMBOLIC = re.compile(r"^([ugoa]*)([+=-])([rwx]*)$")


def parse_mode(mode: str, current: int) -> int:
    """Apply an octal ("644") or symbolic ("u+w,go-rwx") mode to ``current`` bits.

    >>> oct(parse_mode("u+x,go-w", 0o666))
    '0o744'
    """
    text = mode.strip()
    if re.fullmatch(r"0?[0-7]{3}", text):
        return int(text, 8) & 0o777
    result = current
    for clause in text.split(","):
        m = _SYMBOLIC.match(clause)
        if m is None:
            raise InvalidArgument(
                f"chmod: invalid mode: {mode!r} (use octal such as '644' or '755', or symbolic "
                "such as 'u+w', 'go-rwx', 'a+x', 'u=rw')."
            )
        who, op, what = m.groups()
        who = who or "a"
        perm = sum({"r": 4, "w": 2, "x": 1}[c] for c in set(what))
        for w in "ugo" if "a" in who else who:
            shift = {"u": 6, "g": 3, "o": 0}[w]
            if op == "+":
                result |= perm << shift
            elif op == "-":
                result &= ~(perm << shift)
            else:
                result = (result & ~(7 << shift)) | (perm << shift)
    return result & 0o777


@tool(
    writes=True,
    idempotent=True,
    returns="path",
    phrasings=[
        "chmod {mode} {path}",
        "Change the permissions of {path} to {mode}",
        "Make {path} {mode}",
    ],
    examples={"mode": MODES},
)
def chmod(
    ctx: ToolContext,
    path: PathArg,
    mode: Annotated[str, Field(max_length=64)],
    recursive: bool = False,
) -> Chmod:
    """Change permissions of your own file or directory. r = read, w = write (for a directory:
    add or remove entries), x = enter a directory.

    Args:
        path: The file or directory, such as "~/Documents/Finance/taxes".
        mode: Octal such as "644" (rw-r--r--), "600" or "755", or symbolic such as "u+w"
            (let me write), "a-w" (read-only for everyone), "go-rwx" or "u+x".
        recursive: Also change everything inside a directory (like chmod -R).
    """
    fs = Fs(ctx)
    node, where = fs.existing(path, "chmod")
    nodes = fs.subtree(node) if recursive and node.is_dir else [node]
    for n in nodes:
        if n.owner != fs.user:
            raise PermissionDenied(
                f"chmod: changing permissions of '{fs.path(n)}': Operation not permitted (it "
                f"belongs to {n.owner}); nothing was changed."
            )
    final = parse_mode(mode, node.mode)
    changes: dict[int, list[str]] = {}
    for n in nodes:
        new = parse_mode(mode, n.mode)
        if new != n.mode:
            changes.setdefault(new, []).append(n.id)
    for new, ids in sorted(changes.items()):
        fs.sql.run(SET_MODE, ids=ids, mode=new)
    fs.changed()
    return {
        "path": where,
        "mode": f"0{final:03o}",
        "permissions": _perms(final, node.is_dir),
        "changed": sum(len(ids) for ids in changes.values()),
    }


# --------------------------------------------------------------- entities
# What exists and is worth asking about, for grounding synthesized requests.
_WORD = re.compile(r"[A-Za-z][A-Za-z_]{4,}")


def _visible(ctx: ToolContext, *, content: bool = False) -> tuple[Fs, list[Entry]]:
    fs = Fs(ctx)
    nodes, _ = fs.walk(fs.root, content=content)
    return fs, [n for n, _ in nodes if n.parent_id is not None]


@server.entity("path", key="path")
def _paths(ctx: ToolContext) -> list[dict]:
    """Every file and directory the user can reach (not inside unreadable directories)."""
    fs, nodes = _visible(ctx)
    return [
        {
            "path": fs.path(n),
            "name": n.name,
            "type": _kind(n),
            "writable": fs.can(n, "w"),
        }
        for n in nodes
    ]


@server.entity("file", key="path")
def _files(ctx: ToolContext) -> list[dict]:
    """Readable files with content; "pattern"/"find" hold a word that occurs in the file."""
    fs, nodes = _visible(ctx, content=True)
    out = []
    for n in nodes:
        if n.is_dir or n.size == 0 or not fs.can(n, "r"):
            continue
        assert n.content is not None  # _visible(content=True) loads every file's content
        words = Counter(_WORD.findall(n.content))
        tokens = n.content.split(maxsplit=1)
        if not words and not tokens:
            continue  # only whitespace: no word to search for
        word = words.most_common(1)[0][0] if words else tokens[0]
        out.append(
            {
                "path": fs.path(n),
                "name": n.name,
                "extension": n.name.rsplit(".", 1)[-1] if "." in n.name.strip(".") else "",
                "pattern": word,
                "find": word,
                "lines": n.content.count("\n"),
                "writable": fs.can(n, "w"),
            }
        )
    return out


@server.entity("directory", key="path")
def _directories(ctx: ToolContext) -> list[dict]:
    """Directories the user can list; "extension" is the commonest one of the files inside."""
    fs, nodes = _visible(ctx)
    out = []
    for n in [fs.root, *nodes]:
        if not n.is_dir or not fs.can(n, "rx"):
            continue
        kids = fs.children(n)
        exts = Counter(k.name.rsplit(".", 1)[-1] for k in kids if not k.is_dir and "." in k.name)
        ext = exts.most_common(1)[0][0] if exts else ""
        out.append(
            {
                "path": fs.path(n),
                "name": n.name or "/",
                "entries": len(kids),
                "extension": ext,
                "pattern": f"*.{ext}" if ext else "*",
                "writable": fs.can(n, "w"),
            }
        )
    return out
