"""Abstention labels that reward the right behaviour (issue #43, item 5) and every tool in
gold (item 8): a hidden tool is never one an offered tool stands in for; irrelevant
requests come from a server-aware pool; a 1,000-task run calls every tool."""

from __future__ import annotations

import dataclasses
import json

import pytest

from prove_gym import get_registry
from prove_gym.synth import SynthConfig, SynthResult, build_report, synthesize
from prove_gym.synth.lint import lint
from prove_gym.synth.render import IRRELEVANT


def _hidden(task_json: dict, server: str) -> list[str]:
    offered = set(task_json["tools"])
    return [
        t.name
        for t in get_registry().get_server(server).visible_tools()
        if t.qualified_name not in offered
    ]


@pytest.fixture(scope="module")
def hiding() -> SynthResult:
    """Filesystem and calendar, whose tools stand in for each other the most, with a
    hidden tool in most tasks."""
    cfg = SynthConfig(
        servers=("filesystem", "calendar"),
        n=60,
        seed=5,
        missing_tool_rate=0.9,
        abstention_rate=0.3,
        distractor_rate=0.0,
    )
    return synthesize(cfg)


def test_a_hidden_tool_never_has_an_offered_stand_in(hiding: SynthResult) -> None:
    registry = get_registry()
    hidden = []
    for task in hiding.tasks:
        data = json.loads(task.to_json())
        (server,) = task.servers
        for name in _hidden(data, server):
            hidden.append(name)
            assert not registry.get_server(server).stand_ins(name), (task.id, name)
    assert len(hidden) >= 10  # the knob was drawn: tools were hidden, those without stand-ins
    report = lint(json.loads(t.to_json()) for t in hiding.tasks)
    assert report.counts()["hidden_tool_stood_in"] == 0


def test_the_tools_with_a_stand_in_are_the_ones_never_hidden() -> None:
    filesystem = get_registry().get_server("filesystem")
    assert filesystem.stand_ins("head") == ["cat", "read_lines"]
    assert filesystem.stand_ins("touch") == ["write_file", "append_file"]
    assert get_registry().get_server("calendar").stand_ins("get_free_busy") == ["list_events"]


def test_the_irrelevant_pool_is_server_aware_and_holds_200_requests() -> None:
    registry = get_registry()
    registry.load_all()
    own = {s: server.out_of_scope for s, server in registry.servers.items()}
    assert all(len(asks) >= 10 for asks in own.values()), {s: len(a) for s, a in own.items()}
    pool = {a for asks in own.values() for a in asks} | set(IRRELEVANT)
    assert len(pool) >= 200


def test_irrelevant_turns_ask_what_a_user_of_that_server_might(dataset: SynthResult) -> None:
    """Some irrelevant turns of a server's tasks are its own out-of-scope requests, and no
    server's requests are asked in another server's tasks."""
    registry = get_registry()
    owner = {a: s for s, server in registry.servers.items() for a in server.out_of_scope}
    asked: dict[str, set[str]] = {}
    for task in dataset.tasks:
        for turn in task.turns:
            if turn.kind == "abstain" and turn.user in owner:
                assert owner[turn.user] == task.servers[0], (task.id, turn.user)
                asked.setdefault(task.servers[0], set()).add(turn.user)
    assert len(asked) >= 15 and sum(map(len, asked.values())) >= 60


RARELY_REACHED = {"filesystem": ["rmdir"]}
"""Tools a 1,000-task run may leave out, and why (docs/synthesis.md, "Limits"): a sampled
file system has no empty directory, so ``rmdir`` needs a chain that empties one first."""


def test_every_tool_of_every_server_is_in_gold_in_a_1000_task_run(
    dataset: SynthResult,
) -> None:
    """The session's dataset: 1,000 tasks, 50 per server, at the default mix."""
    report = build_report(dataset)
    unused = {s: u for s, u in report["unused_tools"].items() if u}
    assert all(set(u) <= set(RARELY_REACHED.get(s, ())) for s, u in unused.items()), unused


def test_coverage_blocks_swap_in_a_task_for_a_tool_no_gold_calls(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """At this seed the file system's quota of 40 tasks (one a tool) leaves some tools out
    of every gold; the blocks run past the quota bring some of them in, each in place of a
    task of the same kind, and change nothing else: the count, the mix and the ids. (Which
    tools a quota misses moves with every change to the generator's draws, so the test
    asks for any.)"""
    from prove_gym.synth import pipeline
    from prove_gym.synth.pipeline import mix_kind

    cfg = SynthConfig(servers=("filesystem",), n=40, seed=51)  # 5, 11, 22, 46, 48, 49 as synth grew
    monkeypatch.setattr(pipeline, "COVERAGE_BLOCKS", 0)
    before = synthesize(cfg)
    monkeypatch.undo()
    after = synthesize(cfg)
    unused_before = build_report(before)["unused_tools"]["filesystem"]
    unused_after = build_report(after)["unused_tools"]["filesystem"]
    assert set(unused_after) < set(unused_before)  # some tool brought in, none lost
    assert len(after.tasks) == len(before.tasks) == cfg.n
    assert sorted(map(mix_kind, after.tasks)) == sorted(map(mix_kind, before.tasks))
    assert [t.id for t in after.tasks] == [t.id for t in before.tasks]
    assert after.drops["coverage:no_unused_tool"] > 0
    swapped = [  # the split is chosen from all of a server's tasks: it may move
        a for a, b in zip(after.tasks, before.tasks, strict=True) if a.turns != b.turns
    ]
    assert swapped and all(any(s.name in unused_before for s in t.scored_steps) for t in swapped)
    # the coverage blocks, like any, depend on the flags alone: two workers, the same bytes
    two = synthesize(dataclasses.replace(cfg, workers=2))
    assert [t.to_json() for t in two.tasks] == [t.to_json() for t in after.tasks]


def test_a_coverage_block_that_reaches_an_unused_tool_is_no_miss() -> None:
    """rmdir needs an empty folder, which only a chain that empties one has: blocks that
    call it and fail keep the search going (two of them in a row used to end it, and
    ``prove-gym synth --servers all --n 1000 --seed 41`` warned "tools never used:
    filesystem: rmdir"); blocks that do not reach it at all still end it."""
    from prove_gym.synth import SynthResult, pipeline
    from prove_gym.synth.generate import BlockResult

    cfg = SynthConfig(servers=("filesystem",), n=1, seed=41)
    collector = pipeline._Collector(cfg, ["filesystem"], SynthResult(cfg, ["filesystem"]))
    unused = collector.unused("filesystem")
    assert "rmdir" in unused
    for block in range(5):
        failed = BlockResult("filesystem", block, ["step_failed:rmdir", "ungroundable:rmdir.path"])
        collector._cover(failed)
        assert collector.misses["filesystem"] == 0
    for block in range(5, 7):
        collector._cover(BlockResult("filesystem", block, ["near_duplicate", "undoes_itself"]))
    assert collector.misses["filesystem"] == 2 == pipeline.COVERAGE_MISSES


def test_a_hidden_tools_request_does_not_undo_what_the_conversation_just_did() -> None:
    """team_chat-2032: a reply posted, then "delete that reply" asked of a hidden tool.
    Were the tool offered, the request would end what the task just made; such a
    conversation is dropped (``hidden_undoes``; two at this seed)."""
    from prove_gym.synth import SynthConfig, synthesize

    result = synthesize(
        SynthConfig(servers=("team_chat", "social_media", "calendar"), n=300, seed=1)
    )
    assert result.drops["hidden_undoes"] > 0
