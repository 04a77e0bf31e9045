"""The filesystem server: tree invariants under random call sequences, shell-like path
resolution, permissions, its hand-written tasks, and the conformance suite."""

from __future__ import annotations

import fnmatch
import random
import time
import tracemalloc
from collections import Counter
from typing import Any

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

import prove_gym
from prove_gym import ErrorKind, Session
from prove_gym.server import compile_glob
from prove_gym.synth.ship import is_hand_written
from prove_gym.testing.conformance import conformance_suite

FS = prove_gym.get_server("filesystem")
TOOLS = sorted(FS.tools)
PATH_PARAMS = {"path", "source", "destination", "path1", "path2"}


# ------------------------------------------------------------- invariants
def tree_violations(session: Session) -> list[str]:
    """Every broken rule of the tree and the shell session, read straight from SQLite."""
    db = session.raw_connection
    nodes = {
        r[0]: r
        for r in db.execute("SELECT id, parent_id, name, kind, size, content FROM nodes").fetchall()
    }
    broken = []
    roots = [n for n in nodes.values() if n[1] is None]
    if len(roots) != 1 or roots[0][3] != "dir" or roots[0][2] != "":
        broken.append(f"expected one root directory with an empty name, got {roots}")
    for nid, parent, name, kind, size, content in nodes.values():
        if parent is not None:
            if parent not in nodes:
                broken.append(f"{nid} is an orphan (parent {parent} does not exist)")
            elif nodes[parent][3] != "dir":
                broken.append(f"{nid}'s parent {parent} is a file")
            if name in ("", ".", "..") or "/" in name:
                broken.append(f"{nid} has an invalid name {name!r}")
        if kind == "file" and size != len(content.encode()):
            broken.append(f"{nid}: size {size} != content length {len(content.encode())}")
        if kind == "dir" and (size != 0 or content != ""):
            broken.append(f"directory {nid} has a size or content")
        seen, current = set(), nid
        while current is not None and current in nodes and current not in seen:
            seen.add(current)
            current = nodes[current][1]
        if current is not None and current in seen:
            broken.append(f"{nid} is on a cycle")
    twins = Counter((n[1], n[2]) for n in nodes.values())
    broken += [f"two entries named {name!r} in {p}" for (p, name), k in twins.items() if k > 1]
    (cwd, home, oldpwd) = db.execute("SELECT cwd_id, home_id, oldpwd_id FROM shell").fetchone()
    stack = [r[0] for r in db.execute("SELECT node_id FROM dir_stack").fetchall()]
    for what, ref in [("cwd", cwd), ("home", home), ("oldpwd", oldpwd)] + [
        ("dir stack entry", s) for s in stack
    ]:
        if ref is None and what == "oldpwd":
            continue
        if ref not in nodes or nodes[ref][3] != "dir":
            broken.append(f"the {what} {ref} is not an existing directory")
    return broken


# ------------------------------------------------------------- strategies
def known_paths(session: Session) -> tuple[list[str], list[str]]:
    """Existing paths and directories of a session, as the entity sources list them."""
    paths = [r["path"] for r in session.list_entities("path")]
    dirs = [r["path"] for r in session.list_entities("directory")]
    return paths, dirs


def path_strategy(paths: list[str], dirs: list[str]) -> st.SearchStrategy[str]:
    """Existing paths (absolute and relative forms), fresh names next to them, and junk."""
    fresh = st.builds(
        lambda d, n: f"{d.rstrip('/')}/{n}",
        st.sampled_from(dirs),
        st.sampled_from(["new", "x.txt", "Notes", "a b.md", ".hidden"]),
    )
    special = st.sampled_from(
        [
            ".",
            "..",
            "~",
            "~/",
            "/",
            "-",
            "../..",
            "~/Documents/../Pictures",
            "/root",
            "/etc/hosts",
            "/etc/shadow",
            "/tmp",
            "~nobody",
            "",
            "nope/deeper",
            "~/notes.txt/inside",
            "a//b/./c",
        ]
    )
    relative = st.sampled_from(
        [
            "Documents",
            "Documents/Work",
            "Pictures/Archive",
            "Downloads",
            "Projects",
            "todo.md",
            ".ssh/id_ed25519",
            "Documents/Finance/taxes",
        ]
    )
    return st.one_of(st.sampled_from(paths), st.sampled_from(dirs), fresh, special, relative)


def argument_strategy(
    tool: str, known: tuple[list[str], list[str]]
) -> st.SearchStrategy[dict[str, Any]]:
    """Arguments that are mostly well-typed and often valid, sometimes missing or junk."""
    spec = FS.tools[tool]
    paths = path_strategy(*known)
    per_param: dict[str, st.SearchStrategy[Any]] = {}
    for p in spec.params:
        if p.name in PATH_PARAMS:
            value = paths
        elif p.name == "mode":
            value = st.sampled_from(
                [
                    "644",
                    "444",
                    "755",
                    "555",
                    "000",
                    "u+w",
                    "a-w",
                    "go-rwx",
                    "u=rx",
                    "+x",
                    "999",
                    "rwx",
                    "u+q",
                ]
            )
        elif p.name in ("pattern", "name"):
            value = st.sampled_from(
                ["*.txt", "*.md", "TODO", "ERROR|WARN", "(", "IMG_*", "*", "x/y"]
            )
        elif p.annotation is bool or str(p.annotation).startswith("bool"):
            value = st.booleans()
        elif "int" in str(p.annotation):
            value = st.integers(-2, 12)
        elif "Literal" in str(p.annotation):
            value = st.sampled_from(["f", "d", "md5", "sha256", "sha1", "q"])
        else:
            value = st.text(max_size=20)
        per_param[p.name] = value
    required = {p.name: per_param[p.name] for p in spec.params if p.required}
    optional = {p.name: per_param[p.name] for p in spec.params if not p.required}
    return st.one_of(
        st.fixed_dictionaries(required, optional=optional),
        st.fixed_dictionaries({}, optional={**required, **optional}),
        st.fixed_dictionaries(required, optional={"bogus": st.integers()}),
    )


# ----------------------------------------------------------- stateful test
class FilesystemMachine(RuleBasedStateMachine):
    """Random sequences of valid and invalid calls; the tree stays a tree and failures are no-ops."""

    def __init__(self) -> None:
        super().__init__()
        self.session = FS.session(seed=3)
        self.known = known_paths(self.session)

    def _call(self, tool: str, args: dict[str, Any]) -> None:
        before = self.session.state_hash()
        result = self.session.call(tool, args)
        event(f"{tool}: {'ok' if result.ok else result.error_kind}")
        assert result.error_kind != ErrorKind.INTERNAL, result.message
        if not result.ok:
            assert result.message
            assert self.session.state_hash() == before, f"failed {tool}{args} changed the state"
        elif not FS.tools[tool].writes:
            assert self.session.state_hash() == before, f"read {tool}{args} changed the state"
        else:
            self.known = known_paths(self.session)

    @rule(data=st.data(), tool=st.sampled_from(TOOLS))
    def any_tool(self, data: st.DataObject, tool: str) -> None:
        self._call(tool, data.draw(argument_strategy(tool, self.known)))

    @rule(
        data=st.data(),
        tool=st.sampled_from(
            [
                "cd",
                "pushd",
                "popd",
                "mkdir",
                "write_file",
                "append_file",
                "cp",
                "mv",
                "rename",
                "rm",
                "rmdir",
                "chmod",
                "move_matching",
                "touch",
            ]
        ),
    )
    def structural_change(self, data: st.DataObject, tool: str) -> None:
        self._call(tool, data.draw(argument_strategy(tool, self.known)))

    @rule()
    def reset_returns_to_the_template(self) -> None:
        self.session.reset()
        assert self.session.state_hash() == FS.session(seed=3).state_hash()
        self.known = known_paths(self.session)

    @invariant()
    def the_tree_and_session_stay_consistent(self) -> None:
        assert tree_violations(self.session) == []

    def teardown(self) -> None:
        self.session.close()


FilesystemMachine.TestCase.settings = settings(
    max_examples=25, stateful_step_count=25, deadline=None
)
TestFilesystemMachine = FilesystemMachine.TestCase


# ------------------------------------------------------------- conformance
FUZZ_SAMPLES = ["~", "..", "/", "~/Documents", "/home/nobody/x", "n_00001", "*.txt", "755"]

TestConformance = conformance_suite("filesystem", samples=FUZZ_SAMPLES, invariants=tree_violations)


def test_free_form_required_parameters_have_examples() -> None:
    for tool in FS.visible_tools():
        for p in tool.params:
            free_form = p.entity is None and p.annotation in (str, int)
            drawn = p.name in tool.examples or p.name in tool.values
            assert not (p.required and free_form) or drawn, (tool.name, p.name)


def test_example_values_and_entity_records_ground_calls_that_succeed() -> None:
    session = FS.session(seed=5)
    rng = random.Random(0)
    ctx = session.context()
    for tool, param in [("mkdir", "path"), ("touch", "path"), ("write_file", "path")]:
        for _ in range(3):
            value = FS.tools[tool].examples[param](ctx, rng)
            session.rollback()
            args = {param: value, "content": "hello"} if tool == "write_file" else {param: value}
            result = session.call(tool, args)
            assert result.ok or result.error_kind == ErrorKind.CONFLICT, result.message
    for record in session.list_entities("file")[:40]:
        assert session.call("cat", {"path": record["path"]}).ok
        hit = session.call(
            "grep", {"pattern": record["pattern"], "path": record["path"], "fixed": True}
        )
        assert hit.content["count"] >= 1
    for record in session.list_entities("directory"):
        assert session.call("ls", {"path": record["path"]}).ok


@pytest.mark.parametrize("seed", [0, 1, 2, 7, 42])
def test_sampled_homes_are_realistic_and_consistent(seed: int) -> None:
    session = FS.session(seed=seed)
    assert tree_violations(session) == []
    files = session.list_entities("file")
    dirs = session.list_entities("directory")
    assert len(files) >= 150 and len(dirs) >= 30
    exts = Counter(f["extension"] for f in files)
    assert {"py", "md", "jpg", "log", "csv"} <= set(exts) or {"js", "go"} & set(exts)
    who = session.call("whoami", {}).content
    assert who["cwd"] == who["home"] == f"/home/{who['user']}"


def test_a_large_size_samples_a_larger_consistent_home() -> None:
    """Sizes past the trip places there are (12) sample too: each year's photo folders are
    every place, not a crash."""
    small, large = FS.session(seed=3, size=1), FS.session(seed=3, size=12)
    assert tree_violations(large) == []
    assert len(large.list_entities("file")) > 3 * len(small.list_entities("file"))


# ------------------------------------------------------------ behaviour
@pytest.fixture
def session() -> Session:
    return FS.session(seed=7)


def call(session: Session, tool: str, **args: Any) -> Any:
    result = session.call(tool, args)
    assert result.ok, result.message
    return result.content


def error(session: Session, tool: str, **args: Any) -> tuple[ErrorKind | None, str]:
    before = session.state_hash()
    result = session.call(tool, args)
    assert not result.ok, f"{tool}{args} should fail"
    assert session.state_hash() == before
    return result.error_kind, result.message


def test_paths_resolve_like_a_shell_relative_to_the_stored_cwd(session) -> None:
    home = call(session, "pwd")["cwd"]
    call(session, "cd", path="Documents/Work")
    assert call(session, "pwd")["cwd"] == f"{home}/Documents/Work"
    assert call(session, "realpath", path="../../Pictures/.")["path"] == f"{home}/Pictures"
    assert call(session, "realpath", path="~/Projects/../Music")["path"] == f"{home}/Music"
    assert call(session, "realpath", path="/../../etc//hosts")["path"] == "/etc/hosts"
    assert call(session, "ls", path="..")["path"] == f"{home}/Documents"
    call(session, "cd", path="-")
    assert call(session, "pwd")["cwd"] == home
    # The cwd is state: a fresh copy of this session's bytes keeps it.
    call(session, "cd", path="/tmp")
    clone = FS.session(seed=7)
    clone.restore(session.snapshot())
    assert call(clone, "pwd")["cwd"] == "/tmp"
    assert clone.state_hash() == session.state_hash() != FS.session(seed=7).state_hash()


def test_errors_read_like_a_shell_and_say_what_to_do(session) -> None:
    home = call(session, "pwd")["cwd"]
    kind, msg = error(session, "cd", path="Documens")
    assert kind == ErrorKind.NOT_FOUND
    assert msg.startswith(f"cd: no such file or directory: {home}/Documens")
    assert "'Documents'" in msg
    kind, msg = error(session, "rm", path="Documents")
    assert kind == ErrorKind.PRECONDITION_FAILED
    assert msg.startswith(f"rm: cannot remove '{home}/Documents': Is a directory")
    assert "recursive=true" in msg
    kind, msg = error(session, "cat", path="Pictures")
    assert "Is a directory" in msg
    kind, msg = error(session, "cd", path="notes.txt")
    assert kind == ErrorKind.PRECONDITION_FAILED and "not a directory" in msg
    kind, msg = error(session, "rmdir", path="Documents")
    assert "Directory not empty" in msg
    kind, _ = error(session, "mkdir", path="Documents")
    assert kind == ErrorKind.CONFLICT


def test_read_only_files_and_directories_are_protected_until_chmod(session) -> None:
    taxes = "~/Documents/Finance/taxes"
    returns = call(session, "ls", path=taxes)["entries"]
    target = f"{taxes}/{returns[0]}"
    kind, msg = error(session, "append_file", path=target, content="amended")
    assert kind == ErrorKind.PERMISSION_DENIED and "chmod u+w" in msg
    kind, _ = error(session, "touch", path=f"{taxes}/new.txt")
    assert kind == ErrorKind.PERMISSION_DENIED
    kind, _ = error(session, "mv", source=target, destination="~/Desktop")
    assert kind == ErrorKind.PERMISSION_DENIED
    call(session, "chmod", path=taxes, mode="u+w")
    kind, msg = error(session, "rm", path=target)
    assert "write-protected" in msg and "force=true" in msg
    call(session, "chmod", path=target, mode="644")
    size = call(session, "append_file", path=target, content="amended")["size"]
    assert call(session, "stat", path=target)["size"] == size
    assert call(session, "cat", path=target)["content"].endswith("amended\n")
    call(session, "touch", path=f"{taxes}/new.txt")
    # Nobody but root may change root's files, and unreadable files stay unreadable.
    kind, _ = error(session, "chmod", path="/etc/hosts", mode="666")
    assert kind == ErrorKind.PERMISSION_DENIED
    kind, _ = error(session, "cat", path="/etc/shadow")
    assert kind == ErrorKind.PERMISSION_DENIED
    kind, _ = error(session, "cd", path="/root")
    assert kind == ErrorKind.PERMISSION_DENIED


def test_the_current_directory_cannot_be_removed_from_under_the_session(session) -> None:
    call(session, "mkdir", path="scratch/inner", parents=True)
    call(session, "cd", path="scratch/inner")
    kind, msg = error(session, "rm", path="~/scratch", recursive=True)
    assert kind == ErrorKind.PRECONDITION_FAILED and "cd somewhere outside" in msg
    kind, _ = error(session, "rmdir", path=".")
    assert kind == ErrorKind.PRECONDITION_FAILED
    # Moving an ancestor carries the cwd along, as a real process's cwd follows the inode.
    call(session, "mv", source="~/scratch", destination="~/Desktop")
    assert call(session, "pwd")["cwd"].endswith("/Desktop/scratch/inner")
    call(session, "cd", path="~")
    removed = call(session, "rm", path="Desktop/scratch", recursive=True)
    assert removed["count"] == 2
    kind, msg = error(session, "cd", path="-")
    assert kind == ErrorKind.PRECONDITION_FAILED and "OLDPWD" in msg


def test_pushd_and_popd_keep_a_stack_in_the_state(session) -> None:
    home = call(session, "pwd")["cwd"]
    call(session, "pushd", path="/tmp")
    call(session, "pushd", path="~/Pictures")
    stack = [e["path"] for e in call(session, "dirs")["stack"]]
    assert stack == [f"{home}/Pictures", "/tmp", home]
    assert call(session, "popd")["cwd"] == "/tmp"
    assert call(session, "popd")["cwd"] == home
    kind, msg = error(session, "popd")
    assert kind == ErrorKind.PRECONDITION_FAILED and "stack empty" in msg


def test_copies_and_moves_follow_cp_and_mv_semantics(session) -> None:
    home = call(session, "pwd")["cwd"]
    kind, msg = error(session, "cp", source="Documents/Work", destination="Desktop")
    assert "recursive=true" in msg
    made = call(session, "cp", source="Documents/Work", destination="Desktop", recursive=True)
    assert made["destination"] == f"{home}/Desktop/Work"
    original = call(session, "du", path="Documents/Work")
    assert call(session, "du", path="Desktop/Work")["bytes"] == original["bytes"]
    kind, _ = error(session, "cp", source="Documents", destination="Documents/Work", recursive=True)
    assert kind == ErrorKind.PRECONDITION_FAILED
    call(session, "write_file", path="a.txt", content="alpha")
    call(session, "write_file", path="b.txt", content="beta")
    call(session, "mv", source="a.txt", destination="b.txt")
    assert call(session, "cat", path="b.txt")["content"] == "alpha\n"
    assert call(session, "exists", path="a.txt")["exists"] is False
    kind, _ = error(session, "rename", path="b.txt", new_name="todo.md")
    assert kind == ErrorKind.CONFLICT
    assert call(session, "diff", path1="b.txt", path2="b.txt")["identical"]


def test_edits_keep_sizes_equal_to_content_length(session) -> None:
    call(session, "write_file", path="list.txt", content="b\na\nb")
    call(session, "insert_lines", path="list.txt", line_number=1, text="top")
    call(session, "append_file", path="list.txt", content="z")
    call(session, "replace_in_file", path="list.txt", find="b", replace="bee")
    assert call(session, "delete_lines", path="list.txt", start=3)["deleted"] == ["a"]
    assert call(session, "cat", path="list.txt")["content"] == "top\nbee\nbee\nz\n"
    assert call(session, "wc", path="list.txt") == {
        "path": call(session, "realpath", path="list.txt")["path"],
        "lines": 4,
        "words": 4,
        "bytes": 14,
    }
    assert call(session, "uniq", path="list.txt", count=True)["lines"][1] == {
        "count": 2,
        "line": "bee",
    }
    assert call(session, "sort", path="list.txt", reverse=True)["lines"][0] == "z"
    assert tree_violations(session) == []


def test_search_tools_find_what_the_sampler_put_there(session) -> None:
    logs = call(session, "find", path="~/Projects", name="*.log", type="f")
    assert logs["count"] >= 8 and all(p.endswith(".log") for p in logs["matches"])
    errors = call(session, "grep", pattern="ERROR", path="~/Projects", recursive=True)
    assert errors["count"] > 0 and set(errors["files"]) <= set(logs["matches"])
    dupes = call(session, "find_duplicates", path="~")["groups"]
    assert any(any("/Downloads/" in p for p in g["paths"]) for g in dupes)
    photos = call(session, "find_by_extension", extension="JPG", path="~/Pictures")
    assert photos["count"] >= 20
    kind, msg = error(session, "grep", pattern="(", path="notes.txt")
    assert kind == ErrorKind.BAD_ARGUMENTS and "fixed=true" in msg


# ------------------------------------------------------------------- tasks
def test_the_hand_written_tasks_cover_chains_turns_clarify_and_abstain() -> None:
    tasks = [t for t in prove_gym.get_registry().tasks("filesystem") if is_hand_written(t)]
    assert 3 <= len(tasks) <= 5
    kinds = {t.kind for t in tasks} | {turn.kind for t in tasks for turn in t.turns}
    assert {"normal", "clarify", "abstain"} <= kinds
    assert any(len(t.turns) > 1 for t in tasks)
    assert any(s.depends_on for t in tasks for s in t.steps)


# ------------------------------------------------------------ hostile input
def test_grep_matches_a_catastrophic_pattern_in_linear_time(session) -> None:
    call(session, "write_file", path="~/slow.txt", content=("a" * 26 + "!\n") * 20)
    began = time.perf_counter()
    found = call(session, "grep", pattern=r"^(\w+\s?)*$", path="~/slow.txt")
    assert found["count"] == 0
    assert time.perf_counter() - began < 15  # Python's re backtracks for hours here


def test_grep_refuses_what_linear_time_matching_cannot_do_by_name(session) -> None:
    kind, message = error(session, "grep", pattern=r"(\w+) \1", path="~", recursive=True)
    assert kind == ErrorKind.BAD_ARGUMENTS and "backreferences" in message
    kind, message = error(session, "grep", pattern=r"foo(?=bar)", path="~", recursive=True)
    assert kind == ErrorKind.BAD_ARGUMENTS and "lookahead" in message
    kind, message = error(session, "grep", pattern="(x{1000}){1000}", path="~", recursive=True)
    assert kind == ErrorKind.BAD_ARGUMENTS and "too large" in message
    assert call(session, "grep", pattern=r"(\w+) \1", path="~", recursive=True, fixed=True)


@settings(max_examples=200, deadline=None)
@given(
    pattern=st.text(alphabet="ab.*?[]!-^\\é", max_size=8),
    name=st.text(alphabet="ab.*?[]!-^\\é", max_size=8),
)
def test_name_patterns_match_exactly_like_fnmatch(pattern: str, name: str) -> None:
    assert bool(compile_glob(pattern).fullmatch(name)) == fnmatch.fnmatchcase(name, pattern)


def test_find_and_move_matching_do_not_grow_fnmatchs_cache(session) -> None:
    before = fnmatch._compile_pattern.cache_info().currsize  # type: ignore[attr-defined]
    for i in range(50):
        call(session, "find", path="~", name=f"*{i}*.txt")
        session.call("move_matching", {"pattern": f"zz{i}*", "destination": "/tmp"})
    assert fnmatch._compile_pattern.cache_info().currsize == before  # type: ignore[attr-defined]
    kind, _ = error(session, "find", path="~", name="*a" * 200)
    assert kind == ErrorKind.BAD_ARGUMENTS  # longer than a file name (255) may be


def test_a_tree_deeper_than_the_recursion_limit_works_with_every_walking_tool(session) -> None:
    deep = "~/deep/" + "/".join(["d"] * 1500)
    made = call(session, "mkdir", path=deep, parents=True)
    assert len(made["created"]) == 1501
    for tool, args in [
        ("find", {"path": "~", "name": "d"}),
        ("du", {"path": "~/deep", "per_entry": True}),
        ("grep", {"pattern": "x", "path": "~/deep", "recursive": True}),
        ("tree", {"path": "~/deep", "max_depth": 6}),
        ("chmod", {"path": "~/deep", "mode": "755", "recursive": True}),
        ("cp", {"source": "~/deep", "destination": "~/deep2", "recursive": True}),
        ("rm", {"path": "~/deep2", "recursive": True}),
    ]:
        result = session.call(tool, args)
        assert result.ok, (tool, result.message)
    assert call(session, "find", path="~/deep", type="d")["count"] == 1501
    too_long = "~/" + "d/" * 2045  # under 4096 characters as sent, over once ~ expands
    kind, message = error(session, "mkdir", path=too_long, parents=True)
    assert kind == ErrorKind.BAD_ARGUMENTS and "File name too long" in message
    assert not tree_violations(session)


def test_a_whitespace_only_file_is_no_entity_problem(session) -> None:
    call(session, "write_file", path="~/blank.txt", content="   \n\t\n")
    files = session.list_entities("file")  # raised IndexError
    assert files and not any(f["path"].endswith("/blank.txt") for f in files)


def test_replace_in_file_refuses_a_result_too_large_before_building_it(session) -> None:
    call(session, "write_file", path="~/as.txt", content="a" * 10_000)
    call(session, "append_file", path="~/as.txt", content="a" * 10_000)
    tracemalloc.start()
    try:
        kind, message = error(
            session, "replace_in_file", path="~/as.txt", find="a", replace="b" * 10_000
        )
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert kind == ErrorKind.BAD_ARGUMENTS and "File too large" in message
    assert peak < 20_000_000  # the replaced text would be 200 MB


def test_the_disk_fills_up_instead_of_growing_without_bound(session) -> None:
    call(session, "write_file", path="~/big.txt", content="x" * 9_990)
    call(session, "replace_in_file", path="~/big.txt", find="x", replace="x" * 100)
    result = None
    for i in range(40):
        result = session.call("cp", {"source": "~/big.txt", "destination": f"~/big{i}.txt"})
        if not result.ok:
            break
    assert result is not None and result.error_kind == ErrorKind.PRECONDITION_FAILED
    assert "No space left on device" in result.message
    assert not tree_violations(session)
