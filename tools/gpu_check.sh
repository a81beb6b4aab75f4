#!/usr/bin/env bash
# One command on a GPU machine: build with CUDA for the local GPU, run the whole ctest suite with
# CUDA available (the conformance suite then runs every op on CUDA against its float64 reference),
# compute-sanitizer memcheck on the CUDA tests, the CUDA micro-benchmarks, and ember-bench on cuda
# for seed, wide and large next to the same models in the machine's PyTorch (eager and
# torch.compile mode="reduce-overhead"). Prints one table; writes JSON lines and logs under $OUT.
#
#   tools/stage_gpu_deps.sh                    # beforehand, on a machine with network access
#   tools/gpu_check.sh [--cpu-rehearsal] [--build-dir DIR] [--jobs N] [--budget SECONDS]
#                      [--prebuilt .gpu_pack/build.tar.xz]
#                      [--groups tests,micro,seed,ops,sanitize,repeat,large,wide,host_read]
#
# Needs no network: build dependencies come from .deps (staged) when the machine lacks them.
# --cpu-rehearsal runs every step that needs no GPU (on the CPU, few steps) and marks the GPU
# steps SKIP, so the script is debugged before a GPU is spent on it. Steps run in priority order;
# once the budget (default 470 s, inside the 8 minutes allowed) is spent the rest are skipped, and
# the run exits non-zero: they were not checked (as it does when no step passed at all).
# --prebuilt runs binaries built elsewhere by tools/pack_gpu_build.sh instead of building here
# (for leases too short to build): the whole ctest suite runs from the pack's test lists, and when
# it fails the CUDA cases of test_runtime and test_graph run again on their own (a crash there
# gets a backtrace).
# --groups runs only the named groups of steps (a second call in the same lease, for the groups
# the first call's budget left out); an unknown name is an error (exit 2), as are bad arguments.
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
rehearsal=0
build_dir="$root/build-gpu"
jobs=$(nproc)
budget=470
prebuilt=""
all_groups=tests,micro,seed,ops,sanitize,repeat,large,wide,host_read,cnn
groups=$all_groups
usage_error() { echo "gpu_check: $1" >&2; exit 2; }
# An option's value: there must be one (not the next option), or `set -u` stops the script at $2.
needs_value() { [[ $# -ge 2 && -n $2 && $2 != --* ]] || usage_error "$1 needs a value"; }
while [[ $# -gt 0 ]]; do
  case "$1" in
    --cpu-rehearsal) rehearsal=1 ;;
    --build-dir) needs_value "$@"; build_dir=$2; shift ;;
    --jobs) needs_value "$@"; jobs=$2; shift ;;
    --budget) needs_value "$@"; budget=$2; shift ;;
    --prebuilt) needs_value "$@"; prebuilt=$2; shift ;;
    --groups) needs_value "$@"; groups=$2; shift ;;
    *) usage_error "unknown argument '$1'" ;;
  esac
  shift
done
[[ $budget =~ ^[0-9]+$ ]] || usage_error "--budget takes whole seconds, got '$budget'"
[[ $jobs =~ ^[1-9][0-9]*$ ]] || usage_error "--jobs takes a positive number, got '$jobs'"
# A misspelt group would match nothing, and the run would check nothing and pass.
for group in ${groups//,/ }; do
  [[ ",$all_groups," == *",$group,"* ]] || usage_error "unknown group '$group' in --groups; the groups: $all_groups"
done
[[ -n ${groups//,/} ]] || usage_error "--groups names no group; the groups: $all_groups"
wanted() { [[ ",$groups," == *",$1,"* ]]; }
out_dir=${OUT:-}
python=${PYTHON:-python3}
# The environment PyTorch was installed for: the ember steps below add library folders (the
# toolkit's, the staged ones) that must not replace the libraries torch's own wheels pin.
original_library_path=${LD_LIBRARY_PATH-}
pytorch_ok=0
pytorch_why="no torch in $python"
if torch_error=$("$python" -c "import torch" 2>&1); then pytorch_ok=1; else pytorch_why="import torch failed: $(tail -n 1 <<<"$torch_error")"; fi
results=()   # "step|status|seconds|detail"
failures=0
not_run=0     # steps skipped because the budget was spent: unchecked, so the run cannot pass
step_skipped=0  # set by run_step: its step was skipped for the budget, not run
ember_blocked=""  # why ember's own steps cannot run here (prebuilt binaries missing libraries)
# A rerun must not mix the last run's logs into this one's.
rm -rf "$build_dir/gpu_check_logs"
mkdir -p "$build_dir/gpu_check_logs"
logs="$build_dir/gpu_check_logs"
json_lines="$logs/gpu_check.jsonl"
: >"$json_lines"

# run_step NAME TIMEOUT_SECONDS COMMAND...: runs with a timeout (cut to the budget left), records
# PASS/FAIL and the time, and keeps the log.
run_step() {
  local name=$1 limit=$2; shift 2
  # The -k grace below may add 10 s past the limit: keep 15 s in hand, and skip a step that
  # would get under 20 s (starting PyTorch alone takes seconds).
  local left=$((budget - SECONDS - 15))
  step_skipped=0
  if ((left < 20)); then
    skip_step "$name" "out of budget (${budget} s)"
    step_skipped=1
    not_run=$((not_run + 1))
    return 1
  fi
  ((limit > left)) && limit=$left
  local start=$SECONDS log="$logs/${name//[^a-zA-Z0-9]/_}.log"
  echo "== $name (limit ${limit} s): $*"
  # -k: a step stuck in the driver that ignores SIGTERM is killed 10 s later.
  timeout -k 10 "$limit" "$@" >"$log" 2>&1
  local status=$?
  tail -n 4 "$log"
  if [[ $status -eq 0 ]] && grep -q "every selected test case was skipped" "$log"; then
    # A test binary whose cases all found no GPU (the rehearsal): nothing was checked.
    results+=("$name|SKIP|$((SECONDS - start))|every selected case was skipped, log $(basename "$log")")
  elif [[ $status -eq 0 ]]; then
    # Cases that found no GPU are counted as skipped by the test binaries, not passed: say so.
    local skipped
    skipped=$(grep -oE "[0-9]+ of the [0-9]+ test cases above were skipped" "$log" | head -n 1)
    results+=("$name|PASS|$((SECONDS - start))|${skipped:+${skipped/ test cases above were/ cases}}")
  elif [[ $status -eq 124 || $status -eq 137 ]]; then
    results+=("$name|TIMEOUT|$((SECONDS - start))|over ${limit} s, log $(basename "$log")")
    failures=$((failures + 1))
  else
    results+=("$name|FAIL|$((SECONDS - start))|exit $status, log $(basename "$log")")
    failures=$((failures + 1))
  fi
  save_progress
  return $status
}
# The summary so far and the JSON lines go to $OUT after every step, so a run the lease cuts short
# still brings back what it measured.
save_progress() {
  [[ -n "$out_dir" ]] || return 0
  mkdir -p "$out_dir"
  print_steps >"$out_dir/steps_so_far.txt"
  [[ -f "${json_lines:-}" ]] && cp "$json_lines" "$out_dir/"
  [[ -f "${logs:-}/op_table.txt" ]] && cp "$logs/op_table.txt" "$out_dir/"
  # The step logs (a failure's reason) as they are so far; small, so cheap to redo every step.
  tar -czf "$out_dir/gpu_check_logs.tar.gz" -C "$build_dir" gpu_check_logs 2>/dev/null
  return 0
}
print_steps() {
  printf '%-34s %-6s %7s  %s\n' step status seconds detail
  local row name status seconds detail
  for row in "${results[@]}"; do
    IFS='|' read -r name status seconds detail <<<"$row"
    printf '%-34s %-6s %7s  %s\n' "$name" "$status" "$seconds" "$detail"
  done
}
skip_step() { results+=("$1|SKIP|0|$2"); echo "== $1: SKIP ($2)"; save_progress; }
# run_step for a step that runs ember's binaries: skipped, with the reason, once they cannot run.
ember_step() {
  if [[ -n $ember_blocked ]]; then skip_step "$1" "$ember_blocked"; return 1; fi
  run_step "$@"
}

# ember_step for a test binary: when it crashes (a signal), the same command runs again under
# cuda-gdb (on the GPU image; it also debugs host code) for the crashing thread's backtrace.
test_step() {
  local name=$1 limit=$2
  ember_step "$@"
  local status=$?
  ((status > 128 && status != 137)) || return $status
  local debugger
  debugger=$(command -v cuda-gdb || ls /usr/local/cuda/bin/cuda-gdb 2>/dev/null | head -n 1)
  [[ -n $debugger ]] || return $status
  shift 2
  # --no-breaks: a failed check must not stop the debugger before the crash.
  run_step "$name backtrace" 60 "$debugger" -q -batch -ex "set pagination off" -ex run -ex "thread apply all bt 25" \
    --args "$@" --no-breaks=true
  # The backtrace step ran the crash again: it records the failure, not the debugger's exit.
  return $status
}

arch=""
if [[ $rehearsal -eq 0 ]]; then
  # A wedged driver must not hang the run before any step: every nvidia-smi call is bounded.
  if ! command -v nvidia-smi >/dev/null || ! timeout 20 nvidia-smi >/dev/null 2>&1; then
    echo "gpu_check: no working nvidia-smi; use --cpu-rehearsal on a machine without a GPU" >&2
    exit 2
  fi
  timeout 20 nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv | tee "$logs/gpu.txt"
  timeout 20 nvidia-smi | grep -m 1 "CUDA Version" | tee -a "$logs/gpu.txt"
  arch=$(timeout 20 nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -n 1 | tr -d '. ')
  # A GPU case that finds CUDA unusable here fails instead of reporting itself skipped.
  export EMBER_REQUIRE_CUDA=1
fi

configure=(cmake -S "$root" -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DEMBER_WITH_CUDA=ON
           -DEMBER_CUDA_WERROR=OFF)  # lint is CI's job; here another host compiler must not stop the run
# Staged Debian packages (tools/stage_gpu_deps.sh) first, for machines without them.
[[ -d "$root/.deps/root/usr" ]] && configure+=("-DCMAKE_PREFIX_PATH=$root/.deps/root/usr")
# cuDNN / NCCL / CUPTI from Python nvidia-* wheels when the toolkit lacks them (no network needed).
# (Only the build here needs them: a prebuilt run finds the wheels' libraries below.)
[[ -z $prebuilt ]] && for package in cudnn nccl cuda_cupti; do
  dir=$("$python" -c "import nvidia.$package as p, os; print(os.path.dirname(p.__file__) if p.__file__ else list(p.__path__)[0])" 2>/dev/null || true)
  variable=$(echo "${package#cuda_}" | tr a-z A-Z)
  [[ -n "$dir" ]] && configure+=("-DEMBER_${variable}_ROOT=$dir")
done
[[ -n "$arch" ]] && configure+=("-DCMAKE_CUDA_ARCHITECTURES=${arch}-real")
command -v ccache >/dev/null && configure+=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
# The convergence test's data: this Python's scikit-learn, else the copy tools/stage_gpu_deps.sh
# staged; with neither, EMBER_DIGITS_PATH stays unset and the tests read Debian's python3-sklearn
# (tests/digits_data.h), which a pyenv or venv python3 first in PATH does not see.
digits=""
[[ -z $prebuilt ]] && digits=$("$python" -c "import sklearn, os; print(os.path.join(os.path.dirname(sklearn.__file__), 'datasets/data/digits.csv.gz'))" 2>/dev/null || true)
for candidate in "$digits" "$root/.deps/digits.csv.gz"; do
  if [[ -n $candidate && -f $candidate ]]; then export EMBER_DIGITS_PATH=$candidate; break; fi
done

if [[ -z $prebuilt ]]; then
  # What the build runs with, for a failure read later from the logs alone.
  { command -v g++ cmake ninja nvcc; g++ --version | head -n 1; cmake --version | head -n 1
    nvcc --version | tail -n 2; } >"$logs/toolchain.txt" 2>&1
  run_step configure 90 "${configure[@]}"
  # A 16-core GPU machine builds in about two minutes; a 2-core rehearsal takes far longer.
  build_limit=330
  ((rehearsal)) && build_limit=3600
  run_step build "$build_limit" cmake --build "$build_dir" --parallel "$jobs" || true
  # The whole suite. On a GPU machine the conformance suite runs every case on CUDA as well.
  # install_and_find_package needs the dependencies where find_package and the loader look by
  # default, which staged .deps and wheel libraries are not; CI runs it on the dev machines.
  # installed_tools_start installs too (and a pack has no install rules): the same holds.
  wanted tests && run_step ctest 200 env EMBER_POISON_OUTPUTS=1 ctest --test-dir "$build_dir" --output-on-failure \
    --parallel "$jobs" --timeout 60 -E '^(install_and_find_package|installed_tools_start)$'
  cp "$build_dir/Testing/Temporary/LastTest.log" "$logs/ctest_LastTest.log" 2>/dev/null
else
  # Python's tarfile when the machine has no xz binary for tar to call.
  if command -v xz >/dev/null; then
    run_step unpack 30 tar -xJf "$prebuilt" -C "$build_dir"
  else
    run_step unpack 60 "$python" -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' \
      "$prebuilt" "$build_dir"
  fi
  # Libraries the packed binaries were linked against, found here: staged fmt/xxhash, the
  # toolkit's cuBLASLt and NVRTC, the wheels'.
  library_path="$build_dir/lib:$root/.deps/root/usr/lib/x86_64-linux-gnu"
  for dir in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib /usr/local/cuda/extras/CUPTI/lib64; do
    [[ -d $dir ]] && library_path+=":$dir"
  done
  # Every nvidia-* wheel's lib folder (cuDNN, cuBLAS, NCCL, CUPTI, NVRTC for the fused kernels),
  # whatever the wheels' layout (nvidia/<package>/lib, or nvidia/cu13/lib for CUDA 13 wheels).
  wheel_libs=$("$python" -c "import nvidia, os; print(':'.join(os.path.join(p, d, 'lib') for p in nvidia.__path__ for d in sorted(os.listdir(p)) if os.path.isdir(os.path.join(p, d, 'lib'))))" 2>/dev/null || true)
  [[ -n "$wheel_libs" ]] && library_path+=":$wheel_libs"
  export LD_LIBRARY_PATH="$library_path${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  # What the pack was built for and from (tools/pack_gpu_build.sh), against this GPU and tree.
  pack_info="$(dirname "$prebuilt")/PACK_INFO"
  if [[ -f $pack_info ]]; then
    cat "$pack_info" | tee "$logs/pack_info.txt"
    pack_arch=$(sed -n 's/^arch=//p' "$pack_info")
    pack_sources=$(sed -n 's/^sources=//p' "$pack_info")
    if [[ -n $arch && -n $pack_arch && $arch != "$pack_arch" ]]; then
      results+=("pack built for this GPU|FAIL|0|pack sm_${pack_arch}, GPU sm_${arch}: its kernels cannot load")
      failures=$((failures + 1))
    elif [[ -n $arch ]]; then
      results+=("pack built for this GPU|PASS|0|sm_${pack_arch}")
    fi
    if [[ $pack_sources != "$("$root/tools/source_fingerprint.sh" "$root")" ]]; then
      results+=("pack built from these sources|FAIL|0|$(sed -n 's/^commit=//p' "$pack_info"): results are of other code")
      failures=$((failures + 1))
    else
      results+=("pack built from these sources|PASS|0|$(sed -n 's/^commit=//p' "$pack_info")")
    fi
  else
    results+=("pack built from these sources|FAIL|0|no PACK_INFO next to $prebuilt")
    failures=$((failures + 1))
  fi
  # Without a library (.deps not carried, no cuDNN wheel) every ember step would fail one by
  # one: they are skipped with the list instead, and the PyTorch steps still run.
  # A step skipped for the budget found nothing missing: ember's steps then meet the budget too.
  if ! run_step "packed binaries find their libraries" 20 bash -c \
      'ls "$0"/bin/* "$0"/lib/*.so* >/dev/null || exit 1; [[ $(ls "$0"/bin | wc -l) -ge 5 ]] || exit 1
       ! ldd "$0"/bin/* "$0"/lib/*.so* 2>&1 | grep -E "not found|No such file"' "$build_dir" && ((!step_skipped)); then
    ember_blocked="the packed binaries miss libraries (step 'packed binaries find their libraries')"
  fi
  # Libraries ember opens at run time (dlopen), which ldd cannot see (the driver's only on a GPU).
  runtime_libraries="libcublasLt.so.13 libnvrtc.so.13"
  [[ $rehearsal -eq 0 ]] && runtime_libraries="libcuda.so.1 $runtime_libraries"
  run_step "runtime libraries load" 20 "$python" -c 'import ctypes, sys
missing = []
for name in sys.argv[1].split():
    try:
        ctypes.CDLL(name)
    except OSError as error:
        missing.append(str(error))
print("\n".join(missing) or "all found")
sys.exit(1 if missing else 0)' "$runtime_libraries"
  # The whole suite when the pack carries ctest's files (written with the paths it was built at:
  # re-aimed at this build folder and checkout). Generated C++ needs ember's headers, which the
  # packed binaries would look for where they were built.
  pack_build=$(sed -n 's/^build_dir=//p' "$pack_info" 2>/dev/null)
  pack_source=$(sed -n 's/^source_dir=//p' "$pack_info" 2>/dev/null)
  # Paths compiled into the binaries (the checkpoint tests' helper programs) name the folder the
  # pack was built in: where that folder is missing here, it becomes a link to this one.
  [[ -n $pack_build && ! -e $pack_build ]] && ln -s "$build_dir" "$pack_build"
  suite_passed=0
  if wanted tests && [[ -n $pack_build && -n $pack_source && -f $build_dir/CTestTestfile.cmake ]]; then
    find "$build_dir" -name '*.cmake' -exec sed -i -e "s|$pack_build|@PACK_BUILD@|g" \
      -e "s|$pack_source|@PACK_SOURCE@|g" -e "s|@PACK_BUILD@|$build_dir|g" -e "s|@PACK_SOURCE@|$root|g" {} +
    ember_step ctest 240 env EMBER_POISON_OUTPUTS=1 EMBER_INCLUDE_DIR="$root" \
      EMBER_CACHE_DIR="$build_dir/kernel-cache" ctest --test-dir "$build_dir" --output-on-failure \
      --parallel "$jobs" --timeout 60 -E '^(install_and_find_package|installed_tools_start)$' && suite_passed=1
    cp "$build_dir/Testing/Temporary/LastTest.log" "$logs/ctest_LastTest.log" 2>/dev/null
    save_progress
  fi
  # The CUDA cases of the two test binaries on their own, unless the whole suite passed: what a
  # pack without ctest's files runs, and after a failure a second look (a crash gets a backtrace,
  # an intermittent failure another chance to show). ("cuda emulation" cases run on the CPU.)
  wanted tests && ((!suite_passed)) && test_step "cuda tests" 90 env EMBER_POISON_OUTPUTS=1 \
    "$build_dir/bin/test_runtime" -tc='cuda*'
  # The compile stage on CUDA: reduce_overhead's CUDA-graph replay and NVRTC-loaded kernels.
  wanted tests && ((!suite_passed)) && test_step "cuda graph tests" 60 env EMBER_POISON_OUTPUTS=1 EMBER_INCLUDE_DIR="$root" \
    EMBER_CACHE_DIR="$build_dir/kernel-cache" "$build_dir/bin/test_graph" -tc='cuda*,fusion on CUDA*' \
    -tce='cuda emulation*'
fi
# One line per op: do its conformance cases pass on CUDA (each op in its own process)?
op_table() {
  local table_device=cuda
  [[ $rehearsal -eq 1 ]] && table_device=cpu
  ember_step "op table $table_device" 120 bash "$root/tools/op_table.sh" "$build_dir" "$table_device" "$jobs" \
    "$logs/op_table.txt"
  # Each failing op's own log (the table keeps its first line only), for the logs archive.
  local op
  for op in $(awk '$2 == "FAIL" {print $1}' "$logs/op_table.txt" 2>/dev/null); do
    cp "$build_dir/op_table_logs/$op.log" "$logs/op_table_$op.log" 2>/dev/null
  done
  save_progress
}

device=cuda; steps=100; warmup=10
if [[ $rehearsal -eq 1 ]]; then device=cpu; steps=3; warmup=1; fi
bench() {  # bench NAME TIMEOUT COMMAND...: a benchmark step whose stdout is one JSON line
  local name=$1 limit=$2; shift 2
  local step=run_step
  [[ $name == ember* ]] && step=ember_step
  $step "$name" "$limit" bash -c '"$@" > "$0.json" && cat "$0.json"' "$logs/${name//[^a-zA-Z0-9]/_}" "$@" &&
    cat "$logs/${name//[^a-zA-Z0-9]/_}.json" >>"$json_lines" && save_progress
}

if ! wanted micro; then
  :
elif [[ $rehearsal -eq 1 ]]; then
  skip_step "ember-bench micro cuda" "rehearsal: no GPU"
else
  bench "ember-bench micro cuda" 60 "$build_dir/bin/ember-bench" --micro cuda --device cuda --json
  if [[ $pytorch_ok -eq 0 ]]; then
    skip_step "pytorch micro: gemm, launch" "$pytorch_why"
  else
    bench "pytorch micro: gemm, launch" 30 env LD_LIBRARY_PATH="$original_library_path" "$python" \
      "$root/tools/reference/pytorch_micro.py"
  fi
fi

bench_model() {  # ember and PyTorch (eager, reduce-overhead) on one model
  local model=$1
  if [[ $model == large && $rehearsal -eq 1 ]]; then skip_step "large on cpu" "rehearsal: 3.3 TFLOP per step"; return; fi
  bench "ember $model eager $device" 90 "$build_dir/bin/ember-bench" --model "$model" --device "$device" \
    --steps "$steps" --warmup "$warmup" --json
  # The compile stage: fused generated kernels, the same without them (what fusion gives), then
  # replayed as CUDA graphs.
  local variant mode
  for variant in compiled "compiled --no-fuse" reduce_overhead; do
    mode=${variant%% *}
    if [[ $rehearsal -eq 1 && $mode == reduce_overhead ]]; then skip_step "ember $model $mode" "rehearsal: CUDA graphs need a GPU"; continue; fi
    bench "ember $model $variant $device" 90 env EMBER_CACHE_DIR="$build_dir/kernel-cache" EMBER_INCLUDE_DIR="$root" \
      "$build_dir/bin/ember-bench" --model "$model" --mode $variant --device "$device" \
      --steps "$steps" --warmup "$((warmup > 2 ? warmup : 2))" --json
  done
  for mode in eager reduce-overhead; do
    if [[ $pytorch_ok -eq 0 ]]; then skip_step "pytorch $model $mode" "$pytorch_why"; continue; fi
    if [[ $rehearsal -eq 1 && $mode != eager ]]; then skip_step "pytorch $model $mode" "rehearsal: compiles for the GPU only"; continue; fi
    local limit=120
    [[ $mode == reduce-overhead ]] && limit=75  # its cold compile alone takes most of that
    bench "pytorch $model $mode $device" "$limit" env LD_LIBRARY_PATH="$original_library_path" \
      "$python" "$root/tools/reference/pytorch_mlp.py" --model "$model" \
      --mode "$mode" --device "$device" --steps "$steps" --warmup "$warmup" --json
  done
}

# A graph break (the step reads its loss on the host): compiled segments against eager.
bench_host_read() {
  bench "ember seed eager host-read $device" 60 "$build_dir/bin/ember-bench" --model seed --device "$device" \
    --host-read --steps "$steps" --warmup "$warmup" --json
  bench "ember seed compiled host-read $device" 60 env EMBER_CACHE_DIR="$build_dir/kernel-cache" \
    EMBER_INCLUDE_DIR="$root" "$build_dir/bin/ember-bench" --model seed --mode compiled --host-read \
    --device "$device" --steps "$steps" --warmup "$((warmup > 3 ? warmup : 3))" --json
}

# Memory errors in the CUDA kernels: the GPU-specific tests, the generated (fused) kernels and a
# few conformance families under compute-sanitizer memcheck (slow, so a subset). Without the
# caching allocator each tensor is its own cudaMalloc, so memcheck sees its bounds; exit 86 is a
# memcheck error, 1 a failed test. API errors are not reported: tests provoke some on purpose
# (a kernel name a library lacks), and ember checks every API call's status itself.
sanitize() {
  if [[ $rehearsal -eq 1 ]]; then skip_step compute-sanitizer "rehearsal: no GPU"; return; fi
  local sanitizer
  sanitizer=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer \
    /usr/local/cuda*/compute-sanitizer/compute-sanitizer 2>/dev/null | head -n 1)
  if [[ -z $sanitizer ]]; then skip_step compute-sanitizer "not on PATH nor under /usr/local/cuda"; return; fi
  # The generated kernels first: nothing else checks their memory accesses on a GPU.
  ember_step "compute-sanitizer fused kernels" 45 "$sanitizer" --tool memcheck --report-api-errors no \
    --error-exitcode 86 \
    env EMBER_POISON_OUTPUTS=1 EMBER_NO_CUDA_MEMORY_CACHING=1 EMBER_INCLUDE_DIR="$root" EMBER_CACHE_DIR="$build_dir/kernel-cache" \
    "$build_dir/bin/test_graph" -tc='cuda fusion*,cuda nvrtc*,cuda lowered*'
  # Hand-written kernels of the families most likely to index out of bounds; all of `cuda*`
  # (cuBLASLt, cuDNN, the benchmarks' sizes) would not finish under memcheck in the limit.
  ember_step "compute-sanitizer cuda tests" 45 "$sanitizer" --tool memcheck --report-api-errors no \
    --error-exitcode 86 \
    env EMBER_POISON_OUTPUTS=1 EMBER_NO_CUDA_MEMORY_CACHING=1 "$build_dir/bin/test_runtime" \
    -tc='cuda softmax*,cuda cross_entropy*,cuda index*,cuda device errors*,cuda embedding*'
  ember_step "compute-sanitizer conformance" 45 "$sanitizer" --tool memcheck --report-api-errors no \
    --error-exitcode 86 \
    env EMBER_POISON_OUTPUTS=1 EMBER_NO_CUDA_MEMORY_CACHING=1 EMBER_CONFORMANCE_DEVICES=cuda "$build_dir/bin/test_conformance" \
    -tc='*binary*,*reduction*,*index*,*norm*'
}

# Intermittent failures: the cases where two threads compile and call at once, run again and again,
# each time in a new process, and each failure's message kept. A second round loads every module
# eagerly (CUDA_MODULE_LOADING=EAGER): failures in one round only would point at lazy loading.
repeat_threaded() {
  if [[ $rehearsal -eq 1 ]]; then skip_step "two-thread cases repeated" "rehearsal: no GPU"; return; fi
  local loading
  for loading in LAZY EAGER; do
    ember_step "two-thread cases x12, $loading loading" 60 bash -c '
      log=$0; failed=0
      for run in $(seq 12); do
        "$@" >"$log.run" 2>&1 && continue
        failed=$((failed + 1)); grep -E "thread [01]:|ERROR|error:" "$log.run" | head -n 6
      done
      echo "$failed of 12 runs failed"; ((failed == 0))' "$logs/repeat_$loading" \
      env CUDA_MODULE_LOADING=$loading EMBER_POISON_OUTPUTS=1 EMBER_INCLUDE_DIR="$root" \
      EMBER_CACHE_DIR="$build_dir/kernel-cache" "$build_dir/bin/test_graph" -tc='*two threads at once*'
  done
}

# Priority order (steps past the budget are listed as skipped): the tests, then what the issue's
# targets are stated in (micro benchmarks, seed against PyTorch), the conformance of every op on
# CUDA, memcheck, the threaded cases repeated, the other models against PyTorch, the graph-break
# variant, and the convolutional model last (no target is stated for it).
wanted seed && bench_model seed
wanted ops && op_table
wanted sanitize && sanitize
wanted repeat && repeat_threaded
wanted large && bench_model large
wanted wide && bench_model wide
wanted host_read && bench_host_read
wanted cnn && bench_model cnn

echo
print_steps | tee "$logs/summary.txt"
echo
"$python" "$root/tools/gpu_check_summary.py" "$json_lines" | tee -a "$logs/summary.txt"
if [[ -n "$out_dir" ]]; then
  mkdir -p "$out_dir"
  cp "$json_lines" "$logs/summary.txt" "$out_dir/"
  cp "$logs/op_table.txt" "$out_dir/" 2>/dev/null
  tar -czf "$out_dir/gpu_check_logs.tar.gz" -C "$build_dir" gpu_check_logs
fi
[[ $rehearsal -eq 1 ]] && echo "rehearsal: GPU steps were skipped; nothing here is a GPU result"
# A run that checked nothing (every step skipped) must not read as a pass.
passed=0
for row in "${results[@]}"; do [[ $row == *"|PASS|"* ]] && passed=$((passed + 1)); done
echo "gpu_check: ${SECONDS} s, ${failures} failed step(s), ${not_run} not run for the budget (${budget} s)," \
  "${passed} passed"
((passed == 0)) && echo "gpu_check: no step passed: nothing was checked" >&2
exit $((failures > 0 || not_run > 0 || passed == 0))
