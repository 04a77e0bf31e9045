"""Validation: replay from JSON, credential tracing, the error-rate cut and near-duplicates."""

from __future__ import annotations

import dataclasses
import itertools
import random
from collections import Counter
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import prove_gym
from prove_gym import Task, gold_replay
from prove_gym.server.result import ToolResult
from prove_gym.synth import SynthConfig, SynthResult, synthesize
from prove_gym.synth.generate import (
    BlockResult,
    Candidate,
    Conversation,
    View,
    run_block,
    server_context,
)
from prove_gym.synth.grounding import Lessons
from prove_gym.synth.pipeline import _Collector, mix_kind
from prove_gym.synth.validate import (
    DedupIndex,
    StateHasher,
    call_features,
    jaccard,
    replay,
    text_problems,
    text_residue,
    untraced_secrets,
)


def test_a_replayed_task_matches_its_recording_and_a_tampered_one_does_not(
    dataset: SynthResult,
) -> None:
    registry = prove_gym.get_registry()
    hasher = StateHasher()
    task = next(t for t in dataset.tasks if any(s.arguments for s in t.steps))
    records, _ = gold_replay(task)
    results = [r.result for r in records]
    server = registry.get_server(task.server)
    with server.session(task.seed, task.size) as session:
        for step in task.steps:
            session.call(step.name, step.arguments)
        recorded = (session.snapshot(), session.state_hash())
        reason, final = replay(
            task, results, recorded, session=session, registry=registry, hasher=hasher
        )
        assert reason is None and final == task.final_state_hash

        data = task.model_dump()
        for turn in data["turns"]:
            for step in turn["steps"]:
                if step["arguments"]:
                    key = next(iter(step["arguments"]))
                    step["arguments"][key] = "definitely-not-a-real-value"
                    break
            else:
                continue
            break
        tampered = Task.from_json(data)
        reason, final = replay(
            tampered, results, recorded, session=session, registry=registry, hasher=hasher
        )
        assert reason == "replay_result_mismatch" and final is None
        reason, _ = replay(
            task, results, (b"", "0" * 64), session=session, registry=registry, hasher=hasher
        )
        assert reason == "replay_state_mismatch"
        hidden = task.model_copy(
            update={"tools": [q for q in task.tools if q != f"{task.server}.{task.steps[0].name}"]}
        )
        reason, _ = replay(
            hidden, results, recorded, session=session, registry=registry, hasher=hasher
        )
        assert reason == "gold_tool_not_offered"


def test_the_cached_state_hash_equals_the_workspace_hash(dataset: SynthResult) -> None:
    hasher = StateHasher()
    distracted = [t for t in dataset.tasks if t.meta["knobs"]["distractors"]]
    assert distracted, "the fixture should hold tasks with distractor tools"
    for task in [*dataset.tasks[:6], *distracted[:6]]:
        with prove_gym.Workspace(task) as ws:
            primary = ws.sessions[task.server]
            assert hasher.session_hash(primary) == ws.state_hash()
            for i, turn in enumerate(task.turns):
                for step in turn.steps:
                    ws.call(step.name, step.arguments, turn=i)
            assert hasher.session_hash(primary) == ws.state_hash() == task.final_state_hash
            # the gold never opened a distractor server: its state was never sampled
            assert list(ws.sessions) == task.servers


def test_a_secret_argument_the_conversation_never_showed_is_flagged(dataset: SynthResult) -> None:
    registry = prove_gym.get_registry()
    task = next((t for t in dataset.tasks if any("passcode" in s.arguments for s in t.steps)), None)
    if task is None:
        return  # no installed server takes passcodes
    records, _ = gold_replay(task)
    results = [r.result for r in records]
    assert untraced_secrets(task, results, registry) == []
    passcodes = {s.arguments["passcode"] for s in task.steps if "passcode" in s.arguments}
    data = task.model_dump()
    for turn in data["turns"]:
        for code in passcodes:
            turn["user"] = turn["user"].replace(code, "my usual code")
    hidden = Task.from_json(data)
    assert any(b.endswith(".passcode") for b in untraced_secrets(hidden, results, registry))


def gold_error_rate(task: Task) -> float:
    """The share of the gold's calls that fail: shown attempts and given-up calls."""
    steps = [s for turn in task.turns for s in turn.steps]
    return sum(s.expect_error is not None for s in steps) / len(steps) if steps else 0.0


def test_the_error_rate_bound_is_on_the_gold_calls_not_the_search(dataset: SynthResult) -> None:
    """The paper's filter (docs/paper.md, 2.5): a replayed conversation whose calls fail more than
    30% of the time is dropped. Arguments the synthesizer drew and the server refused
    before it found ones that work are not in the conversation, so they do not count."""
    bound = dataset.config.max_error_rate
    assert max(gold_error_rate(t) for t in dataset.tasks) <= bound
    assert any(gold_error_rate(t) > 0 for t in dataset.tasks)  # recoveries are shown
    searched = [t for t in dataset.tasks if t.meta["failed_calls"] > bound * t.meta["calls"]]
    assert searched  # kept, though the search failed more often than the bound


def test_conversations_with_too_many_failed_calls_are_dropped() -> None:
    # seed 4: a seed whose 30 tasks show a gold failing more than 30% of its calls (seed 1
    # did until prove_gym.synth/11 dropped the candidate that did: it said an unknowable id)
    strict = synthesize(
        SynthConfig(servers=("email",), n=30, seed=4, state_seeds=1, max_error_rate=0.0)
    )
    assert strict.tasks
    assert all(gold_error_rate(t) == 0 for t in strict.tasks)
    # blocks of 25 (the default until prove_gym.synth/11): at this seed they show a gold
    # that fails more than the bound (seed 4 did until prove_gym.synth/14 drew otherwise);
    # the bound, not the block size, is under test (seed 6 since prove_gym.synth/18 gives
    # up only calls the state refused before the conversation)
    shown = synthesize(
        SynthConfig(
            servers=("email",), n=30, seed=6, state_seeds=1, max_error_rate=1.0, block_size=25
        )
    )
    assert "error_rate" not in shown.drops
    assert any(gold_error_rate(t) > 0.3 for t in shown.tasks)


def test_call_features_are_tools_argument_names_bigrams_and_special_turns() -> None:
    steps = [("search_events", {"query": "sprint"}), ("get_event", {"event_id": "evt_1"})]
    feats = call_features(steps, ["clarify"])
    assert feats == {
        "search_events(query)",
        "get_event(event_id)",
        "search_events>get_event",
        "turn:clarify",
    }
    # the paper's filter: the same calls about another event are the same task
    other_event = [("search_events", {"query": "sprint"}), ("get_event", {"event_id": "evt_2"})]
    assert call_features(other_event, ["clarify"]) == feats
    # another argument, another tool order or no clarify turn: less similar
    more = [("search_events", {"query": "x", "limit": 5}), ("get_event", {"event_id": "e"})]
    assert jaccard(feats, call_features(more, ["clarify"])) == 4 / 5
    assert jaccard(feats, call_features(steps[::-1], ["clarify"])) == 3 / 5
    assert jaccard(feats, call_features(steps)) == 3 / 4


def test_value_features_keep_the_same_calls_about_other_entities() -> None:
    steps = [("search_events", {"query": "sprint"}), ("get_event", {"event_id": "evt_1"})]
    feats = call_features(steps, ["clarify"], values=True)
    assert feats == {
        'search_events(query="sprint")',
        'get_event(event_id="evt_1")',
        "search_events>get_event",
        "turn:clarify",
    }
    other = [("search_events", {"query": "sprint"}), ("get_event", {"event_id": "evt_2"})]
    assert jaccard(feats, call_features(other, ["clarify"], values=True)) == 3 / 5


def test_the_dedup_index_rejects_sets_at_or_above_the_threshold() -> None:
    index = DedupIndex(0.7)
    a = frozenset({"a", "b", "c", "d", "e", "f", "g"})
    index.add(a)
    assert index.near_duplicate(frozenset({"a", "b", "c", "d", "e", "f", "g", "h"}))  # 7/8
    assert not index.near_duplicate(frozenset({"a", "b", "c", "x", "y"}))  # 3/9
    assert not index.near_duplicate(frozenset({"z"}))


_FEATURE_SETS = st.frozensets(st.sampled_from("abcdefgh"), max_size=6)


@settings(max_examples=40, deadline=None)
@given(
    views=st.lists(
        st.tuples(st.lists(_FEATURE_SETS, max_size=10), st.booleans()), min_size=1, max_size=6
    ),
    probes=st.lists(_FEATURE_SETS, min_size=1, max_size=8),
)
def test_the_dedup_index_a_block_reuses_answers_as_one_built_for_its_view(
    views: list[tuple[list[frozenset[str]], bool]], probes: list[frozenset[str]]
) -> None:
    """A server's index is extended from one block's view to the next when the new view
    grows the old one, and built anew otherwise: either way it holds exactly the view's
    sets and answers as a fresh index of them."""
    sc = server_context("calendar", VIEW_CFG, prove_gym.get_registry())
    kept: tuple[frozenset[str], ...] = ()
    for sets, grows in views:
        kept = kept + tuple(sets) if grows else tuple(sets)
        index = sc.dedup_index(kept)
        fresh = DedupIndex(VIEW_CFG.dedup_threshold)
        for feats in kept:
            fresh.add(feats)
        assert index.first(len(index)) == kept
        assert [index.near_duplicate(p) for p in probes] == [
            fresh.near_duplicate(p) for p in probes
        ]


def task_features(task: Task, values: bool = False) -> frozenset[str]:
    """What the pipeline compares, read back from a tool-calling task without a hidden tool:
    each executed call once (a shown failed attempt is the same step as its retry; a call
    given up is the step), and the special turns."""
    calls = [
        s
        for t in task.turns
        for k, s in enumerate(t.steps)
        if not s.attempt or (t.given_up and k == len(t.steps) - 1)
    ]
    specials = [t.kind for t in task.turns if t.kind != "normal"]
    specials += ["give_up" for t in task.turns if t.given_up]
    return call_features(((s.name, s.arguments) for s in calls), specials, values=values)


def test_no_two_kept_tasks_of_a_server_are_near_duplicates(dataset: SynthResult) -> None:
    threshold = dataset.config.dedup_threshold
    by_server: dict[str, list[frozenset[str]]] = {}
    for task in dataset.tasks:
        if task.meta["knobs"]["missing_tool"] or task.meta["knobs"]["abstention"]:
            continue  # their features include the unanswered request's call or its text
        feats = task_features(task, values=dataset.config.dedup == "values")
        by_server.setdefault(task.server, []).append(feats)
    for sets in by_server.values():
        for a, b in itertools.combinations(sets, 2):
            assert jaccard(a, b) < threshold


def test_every_kept_task_reads_clean_and_states_what_its_gold_calls_use(
    dataset: SynthResult,
) -> None:
    """The pipeline's text check, run again on what it wrote: residue-free turns, and every
    literal gold value said by the user (up to its turn) or read from an earlier result."""
    registry = prove_gym.get_registry()
    bad = []
    for task in dataset.tasks[::3]:
        records, _ = gold_replay(task, registry)
        problems = text_problems(task, [r.result for r in records])
        if problems:
            bad.append((task.id, problems))
    assert not bad, bad[:5]


def test_the_text_check_catches_residue_and_values_nobody_said() -> None:
    assert text_residue("Book it (calendar id: cal_01).") == "key_value_aside"
    assert text_residue("Remove the the label.") == "doubled_word"
    assert text_residue("Record that that contact declined.") is None
    assert text_residue("Invite {email} to it.") == "unfilled_slot"
    assert text_residue("Set it to None.") == "none_literal"
    assert text_residue("  ") == "empty_turn"
    # a reference or an omission where no noun phrase reads
    for text in [
        "Where is my the first order in those results?",
        "Open the some position door.",
        "Add flight fl_0312 to trip the new itinerary.",
        "Market order in pf_1: sell 10 the same instrument right now.",
        "Then put email the same message in the archive folder.",
        "Show me project one of my projects.",
        "The query should be Quarterly and the participant email the same user.",
    ]:
        assert text_residue(text) in {"determiner_before_reference", "reference_out_of_place"}
    for text in [
        "Where is the first order in those results?",
        "Now I'm the same user; place a bid.",
        "Then cancel the same order. And then show me one of my projects.",
        "Remind me 10 minutes before the same event, and invite the second user from that list.",
        "The channel should be the same channel.",
    ]:
        assert text_residue(text) is None, text
    task = Task.from_json(
        {
            "id": "t",
            "servers": ["calendar"],
            "turns": [
                {
                    "user": "Find the sprint events.",
                    "steps": [
                        {"id": "s1", "name": "search_events", "arguments": {"query": "sprint"}}
                    ],
                },
                {
                    "user": "Show me that event.",
                    "steps": [
                        {"id": "s2", "name": "get_event", "arguments": {"event_id": "evt_0042"}}
                    ],
                },
            ],
        }
    )
    found = ToolResult.success({"events": [{"event_id": "evt_0042"}]})
    assert text_problems(task, [found, found]) == []
    nothing = ToolResult.success({"events": []})
    assert text_problems(task, [nothing, nothing]) == ["unsaid:get_event.event_id"]


def test_no_gold_value_repeats_a_default_and_no_gold_write_changes_nothing(
    dataset: SynthResult,
) -> None:
    registry = prove_gym.get_registry()
    for task in dataset.tasks[::5]:
        for step in task.steps:
            spec = registry.get_server(task.step_server(step)).tools[step.name]
            props = spec.input_schema().get("properties", {})
            for name, value in step.arguments.items():
                if "default" in props.get(name, {}):
                    assert value != props[name]["default"] or type(value) is not type(
                        props[name]["default"]
                    ), (task.id, step.name, name)
        with registry.get_server(task.server).session(task.seed, task.size) as session:
            for step in task.steps:
                if step.attempt:  # a failed call the gold shows before recovering: no change
                    hashed = session.state_hash()
                    result = session.call(step.name, step.arguments)
                    assert result.error_kind == step.expect_error, (task.id, step.name)
                    assert session.state_hash() == hashed, (task.id, step.name)
                    continue
                before = session.snapshot()
                result = session.call(step.name, step.arguments)
                assert result.ok
                if registry.get_server(task.server).tools[step.name].writes:
                    assert session.snapshot() != before, (task.id, step.name)


# a looser threshold than the paper's, so two blocks of 16 already repeat each other
VIEW_CFG = SynthConfig(servers=("all",), seed=5, block_size=16, state_seeds=2, dedup_threshold=0.5)


@pytest.mark.parametrize("server", ["calendar", "email", "trading"])
def test_a_candidate_is_compared_by_what_its_task_shows(server: str) -> None:
    """A block finds near duplicates before a candidate's text exists, from its calls and
    special turns: the same features as the finished task shows."""
    candidates = [
        c
        for block in range(2)
        for c in run_block(VIEW_CFG, server, block).candidates
        if not c.task.meta["knobs"]["missing_tool"] and not c.task.meta["knobs"]["abstention"]
    ]
    assert len(candidates) >= 4
    for c in candidates:
        assert c.features == task_features(c.task), c.task.id


@pytest.mark.parametrize(
    ("server", "full"),
    [
        ("calendar", frozenset()),
        ("email", frozenset({"complete"})),
        ("trading", frozenset({"complete", "missing", "minimal"})),
    ],
)
def test_a_block_builds_nothing_its_view_would_drop(server: str, full: frozenset[str]) -> None:
    """Given what the collector kept (here: block 0's candidates) and the mix kinds already
    full, a block returns no candidate the collector would drop for either reason; the
    same block without the view does."""
    kept = tuple(c.features for c in run_block(VIEW_CFG, server, 0).candidates)
    known = DedupIndex(VIEW_CFG.dedup_threshold)
    for feats in kept:
        known.add(feats)

    def dropped(c: Candidate) -> bool:
        return mix_kind(c.task) in full or known.near_duplicate(c.features)

    # the first later block that, blind, builds something the collector would drop
    for block in range(1, 8):
        blind = run_block(VIEW_CFG, server, block)
        if any(dropped(c) for c in blind.candidates):
            break
    else:
        pytest.fail(f"no block of {server} in 1-7 builds a candidate the collector would drop")
    seeing = run_block(VIEW_CFG, server, block, View(kept, full))
    assert seeing.candidates
    assert not any(dropped(c) for c in seeing.candidates)
    # a full level is not drawn while another is open; with all full, only abstention is
    skipped = [o for o in seeing.outcomes if isinstance(o, str) and o.startswith("share_full:")]
    if len(full) < 3:
        assert not skipped
    else:
        assert skipped
        assert {mix_kind(c.task) for c in seeing.candidates} == {"abstention"}


def _conversation(
    cfg: SynthConfig,
    server: str,
    seed: int,
    known: DedupIndex | None = None,
    levels: list[float] | None = None,
) -> Conversation:
    """A candidate of block 0 of ``server`` as :func:`run_block` makes one, drawing from
    ``random.Random(seed)``."""
    sc = server_context(server, cfg, prove_gym.get_registry())
    states = [(s, z or sc.server.default_size) for s, z in cfg.block_state_list(server, 0)]
    return Conversation(
        sc, cfg, random.Random(seed), Counter(), Counter(), f"{server}-t{seed}",
        Lessons(), states, levels, True, known,
    )  # fmt: skip


def _every_plan_feature(server: str) -> DedupIndex:
    """An index that holds one set with every value-free feature ``server`` can have, so
    anything sharing a feature with it is a near duplicate."""
    sc = server_context(server, VIEW_CFG, prove_gym.get_registry())
    every: set[str] = set()
    for name, tool in sc.tools.items():
        every.update(f"{name}({p.name})" for p in tool.params)
        every.add(f"{name}()")
        every.update(f"{name}>{other}" for other in sc.tools)
    every.update({"turn:clarify", "turn:abstain"})
    known = DedupIndex(0.001)
    known.add(frozenset(every))
    return known


def test_a_chain_whose_plan_is_already_kept_is_drawn_again_and_never_run() -> None:
    """A plan whose sure features are a near duplicate of a kept task is redrawn; when
    every draw is, the candidate ends before a session is opened or a call made."""
    known = _every_plan_feature("calendar")
    ended = ran_blind = 0
    for seed in range(12):
        conv = _conversation(VIEW_CFG, "calendar", seed, known)
        outcome = conv.build()
        if conv.abstain_only:
            continue  # a whole abstention task draws no chain
        assert not hasattr(conv, "session"), (seed, outcome)
        ended += outcome == "near_duplicate:plan"
        blind = _conversation(VIEW_CFG, "calendar", seed)
        blind.build()
        ran_blind += hasattr(blind, "session")
    assert ended >= 8
    assert ran_blind >= 8


def test_value_dedup_never_judges_a_plan() -> None:
    """Under ``dedup="values"`` kept features hold argument values, which a plan does not
    have yet: no plan is redrawn, whatever the index holds."""
    cfg = dataclasses.replace(VIEW_CFG, dedup="values")
    known = _every_plan_feature("calendar")
    ran = 0
    for seed in range(12):
        conv = _conversation(cfg, "calendar", seed, known)
        outcome = conv.build()
        assert not (isinstance(outcome, str) and outcome.endswith(":plan")), (seed, outcome)
        ran += hasattr(conv, "session")
    assert ran >= 8


def test_a_plan_is_sure_of_its_credential_and_required_arguments_only() -> None:
    """Planned features: the tool that issues a missing credential goes first (once: the
    token is then held), and a tool with no argument sure yet adds only its bigrams."""
    registry = prove_gym.get_registry()
    sc = server_context("banking", VIEW_CFG, registry)
    conv = _conversation(VIEW_CFG, "banking", 0)
    conv.level, conv.hidden, conv.irrelevant = "complete", None, False
    rng = random.Random(0)
    plan = [sc.sampler.new_step(rng, name) for name in ("block_card", "cancel_scheduled_payment")]
    assert conv._plan_features(plan) == {
        "authenticate(customer_id)",
        "authenticate(passcode)",
        "authenticate>block_card",
        "block_card(auth_token)",
        "block_card(card_id)",
        "block_card>cancel_scheduled_payment",
        "cancel_scheduled_payment(auth_token)",
        "cancel_scheduled_payment(scheduled_payment_id)",
    }
    trading = _conversation(VIEW_CFG, "trading", 0)
    trading.level, trading.hidden, trading.irrelevant = "missing", None, False
    steps = [trading.sc.sampler.new_step(rng, n) for n in ("search_instruments", "get_quote")]
    assert trading._plan_features(steps) == {
        "get_quote(symbol)",
        "search_instruments>get_quote",
        "turn:clarify",
    }


@pytest.mark.parametrize("server", ["calendar", "email", "trading"])
def test_a_block_keeps_no_near_duplicate_of_its_own_earlier_candidates(server: str) -> None:
    """The collector takes a block's candidates in order, so the block drops a candidate
    that repeats an earlier one of its own before building it."""
    for block in range(2):
        feats = [c.features for c in run_block(VIEW_CFG, server, block).candidates]
        assert len(feats) >= 3
        for i, j in itertools.combinations(range(len(feats)), 2):
            assert jaccard(feats[i], feats[j]) < VIEW_CFG.dedup_threshold, (block, i, j)


@pytest.mark.parametrize("server", ["banking", "vehicle", "team_chat"])
def test_a_missing_value_candidate_runs_only_a_chain_with_a_value_to_leave_out(
    server: str,
) -> None:
    """A clarify (``missing``) candidate's chain is drawn again until one of its turns
    opens with a call that has a value to ask for."""
    planned = 0
    for seed in range(40):
        conv = _conversation(VIEW_CFG, server, seed, levels=[0.0, 1.0, 0.0])
        conv._knobs()
        if conv.abstain_only:
            continue
        assert conv.level == "missing"
        plan = conv._plan()
        if isinstance(plan, list):
            planned += 1
            assert conv.clarify_plan is not None, seed
    assert planned >= 20


def test_a_block_sees_every_block_of_its_server_but_the_lag_minus_one_before_it(
    dataset: SynthResult,
) -> None:
    """The view is a function of the block index alone: so it is the same however many
    blocks run at once, and a block waits until the blocks it must see are absorbed."""
    cfg = SynthConfig(servers=("calendar",), n=60, view_lag=3)
    collector = _Collector(cfg, ["calendar"], SynthResult(config=cfg, servers=["calendar"]))
    tasks = [t for t in dataset.tasks if t.server == "calendar"]
    blocks = [
        BlockResult(
            "calendar",
            b,
            [
                Candidate(t, frozenset({f"f{b}.{i}"}))
                for i, t in enumerate(tasks[2 * b : 2 * b + 2])
            ],
        )
        for b in range(4)
    ]
    for b in range(3):  # the first view_lag blocks start from nothing
        assert collector.view("calendar", b) == View()
    assert collector.view("calendar", 3) is None  # it must see block 0, not yet absorbed
    collector.add(blocks[1], lambda n: None)  # out of order: held back, nothing absorbed
    assert collector.view("calendar", 3) is None
    collector.add(blocks[0], lambda n: None)  # now 0 and 1 are absorbed, in order
    seen = collector.view("calendar", 3)
    assert seen is not None
    assert seen.kept == tuple(c.features for c in blocks[0].candidates)  # not block 1's
    latest = collector.view("calendar", 4)
    assert latest is not None
    assert latest.kept == tuple(c.features for b in blocks[:2] for c in b.candidates)
    assert collector.view("calendar", 5) is None


ORDER_CFG = SynthConfig(servers=("all",), seed=11, block_size=16, state_seeds=2)


@pytest.mark.parametrize("server", ["banking", "vehicle", "video_meeting", "trading"])
def test_what_a_candidate_reads_from_its_own_run_equals_running_it_again(
    server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two readings a candidate takes from its own session instead of replaying or
    serialising again: the order check's unreordered run (the executed steps' results as
    recorded and the final hash), and the state's bytes while SQLite counts no change.
    Failed attempts, calls given up and writes that changed nothing ran on that session
    too, so each reading is checked here against what it stands for."""
    outcomes: list[tuple[str, int]] = []
    snapshots = 0

    def recorded(self: Conversation) -> tuple[dict[int, tuple[Any, ...]], str | None]:
        got = real_recorded(self)
        assert got == self._outcome(self._succeeded()), self.cid
        outcomes.append((self.cid, self.failures))
        return got

    def state_bytes(self: Conversation) -> bytes:
        nonlocal snapshots
        got = real_bytes(self)
        assert got == self.session.snapshot(), self.cid
        snapshots += 1
        return got

    real_recorded, real_bytes = Conversation._recorded_outcome, Conversation._state_bytes
    monkeypatch.setattr(Conversation, "_recorded_outcome", recorded)
    monkeypatch.setattr(Conversation, "_state_bytes", state_bytes)
    for block in range(8):  # video_meeting's first failed attempt is in block 6 (synth/14)
        run_block(ORDER_CFG, server, block)
    assert outcomes and snapshots
    assert any(failures for _, failures in outcomes)  # the case that matters was met
