"""The filesystem server: a shell session over one directory tree, in 40 tools.

Paths resolve like in a shell (absolute, relative to the current directory, ``.``, ``..``,
``~``); every error names the command, the path and the problem the way a shell would
("rm: cannot remove '/home/ana/x': Is a directory") and then says what to do next. Paths
are not primary keys (they resolve against the current directory), so path parameters stay
strings the tools resolve themselves.

This module declares the server, the entity kinds it grounds requests on, and its tools in
the order the model reads them (``TOOLS``). The tools live by what they do:
:mod:`.navigation` (the session and its current directory), :mod:`.listing` (listing,
inspection and search), :mod:`.reading`, :mod:`.editing` (creating and editing) and
:mod:`.moving` (copying, moving, removing, permissions); all of them resolve paths and read
and write nodes through :class:`~.fs.Fs`. What they take is in :mod:`.args`, what they
return in :mod:`.results`, the statements :class:`~.fs.Fs` runs in :mod:`.queries` (over
the node shapes of :mod:`.nodes`). Docstrings are what the model reads: keep examples
concrete.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

from prove_gym.server import Server, ToolContext

from ..models import Base
from ..sampler import sample_filesystem
from . import editing, listing, moving, navigation, reading
from .fs import Fs, _kind
from .nodes import Entry

OUT_OF_SCOPE = (
    "Mount the USB drive.",
    "Compress the Documents folder into a zip file.",
    "Open my notes in a text editor.",
    "Restore the file I deleted last week from the trash.",
    "Change the owner of my Documents folder to root.",
    "Encrypt my Finance folder with a password.",
    "Back up my home directory to the cloud.",
    "Run the build script and show me the output.",
    "Free up space by emptying the system cache.",
    "Create a symbolic link to my projects folder on the desktop.",
    "Show me which programs have files open in my home folder.",
)
"""Requests a user of this server might make that no tool (of any server) serves:
synthesis asks them in abstention turns."""

server = Server(
    "filesystem",
    out_of_scope=OUT_OF_SCOPE,
    tasks_file=Path(__file__).parents[1] / "tasks.jsonl",
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

TOOLS = (
    navigation.pwd,
    navigation.whoami,
    navigation.cd,
    navigation.pushd,
    navigation.popd,
    navigation.dirs,
    navigation.realpath,
    navigation.exists,
    listing.ls,
    listing.tree,
    listing.stat,
    listing.du,
    listing.find,
    listing.find_by_extension,
    listing.find_duplicates,
    listing.file_type,
    reading.cat,
    reading.head,
    reading.tail,
    reading.read_lines,
    reading.wc,
    reading.grep,
    reading.diff,
    reading.sort_lines,
    reading.uniq,
    reading.checksum,
    editing.mkdir,
    editing.touch,
    editing.write_file,
    editing.append_file,
    editing.replace_in_file,
    editing.insert_lines,
    editing.delete_lines,
    moving.cp,
    moving.mv,
    moving.rename,
    moving.move_matching,
    moving.rm,
    moving.rmdir,
    moving.chmod,
)
"""The server's tools in the order the model reads them: this list decides it, not the modules'."""
RESOURCES = (editing, listing, moving, navigation, reading)
server.add_tools(TOOLS, declared_in=RESOURCES)


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
