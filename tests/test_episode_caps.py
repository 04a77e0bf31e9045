"""Hostile actions in an episode: call caps per message and per episode, deep structures."""

from __future__ import annotations

import gymnasium
import pytest

from prove_gym import ErrorKind, get_registry
from prove_gym.episode import Episode, EpisodeCaps
from prove_gym.formats import HermesFormat

TASK = next(t for t in get_registry().tasks("calendar") if t.id == "calendar-003")
LIST = {"name": "list_calendars", "arguments": {}}


def test_ten_thousand_calls_in_one_message_run_only_the_capped_number() -> None:
    text = HermesFormat().render_calls([LIST] * 10_000)
    with Episode(TASK) as episode:
        out = episode.step(text)  # all 10,000 ran before (38.7 s)
    assert out.caps_hit == ("max_calls_per_message",) and out.skipped_calls == 10_000 - 32
    assert [r.result.ok for r in out.records] == [True] * 32 + [False]
    refusal = out.records[-1].result
    assert refusal.error_kind == ErrorKind.PRECONDITION_FAILED
    assert "at most 32 tool calls run per message" in (refusal.message or "")
    assert "holds 10000" in (refusal.message or "") and "9967 after it" in (refusal.message or "")
    assert len(episode.trajectory) == 33 and not out.done
    assert len(out.messages[0]["tool_calls"]) == len(out.messages) - 1 == 33


def test_the_episode_cap_refuses_further_calls_and_truncates() -> None:
    caps = EpisodeCaps(max_calls_per_message=3, max_calls_per_episode=5)
    with Episode(TASK, caps=caps) as episode:
        first = episode.step([LIST] * 3)
        assert first.caps_hit == () and not first.done
        second = episode.step([LIST] * 3)
    assert second.caps_hit == ("max_calls_per_episode",) and second.skipped_calls == 1
    assert [r.result.ok for r in second.records] == [True, True, False]
    assert "episode runs at most 5 tool calls" in (second.records[-1].result.message or "")
    assert second.truncated and second.breakdown is not None
    assert second.breakdown.caps_hit == ("max_calls_per_episode",)  # reported with the reward
    assert second.breakdown.to_dict()["caps_hit"] == ["max_calls_per_episode"]


def test_calls_made_one_by_one_count_against_the_caps_too() -> None:
    caps = EpisodeCaps(max_calls_per_message=2)
    with Episode(TASK, caps=caps) as episode:
        records = [episode.call("list_calendars", {}) for _ in range(3)]
    assert [r.result.ok for r in records] == [True, True, False]
    assert records[-1].server is None  # never reached a server


def test_the_env_takes_the_caps_as_kwargs_and_reports_a_hit_in_info() -> None:
    env = gymnasium.make("prove/calendar-v0", max_calls_per_message=2, max_calls_per_episode=50)
    env.reset(options={"task": TASK})
    _, _, _, truncated, info = env.step([LIST] * 3)
    assert info["caps_hit"] == ["max_calls_per_message"] and info["skipped_calls"] == 1
    assert [r["result"]["status"] for r in info["call_results"]] == ["ok", "ok", "error"]
    assert not truncated
    _, _, _, _, info = env.step([LIST])
    assert info["caps_hit"] == [] and info["skipped_calls"] == 0
    env.close()


@pytest.mark.parametrize("field", ["max_calls_per_message", "max_calls_per_episode"])
def test_call_caps_must_be_positive_integers(field: str) -> None:
    with pytest.raises(ValueError, match=field):
        EpisodeCaps(**{field: 0})


def test_a_structured_call_nested_ten_thousand_deep_is_a_parse_error() -> None:
    deep: object = "x"
    for _ in range(10_000):
        deep = [deep]
    with Episode(TASK) as episode:
        out = episode.step([{"name": "list_calendars", "arguments": {"a": deep}}])  # raised
    (record,) = out.records
    assert record.result.error_kind == ErrorKind.PARSE_ERROR
    assert "nested too deeply" in (record.result.message or "")
