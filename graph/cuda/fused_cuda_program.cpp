// Fused groups on CUDA: NVRTC compile at fusion time, load per device, launch per call.
#include "graph/cuda/fused_cuda_program.h"

#include <algorithm>
#include <chrono>
#include <tuple>

#include <fmt/format.h>

#include "graph/codegen_cpp.h"
#include "graph/fused_launch.h"

namespace ember::graph {

std::pair<const ember::cuda::KernelLibrary*, void*> FusedCudaProgram::kernel(Device device, const std::string& name) {
  std::lock_guard lock(mutex_);
  const auto key = std::make_pair(device.index, name);
  std::unique_ptr<const ember::cuda::KernelLibrary>& library = libraries_[device.index];
  if (!library)
    library = std::make_unique<const ember::cuda::KernelLibrary>(device, binary.cubin, binary.sm, binary.ptx);
  if (auto found = kernels_.find(key); found != kernels_.end()) return {library.get(), found->second};
  void* handle = library->kernel(name);
  kernels_.emplace(key, handle);
  return {library.get(), handle};
}

std::shared_ptr<FusedCudaProgram> compile_fused_cuda_program(std::span<const FusedGroup* const> groups, bool log) {
  auto program = std::make_shared<FusedCudaProgram>();
  program->source = emit_module_source(groups, Target::Cuda);
  // The cubin is for the oldest GPU the groups run on when one is usable: it also runs on newer
  // GPUs of that major version, and its PTX is JIT-compiled for any newer one (PTX never serves
  // an older GPU). Without a usable GPU, for the H200 (sm_90) that gpu_check.sh runs on.
  cuda::CudaTarget target;
  if (cuda_is_available()) {
    target.sm = ember::cuda::compute_capability(groups.front()->device);
    for (const FusedGroup* group : groups)
      target.sm = std::min(target.sm, ember::cuda::compute_capability(group->device));
  }
  const auto start = std::chrono::steady_clock::now();
  program->binary = cuda::compile_cuda(program->source, target, "ember_fused.cu");
  if (log) {
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    fmt::print(stderr, "[ember output_code] CUDA program for sm_{} ({}, {:.1f} ms)\n{}\n", target.sm,
               program->binary.from_cache ? "disk cache" : "NVRTC", ms, program->source);
  }
  if (cuda_is_available())
    for (const FusedGroup* group : groups) {
      program->kernel(group->device, group->name);
      if (group->root != FusedRoot::None) program->kernel(group->device, group->name + "_finish");
    }
  return program;
}

namespace {

struct GroupKernels {
  const ember::cuda::KernelLibrary* library = nullptr;
  void* kernel = nullptr;
  void* finish = nullptr;  // a reduction's; null for a pointwise group
};

// The group's kernels on `device`, looked up once per device and then read without a lock.
GroupKernels kernels_of(const FusedOpDef& def, Device device) {
  const FusedGroup& group = def.group;
  const bool reduction = group.root != FusedRoot::None;
  auto look_up = [&] {
    GroupKernels found;
    std::tie(found.library, found.kernel) = def.cuda->kernel(device, group.name);
    if (reduction) found.finish = def.cuda->kernel(device, group.name + "_finish").second;
    return found;
  };
  if (device.index < 0 || static_cast<size_t>(device.index) >= def.cuda_handles.size()) return look_up();
  FusedOpDef::CudaHandles& handles = def.cuda_handles[static_cast<size_t>(device.index)];
  GroupKernels kernels;
  kernels.kernel = handles.kernel.load(std::memory_order_acquire);
  if (kernels.kernel == nullptr) {
    kernels = look_up();
    handles.library.store(kernels.library, std::memory_order_relaxed);
    handles.finish.store(kernels.finish, std::memory_order_relaxed);
    handles.kernel.store(kernels.kernel, std::memory_order_release);  // publishes the two above
  } else {
    kernels.library = static_cast<const ember::cuda::KernelLibrary*>(handles.library.load(std::memory_order_relaxed));
    kernels.finish = handles.finish.load(std::memory_order_relaxed);
  }
  return kernels;
}

}  // namespace

void fused_cuda_kernel(const OpCall& call, TensorList& outputs) {
  const auto& def = static_cast<const FusedOpDef&>(call.op);
  const FusedGroup& group = def.group;
  const FusedCudaLaunch launch = fused_cuda_launch(group);
  if (launch.grid == 0) return;  // no output elements
  const Device device = outputs[0].device();
  // Reused per thread: a launch allocates nothing for its operands and argument block (the
  // launch copies the block, so the next launch may overwrite it).
  thread_local FusedOperands operands;
  thread_local std::vector<uint64_t> words;
  fill_fused_operands(group, call, outputs, operands);
  // A split reduction's piece sums: scratch from the caching allocator, like eager's reductions
  // (during a CUDA-graph capture, from the graph's private pool).
  Tensor piece_sums;
  FusedPieceSums pieces;
  if (launch.pieces > 1) {
    piece_sums = make_tensor({static_cast<int64_t>(launch.pieces) * fused_extent(group).outputs}, kFloat64, device);
    pieces = {static_cast<double*>(piece_sums.raw_data_ptr()), launch.pieces};
  }
  fill_fused_cuda_arguments(group, operands, pieces, words);
  void* arguments[] = {words.data()};
  const GroupKernels kernels = kernels_of(def, device);
  const ember::cuda::Stream stream = ember::cuda::current_stream(device);
  kernels.library->launch(kernels.kernel, ember::cuda::Dim3{launch.grid, launch.pieces},
                          ember::cuda::Dim3{launch.block_x, launch.block_y}, arguments, stream);
  if (launch.pieces > 1) {
    const FusedCudaLaunch finish = finish_launch(group);
    kernels.library->launch(kernels.finish, ember::cuda::Dim3{finish.grid}, ember::cuda::Dim3{finish.block_x},
                            arguments, stream);
  }
}

}  // namespace ember::graph
