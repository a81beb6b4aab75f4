// KernelLibrary over cudaLibraryLoadData / cudaLibraryGetKernel / cudaLaunchKernel. The CUDA
// runtime documents that a cudaKernel_t, cast to const void*, is accepted by cudaLaunchKernel.
#include "runtime/cuda/kernel_library.h"

#include <cuda_runtime_api.h>

#include <chrono>
#include <thread>

#include "runtime/cuda/cuda_check.h"
#include "runtime/cuda/cuda_graph.h"
#include "runtime/error.h"

namespace ember::cuda {

int compute_capability(Device device) {
  check_device(device);
  int major = 0, minor = 0;
  cuda_check(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device.index));
  cuda_check(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device.index));
  return major * 10 + minor;
}

KernelLibrary::KernelLibrary(Device device, std::string_view cubin, int cubin_sm,
                             std::string_view ptx)
    : device_(device) {
  check_device(device);
  DeviceGuard guard(device);
  const int sm = compute_capability(device);
  const int major = sm / 10, minor = sm % 10;
  // A cubin for X.y runs on X.z with z >= y (binary compatibility within a major version); PTX
  // is JIT-compiled for any newer architecture.
  from_ptx_ = !(sm / 10 == cubin_sm / 10 && sm % 10 >= cubin_sm % 10);
  // PTX is text and must be NUL-terminated; a std::string's data() is.
  std::string image(from_ptx_ ? ptx : cubin);
  check(!image.empty(), "KernelLibrary: no {} image for {} (compute capability {}.{})",
        from_ptx_ ? "PTX" : "cubin", device, major, minor);
  cudaLibrary_t library = nullptr;
  cudaError_t status =
      cudaLibraryLoadData(&library, image.c_str(), nullptr, nullptr, 0, nullptr, nullptr, 0);
  if (status != cudaSuccess) {
    cudaGetLastError();
    fail("KernelLibrary: cannot load the {} (sm_{} cubin, {} bytes of PTX) on {} (compute "
         "capability {}.{}): {}",
         from_ptx_ ? "PTX" : "cubin", cubin_sm, ptx.size(), device, major, minor,
         cudaGetErrorString(status));
  }
  library_ = library;
}

KernelLibrary::~KernelLibrary() {
  if (!library_) return;
  // Kernels of this library may still be queued or running (a compiled function dropped right
  // after its last call), and unloading under them is undefined: the device finishes first.
  // That wait would invalidate a graph capture running on the device, so it waits for captures
  // to end first (they are short), and under this thread's own capture, or one that does not end
  // in seconds, the library stays loaded (one module's memory, not a crash).
  // Errors are ignored: at process exit the driver may already be shut down.
  if (capturing_on_this_thread()) return;
  std::unique_lock no_new_captures = hold_off_captures(device_.index);
  for (int waited_ms = 0; capture_running_on(device_.index); ++waited_ms) {
    if (waited_ms >= 5000) return;
    no_new_captures.unlock();  // a capture may need to begin before the running ones end
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    no_new_captures.lock();
  }
  int previous = 0;
  if (cudaGetDevice(&previous) == cudaSuccess && cudaSetDevice(device_.index) == cudaSuccess) {
    cudaDeviceSynchronize();
    restore_device(previous);
  }
  cudaLibraryUnload(static_cast<cudaLibrary_t>(library_));
  cudaGetLastError();
}

void* KernelLibrary::kernel(const std::string& name) const {
  cudaKernel_t handle = nullptr;
  cudaError_t status = cudaLibraryGetKernel(&handle, static_cast<cudaLibrary_t>(library_), name.c_str());
  if (status != cudaSuccess) {
    cudaGetLastError();
    fail("KernelLibrary: no kernel named '{}' in the loaded program ({}); kernels must be "
         "extern \"C\"",
         name, cudaGetErrorString(status));
  }
  return handle;
}

void KernelLibrary::launch(void* kernel, Dim3 grid, Dim3 block, void** arguments,
                           const Stream& stream, size_t shared_bytes) const {
  check(stream.device == device_, "KernelLibrary: launch on a stream of {} for a library of {}",
        stream.device, device_);
  DeviceGuard guard(device_);
  cuda_check(cudaLaunchKernel(static_cast<const void*>(kernel), dim3(grid.x, grid.y, grid.z),
                              dim3(block.x, block.y, block.z), arguments, shared_bytes,
                              static_cast<cudaStream_t>(stream.handle)));
}

}  // namespace ember::cuda
