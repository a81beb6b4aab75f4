#!/usr/bin/env bash
# Checkpoint performance on one disk: `ember-ckpt bench` (save, cold/warm load, 8->3 resharded
# load, async blocking time) beside dd writing and reading the same number of bytes.
#   tools/ember-ckpt/bench.sh [scratch-dir] [build-dir] [copies of the state]
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
scratch=${1:-$(mktemp -d /tmp/ember-ckpt-bench-XXXXXX)}
build=${2:-$root/build}
copies=${3:-1}
mkdir -p "$scratch"

# Idle OpenMP workers of the tensor fills that build the state would otherwise spin on the cores
# the rank threads need (2-core machines): the timed code itself runs no OpenMP.
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}
result=$("$build/bin/ember-ckpt" bench "$scratch" --world 8 --reshard-world 3 --repeat 5 --copies "$copies")
echo "$result"
bytes=$(echo "$result" | python3 -c 'import json,sys; print(json.load(sys.stdin)["bytes"])')

# dd: one sequential file of the same size, synced (write) and read cold then warm; median of 5.
dd_times() {  # prints seconds for each of 5 runs of "$@"
  for _ in 1 2 3 4 5; do
    "$@" 2>&1 | sed -n 's/.* copied, \([0-9.]*\) s.*/\1/p'
  done
}
median() { sort -g | sed -n 3p; }
minimum() { sort -g | sed -n 1p; }
write=$(dd_times dd if=/dev/zero of="$scratch/dd.bin" bs=1M count=$((bytes / 1048576)) conv=fsync)
read_cold=$(for _ in 1 2 3 4 5; do
  dd if="$scratch/dd.bin" iflag=nocache count=0 status=none  # drop its pages from the cache
  dd if="$scratch/dd.bin" of=/dev/null bs=1M 2>&1 | sed -n 's/.* copied, \([0-9.]*\) s.*/\1/p'
done)
read_warm=$(dd_times dd if="$scratch/dd.bin" of=/dev/null bs=1M)
rm -f "$scratch/dd.bin"
echo "{\"dd_bytes\": $(( bytes / 1048576 * 1048576 )), \"dd_write_fsync_s\": $(median <<<"$write"), \"dd_write_fsync_min_s\": $(minimum <<<"$write"), \"dd_read_cold_s\": $(median <<<"$read_cold"), \"dd_read_cold_min_s\": $(minimum <<<"$read_cold"), \"dd_read_warm_s\": $(median <<<"$read_warm"), \"dd_read_warm_min_s\": $(minimum <<<"$read_warm")}"
