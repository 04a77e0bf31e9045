"""Output files: task JSONL split by seed, OpenRLHF and TRL layouts, report."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import gymnasium
import pytest

import prove_gym
from prove_gym import Task
from prove_gym.synth import SynthResult, build_report, format_report, write_dataset


@pytest.fixture(scope="module")
def written(dataset: SynthResult, tmp_path_factory) -> tuple[Path, dict, SynthResult]:
    # a slice keeps the env resets cheap; every server is still in it
    small = SynthResult(
        config=dataset.config,
        servers=dataset.servers,
        tasks=dataset.tasks[::5],
        drops=dataset.drops,
        candidates=dataset.candidates,
        blocks=dataset.blocks,
    )
    out = tmp_path_factory.mktemp("data")
    report = write_dataset(small, out)
    return out, report, small


def lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_tasks_are_split_by_state_seed_and_round_trip(written) -> None:
    out, _, small = written
    train = [Task.from_json(row) for row in lines(out / "train.jsonl")]
    test = [Task.from_json(row) for row in lines(out / "test.jsonl")]
    assert len(train) + len(test) == len(small.tasks)

    def states(tasks: list[Task]) -> set[tuple[str, int, int | None]]:
        return {(t.server, t.seed, t.size) for t in tasks}

    assert states(train).isdisjoint(states(test))
    assert all(t.meta["split"] == "test" for t in test)
    assert all(t.meta["split"] == "train" for t in train)
    by_id = {t.id: t for t in small.tasks}
    for task in train + test:
        assert task == by_id[task.id]
        assert task.final_state_hash


def test_openrlhf_rows_open_exactly_as_the_env_does(written) -> None:
    out, _, _ = written
    rows = lines(out / "openrlhf.jsonl") + lines(out / "openrlhf.test.jsonl")
    for row in rows[:: max(1, len(rows) // 12)]:
        task = Task.from_json(row["label"])
        env = gymnasium.make(prove_gym.env_id(task.server))
        _, info = env.reset(options={"task": task})
        env.close()
        assert row["prompt"] == info["messages"][:2]
        assert (
            row["prompt"][0]["role"] == "system"
            and row["prompt"][1]["content"] == task.turns[0].user
        )


def test_trl_rows_carry_the_first_user_turn_the_task_and_its_server(written) -> None:
    out, _, small = written
    rows = lines(out / "trl.jsonl") + lines(out / "trl.test.jsonl")
    assert len(rows) == len(small.tasks)
    for row in rows:
        task = Task.from_json(row["task"])
        assert row["prompt"] == [{"role": "user", "content": task.turns[0].user}]
        assert row["environment"] == task.server  # TRL's column for a dict of factories


@pytest.mark.trainer
def test_the_jsonl_files_load_as_a_hugging_face_dataset(written, tmp_path: Path) -> None:
    datasets = pytest.importorskip("datasets")
    out, _, _ = written
    path, cache = str(out / "trl.jsonl"), str(tmp_path / "hf")
    loaded = datasets.load_dataset("json", data_files=path, split="train", cache_dir=cache)
    assert loaded.num_rows == len(lines(out / "trl.jsonl"))
    assert set(loaded.column_names) == {"prompt", "task", "environment"}


def test_the_report_counts_what_was_written(written) -> None:
    out, report, small = written
    on_disk = json.loads((out / "report.json").read_text(encoding="utf-8"))
    assert on_disk == report
    assert report["totals"]["tasks"] == len(small.tasks)
    assert sum(report["servers"].values()) == len(small.tasks)
    tools = Counter((t.server, s.name) for t in small.tasks for s in t.scored_steps)
    for server, counts in report["tools"].items():
        for tool, n in counts.items():
            assert tools[(server, tool)] == n
        visible = {t.name for t in prove_gym.get_server(server).visible_tools()}
        assert set(counts) | set(report["unused_tools"][server]) == visible
    assert sum(report["chain_lengths"].values()) == len(small.tasks)
    # levels are those of tool-calling tasks; the abstention tasks are counted on their own
    whole = [t for t in small.tasks if t.meta["knobs"].get("abstention")]
    assert all(t.kind == "abstain" and not t.steps for t in whole)
    assert sum(report["abstention_tasks"].values()) == len(whole)
    assert sum(report["info_levels"].values()) == len(small.tasks) - len(whole)
    assert report["totals"]["distinct_states"] == len(
        {(t.server, t.seed, t.size) for t in small.tasks}
    )
    assert report["drop_reasons"]  # step_failed, error_rate, ... grouped
    table = format_report(report, seconds=2.0)
    for server in small.servers:
        assert server in table
    assert "info level" in table and "knobs" in table and "dropped" in table
    assert "abstention" in table and "distinct initial states" in table and "text check" in table


def test_every_tool_of_a_small_server_is_used_in_the_shared_dataset(dataset: SynthResult) -> None:
    report = build_report(dataset)
    for server, unused in report["unused_tools"].items():
        tools = len(prove_gym.get_server(server).visible_tools())
        assert len(unused) <= tools // 10, (server, unused)


def test_every_file_interleaves_the_servers_so_a_capped_trainer_sees_them_all(written) -> None:
    out, _, small = written
    train = [Task.from_json(row) for row in lines(out / "train.jsonl")]
    servers = sorted({t.server for t in train})  # a server's few states may all be test ones
    assert len(servers) >= len(small.servers) - 2
    rows = [Task.from_json(row["label"]) for row in lines(out / "openrlhf.jsonl")]
    assert [t.id for t in rows] == [t.id for t in train]  # one order for every layout
    # the first round holds one task of every server, however unequal their counts
    assert sorted(t.server for t in train[: len(servers)]) == servers
    assert [t.id for t in train] != sorted(t.id for t in train)  # shuffled, not grouped


def test_the_training_order_is_a_function_of_the_tasks_and_the_seed(dataset: SynthResult) -> None:
    from prove_gym.synth.export import training_order

    tasks = dataset.tasks
    order = [t.id for t in training_order(tasks, 3)]
    assert order == [t.id for t in training_order(list(reversed(tasks)), 3)]
    assert sorted(order) == sorted(t.id for t in tasks)
    assert order != [t.id for t in training_order(tasks, 4)]


@pytest.mark.trainer
def test_the_folder_loads_by_its_dataset_card(written, tmp_path: Path) -> None:
    datasets = pytest.importorskip("datasets")
    out, report, small = written
    card = (out / "README.md").read_text(encoding="utf-8")
    assert card.startswith("---\nconfigs:")
    # the default is a configuration whose splits share one schema (a task as one string)
    assert "- config_name: trl\n  default: true\n" in card
    assert f"{report['recovering_tasks']} (" in card and "whole abstention tasks" in card
    for config, n_columns in (("trl", 3), ("openrlhf", 2)):
        # a cache of its own: the shared one is keyed by the folder's path, which a later
        # pytest run can give another dataset
        loaded = datasets.load_dataset(str(out), config, cache_dir=str(tmp_path / "hf"))
        assert loaded["train"].num_rows == len(small.split("train"))
        assert loaded["test"].num_rows == len(small.split("test"))
        assert len(loaded["train"].column_names) == n_columns
