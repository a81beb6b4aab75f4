#!/usr/bin/env bash
# One command on a GPU machine: build with CUDA for the local GPU, run ctest, compute-sanitizer on
# the CUDA tests, ember-bench on cuda next to PyTorch, and print one table (JSON lines to $OUT).
# Needs no network. --cpu-rehearsal runs every step that does not need a GPU (on the CPU, with few
# steps) and marks the GPU steps SKIP, so the script is debugged before a GPU is spent on it.
#
#   tools/gpu_check.sh [--cpu-rehearsal] [--build-dir DIR] [--jobs N]
# PYTHON names the interpreter with torch for the PyTorch reference (default: python3).
# Budget: the whole run must finish within 8 minutes on an H200; each step has its own timeout.
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
rehearsal=0
build_dir="$root/build-gpu"
jobs=$(nproc)
while [[ $# -gt 0 ]]; do
  case "$1" in
    --cpu-rehearsal) rehearsal=1 ;;
    --build-dir) build_dir=$2; shift ;;
    --jobs) jobs=$2; shift ;;
    *) echo "gpu_check: unknown argument '$1'" >&2; exit 2 ;;
  esac
  shift
done
out_dir=${OUT:-}
python=${PYTHON:-python3}
results=()   # "step|status|seconds|detail"
failures=0

# run_step NAME TIMEOUT_SECONDS COMMAND...: runs with a timeout, records PASS/FAIL and the time.
run_step() {
  local name=$1 limit=$2; shift 2
  local start=$SECONDS log="$build_dir/gpu_check_${name//[^a-zA-Z0-9]/_}.log"
  echo "== $name: $*"
  timeout "$limit" "$@" >"$log" 2>&1
  local status=$?
  tail -n 5 "$log"
  if [[ $status -eq 0 ]]; then
    results+=("$name|PASS|$((SECONDS - start))|")
  else
    results+=("$name|FAIL|$((SECONDS - start))|exit $status, log $log")
    failures=$((failures + 1))
  fi
}
skip_step() { results+=("$1|SKIP|0|$2"); echo "== $1: SKIP ($2)"; }

mkdir -p "$build_dir"
# The local GPU's architecture only (e.g. 90 on an H200) keeps the build short.
arch=""
if [[ $rehearsal -eq 0 ]]; then
  if ! command -v nvidia-smi >/dev/null || ! nvidia-smi >/dev/null 2>&1; then
    echo "gpu_check: no working nvidia-smi; use --cpu-rehearsal on a machine without a GPU" >&2
    exit 2
  fi
  arch=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -n 1 | tr -d '. ')
fi
# cuDNN / NCCL / CUPTI from Python nvidia-* wheels when the toolkit lacks them (no network needed).
hints=()
for package in cudnn nccl cuda_cupti; do
  dir=$("$python" -c "import nvidia.$package as p, os; print(os.path.dirname(p.__file__))" 2>/dev/null || true)
  variable=$(echo "${package#cuda_}" | tr a-z A-Z)
  [[ -n "$dir" ]] && hints+=("-DEMBER_${variable}_ROOT=$dir")
done

configure=(cmake -S "$root" -B "$build_dir" -G Ninja -DEMBER_WITH_CUDA=ON "${hints[@]}")
[[ -n "$arch" ]] && configure+=("-DCMAKE_CUDA_ARCHITECTURES=${arch}-real")
command -v ccache >/dev/null && configure+=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
run_step configure 120 "${configure[@]}"
run_step build 300 cmake --build "$build_dir" --parallel "$jobs"

# On a GPU machine the suite runs with CUDA available (cases that need no GPU say so and pass on
# their CPU part); the rehearsal runs it as CI does.
run_step ctest 180 env EMBER_POISON_OUTPUTS=1 ctest --test-dir "$build_dir" --output-on-failure --parallel "$jobs"

if [[ $rehearsal -eq 1 ]]; then
  skip_step compute-sanitizer "rehearsal: no GPU"
else
  run_step compute-sanitizer 120 compute-sanitizer --tool memcheck --error-exitcode 1 \
    env EMBER_POISON_OUTPUTS=1 "$build_dir/bin/test_runtime" -tc='cuda*'
fi

device=cuda; steps=200; warmup=20
if [[ $rehearsal -eq 1 ]]; then device=cpu; steps=5; warmup=1; fi
json_lines="$build_dir/gpu_check.jsonl"
: >"$json_lines"
for model in seed wide; do
  run_step "ember-bench $model $device" 120 bash -c \
    "'$build_dir/bin/ember-bench' --model $model --device $device --steps $steps --warmup $warmup --json | tee -a '$json_lines'"
  for mode in eager reduce-overhead; do
    if ! "$python" -c "import torch" 2>/dev/null; then skip_step "pytorch $model $mode" "no torch"; continue; fi
    if [[ $rehearsal -eq 1 && $mode != eager ]]; then skip_step "pytorch $model $mode" "rehearsal: compiles for the GPU only"; continue; fi
    run_step "pytorch $model $mode $device" 120 bash -c \
      "'$python' '$root/tools/reference/pytorch_mlp.py' --model $model --mode $mode --device $device --steps $steps --warmup $warmup --json | tee -a '$json_lines'"
  done
done
# The large model (8 x 4096, bf16 autocast, AdamW) needs CUDA GEMMs and autocast: not yet in ember.
skip_step "ember-bench large" "needs CUDA GEMM and autocast (issue 3, not done yet)"

echo
printf '%-36s %-6s %8s  %s\n' step status seconds detail
for row in "${results[@]}"; do
  IFS='|' read -r name status seconds detail <<<"$row"
  printf '%-36s %-6s %8s  %s\n' "$name" "$status" "$seconds" "$detail"
done
echo "benchmark JSON lines:"; cat "$json_lines"
if [[ -n "$out_dir" ]]; then
  mkdir -p "$out_dir"
  cp "$json_lines" "$out_dir/gpu_check.jsonl"
  printf '%s\n' "${results[@]}" >"$out_dir/gpu_check_steps.txt"
fi
[[ $rehearsal -eq 1 ]] && echo "rehearsal: GPU steps were skipped; nothing here is a GPU result"
exit $((failures > 0))
