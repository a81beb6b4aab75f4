#!/usr/bin/env bash
# Prints one hash of ember's sources (C++, CUDA, CMake): tools/pack_gpu_build.sh stamps the pack
# with it and tools/gpu_check.sh --prebuilt compares it with the tree it runs in, so binaries
# packed from other sources are said to be so. Needs no git (the GPU machine's copy has none).
#
#   tools/source_fingerprint.sh [ROOT]
set -euo pipefail
root=${1:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
cd "$root"
# Every folder whose code goes into the packed binaries: the library (runtime, kernels, graph,
# ckpt), its tests, tools, examples and fuzz targets, and the build files.
find runtime kernels graph ckpt tests tools examples fuzz cmake CMakeLists.txt -type f \
    \( -name '*.cpp' -o -name '*.h' -o -name '*.cu' -o -name '*.cuh' -o -name '*.cmake' -o -name CMakeLists.txt \) \
    -print0 2>/dev/null |
  LC_ALL=C sort -z | xargs -0 sha1sum | sha1sum | cut -d' ' -f1
