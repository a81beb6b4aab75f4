#!/usr/bin/env bash
# One CUDA runtime per process: only libember may carry cudart (statically linked), and no binary
# may link libcuda.so (the driver is loaded at run time, so binaries start without one). Nor may
# any link libcublasLt, libcusolver or libnvrtc: they are loaded on first use
# (runtime/cuda/cublaslt_library.h, cusolver_library.h, graph/cuda/nvrtc_library.h), as linking
# them costs every process their start-up (0.12 s and 15 ms on the dev VM for cuBLASLt and NVRTC).
# Usage: check_cuda_runtime.sh BUILD_DIR
set -euo pipefail
build_dir=$1
status=0
[[ -f $build_dir/lib/libember.so ]] || { echo "no libember.so under $build_dir/lib"; exit 1; }
for file in "$build_dir"/lib/*.so "$build_dir"/bin/*; do
  [[ -f $file && -x $file || $file == *.so ]] || continue
  if readelf -d "$file" | grep -q 'NEEDED.*\[libcuda\.so'; then
    echo "FAIL: $file links libcuda.so directly"
    status=1
  fi
  if readelf -d "$file" | grep -qE 'NEEDED.*\[lib(cublasLt|cusolver|nvrtc)\.so'; then
    echo "FAIL: $file links libcublasLt, libcusolver or libnvrtc (they are loaded on first use)"
    status=1
  fi
  [[ $(basename "$file") == libember.so ]] && continue
  # cudart_static brings its libcudart_static_<hash> symbols; any of them means a second runtime.
  if nm "$file" 2>/dev/null | grep -q 'libcudart_static_'; then
    echo "FAIL: $file carries its own copy of the CUDA runtime (cudart)"
    status=1
  fi
done
[[ $status == 0 ]] && echo "one CUDA runtime: only libember carries cudart; nothing links libcuda.so, libcublasLt, libcusolver or libnvrtc"
exit $status
