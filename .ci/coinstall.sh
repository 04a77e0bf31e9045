#!/usr/bin/env bash
# prove-gym installs beside the environment hubs that pin an mcp of their own: verifiers
# (mcp==2.0.0) and OpenEnv (fastmcp 3, so mcp<2). In two throwaway virtual environments
# (removed at the end) it installs the repository's wheel with each of them (OpenEnv as
# the wheel's own `openenv` extra), runs a smoke test (make calendar-v0, play the gold,
# check the reward; import the hub), and in each runs that hub's adapter test:
# tests/adapters/test_verifiers.py, and tests/adapters/test_openenv.py (the OpenEnv server,
# `prove-gym serve --openenv`, played by OpenEnv's own client).
#
# Neither hub pulls torch (checked: the script fails if one does). The adapter test needs
# `uv` (verifiers' harness program is a PEP 723 script) and, once per machine, the
# harness's own packages, which verifiers installs into uv's cache.
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD
PY=${PYTHON:-python3}
TMP=$(mktemp -d)
start=$SECONDS
trap 'rm -rf "$TMP"; echo "coinstall: $((SECONDS - start)) s with the clean-up"' EXIT

"$PY" -m pip wheel -q --no-deps -w "$TMP/dist" "$REPO"
WHEEL=$(ls "$TMP"/dist/prove_gym-*.whl)

smoke() {  # venv, hub module
  "$1/bin/python" - "$2" <<'EOF'
import importlib, importlib.metadata as md, sys

import gymnasium
import prove_gym

hub = importlib.import_module(sys.argv[1])
env = gymnasium.make("prove/calendar-v0")
env.reset(seed=0, options={"task_index": 0})
task = prove_gym.get_registry().tasks("calendar")[0]
for turn in task.turns:
    calls = [{"name": s.name, "arguments": s.arguments} for s in turn.steps]
    for action in ([calls] if calls else []) + ["Done."]:
        _, reward, terminated, _, info = env.step(action)
breakdown = info["reward_breakdown"]
assert terminated and reward == breakdown.max_total, (reward, breakdown)
assert "torch" not in {d.metadata["Name"].lower() for d in md.distributions()}, "torch was pulled"
print(f"coinstall: prove-gym + {sys.argv[1]} {md.version(sys.argv[1])} (mcp {md.version('mcp')}):"
      f" calendar-v0 gold reward {reward}")
EOF
}

for hub in verifiers openenv; do
  t=$SECONDS
  venv="$TMP/$hub"
  "$PY" -m venv "$venv"
  if [[ $hub == openenv ]]; then
    "$venv/bin/python" -m pip install -q "$WHEEL[openenv]"  # the extra is the install line
  else
    "$venv/bin/python" -m pip install -q "$WHEEL" "$hub"
  fi
  smoke "$venv" "$hub"
  # The hub's own mcp is outside prove-gym[mcp]'s range: serve says so in one line.
  if out=$("$venv/bin/prove-gym" serve calendar 2>&1); then
    echo "coinstall: prove-gym serve ran beside $hub's mcp: $out" >&2; exit 1
  fi
  [[ $out == *"prove-gym[mcp]"* && $(wc -l <<<"$out") == 1 ]] || {
    echo "coinstall: unexpected serve error: $out" >&2; exit 1; }
  echo "coinstall: $out"
  echo "coinstall: $hub environment set up and checked in $((SECONDS - t)) s"
done

# The verifiers adapter test, in the environment where verifiers' mcp pin resolved.
t=$SECONDS
venv="$TMP/verifiers"
"$venv/bin/python" -m pip install -q pytest pytest-asyncio pytest-xdist hypothesis uv
# From outside the repository, so that prove_gym is the installed wheel, not the source tree.
(cd "$TMP" && PATH="$venv/bin:$PATH" "$venv/bin/python" -m pytest -n 0 -q --slow \
    --rootdir "$REPO" -c "$REPO/pyproject.toml" "$REPO/tests/adapters/test_verifiers.py")
echo "coinstall: verifiers adapter test in $((SECONDS - t)) s; total $((SECONDS - start)) s"

# The OpenEnv adapter test, in the environment where OpenEnv's mcp pin resolved.
t=$SECONDS
venv="$TMP/openenv"
"$venv/bin/python" -m pip install -q pytest pytest-asyncio pytest-xdist hypothesis
(cd "$TMP" && PATH="$venv/bin:$PATH" "$venv/bin/python" -m pytest -n 0 -q --slow \
    --rootdir "$REPO" -c "$REPO/pyproject.toml" "$REPO/tests/adapters/test_openenv.py")
echo "coinstall: OpenEnv adapter test in $((SECONDS - t)) s; total $((SECONDS - start)) s"
