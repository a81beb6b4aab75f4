// Loading NVRTC at first use; see nvrtc_library.h for why it is not linked.
#include "graph/cuda/nvrtc_library.h"

#include "runtime/shared_library.h"

namespace ember::graph::cuda {

namespace {

// Set by graph/CMakeLists.txt: the soname of the toolkit's major version, and the file the build
// found (for a machine whose loader path lacks the toolkit).
constexpr const char* kSoname = EMBER_NVRTC_SONAME;

Nvrtc load() {
  void* handle = open_shared_library({kSoname, EMBER_NVRTC_PATH}, "NVRTC, which compiles fused CUDA kernels");
  Nvrtc nvrtc{};
  resolve_function(handle, "nvrtcCompileProgram", kSoname, nvrtc.CompileProgram);
  resolve_function(handle, "nvrtcCreateProgram", kSoname, nvrtc.CreateProgram);
  resolve_function(handle, "nvrtcDestroyProgram", kSoname, nvrtc.DestroyProgram);
  resolve_function(handle, "nvrtcGetCUBIN", kSoname, nvrtc.GetCUBIN);
  resolve_function(handle, "nvrtcGetCUBINSize", kSoname, nvrtc.GetCUBINSize);
  resolve_function(handle, "nvrtcGetErrorString", kSoname, nvrtc.GetErrorString);
  resolve_function(handle, "nvrtcGetPTX", kSoname, nvrtc.GetPTX);
  resolve_function(handle, "nvrtcGetPTXSize", kSoname, nvrtc.GetPTXSize);
  resolve_function(handle, "nvrtcGetProgramLog", kSoname, nvrtc.GetProgramLog);
  resolve_function(handle, "nvrtcGetProgramLogSize", kSoname, nvrtc.GetProgramLogSize);
  resolve_function(handle, "nvrtcVersion", kSoname, nvrtc.Version);
  return nvrtc;
}

}  // namespace

const Nvrtc& nvrtc() {
  static const Nvrtc library = load();  // a throw leaves it unset, so the next call retries
  return library;
}

}  // namespace ember::graph::cuda
