// CustomFunctionNode and AutogradContext: recording a custom function's call (libtorch's
// _wrap_outputs and CppNode), its saved tensors and the checks on what its backward returns.
#include "runtime/autograd/custom_function.h"

#include <cxxabi.h>

#include <cstdlib>
#include <optional>
#include <string>
#include <utility>

#include "runtime/functional.h"
#include "runtime/tensor_alias.h"

namespace ember::autograd {

const char* SavedValue::kind() const {
  constexpr const char* kNames[] = {"None", "double", "int64", "bool", "string", "Tensor"};
  return kNames[value_.index()];
}

void SavedValue::fail_kind(const char* accessor) const {
  fail("AutogradContext::saved_data: {}() of a value holding {} (the accessors do not convert, as IValue's)", accessor,
       kind());
}

namespace custom_function_detail {
std::string demangled(const char* mangled) {
  int status = 0;
  char* readable = abi::__cxa_demangle(mangled, nullptr, nullptr, &status);
  std::string name = status == 0 && readable != nullptr ? readable : mangled;
  std::free(readable);
  return name;
}
}  // namespace custom_function_detail

namespace {
// A tensor over the same memory without autograd history: a saved output would otherwise hold
// its own node (output -> grad_fn -> saved output).
Tensor alias_without_history(const Tensor& tensor) { return Tensor(alias_impl(*tensor.impl(), /*is_view=*/true)); }

// Whether a tensor of shape `sizes` broadcasts to `target`: a gradient of shape `target` then
// sums back to it (PyTorch's engine does the same in validate_outputs).
bool broadcasts_to(const Dims& sizes, const Dims& target) {
  if (sizes.size() > target.size()) return false;
  const int offset = target.size() - sizes.size();
  for (int i = 0; i < sizes.size(); ++i)
    if (sizes[i] != 1 && sizes[i] != target[offset + i]) return false;
  return true;
}
}  // namespace

void AutogradContext::mark_dirty(const tensor_list& inputs) {
  dirty_.clear();
  for (const Tensor& input : inputs)
    if (input.defined()) dirty_.insert(input.impl());
}

void AutogradContext::mark_non_differentiable(const tensor_list& outputs) {
  non_differentiable_.clear();
  for (const Tensor& output : outputs)
    if (output.defined()) non_differentiable_.insert(output.impl());
}

bool AutogradContext::needs_input_grad(size_t tensor_index) const {
  check(tensor_index < call_->num_tensor_inputs(),
        "{}: needs_input_grad({}), but the function has {} tensor inputs (the index counts tensor arguments only)",
        call_->function_name(), tensor_index, call_->num_tensor_inputs());
  return call_->needs_grad(tensor_index);
}

tensor_list AutogradContext::get_saved_variables() const {
  check(!released_,
        "autograd: trying to backward through the graph a second time (through {}); its saved tensors were freed "
        "after the first backward. Pass retain_graph=true to the first call",
        call_->function_name());
  tensor_list unpacked;
  unpacked.reserve(saved_.size());
  for (size_t i = 0; i < saved_.size(); ++i) {
    const SavedVariable& saved = saved_[i];
    if (!saved.tensor.defined()) {
      unpacked.emplace_back();
      continue;
    }
    if (saved.tensor.version() != saved.version) {
      fail(
          "autograd: a tensor needed to compute gradients was modified by an in-place operation: saved tensor {} of "
          "{} (shape {}) is at version {}, but version {} was saved. Use clone() before modifying it in place",
          i, call_->function_name(), saved.tensor.sizes(), saved.tensor.version(), saved.version);
    }
    const Edge history = saved.is_output && unpack_self_ != nullptr ? Edge{*unpack_self_, saved.output_nr} : saved.edge;
    if (unpack_self_ == nullptr || !history.node) {
      unpacked.push_back(saved.tensor);
      continue;
    }
    // create_graph: the history it had when saved, so backward's ops record how the gradients
    // depend on it (as OpNode's saved tensors).
    Tensor restored = alias_without_history(saved.tensor);
    set_history(*restored.impl(), history.node, history.input_nr);
    unpacked.push_back(std::move(restored));
  }
  return unpacked;
}

CustomFunctionCall::CustomFunctionCall(std::string function_name, Backward backward, tensor_list argument_tensors,
                                       std::vector<bool> is_tensor, bool traceable)
    : function_name_(std::move(function_name)),
      backward_(backward),
      is_tensor_argument_(std::move(is_tensor)),
      inputs_(std::move(argument_tensors)),
      traceable_(traceable) {
  context_.call_ = this;
  bool any_requires_grad = false;
  for (const Tensor& input : inputs_)
    any_requires_grad = any_requires_grad || (input.defined() && input.requires_grad());
  records_ = grad_mode_enabled() && any_requires_grad;
  const size_t count = inputs_.size();
  edges_.assign(count, Edge{});
  edges_needed_.assign(count, false);
  input_metas_.assign(count, TensorMeta{});
  for (size_t i = 0; i < count; ++i) {
    const Tensor& input = inputs_[i];
    if (!input.defined()) continue;
    input_metas_[i] = {input.sizes(), input.dtype(), input.device()};
    if (records_ && input.requires_grad()) {
      edges_[i] = gradient_edge(input);
      edges_needed_[i] = true;
    }
  }
}

bool CustomFunctionCall::needs_grad(size_t tensor_index) const {
  if (!edges_needed_[tensor_index]) return false;
  return node_ == nullptr || edge_needed_by_backward(node_->next_edges[tensor_index]);
}

bool CustomFunctionCall::opaque_to_modes(const char* stage, const tensor_list& tensors) const {
  if (traceable_ || !dispatch_mode_active()) return false;
  // One read is enough: a capture breaks at it (fullgraph throws), compiled segments run every
  // call deferred so far, so the stage finds its tensors filled.
  const std::string what =
      fmt::format("{}::{} (a custom autograd function not marked is_traceable)", function_name_, stage);
  for (const Tensor& tensor : tensors) {
    if (!tensor.defined()) continue;
    notify_host_read(what.c_str(), tensor);
    break;
  }
  return true;
}

bool CustomFunctionCall::differentiable(const Tensor& output) const {
  return records_ && context_.non_differentiable_.count(output.impl()) == 0 && is_floating(output.dtype());
}

void CustomFunctionCall::check_dirty(const tensor_list& outputs) const {
  for (TensorImpl* dirty : context_.dirty_) {
    const Tensor* returned = nullptr;
    for (const Tensor& output : outputs)
      if (output.impl() == dirty) returned = &output;
    check(returned != nullptr,
          "{}: an input marked dirty (shape {}) was not returned by forward; the inputs it modifies in place must all "
          "be outputs of the function",
          function_name_, dirty->sizes);
    if (!differentiable(*returned)) continue;
    check(!(returned->is_leaf() && returned->requires_grad()),
          "{}: forward modified a leaf tensor that requires grad in place (mark_dirty, shape {}); a leaf that "
          "requires grad cannot be used in an in-place operation",
          function_name_, dirty->sizes);
    check(!dirty->is_view,
          "{}: forward modified a view in place (mark_dirty, shape {}); ember cannot rebase a view's base onto a "
          "custom function's node. Modify a clone() of the view, or the base itself",
          function_name_, dirty->sizes);
  }
}

void CustomFunctionCall::wrap_output(Tensor& output, uint32_t index, const std::shared_ptr<Node>& node) {
  TensorImpl* impl = output.impl();
  bool is_input = false;
  for (const Tensor& input : inputs_) is_input = is_input || input.impl() == impl;
  const bool is_dirty = context_.dirty_.count(impl) > 0;
  if (!differentiable(output)) {
    // As libtorch: an input returned as-is, or modified in place while it requires grad (under
    // NoGradGuard), comes back as an alias without history; an output made in forward loses a
    // requires_grad it was given there.
    if (is_input && (!is_dirty || output.requires_grad())) {
      output = output.detach();
    } else if (output.requires_grad() && !is_input && !impl->is_view) {
      output.detach_();
    }
    return;
  }
  if (is_dirty) {
    set_history(*impl, node, index);  // check_dirty refused a leaf that requires grad and a view
    return;
  }
  if (is_input) output = output.detach();  // the input keeps its own history; the alias gets the node
  set_history(*output.impl(), node, index);
}

void CustomFunctionCall::save_variables(const Node& node) {
  context_.saved_.clear();
  for (const Tensor& tensor : context_.to_save_) {
    AutogradContext::SavedVariable saved;
    if (tensor.defined()) {
      saved.version = tensor.version();
      if (tensor.grad_fn().get() == &node) {
        saved.is_output = true;
        saved.output_nr = tensor.impl()->output_nr;
        saved.tensor = alias_without_history(tensor);
      } else {
        // A view keeps its parent alive (view_origin): saving it as itself could close a cycle
        // through the parent's history, as OpNode::save_input avoids too.
        const bool alias = tensor.grad_fn() || tensor.impl()->view_origin;
        saved.tensor = alias ? alias_without_history(tensor) : tensor;
        if (tensor.requires_grad()) saved.edge = gradient_edge(tensor);
      }
    }
    context_.saved_.push_back(std::move(saved));
  }
}

void CustomFunctionCall::finish(std::unique_ptr<CustomFunctionCall> call, tensor_list& outputs) {
  CustomFunctionCall& self = *call;
  // Every refusal comes before any version or history changes: a dirty input given the node's
  // history before a later output is refused would keep a node that saved nothing.
  self.check_dirty(outputs);
  // As libtorch's get_and_bump_dirty: forward may have written a dirty input through data_ptr(),
  // which bumps no version, and a tensor saved before must still see the change.
  for (TensorImpl* dirty : self.context_.dirty_) dirty->storage->bump_version();
  std::shared_ptr<CustomFunctionNode> node;
  if (self.records_) {
    self.output_metas_.assign(outputs.size(), TensorMeta{});
    self.output_defined_.assign(outputs.size(), false);
    for (size_t i = 0; i < outputs.size(); ++i) {
      if (!outputs[i].defined()) continue;
      self.output_defined_[i] = true;
      self.output_metas_[i] = {outputs[i].sizes(), outputs[i].dtype(), outputs[i].device()};
    }
    std::vector<Edge> edges = std::move(self.edges_);
    node = std::make_shared<CustomFunctionNode>(static_cast<int>(outputs.size()), std::move(call));
    node->next_edges = std::move(edges);
    self.node_ = node.get();
  }
  for (size_t i = 0; i < outputs.size(); ++i)
    if (outputs[i].defined()) self.wrap_output(outputs[i], static_cast<uint32_t>(i), node);
  if (node) self.save_variables(*node);
  self.inputs_.clear();
  self.context_.to_save_.clear();
}

Tensor CustomFunctionCall::checked_gradient(Tensor gradient, size_t argument, size_t tensor_index) const {
  if (!gradient.defined() || !edges_needed_[tensor_index]) return Tensor();
  const TensorMeta& meta = input_metas_[tensor_index];
  if (gradient.sizes() != meta.sizes) {
    check(broadcasts_to(meta.sizes, gradient.sizes()),
          "{}: backward returned a gradient of shape {} for argument {}, a tensor of shape {} (expected that shape, "
          "or one it broadcasts to)",
          function_name_, gradient.sizes(), argument, meta.sizes);
    gradient = sum_to_size(gradient, meta.sizes);
  }
  check(gradient.device() == meta.device, "{}: backward returned a gradient on {} for argument {}, a tensor on {}",
        function_name_, gradient.device(), argument, meta.device);
  if (gradient.dtype() != meta.dtype) gradient = gradient.to(meta.dtype);
  return gradient;
}

namespace {
// Marks the context's saved tensors as restored with their history while a create_graph
// backward runs, also when backward throws.
class UnpackWithHistory {
 public:
  UnpackWithHistory(const std::shared_ptr<Node>*& slot, const std::shared_ptr<Node>* self)
      : slot_(slot), previous_(std::exchange(slot, self)) {}
  ~UnpackWithHistory() { slot_ = previous_; }
  UnpackWithHistory(const UnpackWithHistory&) = delete;
  UnpackWithHistory& operator=(const UnpackWithHistory&) = delete;

 private:
  const std::shared_ptr<Node>*& slot_;
  const std::shared_ptr<Node>* previous_;
};
}  // namespace

tensor_list CustomFunctionCall::run_backward(tensor_list&& grad_outputs, const std::shared_ptr<Node>* self) {
  if (context_.materialize_grads_) {
    for (size_t i = 0; i < grad_outputs.size(); ++i) {
      if (grad_outputs[i].defined() || !output_defined_[i]) continue;
      const TensorMeta& meta = output_metas_[i];
      grad_outputs[i] = zeros(meta.sizes, {.dtype = meta.dtype, .device = meta.device});
    }
  }
  tensor_list returned;
  {
    std::optional<DispatchModesHidden> opaque;
    if (opaque_to_modes("backward", grad_outputs)) opaque.emplace();
    const UnpackWithHistory restoring(context_.unpack_self_, self);
    CallSiteSuspend users_code;  // errors inside backward name backward's own lines
    returned = backward_(&context_, std::move(grad_outputs));
  }
  const size_t num_arguments = is_tensor_argument_.size();
  // As libtorch: extra results are accepted when all are undefined.
  bool extra_undefined = returned.size() > num_arguments;
  for (size_t i = num_arguments; i < returned.size(); ++i) extra_undefined = extra_undefined && !returned[i].defined();
  if (extra_undefined) returned.resize(num_arguments);
  check(returned.size() == num_arguments,
        "{}: backward returned {} gradients, expected {} (one per forward argument, an undefined Tensor for an "
        "argument that is not a tensor)",
        function_name_, returned.size(), num_arguments);
  tensor_list grad_inputs(num_tensor_inputs());
  size_t tensor_index = 0;
  for (size_t argument = 0; argument < num_arguments; ++argument) {
    if (!is_tensor_argument_[argument]) {
      check(!returned[argument].defined(),
            "{}: backward returned a defined gradient (shape {}) for argument {}, which is not a tensor; return an "
            "undefined Tensor there",
            function_name_, returned[argument].defined() ? returned[argument].sizes() : Dims{}, argument);
      continue;
    }
    grad_inputs[tensor_index] = checked_gradient(std::move(returned[argument]), argument, tensor_index);
    ++tensor_index;
  }
  return grad_inputs;
}

void CustomFunctionCall::release_saved() {
  // A function that saved no tensor loses nothing: a second backward through it runs, as one
  // through OpNodes that saved nothing.
  if (context_.saved_.empty()) return;
  context_.saved_.clear();
  context_.released_ = true;
}

}  // namespace ember::autograd
