"""Env versions that change what a tool does: the version a session plays reaches the tools
(``ctx.env_version``), a task names the version it was recorded under, ``prove/<s>-v1``
plays its own tasks, and ``-v0`` keeps its results."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import pytest
from sqlalchemy import Integer, String, bindparam, update
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from prove_gym import EnvVersion, SampleContext, Server, ToolContext, hookimpl
from prove_gym.env.env import ProveEnv
from prove_gym.episode import episode_instructions
from prove_gym.registry import Registry
from prove_gym.server import Entity, Query, Record, TypedDict
from prove_gym.task import Task, TaskError
from prove_gym.workspace import Workspace, gold_replay


class _Base(DeclarativeBase):
    pass


class _Counter(_Base):
    __tablename__ = "counters"
    id: Mapped[str] = mapped_column(String, primary_key=True)
    value: Mapped[int] = mapped_column(Integer)


class CounterOut(TypedDict):
    counter_id: str
    value: int
    env_version: int


BUMP = Query(update(_Counter).where(_Counter.id == bindparam("id")).values(value=bindparam("v")))


def _sample(ctx: SampleContext) -> None:
    ctx.db.add(_Counter(id="c_1", value=0))


def _server(tmp_path: Path) -> Server:
    """``tally``: ``bump`` adds 1 in ``-v0`` and 10 from ``-v1`` (it reads ctx.env_version)."""
    v0_tasks, v1_tasks = tmp_path / "tasks.jsonl", tmp_path / "tasks_v1.jsonl"
    server = Server(
        "tally",
        version="2",
        base=_Base,
        sampler=_sample,
        instructions="Counters count.",
        tasks_file=v0_tasks,
        env_versions=[
            EnvVersion(
                1,
                "bump adds ten",
                tasks_file=v1_tasks,
                instructions="A bump adds ten from now on.",
            ),
            EnvVersion(2, "says more", instructions="Version two speaks."),
        ],
    )

    @server.entity("counter", key="counter_id", model=_Counter, not_found="Try c_1.")
    def counters(ctx: ToolContext) -> list[dict[str, Any]]:
        return [{"counter_id": "c_1"}]

    @server.tool(writes=True, returns="counter", phrasings=["Bump {counter_id}", "Add to it"])
    def bump(
        ctx: ToolContext, counter_id: Annotated[Record[_Counter], Entity("counter")]
    ) -> CounterOut:
        """Add to a counter.

        Args:
            counter_id: The counter, such as "c_1".
        """
        value = counter_id.value + (10 if ctx.env_version >= 1 else 1)
        ctx.sql.run(BUMP, id=counter_id.id, v=value)
        return {"counter_id": counter_id.id, "value": value, "env_version": ctx.env_version}

    def task(id: str, **extra: Any) -> Task:
        step = {"id": "s1", "name": "bump", "arguments": {"counter_id": "c_1"}}
        turn = {"user": "Bump c_1.", "steps": [step]}
        return Task.from_json({"id": id, "servers": ["tally"], "turns": [turn], **extra})

    def recorded(t: Task) -> str:
        return t.model_copy(update={"final_state_hash": gold_replay(t, registry)[1]}).to_json()

    registry = _registry(server)
    v0_tasks.write_text(recorded(task("tally-1")) + "\n")
    v1_tasks.write_text(recorded(task("tally-1", env_versions={"tally": 1})) + "\n")
    return server


def _registry(server: Server) -> Registry:
    class Plugin:
        @hookimpl
        def prove_gym_servers(self) -> list[Server]:
            return [server]

    registry = Registry(load_entrypoints=False)
    registry.register(Plugin(), name=server.name)
    return registry


@pytest.fixture
def tally(tmp_path: Path) -> tuple[Server, Registry]:
    server = _server(tmp_path)
    return server, _registry(server)


def test_a_session_plays_one_version_and_its_tools_see_it(tally: tuple[Server, Registry]) -> None:
    server, _ = tally
    v0, v1 = server.session(), server.session(env_version=1)
    assert v0.call("bump", {"counter_id": "c_1"}).content == {
        "counter_id": "c_1",
        "value": 1,
        "env_version": 0,
    }
    assert v1.call("bump", {"counter_id": "c_1"}).content["value"] == 10
    assert v1.context().env_version == 1 and v1.fork().env_version == 1
    assert v1.fork().call("bump", {"counter_id": "c_1"}).content["value"] == 20
    with pytest.raises(ValueError, match="no env version 3"):
        server.session(env_version=3)


def test_a_task_replays_under_the_version_it_names(tally: tuple[Server, Registry]) -> None:
    _, registry = tally
    [v0] = registry.tasks("tally")
    [v1] = registry.tasks("tally", 1)
    assert (v0.env_version("tally"), v1.env_version("tally")) == (0, 1)
    records0, hash0 = gold_replay(v0, registry)
    records1, hash1 = gold_replay(v1, registry)
    assert [r.result.content["value"] for r in (*records0, *records1)] == [1, 10]
    assert (hash0, hash1) == (v0.final_state_hash, v1.final_state_hash) and hash0 != hash1
    with pytest.raises(TaskError, match="env version 3"):
        Workspace(v0.model_copy(update={"env_versions": {"tally": 3}}), registry)


def test_a_v0_task_keeps_its_bytes_and_a_versioned_one_round_trips(
    tally: tuple[Server, Registry],
) -> None:
    _, registry = tally
    [v0] = registry.tasks("tally")
    [v1] = registry.tasks("tally", 1)
    assert "env_versions" not in json.loads(v0.to_json())  # datasets of -v0 tasks: same bytes
    assert json.loads(v1.to_json())["env_versions"] == {"tally": 1}
    assert Task.from_json(v1.to_json()) == v1
    with pytest.raises(TaskError, match="must be >= 0"):
        Task.from_json({**json.loads(v1.to_json()), "env_versions": {"tally": -1}})


def test_the_v1_env_plays_its_own_tasks_under_v1_and_v0_keeps_its_results(
    tally: tuple[Server, Registry],
) -> None:
    from prove_gym.eval import OraclePolicy

    _, registry = tally
    rewards = {}
    for version in (0, 1):
        env = ProveEnv("tally", registry=registry, env_version=version)
        assert [t.env_version("tally") for t in env.tasks] == [version]
        _, info = env.reset(seed=0)
        assert ("A bump adds ten" in info["instructions"]) == (version == 1)
        episode = env.episode
        assert episode is not None
        agent = OraclePolicy().start(episode)
        while not episode.done:
            episode.step(agent.act(episode))
        assert [r.result.content["value"] for r in episode.trajectory] == [
            1 if version == 0 else 10
        ]
        assert episode.breakdown is not None
        rewards[version] = (episode.breakdown.total, episode.breakdown.max_total)
        env.close()
    assert rewards[0] == rewards[1] and rewards[1][0] == rewards[1][1]


def test_an_env_stamps_unversioned_tasks_and_refuses_another_versions(
    tally: tuple[Server, Registry],
) -> None:
    _, registry = tally
    [v0] = registry.tasks("tally")
    env = ProveEnv("tally", tasks=[v0], registry=registry, env_version=1)
    env.reset(options={"task_index": 0})
    assert env.task is not None and env.task.env_versions == {"tally": 1}
    pinned = v0.model_copy(update={"env_versions": {"tally": 0}})
    with pytest.raises(ValueError, match="recorded for prove/tally-v0"):
        env.reset(options={"task": pinned})
    assert env.task.env_versions == {"tally": 1}  # the env is still usable
    env.close()
    assert "A bump" not in episode_instructions(v0, registry)
    v1 = episode_instructions(registry.tasks("tally", 1)[0], registry)
    assert "A bump adds ten" in v1 and "Version two" not in v1
    v2 = episode_instructions(v0.model_copy(update={"env_versions": {"tally": 2}}), registry)
    assert v2.index("Counters count.") < v2.index("A bump adds ten") < v2.index("Version two")


def test_tasks_command_checks_and_rehashes_every_versions_file(
    tally: tuple[Server, Registry], monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    from prove_gym.cli import tasks_cmd

    server, registry = tally
    monkeypatch.setattr("prove_gym.get_registry", lambda: registry)
    assert tasks_cmd.run(tasks_cmd.build_args("tally")) == 0
    out = capsys.readouterr().out
    assert "tally-v0 (tasks.jsonl): every" in out and "tally-v1 (tasks_v1.jsonl): every" in out
    path = server.env_versions[1].tasks_file
    assert path is not None
    good = path.read_text()
    row = json.loads(good)
    path.write_text(json.dumps({**row, "final_state_hash": "0" * 64}) + "\n")
    assert tasks_cmd.run(tasks_cmd.build_args("tally")) == 1
    assert tasks_cmd.run(tasks_cmd.build_args("tally", rehash=True)) == 0
    assert json.loads(path.read_text()) == json.loads(good)
    path.write_text(json.dumps({**row, "env_versions": {}}) + "\n")  # a -v0 task in v1's file
    assert tasks_cmd.run(tasks_cmd.build_args("tally")) == 1
    assert "not recorded for v1" in capsys.readouterr().out
