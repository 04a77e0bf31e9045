"""The reward check's judge and perturbations (``prove-gym reward-check``), on one shipped
calendar task; and the command on a small synthesized set."""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from prove_gym import Task, get_registry
from prove_gym.cli import main
from prove_gym.eval import reward_check
from prove_gym.reward import RewardConfig, score
from prove_gym.synth.ship import is_hand_written


@pytest.fixture(scope="module")
def rv() -> ModuleType:
    return reward_check


@pytest.fixture(scope="module")
def facts(rv: ModuleType, calendar_tasks: dict[str, Task]) -> Any:
    """calendar-002: find_free_slot -> create_event (not idempotent) -> add_reminder on it."""
    return rv.task_facts(calendar_tasks["calendar-002"])


def _run(rv: ModuleType, facts: Any, variant: Any) -> tuple[Any, float, float]:
    """Execute a variant: the judge's verdict, the default reward and its maximum."""
    records, final = rv.execute(facts.task, variant.calls)
    b = score(facts.task, records, config=RewardConfig(), final_state_hash=final)
    return rv.judge(facts, records, final), b.total, b.max_total


def test_oracle_is_correct_and_scores_the_maximum(rv: ModuleType, facts: Any) -> None:
    [oracle] = rv.perturb(facts, "oracle", 5)
    verdict, total, best = _run(rv, facts, oracle)
    assert verdict.correct, verdict.reasons
    assert total == best


def test_a_repeated_create_event_is_judged_wrong(rv: ModuleType, facts: Any) -> None:
    variants = rv.perturb(facts, "duplicate_write", 5)
    [dup] = [v for v in variants if "create_event" in v.label]
    assert not facts.offered["create_event"].idempotent
    assert [c.name for c in dup.calls].count("create_event") == 2
    verdict, _, _ = _run(rv, facts, dup)
    assert not verdict.correct
    assert "final state differs from the gold replay's" in verdict.reasons


def test_swapping_dependent_calls_changes_the_reward(rv: ModuleType, facts: Any) -> None:
    [oracle] = rv.perturb(facts, "oracle", 5)
    _, best, _ = _run(rv, facts, oracle)
    swaps = rv.perturb(facts, "swap_dependent", 5)
    assert swaps
    for variant in swaps:
        assert [c.name for c in variant.calls] != [c.name for c in oracle.calls]
        _, total, _ = _run(rv, facts, variant)
        assert total != best, variant.label


def test_the_judge_rejects_a_call_on_a_clarify_turn(
    rv: ModuleType, calendar_tasks: dict[str, Task]
) -> None:
    facts = rv.task_facts(calendar_tasks["calendar-004"])  # a clarify turn, then two gold calls
    for variant in rv.perturb(facts, "ask_first_violation", 3):
        records, final = rv.execute(facts.task, variant.calls)
        verdict = rv.judge(facts, records, final)
        assert not verdict.correct and "call on clarify turn 0" in verdict.reasons


def test_perturbations_are_deterministic(rv: ModuleType, facts: Any) -> None:
    for family in rv.FAMILIES:
        assert rv.perturb(facts, family, 3) == rv.perturb(facts, family, 3)


def test_roc_auc_counts_ties_as_half(rv: ModuleType) -> None:
    assert rv.roc_auc([0.5, 0.5], [True, False]) == 0.5
    assert rv.roc_auc([0.9, 0.2, 0.4], [True, False, False]) == 1.0
    assert rv.roc_auc([0.1, 0.2], [False, False]) is None


def test_reward_check_reports_families_and_auc_on_a_synthesized_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "data"
    synth = ["synth", "--servers", "calendar,banking", "--n", "12", "--seed", "3", "--no-progress"]
    assert main([*synth, "--out", str(out)]) == 0
    capsys.readouterr()
    check = ["reward-check", str(out), "--variants", "1", "--reward", "state=0.3", "--turns"]
    assert main(check) == 0
    report = capsys.readouterr().out
    assert "Credit per user turn (state=0.3)" in report
    all_turns = next(line for line in report.splitlines() if line.startswith("all turns"))
    assert float(all_turns.split()[-1]) >= 0.9  # turn rewards rank turns by their outcome
    ranking = next(line for line in report.splitlines() if line.startswith("Ranking whole"))
    gap = ranking.rsplit(": ", 1)[1].rstrip(")")
    assert float(gap) < 1e-9  # the turn rewards of every trajectory sum to its reward
    assert "Reward validity: 12 tasks" in report and "train.jsonl, " in report
    for family in ("oracle", "drop_call", "duplicate_write", "wrong_entity_id"):
        assert family in report
    header = next(line for line in report.splitlines() if line.startswith("family"))
    assert header.split()[4] == "state=0.3"  # the chosen config leads every table


def test_reward_check_refuses_a_source_that_is_not_there(tmp_path: Path, capsys) -> None:
    assert main(["reward-check", str(tmp_path / "nothing")]) == 2
    assert "no such file or folder" in capsys.readouterr().err


def test_reward_check_writes_its_json_when_a_call_holds_an_exact_number(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A maps task whose gold never reverse-geocodes gets that read inserted (every offered
    read is, at 20 variants a family), with coordinates a result gave as Decimals: the
    trajectories still go to ``--json``, the number as the exact string the tools write."""
    task = next(
        t
        for t in get_registry().tasks("maps")
        if is_hand_written(t) and t.steps and "reverse_geocode" not in {s.name for s in t.steps}
    )
    source = tmp_path / "one.jsonl"
    source.write_text(task.to_json() + "\n")
    written = tmp_path / "report.json"
    assert main(["reward-check", str(source), "--variants", "20", "--json", str(written)]) == 0
    capsys.readouterr()
    payload = json.loads(written.read_text())
    geocodes = [
        c["arguments"]
        for t in payload["trajectories"]
        for c in t["calls"]
        if c["name"] == "reverse_geocode"
    ]
    assert geocodes and all(isinstance(a["latitude"], str | float) for a in geocodes)
    assert any(isinstance(a["latitude"], str) for a in geocodes)  # it held a Decimal


def test_a_read_the_gold_shows_failing_is_no_answer_to_obtain(rv: ModuleType) -> None:
    """The gold shows a ``cat`` of a file that is not there failing (not_found), then reads
    the one the user meant. Leaving the failing attempt out is right (the reward pays the
    maximum), and the judge agrees; leaving out the answer asked for is still wrong. (With
    ``synth/18``'s first re-shipment, 4 trajectories that left out such an attempt were
    judged wrong for not getting its error back.)"""
    task = Task.from_json(
        {
            "id": "filesystem-judge-attempt",
            "servers": ["filesystem"],
            "seed": 0,
            "size": 1,
            "turns": [
                {
                    "user": "Show me my notes.",
                    "steps": [
                        {"id": "s1", "name": "cat", "arguments": {"path": "~/notes.md"},
                         "expect_error": "not_found"},
                        {"id": "s2", "name": "cat", "arguments": {"path": "~/notes.txt"}},
                    ],
                }
            ],
        }
    )  # fmt: skip
    facts = rv.task_facts(task)
    for dropped, correct in (("s1", True), ("s2", False)):
        variant = next(
            v for v in rv.perturb(facts, "drop_call", 10) if f"drop {dropped} " in v.label
        )
        records, final = rv.execute(facts.task, variant.calls)
        verdict = rv.judge(facts, records, final)
        assert verdict.correct is correct, (dropped, verdict.reasons)
        b = score(facts.task, records, config=RewardConfig(), final_state_hash=final)
        assert (b.total == b.max_total) is correct, (dropped, b.total)
