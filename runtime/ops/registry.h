// The op registry: one OpDef per op, the single place an op is defined. The dispatcher, autograd,
// the compile stage, the profiler and the conformance tests all read ops from here.
//
// An op file registers its ops with a static OpRegistration object:
//   const OpRegistration registration([](OpRegistry& registry) { registry.add(make_op(...)); });
#pragma once

#include <array>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "runtime/ops/attrs.h"
#include "runtime/tensor.h"

namespace ember {

struct OpDef;

// Up to four tensors stored inline: the outputs of one op call.
class TensorList {
 public:
  static constexpr int kCapacity = 4;
  TensorList() = default;
  TensorList(std::initializer_list<Tensor> tensors) {
    for (const Tensor& tensor : tensors) push_back(tensor);
  }
  void push_back(Tensor tensor) {
    internal_assert(count_ < kCapacity, "TensorList capacity");
    items_[count_++] = std::move(tensor);
  }
  int size() const { return count_; }
  Tensor& operator[](int i) { return items_[i]; }
  const Tensor& operator[](int i) const { return items_[i]; }
  Tensor* begin() { return items_.data(); }
  Tensor* end() { return items_.data() + count_; }
  const Tensor* begin() const { return items_.data(); }
  const Tensor* end() const { return items_.data() + count_; }

 private:
  std::array<Tensor, kCapacity> items_;
  int count_ = 0;
};

// One call of an op: what the shape rule, kernel and modes see.
struct OpCall {
  const OpDef& op;
  std::span<const Tensor> inputs;
  const Attrs& attrs;

  const Tensor& input(int i) const { return inputs[i]; }
};

// What a shape rule decides about one output.
struct TensorMeta {
  Dims sizes;
  DType dtype = DType::Float32;
  Device device;
};
using OutputMetas = std::array<TensorMeta, TensorList::kCapacity>;

// What a view rule decides: the output aliases input 0's storage with this geometry.
struct ViewGeometry {
  Dims sizes;
  Dims strides;
  int64_t offset = 0;
};

// What a backward rule receives. Inputs and outputs are available when the OpDef asked to save
// them (save_inputs / save_outputs); sizes and dtypes of inputs always are.
struct BackwardContext {
  const Attrs& attrs;
  std::span<const Tensor> grad_outputs;  // undefined where an output received no gradient
  std::span<const Tensor> saved_inputs;  // undefined where not saved
  std::span<const Tensor> saved_outputs;
  std::span<const TensorMeta> input_metas;
  std::span<const bool> needs_input_grad;

  const Tensor& input(int i) const;
  const Tensor& output(int i) const;
  const Tensor& grad(int i = 0) const { return grad_outputs[i]; }
};

using ShapeRule = void (*)(const OpCall& call, OutputMetas& outputs);
using ViewRule = ViewGeometry (*)(const OpCall& call);
using Kernel = void (*)(const OpCall& call, TensorList& outputs);
// Writes one gradient per input into grad_inputs (leave undefined for "no gradient").
using BackwardRule = void (*)(const BackwardContext& ctx, std::span<Tensor> grad_inputs);

enum class OpKind : uint8_t {
  Pointwise,  // elementwise over broadcast inputs: fusible, has a functor
  Reduction,  // reduces dims: a fusion group root
  View,       // aliases input 0 (no kernel, a view rule)
  InPlace,    // writes the inputs in mutated_inputs and returns them, in order
  Factory,    // no tensor inputs
  Other,      // library calls (GEMM), gathers, losses, ...
};

// What autocast (runtime/autocast.h) does to an op's floating inputs inside an AutocastGuard,
// following PyTorch's CUDA autocast op lists. Float64 inputs are never cast (as in PyTorch).
enum class AutocastPolicy : uint8_t {
  None,            // run in the inputs' own dtypes
  LowerPrecision,  // GEMMs: cast to the autocast dtype (bf16 / fp16); they accumulate in fp32
  Float32,         // numerically sensitive ops (softmax, losses, norms, exp, sum): 16-bit -> fp32
  Promote,         // ops that need one dtype: cast every floating input to the widest of them
};

struct OpDef {
  std::string name;
  std::string schema;  // human-readable signature: "add(Tensor a, Tensor b, float alpha=1) -> Tensor"
  OpKind kind = OpKind::Other;
  int num_outputs = 1;
  ShapeRule infer = nullptr;   // required unless kind == View
  ViewRule view = nullptr;     // required when kind == View
  std::array<Kernel, 2> kernels{};  // indexed by DeviceType
  BackwardRule backward = nullptr;  // null: not differentiable
  uint32_t save_inputs = 0;    // bit i: backward needs input i
  // Bits of save_inputs that only the other inputs' gradients read (a product's operands: the
  // gradient of a in a b reads b): saved only when another input needs grad, so an in-place
  // update of an operand no gradient reads leaves the backward valid (PyTorch saves mm's mat2
  // only when self requires grad).
  uint32_t saved_for_other_inputs = 0;
  uint32_t save_outputs = 0;   // bit i: backward needs output i
  // For pointwise ops: the functor in kernels/functors.h that holds the math (e.g. "ember::fn::Add"),
  // which the code generator calls in the generated kernel.
  std::string functor;
  // Inputs whose gradients the op can never produce (e.g. integer class indices).
  uint32_t nondifferentiable_inputs = 0;
  // For InPlace ops: bit i set when the kernel writes input i (the optimizer steps write several).
  uint32_t mutated_inputs = 1;
  // For InPlace ops that write one value to every element (fill_, zero_): an expanded target,
  // whose elements share addresses, ends the same in any order, so the dispatcher accepts it (as
  // PyTorch's fill_ does); the kernels write each address once (without_repeats).
  bool accepts_expanded_target = false;
  AutocastPolicy autocast = AutocastPolicy::None;

  Kernel kernel_for(Device device) const { return kernels[static_cast<int>(device.type)]; }
};

// An OpDef with the fields every op sets; the op file sets the rest (outputs, saved tensors, ...)
// on the result, and the CUDA backend adds its kernel through OpRegistry::set_kernel.
OpDef make_op(const char* name, const char* schema, OpKind kind, ShapeRule infer, Kernel cpu_kernel,
              BackwardRule backward = nullptr);

class OpRegistry {
 public:
  const OpDef& add(OpDef def);
  // Throws ember::Error naming the op if it is not registered.
  const OpDef& get(const std::string& name) const;
  const OpDef* find(const std::string& name) const;
  std::vector<const OpDef*> all() const;  // sorted by name

  // Lets the CUDA backend add its kernels to ops the CPU files defined. Works before or after the
  // op's own registration; pending_kernel_ops() lists names set but never registered (a typo).
  void set_kernel(const std::string& name, DeviceType device, Kernel kernel);
  std::vector<std::string> pending_kernel_ops() const;
  // Sets an op's autocast policy; runtime/autocast.cpp holds the one table of them. Like
  // set_kernel, works before the op's registration; pending_autocast_ops() lists names never seen.
  void set_autocast(const std::string& name, AutocastPolicy policy);
  std::vector<std::string> pending_autocast_ops() const;

 private:
  std::unordered_map<std::string, std::unique_ptr<OpDef>> ops_;
  std::unordered_map<std::string, std::vector<std::pair<DeviceType, Kernel>>> pending_kernels_;
  std::unordered_map<std::string, AutocastPolicy> pending_autocast_;
};

OpRegistry& registry();

// A static object of this type in an op file registers that file's ops at load time.
struct OpRegistration {
  explicit OpRegistration(void (*register_ops)(OpRegistry&)) { register_ops(registry()); }
};

// Looks an op up once and caches the reference: `static const OpDef& op = lookup_op("add");`.
inline const OpDef& lookup_op(const char* name) { return registry().get(name); }

}  // namespace ember
