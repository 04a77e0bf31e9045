"""The statements the filesystem reads and writes through (``ctx.sql``): compiled
once, run on SQLite directly."""

from __future__ import annotations

from sqlalchemy import bindparam, delete, func, literal, select, update

from prove_gym.server import Query

from ..models import DirStackEntry, Node, Shell
from .args import MAX_NODES
from .nodes import Entry

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
