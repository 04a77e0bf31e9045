#!/usr/bin/env bash
# GRPO with verl on PROVE tasks, the paper's settings, on ONE GPU (needs verl's GPU stack:
# vLLM or SGLang, FSDP, flash-attn). Not runnable on a CPU; prove_gym's tests exercise the
# agent loop itself against verl's classes on CPU.
#
#   prove-gym synth --servers all --n 13500 --out data/
#   python examples/verl/make_parquet.py data/ data/verl/
#   MODEL=Qwen/Qwen3-4B-Instruct-2507 bash examples/verl/train_grpo.sh
#
# Paper (section 4): GRPO, batch 16, group size 16, KL 0.01, 350 steps, prompt <= 12,384 and
# response <= 16,384 tokens, rollouts capped at 5 user turns and 10 assistant turns, learning
# rate 1e-6 for Qwen3-4B (3e-7 Qwen2.5-7B / Granite, 5e-8 Qwen3-8B).
set -euo pipefail
MODEL=${MODEL:?set MODEL to a local model directory or hub id}
DATA=${DATA:-data/verl}
LR=${LR:-1e-6}
HERE=$(cd "$(dirname "$0")" && pwd)

# The episode's settings, read by prove_gym.adapters.verl in every rollout worker.
export PROVE_MAX_USER_TURNS=5
export PROVE_MAX_ASSISTANT_TURNS=10
export PROVE_REWARD=${PROVE_REWARD:-default}   # or "paper" for the paper's reward exactly

python -m verl.trainer.main_ppo \
  algorithm.adv_estimator=grpo \
  algorithm.use_kl_in_reward=False \
  data.train_files="$DATA/train.parquet" \
  data.val_files="$DATA/test.parquet" \
  data.train_batch_size=16 \
  data.max_prompt_length=12384 \
  data.max_response_length=16384 \
  data.return_raw_chat=True \
  actor_rollout_ref.model.path="$MODEL" \
  actor_rollout_ref.actor.optim.lr="$LR" \
  actor_rollout_ref.actor.ppo_mini_batch_size=16 \
  actor_rollout_ref.actor.use_kl_loss=True \
  actor_rollout_ref.actor.kl_loss_coef=0.01 \
  actor_rollout_ref.actor.kl_loss_type=low_var_kl \
  actor_rollout_ref.rollout.name=vllm \
  actor_rollout_ref.rollout.mode=async \
  actor_rollout_ref.rollout.n=16 \
  actor_rollout_ref.rollout.prompt_length=12384 \
  actor_rollout_ref.rollout.response_length=16384 \
  actor_rollout_ref.rollout.agent.default_agent_loop=prove_agent \
  actor_rollout_ref.rollout.agent.agent_loop_config_path="$HERE/agent_loop.yaml" \
  trainer.total_training_steps=350 \
  trainer.n_gpus_per_node=1 \
  trainer.nnodes=1 \
  trainer.logger='["console"]' \
  "$@"
