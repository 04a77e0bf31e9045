"""The LLM writer (``--writer llm``) against a real OpenAI-compatible HTTP server on
127.0.0.1 (:class:`~prove_gym.testing.llm_stub.StubChat`) answering deterministic
rewrites, hostile ones among them: every rewrite that drops or adds a value, is huge,
is not JSON, breaks a lint class or never comes keeps the template text."""

from __future__ import annotations

import json
import time
from functools import partial

import pytest
from hypothesis import given
from hypothesis import strategies as st

from prove_gym import gold_replay
from prove_gym.synth import LLMClient, SynthConfig, build_report, format_report, synthesize
from prove_gym.synth.lint import lint
from prove_gym.synth.render import RenderedTurn
from prove_gym.synth.writer import LLMWriter, value_tokens
from prove_gym.testing.llm_stub import StubChat, rewriting_reply


def _config(url: str, cache: str, **kw: object) -> SynthConfig:
    base: dict[str, object] = dict(
        servers=("calendar", "crm"),
        n=24,
        seed=7,
        state_seeds=2,
        writer="llm",
        llm_url=url,
        llm_model="stub",
        cache_dir=cache,
    )
    base.update(kw)
    return SynthConfig(**base)  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory):
    """One run of the writer over two servers, and the stub it asked."""
    cache = str(tmp_path_factory.mktemp("llm-cache"))
    with StubChat(rewriting_reply) as stub:
        result = synthesize(_config(stub.url, cache))
        yield result, stub, cache


def test_a_rejected_rewrite_of_every_kind_falls_back_and_the_report_counts_them(written) -> None:
    result, _, _ = written
    report = build_report(result)["writer"]
    assert report["writer"] == "llm" and report["accepted"] > 0
    # each hostile kind of the stub was met and rejected for its own reason
    for reason in ("dropped_value", "added_value", "too_long", "bad_reply", "lint:late_greeting"):
        assert report["rejected"].get(reason, 0) > 0, (reason, report)
    assert report["turns"] == report["accepted"] + sum(report["rejected"].values())
    assert "llm writer" in format_report(build_report(result))
    rewritten = sum(t.meta["paraphrased"] for t in result.tasks)
    assert rewritten == report["accepted"]


def test_what_the_tasks_hold_is_an_accepted_rewrite_or_the_template(written) -> None:
    result, stub, _ = written
    answers = {}
    for payload in stub.requests:
        try:
            answers[json.loads(str(rewriting_reply(payload)))["text"]] = payload
        except ValueError:
            continue  # the garbage kind
    accepted = 0
    for task in result.tasks:
        for turn in task.turns:
            if turn.user in answers:
                accepted += 1
                assert "usr_99999" not in turn.user and not turn.user.startswith("very very")
                assert not (turn is not task.turns[0] and turn.user.startswith("Hello!"))
    assert accepted > 0
    assert accepted == sum(t.meta["paraphrased"] for t in result.tasks)


def test_the_written_tasks_replay_and_pass_every_lint_class(written) -> None:
    result, _, _ = written
    for task in result.tasks:
        _, final = gold_replay(task)
        assert final == task.final_state_hash
    report = lint(json.loads(t.to_json()) for t in result.tasks)
    assert not report.failed, [(c.name, c.examples) for c in report.failed]
    assert {c.name: c.flagged for c in report.classes if c.flagged} == {}


def test_a_rerun_reads_every_reply_from_the_cache_and_writes_the_same_bytes(written) -> None:
    result, stub, cache = written
    calls = len(stub.requests)
    again = synthesize(_config(stub.url, cache))
    assert len(stub.requests) == calls
    assert [t.to_json() for t in again.tasks] == [t.to_json() for t in result.tasks]


def test_template_and_llm_writers_plan_the_same_conversations(written) -> None:
    """The writer changes text only: the same calls, in the same turns, in the same order."""
    result, _, _ = written
    plain = synthesize(SynthConfig(servers=("calendar", "crm"), n=24, seed=7, state_seeds=2))

    def calls(tasks):
        return [[[(s.name, s.arguments) for s in turn.steps] for turn in t.turns] for t in tasks]

    assert calls(plain.tasks) == calls(result.tasks)
    assert build_report(plain)["writer"] == {
        "writer": "template",
        "turns": 0,
        "accepted": 0,
        "accepted_share": 0.0,
        "rejected": {},
    }


def test_a_timeout_or_a_dead_endpoint_keeps_the_template(tmp_path) -> None:
    turn = RenderedTurn("Cancel evt_0042 please.", ["evt_0042"])
    with StubChat(partial(rewriting_reply, kinds=("timeout",), delay=2.0)) as stub:
        client = LLMClient(stub.url, "m", cache_dir=tmp_path, timeout=0.3, retries=0)
        started = time.monotonic()
        assert LLMWriter(client).rewrite(turn, first=True) == (None, "transport")
        assert time.monotonic() - started < 2.0
    dead = LLMClient(stub.url, "m", cache_dir=tmp_path, timeout=0.3, retries=0)
    assert LLMWriter(dead).rewrite(turn, first=True) == (None, "transport")


def test_a_clarify_turn_may_not_state_the_value_it_leaves_out() -> None:
    turn = RenderedTurn("Move my dentist appointment.", [])
    assert LLMWriter.check("Move my dentist appointment to Friday.", turn, ["Friday"]) == (
        "withheld_value"
    )
    assert LLMWriter.check("Could you move my dentist appointment?", turn, ["Friday"]) is None
    # a value the template itself says ("dentist") is no value the rewrite gives away
    assert LLMWriter.check("Move the dentist appointment.", turn, ["dentist"]) is None


@given(st.text(max_size=300), st.lists(st.text(min_size=1, max_size=12), max_size=4))
def test_the_check_never_raises_and_keeps_only_what_holds_every_value(text, keep) -> None:
    turn = RenderedTurn("Send the file to ana@example.org at 5 pm.", keep)
    reason = LLMWriter.check(text, turn)
    if reason is None:
        assert all(v in text for v in keep)
        assert all(t.casefold() in turn.text.casefold() for t in value_tokens(text))


def test_the_writer_needs_an_endpoint_and_the_endpoint_a_use() -> None:
    with pytest.raises(ValueError, match="need llm_url"):
        SynthConfig(writer="llm")
    with pytest.raises(ValueError, match="used by"):
        SynthConfig(llm_url="http://127.0.0.1:1/v1", llm_model="m")
    with pytest.raises(ValueError, match="writer must be"):
        SynthConfig(writer="poet")


def test_the_command_line_writes_with_the_endpoint_and_prints_the_counts(
    tmp_path, capsys: pytest.CaptureFixture[str]
) -> None:
    from prove_gym.cli import main

    with StubChat(rewriting_reply) as stub:
        code = main(
            [
                "synth",
                *("--servers", "calendar", "--n", "6", "--seed", "2", "--no-progress"),
                *("--out", str(tmp_path / "data"), "--cache-dir", str(tmp_path / "cache")),
                *("--writer", "llm", "--llm-url", stub.url, "--llm-model", "stub"),
            ]
        )
        assert code == 0 and stub.requests
    printed = capsys.readouterr().out
    assert "llm writer" in printed and "planned turns rewritten" in printed
    report = json.loads((tmp_path / "data" / "report.json").read_text())
    assert report["config"]["writer"] == "llm" and report["writer"]["turns"] > 0
