// The cuDNN graph-API layer of cudnn_graph.h, plus cudnn_unavailable_reason (norm_cuda_ops.h),
// which also answers in builds without cuDNN.
#include "runtime/cuda/cudnn_graph.h"

#include <string>

#include "runtime/cuda/norm_cuda_ops.h"
#include "runtime/device.h"
#include "runtime/error.h"

#ifdef EMBER_HAS_CUDNN
#include <cuda_runtime_api.h>

#include <utility>

#include "runtime/cuda/cuda_check.h"
#include "runtime/cuda/cuda_context.h"
#include "runtime/cuda/thread_handle_pool.h"
#endif

namespace ember::cuda {

#ifndef EMBER_HAS_CUDNN

std::string cudnn_unavailable_reason() { return "ember was built without cuDNN (CMake did not find it)"; }

#else

std::string cudnn_unavailable_reason() {
  std::string why;
  if (!cuda_is_available(&why)) return "CUDA is unavailable: " + why;
  // The header we compiled against and the library we loaded must share the major version.
  const size_t loaded = cudnnGetVersion();
  if (loaded / 10000 != CUDNN_MAJOR)
    return "cuDNN " + std::to_string(loaded) + " is loaded but ember was built for cuDNN " +
           std::to_string(CUDNN_MAJOR);
  try {
    cudnn::handle_for_current_device();
  } catch (const Error& error) {
    return error.what();
  }
  return {};
}

namespace cudnn {

namespace {

// cuDNN's name for `status` and its own detail of the last failure (the refusal's reason).
std::string last_error(cudnnStatus_t status) {
  char detail[512] = {};
  cudnnGetLastErrorString(detail, sizeof detail);
  return std::string(cudnnGetErrorString(status)) + (detail[0] ? std::string(": ") + detail : std::string());
}

}  // namespace

void check(cudnnStatus_t status, std::source_location where) {
  if (status == CUDNN_STATUS_SUCCESS) [[likely]] return;
  fail("cuDNN error at {}:{}: {}", where.file_name(), where.line(), last_error(status));
}

namespace {

cudnnHandle_t create_handle(int device) {
  DeviceGuard guard(Device(DeviceType::CUDA, device));
  cudnnHandle_t handle = nullptr;
  check(cudnnCreate(&handle));
  return handle;
}

}  // namespace

cudnnHandle_t handle_for_current_device(bool create) {
  int device = 0;
  cuda_check(cudaGetDevice(&device));
  // One per thread and device, never destroyed: plans are keyed by their handle, and a handle
  // serves one thread at a time (an exited thread's goes to the next new one, with its plans).
  return ThreadHandlePool<cudnnHandle_t>::of(create_handle).for_this_thread(device, create);
}

Descriptor::Descriptor(cudnnBackendDescriptorType_t type) { check(cudnnBackendCreateDescriptor(type, &raw_)); }

Descriptor::~Descriptor() {
  if (raw_ != nullptr) cudnnBackendDestroyDescriptor(raw_);
}

void Descriptor::set(cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type, int64_t count,
                     const void* values) {
  check(cudnnBackendSetAttribute(raw_, name, type, count, values));
}

void Descriptor::set_descriptor(cudnnBackendAttributeName_t name, const Descriptor& value) {
  const cudnnBackendDescriptor_t raw = value.get();
  set(name, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &raw);
}

void Descriptor::finalize() { check(cudnnBackendFinalize(raw_)); }

Descriptor tensor(int64_t unique_id, cudnnDataType_t dtype, std::initializer_list<int64_t> sizes,
                  std::initializer_list<int64_t> strides, bool by_value) {
  Descriptor result(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
  const std::vector<int64_t> size_list(sizes), stride_list(strides);
  // Our pointers are checked to be 16-byte aligned before a plan is used (cudnn_layer_norm.cpp).
  const int64_t alignment = 16;
  result.set(CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &dtype);
  result.set(CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, static_cast<int64_t>(size_list.size()), size_list.data());
  result.set(CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, static_cast<int64_t>(stride_list.size()), stride_list.data());
  result.set(CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &unique_id);
  result.set(CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &alignment);
  if (by_value) {
    const bool yes = true;
    result.set(CUDNN_ATTR_TENSOR_IS_BY_VALUE, CUDNN_TYPE_BOOLEAN, 1, &yes);
  }
  result.finalize();
  return result;
}

namespace {

// The engine configurations cuDNN's heuristics in `mode` offer for a finalized graph, best first
// (empty when none). The caller creates the descriptors that GetAttribute fills in.
std::vector<Descriptor> engine_configs(const Descriptor& graph, cudnnBackendHeurMode_t mode,
                                       std::vector<Descriptor>& keep_alive) {
  Descriptor heuristics(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
  heuristics.set_descriptor(CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, graph);
  heuristics.set(CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode);
  if (cudnnBackendFinalize(heuristics.get()) != CUDNN_STATUS_SUCCESS) return {};
  int64_t count = 0;
  check(cudnnBackendGetAttribute(heuristics.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 0,
                                 &count, nullptr));
  std::vector<Descriptor> configs;
  std::vector<cudnnBackendDescriptor_t> raw_configs;
  for (int64_t i = 0; i < count; ++i) {
    configs.emplace_back(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR);
    raw_configs.push_back(configs.back().get());
  }
  if (count > 0)
    check(cudnnBackendGetAttribute(heuristics.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR,
                                   count, &count, raw_configs.data()));
  configs.resize(static_cast<size_t>(count));  // GetAttribute may return fewer than it counted
  keep_alive.push_back(std::move(heuristics));
  return configs;
}

}  // namespace

std::string build_plan(std::vector<Descriptor> tensors, Descriptor operation, Plan& plan) {
  cudnnHandle_t handle = handle_for_current_device();
  Descriptor graph(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
  graph.set_descriptor(CUDNN_ATTR_OPERATIONGRAPH_OPS, operation);
  graph.set(CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle);
  // A graph no engine can express fails here or in the heuristics: that is "unsupported", not an error.
  if (const cudnnStatus_t status = cudnnBackendFinalize(graph.get()); status != CUDNN_STATUS_SUCCESS)
    return "cuDNN rejected the operation graph: " + last_error(status);

  std::vector<Descriptor> parts = std::move(tensors);
  cudnnStatus_t last_status = CUDNN_STATUS_SUCCESS;
  // Mode A's ranked list first; the fallback list holds engines mode A may leave out.
  for (const cudnnBackendHeurMode_t mode : {CUDNN_HEUR_MODE_A, CUDNN_HEUR_MODE_FALLBACK}) {
    std::vector<Descriptor> configs = engine_configs(graph, mode, parts);
    for (Descriptor& config : configs) {
      Descriptor candidate(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
      candidate.set(CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle);
      candidate.set_descriptor(CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, config);
      last_status = cudnnBackendFinalize(candidate.get());
      if (last_status != CUDNN_STATUS_SUCCESS) continue;  // try the next engine
      int64_t returned = 0;
      check(cudnnBackendGetAttribute(candidate.get(), CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1,
                                     &returned, &plan.workspace_bytes));
      plan.plan = std::move(candidate);
      plan.parts = std::move(parts);
      plan.parts.push_back(std::move(operation));
      plan.parts.push_back(std::move(graph));
      plan.parts.push_back(std::move(config));
      return {};
    }
  }
  if (last_status == CUDNN_STATUS_SUCCESS) return "cuDNN's heuristics offered no engine configuration";
  return "no engine configuration of cuDNN's heuristics finalized (the last: " + last_error(last_status) + ")";
}

void execute(const Plan& plan, void* stream, const std::vector<int64_t>& unique_ids, const std::vector<void*>& pointers,
             void* workspace) {
  cudnnHandle_t handle = handle_for_current_device();
  check(cudnnSetStream(handle, static_cast<cudaStream_t>(stream)));
  Descriptor pack(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
  pack.set(CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, static_cast<int64_t>(unique_ids.size()),
           unique_ids.data());
  pack.set(CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, static_cast<int64_t>(pointers.size()),
           pointers.data());
  pack.set(CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &workspace);
  pack.finalize();
  check(cudnnBackendExecute(handle, plan.plan.get(), pack.get()));
}

}  // namespace cudnn

#endif  // EMBER_HAS_CUDNN

}  // namespace ember::cuda
