"""Without the MCP SDK (the ``mcp`` extra absent), the environments still import and run.

prove-gym is installed beside trainers and environment hubs that pin an ``mcp`` of
their own (verifiers, OpenEnv, NeMo Gym), so only ``prove-gym serve`` may need it.
Each test runs a fresh interpreter whose import system refuses ``mcp``, exactly as if
it were not installed.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

BLOCK_MCP = textwrap.dedent(
    """
    import importlib.abc, sys

    class BlockMCP(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name == "mcp" or name.startswith("mcp."):
                raise ModuleNotFoundError(f"No module named {name!r}", name=name)
            return None

    sys.meta_path.insert(0, BlockMCP())
    """
)


def _run_without_mcp(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", BLOCK_MCP + textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_an_environment_makes_resets_steps_and_pays_its_reward_without_mcp() -> None:
    done = _run_without_mcp(
        """
        import json, sys
        import gymnasium, prove_gym

        env = gymnasium.make("prove/calendar-v0")
        observation, info = env.reset(seed=0, options={"task_index": 0})
        task = prove_gym.get_registry().tasks("calendar")[0]
        episode = env.unwrapped.episode
        rewards, results = [], []
        for turn in task.turns:
            calls = [{"name": s.name, "arguments": s.arguments} for s in turn.steps]
            for action in ([calls] if calls else []) + ["Done."]:
                observation, reward, terminated, truncated, info = env.step(action)
                rewards.append(reward)
                results += [r["result"]["status"] == "ok" for r in info["call_results"]]
        breakdown = info["reward_breakdown"]
        print(json.dumps({
            "terminated": terminated,
            "total": breakdown.total,
            "max_total": breakdown.max_total,
            "last_reward": rewards[-1],
            "results": results,
            "mcp_loaded": sorted(m for m in sys.modules if m == "mcp" or m.startswith("mcp.")),
        }))
        """
    )
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["terminated"] is True
    assert out["results"] and all(out["results"])
    assert out["total"] == out["max_total"] == out["last_reward"]
    assert out["mcp_loaded"] == []


def test_serve_says_in_one_line_which_extra_to_install_without_mcp() -> None:
    done = _run_without_mcp(
        """
        import sys
        from prove_gym.cli import main

        sys.exit(main(["serve", "calendar", "--transport", "http", "--port", "0"]))
        """
    )
    assert done.returncode == 2
    assert done.stdout == ""
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert "prove-gym[mcp]" in lines[0] and "mcp is not installed" in lines[0]
    assert "Traceback" not in done.stderr


def test_the_other_commands_still_parse_without_mcp() -> None:
    done = _run_without_mcp(
        """
        from prove_gym.cli import main

        main(["list"])
        """
    )
    assert done.returncode == 0, done.stderr
    assert "calendar" in done.stdout
