#!/usr/bin/env bash
# Every test file of a batched suite (cmake/EmberTestBatches.cmake) keeps its body in a namespace
# named after the file: runtime and graph tests in `namespace <file> {`, conformance cases in
# `namespace conformance::<file> {`, checkpoint tests in `namespace ember::ckpt::<file> {` (or,
# without that, `namespace <file> {`). Without it, a file's anonymous namespace or `using
# namespace` would reach the next files of its batch. Usage: check_test_file_namespaces.sh TESTS_DIR
set -euo pipefail
tests=$1
missing=0
check() {  # check FILE NAMESPACE...: FILE opens one of the namespaces
  local file=$1; shift
  for name in "$@"; do
    grep -q "^namespace ${name} {" "$file" && return 0
  done
  echo "$file: its body is not in namespace $1 (see cmake/EmberTestBatches.cmake)"
  missing=$((missing + 1))
}
count=0
for file in "$tests"/runtime/*.cpp "$tests"/graph/*.cpp; do
  check "$file" "$(basename "$file" .cpp)"; count=$((count + 1))
done
for file in "$tests"/conformance/cases_*.cpp "$tests"/conformance/coverage.cpp "$tests"/conformance/harness_selftest.cpp; do
  check "$file" "conformance::$(basename "$file" .cpp)"; count=$((count + 1))
done
for file in "$tests"/ckpt/test_*.cpp; do
  stem=$(basename "$file" .cpp)
  check "$file" "ember::ckpt::$stem" "$stem"; count=$((count + 1))
done
if (( count < 300 )); then echo "only $count test files found under $tests"; exit 1; fi
if (( missing > 0 )); then exit 1; fi
echo "$count test files, each in its own namespace"
