#!/usr/bin/env bash
# ctest: ember-ckpt end to end. synth writes the wide MLP's training state at 4 ranks; verify,
# reshard 4 -> 3, diff (identical: exit 0), a flipped byte makes verify fail naming the chunk,
# diff of two different runs exits 1 naming the entries, diff of a missing checkpoint exits 2 (as
# diff(1)), bad numbers are refused with a readable message, a reshard that runs out of threads
# fails cleanly, and tools/ckpt_read.py reports what it cannot read without a traceback.
#   test_cli.sh EMBER_CKPT
set -euo pipefail
cli=$1
scratch=$(mktemp -d /tmp/ember-ckpt-cli-XXXXXX)
trap 'rm -rf "$scratch"' EXIT

"$cli" synth --world 4 --out "$scratch/a" --seed 7 --steps 2 >/dev/null
"$cli" verify "$scratch/a" | grep "OK (104 chunks, 34959736 bytes verified)" >/dev/null  # grep -q would SIGPIPE the writer under pipefail
"$cli" inspect "$scratch/a" | grep "model.0.weight  float32 \[1024, 784\] dim0  3211264 bytes in 4 chunks" >/dev/null  # grep -q would SIGPIPE the writer under pipefail
"$cli" inspect "$scratch/a" | grep "train.step  int64 = 2" >/dev/null  # grep -q would SIGPIPE the writer under pipefail
"$cli" reshard "$scratch/a" --world 3 --out "$scratch/a3" >/dev/null
"$cli" inspect "$scratch/a3" --json | python3 -c 'import json,sys; assert json.load(sys.stdin)["world_size"] == 3'
# 52 entries: the optimizer's state carries the initial_lr that synth's scheduler recorded, and
# its maximize option.
"$cli" diff "$scratch/a" "$scratch/a3" | grep "^0 of 52 entries differ" >/dev/null  # grep -q would SIGPIPE the writer under pipefail

# One flipped bit in rank 2's file: verify fails and names the entry, file and byte range.
python3 - "$scratch/a3/rank_00002.bin" <<'PY'
import sys
with open(sys.argv[1], "r+b") as f:
    f.seek(1000); b = f.read(1); f.seek(1000); f.write(bytes([b[0] ^ 0x10]))
PY
if "$cli" verify "$scratch/a3" 2>"$scratch/err"; then echo "verify passed a corrupt checkpoint"; exit 1; fi
grep -q "checksum mismatch in entry '.*' (rows \[.*)), file rank_00002.bin bytes \[" "$scratch/err" || { cat "$scratch/err"; exit 1; }

# A FIFO where a data file should be: refused at once (opening it used to wait for a writer forever).
cp -r "$scratch/a" "$scratch/fifo"
rm "$scratch/fifo/rank_00001.bin"
mkfifo "$scratch/fifo/rank_00001.bin"
status=0
timeout 60 "$cli" verify "$scratch/fifo" 2>"$scratch/err" || status=$?
[[ $status -eq 1 ]] || { echo "verify of a FIFO data file exited $status, expected 1"; cat "$scratch/err"; exit 1; }
grep -q "^ember-ckpt: checkpoint: $scratch/fifo/rank_00001.bin is not a regular file$" "$scratch/err" ||
  { cat "$scratch/err"; exit 1; }

# Another seed: every model entry differs; diff says so and exits 1.
"$cli" synth --world 2 --out "$scratch/b" --seed 8 --steps 2 >/dev/null
status=0
"$cli" diff "$scratch/a" "$scratch/b" >"$scratch/diff" || status=$?
[[ $status -eq 1 ]] || { echo "diff of different checkpoints exited $status, expected 1"; exit 1; }
grep -q "DIFFERS  model.0.weight: .* elements differ, max abs difference" "$scratch/diff"
grep -q "same     train.step" "$scratch/diff"

# Trouble is not a difference: diff exits 2 when a checkpoint cannot be read.
status=0
"$cli" diff "$scratch/a" "$scratch/missing" >/dev/null 2>"$scratch/err" || status=$?
[[ $status -eq 2 ]] || { echo "diff of a missing checkpoint exited $status, expected 2"; cat "$scratch/err"; exit 1; }

# refused ARGS... PATTERN: the command fails and its message matches PATTERN.
refused() {
  local pattern=${*: -1}
  if "$cli" "${@:1:$#-1}" >"$scratch/out" 2>&1; then echo "accepted: $*"; exit 1; fi
  grep -qE -- "$pattern" "$scratch/out" || { echo "unexpected message for: $*"; cat "$scratch/out"; exit 1; }
}
# A negative seed used to wrap to 2^64 - 5; 0 and 'abc' got a range printed as a 300-digit double.
refused synth --world 1 --out "$scratch/c" --seed -5 "^--seed: expected an integer >= 0, got '-5'$"
refused synth --world 0 --out "$scratch/c" --seed 1 "^--world: expected an integer from 1 to 1024, got '0'$"
refused synth --world 1 --out "$scratch/c" --seed 1 --steps abc "^--steps: expected an integer >= 0, got 'abc'$"
refused bench "$scratch/c" --repeat 0 "^--repeat: expected an integer >= 1, got '0'$"
[[ ! -e $scratch/c ]] || { echo "a refused synth wrote $scratch/c"; exit 1; }
# reshard runs each new rank as a thread too: the same cap, explained in --help.
refused reshard "$scratch/a" --world 1025 --out "$scratch/c" "^--world: expected an integer from 1 to 1024, got '1025'$"
"$cli" reshard --help | grep "ranks of the new layout, at most 1024: each is a thread of this process" >/dev/null
# Out of threads (an address-space limit 1000 thread stacks exceed): a message, not an abort, and
# no temporary directory left. AddressSanitizer cannot run under such a limit.
if ! ldd "$cli" | grep libasan >/dev/null; then  # grep -q would SIGPIPE ldd under pipefail
  status=0
  (ulimit -s 8192; ulimit -v 2000000; "$cli" reshard "$scratch/a" --world 1000 --out "$scratch/r") \
    >"$scratch/out" 2>&1 || status=$?
  [[ $status -eq 1 ]] || { echo "reshard out of threads exited $status, expected 1"; cat "$scratch/out"; exit 1; }
  grep -qE "^ember-ckpt: run_ranks: could not start the thread of rank [0-9]+ of 1000 \(.*\); no rank ran" \
    "$scratch/out" ||
    { cat "$scratch/out"; exit 1; }
  [[ ! -e $scratch/r && ! -e $scratch/.tmp-r ]] || { echo "reshard left $(ls -A "$scratch")"; exit 1; }
fi

# tools/ckpt_read.py: a message and exit 1 for what cannot be read, 2 for bad arguments; never a
# Python traceback.
reader="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/tools/ckpt_read.py"
# read_fails STATUS PATTERN ARGS...: ckpt_read.py ARGS exits STATUS with PATTERN on stderr.
read_fails() {
  local expected=$1 pattern=$2 status=0
  shift 2
  python3 "$reader" "$@" >/dev/null 2>"$scratch/err" || status=$?
  if [[ $status -ne $expected ]] || ! grep -qE -- "$pattern" "$scratch/err" || grep -q Traceback "$scratch/err"; then
    echo "ckpt_read.py $*: exit $status (expected $expected)"; cat "$scratch/err"; exit 1
  fi
}
read_fails 1 "^ckpt_read.py: $scratch/missing/manifest.json: No such file or directory$" "$scratch/missing"
read_fails 1 "^ckpt_read.py: $scratch/a: no entry 'no.such.entry'$" "$scratch/a" no.such.entry
read_fails 2 "unrecognized arguments: --bogus" "$scratch/a" --bogus
read_fails 2 "--nested needs an ENTRY" "$scratch/a" --nested
python3 "$reader" "$scratch/a" train.step | grep '"value": 2' >/dev/null
echo "ember-ckpt CLI: all checks passed"
