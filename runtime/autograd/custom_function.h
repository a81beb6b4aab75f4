// Custom autograd functions (libtorch's torch::autograd::Function): an op whose forward and
// backward are the user's C++, recorded in the autograd graph as one CustomFunctionNode.
//
//   struct MulConstant : ember::autograd::Function<MulConstant> {
//     static Tensor forward(AutogradContext* ctx, Tensor x, double c) {
//       ctx->saved_data["c"] = c;
//       return mul(x, c);
//     }
//     static tensor_list backward(AutogradContext* ctx, tensor_list grad_outputs) {
//       return {mul(grad_outputs[0], ctx->saved_data["c"].toDouble()), Tensor()};
//     }
//   };
//   Tensor y = MulConstant::apply(x, 5.5);
//
// forward returns a Tensor or a tensor_list; backward gets one gradient per output and returns one
// per forward argument (an undefined Tensor for an argument that is not a tensor, or needs none).
// A tensor_list argument counts as one argument per element, a std::optional<Tensor> as a tensor
// when it holds a defined one, as libtorch counts them. Errors name the function: T::name when T
// declares `static constexpr const char* name = "..."`, else T's demangled type name.
//
// Differences from libtorch: mark_dirty on an input that is a view is refused (ember's CopySlices
// rebases only registry ops); there is no jvp hook; a view of an input that forward returns gets
// the node as its history, and an in-place update of it or of that input later is neither refused
// (as PyTorch does) nor followed (not checked: return a clone() from forward instead); apply()
// takes no call site (it is variadic), so its errors name the function instead.
// Under ember::compile, a function marked `static constexpr bool is_traceable = true` (libtorch's
// flag for compiled autograd) is recorded like any other code of fn: its forward's registry ops
// are captured, and so are its backward's when the engine runs it (inside a compiled step, or the
// backward of a compiled forward's results). Unmarked, its C++ may read tensor memory through
// data_ptr(), which no capture sees: it is a graph break naming the function (GraphBreak with
// fullgraph), and compiled segments run it on filled memory (see Function::is_traceable).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <type_traits>
#include <typeinfo>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <variant>
#include <vector>

#include "runtime/autograd/node.h"
#include "runtime/dispatch.h"

namespace ember::autograd {

using tensor_list = std::vector<Tensor>;
using variable_list = std::vector<Tensor>;

// One value of AutogradContext::saved_data. Unlike c10::IValue it holds only these five kinds
// (no lists, dicts, optionals, devices or custom classes), an int of any width is an int64 and a
// float a double; the accessors are IValue's names and, as IValue's, refuse another kind (toDouble
// of an int64 is an error, not a conversion). A Tensor kept here gets no version check: use
// save_for_backward for tensors the backward reads.
class SavedValue {
 public:
  SavedValue() = default;
  SavedValue(double value) : value_(value) {}                      // NOLINT: implicit, as IValue's
  SavedValue(float value) : value_(static_cast<double>(value)) {}  // NOLINT
  SavedValue(bool value) : value_(value) {}                        // NOLINT
  template <typename Int, typename = std::enable_if_t<std::is_integral_v<Int> && !std::is_same_v<Int, bool>>>
  SavedValue(Int value) : value_(static_cast<int64_t>(value)) {}  // NOLINT
  SavedValue(std::string value) : value_(std::move(value)) {}     // NOLINT
  SavedValue(const char* value) : value_(std::string(value)) {}   // NOLINT
  SavedValue(Tensor value) : value_(std::move(value)) {}          // NOLINT

  bool isNone() const { return std::holds_alternative<std::monostate>(value_); }
  bool isDouble() const { return std::holds_alternative<double>(value_); }
  bool isInt() const { return std::holds_alternative<int64_t>(value_); }
  bool isBool() const { return std::holds_alternative<bool>(value_); }
  bool isString() const { return std::holds_alternative<std::string>(value_); }
  bool isTensor() const { return std::holds_alternative<Tensor>(value_); }
  double toDouble() const { return get<double>("toDouble"); }
  int64_t toInt() const { return get<int64_t>("toInt"); }
  bool toBool() const { return get<bool>("toBool"); }
  const std::string& toStringRef() const { return get<std::string>("toStringRef"); }
  const Tensor& toTensor() const { return get<Tensor>("toTensor"); }
  const char* kind() const;  // "None", "double", "int64", "bool", "string" or "Tensor"

 private:
  template <typename Kind>
  const Kind& get(const char* accessor) const {
    if (const Kind* value = std::get_if<Kind>(&value_)) return *value;
    fail_kind(accessor);
  }
  [[noreturn]] void fail_kind(const char* accessor) const;

  std::variant<std::monostate, double, int64_t, bool, std::string, Tensor> value_;
};

class CustomFunctionCall;

// What forward hands to backward, as libtorch's AutogradContext.
struct AutogradContext {
  AutogradContext() = default;
  AutogradContext(const AutogradContext&) = delete;
  AutogradContext& operator=(const AutogradContext&) = delete;

  // Non-tensor values for backward (kept after a backward without retain_graph, as libtorch's).
  std::unordered_map<std::string, SavedValue> saved_data;

  // Tensors backward reads, checked at get_saved_variables: changing one in place before backward
  // is an error naming the function. Call at most once, in forward; undefined entries are kept.
  // Inputs and outputs come back with their history in a create_graph backward; a tensor forward
  // computed on the way has none (forward runs without grad mode), so a second derivative through
  // it is missed, as in PyTorch: save inputs or outputs and recompute from them.
  void save_for_backward(tensor_list to_save) { to_save_ = std::move(to_save); }
  tensor_list get_saved_variables() const;
  // Inputs forward modified in place: they must be returned, and their history becomes this node.
  void mark_dirty(const tensor_list& inputs);
  // Outputs without gradients: they do not require grad, and backward gets zeros (or undefined,
  // with set_materialize_grads(false)) for them.
  void mark_non_differentiable(const tensor_list& outputs);
  // true (the default): an output that received no gradient reaches backward as zeros of its
  // shape; false: as an undefined Tensor.
  void set_materialize_grads(bool value) { materialize_grads_ = value; }
  // Whether tensor input i (counting tensor arguments only, as libtorch's edges) needs a
  // gradient; backward may skip computing the others. Valid in forward and backward; inside an
  // autograd::grad, false for an input whose gradient leads to none of grad's inputs (libtorch).
  bool needs_input_grad(size_t tensor_index) const;

 private:
  friend class CustomFunctionCall;
  struct SavedVariable {
    Tensor tensor;  // without history (an alias) where it had one, so the node holds no cycle
    uint64_t version = 0;
    Edge edge;  // create_graph: the history it gets back (an input's edge); unused for an output
    bool is_output = false;
    uint32_t output_nr = 0;
  };
  const CustomFunctionCall* call_ = nullptr;
  tensor_list to_save_;
  std::vector<SavedVariable> saved_;
  std::unordered_set<TensorImpl*> dirty_;
  std::unordered_set<const TensorImpl*> non_differentiable_;
  bool materialize_grads_ = true;
  // Atomic: the node's saved_released() reads it without the node's lock, which release_saved holds.
  std::atomic<bool> released_{false};
  // Set while a create_graph backward runs: saved tensors come back with their history.
  const std::shared_ptr<Node>* unpack_self_ = nullptr;
};

// One call of a custom function: its context and what the checks on backward's results need. Made
// before forward runs (forward may ask needs_input_grad), owned by the node once forward returned.
class CustomFunctionCall {
 public:
  using Backward = tensor_list (*)(AutogradContext* ctx, tensor_list grad_outputs);
  // `argument_tensors`: the tensors among the forward arguments, `is_tensor` one entry per
  // argument slot (see Function::apply). Takes the tensors' gradient edges when grad mode is on
  // and one of them requires grad.
  CustomFunctionCall(std::string function_name, Backward backward, tensor_list argument_tensors,
                     std::vector<bool> is_tensor, bool traceable);
  CustomFunctionCall(const CustomFunctionCall&) = delete;
  CustomFunctionCall& operator=(const CustomFunctionCall&) = delete;

  AutogradContext& context() { return context_; }
  const std::string& function_name() const { return function_name_; }
  // For a function not marked is_traceable, while a recording dispatch mode is installed: tells
  // the modes that `stage` ("forward", "backward") reads its tensors' memory on the host and
  // returns true (the caller then hides the modes while the stage runs). False otherwise.
  bool opaque_to_modes(const char* stage, const tensor_list& tensors) const;
  bool opaque_to_modes(const char* stage) const { return opaque_to_modes(stage, inputs_); }
  size_t num_tensor_inputs() const { return input_metas_.size(); }
  // Whether tensor input `tensor_index` gets a gradient: it requires grad and, inside backward, the
  // running pass sends one through its edge (autograd::grad runs only what leads to its inputs).
  bool needs_grad(size_t tensor_index) const;

  // After forward: the outputs get their history (an input returned as-is comes back as an alias
  // that gets it), dirty inputs a version bump, and the saved tensors are kept. When the call
  // records, a CustomFunctionNode takes `call` and becomes the outputs' grad_fn.
  static void finish(std::unique_ptr<CustomFunctionCall> call, tensor_list& outputs);

  // The node's apply: `self` set for a create_graph backward.
  tensor_list run_backward(tensor_list&& grad_outputs, const std::shared_ptr<Node>* self);
  void release_saved();
  bool saved_released() const { return context_.released_; }

 private:
  // Whether `output` gets the node's history: the call records, and it is a floating-point tensor
  // not marked non-differentiable.
  bool differentiable(const Tensor& output) const;
  // The refusals of mark_dirty (an input not returned, a leaf that requires grad, a view).
  void check_dirty(const tensor_list& outputs) const;
  void wrap_output(Tensor& output, uint32_t index, const std::shared_ptr<Node>& node);
  void save_variables(const Node& node);
  Tensor checked_gradient(Tensor gradient, size_t argument, size_t tensor_index) const;

  std::string function_name_;
  Backward backward_;
  AutogradContext context_;
  std::vector<bool> is_tensor_argument_;  // per forward argument
  tensor_list inputs_;                    // the tensor arguments, between forward and finish()
  std::vector<Edge> edges_;               // their gradient edges, until the node takes them
  std::vector<bool> edges_needed_;
  std::vector<TensorMeta> input_metas_;   // per tensor argument
  std::vector<TensorMeta> output_metas_;  // to materialize missing gradients
  std::vector<bool> output_defined_;
  bool records_ = false;
  bool traceable_ = false;
  const Node* node_ = nullptr;  // the node that owns this call, once finish() made it
};

// The node a recording call makes; its apply() runs the function's backward.
class CustomFunctionNode final : public Node {
 public:
  CustomFunctionNode(int num_outputs, std::unique_ptr<CustomFunctionCall> call)
      : Node(num_outputs), call_(std::move(call)) {}
  std::string name() const override { return call_->function_name() + "_backward"; }
  std::vector<Tensor> apply(std::vector<Tensor>&& grad_outputs) override {
    const std::lock_guard lock(mutex_);
    return call_->run_backward(std::move(grad_outputs), nullptr);
  }
  // backward runs in grad mode (the engine's), its saved tensors with their history, so a
  // backward written with differentiable ember ops can be differentiated again.
  std::vector<Tensor> apply_with_history(std::vector<Tensor>&& grad_outputs,
                                         const std::shared_ptr<Node>& self) override {
    const std::lock_guard lock(mutex_);
    return call_->run_backward(std::move(grad_outputs), &self);
  }
  void release_saved() override {
    const std::lock_guard lock(mutex_);
    call_->release_saved();
  }
  bool saved_released() const override { return call_->saved_released(); }

 private:
  std::unique_ptr<CustomFunctionCall> call_;
  // One backward at a time per node: backward may write saved_data, and several threads may run
  // backward through one retained graph (libtorch's CppNode locks alike).
  std::mutex mutex_;
};

namespace custom_function_detail {

// T's name in errors: T::name when declared, else the demangled type name.
std::string demangled(const char* mangled);
template <class T>
std::string function_name() {
  if constexpr (requires { T::name; })
    return std::string(T::name);
  else
    return demangled(typeid(T).name());
}

// Each argument's tensors, and per argument slot whether it is one: a Tensor is one (defined or
// not), a tensor_list one per element, a std::optional<Tensor> one when it holds a defined tensor.
template <typename Argument>
void collect(const Argument& argument, tensor_list& tensors, std::vector<bool>& is_tensor) {
  if constexpr (std::is_same_v<Argument, Tensor>) {
    tensors.push_back(argument);
    is_tensor.push_back(true);
  } else if constexpr (std::is_same_v<Argument, tensor_list>) {
    for (const Tensor& tensor : argument) collect(tensor, tensors, is_tensor);
  } else if constexpr (std::is_same_v<Argument, std::optional<Tensor>>) {
    const bool present = argument.has_value() && argument->defined();
    if (present) tensors.push_back(*argument);
    is_tensor.push_back(present);
  } else {
    is_tensor.push_back(false);
  }
}

template <class T>
tensor_list call_backward(AutogradContext* ctx, tensor_list grad_outputs) {
  return T::backward(ctx, std::move(grad_outputs));
}

}  // namespace custom_function_detail

template <class T>
struct Function {
  // As libtorch's flag for compiled autograd: T declares `static constexpr bool is_traceable =
  // true` when its forward and backward compute only through ember ops (no data_ptr() reads or
  // writes), so ember::compile may capture them. Left false, a recording mode (a capture, compiled
  // segments) is told of a host read before each of them, which is a graph break under capture
  // (fullgraph: GraphBreak naming the function) and runs them outside the modes, on filled memory.
  static constexpr bool is_traceable = false;

  // Runs T::forward with grad recording off and, when grad mode is on and a tensor argument
  // requires grad, makes one node running T::backward the history of its outputs.
  template <typename X = T, typename... Args>
  static auto apply(Args&&... args)
      -> std::enable_if_t<std::is_same_v<X, T>,
                          decltype(X::forward(static_cast<AutogradContext*>(nullptr), std::declval<Args>()...))> {
    using Result = decltype(X::forward(static_cast<AutogradContext*>(nullptr), std::declval<Args>()...));
    static_assert(std::is_same_v<Result, Tensor> || std::is_same_v<Result, tensor_list>,
                  "ember::autograd::Function: forward must return a Tensor or a tensor_list");
    tensor_list tensors;
    std::vector<bool> is_tensor;
    (custom_function_detail::collect(std::as_const(args), tensors, is_tensor), ...);
    auto call = std::make_unique<CustomFunctionCall>(custom_function_detail::function_name<T>(),
                                                     &custom_function_detail::call_backward<T>, std::move(tensors),
                                                     std::move(is_tensor), T::is_traceable);
    Result result;
    {
      NoGradGuard no_grad;
      std::optional<DispatchModesHidden> opaque;
      if (call->opaque_to_modes("forward")) opaque.emplace();
      CallSiteSuspend users_code;  // errors inside forward name forward's own lines
      result = T::forward(&call->context(), std::forward<Args>(args)...);
    }
    if constexpr (std::is_same_v<Result, Tensor>) {
      tensor_list outputs{std::move(result)};
      CustomFunctionCall::finish(std::move(call), outputs);
      return std::move(outputs[0]);
    } else {
      CustomFunctionCall::finish(std::move(call), result);
      return result;
    }
  }
};

}  // namespace ember::autograd
