"""Every snippet in README.md, CONTRIBUTING.md and docs/ runs as written, or names its test.

A ```` ```python ```` block runs, in a temporary folder, in one namespace per document (a
later block may use what an earlier one made), unless the line above it says otherwise:

- ``<!-- snippet: fragment; tested by tests/PATH.py::test_name -->``: a piece of a larger
  program (a plugin's tool, a trainer's arguments); the named test runs the real thing, and
  this test checks that the test exists;
- ``<!-- snippet: needs MODULE -->``: runs only where MODULE is installed (an extra).

Every ``prove-gym`` command line shown in a shell block is parsed by the real command-line
parser, so a renamed command or flag fails here.
"""

from __future__ import annotations

import importlib.util
import re
import shlex
import sys
import types
from pathlib import Path
from typing import Any

import pytest

from prove_gym.cli import build_parser

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)
MARK = re.compile(r"<!-- snippet: (.*?) -->\s*$")


def blocks(path: Path, language: str) -> list[tuple[int, str, str]]:
    """(line, the marker above it or "", code) of every block in ``language``."""
    text = path.read_text(encoding="utf-8")
    found = []
    for match in FENCE.finditer(text):
        if match.group(1) != language:
            continue
        line = text.count("\n", 0, match.start()) + 1
        above = text[: match.start()].rstrip("\n").rsplit("\n", 1)[-1]
        mark = MARK.search(above)
        found.append((line, mark.group(1) if mark else "", match.group(2)))
    return found


def python_docs() -> list[Path]:
    return [p for p in DOCS if blocks(p, "python")]


@pytest.mark.parametrize("doc", python_docs(), ids=lambda p: p.name)
def test_every_python_snippet_runs_or_names_the_test_that_runs_it(
    doc: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    module = types.ModuleType(f"snippets_of_{doc.stem}")  # a real module: dataclasses need one
    monkeypatch.setitem(sys.modules, module.__name__, module)
    namespace: dict[str, Any] = module.__dict__
    for line, mark, code in blocks(doc, "python"):
        where = f"{doc.name}:{line}"
        if mark.startswith("fragment"):
            tested = re.fullmatch(r"fragment; tested by (tests/[\w/]+\.py)::(\w+)", mark)
            assert tested, f"{where}: a fragment names its test: 'fragment; tested by PATH::test'"
            source = ROOT / tested.group(1)
            assert source.is_file(), f"{where}: {tested.group(1)} does not exist"
            assert f"def {tested.group(2)}(" in source.read_text(), (
                f"{where}: {tested.group(1)} has no test {tested.group(2)}"
            )
            continue
        if mark.startswith("needs "):
            module = mark.removeprefix("needs ").strip()
            if importlib.util.find_spec(module) is None:
                continue  # the extra is absent: CI's trainer run executes it
        else:
            assert not mark, f"{where}: unknown snippet marker {mark!r}"
        try:
            exec(compile(code, where, "exec"), namespace)
        except Exception as exc:  # the failing snippet, by file and line, with its error
            pytest.fail(f"{where} does not run as written: {type(exc).__name__}: {exc}")


def test_the_readme_quick_start_pays_the_maximum(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    [(_line, _mark, quick_start), *_] = blocks(ROOT / "README.md", "python")
    exec(compile(quick_start, "README.md", "exec"), {})
    printed = capsys.readouterr().out.splitlines()
    assert printed[0].startswith("Find my next Sprint planning")
    assert printed[1] == "3.3 True"  # what its comment promises


def command_lines() -> list[tuple[str, str]]:
    """Every ``prove-gym`` command shown in a shell block, continuation lines joined."""
    found = []
    for doc in DOCS:
        for line, _mark, code in blocks(doc, "bash"):
            for command in code.replace("\\\n", " ").splitlines():
                command = command.split("#", 1)[0].strip()
                for part in command.split("&&"):
                    part = part.strip().strip("()").strip()
                    if part.startswith("prove-gym "):
                        found.append((f"{doc.name}:{line}", part))
    return found


@pytest.mark.parametrize(("where", "command"), command_lines())
def test_every_command_shown_parses_with_the_real_parser(where: str, command: str) -> None:
    parser = build_parser()
    try:
        args = parser.parse_args(shlex.split(command)[1:])
    except SystemExit:
        pytest.fail(f"{where}: `{command}` is not a valid prove-gym command line")
    assert getattr(args, "func", None) is not None, f"{where}: `{command}` names no command"


def test_the_docs_never_point_outside_the_repository() -> None:
    for doc in DOCS:
        text = doc.read_text(encoding="utf-8")
        for name in ("PAPER.md", "ARCHITECTURE.md", "../shared"):
            assert name not in text, f"{doc.name} refers to {name}, which users do not have"


def test_async_snippets_are_fragments() -> None:
    """A top-level ``await`` cannot run as a script: such a block must name its test."""
    for doc in DOCS:
        for line, mark, code in blocks(doc, "python"):
            if re.search(r"^(async with|await )", code, re.M):
                assert mark.startswith("fragment"), f"{doc.name}:{line}: top-level await"
