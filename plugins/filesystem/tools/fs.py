""":class:`Fs`, the shell's view of the tree that every tool works through: paths resolved
as a shell resolves them, permissions checked, nodes read, written, copied and removed."""

from __future__ import annotations

import difflib
import posixpath
from collections.abc import Sequence
from typing import Any, Literal

from prove_gym.server import (
    InvalidArgument,
    NotFound,
    PermissionDenied,
    PreconditionFailed,
    ToolContext,
)

from ..models import Node, Shell
from .args import MAX_FILE_BYTES, MAX_NODES, MAX_TOTAL_BYTES, NARROW
from .nodes import AnyNode, Entry, Loc, NodeRow
from .queries import (
    ALL_LEVELS,
    ANCESTORS,
    CHILD,
    CHILDREN,
    DELETE_NODES,
    LAST_NODE_ID,
    NODE,
    ROOT,
    SHELL,
    STACK,
    SUBTREE,
    SUBTREE_WITH_CONTENT,
    TREE,
    TREE_WITH_CONTENT,
    UNSTACK,
    USAGE,
)
from .results import Kind


def _sort_key(n: AnyNode) -> tuple[str, str]:
    return (n.name.lower(), n.name)


def _kind(node: AnyNode) -> Kind:
    return "directory" if node.is_dir else "file"


def _perms(mode: int, is_dir: bool) -> str:
    bits = "".join(ch if mode & (1 << (8 - i)) else "-" for i, ch in enumerate("rwxrwxrwx"))
    return ("d" if is_dir else "-") + bits


def _split(content: str) -> list[str]:
    """Lines of a file, without the final newline's empty tail."""
    if not content:
        return []
    body = content[:-1] if content.endswith("\n") else content
    return body.split("\n")


def _join(lines: list[str]) -> str:
    return "".join(line + "\n" for line in lines)


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
