// Generated CUDA programs compiled (graph/cuda/nvrtc_program.h) and loaded
// (runtime/cuda/kernel_library.h) once per process and device: what a fused node's CUDA kernel
// calls on every run. Exists only in builds with EMBER_HAS_CUDA.
#pragma once

#include <memory>
#include <string_view>

#include "graph/cuda/nvrtc_program.h"
#include "runtime/cuda/kernel_library.h"

namespace ember::graph::cuda {

// The program for `source` loaded on `device`: compiled by NVRTC or read from the disk cache on
// first use, then kept for the process (keyed by the source, the target and the device). Thread-
// safe; concurrent first uses may compile twice, one result is kept.
std::shared_ptr<const ember::cuda::KernelLibrary> load_cuda_program(std::string_view source,
                                                                    Device device,
                                                                    const CudaTarget& target = {});

}  // namespace ember::graph::cuda
