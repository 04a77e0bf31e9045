"""``prove-gym new``: a server plugin package that installs, registers and passes conformance as written.

The package is the smallest real server: one entity (a note), a seeded
sampler, a read tool with a constrained parameter, a write tool, typed
results, hand-written tasks whose final states are recorded when the package
is written, and a test module that runs :mod:`prove_gym.testing.conformance`.
Rename and grow it; ``prove-gym tasks <name> --rehash`` keeps the tasks'
recorded states current after a deliberate change.
"""

from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path

__all__ = ["new_plugin"]

_PYPROJECT = """\
[build-system]
requires = ["setuptools>=77"]
build-backend = "setuptools.build_meta"

[project]
name = "prove-{dash}"
version = "0.1.0"
description = "The {name} tool server for prove_gym."
requires-python = ">=3.11"
dependencies = ["prove-gym"]

# prove_gym finds the server through this entry point, as it finds its built-in ones.
[project.entry-points.prove_gym]
{name} = "prove_{name}"

# The package and any subpackage it grows (a tools/ package, once tools.py is large).
[tool.setuptools.packages.find]
include = ["prove_{name}*"]

[tool.setuptools.package-data]
"prove_{name}" = ["tasks.jsonl"]

[tool.pytest.ini_options]
testpaths = ["tests"]
addopts = "-q -p no:cacheprovider"

# The rules prove_gym itself is checked with: `ruff check . && ruff format --check .` pass.
[tool.ruff]
line-length = 100
target-version = "py311"

[tool.ruff.lint]
select = ["E", "F", "I", "UP", "B", "SIM", "RUF"]
ignore = ["RUF001", "RUF002", "RUF003", "E501"]
"""

_README = """\
# prove-{dash}

The `{name}` tool server for [prove_gym](https://pypi.org/project/prove-gym/).

```bash
pip install -e .
prove-gym list                      # {name} appears with its tools
python -m pytest                    # the conformance suite every server passes
prove-gym serve {name}              # over MCP
```

```python
import gymnasium
import prove_gym

env = gymnasium.make("prove/{name}-v0")
```

- `prove_{name}/models.py`: the state (SQLAlchemy, this server's own `DeclarativeBase`).
- `prove_{name}/sampler.py`: fills a seeded, realistic state.
- `prove_{name}/tools.py`: the server, its entity and tools; docstrings are what the model reads.
  Past about 1,500 lines over several resources, it becomes a `tools/` package by resource
  with the registration in one place (prove_gym's CONTRIBUTING.md, "Large servers").
- `prove_{name}/tasks.jsonl`: hand-written tasks; after a deliberate change to tools or
  sampling, `prove-gym tasks {name} --rehash` re-records their final states.
"""

_INIT = '''\
"""The {name} server, found by prove_gym through the ``prove_gym`` entry-point group."""

from __future__ import annotations

from prove_gym import Server, hookimpl

from .tools import server


@hookimpl
def prove_gym_servers() -> list[Server]:
    return [server]
'''

_MODELS = '''\
"""The {name} server's state."""

from __future__ import annotations

import datetime as dt

from sqlalchemy import DateTime, String, Text
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column


class Base(DeclarativeBase):
    pass


class Note(Base):
    __tablename__ = "notes"

    id: Mapped[str] = mapped_column(String(12), primary_key=True)
    title: Mapped[str] = mapped_column(String(120))
    body: Mapped[str] = mapped_column(Text)
    tag: Mapped[str] = mapped_column(String(20))
    created_at: Mapped[dt.datetime] = mapped_column(DateTime)
'''

_SAMPLER = '''\
"""A seeded, realistic {name} state: every random choice from ``ctx.rng``/``ctx.fake``."""

from __future__ import annotations

import datetime as dt

from prove_gym import SampleContext

from .models import Note

TAGS = ("work", "home", "ideas", "travel")


def sample_{name}(ctx: SampleContext) -> None:
    for i in range(1, 20 * ctx.size + 1):
        ctx.db.add(
            Note(
                id=f"note_{{i:03d}}",
                title=ctx.fake.sentence(nb_words=4).rstrip("."),
                body=ctx.fake.paragraph(nb_sentences=2),
                tag=ctx.rng.choice(TAGS),
                created_at=ctx.now - dt.timedelta(hours=ctx.rng.randrange(1, 24 * 60)),
            )
        )
'''

_TOOLS = '''\
"""The {name} server's tools. Docstrings are what the model reads: keep examples concrete.

Once this file passes about 1,500 lines over several resources, make it a ``tools/`` package:
a module per resource declaring its tools with ``@tool(...)``, and ``tools/__init__.py``
holding the server, its entities and ``TOOLS``, the one list that registers them in the
order the model reads them (prove_gym's CONTRIBUTING.md, "Large servers").
"""

from __future__ import annotations

import datetime as dt
from functools import cache
from pathlib import Path
from typing import Annotated, Any, Literal

from prove_gym.server import Entity, Query, Record, Server, ToolContext, TypedDict, next_id
from pydantic import Field
from sqlalchemy import bindparam, select, update

from .models import Base, Note
from .sampler import sample_{name}

server = Server(
    "{name}",
    version="0.1.0",
    base=Base,
    sampler=sample_{name},
    description="A notebook: notes with a title, a body and a tag.",
    instructions="Note ids look like 'note_007'.",
    tasks_file=Path(__file__).with_name("tasks.jsonl"),
)

Tag = Literal["work", "home", "ideas", "travel"]
NoteRow = Annotated[Record[Note], Entity("note")]

# The statements the tools run (ctx.sql): compiled once, on SQLite directly (CONTRIBUTING.md).
notes_table = Note.__table__
NOTE = Query(select(notes_table).where(Note.id == bindparam("id")))
NOTE_TAGS = Query(select(Note.id, Note.tag).order_by(Note.id))
RETAG = Query(update(Note).where(Note.id == bindparam("id")).values(tag=bindparam("tag")))


@cache
def _latest(by_tag: bool) -> Query:
    query = select(notes_table).order_by(Note.created_at.desc(), Note.id).limit(bindparam("limit"))
    return Query(query.where(Note.tag == bindparam("tag")) if by_tag else query)


class NoteOut(TypedDict):
    note_id: str
    title: str
    body: str
    tag: str
    created_at: dt.datetime


def _out(note: Any) -> NoteOut:
    return {{
        "note_id": note.id,
        "title": note.title,
        "body": note.body,
        "tag": note.tag,
        "created_at": note.created_at,
    }}


@server.entity(
    "note", key="note_id", model=Note, not_found="Call list_notes to see the notes' ids."
)
def notes(ctx: ToolContext) -> list[dict[str, str]]:
    return [{{"note_id": n.id, "tag": n.tag}} for n in ctx.sql.all(NOTE_TAGS)]


@server.tool(
    returns="note",
    phrasings=["Show me my {{tag}} notes", "List the latest {{limit}} notes"],
)
def list_notes(
    ctx: ToolContext,
    tag: Tag | None = None,
    limit: Annotated[int, Field(ge=1, le=50)] = 10,
) -> list[NoteOut]:
    """List notes, newest first.

    Args:
        tag: Only notes with this tag, such as "work".
        limit: At most this many notes, 1 to 50, such as 5.
    """
    if tag is None:
        return [_out(n) for n in ctx.sql.all(_latest(False), limit=limit)]
    return [_out(n) for n in ctx.sql.all(_latest(True), tag=tag, limit=limit)]


@server.tool(
    writes=True,
    returns="note",
    phrasings=["Retag {{note_id}} as {{tag}}", "Move note {{note_id}} under {{tag}}"],
)
def retag_note(ctx: ToolContext, note_id: NoteRow, tag: Tag) -> NoteOut:
    """Change a note's tag.

    Args:
        note_id: The note, such as "note_007".
        tag: Its new tag, such as "ideas".
    """
    if note_id.tag != tag:  # write only what changes
        ctx.sql.run(RETAG, id=note_id.id, tag=tag)
    return _out(note_id._replace(tag=tag))


@server.tool(
    writes=True,
    returns="note",
    phrasings=["Write down {{title}}: {{body}}", "Add a {{tag}} note called {{title}}"],
    examples={{"title": ["Groceries", "Trip plan"], "body": ["Milk, eggs.", "Book the train."]}},
)
def add_note(
    ctx: ToolContext,
    title: Annotated[str, Field(min_length=1, max_length=120)],
    body: Annotated[str, Field(max_length=2000)],
    tag: Tag = "ideas",
) -> NoteOut:
    """Write a new note; its id is returned.

    Args:
        title: A short title, such as "Groceries".
        body: The text of the note, such as "Milk, eggs, bread.".
        tag: Its tag, such as "home".
    """
    new_id = next_id(ctx, Note.id, "note", 3)
    ctx.sql.insert(Note, id=new_id, title=title, body=body, tag=tag, created_at=ctx.now)
    return _out(ctx.sql.one(NOTE, id=new_id))
'''

_TASKS = [
    {
        "id": "{name}-001",
        "servers": ["{name}"],
        "seed": 1,
        "turns": [
            {
                "user": "Move note_003 to my travel notes, then show me my travel notes.",
                "steps": [
                    {
                        "id": "s1",
                        "name": "retag_note",
                        "arguments": {"note_id": "note_003", "tag": "travel"},
                    },
                    {
                        "id": "s2",
                        "name": "list_notes",
                        "arguments": {"tag": "travel"},
                        "depends_on": ["s1"],
                    },
                ],
            }
        ],
    },
    {
        "id": "{name}-002",
        "servers": ["{name}"],
        "seed": 2,
        "turns": [
            {"user": "Add a note.", "kind": "clarify", "missing": ["title", "body"]},
            {
                "user": "Title 'Groceries', text 'Milk, eggs.', tag it home.",
                "steps": [
                    {
                        "id": "s1",
                        "name": "add_note",
                        "arguments": {"title": "Groceries", "body": "Milk, eggs.", "tag": "home"},
                    }
                ],
            },
        ],
    },
]

_TEST = '''\
"""The conformance suite every prove_gym server passes; add this server's own tests below."""

from prove_gym.testing.conformance import conformance_suite

TestConformance = conformance_suite("{name}", samples=["note_001", "note_999", "work"])
'''


def new_plugin(name: str, directory: str | Path) -> list[Path]:
    """Write the plugin package of server ``name`` into ``directory`` (created, must be empty).

    The shipped tasks' final states are recorded by replaying them, so the
    package passes conformance as written. Returns the files written.

    Raises:
        ValueError: ``name`` is not a lowercase identifier, or ``directory`` is not empty.
    """
    if not name.isidentifier() or name.lower() != name or name.startswith("_"):
        raise ValueError(f"a server name is a lowercase identifier such as 'notes', not {name!r}")
    root = Path(directory)
    if root.exists() and any(root.iterdir()):
        raise ValueError(f"{root} is not empty")
    pkg = root / f"prove_{name}"
    values = {"name": name, "dash": name.replace("_", "-")}
    files = {
        root / "pyproject.toml": _PYPROJECT,
        root / "README.md": _README,
        pkg / "__init__.py": _INIT,
        pkg / "models.py": _MODELS,
        pkg / "sampler.py": _SAMPLER,
        pkg / "tools.py": _TOOLS,
        root / "tests" / f"test_{name}.py": _TEST,
    }
    written = []
    for path, template in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(template.format(**values), encoding="utf-8")
        written.append(path)
    tasks = json.loads(json.dumps(_TASKS).replace("{name}", name))
    tasks_file = pkg / "tasks.jsonl"
    tasks_file.write_text("".join(json.dumps(t) + "\n" for t in tasks), encoding="utf-8")
    written.append(tasks_file)
    _record_final_states(name, root)
    return written


def _record_final_states(name: str, root: Path) -> None:
    """Replay the new tasks on their states and write each final state hash into the file."""
    from prove_gym.registry import Registry
    from prove_gym.task import load_tasks, save_tasks
    from prove_gym.workspace import replay_tasks

    sys.path.insert(0, str(root))
    # a package of this name imported earlier in the process (from another root) would be
    # found in sys.modules first: replay the one just written
    for mod in [m for m in sys.modules if m == f"prove_{name}" or m.startswith(f"prove_{name}.")]:
        del sys.modules[mod]
    try:
        module = importlib.import_module(f"prove_{name}")
        registry = Registry(load_entrypoints=False)
        registry.register(module, name=name)
        server = registry.get_server(name)
        assert server.tasks_file is not None
        replays = replay_tasks(load_tasks(server.tasks_file), registry)
        for r in replays:
            if r.failures:
                raise RuntimeError(f"scaffold task {r.task.id} does not replay: {r.failures}")
        save_tasks((r.recorded() for r in replays), server.tasks_file)
    finally:
        sys.path.remove(str(root))
        for mod in [
            m for m in sys.modules if m == f"prove_{name}" or m.startswith(f"prove_{name}.")
        ]:
            del sys.modules[mod]
