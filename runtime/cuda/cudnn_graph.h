// A thin layer over the cuDNN 9 graph (backend) API, used by runtime/cuda/cudnn_layer_norm.cpp:
// owning descriptors, status checks that throw ember::Error with cuDNN's own message, one cuDNN
// handle per thread and device, and "operation -> finalized execution plan" via the heuristics.
// Only compiled where CMake found cuDNN (EMBER_HAS_CUDNN).
#pragma once

#ifdef EMBER_HAS_CUDNN

#include <cudnn.h>

#include <cstdint>
#include <initializer_list>
#include <source_location>
#include <string>
#include <utility>
#include <vector>

namespace ember::cuda::cudnn {

// Throws ember::Error "cuDNN error at file:line: <name>: <last error message>" unless success.
void check(cudnnStatus_t status, std::source_location where = std::source_location::current());

// The calling thread's handle for the current CUDA device, created on first use unless `create`
// is false (then null until then). Handles live for the process (destroying them at exit could
// run after the CUDA runtime is gone).
cudnnHandle_t handle_for_current_device(bool create = true);

// An owned backend descriptor. set() and finalize() throw through check() on failure.
class Descriptor {
 public:
  Descriptor() = default;  // owns nothing
  explicit Descriptor(cudnnBackendDescriptorType_t type);
  ~Descriptor();
  Descriptor(Descriptor&& other) noexcept : raw_(other.raw_) { other.raw_ = nullptr; }
  Descriptor& operator=(Descriptor&& other) noexcept {
    std::swap(raw_, other.raw_);  // `other` destroys what this owned
    return *this;
  }
  Descriptor(const Descriptor&) = delete;
  Descriptor& operator=(const Descriptor&) = delete;

  cudnnBackendDescriptor_t get() const { return raw_; }
  void set(cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type, int64_t count, const void* values);
  void set_descriptor(cudnnBackendAttributeName_t name, const Descriptor& value);
  void finalize();

 private:
  cudnnBackendDescriptor_t raw_ = nullptr;
};

// A tensor of up to 8 dims. by_value: a host scalar passed by pointer at execution (epsilon).
Descriptor tensor(int64_t unique_id, cudnnDataType_t dtype, std::initializer_list<int64_t> sizes,
                  std::initializer_list<int64_t> strides, bool by_value = false);

// Everything an execution needs, kept alive together (a finalized plan refers to its parts).
struct Plan {
  std::vector<Descriptor> parts;  // tensors, operation, graph, engine configs
  Descriptor plan;  // destroyed before its parts (declared after them)
  int64_t workspace_bytes = 0;
};

// Builds the one-operation graph of `operation` (whose tensors are `tensors`) and finalizes the
// first engine configuration the heuristics (mode A) offer that finalizes. Returns an empty string
// on success, else why no plan was made (e.g. no engine supports the graph). Everything moves
// into `plan`.
std::string build_plan(std::vector<Descriptor> tensors, Descriptor operation, Plan& plan);

// Runs `plan` on `stream` with the given (unique id, pointer) pairs and a workspace of
// plan.workspace_bytes (may be null when 0).
void execute(const Plan& plan, void* stream, const std::vector<int64_t>& unique_ids,
             const std::vector<void*>& pointers, void* workspace);

}  // namespace ember::cuda::cudnn

#endif  // EMBER_HAS_CUDNN
