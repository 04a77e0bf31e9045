"""``prove-gym demo``: play one scripted tool-calling episode through the env and show the reward."""

from __future__ import annotations

import argparse
import json
from typing import Any


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "demo",
        help="play a scripted episode (the oracle) through the env; print it and its reward",
    )
    p.add_argument("--server", default="calendar", help="server to play (default: calendar)")
    p.add_argument("--task", type=int, default=1, help="index of the hand-written task to play")
    p.add_argument(
        "--seed", type=int, default=0, help="seed passed to env.reset (the task is --task's)"
    )
    p.add_argument("--format", default="hermes", help="tool-call format (default: hermes)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import gymnasium

    import prove_gym
    from prove_gym.env.env import ProveEnv
    from prove_gym.eval import OraclePolicy

    prove_gym.get_server(args.server)  # a clear error naming the installed servers
    env = gymnasium.make(prove_gym.env_id(args.server), format=args.format)
    base = env.unwrapped
    assert isinstance(base, ProveEnv)
    if not base.tasks:
        print(f"server {args.server!r} has no hand-written tasks to demo")
        return 1
    obs, info = env.reset(seed=args.seed, options={"task_index": args.task})
    assert base.episode is not None
    task = base.episode.task
    print(
        f"== {prove_gym.env_id(args.server)}  task {task.id}  (its server state is sampled from "
        f'the task\'s own seed, {task.seed}; in Python: env.reset(options={{"task_id": '
        f'"{task.id}"}}))'
    )
    print(f"== {len(info['tools'])} tools offered; system prompt is {len(obs)} characters")
    print(f"\n[user] {task.turns[0].user}")
    agent = OraclePolicy().start(base.episode)
    done = False
    reward = 0.0
    while not done:
        action = agent.act(base.episode)
        obs, paid, terminated, truncated, info = env.step(action)
        reward = float(paid)
        done = terminated or truncated
        for msg in info["messages"]:
            if msg["role"] == "assistant":
                calls = msg.get("tool_calls", [])
                if msg["content"]:
                    print(f"[assistant] {msg['content']}")
                for call in calls:
                    fn = call["function"]
                    print(f"[assistant] -> {fn['name']}({fn['arguments']})")
            elif msg["role"] == "tool":
                print(f"[tool] {_clip(msg['content'])}")
            elif msg["role"] == "user":
                print(f"\n[user] {msg['content']}")
    state = base.state_hash()
    print(f"\n== episode over: reward {reward:.3f}; final state {state[:16]}…", end="")
    if task.final_state_hash:
        print(" (matches gold)" if state == task.final_state_hash else " (differs from gold)")
    else:
        print()
    print("== reward breakdown")
    print(json.dumps(info["reward_breakdown"].to_dict(), indent=2, default=str))
    env.close()
    return 0


def _clip(text: str, limit: int = 300) -> str:
    return text if len(text) <= limit else text[:limit] + f"… ({len(text)} chars)"
