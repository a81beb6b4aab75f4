#!/usr/bin/env bash
# ctest helper for the command-line tools: runs COMMAND and passes when it exits with STATUS and
# its output (stdout and stderr together) matches the extended regex PATTERN. ctest's
# PASS_REGULAR_EXPRESSION alone ignores the exit status, and a refusal must also fail the run.
#   expect_exit.sh STATUS PATTERN COMMAND...
set -uo pipefail
expected_status=$1 pattern=$2
shift 2
output=$("$@" 2>&1)
status=$?
echo "$output"
if [[ $status -ne $expected_status ]]; then
  echo "expect_exit: exit status $status, expected $expected_status: $*" >&2
  exit 1
fi
if ! grep -qE -- "$pattern" <<<"$output"; then
  echo "expect_exit: no line matches '$pattern': $*" >&2
  exit 1
fi
