"""Value sources (``values=``) for synthesis: values that fit the file or folder a call names.

A text tool (grep, read_lines, delete_lines, replace_in_file) is asked about text files
only, never about a photo or a video; a line number is one the file has; a rename keeps
what the entry is (a folder gets a folder's name, a file keeps its extension).
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Sequence
from typing import TypeVar

from prove_gym.server import Bound, Prepared, ToolContext, ToolError

from .fs import Fs

BINARY_TYPES = frozenset(
    {
        ".jpg", ".jpeg", ".png", ".gif", ".heic", ".webp", ".mp4", ".mov", ".mkv", ".mp3",
        ".wav", ".flac", ".pdf", ".zip", ".gz", ".tgz", ".tar", ".deb", ".dmg", ".iso",
        ".exe", ".bin", ".docx", ".xlsx", ".pptx",
    }
)  # fmt: skip
"""Extensions of files whose content is not lines of text (photos, videos, documents,
archives, packages): no text tool is asked about them."""

T = TypeVar("T")

FOLDER_NAMES = ("archive-2025", "old-projects", "backup", "to-sort", "shared")
"""New names for a folder: names of a collection, with no file extension."""
FILE_SUFFIXES = ("-final", "-old", "-v2", "-backup")
"""What a renamed file's name gets after its stem (its extension stays)."""


def is_text_path(path: str) -> bool:
    """Whether the file at ``path`` holds lines of text (not a photo, a video, an archive).

    >>> is_text_path("~/Pictures/IMG_2531.jpg"), is_text_path("logs/app.log")
    (False, True)
    """
    return Bound({"path": path}).extension("path") not in BINARY_TYPES


def text_choice(choices: Sequence[T]) -> Callable[[ToolContext, random.Random, Bound], T | None]:
    """A value source drawing from ``choices`` for a call on a text file, or on a folder
    searched recursively (``grep -r``: a grep of a folder without it can only fail); None
    for a file that is not text, or a folder otherwise, so synthesis draws another file."""

    def source(ctx: ToolContext, rng: random.Random, bound: Bound) -> T | None:
        if is_folder(ctx, bound, "path"):
            return rng.choice(list(choices)) if bound.args.get("recursive") else None
        if is_text_path(str(bound.args.get("path", ""))):
            return rng.choice(list(choices))
        return None

    return source


def is_folder(ctx: ToolContext | None, bound: Bound, name: str) -> bool:
    """Whether argument ``name`` names a folder: its record says so, or (for one the
    conversation made or moved) the live state does. A text tool given one can only fail
    ("count the words in ~/Projects/todo-cli/docs")."""
    if bound.records.get(name, {}).get("type") == "directory":
        return True
    if ctx is None:
        return False
    try:
        node, _ = Fs(ctx).existing(str(bound.args.get(name, "")), "stat")
    except ToolError:
        return False
    return bool(node.is_dir)


def a_file(ctx: ToolContext, rng: random.Random, bound: Bound) -> str | None:
    """The entry in ``path`` if it is a file of any type (a checksum of a photo is fine, of
    a folder it can only fail); None otherwise, so synthesis draws another."""
    return None if is_folder(ctx, bound, "path") else str(bound.args.get("path", ""))


def text_file(ctx: ToolContext, rng: random.Random, bound: Bound) -> str | None:
    """The file in ``path`` if it holds text (a text tool never reads a photo, nor a
    folder; None otherwise, so synthesis draws another file)."""
    path = str(bound.args.get("path", ""))
    return path if is_text_path(path) and not is_folder(ctx, bound, "path") else None


def own_text_file(ctx: ToolContext, rng: random.Random, bound: Bound) -> str | None:
    """A :func:`text_file` the user edits by hand: not inside a hidden entry (nobody deletes
    lines 1 to 5 of ``.git/config``; ``~/.bashrc`` itself is theirs to edit)."""
    path = text_file(ctx, rng, bound)
    if path is None:
        return None
    folders = path.rstrip("/").split("/")[:-1]
    return None if _hidden("/".join(folders)) else path


SORTABLE_TYPES = frozenset({".txt", ".csv", ".tsv", ".log", ".m3u", ".list", ""})
"""Files that are a list of lines, one record each: what a person sorts (not a JSON
document, a Python module or a Markdown page)."""


def sortable_file(ctx: ToolContext, rng: random.Random, bound: Bound) -> str | None:
    """The file in ``path`` if its lines are records a person would sort (a list, a CSV, a
    log); None otherwise, so synthesis draws another file.

    >>> [sortable_file(None, random.Random(0), Bound({"path": p}))
    ...  for p in ("~/budget.csv", "~/.config/Code/settings.json")]
    ['~/budget.csv', None]
    """
    path = str(bound.args.get("path", ""))
    if is_folder(ctx, bound, "path"):
        return None  # "Sort the lines of /tmp" can only fail
    name = path.rsplit("/", 1)[-1]
    ext = "" if name.startswith(".") and name.count(".") == 1 else Bound({"p": name}).extension("p")
    return path if ext in SORTABLE_TYPES else None


def separator_for_file(ctx: ToolContext, rng: random.Random, bound: Bound) -> str | None:
    """The column separator of the file in ``path``: "," for a CSV, a tab for a TSV, ":"
    for a file with no extension (``/etc/passwd``); None for others (their columns are
    separated by blanks), so synthesis draws another call.

    >>> [separator_for_file(None, random.Random(0), Bound({"path": p}))
    ...  for p in ("~/budget.csv", "/etc/passwd", "~/notes.txt")]
    [',', ':', None]
    """
    path = str(bound.args.get("path", ""))
    if path.rsplit("/", 1)[-1].startswith("."):
        return None  # a dotfile (.gitignore) has no columns
    return {".csv": ",", ".tsv": "\t", "": ":"}.get(Bound({"path": path}).extension("path"))


def first_text_file(ctx: ToolContext, rng: random.Random, bound: Bound) -> str | None:
    """The file in ``path1`` if it holds text (the first of two files compared)."""
    path = str(bound.args.get("path1", ""))
    return path if is_text_path(path) and not is_folder(ctx, bound, "path1") else None


def _folder(path: str) -> str:
    return path.rstrip("/").rsplit("/", 1)[0]


def file_beside_first(ctx: ToolContext, rng: random.Random, bound: Bound) -> str | None:
    """A text file that belongs with the one in ``path1``: the drawn ``path2`` when it is
    of the same type, else such a file of the live state (the same folder first), else
    None. Nobody diffs a project's ``usage.md`` against a pip log, nor standup notes
    against a budget spreadsheet.

    >>> beside = Bound({"path1": "/home/ana/docs/a.md", "path2": "/home/ana/notes/b.md"})
    >>> file_beside_first(None, random.Random(0), beside)
    '/home/ana/notes/b.md'
    """
    first, second = str(bound.args.get("path1", "")), str(bound.args.get("path2", ""))
    kind = Bound({"p": first}).extension("p")

    def fits(path: str) -> bool:
        return path != first and is_text_path(path) and Bound({"p": path}).extension("p") == kind

    if fits(second) and not is_folder(ctx, bound, "path2"):
        return second
    fs = Fs(ctx)  # the live tree: the conversation may have made files
    nodes, _ = fs.walk(fs.root)
    files = sorted(fs.path(n) for n, _ in nodes if not n.is_dir and n.size > 0 and fs.can(n, "r"))
    near = [p for p in files if fits(p) and _folder(p) == _folder(first)]
    same = [p for p in files if fits(p)]
    return rng.choice(near or same) if near or same else None


def empty_directory(ctx: ToolContext, rng: random.Random, bound: Bound) -> str | Prepared | None:
    """An empty directory of the live state for ``rmdir``: the one drawn if it is empty,
    else one that is (a folder an earlier call of the conversation emptied or made); else
    a folder that is made empty by deleting its only file first (:class:`Prepared`: "Delete
    ~/Projects/app/logs/old.log. Then remove the empty folder ~/Projects/app/logs."), the
    one drawn if it is such a folder; else None. A sampled tree has no empty folder, so
    without that call first ``rmdir`` would fit only after a chain that happened to empty
    one."""
    from .fs import Fs  # the live tree

    fs = Fs(ctx)
    nodes, _ = fs.walk(fs.root)
    folders = [n for n, _ in nodes if n.is_dir and n.parent_id is not None]
    empty = sorted(fs.path(n) for n in folders if not fs.children(n))
    drawn = str(bound.args.get("path", "")).rstrip("/")
    if drawn in empty:
        return drawn
    if empty:
        return rng.choice(empty)
    cwd = fs.cwd
    # the user's own folder and file, both writable, whose removal leaves the folder empty
    # (never one holding the working directory, never a tool's internals such as .git)
    emptiable: list[tuple[str, str]] = []
    for n in folders:
        kids = fs.children(n)
        if len(kids) != 1 or kids[0].is_dir or fs.is_inside(cwd, n):
            continue
        folder, only = fs.path(n), fs.path(kids[0])
        parent = fs.parent(n)
        if (
            not _hidden(only)
            and fs.can(n, "wx")
            and fs.can(kids[0], "w")
            and parent is not None
            and fs.can(parent, "wx")
        ):
            emptiable.append((folder, only))
    if not emptiable:
        return None
    allowed = {str(c) for c in bound.choices.get("path", ())}
    mine = [pair for pair in emptiable if pair[0] in allowed] or emptiable
    folder, only = next((pair for pair in mine if pair[0] == drawn), None) or rng.choice(
        sorted(mine)
    )
    return Prepared(folder, (("rm", {"path": only}),))


def word_in_text_file(ctx: ToolContext, rng: random.Random, bound: Bound) -> str | None:
    """A word that occurs in the text file in ``path`` (its record's ``find``; None for a
    file that is not text)."""
    word = bound.records.get("path", {}).get("find")
    return str(word) if word and is_text_path(str(bound.args.get("path", ""))) else None


PROSE_TYPES = frozenset({".md", ".txt", ".csv", ".rst", ".org", ".tex", ".log", ""})
"""Extensions of files of words for people (notes, lists, logs), not code or configuration:
a word in them may be re-cased; in a ``.js`` file ``const`` is a keyword."""


def replacement_for_find(ctx: ToolContext | None, rng: random.Random, bound: Bound) -> str | None:
    """What a person would put in place of ``find`` in a text file: the next number for a
    number (a year moved on: "2025" to "2026", a limit raised, its padding kept), "DONE" for
    "TODO", and in a file of prose a lower-case word capitalised (a name fixed: "romero" to
    "Romero"); None otherwise (the call is not drawn: no keyword of code re-cased, no
    address written into a contacts list).

    >>> [replacement_for_find(None, random.Random(1), Bound({"path": "notes.md", "find": f}, {}))
    ...  for f in ("2025", "007", "romero", "TODO", "Romero")]
    ['2026', '008', 'Romero', 'DONE', None]
    >>> [replacement_for_find(None, random.Random(1), Bound({"path": p, "find": "heads"}, {}))
    ...  for p in ("src/app.js", ".git/HEAD", "notes/todo")]
    [None, None, 'Heads']
    """
    find = bound.args.get("find")
    path = str(bound.args.get("path", ""))
    if not isinstance(find, str) or not is_text_path(path):
        return None
    if find.isascii() and find.isdigit():
        return f"{int(find) + 1:0{len(find)}d}"
    if find == "TODO":
        return "DONE"
    prose = Bound({"p": path}).extension("p") in PROSE_TYPES and not _hidden(path)
    if find.isalpha() and find.islower() and prose:
        return find.capitalize()
    return None


def _hidden(path: str) -> bool:
    """Whether ``path`` is, or lies inside, a hidden entry (``.git/HEAD``, ``~/.bashrc``):
    a tool's or a shell's file, not one of the user's documents."""
    return any(part.startswith(".") for part in path.split("/") if part not in ("", ".", ".."))


def extension_under(ctx: ToolContext, rng: random.Random, bound: Bound) -> str | None:
    """An extension that a visible file under the folder in ``path`` has (``md``, ``jpg``;
    never ``bash_history`` of ``~/.bash_history``); None for a folder with none, so
    synthesis draws another."""
    fs = Fs(ctx)
    try:
        top, _ = fs.directory(str(bound.args.get("path", ".")), "find")
    except ToolError:
        return None
    nodes, _ = fs.walk(top, None)
    kinds = sorted(
        {
            ext[1:]
            for n, _ in nodes
            if not n.is_dir and not _hidden(fs.path(n))
            for ext in [Bound({"p": n.name}).extension("p")]
            if ext
        }
    )
    return rng.choice(kinds) if kinds else None


def name_under(ctx: ToolContext, rng: random.Random, bound: Bound) -> str | None:
    """A name to look for under the folder in ``path`` that something in it has: a file's
    own name, or ``*<extension>`` of one (never the folder's own name: searching ``docs``
    for ``docs`` finds only itself); None for a folder with no files under it."""
    from .fs import Fs  # the live tree

    fs = Fs(ctx)
    try:
        top, _ = fs.directory(str(bound.args.get("path", ".")), "find")
    except ToolError:  # not a readable folder: this draw does not fit
        return None
    nodes, _ = fs.walk(top, None)
    names = sorted({n.name for n, _ in nodes if not n.is_dir and not n.name.startswith(".")})
    if not names:
        return None
    name = rng.choice(names)
    extension = Bound({"p": name}).extension("p")
    return f"*{extension}" if extension and rng.random() < 0.5 else name


def visible_source(ctx: ToolContext, rng: random.Random, bound: Bound) -> str | None:
    """The path in ``source`` unless it lies inside a hidden folder (``.git/HEAD``, a
    ``.cache`` file): people copy and move their own files, not a tool's internals."""
    path = str(bound.args.get("source", ""))
    return None if _hidden(path.rsplit("/", 1)[0]) else path


def line_in_file(
    choices: Sequence[int],
) -> Callable[[ToolContext, random.Random, Bound], int | None]:
    """A value source for a line number of the text file in ``path``: one of ``choices``
    that the file has (None for a file that is not text, or has none of them)."""

    def source(ctx: ToolContext, rng: random.Random, bound: Bound) -> int | None:
        if not is_text_path(str(bound.args.get("path", ""))):
            return None
        lines = bound.records.get("path", {}).get("lines")
        fits = [n for n in choices if not isinstance(lines, int) or n <= lines]
        return rng.choice(fits) if fits else None

    return source


def new_name_like(ctx: ToolContext | None, rng: random.Random, bound: Bound) -> str | None:
    """A new name of the same kind as the entry in ``path``: a folder's name for a folder,
    the file's stem with a suffix and its own extension for a file; None for a hidden
    entry (``.git``, ``.bashrc``), whose name is what tools look for.

    >>> new_name_like(None, random.Random(1), Bound({"path": "~/Documents/Q3-report.txt"},
    ...     {"path": {"type": "file"}}))
    'Q3-report-old.txt'
    """
    path = str(bound.args.get("path", "")).rstrip("/")
    kind = bound.records.get("path", {}).get("type")
    name = path.rsplit("/", 1)[-1]
    if name.startswith("."):
        return None
    if kind == "directory" or (kind is None and not Bound({"path": path}).extension("path")):
        return rng.choice([n for n in FOLDER_NAMES if n != name] or ["renamed"])
    ext = Bound({"path": path}).extension("path")
    stem = name[: len(name) - len(ext)] if ext else name
    return f"{stem}{rng.choice(FILE_SUFFIXES)}{name[len(stem) :]}"


FOLDERS_BY_TYPE: dict[str, frozenset[str]] = {
    **dict.fromkeys(
        (".jpg", ".jpeg", ".png", ".gif", ".heic", ".webp"),
        frozenset({"Pictures", "Desktop", "Downloads"}),
    ),
    **dict.fromkeys((".mp4", ".mov", ".mkv"), frozenset({"Videos", "Desktop", "Downloads"})),
    **dict.fromkeys((".mp3", ".wav", ".flac", ".m3u"), frozenset({"Music", "Downloads"})),
    **dict.fromkeys(
        (".md", ".txt", ".pdf", ".docx", ".xlsx", ".pptx", ".csv", ".rst"),
        frozenset({"Documents", "Desktop", "Downloads", "Projects"}),
    ),
    **dict.fromkeys(
        (".py", ".js", ".ts", ".json", ".yaml", ".yml", ".toml", ".sh", ".html", ".css"),
        frozenset({"Projects"}),
    ),
    **dict.fromkeys((".zip", ".gz", ".tgz", ".tar", ".deb", ".dmg", ".iso"), frozenset({"Downloads"})),
}  # fmt: skip
"""The folders of a home where a file of each type belongs (photos in Pictures, a song in
Music): where a person moves or copies one to, besides its own folder's tree."""
MEDIA_FOLDERS = frozenset({"Pictures", "Music", "Videos"})
"""Home folders whose subfolders are albums: a file belongs to its own."""
KEEPING_WORDS = ("backup", "archive", "old", "to-sort", "shared", "misc")
"""Words of folder names that take anything (a backup, an archive)."""
_KEEPING = re.compile(r"(?<![a-z])(?:" + "|".join(map(re.escape, KEEPING_WORDS)) + r")(?![a-z])")


def is_keeping(folder: str) -> bool:
    """Whether a folder's name says it takes anything: ``~/backup``, ``archive-2025``,
    ``Pictures/Archive``; a whole word, so ``photo-sorter`` (a project) is not "to-sort".

    >>> is_keeping("~/Pictures/Archive"), is_keeping("~/Projects/photo-sorter")
    (True, False)
    """
    return _KEEPING.search(folder.lower()) is not None


def home_folder(path: str) -> str | None:
    """The first folder of a home path (``Pictures`` in ``/home/ana/Pictures/2025`` or
    ``~/Pictures``), or the first folder of another absolute path (``var`` in
    ``/var/log``); None for a relative path."""
    parts = [p for p in path.split("/") if p]
    if path.startswith("~/"):
        return parts[1] if len(parts) > 1 else None
    if path.startswith("/home/"):
        return parts[2] if len(parts) > 2 else None
    return parts[0] if path.startswith("/") and parts else None


def keeps(folder: str, name: str) -> bool:
    """Whether a file called ``name`` belongs in ``folder``: one that keeps anything (a
    backup, an archive) or a home folder where its type lives (a photo in Pictures, a note
    in Documents).

    >>> keeps("~/Pictures/2023", "summary.txt"), keeps("~/Documents/Work", "summary.txt")
    (False, True)
    """
    if is_keeping(folder):
        return True
    return home_folder(folder) in FOLDERS_BY_TYPE.get(Bound({"p": name}).extension("p"), ())


def fitting_destination(ctx: ToolContext | None, rng: random.Random, bound: Bound) -> str | None:
    """The folder in ``destination`` if the entry in ``source`` belongs there: a folder of
    its own tree (``~/Documents/Work`` to ``~/Documents/Archive``, within one project, never
    one project's log into another's ``src``), a folder that keeps
    anything (a backup, an archive), or where its type lives (a photo to Pictures, a song
    to Music); None otherwise, so synthesis draws another. A hidden file (``.gitconfig``)
    goes only to a backup or an archive. Nobody files their ``.gitconfig`` under
    ``~/Pictures/2025/Vancouver``.

    >>> [fitting_destination(None, random.Random(0), Bound({"source": s, "destination": d}))
    ...  for s, d in [("/home/ana/.gitconfig", "/home/ana/Pictures/2025"),
    ...               ("/home/ana/.gitconfig", "/home/ana/backup"),
    ...               ("/home/ana/Downloads/IMG_1.jpg", "/home/ana/Pictures/2025"),
    ...               ("/home/ana/Downloads/IMG_1.jpg", "/home/ana/Projects/api"),
    ...               ("/home/ana/Projects/bot/logs/app.log", "/home/ana/Projects/api/src")]]
    [None, '/home/ana/backup', '/home/ana/Pictures/2025', None, None]
    """
    source, destination = str(bound.args.get("source", "")), str(bound.args.get("destination", ""))
    if not destination or _hidden(destination):
        return None
    if is_keeping(destination):
        return destination
    if _hidden(source):
        return None
    folder = is_folder(ctx, bound, "source")
    if home_folder(destination) is not None and _area(destination) == _area(source):
        # its own part of the home: a file within a project or Documents; a whole folder
        # only within a project (never ~/Pictures/2024 into 2023/Camping); a photo, a song
        # or a video only up to an album that holds its own (a Prague photo never goes
        # into Vancouver or Screenshots)
        if home_folder(source) in MEDIA_FOLDERS:
            up = source.rstrip("/").startswith(destination.rstrip("/") + "/")
            return destination if up and not folder else None
        if not folder or home_folder(source) == "Projects":
            return destination
        return None
    return destination if keeps(destination, source.rstrip("/").rsplit("/", 1)[-1]) else None


def _area(path: str) -> tuple[str, ...]:
    """The part of a home a path is in: its first folder (``Pictures``), or a project
    (``Projects/todo-cli``)."""
    parts = [p for p in path.split("/") if p]
    rest = parts[1:] if path.startswith("~/") else parts[2:] if path.startswith("/home/") else parts
    return tuple(rest[:2] if rest[:1] == ["Projects"] else rest[:1])


LANDING_FOLDERS = frozenset({"Downloads", "Desktop", "tmp"})
"""Where files land before anyone sorts them (and the home folder itself)."""


def matching_pattern(ctx: ToolContext, rng: random.Random, bound: Bound) -> str | None:
    """A shell pattern for ``move_matching``: every visible file of one type in ``path``
    (``*.jpg``), moved as people sort files: from where files land (Downloads, the Desktop,
    the home folder, /tmp) into the home folder where that type lives (photos into
    Pictures, PDFs into Documents), or from anywhere into a backup or an archive; None
    otherwise, so synthesis draws other folders. Never ``*`` (a project's tests moved into
    ``~/Pictures``), never into a hidden folder or another project."""
    fs = Fs(ctx)
    try:
        folder, _ = fs.directory(str(bound.args.get("path", ".")), "mv")
    except ToolError:
        return None
    where, destination = fs.path(folder), str(bound.args.get("destination", ""))
    if not destination or _hidden(destination):
        return None
    top, home = home_folder(where), home_folder(destination)
    # a backup of its own area (~/Pictures/archive for photos, a project's own old-logs),
    # or one of the home (~/backup)
    keeping = is_keeping(destination) and (
        _area(destination) == _area(where) or is_keeping(home or "")
    )
    landing = top is None or top in LANDING_FOLDERS  # the home folder itself, or Downloads
    if not keeping and not landing:
        return None
    types = {
        ext
        for k in fs.children(folder)
        if not k.is_dir and not k.name.startswith(".")
        for ext in [Bound({"p": k.name}).extension("p")]
        if ext
    }
    fit = sorted(
        e
        for e in types
        if keeping or home in FOLDERS_BY_TYPE.get(e, frozenset()) - LANDING_FOLDERS - {"Projects"}
    )
    return f"*{rng.choice(fit)}" if fit else None


def elsewhere(ctx: ToolContext, rng: random.Random, bound: Bound) -> str | None:
    """The directory in ``path`` if it is not the current one, else None: nobody asks to
    go where they already are ("pushd ~/backup. And go to the same directory")."""
    fs = Fs(ctx)
    path = str(bound.args.get("path", "~"))
    try:
        node, _ = fs.directory(path, "cd")
    except ToolError:  # not a directory one can enter: the call says why
        return path
    return None if node.id == fs.cwd.id else path
