#!/usr/bin/env bash
# ctest: tools/source_fingerprint.sh changes when a source in any folder that goes into the
# binaries changes (a pack built from other checkpoint or example code must not pass
# gpu_check.sh's "pack built from these sources"), and not for a file that builds nothing.
#   test_source_fingerprint.sh FINGERPRINT_SCRIPT
set -euo pipefail
fingerprint=$1
tree=$(mktemp -d /tmp/ember-fingerprint-XXXXXX)
trap 'rm -rf "$tree"' EXIT
folders=(runtime kernels graph ckpt tests tools examples fuzz cmake)
for folder in "${folders[@]}"; do
  mkdir -p "$tree/$folder"
  echo "// $folder" >"$tree/$folder/source.cpp"
done
echo "project(x)" >"$tree/CMakeLists.txt"
before=$(bash "$fingerprint" "$tree")
for folder in "${folders[@]}"; do
  echo "// changed" >>"$tree/$folder/source.cpp"
  after=$(bash "$fingerprint" "$tree")
  [[ $after != "$before" ]] || { echo "a change in $folder/ leaves the fingerprint as it was"; exit 1; }
  before=$after
done
echo "notes" >"$tree/README.md"
[[ $(bash "$fingerprint" "$tree") == "$before" ]] || { echo "README.md changed the fingerprint"; exit 1; }
echo "source_fingerprint: every source folder counts"
