// TensorImpl: what a Tensor handle points to. A view of storage (sizes, strides, offset, dtype)
// plus autograd metadata. Users hold ember::Tensor, never this.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "runtime/dims.h"
#include "runtime/dtype.h"
#include "runtime/memory/storage.h"

namespace ember {

class Tensor;
struct ViewOrigin;
namespace autograd {
class Node;
}

using GradHook = std::function<Tensor(const Tensor& grad)>;  // may return an undefined Tensor

// Autograd state that most tensors never need; allocated on first use.
struct AutogradMeta {
  std::shared_ptr<Tensor> grad;                 // the leaf's accumulated gradient
  std::weak_ptr<autograd::Node> grad_accumulator;  // shared by every use of a leaf
  std::vector<GradHook> hooks;                  // leaf hooks, run before accumulation
  bool retains_grad = false;                    // a non-leaf asked to keep its .grad
  // Guards grad and grad_accumulator: backward() calls from several threads may share a leaf (a
  // model trained by two threads), as PyTorch's AccumulateGrad guards its variable.
  std::mutex mutex;
};

struct TensorImpl {
  std::shared_ptr<Storage> storage;
  Dims sizes;
  Dims strides;         // in elements
  int64_t offset = 0;   // in elements
  DType dtype = DType::Float32;
  Device device;

  bool requires_grad = false;  // leaves only; a non-leaf requires grad iff it has a grad_fn
  bool is_view = false;        // aliases another tensor's storage
  // A view made in grad mode: how to remake its history after an in-place update of its base
  // (runtime/autograd/view_history.h), and the storage version its grad_fn reflects.
  std::shared_ptr<const ViewOrigin> view_origin;
  uint64_t view_version = 0;
  std::shared_ptr<autograd::Node> grad_fn;
  uint32_t output_nr = 0;      // which output of grad_fn this tensor is
  std::unique_ptr<AutogradMeta> autograd_meta;

  int64_t numel() const { return sizes.product(); }
  AutogradMeta& meta() {
    if (!autograd_meta) autograd_meta = std::make_unique<AutogradMeta>();
    return *autograd_meta;
  }
};

}  // namespace ember
