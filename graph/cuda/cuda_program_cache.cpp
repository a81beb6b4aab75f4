// The process-wide map from (program, target, device) to its loaded KernelLibrary. Loading is
// outside the lock: a compile takes ~0.3-1 s and must not stall other devices' lookups.
#include "graph/cuda/cuda_program_cache.h"

#include <map>
#include <mutex>

#include "graph/kernel_cache.h"

namespace ember::graph::cuda {
namespace {

struct Loaded {
  std::mutex mutex;
  // (key of source and NVRTC options, device index) -> library; the options carry the SM.
  std::map<std::pair<std::string, int>, std::shared_ptr<const ember::cuda::KernelLibrary>> libraries;
};

Loaded& loaded() {
  static Loaded* instance = new Loaded;  // never destroyed: libraries outlive static teardown
  return *instance;
}

}  // namespace

std::shared_ptr<const ember::cuda::KernelLibrary> load_cuda_program(std::string_view source,
                                                                    Device device,
                                                                    const CudaTarget& target) {
  std::string flags;
  for (const std::string& option : nvrtc_options(target)) flags += option + '\n';
  const auto key = std::make_pair(cache::key({source, flags}), device.index);
  Loaded& state = loaded();
  {
    std::lock_guard lock(state.mutex);
    if (auto found = state.libraries.find(key); found != state.libraries.end()) return found->second;
  }
  CudaBinary binary = compile_cuda(source, target);
  auto library = std::make_shared<const ember::cuda::KernelLibrary>(device, binary.cubin,
                                                                    binary.sm, binary.ptx);
  std::lock_guard lock(state.mutex);
  return state.libraries.emplace(key, std::move(library)).first->second;
}

}  // namespace ember::graph::cuda
