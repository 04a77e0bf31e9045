"""Information levels and robustness knobs land near their configured rates; flags change them."""

from __future__ import annotations

import random
from collections import Counter

import pytest
from hypothesis import given
from hypothesis import strategies as st

import prove_gym
from prove_gym.synth import SynthConfig, SynthResult, synthesize
from prove_gym.synth.config import OWN_STATE_BLOCKS
from prove_gym.synth.dates import iso_date, iso_datetime, said_dates, said_datetimes, said_minutes
from prove_gym.synth.enums import enum_values, strippable
from prove_gym.synth.generate import ABSTENTION_MARGIN, abstention_due, run_block
from prove_gym.synth.pipeline import MIX_KINDS, mix_kind, mix_targets, quotas
from prove_gym.synth.render import render_value


def share(tasks, predicate) -> float:
    return sum(1 for t in tasks if predicate(t)) / len(tasks)


def test_each_server_holds_the_papers_mix_to_the_whole_task(dataset: SynthResult) -> None:
    """60/20/20 information levels and 8% abstention tasks, as counts of every server."""
    quota = quotas(dataset.config.n, dataset.servers)
    for server in dataset.servers:
        tasks = [t for t in dataset.tasks if t.server == server]
        assert len(tasks) == quota[server]
        assert Counter(mix_kind(t) for t in tasks) == {
            k: v for k, v in mix_targets(dataset.config, quota[server]).items() if v
        }, server
    tasks = [t for t in dataset.tasks if not t.meta["knobs"]["abstention"]]
    for level, target in zip(MIX_KINDS[1:], dataset.config.info_levels, strict=True):
        assert share(tasks, lambda t, level=level: t.meta["info_level"] == level) == (
            pytest.approx(target, abs=0.02)
        )


@pytest.mark.parametrize("quota", [1, 7, 50, 675])
@pytest.mark.parametrize("levels", [(0.6, 0.2, 0.2), (1.0, 0.0, 0.0), (0.34, 0.33, 0.33)])
def test_mix_targets_add_up_to_the_quota_and_round_each_share(
    quota: int, levels: tuple[float, float, float]
) -> None:
    cfg = SynthConfig(info_levels=levels)
    targets = mix_targets(cfg, quota)
    assert sum(targets.values()) == quota
    rest = quota - targets["abstention"]
    assert abs(targets["abstention"] - cfg.abstention_rate * quota) <= 0.5
    for kind, level in zip(MIX_KINDS[1:], levels, strict=True):
        assert abs(targets[kind] - level / sum(levels) * rest) < 1


def test_a_missing_value_makes_a_clarify_turn_followed_by_the_answer_with_the_calls(
    dataset: SynthResult,
) -> None:
    for task in dataset.tasks:
        kinds = [t.kind for t in task.turns]
        assert ("clarify" in kinds) == (task.meta["info_level"] == "missing")
        for i, turn in enumerate(task.turns):
            if turn.kind == "clarify":
                assert turn.missing and not turn.steps
                answer = task.turns[i + 1]
                assert answer.kind == "normal" and answer.steps
                name = turn.missing[0]
                values = [s.arguments[name] for s in answer.steps if name in s.arguments]
                # a list value is said item by item ("Use * for the events."), a date-time
                # as words ("10 pm on November 18, 2026"), a date or a month as it is said
                # ("In February 2026.", not "2026-02"), a span in its unit ("an hour")
                said = [
                    all(str(x) in answer.user or render_value(x) in answer.user for x in v)
                    if isinstance(v, list)
                    else str(v) in answer.user
                    or render_value(v) in answer.user
                    or iso_datetime(str(v)) in said_datetimes(answer.user)
                    or iso_date(str(v)) in said_dates(answer.user)
                    or (
                        "minutes" in name
                        and str(v).isdigit()
                        and int(v) in said_minutes(answer.user)
                    )
                    for v in values
                ]
                assert any(said), (task.id, answer.user)


def test_knobs_land_near_the_papers_rates(dataset: SynthResult) -> None:
    tasks = [t for t in dataset.tasks if not t.meta["knobs"]["abstention"]]
    cfg = dataset.config
    knobs = [t.meta["knobs"] for t in tasks]
    if len(prove_gym.get_registry().servers) > 1:
        assert share(knobs, lambda k: k["distractors"] > 0) == pytest.approx(
            cfg.distractor_rate, abs=0.08
        )
    assert share(knobs, lambda k: k["strip_enums"]) == pytest.approx(cfg.strip_enum_rate, abs=0.08)
    assert share(knobs, lambda k: k["irrelevant"]) == pytest.approx(cfg.irrelevant_rate, abs=0.04)
    assert share(knobs, lambda k: bool(k["missing_tool"])) == pytest.approx(
        cfg.missing_tool_rate, abs=0.035
    )


def test_turns_and_chain_lengths_stay_in_range(dataset: SynthResult) -> None:
    lo, hi = dataset.config.chain_lengths
    for task in dataset.tasks:
        assert dataset.config.turns[0] <= len(task.turns) <= dataset.config.turns[1]
        if task.meta["knobs"]["abstention"]:  # at most the one request whose tool is hidden
            assert not task.steps and len(task.meta["chain"]) <= 1
            continue
        assert lo <= len(task.meta["chain"]) <= hi
        assert 1 <= len(task.scored_steps) <= hi
        # a failed attempt shown before its recovery is one more step, never more than one each
        assert len(task.steps) - len(task.scored_steps) == len(task.meta["recoveries"])


def test_every_knob_leaves_its_mark_on_the_task(dataset: SynthResult) -> None:
    registry = prove_gym.get_registry()
    for task in dataset.tasks:
        knobs = task.meta["knobs"]
        offered = task.tools or []
        foreign = [q for q in offered if not q.startswith(task.server + ".")]
        assert len(foreign) == knobs["distractors"]
        if foreign:
            assert dataset.config.distractors[0] <= len(foreign) <= dataset.config.distractors[1]
        if knobs["strip_enums"]:
            assert task.schema_overrides
            for qualified, schema in task.schema_overrides.items():
                # stripped where the tool's description does not state the values (enums.py)
                strip = strippable(registry.get_tool(qualified))
                assert strip  # a tool with nothing to strip gets no override
                assert all(not enum_values(schema["properties"][p]) for p in strip)
        else:
            assert not task.schema_overrides
        if knobs["missing_tool"]:
            assert f"{task.server}.{knobs['missing_tool']}" not in offered
            assert task.turns[-1].kind == "abstain" and not task.turns[-1].steps
        if knobs["irrelevant"]:
            assert any(t.kind == "abstain" for t in task.turns)
        for step in task.steps:
            assert registry.get_tool(f"{task.server}.{step.name}").name in {
                q.split(".", 1)[1] for q in offered
            }


def test_flags_move_the_rates() -> None:
    cfg = SynthConfig(
        servers=("calendar",),
        n=12,
        seed=9,
        state_seeds=1,
        info_levels=(0.0, 1.0, 0.0),
        distractor_rate=1.0,
        strip_enum_rate=0.0,
        irrelevant_rate=1.0,
        missing_tool_rate=0.0,
        abstention_rate=0.0,
    )
    result = synthesize(cfg)
    many_servers = len(prove_gym.get_registry().servers) > 1
    for task in result.tasks:
        assert task.meta["info_level"] == "missing"
        assert any(t.kind == "clarify" for t in task.turns)
        assert task.meta["knobs"]["irrelevant"]
        assert not task.schema_overrides
        assert bool(task.meta["knobs"]["distractors"]) == many_servers
        assert len(task.turns) == 3  # clarify + answer + the out-of-scope request


def test_whole_abstention_tasks_are_the_papers_share_and_ask_for_nothing_offered(
    dataset: SynthResult,
) -> None:
    whole = [t for t in dataset.tasks if t.meta["knobs"]["abstention"]]
    assert share(dataset.tasks, lambda t: t.meta["knobs"]["abstention"]) == pytest.approx(
        dataset.config.abstention_rate, abs=0.02
    )
    kinds = {t.meta["knobs"]["abstention"] for t in whole}
    assert kinds == {"irrelevant", "missing_tool"}
    for task in whole:
        assert task.kind == "abstain" and not task.steps
        assert all(turn.kind == "abstain" for turn in task.turns)
        assert len({turn.user for turn in task.turns}) == len(task.turns)
        if task.meta["knobs"]["abstention"] == "missing_tool":
            (hidden,) = task.meta["chain"]
            assert f"{task.server}.{hidden}" not in (task.tools or [])


def test_states_are_many_and_of_several_sizes(dataset: SynthResult) -> None:
    cfg = dataset.config
    states = {(t.server, t.seed, t.size) for t in dataset.tasks}
    pool = set(cfg.seed_pool())
    fresh = {s for s in states if s[1] not in pool}
    per_server = Counter(s[0] for s in fresh)
    # one fresh state per block, and every server needs more than one block of 32 candidates
    assert all(per_server[s] >= 2 for s in dataset.servers), per_server
    assert len(fresh) >= 3 * len(dataset.servers)
    assert {s[2] for s in fresh} == set(cfg.sizes)
    # distractor servers' states are never sampled, so tasks with distractors draw fresh
    # states like the others
    distracted = [t for t in dataset.tasks if t.meta["knobs"]["distractors"]]
    assert distracted and all(t.seed not in pool for t in distracted)


def test_the_new_flags_turn_abstention_tasks_and_block_states_off() -> None:
    cfg = SynthConfig(
        servers=("calendar",), n=30, seed=4, state_seeds=2, abstention_rate=0.0, block_states=0
    )
    result = synthesize(cfg)
    assert not any(t.meta["knobs"]["abstention"] for t in result.tasks)
    assert {t.seed for t in result.tasks} <= set(cfg.seed_pool())


@given(
    state_blocks=st.integers(1, 6),
    block_states=st.integers(1, 3),
    seed=st.integers(0, 2**32 - 1),
)
def test_the_first_blocks_own_their_states_and_later_ones_share_them_in_groups(
    state_blocks: int, block_states: int, seed: int
) -> None:
    cfg = SynthConfig(seed=seed, block_states=block_states, state_blocks=state_blocks)
    states = [tuple(cfg.block_state_list("calendar", b)) for b in range(40)]
    # a server's first block draws two at least, so a server done in one block can split
    assert [len(s) for s in states] == [max(2, block_states)] + [block_states] * 39
    own = states[:OWN_STATE_BLOCKS]
    assert len(set(own)) == OWN_STATE_BLOCKS  # seeds are drawn from 10^9: no collisions
    later = states[OWN_STATE_BLOCKS:]
    groups = [later[i : i + state_blocks] for i in range(0, len(later), state_blocks)]
    assert all(len(set(g)) == 1 for g in groups)  # a group shares its states
    firsts = [g[0] for g in groups]
    assert len(set(firsts + own)) == len(firsts) + len(own)  # and groups differ
    # with one block a group, every block samples its own (the rule before state_blocks)
    one = SynthConfig(seed=seed, block_states=block_states, state_blocks=1)
    assert [tuple(one.block_state_list("calendar", b)) for b in range(9)] == states[:9]
    # a block is the last of its states exactly where the next block's differ
    for b in range(39):
        assert cfg.last_block_of_states(b) == (states[b + 1] != states[b])


def test_a_block_forgets_its_states_once_no_later_block_shares_them() -> None:
    """A state is dropped from the process's caches after its last block, and the block
    that follows gives the same candidates from the state sampled again."""
    registry = prove_gym.get_registry()
    server = registry.get_server("calendar")
    cfg = SynthConfig(servers=("calendar",), state_blocks=2, block_size=3)
    b = OWN_STATE_BLOCKS  # b and b + 1 share their states
    ((seed, size),) = cfg.block_state_list("calendar", b)
    size = size or server.default_size
    run_block(cfg, "calendar", b, registry=registry)
    template = server.template(seed, size)
    assert server.template(seed, size) is template  # kept for the next block
    second = run_block(cfg, "calendar", b + 1, registry=registry)
    again = server.template(seed, size)
    assert again is not template and again.data == template.data  # forgotten; same bytes
    server.forget(seed, size)
    rerun = run_block(cfg, "calendar", b + 1, registry=registry)
    assert [c.task.to_json() for c in rerun.candidates] == [
        c.task.to_json() for c in second.candidates
    ]


def test_by_default_every_block_samples_states_of_its_own() -> None:
    """Issue 14's diversity: a 13.5K-task run's ~1,000 blocks are ~1,000 initial states."""
    cfg = SynthConfig()
    for server in ("calendar", "trading"):
        states = {s for b in range(1200) for s in cfg.block_state_list(server, b)}
        assert len(states) == 1201  # the first block draws two


@given(
    rate=st.floats(0.0, 1.0),
    others=st.integers(0, 200),
    order=st.randoms(use_true_random=False),
)
def test_a_block_takes_abstention_draws_only_while_they_lag_their_share(
    rate: float, others: int, order: random.Random
) -> None:
    """Whatever order a block's candidates come in, its abstention tasks stay within
    ``ABSTENTION_MARGIN`` times their share (plus the one that may open the block)."""
    kinds = ["other"] * others + ["abstain"] * 200
    order.shuffle(kinds)
    abstentions = taken = 0
    for kind in kinds:
        if kind == "abstain" and abstention_due(rate, abstentions, taken):
            abstentions += 1
        elif kind == "other":
            taken += 1
    assert abstentions <= ABSTENTION_MARGIN * rate * (abstentions + taken) + 1
    if rate == 1.0:
        assert abstentions == 200  # nothing else is wanted: never held back
    if rate == 0.0:
        assert abstentions == 0
