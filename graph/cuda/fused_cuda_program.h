// The CUDA side of fused nodes: every CUDA group of a graph compiled by NVRTC into one program
// (at fusion time, which needs no GPU), loaded on a device the first time it is needed, and the
// kernel a fused node's OpDef runs on CUDA. Exists only in builds with EMBER_HAS_CUDA.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <utility>

#include "graph/cuda/nvrtc_program.h"
#include "graph/fusion.h"
#include "runtime/cuda/kernel_library.h"

namespace ember::graph {

struct FusedCudaProgram {
  std::string source;         // the generated program (graph/codegen_emit_cuda.cpp)
  cuda::CudaBinary binary;    // its cubin and PTX

  // The kernel `name` on `device`, loading the program there on first use. Thread-safe (it locks;
  // fused_cuda_kernel keeps the result in the FusedOpDef, so only a first launch comes here).
  std::pair<const ember::cuda::KernelLibrary*, void*> kernel(Device device, const std::string& name);

 private:
  std::mutex mutex_;
  std::map<int, std::unique_ptr<const ember::cuda::KernelLibrary>> libraries_;  // by device index
  std::map<std::pair<int, std::string>, void*> kernels_;
};

// Compiles `groups` (all on CUDA devices) into one program; when a device is usable, loads it
// there now, so that a CUDA-graph capture later only launches. Throws ember::Error with NVRTC's
// log when the program does not compile. `log` prints the source (EMBER_LOGS=output_code).
std::shared_ptr<FusedCudaProgram> compile_fused_cuda_program(std::span<const FusedGroup* const> groups, bool log);

// The CUDA kernel of every fused OpDef: packs the call's operands (graph/fused_launch.h) and
// launches the group's kernel on the current stream of the output's device.
void fused_cuda_kernel(const OpCall& call, TensorList& outputs);

}  // namespace ember::graph
