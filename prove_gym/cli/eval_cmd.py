"""``prove eval``: play a policy over a task file and report every reward component."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "eval",
        help="evaluate a policy (oracle, random, an OpenAI-compatible endpoint, a local model)",
        description="Play a policy over tasks in the env and report the reward components, "
        "success rate (full coverage and state match), calls per task, per server and per tool.",
    )
    p.add_argument(
        "policy",
        nargs="?",
        choices=["oracle", "random", "openai", "hf"],
        help="the policy (default: openai with --base-url, hf with --hf-model/--gguf, else oracle)",
    )
    p.add_argument(
        "--tasks",
        nargs="+",
        metavar="PATH",
        help="task files (.jsonl of tasks, or trainer rows holding them); "
        "default: the servers' hand-written tasks",
    )
    p.add_argument("--servers", default="all", help="comma-separated servers (default: all)")
    p.add_argument("--limit", type=int, help="evaluate the first N tasks only")
    p.add_argument("--base-url", help="OpenAI-compatible API root, e.g. http://127.0.0.1:8000/v1")
    p.add_argument("--model", help="model name served by --base-url")
    p.add_argument("--api-key", help="bearer token (default: $OPENAI_API_KEY)")
    p.add_argument("--hf-model", help="a local transformers model directory")
    p.add_argument("--gguf", help="a GGUF file (alone, or inside --hf-model)")
    p.add_argument("--temperature", type=float, default=0.0)
    p.add_argument("--max-tokens", type=int, default=512, help="cap on each assistant message")
    p.add_argument(
        "--format",
        default="hermes",
        help="tool-call format the policy's text is read in (default: hermes; see prove list)",
    )
    p.add_argument(
        "--reward",
        default="default",
        help="reward preset: default (validated) or paper (the paper's reward, exactly)",
    )
    p.add_argument("--max-assistant-turns", type=int, default=10)
    p.add_argument("--max-user-turns", type=int, default=5)
    p.add_argument("--concurrency", type=int, default=4, help="episodes played at once")
    p.add_argument("--seed", type=int, default=0, help="seed of the random policy and sampling")
    p.add_argument(
        "--out", type=Path, help="write results.jsonl, summary.json, report.txt, eval.png"
    )
    p.add_argument("--plot", type=Path, help="write the PNG plot here")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(func=run)


def _load_tasks(args: argparse.Namespace) -> list[Any]:
    from prove_gym.adapters.common import _index
    from prove_gym.registry import get_registry

    registry = get_registry()
    wanted = None if args.servers == "all" else {s.strip() for s in args.servers.split(",")}
    if wanted:
        unknown = wanted - set(registry.servers)
        if unknown:
            raise ValueError(
                f"unknown servers {sorted(unknown)}; installed: {sorted(registry.servers)}"
            )
    if args.tasks:
        tasks = [t for path in args.tasks for t in _index(path).values()]
    else:
        tasks = [t for name in sorted(registry.servers) for t in registry.tasks(name)]
    if wanted:
        tasks = [t for t in tasks if t.server in wanted]
    if args.limit is not None:
        tasks = tasks[: args.limit]
    if not tasks:
        raise ValueError("no tasks to evaluate (check --tasks and --servers)")
    return tasks


def _policy(args: argparse.Namespace) -> Any:
    from prove_gym import eval as ev

    kind = args.policy or (
        "openai" if args.base_url else "hf" if (args.hf_model or args.gguf) else "oracle"
    )
    if kind == "oracle":
        return ev.OraclePolicy()
    if kind == "random":
        return ev.RandomPolicy(seed=args.seed)
    if kind == "openai":
        if not args.base_url or not args.model:
            raise ValueError("the openai policy needs --base-url and --model")
        return ev.OpenAIChatPolicy(
            args.base_url,
            args.model,
            api_key=args.api_key or os.environ.get("OPENAI_API_KEY"),
            temperature=args.temperature,
            max_tokens=args.max_tokens,
        )
    from prove_gym.adapters.models import load_causal_lm

    model, tokenizer = load_causal_lm(args.hf_model, gguf=args.gguf)
    args.concurrency = 1  # one local model, one generation at a time
    name = Path(args.gguf or args.hf_model or "smollm2").name
    return ev.TransformersPolicy(
        model,
        tokenizer,
        max_new_tokens=args.max_tokens,
        temperature=args.temperature,
        seed=args.seed,
        name=f"hf:{name}",
    )


def run(args: argparse.Namespace) -> int:
    from prove_gym.episode import EpisodeCaps
    from prove_gym.eval import evaluate
    from prove_gym.reward import RewardConfig

    try:
        reward = RewardConfig.preset(args.reward)
    except ValueError as exc:
        print(f"prove-gym eval: {exc}", file=sys.stderr)
        return 2
    tasks = _load_tasks(args)
    caps = EpisodeCaps(args.max_assistant_turns, args.max_user_turns)
    policy = _policy(args)
    try:
        report = evaluate(
            policy,
            tasks,
            concurrency=args.concurrency,
            progress=not args.no_progress,
            caps=caps,
            format=args.format,
            reward_config=reward,
        )
    finally:
        close = getattr(policy, "close", None)
        if close is not None:
            close()
    print(report.table())
    plot = args.plot
    if args.out is not None:
        paths = report.write(args.out)
        print(f"\nwrote {', '.join(str(p) for p in paths.values())}")
        plot = plot or args.out / "eval.png"
    if plot is not None:
        try:
            print(f"wrote {report.plot(plot)}")
        except ImportError:
            print(
                "no plot: matplotlib is not installed (pip install prove-gym[plot])",
                file=sys.stderr,
            )
    return 0
