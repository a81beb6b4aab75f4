// Tensor handle: metadata, data access, autograd entry points.
#include "runtime/tensor.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "runtime/autograd/node.h"
#include "runtime/autograd/view_history.h"
#include "runtime/dispatch.h"
#include "runtime/functional.h"
#include "runtime/memory/storage.h"
#include "runtime/tensor_alias.h"
#ifdef EMBER_HAS_CUDA
#include "runtime/cuda/cuda_context.h"
#endif

namespace ember {

Device TensorOptions::resolved_device() const {
  if (device) return *device;
  static const Device fallback = default_device();
  return fallback;
}

size_t byte_size(const Dims& sizes, DType dtype, std::string_view op) {
  const int64_t numel = sizes.product();
  const auto item = static_cast<int64_t>(element_size(dtype));
  check(numel <= std::numeric_limits<int64_t>::max() / item,
        "{}: shape {} of {} needs more bytes than an int64 can count", op, sizes, dtype);
  return static_cast<size_t>(numel * item);
}

Tensor make_tensor(const Dims& sizes, DType dtype, Device device) {
  for (int64_t size : sizes) check(size >= 0, "tensor: negative size in shape {}", sizes);
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = Storage::allocate(byte_size(sizes, dtype, "tensor"), device);
  impl->sizes = sizes;
  impl->strides = contiguous_strides(sizes, "tensor");
  impl->dtype = dtype;
  impl->device = device;
  return Tensor(std::move(impl));
}

void Tensor::fail_undefined() { fail("tensor: use of an undefined tensor"); }

int64_t Tensor::size(int64_t dim, Where where) const {
  CallSiteScope site(where);
  // wrap_dim lets a 0-d tensor name dim 0 (reductions accept it), but it has no size to return.
  check(this->dim() > 0, "size: dim {} of a 0-d tensor, which has no dims", dim);
  return sizes()[wrap_dim(dim, this->dim(), "size")];
}

int64_t Tensor::stride(int64_t dim, Where where) const {
  CallSiteScope site(where);
  check(this->dim() > 0, "stride: dim {} of a 0-d tensor, which has no dims", dim);
  return strides()[wrap_dim(dim, this->dim(), "stride")];
}

bool Tensor::is_contiguous() const {
  const TensorImpl& impl = checked_impl();
  if (impl.numel() == 0) return true;  // no element to be out of place (PyTorch agrees)
  int64_t expected = 1;
  for (int i = impl.sizes.size() - 1; i >= 0; --i) {
    if (impl.sizes[i] == 1) continue;  // the stride of a size-1 dim never matters
    if (impl.strides[i] != expected) return false;
    expected *= impl.sizes[i];
  }
  return true;
}

void* Tensor::raw_data_ptr() const {
  const TensorImpl& impl = checked_impl();
  return static_cast<char*>(impl.storage->data()) + impl.offset * static_cast<int64_t>(ember::element_size(impl.dtype));
}

template <typename T>
T* Tensor::data_ptr(Where where) const {
  if (dtype() != dtype_of<T>()) [[unlikely]] {
    CallSiteScope site(where);  // only on failure: kernels ask for their pointers on every call
    fail("data_ptr: the tensor's dtype is {}, the pointer asked for is to {}", dtype(), dtype_of<T>());
  }
  return static_cast<T*>(raw_data_ptr());
}
template float* Tensor::data_ptr<float>(Where) const;
template double* Tensor::data_ptr<double>(Where) const;
template BFloat16* Tensor::data_ptr<BFloat16>(Where) const;
template Float16* Tensor::data_ptr<Float16>(Where) const;
template int32_t* Tensor::data_ptr<int32_t>(Where) const;
template int64_t* Tensor::data_ptr<int64_t>(Where) const;
template bool* Tensor::data_ptr<bool>(Where) const;

double Tensor::item(Where where) const {
  CallSiteScope site(where);
  check(numel() == 1, "item: the tensor has {} elements (shape {}), expected exactly one", numel(),
        sizes());
  const Tensor host = host_values("item", *this, /*dense=*/false);
  return dispatch_dtype(dtype(), [&](auto zero) {
    using T = decltype(zero);
    return static_cast<double>(static_cast<compute_t<T>>(*static_cast<const T*>(host.raw_data_ptr())));
  });
}

int64_t Tensor::item_int64(Where where) const {
  CallSiteScope site(where);
  if (dtype() == kInt64 || dtype() == kInt32 || dtype() == kBool) {
    check(numel() == 1, "item: the tensor has {} elements (shape {}), expected exactly one", numel(), sizes());
    const Tensor host = host_values("item", *this, /*dense=*/false);
    if (dtype() == kInt64) return *static_cast<const int64_t*>(host.raw_data_ptr());
    if (dtype() == kInt32) return *static_cast<const int32_t*>(host.raw_data_ptr());
    return *static_cast<const bool*>(host.raw_data_ptr()) ? 1 : 0;
  }
  const double value = item(where);
  // 2^63 is an exact double: the values below it (after truncation) fit an int64.
  check(std::isfinite(value) && value >= -9223372036854775808.0 && value < 9223372036854775808.0,
        "item: {} {} does not fit an integer", dtype(), value);
  return static_cast<int64_t>(value);
}

void Tensor::fail_item_range(double value, bool is_signed, size_t bytes, Where where) const {
  CallSiteScope site(where);
  if (bytes == 0) fail("item<float>: {} {} is out of float's range", dtype(), value);
  // The integer exactly (a double rounds past 2^53): read again, the error path's cost only.
  fail("item: {} {} does not fit a {}-bit {} integer", dtype(), item_int64(where), 8 * bytes,
       is_signed ? "signed" : "unsigned");
}

template <typename T>
std::vector<T> Tensor::to_vector(Where where) const {
  CallSiteScope site(where);
  check(dtype() == dtype_of<T>(), "to_vector: requested {} from a {} tensor; convert with to() first",
        dtype_name(dtype_of<T>()), dtype());
  const Tensor host = host_values("to_vector", *this, /*dense=*/true);
  const T* data = host.data_ptr<T>();
  return std::vector<T>(data, data + host.numel());
}
template std::vector<float> Tensor::to_vector(Where) const;
template std::vector<double> Tensor::to_vector(Where) const;
template std::vector<BFloat16> Tensor::to_vector(Where) const;
template std::vector<Float16> Tensor::to_vector(Where) const;
template std::vector<int32_t> Tensor::to_vector(Where) const;
template std::vector<int64_t> Tensor::to_vector(Where) const;
template std::vector<bool> Tensor::to_vector(Where) const;

// ---- autograd ----

// Every reader of a view's history first catches up with in-place updates of its base.
bool Tensor::requires_grad() const {
  checked_impl();
  autograd::refresh_view_history(*impl_);
  return impl_->requires_grad || impl_->grad_fn != nullptr;
}

const std::shared_ptr<autograd::Node>& Tensor::grad_fn() const {
  checked_impl();
  autograd::refresh_view_history(*impl_);
  return impl_->grad_fn;
}

Tensor& Tensor::requires_grad_(bool enabled, Where where) {
  CallSiteScope site(where);
  check(is_leaf() || enabled,
        "requires_grad_: cannot turn off gradients of a non-leaf tensor; use detach()");
  check(!enabled || is_floating(dtype()),
        "requires_grad_: only floating-point tensors can require gradients, got {}", dtype());
  impl_->requires_grad = enabled;
  // Made now, before threads share the leaf: its first use in backward() must not race to make it.
  if (enabled) impl_->meta();
  return *this;
}

bool Tensor::is_leaf() const { return grad_fn() == nullptr; }

Tensor Tensor::grad() const {
  const TensorImpl& impl = checked_impl();
  if (!impl.autograd_meta || !impl.autograd_meta->grad) return Tensor();
  return *impl.autograd_meta->grad;
}

void Tensor::set_grad(const Tensor& grad, Where where) {
  CallSiteScope site(where);
  checked_impl();
  // As PyTorch: a gradient of another shape, dtype or device would fail (or broadcast) far away,
  // in backward's accumulation or an optimizer step.
  if (grad.defined())
    check(grad.sizes() == sizes() && grad.dtype() == dtype() && grad.device() == device(),
          "set_grad: the gradient is {} {} on {} but the tensor is {} {} on {}", grad.sizes(), grad.dtype(),
          grad.device(), sizes(), dtype(), device());
  notify_grad_set(*this);
  if (!grad.defined() && !impl_->autograd_meta) return;
  impl_->meta().grad = grad.defined() ? std::make_shared<Tensor>(grad) : nullptr;
}

void Tensor::backward(const Tensor& gradient, std::optional<bool> retain_graph, bool create_graph,
                      Where where) const {
  ember::backward({*this}, gradient.defined() ? std::vector<Tensor>{gradient} : std::vector<Tensor>{},
                  retain_graph, create_graph, where);
}

void Tensor::backward(const Tensor& gradient, std::optional<bool> retain_graph, bool create_graph,
                      const std::vector<Tensor>& inputs, Where where) const {
  ember::backward({*this}, gradient.defined() ? std::vector<Tensor>{gradient} : std::vector<Tensor>{},
                  retain_graph, create_graph, inputs, where);
}

Tensor Tensor::detach() const {
  const TensorImpl& source = checked_impl();
  Tensor alias(alias_impl(source, source.is_view));
  notify_alias(*this, alias);
  return alias;
}

Tensor Tensor::pin_memory(Where where) const {
  CallSiteScope site(where);
  const TensorImpl& source = checked_impl();
  check(source.device.is_cpu(), "pin_memory: only CPU tensors can be pinned, got a tensor on {}", source.device);
  std::string why_not;
  check(cuda_is_available(&why_not), "pin_memory: pinned host memory needs a CUDA device: {}", why_not);
  if (is_pinned()) return *this;
  const Tensor dense = host_values("pin_memory", *this, /*dense=*/true);  // copied on the host, outside any graph
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = Storage::allocate_pinned(std::max<size_t>(dense.nbytes(), 1));
  impl->sizes = dense.sizes();
  impl->strides = contiguous_strides(dense.sizes(), "pin_memory");
  impl->dtype = dense.dtype();
  impl->device = kCPU;
  if (dense.nbytes() > 0) std::memcpy(impl->storage->data(), dense.raw_data_ptr(), dense.nbytes());
  return Tensor(std::move(impl));
}

bool Tensor::is_pinned() const {
  const TensorImpl& impl = checked_impl();
#ifdef EMBER_HAS_CUDA
  return impl.device.is_cpu() && impl.storage->data() != nullptr && cuda::is_pinned(impl.storage->data());
#else
  (void)impl;
  return false;
#endif
}

void Tensor::record_stream(const cuda::Stream& stream, Where where) const {
  CallSiteScope site(where);
  const TensorImpl& impl = checked_impl();
  check(impl.device.is_cuda(), "record_stream: expected a CUDA tensor, got a tensor on {}", impl.device);
  check(stream.device == impl.device, "record_stream: the stream is on {} but the tensor is on {}", stream.device,
        impl.device);
  // A compiled function's replays compute into memory of their own; the call would mark only the
  // memory of the one run that recorded it.
  check(!dispatch_mode_active(),
        "record_stream: cannot be recorded into a compiled function; call it on the compiled call's results");
  impl.storage->record_stream(stream.id());
}

Tensor& Tensor::detach_(Where where) {
  CallSiteScope site(where);
  checked_impl();
  // A view made in grad mode shares its base's history (an in-place update of either remakes the
  // other's); detaching only the view in place would leave the two disagreeing. PyTorch refuses too.
  check(!impl_->view_origin, "detach_: cannot detach a view (shape {}) in place; use detach(), which returns a new "
        "tensor", sizes());
  autograd::set_history(*impl_, nullptr, 0);
  impl_->requires_grad = false;
  impl_->view_origin = nullptr;  // or an update of its base would give it a history again
  return *this;
}

void Tensor::retain_grad(Where where) {
  CallSiteScope site(where);
  checked_impl();
  check(requires_grad(), "retain_grad: the tensor (shape {}) does not require grad, so it gets no gradient to retain",
        sizes());
  if (is_leaf() || impl_->meta().retains_grad) return;
  autograd::retain_grad_of(impl_);
}

bool Tensor::retains_grad() const {
  const TensorImpl& impl = checked_impl();
  return impl.autograd_meta && impl.autograd_meta->retains_grad;
}

unsigned Tensor::register_grad_hook(GradHook hook, Where where) {
  CallSiteScope site(where);
  check(requires_grad(), "register_hook: the tensor (shape {}) does not require grad", sizes());
  check(hook != nullptr, "register_hook: the hook is empty (a default-constructed std::function)");
  if (is_leaf()) {
    AutogradMeta& meta = impl_->meta();
    const std::lock_guard lock(meta.mutex);  // a backward in another thread may be copying them
    meta.hooks.push_back(std::move(hook));
    return static_cast<unsigned>(meta.hooks.size() - 1);
  }
  std::vector<GradHook>& hooks = impl_->grad_fn->output_hooks[impl_->output_nr];
  hooks.push_back(std::move(hook));
  return static_cast<unsigned>(hooks.size() - 1);
}

void Tensor::remove_hook(unsigned position, Where where) const {
  CallSiteScope site(where);
  // A removed hook leaves an empty slot behind, so that every other position stays valid.
  const auto remove = [&](std::vector<GradHook>& hooks) {
    check(position < hooks.size(), "remove_hook: no hook at position {} (the tensor, shape {}, has had {} hooks{})",
          position, sizes(), hooks.size(), is_leaf() ? "" : " since its last in-place update");
    hooks[position] = nullptr;
  };
  // A leaf keeps its hooks while it does not require grad (requires_grad_(false), then true again),
  // so they can be removed then too, as libtorch's remove_hook, which does not ask.
  if (!requires_grad() && !impl_->autograd_meta)
    fail("remove_hook: no hook at position {} (the tensor, shape {}, does not require grad)", position, sizes());
  if (is_leaf()) {
    AutogradMeta& meta = impl_->meta();
    const std::lock_guard lock(meta.mutex);
    remove(meta.hooks);
  } else {
    remove(impl_->grad_fn->output_hooks[impl_->output_nr]);
  }
}

void backward(const std::vector<Tensor>& roots, const std::vector<Tensor>& grad_roots,
              std::optional<bool> retain_graph, bool create_graph, Where where) {
  CallSiteScope site(where);
  const std::vector<Tensor> seeds = autograd::make_seeds("backward", roots, grad_roots);
  autograd::run_backward(roots, seeds, retain_graph.value_or(create_graph), create_graph);
}

void backward(const std::vector<Tensor>& roots, const std::vector<Tensor>& grad_roots,
              std::optional<bool> retain_graph, bool create_graph, const std::vector<Tensor>& inputs, Where where) {
  CallSiteScope site(where);
  // Every argument is checked before anything changes (an input's retain_grad() included).
  const std::vector<Tensor> seeds = autograd::make_seeds("backward", roots, grad_roots);
  const std::vector<autograd::Edge> edges = autograd::accumulation_edges("backward", inputs);
  autograd::run_backward_into(roots, seeds, edges, retain_graph.value_or(create_graph), create_graph);
}

}  // namespace ember
