// Device code loaded at run time (NVRTC output from the compile stage) through the CUDA runtime's
// library API, so ember never links libcuda. No CUDA header here: handles are opaque, as in
// runtime/cuda/cuda_context.h.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "runtime/cuda/cuda_context.h"

namespace ember::cuda {

struct Dim3 {
  unsigned x = 1, y = 1, z = 1;
};

// `device`'s compute capability x 10 (90 on an H100/H200). Throws when it is not usable.
int compute_capability(Device device);

// One loaded program (cudaLibraryLoadData). The library is context-independent; the driver loads
// it into a device's context at the first launch there.
class KernelLibrary {
 public:
  // Loads `cubin` (built for compute capability `cubin_sm`, e.g. 80) when `device` can run it
  // (same major version, same or newer minor: 8.0 or 8.6 for sm_80), else `ptx`, which the driver
  // compiles for the device (a newer GPU than the cubin's). Throws ember::Error with the CUDA runtime's message
  // when the image cannot be loaded.
  KernelLibrary(Device device, std::string_view cubin, int cubin_sm, std::string_view ptx);
  ~KernelLibrary();
  KernelLibrary(const KernelLibrary&) = delete;
  KernelLibrary& operator=(const KernelLibrary&) = delete;

  // The kernel `name` (an extern "C" symbol) as a cudaKernel_t handle, valid while the library
  // lives. Throws ember::Error naming the kernel when the program has none by that name.
  void* kernel(const std::string& name) const;

  // Launches `kernel` on `stream` (of this library's device). `arguments[i]` points at the i-th
  // kernel parameter, as for cudaLaunchKernel. Errors (bad shape, too many threads) throw.
  void launch(void* kernel, Dim3 grid, Dim3 block, void** arguments, const Stream& stream,
              size_t shared_bytes = 0) const;

  bool loaded_from_ptx() const { return from_ptx_; }
  Device device() const { return device_; }

 private:
  void* library_ = nullptr;  // cudaLibrary_t
  Device device_;
  bool from_ptx_ = false;
};

}  // namespace ember::cuda
