"""Creating and editing: directories, empty files, writing, appending, replacing and line edits."""

from __future__ import annotations

import posixpath
import random
from typing import Annotated

from pydantic import Field

from prove_gym.server import (
    Bound,
    Conflict,
    InvalidArgument,
    NotFound,
    PermissionDenied,
    PreconditionFailed,
    ToolContext,
    ToolError,
)

from ..models import Node
from ._declare import tool
from .args import MAX_FILE_BYTES, MAX_PATH, FileArg, NewPath
from .fitting import (
    keeps,
    line_in_file,
    own_text_file,
    replacement_for_find,
    word_in_text_file,
)
from .fs import Fs, _join, _split, check_name
from .nodes import AnyNode
from .results import Appended, Deleted, Inserted, Made, Replaced, Touched, Written


def _as_line(text: str) -> str:
    """Text as ``echo`` writes it: a newline is added unless it ends with one (or is empty)."""
    return text if not text or text.endswith("\n") else text + "\n"


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
    """A new notes file in a folder of the home where notes belong (Documents, Desktop,
    a project, a backup), never among the photos or the music."""
    name = rng.choice(["summary.txt", "ideas.md", "notes-2026.txt", "draft.md", "checklist.txt"])
    dirs = [d for d in _home_dirs(ctx) if keeps(d, name)]
    return f"{rng.choice(dirs)}/{name}" if dirs else f"~/{name}"


def _new_dir(ctx: ToolContext, rng: random.Random) -> str:
    name = rng.choice(["archive", "backup", "drafts", "2026", "old-logs", "shared"])
    return f"{rng.choice(_home_dirs(ctx))}/{name}"


_NOTES = (
    "Remember to renew the passport before June.",
    "Meeting moved to Thursday 10:00.",
    "Buy milk and call the bank",
)
_SHELL = ('export PATH="$HOME/bin:$PATH"', "alias ll='ls -la'", "export EDITOR=vim")
TEXT_BY_TYPE: dict[str, tuple[str, ...]] = {
    ".txt": _NOTES,
    ".md": ("## Notes", "- [ ] Call the dentist"),
    "readme.md": ("TODO: update the README with install steps", "## Install"),
    ".py": ("import os", "# TODO: handle the empty case", "DEBUG = False"),
    ".go": ("// TODO: handle the error", 'import "fmt"', "const debug = false"),
    ".js": ("// TODO: handle the error", "const DEBUG = false;", "console.log('done');"),
    ".csv": ("Groceries,42.10,card", "Rent,1250.00,transfer"),
    ".json": ('{"debug": false}',),
    ".toml": ("debug = false", "[tool.ruff]"),
    ".m3u": ("Blue in Green.mp3", "So What.mp3"),
    ".vim": ("set number", "syntax on"),
    ".bashrc": _SHELL,
    ".profile": _SHELL,
    ".sh": _SHELL,
    ".gitignore": ("*.log", "node_modules/", ".venv/"),
}
"""Text that fits a file, by its extension (a dotfile by its name). A file of another
type (a photo, a video, a PDF, a key, git's own files) takes no typed-in text, nor does a
log (its lines are the program's, stamped as it writes them)."""
WHOLE_DOCUMENTS = frozenset({".json"})
"""Types whose text is one document: written whole, never added to line by line (a line
appended to ``settings.json`` breaks it)."""
RECORDS = ("contract", "invoice", "lease", "receipt", "statement", "tax-return")
"""Words in the names of files that record something done (a tax return, a signed lease):
nobody adds a note or a to-do line to one."""


def text_for(path: str) -> tuple[str, ...]:
    """The texts :data:`TEXT_BY_TYPE` gives a file at ``path`` (none for other types).

    >>> text_for("~/Videos/lisbon-20260412.mp4"), text_for("~/notes/todo.MD")[0]
    ((), '## Notes')
    """
    name = path.rsplit("/", 1)[-1].lower()
    if (name.startswith(".") and name.count(".") == 1) or name in TEXT_BY_TYPE:
        return TEXT_BY_TYPE.get(name, ())  # a dotfile, or a file of its own (README.md)
    return TEXT_BY_TYPE.get(Bound({"path": path}).extension("path"), ())


def _text_for_file(ctx: ToolContext, rng: random.Random, bound: Bound) -> str | None:
    """A text that fits the type of the file in ``path`` (None: the file takes no text)."""
    texts = text_for(str(bound.args.get("path", "")))
    return rng.choice(texts) if texts else None


def line_for(path: str) -> tuple[str, ...]:
    """The texts a line added to the file at ``path`` may be: :func:`text_for`'s, none for a
    file that is one document (:data:`WHOLE_DOCUMENTS`) or a record (:data:`RECORDS`: no
    reminder inserted into ``tax-return-2024.txt``).

    >>> line_for("~/.config/Code/settings.json"), line_for("~/notes/todo.md")[0]
    ((), '## Notes')
    """
    name = path.rsplit("/", 1)[-1].lower()
    if Bound({"path": path}).extension("path") in WHOLE_DOCUMENTS or any(
        word in name for word in RECORDS
    ):
        return ()
    return text_for(path)


def _lines_now(ctx: ToolContext, path: str) -> set[str]:
    """The lines the file at ``path`` holds now (none where it cannot be read)."""
    try:
        node, _ = Fs(ctx).readable_file(path, "append_file")
    except ToolError:
        return set()
    return {line.strip() for line in _split(node.content)}


def _line_for_file(ctx: ToolContext, rng: random.Random, bound: Bound) -> str | None:
    """A line that fits the file in ``path`` and is not in it yet (None: nothing is added to
    it line by line): not a second "## Notes" in a note that has one."""
    path = str(bound.args.get("path", ""))
    texts = line_for(path)
    if texts:
        there = _lines_now(ctx, path)
        texts = tuple(t for t in texts if t.strip() not in there)
    return rng.choice(texts) if texts else None


CODE_TYPES = frozenset({".py", ".go", ".js", ".ts"})
"""Source files: what a line goes where it is put must be, a comment anywhere (``import
os`` above ``from __future__ import annotations`` breaks the module)."""


def _inserted_line(ctx: ToolContext, rng: random.Random, bound: Bound) -> str | None:
    """A line that fits the file in ``path`` wherever it is put and is not in it yet: a
    comment in source code (None: nothing is inserted into it)."""
    path = str(bound.args.get("path", ""))
    texts = line_for(path)
    if texts:
        there = _lines_now(ctx, path)
        texts = tuple(t for t in texts if t.strip() not in there)
    if Bound({"path": path}).extension("path") in CODE_TYPES:
        texts = tuple(t for t in texts if t.startswith(("#", "//")))
    return rng.choice(texts) if texts else None


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
    stands_in_for=("touch", "append_file", "replace_in_file", "insert_lines", "delete_lines"),
    writes=True,
    destructive=True,
    idempotent=True,
    returns="file",
    phrasings=[
        "Write '{content}' to {path}",
        "Create {path} containing '{content}'",
        "Replace the contents of {path} with '{content}'",
    ],
    examples={"path": _new_file},
    values={"content": _text_for_file},
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
    stands_in_for=("touch",),
    writes=True,
    returns="file",
    phrasings=["Append '{content}' to {path}", "Add the line '{content}' at the end of {path}"],
    values={"path": own_text_file, "content": _line_for_file},
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
    values={"path": own_text_file, "find": word_in_text_file, "replace": replacement_for_find},
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
    examples={"line_number": [1, 2, 3]},
    values={"path": own_text_file, "text": _inserted_line},
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
    examples={"end": [3, 4, 5]},
    values={"path": own_text_file, "start": line_in_file([1, 2, 3])},
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
