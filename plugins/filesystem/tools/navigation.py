"""Session and navigation: the current directory, the directory stack, where a path leads."""

from __future__ import annotations

from prove_gym.server import NotFound, PermissionDenied, PreconditionFailed, ToolContext

from ..models import DirStackEntry
from ._declare import tool
from .args import MAX_STACK, DirArg, PathArg
from .fitting import elsewhere
from .fs import Fs, _kind
from .nodes import AnyNode
from .queries import POP, STACK_SIZE, STACK_TOP, TOP_POSITION
from .results import Cd, Cwd, Dirs, Exists, Pushed, Resolved, WhoAmI


@tool(returns="directory", phrasings=["Where am I?", "What's the current directory?"])
def pwd(ctx: ToolContext) -> Cwd:
    """Print the current working directory, e.g. {"cwd": "/home/ana/Documents"}."""
    fs = Fs(ctx)
    return {"cwd": fs.path(fs.cwd)}


@tool(
    stands_in_for=("pwd",),
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
    stands_in_for=("popd",),
    writes=True,
    returns="directory",
    phrasings=["Go to {path}", "cd into {path}", "Change directory to {path}"],
    values={"path": elsewhere},
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
    stands_in_for=("cd",),
    writes=True,
    returns="directory",
    phrasings=["pushd {path}", "Remember where I am and go to {path}"],
    values={"path": elsewhere},
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


@tool(
    stands_in_for=("pwd",),
    returns="directory",
    phrasings=["Show the directory stack", "Which directories did I pushd?"],
)
def dirs(ctx: ToolContext) -> Dirs:
    """Show the directory stack, current directory first, then the pushd entries (top first)."""
    return {"stack": [{"index": i, "path": p} for i, p in enumerate(Fs(ctx).stack())]}


@tool(
    stands_in_for=("pwd",),
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
