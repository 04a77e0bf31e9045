"""``prove-gym eval``: play a policy over a task file and report every reward component."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from prove_gym.eval import EvalReport
    from prove_gym.reward import RewardConfig


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
    p.add_argument(
        "--temperature", type=float, default=0.0, help="sampling temperature (default 0: greedy)"
    )
    p.add_argument(
        "--max-tokens",
        type=int,
        default=512,
        help="cap on each assistant message (a local model's message that reaches it "
        "ends the episode, as in training)",
    )
    p.add_argument(
        "--max-total-tokens",
        type=int,
        help="local model only: cap on a rollout's model and environment tokens after the "
        "opening prompt, as in training (default: the model's context length)",
    )
    p.add_argument(
        "--format",
        help="tool-call format the policy's text is read in ((see prove-gym list)); default: hermes, "
        "and for a local model its own chat template (tools passed natively, as in training)",
    )
    p.add_argument(
        "--reward",
        default="default",
        help="reward preset: default (validated) or paper (the paper's reward, exactly)",
    )
    p.add_argument("--max-assistant-turns", type=int, default=10)
    p.add_argument("--max-user-turns", type=int, default=5)
    p.add_argument(
        "--concurrency",
        type=int,
        default=4,
        help="episodes played at once (a local model generates for them together)",
    )
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
        unknown = wanted - set(registry.server_names)
        if unknown:
            raise ValueError(
                f"unknown servers {sorted(unknown)}; installed: {registry.server_names}"
            )
    if args.tasks:
        tasks = [t for path in args.tasks for t in _index(path).values()]
    else:
        tasks = [
            t for name in sorted(wanted or registry.server_names) for t in registry.tasks(name)
        ]
    if wanted:
        tasks = [t for t in tasks if t.server in wanted]
    if args.limit is not None:
        tasks = tasks[: args.limit]
    if not tasks:
        raise ValueError("no tasks to evaluate (check --tasks and --servers)")
    return tasks


def _kind(args: argparse.Namespace) -> str:
    """The policy asked for: named, or implied by the endpoint or model flags."""
    return str(
        args.policy
        or ("openai" if args.base_url else "hf" if (args.hf_model or args.gguf) else "oracle")
    )


def _policy(args: argparse.Namespace, kind: str) -> Any:
    """The policy the runner plays (every kind but a local model)."""
    from prove_gym import eval as ev

    if kind == "oracle":
        return ev.OraclePolicy()
    if kind == "random":
        return ev.RandomPolicy(seed=args.seed)
    if not args.base_url or not args.model:
        raise ValueError("the openai policy needs --base-url and --model")
    return ev.OpenAIChatPolicy(
        args.base_url,
        args.model,
        api_key=args.api_key or os.environ.get("OPENAI_API_KEY"),
        temperature=args.temperature,
        max_tokens=args.max_tokens,
    )


def _evaluate_local(args: argparse.Namespace, tasks: list[Any], reward: RewardConfig) -> EvalReport:
    """A local model's rollouts through the training engine (:func:`evaluate_model`)."""
    from prove_gym.adapters.models import load_causal_lm
    from prove_gym.training import evaluate_model

    model, tokenizer = load_causal_lm(args.hf_model, gguf=args.gguf)
    total = args.max_total_tokens or getattr(model.config, "max_position_embeddings", None)
    name = Path(args.gguf or args.hf_model or "smollm2").name
    return evaluate_model(
        model,
        tokenizer,
        tasks,
        max_total_tokens=int(total or 8192),
        max_turn_tokens=args.max_tokens,
        batch_size=args.concurrency,
        temperature=args.temperature,
        seed=args.seed,
        max_assistant_turns=args.max_assistant_turns,
        max_user_turns=args.max_user_turns,
        format=args.format,
        reward_config=reward,
        name=f"hf:{name}",
        progress=not args.no_progress,
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
    kind = _kind(args)
    if args.max_total_tokens is not None and kind != "hf":
        raise ValueError("--max-total-tokens applies to a local model only (--hf-model/--gguf)")
    tasks = _load_tasks(args)
    if kind == "hf":
        report = _evaluate_local(args, tasks, reward)
    else:
        caps = EpisodeCaps(args.max_assistant_turns, args.max_user_turns)
        policy = _policy(args, kind)
        try:
            report = evaluate(
                policy,
                tasks,
                concurrency=args.concurrency,
                progress=not args.no_progress,
                caps=caps,
                format=args.format or "hermes",
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
