"""TRL's ``AsyncGRPOTrainer``: environment classes that pickle (it sends them to a spawned
process), and one real async GRPO step driven by :class:`AsyncMultiTurnWorker`.

Only the LLM server is a stand-in: an HTTP server speaking vLLM's ``/v1/completions``
(token ids in, token ids and log-probabilities out) over a tiny random Qwen2 that answers
with a scripted policy's text. The trainer, its queue, packing, loss and optimizer step are
TRL's own. TRL 1.16's async trainer is written for GPUs, and two of its calls cannot run on
a CPU; the test replaces exactly those two (see :func:`cpu_async_trainer`).
"""

from __future__ import annotations

import json
import math
import pickle
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

pytest.importorskip("torch")
pytest.importorskip("trl")

from prove_gym import get_registry
from prove_gym.adapters.trl import (
    AsyncMultiTurnWorker,
    ProveToolEnvironment,
    environment_class,
    environment_factories,
    trl_rows,
    vllm_sampler,
)
from prove_gym.episode import Episode
from prove_gym.formats import ChatTemplateFormat
from prove_gym.reward import RewardConfig
from prove_gym.task import Task

pytestmark = pytest.mark.trainer

# two user turns; four tools offered, to keep the prompts short on a CPU
TASK = next(t for t in get_registry().tasks("calendar") if t.id == "calendar-003").model_copy(
    update={
        "tools": [
            f"calendar.{name}"
            for name in ("search_events", "update_event", "set_recurrence", "list_calendars")
        ]
    }
)


# ----------------------------------------------------------------- pickling
def _signature(cls: type[ProveToolEnvironment]) -> tuple[Any, ...]:
    import inspect

    methods = inspect.getmembers(cls, predicate=inspect.isfunction)
    return (
        cls.__name__,
        cls.server_name,
        cls.tool_names,
        cls.settings,
        sorted((n, str(inspect.signature(f)), f.__doc__) for n, f in methods),
    )


def test_every_servers_class_pickles_by_value_and_an_unreset_instance_too() -> None:
    classes = environment_factories()
    assert len(classes) == len(get_registry().servers)
    for cls in classes.values():
        again = pickle.loads(pickle.dumps(cls))
        assert issubclass(again, ProveToolEnvironment)
        assert _signature(again) == _signature(cls)
        instance = pickle.loads(pickle.dumps(cls()))
        assert _signature(type(instance)) == _signature(cls) and instance.episode is None
    # what TRL pickles: the dict of factories, in one piece
    assert list(pickle.loads(pickle.dumps(classes))) == list(classes)
    # the base class and the choices a class was built with travel as they are
    assert pickle.loads(pickle.dumps(ProveToolEnvironment)) is ProveToolEnvironment
    custom = environment_class(
        "calendar",
        tools=["search_events"],
        reward_config=RewardConfig.preset("paper"),
        owns_reward=False,
    )
    again = pickle.loads(pickle.dumps(custom))
    assert again.tool_names == ("search_events",) and not hasattr(again, "get_reward")
    assert again.settings.reward_config == RewardConfig.preset("paper")


def test_an_instance_holding_a_rollout_refuses_to_pickle_with_a_reason() -> None:
    env = environment_class("calendar")()
    env.reset(**trl_rows([TASK])[0])
    with pytest.raises(TypeError, match="before reset"):
        pickle.dumps(env)
    env._close()
    with pytest.raises(TypeError, match="registry of its own"):
        pickle.dumps(environment_class("calendar", registry=get_registry()))


CHILD = """
import json, pickle, sys
classes, row, calls = pickle.load(sys.stdin.buffer)
env = classes["calendar"]()
env.reset(**row)
results = [getattr(env, name)(**arguments) for name, arguments in calls]
print(json.dumps([sorted(classes), results, env.get_reward()]))
"""


def test_a_fresh_process_rebuilds_the_classes_and_pays_the_same_reward() -> None:
    """What TRL's async worker does: pickle the factories, unpickle them in a new process
    (which has built no class yet)."""
    row = trl_rows([TASK])[0]
    calls = [(s.name, dict(s.arguments)) for s in TASK.turns[0].steps]
    payload = pickle.dumps((environment_factories(["calendar", "banking"]), row, calls))
    child = subprocess.run(
        [sys.executable, "-c", CHILD], input=payload, capture_output=True, timeout=120, check=True
    )
    names, results, reward = json.loads(child.stdout)
    env = environment_class("calendar")()
    env.reset(**row)
    assert names == ["banking", "calendar"]
    assert results == [getattr(env, name)(**arguments) for name, arguments in calls]
    assert reward == env.get_reward() > 0


# ------------------------------------------------------ vLLM stand-in server
class StandInServer:
    """vLLM's ``/v1/completions`` over a real (tiny) model, answering with a scripted policy.

    The policy reads the conversation it is given: a rollout whose request seed is even
    plays the task's gold calls for the current user turn (then "Done.") and an odd seed
    answers "I cannot help with that."; the text's tokens, followed by the end-of-turn id
    as vLLM returns them, are scored by the model for their log-probabilities.
    """

    def __init__(self, model: Any, tokenizer: Any, task: Task) -> None:
        self.model = model
        self.tokenizer = tokenizer
        self.task = task
        self.format = ChatTemplateFormat(tokenizer)
        self.requests: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        self.http = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.url = f"http://127.0.0.1:{self.http.server_address[1]}"
        threading.Thread(target=self.http.serve_forever, daemon=True).start()

    def reply(self, prompt: list[int], seed: int) -> str:
        if seed % 2:
            return "I cannot help with that."
        text = self.tokenizer.decode(prompt)
        last = text.split("<|im_start|>")[-2]  # the message before the generation prompt
        if "<tool_response>" in last:
            return "Done."
        turn = next(i for i, t in enumerate(self.task.turns) if t.user in last)
        steps = self.task.turns[turn].steps
        if not steps:
            return "Done."
        return self.format.render_calls([{"name": s.name, "arguments": s.arguments} for s in steps])

    def complete(self, body: dict[str, Any]) -> dict[str, Any]:
        import torch

        prompt, budget = list(body["prompt"]), int(body["max_tokens"])
        text = self.reply(prompt, int(body["seed"]))
        ids = [*self.tokenizer.encode(text, add_special_tokens=False), self.tokenizer.eos_token_id]
        ids = ids[:budget]
        with self.lock, torch.no_grad():
            logits = self.model(torch.tensor([prompt + ids])).logits[0, len(prompt) - 1 : -1]
            logp = torch.log_softmax(logits.float(), dim=-1)
            self.requests.append(body)
        lps = [float(logp[i, t]) for i, t in enumerate(ids)]
        return {"choices": [{"token_ids": ids, "logprobs": {"token_logprobs": lps}}]}

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                assert self.path == "/v1/completions"
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                out = json.dumps(server.complete(body)).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(out)))
                self.end_headers()
                self.wfile.write(out)

            def log_message(self, *args: Any) -> None:
                pass

        return Handler

    def close(self) -> None:
        self.http.shutdown()
        self.http.server_close()


@pytest.fixture()
def stand_in(tiny_qwen: Any, hermes_tokenizer: Any) -> Iterator[StandInServer]:
    server = StandInServer(tiny_qwen, hermes_tokenizer, TASK)
    yield server
    server.close()


def test_the_vllm_sampler_sends_token_ids_and_reads_tokens_and_logprobs(
    stand_in: StandInServer, hermes_tokenizer: Any
) -> None:
    generate = vllm_sampler(stand_in.url, "tiny", temperature=0.7, top_k=5)
    with Episode(TASK, format=ChatTemplateFormat(hermes_tokenizer)) as episode:
        text = hermes_tokenizer.apply_chat_template(
            episode.messages, tools=episode.tools, tokenize=False, add_generation_prompt=True
        )
    context = hermes_tokenizer.encode(text, add_special_tokens=False)
    good, bad, empty = generate([context, context, context], [200, 3, 0], [2, 1, 4])
    assert good.token_ids[-1] == hermes_tokenizer.eos_token_id
    assert "search_events" in hermes_tokenizer.decode(good.token_ids)
    assert len(bad.token_ids) == 3 and len(bad.logprobs) == 3  # cut at its budget
    assert empty == ([], [])  # no request for a spent budget
    assert all(lp <= 0 for lp in good.logprobs)
    body = stand_in.requests[0]
    assert body["model"] == "tiny" and body["temperature"] == 0.7 and body["top_k"] == 5
    assert body["return_token_ids"] is True and body["logprobs"] == 0
    assert sorted(r["seed"] for r in stand_in.requests) == [1, 2]


# ------------------------------------------------------------ one async step
class SyncToStandIn:
    """TRL's ``WeightTransferProtocol`` into the stand-in's model: what the NCCL transfer
    into vLLM does, in-process."""

    def __init__(self, server: StandInServer) -> None:
        self.server = server
        self.sent = 0

    def init_weight_transfer(self) -> None:
        pass

    def pause(self) -> None:
        self.server.lock.acquire()

    def send_weights(self, weights: Iterator[tuple[str, Any]]) -> None:
        params = dict(self.server.model.named_parameters())
        for name, tensor in weights:
            params[name].data.copy_(tensor)
            self.sent += 1

    def resume(self) -> None:
        self.server.lock.release()

    def destroy(self) -> None:
        pass


def _varlen_attention(
    q: Any,
    k: Any,
    v: Any,
    cu_q: Any,
    cu_k: Any,
    max_q: Any,
    max_k: Any,
    softmax_scale: float | None = None,
    causal: bool = True,
    window_size: tuple[int, int] = (-1, -1),
    **_: Any,
) -> Any:
    """FlashAttention's ``flash_attn_varlen_func`` in plain torch (causal, aligned to the end
    of each key segment, grouped-query heads): the kernel TRL's tree attention calls."""
    import torch
    import torch.nn.functional as F

    assert causal and window_size == (-1, -1)
    out = torch.empty_like(q)
    groups = q.shape[1] // k.shape[1]
    for s in range(len(cu_q) - 1):
        q0, q1, k0, k1 = int(cu_q[s]), int(cu_q[s + 1]), int(cu_k[s]), int(cu_k[s + 1])
        qs = q[q0:q1].transpose(0, 1)
        ks = k[k0:k1].repeat_interleave(groups, dim=1).transpose(0, 1)
        vs = v[k0:k1].repeat_interleave(groups, dim=1).transpose(0, 1)
        n_q, n_k = q1 - q0, k1 - k0
        mask = torch.ones(n_q, n_k, dtype=torch.bool).tril(diagonal=n_k - n_q)
        att = F.scaled_dot_product_attention(qs, ks, vs, attn_mask=mask, scale=softmax_scale)
        out[q0:q1] = att.transpose(0, 1)
    return out


@pytest.fixture()
def cpu_async_trainer(monkeypatch: pytest.MonkeyPatch) -> Any:
    """``AsyncGRPOTrainer`` with the two GPU-only calls of TRL 1.16 replaced for a CPU:

    - ``get_peak_flops_per_device`` (for its MFU metric) calls ``torch.cuda.get_device_name``:
      ``AssertionError: Torch not compiled with CUDA enabled`` when the trainer is built;
    - its tree attention runs FlashAttention 3 fetched from the Hub
      (``kernels.get_kernel("kernels-community/flash-attn3")``), a CUDA kernel; here the same
      function in plain torch (:func:`_varlen_attention`).
    """
    from trl.experimental.async_grpo import AsyncGRPOTrainer, async_grpo_trainer, packing

    monkeypatch.setattr(async_grpo_trainer, "get_peak_flops_per_device", lambda *a, **k: None)
    kernel = type(
        "CpuFlashAttention", (), {"flash_attn_varlen_func": staticmethod(_varlen_attention)}
    )
    monkeypatch.setattr(packing, "_flash_attn", lambda: kernel)
    return AsyncGRPOTrainer


def test_one_async_grpo_step_trains_on_every_user_turn_with_the_prove_reward(
    cpu_async_trainer: Any,
    stand_in: StandInServer,
    tiny_model_dir: str,
    hermes_tokenizer: Any,
    tmp_path: Any,
) -> None:
    import torch
    from trl.experimental.async_grpo import AsyncGRPOConfig

    rows = trl_rows([TASK])
    args = AsyncGRPOConfig(
        output_dir=str(tmp_path),
        max_steps=1,
        num_generations=4,
        per_device_train_batch_size=4,
        max_completion_length=512,
        token_budget=0,  # fixed-count batches: no vLLM server to ask its max_model_len
        learning_rate=1e-2,
        use_cpu=True,
        dtype="float32",
        gradient_checkpointing=False,
        report_to=[],
        save_strategy="no",
        logging_steps=1,
        seed=3,
    )
    worker = AsyncMultiTurnWorker.from_config(rows, hermes_tokenizer, args, model="tiny")
    worker.generate = vllm_sampler(stand_in.url, "tiny", temperature=args.temperature)
    sync = SyncToStandIn(stand_in)
    trainer = cpu_async_trainer(
        tiny_model_dir,
        args=args,
        train_dataset=rows,
        processing_class=hermes_tokenizer,
        rollout_worker=worker,
        weight_transfer=sync,
    )
    before = {n: p.detach().clone() for n, p in trainer.model.named_parameters()}
    started = time.monotonic()
    trainer.train()
    # a guard against a hang (the worker waiting on a queue nobody fills), not a speed test:
    # one step takes seconds alone and a minute on a loaded 2-core machine
    assert time.monotonic() - started < 600
    assert worker.groups >= 1 and worker._error is None
    assert trainer.state.global_step == 1
    # the step moved the weights, and they were synced to the server before and after it
    assert any(not torch.equal(before[n], p) for n, p in trainer.model.named_parameters())
    assert sync.sent == 2 * len(before)
    # what was trained: the group's rollouts, every user turn played, with their reward
    log = trainer.state.log_history[0]
    assert log["prove/user_turns"] > 1
    assert math.isfinite(log["rewards/prove"]) and log["reward_std"] > 0
    first = worker.play_group(0)  # group 0 again: the same seeds replay the same rollouts
    played = worker.rollout.last
    assert [r.breakdown.total for r in played] == pytest.approx(
        [s.metrics["rewards/prove"] for s in first]
    )
    with Episode(TASK, format=ChatTemplateFormat(hermes_tokenizer)) as episode:
        for message in played[0].messages[2:]:
            if message["role"] == "assistant" and not episode.done:
                episode.step(message["content"])
    assert episode.breakdown is not None
    assert played[0].breakdown.total == pytest.approx(episode.breakdown.total)
    for sample, r in zip(first, played, strict=True):
        n = len(r.prompt_ids)
        assert list(sample.input_ids) == r.prompt_ids + r.completion_ids
        assert list(sample.completion_mask) == [0] * n + r.env_mask
        assert sample.old_log_probs[n:].tolist() == pytest.approx(r.logprobs)
