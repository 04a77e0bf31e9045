"""Copying, moving, renaming, removing, and permissions (chmod)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Annotated

from pydantic import Field

from prove_gym.server import (
    Conflict,
    InvalidArgument,
    NotFound,
    PermissionDenied,
    PreconditionFailed,
    ToolContext,
)
from prove_gym.server.patterns import compile_glob

from ..models import Node
from ._declare import tool
from .args import MAX_NAME, DirArg, NamePattern, PathArg
from .fitting import (
    empty_directory,
    fitting_destination,
    matching_pattern,
    new_name_like,
    visible_source,
)
from .fs import Fs, _perms, check_name
from .nodes import AnyNode, Entry, NodeRow
from .queries import MOVE_NODES, SET_MODE
from .results import Chmod, Copied, Move, Moved, MovedMany, Removed, RemovedDir, Renamed

MODES = ["644", "600", "755", "u+w", "a-w", "u+x", "go-rwx"]


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
    values={"source": visible_source, "destination": fitting_destination},
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
    stands_in_for=("rename", "move_matching"),
    writes=True,
    idempotent=True,
    destructive=True,
    returns="path",
    phrasings=[
        "Move {source} to {destination}",
        "mv {source} {destination}",
        "Put {source} into {destination}",
    ],
    values={"source": visible_source, "destination": fitting_destination},
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
    values={"new_name": new_name_like},
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
    values={"pattern": matching_pattern},
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
    stands_in_for=("rmdir",),
    writes=True,
    inverse_of=("touch", "write_file"),
    destructive=True,
    idempotent=True,
    returns="path",
    phrasings=["Delete {path}", "Remove {path}", "rm {path}"],
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
    inverse_of="mkdir",
    idempotent=True,
    destructive=True,
    returns="directory",
    phrasings=["Remove the empty folder {path}", "rmdir {path}"],
    values={"path": empty_directory},
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
