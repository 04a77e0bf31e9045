"""Task data that is wrong is refused in one line that names the field and what was expected."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from prove_gym import Task, TaskError
from prove_gym.task import load_tasks

GOOD = {
    "id": "t1",
    "servers": ["calendar"],
    "turns": [{"user": "List my calendars.", "steps": [{"id": "s1", "name": "list_calendars"}]}],
}


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({"servers": None}, "servers: Input should be a valid list (got None)"),
        ({"turns": []}, "turns: List should have at least 1 item after validation, not 0"),
        ({"seeed": 3}, "seeed: not a task field"),
        ({"turns": [{"steps": []}]}, "turns.0.user: Field required"),
        ({"size": 0}, "size: Input should be greater than or equal to 1 (got 0)"),
    ],
)
def test_a_malformed_task_is_one_line_naming_the_field(change: dict, expected: str) -> None:
    with pytest.raises(TaskError) as err:
        Task.from_json({**GOOD, **change})
    message = str(err.value)
    assert message == f"not a valid task: {expected}"
    assert "\n" not in message and "pydantic.dev" not in message


def test_a_rule_of_the_task_reads_as_its_own_sentence() -> None:
    bad = {
        **GOOD,
        "turns": [{"user": "x", "steps": [{"id": "s1", "name": "a", "depends_on": ["s0"]}]}],
    }
    with pytest.raises(
        TaskError, match=r"^not a valid task: task 't1': step 's1' depends on \['s0'\]"
    ):
        Task.from_json(bad)


def test_many_errors_are_summarised_with_a_count() -> None:
    with pytest.raises(TaskError, match=r"; and 3 more$"):
        Task.from_json(
            {"a": 1, "b": 2, "c": 3}
        )  # id, servers, turns missing; a, b, c are no fields


@settings(max_examples=80, deadline=None)
@given(st.one_of(st.text(max_size=200), st.binary(max_size=200), st.integers(), st.none()))
def test_any_input_is_a_task_or_a_one_line_task_error(value: object) -> None:
    try:
        Task.coerce(value)  # type: ignore[arg-type]
    except TaskError as exc:
        assert "\n" not in str(exc) and str(exc).startswith("not a valid task")


def test_a_task_file_error_names_the_file_and_the_line(tmp_path: Path) -> None:
    path = tmp_path / "tasks.jsonl"
    path.write_text(
        json.dumps(GOOD) + "\n\n" + '{"id": "t2", "servers": ["calendar"], "turns": [\n'
    )
    with pytest.raises(TaskError, match=rf"^{path}:3: not a valid task: not JSON \("):
        load_tasks(path)
