// NVRTC's entry points, loaded with dlopen on first use instead of linked into ember_graph.
//
// Why: linking libnvrtc made every process that loads ember_graph run its initializers and
// relocate its image before main(), about half of the remaining start-up of an ember binary once
// cuBLASLt was loaded lazily (runtime/cuda/cublaslt_library.h), though only a compile of a fused
// CUDA kernel uses it. tests/install/check_cuda_runtime.sh keeps it unlinked.
#pragma once

#include <nvrtc.h>

namespace ember::graph::cuda {

// The functions ember calls, named as in nvrtc.h without the `nvrtc` prefix.
struct Nvrtc {
  decltype(&::nvrtcCompileProgram) CompileProgram;
  decltype(&::nvrtcCreateProgram) CreateProgram;
  decltype(&::nvrtcDestroyProgram) DestroyProgram;
  decltype(&::nvrtcGetCUBIN) GetCUBIN;
  decltype(&::nvrtcGetCUBINSize) GetCUBINSize;
  decltype(&::nvrtcGetErrorString) GetErrorString;
  decltype(&::nvrtcGetPTX) GetPTX;
  decltype(&::nvrtcGetPTXSize) GetPTXSize;
  decltype(&::nvrtcGetProgramLog) GetProgramLog;
  decltype(&::nvrtcGetProgramLogSize) GetProgramLogSize;
  decltype(&::nvrtcVersion) Version;
};

// Loads libnvrtc on the first call (by soname through the usual search path, then from where the
// build found it) and resolves every function; throws ember::Error naming the library and the
// loader's reason when that fails. Thread-safe; later calls return the same table.
const Nvrtc& nvrtc();

}  // namespace ember::graph::cuda
