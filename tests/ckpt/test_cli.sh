#!/usr/bin/env bash
# ctest: ember-ckpt end to end. synth writes the wide MLP's training state at 4 ranks; verify,
# reshard 4 -> 3, diff (identical: exit 0), a flipped byte makes verify fail naming the chunk,
# and diff of two different runs exits 1 naming the entries.
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
"$cli" diff "$scratch/a" "$scratch/a3" | grep "^0 of 50 entries differ" >/dev/null  # grep -q would SIGPIPE the writer under pipefail

# One flipped bit in rank 2's file: verify fails and names the entry, file and byte range.
python3 - "$scratch/a3/rank_00002.bin" <<'PY'
import sys
with open(sys.argv[1], "r+b") as f:
    f.seek(1000); b = f.read(1); f.seek(1000); f.write(bytes([b[0] ^ 0x10]))
PY
if "$cli" verify "$scratch/a3" 2>"$scratch/err"; then echo "verify passed a corrupt checkpoint"; exit 1; fi
grep -q "checksum mismatch in entry '.*' (rows \[.*)), file rank_00002.bin bytes \[" "$scratch/err" || { cat "$scratch/err"; exit 1; }

# Another seed: every model entry differs; diff says so and exits 1.
"$cli" synth --world 2 --out "$scratch/b" --seed 8 --steps 2 >/dev/null
if "$cli" diff "$scratch/a" "$scratch/b" >"$scratch/diff"; then echo "diff found no difference"; exit 1; fi
grep -q "DIFFERS  model.0.weight: .* elements differ, max abs difference" "$scratch/diff"
grep -q "same     train.step" "$scratch/diff"
echo "ember-ckpt CLI: all checks passed"
