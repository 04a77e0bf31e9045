"""The OpenRLHF adapter, driven through OpenRLHF's own ``MultiTurnAgentExecutor.execute``.

Generation comes from a real transformers model (a tiny random Qwen2) behind a
stand-in for the vLLM actor; the environment, the tools and the reward are real.
"""

from __future__ import annotations

import asyncio
import importlib.util
import itertools
import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

pytest.importorskip("torch")
agent = pytest.importorskip("openrlhf.utils.agent")

from prove_gym import get_registry  # noqa: E402
from prove_gym.adapters import openrlhf as adapter  # noqa: E402
from prove_gym.episode import Episode, EpisodeCaps  # noqa: E402
from prove_gym.eval import OraclePolicy  # noqa: E402
from prove_gym.task import Task  # noqa: E402

pytestmark = pytest.mark.trainer

TASKS = {t.id: t for t in get_registry().tasks("calendar")}


def oracle_script(task: Task) -> list[str]:
    """The oracle's assistant turns for the whole task: gold calls, then a closing answer."""
    turns = []
    with Episode(task) as episode:
        agent = OraclePolicy().start(episode)
        while not episode.done:
            turns.append(str(agent.act(episode)))
            episode.step(turns[-1])
    return turns


def dataset_prompt(task: Task, tokenizer: Any) -> str:
    """What OpenRLHF's prompt dataset makes of an ``openrlhf.jsonl`` row with --data.apply_chat_template."""
    with Episode(task) as episode:
        messages = episode.messages
    return tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)


def episode_score(
    task: Task, actions: list[str], caps: EpisodeCaps | None = None
) -> tuple[float, Any]:
    """``Episode``'s own reward for a transcript, replayed on a fresh episode."""
    with Episode(task, caps=caps) as episode:
        for action in actions:
            if episode.step(action).done:
                break
    return (episode.breakdown.total if episode.breakdown else 0.0), episode.breakdown


def run(executor: Any, prompt: str, label: str, tokenizer: Any, engine: Any, **kw: Any) -> dict:
    params = SimpleNamespace(max_tokens=None, logprobs=kw.pop("logprobs", None), temperature=1.0)
    return asyncio.run(
        executor.execute(prompt, label, params, kw.pop("max_length", 8192), tokenizer, engine)
    )


def test_the_file_loads_the_way_openrlhf_loads_an_agent_func_path() -> None:
    # Mirrors openrlhf.trainer.ray.vllm_engine._load_agent_executor (which needs ray and vllm).
    path = adapter.__file__
    assert path.endswith(".py")
    spec = importlib.util.spec_from_file_location("agent_module", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert issubclass(module.AgentExecutor, agent.AgentExecutorBase)
    assert issubclass(module.AgentExecutor, agent.MultiTurnAgentExecutor)
    executor = module.AgentExecutor()
    assert issubclass(executor.agent_instance_cls, agent.AgentInstanceBase)


@pytest.mark.parametrize("task_id", ["calendar-001", "calendar-003"])
def test_an_oracle_rollout_earns_exactly_the_envs_reward(
    task_id: str, hermes_tokenizer: Any, engine_factory: Any
) -> None:
    task = TASKS[task_id]
    script = oracle_script(task)
    engine = engine_factory(hermes_tokenizer, script=script)
    out = run(
        adapter.AgentExecutor(),
        dataset_prompt(task, hermes_tokenizer),
        task.to_json(),
        hermes_tokenizer,
        engine,
    )

    texts = [hermes_tokenizer.decode(t, skip_special_tokens=True) for t in engine.generated]
    expected, breakdown = episode_score(task, texts)
    assert len(engine.generated) == len(script)
    assert out["reward"] == pytest.approx(expected)
    assert out["scores"] == pytest.approx(expected)
    assert expected == pytest.approx(breakdown.total) and expected > 0
    logs = out["extra_logs"]
    assert logs["prove/total"] == pytest.approx(expected)
    assert logs["prove/n_calls"] == len(task.steps)
    for name, value in breakdown.components.items():
        assert logs[f"prove/{name}"] == pytest.approx(value or 0.0)
    assert all(isinstance(v, float) for v in logs.values())


def test_action_ranges_hold_the_generated_tokens_and_the_feedback_lies_outside_them(
    hermes_tokenizer: Any, engine_factory: Any
) -> None:
    task = TASKS["calendar-003"]  # two user turns: tool results and a second user message
    engine = engine_factory(hermes_tokenizer, script=oracle_script(task))
    prompt = dataset_prompt(task, hermes_tokenizer)
    out = run(adapter.AgentExecutor(), prompt, task.to_json(), hermes_tokenizer, engine, logprobs=1)

    tokens, ranges = out["observation_tokens"], out["action_ranges"]
    prompt_ids = hermes_tokenizer(text=prompt, add_special_tokens=False)["input_ids"]
    assert tokens[: len(prompt_ids)] == prompt_ids
    assert ranges[0][0] == len(prompt_ids)
    assert [tokens[s:e] for s, e in ranges] == engine.generated
    assert len(out["rollout_log_probs"]) == len(tokens)

    eos = hermes_tokenizer.eos_token_id
    gaps = [tokens[e:s] for (_, e), (s, _) in itertools.pairwise(ranges)]
    feedback = [hermes_tokenizer.decode(g, skip_special_tokens=False) for g in gaps]
    # Every turn ended with EOS (<|im_end|>), so the feedback continues the ChatML transcript.
    assert all(t[-1] == eos for t in engine.generated)
    assert feedback[0].startswith("\n<|im_start|>user\n<tool_response>\n")
    assert feedback[0].endswith("</tool_response><|im_end|>\n<|im_start|>assistant\n")
    assert feedback[1] == (
        f"\n<|im_start|>user\n{task.turns[1].user}<|im_end|>\n<|im_start|>assistant\n"
    )
    transcript = hermes_tokenizer.decode(tokens, skip_special_tokens=False)
    assert "<|im_end|>\n<|im_start|>user\n<tool_response>" in transcript
    assert "<|im_end|><|im_end|>" not in transcript
    # The masks OpenRLHF builds from these ranges leave every feedback token out of the loss.
    mask = [0] * len(tokens)
    for s, e in ranges:
        mask[s:e] = [1] * (e - s)
    assert sum(mask) == sum(len(g) for g in engine.generated)
    assert all(mask[i] == 0 for (_, e), (s, _) in itertools.pairwise(ranges) for i in range(e, s))
    # The feedback is the env's own tool results, one block per call.
    blocks = [b.split("\n</tool_response>")[0] for b in feedback[0].split("<tool_response>\n")[1:]]
    assert len(blocks) == len(task.turns[0].steps)
    assert all(isinstance(json.loads(b), dict | list) for b in blocks)


def test_free_generation_from_a_real_model_is_scored_like_the_env_scores_it(
    hermes_tokenizer: Any, engine_factory: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PROVE_MAX_ASSISTANT_TURNS", "3")
    task = TASKS["calendar-003"]
    engine = engine_factory(hermes_tokenizer, max_new_tokens=12, seed=3)
    out = run(
        adapter.AgentExecutor(),
        dataset_prompt(task, hermes_tokenizer),
        task.to_json(),
        hermes_tokenizer,
        engine,
    )
    texts = [hermes_tokenizer.decode(t, skip_special_tokens=True) for t in engine.generated]
    expected, breakdown = episode_score(task, texts)
    assert 1 <= len(engine.generated) <= 3
    assert breakdown is not None
    assert out["reward"] == pytest.approx(expected)
    assert [out["observation_tokens"][s:e] for s, e in out["action_ranges"]] == engine.generated


def test_the_samples_of_one_prompt_start_from_the_same_state_and_stay_isolated(
    hermes_tokenizer: Any,
) -> None:
    task = TASKS["calendar-002"]

    async def group(n: int) -> list[adapter.ProveAgentInstance]:
        instances = [adapter.ProveAgentInstance() for _ in range(n)]
        await asyncio.gather(
            *(i.reset({"observation": "p", "label": task.to_json()}) for i in instances)
        )
        return instances

    instances = asyncio.run(group(4))
    hashes = {i.episode.state_hash() for i in instances}
    assert len(hashes) == 1
    # A write in one sample's state is invisible to the others.
    step = task.turns[0].steps[1]
    action = oracle_script(task)[0]
    asyncio.run(instances[0].step({"action_text": action, "label": task.to_json()}))
    assert step.name in [r.name for r in instances[0].episode.trajectory]
    assert all(r.result.ok for r in instances[0].episode.trajectory)
    assert instances[0].episode.state_hash() not in hashes
    assert {i.episode.state_hash() for i in instances[1:]} == hashes


def test_an_episode_that_runs_out_of_tokens_ends_with_the_truncated_reward(
    hermes_tokenizer: Any, engine_factory: Any
) -> None:
    task = TASKS["calendar-001"]
    script = oracle_script(task)
    prompt = dataset_prompt(task, hermes_tokenizer)
    n_prompt = len(hermes_tokenizer(text=prompt, add_special_tokens=False)["input_ids"])
    first = len(hermes_tokenizer(text=script[0], add_special_tokens=False)["input_ids"]) + 1
    engine = engine_factory(hermes_tokenizer, script=script)
    # Room for the first turn, not for its tool results plus another turn.
    out = run(
        adapter.AgentExecutor(),
        prompt,
        task.to_json(),
        hermes_tokenizer,
        engine,
        max_length=n_prompt + first + 40,
    )
    assert len(engine.generated) == 1
    assert out["extra_logs"]["prove/truncated"] == 1.0
    expected, breakdown = episode_score(task, script[:1], EpisodeCaps(max_assistant_turns=1))
    assert breakdown is not None and out["reward"] == pytest.approx(expected)


def test_a_label_holding_only_a_task_id_is_found_in_prove_tasks(
    tmp_path: Path, hermes_tokenizer: Any, engine_factory: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    task = TASKS["calendar-001"]
    rows = tmp_path / "openrlhf.jsonl"
    rows.write_text(json.dumps({"prompt": [], "label": task.to_json()}) + "\n")
    monkeypatch.setenv("PROVE_TASKS", str(rows))
    monkeypatch.setenv("PROVE_REWARD_WEIGHT_ARGUMENTS", "0.3")
    engine = engine_factory(hermes_tokenizer, script=oracle_script(task))
    # An empty prompt: the instance renders the env's own first prompt with the chat template.
    out = run(adapter.AgentExecutor(), "", task.id, hermes_tokenizer, engine)
    base, _ = episode_score(task, oracle_script(task))
    assert out["reward"] == pytest.approx(base + 0.2 * out["extra_logs"]["prove/arguments"])
    prompt = hermes_tokenizer.decode(out["observation_tokens"][: out["action_ranges"][0][0]])
    assert task.turns[0].user in prompt and prompt.endswith("<|im_start|>assistant\n")


def test_the_launch_script_uses_only_flags_that_openrlhf_0_11_defines() -> None:
    import re

    spec = importlib.util.find_spec("openrlhf")
    src = Path(next(iter(spec.submodule_search_locations)), "cli", "train_ppo_ray.py").read_text()
    flags = set(re.findall(r'add_argument\(\s*"(--[\w.]+)"', src))
    for prefix in ("actor", "critic"):
        flags |= {
            f"--{prefix}{f}" for f in re.findall(r'add_argument\(\s*f"--\{prefix\}(\.[\w.]+)"', src)
        }
    script = (Path(__file__).parents[2] / "examples" / "openrlhf" / "train_grpo.sh").read_text()
    command = script.split("openrlhf.cli.train_ppo_ray", 1)[1]
    used = set(re.findall(r"^\s+(--[a-z][\w.]+)", command, re.M))
    assert used and used <= flags, sorted(used - flags)
    assert {"--train.agent_func_path", "--rollout.n_samples_per_prompt"} <= used
    assert "--algo.advantage.estimator group_norm" in command
    assert "GROUP=${GROUP:-16}" in script and "KL=${KL:-0.01}" in script


@pytest.mark.parametrize("template", ["qwen2_5_chat_template", "qwen3_chat_template"])
def test_qwen_templates_give_the_hermes_tool_response_turn(
    template: str, hermes_tokenizer: Any
) -> None:
    chat_templates = pytest.importorskip("trl.chat_template_utils")
    from prove_gym.adapters.common import TurnRenderer

    hermes_tokenizer.chat_template = getattr(chat_templates, template)
    renderer = TurnRenderer(hermes_tokenizer)
    tool = [{"role": "tool", "name": "list_calendars", "content": '[{"id": "cal_01"}]'}]
    assert renderer.after_assistant(tool, done=False) == (
        '<|im_end|>\n<|im_start|>user\n<tool_response>\n[{"id": "cal_01"}]\n'
        "</tool_response><|im_end|>\n<|im_start|>assistant\n"
    )
    assert renderer.after_assistant([], done=True) == "<|im_end|>\n"
    eos = hermes_tokenizer.convert_tokens_to_ids("<|im_end|>")
    assert renderer.strip_end_of_turn("<|im_end|>\n<|im_start|>user", [5, eos]) == (
        "\n<|im_start|>user"
    )


def test_with_turn_rewards_openrlhf_sums_each_turns_credit_and_scores_the_total(
    hermes_tokenizer: Any, engine_factory: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PROVE_TURN_REWARDS", "1")
    task = TASKS["calendar-003"]  # two user turns
    script = oracle_script(task)
    engine = engine_factory(hermes_tokenizer, script=script)
    out = run(
        adapter.AgentExecutor(),
        dataset_prompt(task, hermes_tokenizer),
        task.to_json(),
        hermes_tokenizer,
        engine,
    )
    texts = [hermes_tokenizer.decode(t, skip_special_tokens=True) for t in engine.generated]
    with Episode(task, turn_rewards=True) as episode:
        for text in texts:
            if episode.step(text).done:
                break
    turns = [c.reward for c in episode.turn_credits]
    assert len(turns) == 2 and all(r > 0 for r in turns)
    assert episode.breakdown is not None
    # what OpenRLHF trains on: the steps' rewards, summed; the turns' sum is the episode's
    assert out["reward"] == pytest.approx(sum(turns)) == episode.breakdown.total
    assert out["scores"] == pytest.approx(episode.breakdown.total)  # the episode's, unchanged
