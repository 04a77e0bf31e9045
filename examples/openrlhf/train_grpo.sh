#!/usr/bin/env bash
# GRPO on prove_gym environments with OpenRLHF 0.11 (Ray + vLLM + DeepSpeed, GPUs required).
#
# The defaults are the paper's (PROVE, arXiv 2606.03892, section 4): group 16, batch 16
# prompts, KL 0.01, 350 steps, prompt <= 12,384 tokens, response <= 16,384, rollouts capped
# at 5 user turns and 10 assistant turns, sequence-level reward; the learning rate is the
# only per-model setting:
#   Qwen3-4B-Instruct-2507 1e-6 | Qwen3-8B 5e-8 | Qwen2.5-7B-Instruct 3e-7 | Granite-4.1-8B 3e-7
#
# Usage:
#   prove-gym synth --servers all --n 13500 --out data/
#   MODEL=Qwen/Qwen3-4B-Instruct-2507 LR=1e-6 GPUS=8 bash examples/openrlhf/train_grpo.sh
#
# Every setting can be overridden from the environment (see the variables below). The agent
# reads its own settings from PROVE_* variables (docs/training.md); they are forwarded to the
# Ray workers through --runtime-env-json.
set -euo pipefail

MODEL=${MODEL:-Qwen/Qwen3-4B-Instruct-2507}
LR=${LR:-1e-6}
DATA=${DATA:-data/openrlhf.jsonl}
EVAL_DATA=${EVAL_DATA:-data/openrlhf.test.jsonl}
OUT=${OUT:-runs/openrlhf-grpo}
GPUS=${GPUS:-8}                       # GPUs per node for the actor (colocated with vLLM)
NODES=${NODES:-1}
VLLM_ENGINES=${VLLM_ENGINES:-$GPUS}   # one vLLM engine per GPU when colocated
VLLM_TP=${VLLM_TP:-1}
GROUP=${GROUP:-16}                    # completions per prompt (GRPO group)
PROMPTS=${PROMPTS:-16}                # prompts per rollout batch
STEPS=${STEPS:-350}                   # rollout steps: max_samples = STEPS * PROMPTS, one pass
KL=${KL:-0.01}
MAX_LEN=${MAX_LEN:-28768}             # prompt 12,384 + response 16,384
TRAIN_BATCH=$((PROMPTS * GROUP))

export PROVE_MAX_USER_TURNS=${PROVE_MAX_USER_TURNS:-5}
export PROVE_MAX_ASSISTANT_TURNS=${PROVE_MAX_ASSISTANT_TURNS:-10}
export PROVE_TASKS=${PROVE_TASKS:-$(realpath "$DATA")}
AGENT=$(python -c "import prove_gym.adapters.openrlhf as m; print(m.__file__)")

# Forward every PROVE_* variable to the Ray workers that host the agent.
RUNTIME_ENV=$(python - <<'PY'
import json, os
env = {k: v for k, v in os.environ.items() if k.startswith("PROVE_")}
print(json.dumps({"env_vars": env}))
PY
)

mkdir -p "$OUT"
ray job submit --address="${RAY_ADDRESS:-http://127.0.0.1:8265}" \
  --runtime-env-json="$RUNTIME_ENV" \
  -- python3 -m openrlhf.cli.train_ppo_ray \
  --actor.model_name_or_path "$MODEL" \
  --actor.num_nodes "$NODES" \
  --actor.num_gpus_per_node "$GPUS" \
  --ref.num_nodes "$NODES" \
  --ref.num_gpus_per_node "$GPUS" \
  --vllm.num_engines "$VLLM_ENGINES" \
  --vllm.tensor_parallel_size "$VLLM_TP" \
  --vllm.gpu_memory_utilization 0.6 \
  --vllm.enable_sleep \
  --vllm.enforce_eager \
  --train.colocate_all \
  --ds.enable_sleep \
  --ds.zero_stage 3 \
  --ds.param_dtype bf16 \
  --ds.attn_implementation flash_attention_2 \
  --actor.gradient_checkpointing_enable \
  --train.agent_func_path "$AGENT" \
  --data.prompt_dataset "$DATA" \
  --data.input_key prompt \
  --data.label_key label \
  --data.apply_chat_template \
  --data.max_len "$MAX_LEN" \
  --eval.dataset "$EVAL_DATA" \
  --eval.steps 25 \
  --algo.advantage.estimator group_norm \
  --rollout.n_samples_per_prompt "$GROUP" \
  --rollout.batch_size "$PROMPTS" \
  --rollout.temperature 1.0 \
  --train.batch_size "$TRAIN_BATCH" \
  --train.micro_batch_size 1 \
  --rollout.micro_batch_size 2 \
  --train.max_epochs 1 \
  --train.num_episodes 1 \
  --data.max_samples "$((STEPS * PROMPTS))" \
  --algo.kl.use_loss \
  --algo.kl.estimator k3 \
  --algo.kl.init_coef "$KL" \
  --actor.adam.lr "$LR" \
  --reward.clip_range -2 2 \
  --ckpt.output_dir "$OUT" \
  --ckpt.path "$OUT/ckpt" \
  --ckpt.save_steps 50 \
  --ckpt.save_hf \
  --logger.logging_steps 1 \
  --logger.tensorboard_dir "$OUT/tb" \
  "$@"
