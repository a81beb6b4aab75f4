#!/usr/bin/env bash
# Builds, on this (GPU-less) machine, the binaries tools/gpu_check.sh --prebuilt runs on a GPU
# machine: libember, every test, example and benchmark executable and ctest's test lists, for one
# CUDA architecture (default 90: H100/H200), packed into .gpu_pack/build.tar.xz (git-ignored,
# carried to the GPU machine).
# Used when the GPU lease is too short to also build there; gpu_check.sh without --prebuilt
# builds on the GPU machine itself. The pack multiplies on the CPU with Eigen: the GPU machine has
# no OpenBLAS for it to load.
#
#   tools/pack_gpu_build.sh [ARCH]
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
arch=${1:-90}
build_dir="$root/build-pack"
export CCACHE_BASEDIR=$root
configure=(cmake -S "$root" -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DEMBER_WITH_CUDA=ON
           "-DCMAKE_CUDA_ARCHITECTURES=${arch}-real" -DEMBER_NATIVE=OFF -DEMBER_WITH_OPENBLAS=OFF)
command -v ccache >/dev/null && configure+=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
"${configure[@]}" >/dev/null
# Everything: gpu_check.sh runs the whole ctest suite from the pack, so every test binary, example
# and helper goes in, with ctest's files (absolute paths of this build, re-aimed there).
cmake --build "$build_dir"
mkdir -p "$root/.gpu_pack"
mapfile -t ctest_files < <(cd "$build_dir" && find . -name CTestTestfile.cmake -o -name '*_include-*.cmake' \
  -o -name '*_tests-*.cmake')
tar -cJf "$root/.gpu_pack/build.tar.xz" -C "$build_dir" bin lib "${ctest_files[@]}"
# What the pack is, for gpu_check.sh to check against the GPU and the tree it runs in.
{
  echo "arch=${arch}"
  echo "build_dir=${build_dir}"
  echo "source_dir=${root}"
  echo "sources=$("$root/tools/source_fingerprint.sh" "$root")"
  echo "commit=$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)$(git -C "$root" diff --quiet HEAD 2>/dev/null || echo '+uncommitted')"
  echo "nvcc=$(nvcc --version 2>/dev/null | tail -n 1)"
} >"$root/.gpu_pack/PACK_INFO"
echo "packed $(du -h "$root/.gpu_pack/build.tar.xz" | cut -f1) for sm_${arch}"
cat "$root/.gpu_pack/PACK_INFO"
