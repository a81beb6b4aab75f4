// ember::Tensor: a reference-counted handle to a TensorImpl, with libtorch's method names.
// Copying a Tensor shares the data; clone() copies it. Every method that runs an op goes through
// the dispatcher (runtime/dispatch.h) and records the caller's source location for errors.
#pragma once

#include <cmath>
#include <limits>
#include <memory>
#include <optional>
#include <source_location>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "runtime/tensor_impl.h"

namespace ember {

using Where = std::source_location;

namespace cuda {
struct Stream;
}

// Options for factories: ember::zeros({2, 3}, {.dtype = kFloat64, .requires_grad = true}).
struct TensorOptions {
  // Empty: the factory's own default, as in libtorch: float32 for most, int64 for randint and for
  // arange over integral bounds, the values' type for from_vector.
  std::optional<DType> dtype = std::nullopt;
  std::optional<Device> device = std::nullopt;  // empty: the default device
  bool requires_grad = false;

  DType resolved_dtype(DType fallback = DType::Float32) const { return dtype.value_or(fallback); }
  Device resolved_device() const;
};

namespace detail {
// A hook type that can hold nothing: a std::function or a function pointer (register_hook).
template <typename Hook>
inline constexpr bool may_be_empty_hook = std::is_pointer_v<Hook>;
template <typename Result, typename... Args>
inline constexpr bool may_be_empty_hook<std::function<Result(Args...)>> = true;
}  // namespace detail

class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(std::shared_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}

  bool defined() const { return impl_ != nullptr; }
  TensorImpl* impl() const { return impl_.get(); }
  const std::shared_ptr<TensorImpl>& impl_ptr() const { return impl_; }
  bool is_same(const Tensor& other) const { return impl_ == other.impl_; }

  // ---- metadata ----
  const Dims& sizes() const { return checked_impl().sizes; }
  const Dims& shape() const { return sizes(); }
  const Dims& strides() const { return checked_impl().strides; }
  int64_t size(int64_t dim, Where where = Where::current()) const;
  int64_t stride(int64_t dim, Where where = Where::current()) const;
  int dim() const { return sizes().size(); }
  int64_t numel() const { return checked_impl().numel(); }
  DType dtype() const { return checked_impl().dtype; }
  DType scalar_type() const { return dtype(); }
  Device device() const { return checked_impl().device; }
  int64_t storage_offset() const { return checked_impl().offset; }
  size_t element_size() const { return ember::element_size(dtype()); }
  size_t nbytes() const { return static_cast<size_t>(numel()) * element_size(); }
  bool is_contiguous() const;
  bool is_floating_point() const { return is_floating(dtype()); }
  uint64_t version() const { return checked_impl().storage->version(); }

  // Pointer to the first element (offset applied). T must match the dtype.
  template <typename T>
  T* data_ptr(Where where = Where::current()) const;
  void* raw_data_ptr() const;

  // ---- host values (these synchronize with the device) ----
  double item(Where where = Where::current()) const;
  // Integers are read without a trip through double (exact past 2^53); a floating value must then
  // be finite and within int64's range (truncated toward zero), else an Error. As libtorch's
  // item<T>, the value must fit T: 300 read as uint8_t, or 1e300 as float, is an Error, not a
  // wrapped or infinite value.
  template <typename T>
  T item(Where where = Where::current()) const {
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
      const int64_t value = item_int64(where);
      if (!std::in_range<T>(value)) fail_item_range(static_cast<double>(value), std::is_signed_v<T>, sizeof(T), where);
      return static_cast<T>(value);
    } else if constexpr (std::is_same_v<T, float>) {
      const double value = item(where);
      if (std::isfinite(value) && std::fabs(value) > std::numeric_limits<float>::max())
        fail_item_range(value, true, 0, where);
      return static_cast<float>(value);
    } else {
      return static_cast<T>(item(where));
    }
  }
  int64_t item_int64(Where where = Where::current()) const;
  template <typename T>
  std::vector<T> to_vector(Where where = Where::current()) const;
  std::string str(Where where = Where::current()) const;  // PyTorch-like printing

  // ---- autograd ----
  bool requires_grad() const;
  Tensor& requires_grad_(bool enabled = true, Where where = Where::current());
  bool is_leaf() const;
  Tensor grad() const;              // undefined until a backward pass accumulates into it
  // Undefined clears it (zero_grad(set_to_none)); else it must have this tensor's shape, dtype
  // and device, as PyTorch checks an assigned .grad.
  void set_grad(const Tensor& grad, Where where = Where::current());
  const std::shared_ptr<autograd::Node>& grad_fn() const;
  // retain_graph defaults to create_graph; create_graph records the backward pass itself, so the
  // gradients (and .grad) carry history and can be differentiated again (autograd/grad.h).
  void backward(const Tensor& gradient = {}, std::optional<bool> retain_graph = std::nullopt,
                bool create_graph = false, Where where = Where::current()) const;
  // torch's backward(inputs=...): only the .grad of `inputs` accumulate, every other leaf's stays
  // as it was; a non-leaf among them is retain_grad()ed (for good, as in PyTorch). Not empty.
  void backward(const Tensor& gradient, std::optional<bool> retain_graph, bool create_graph,
                const std::vector<Tensor>& inputs, Where where = Where::current()) const;
  Tensor detach() const;
  // Detaches this tensor from autograd in place; a view made in grad mode is refused (use detach()).
  Tensor& detach_(Where where = Where::current());
  // A non-leaf keeps its gradient in .grad from now on, after its hooks ran, and for its latest
  // version if an in-place op changes it later (as PyTorch). The tensor must require grad.
  void retain_grad(Where where = Where::current());
  bool retains_grad() const;  // retain_grad() was called on this non-leaf
  // `hook(grad)` runs when this tensor's gradient is computed; a defined result replaces it (and
  // must keep its shape, dtype and device). A hook may also return nothing (it only observes).
  // Returns the hook's position for remove_hook, as libtorch's. A non-leaf's hooks belong to its
  // current version: after an in-place op the tensor starts a new list (the old hooks stay with
  // the old version's gradient), again as libtorch's.
  template <typename Hook>
    requires std::is_invocable_v<Hook, const Tensor&>
  unsigned register_hook(Hook&& hook, Where where = Where::current()) {
    if constexpr (std::is_void_v<std::invoke_result_t<Hook, const Tensor&>>) {
      // Wrapped, an empty observer would no longer look empty and throw bad_function_call in backward;
      // register_grad_hook refuses the empty hook it is handed instead.
      if constexpr (detail::may_be_empty_hook<std::remove_cvref_t<Hook>>)
        if (!static_cast<bool>(hook)) return register_grad_hook(GradHook(), where);
      return register_grad_hook([observe = std::forward<Hook>(hook)](const Tensor& grad) mutable {
        observe(grad);
        return Tensor();
      }, where);
    } else
      return register_grad_hook(GradHook(std::forward<Hook>(hook)), where);
  }
  // Stops the hook at `position` (register_hook's result) from running; removing it again does
  // nothing. A position this tensor's list never had is an error.
  void remove_hook(unsigned position, Where where = Where::current()) const;

  // ---- views (share storage) ----
  Tensor view(const Dims& shape, Where where = Where::current()) const;
  Tensor reshape(const Dims& shape, Where where = Where::current()) const;
  Tensor transpose(int64_t dim0, int64_t dim1, Where where = Where::current()) const;
  Tensor t(Where where = Where::current()) const;
  Tensor permute(const Dims& order, Where where = Where::current()) const;
  Tensor slice(int64_t dim, int64_t start, int64_t end, int64_t step = 1,
               Where where = Where::current()) const;
  Tensor narrow(int64_t dim, int64_t start, int64_t length, Where where = Where::current()) const;
  Tensor select(int64_t dim, int64_t index, Where where = Where::current()) const;
  Tensor expand(const Dims& shape, Where where = Where::current()) const;
  Tensor expand_as(const Tensor& other, Where where = Where::current()) const;
  Tensor squeeze(Where where = Where::current()) const;
  Tensor squeeze(int64_t dim, Where where = Where::current()) const;
  Tensor unsqueeze(int64_t dim, Where where = Where::current()) const;
  Tensor diagonal(int64_t offset = 0, int64_t dim1 = 0, int64_t dim2 = 1, Where where = Where::current()) const;
  Tensor flatten(int64_t start_dim = 0, int64_t end_dim = -1, Where where = Where::current()) const;
  // Pieces that are views of this tensor, and tensors rearranged or masked from it: the functions of
  // the same name in runtime/functional_shape_ops.h.
  std::vector<Tensor> split(int64_t split_size, int64_t dim = 0, Where where = Where::current()) const;
  std::vector<Tensor> split(const std::vector<int64_t>& split_sizes, int64_t dim = 0,
                            Where where = Where::current()) const;
  std::vector<Tensor> split_with_sizes(const std::vector<int64_t>& split_sizes, int64_t dim = 0,
                                       Where where = Where::current()) const;
  std::vector<Tensor> chunk(int64_t chunks, int64_t dim = 0, Where where = Where::current()) const;
  std::vector<Tensor> unbind(int64_t dim = 0, Where where = Where::current()) const;
  Tensor masked_fill(const Tensor& mask, double value, Where where = Where::current()) const;
  Tensor masked_fill(const Tensor& mask, const Tensor& value, Where where = Where::current()) const;
  Tensor tril(int64_t diagonal = 0, Where where = Where::current()) const;
  Tensor triu(int64_t diagonal = 0, Where where = Where::current()) const;
  Tensor flip(const Dims& dims, Where where = Where::current()) const;
  Tensor repeat(const Dims& repeats, Where where = Where::current()) const;
  Tensor roll(const Dims& shifts, const Dims& dims = {}, Where where = Where::current()) const;
  // The functions of the same name in runtime/functional_shape_more.h (tensor_methods_shape_more.cpp).
  Tensor movedim(const Dims& source, const Dims& destination, Where where = Where::current()) const;
  Tensor movedim(int64_t source, int64_t destination, Where where = Where::current()) const;
  Tensor moveaxis(const Dims& source, const Dims& destination, Where where = Where::current()) const;
  Tensor moveaxis(int64_t source, int64_t destination, Where where = Where::current()) const;
  Tensor swapaxes(int64_t dim0, int64_t dim1, Where where = Where::current()) const;
  Tensor swapdims(int64_t dim0, int64_t dim1, Where where = Where::current()) const;
  Tensor unflatten(int64_t dim, const Dims& sizes, Where where = Where::current()) const;
  Tensor tile(const Dims& reps, Where where = Where::current()) const;
  Tensor diag(int64_t diagonal = 0, Where where = Where::current()) const;
  Tensor diag_embed(int64_t offset = 0, int64_t dim1 = -2, int64_t dim2 = -1, Where where = Where::current()) const;
  Tensor diagflat(int64_t offset = 0, Where where = Where::current()) const;
  Tensor trace(Where where = Where::current()) const;
  Tensor kron(const Tensor& other, Where where = Where::current()) const;
  Tensor cross(const Tensor& other, int64_t dim, Where where = Where::current()) const;
  Tensor outer(const Tensor& other, Where where = Where::current()) const;
  Tensor dot(const Tensor& other, Where where = Where::current()) const;
  Tensor contiguous(Where where = Where::current()) const;
  Tensor clone(Where where = Where::current()) const;
  Tensor to(DType dtype, Where where = Where::current()) const;
  Tensor to(Device device, bool non_blocking = false, Where where = Where::current()) const;
  // A copy of this CPU tensor in page-locked memory (itself when it already is), so that
  // to(cuda, /*non_blocking=*/true) returns before the copy ends (libtorch's pin_memory). Needs a
  // CUDA device. The copy has no autograd history.
  Tensor pin_memory(Where where = Where::current()) const;
  bool is_pinned() const;
  // Tells the caching allocator that work queued on `stream` (a stream of this tensor's CUDA
  // device, other than the one it was allocated on) uses this tensor's memory, so that freeing it
  // waits for that work before the memory is handed out again (libtorch's record_stream).
  void record_stream(const cuda::Stream& stream, Where where = Where::current()) const;

  // ---- math (each is the function of the same name in runtime/functional.h) ----
  Tensor add(const Tensor& other, double alpha = 1.0, Where where = Where::current()) const;
  Tensor sub(const Tensor& other, double alpha = 1.0, Where where = Where::current()) const;
  Tensor mul(const Tensor& other, Where where = Where::current()) const;
  Tensor div(const Tensor& other, Where where = Where::current()) const;
  // With a number, as libtorch's t.mul(2.0): the host-scalar ops (the dtype rules of a number).
  Tensor add(double value, Where where = Where::current()) const;
  Tensor sub(double value, Where where = Where::current()) const;
  Tensor mul(double value, Where where = Where::current()) const;
  Tensor div(double value, Where where = Where::current()) const;
  Tensor neg(Where where = Where::current()) const;
  Tensor exp(Where where = Where::current()) const;
  Tensor log(Where where = Where::current()) const;
  Tensor sqrt(Where where = Where::current()) const;
  Tensor abs(Where where = Where::current()) const;
  Tensor pow(double exponent, Where where = Where::current()) const;
  Tensor relu(Where where = Where::current()) const;
  Tensor sigmoid(Where where = Where::current()) const;
  Tensor tanh(Where where = Where::current()) const;
  Tensor clamp(std::optional<double> min, std::optional<double> max,
               Where where = Where::current()) const;
  Tensor matmul(const Tensor& other, Where where = Where::current()) const;
  Tensor sum(Where where = Where::current()) const;
  Tensor sum(const Dims& dims, bool keepdim = false, Where where = Where::current()) const;
  Tensor mean(Where where = Where::current()) const;
  Tensor mean(const Dims& dims, bool keepdim = false, Where where = Where::current()) const;
  Tensor max(Where where = Where::current()) const;
  Tensor min(Where where = Where::current()) const;
  Tensor argmax(int64_t dim, bool keepdim = false, Where where = Where::current()) const;
  // Along a dim: (values, int64 indices), as libtorch's t.max(dim) (tensor_methods_sort.cpp).
  std::tuple<Tensor, Tensor> max(int64_t dim, bool keepdim = false, Where where = Where::current()) const;
  std::tuple<Tensor, Tensor> min(int64_t dim, bool keepdim = false, Where where = Where::current()) const;
  std::tuple<Tensor, Tensor> sort(int64_t dim = -1, bool descending = false, bool stable = false,
                                  Where where = Where::current()) const;
  Tensor argsort(int64_t dim = -1, bool descending = false, bool stable = false, Where where = Where::current()) const;
  std::tuple<Tensor, Tensor> topk(int64_t k, int64_t dim = -1, bool largest = true, bool sorted = true,
                                  Where where = Where::current()) const;
  std::tuple<Tensor, Tensor> kthvalue(int64_t k, int64_t dim = -1, bool keepdim = false,
                                      Where where = Where::current()) const;
  Tensor isnan(Where where = Where::current()) const;
  Tensor isinf(Where where = Where::current()) const;
  Tensor isfinite(Where where = Where::current()) const;
  Tensor logical_not(Where where = Where::current()) const;
  Tensor logical_and(const Tensor& other, Where where = Where::current()) const;
  Tensor logical_or(const Tensor& other, Where where = Where::current()) const;
  Tensor logical_xor(const Tensor& other, Where where = Where::current()) const;
  Tensor any(Where where = Where::current()) const;
  Tensor any(int64_t dim, bool keepdim = false, Where where = Where::current()) const;
  Tensor all(Where where = Where::current()) const;
  Tensor all(int64_t dim, bool keepdim = false, Where where = Where::current()) const;
  Tensor count_nonzero(const Dims& dims = {}, Where where = Where::current()) const;
  Tensor prod(std::optional<DType> dtype = {}, Where where = Where::current()) const;
  Tensor prod(int64_t dim, bool keepdim = false, std::optional<DType> dtype = {},
              Where where = Where::current()) const;
  Tensor cumsum(int64_t dim, std::optional<DType> dtype = {}, Where where = Where::current()) const;
  Tensor cumprod(int64_t dim, std::optional<DType> dtype = {}, Where where = Where::current()) const;
  std::tuple<Tensor, Tensor> cummax(int64_t dim, Where where = Where::current()) const;
  std::tuple<Tensor, Tensor> cummin(int64_t dim, Where where = Where::current()) const;
  Tensor logcumsumexp(int64_t dim, Where where = Where::current()) const;
  Tensor softmax(int64_t dim, Where where = Where::current()) const;
  Tensor log_softmax(int64_t dim, Where where = Where::current()) const;
  // Shapes that depend on the values: the functions of the same name in runtime/functional_select.h
  // (they read the values on the host; tensor_methods_select.cpp).
  Tensor nonzero(Where where = Where::current()) const;
  Tensor argwhere(Where where = Where::current()) const;
  Tensor masked_select(const Tensor& mask, Where where = Where::current()) const;
  std::tuple<Tensor, Tensor, Tensor> unique(bool sorted = true, bool return_inverse = false, bool return_counts = false,
                                            std::optional<int64_t> dim = std::nullopt,
                                            Where where = Where::current()) const;
  std::tuple<Tensor, Tensor, Tensor> unique_consecutive(bool return_inverse = false, bool return_counts = false,
                                                        std::optional<int64_t> dim = std::nullopt,
                                                        Where where = Where::current()) const;
  Tensor bincount(const Tensor& weights = {}, int64_t minlength = 0, Where where = Where::current()) const;

  // ---- in place (bump the version counter) ----
  Tensor& add_(const Tensor& other, double alpha = 1.0, Where where = Where::current());
  Tensor& mul_(const Tensor& other, Where where = Where::current());
  Tensor& mul_(double value, Where where = Where::current());
  Tensor& copy_(const Tensor& source, Where where = Where::current());
  Tensor& fill_(double value, Where where = Where::current());
  Tensor& zero_(Where where = Where::current());
  Tensor& masked_fill_(const Tensor& mask, double value, Where where = Where::current());
  Tensor& masked_fill_(const Tensor& mask, const Tensor& value, Where where = Where::current());
  Tensor& tril_(int64_t diagonal = 0, Where where = Where::current());
  Tensor& triu_(int64_t diagonal = 0, Where where = Where::current());

 private:
  unsigned register_grad_hook(GradHook hook, Where where);
  // item<T>'s error: `value` does not fit a `bytes`-byte integer of that signedness (0: a float).
  // An integer value is exact in the message: it comes from item_int64 and is re-read from there.
  [[noreturn]] void fail_item_range(double value, bool is_signed, size_t bytes, Where where) const;
  // Inline: every metadata accessor goes through it, several times per dispatched op.
  const TensorImpl& checked_impl() const {
    if (impl_ == nullptr) [[unlikely]] fail_undefined();
    return *impl_;
  }
  [[noreturn]] static void fail_undefined();
  std::shared_ptr<TensorImpl> impl_;
};

// ---- operators ----
// A C++ operator cannot take a defaulted call-site parameter, but a converting constructor can,
// and it runs where the expression is written: each operator's right (or only) operand is an
// Operand, so an error in `a + b` names the user's line, as the functions' errors do.
template <typename T>
struct Operand {
  Operand(const T& value, Where where = Where::current()) : value(value), where(where) {}  // implicit on purpose
  const T& value;  // valid for the whole expression, temporaries included
  Where where;
};

Tensor operator+(const Tensor& a, Operand<Tensor> b);
Tensor operator-(const Tensor& a, Operand<Tensor> b);
Tensor operator*(const Tensor& a, Operand<Tensor> b);
Tensor operator/(const Tensor& a, Operand<Tensor> b);
Tensor operator+(const Tensor& a, Operand<double> b);
Tensor operator-(const Tensor& a, Operand<double> b);
Tensor operator*(const Tensor& a, Operand<double> b);
Tensor operator/(const Tensor& a, Operand<double> b);
Tensor operator+(double a, Operand<Tensor> b);
Tensor operator-(double a, Operand<Tensor> b);
Tensor operator*(double a, Operand<Tensor> b);
Tensor operator/(double a, Operand<Tensor> b);
Tensor operator-(Operand<Tensor> a);
Tensor operator==(const Tensor& a, Operand<Tensor> b);
Tensor operator!=(const Tensor& a, Operand<Tensor> b);
Tensor operator<(const Tensor& a, Operand<Tensor> b);
Tensor operator<=(const Tensor& a, Operand<Tensor> b);
Tensor operator>(const Tensor& a, Operand<Tensor> b);
Tensor operator>=(const Tensor& a, Operand<Tensor> b);
Tensor& operator+=(Tensor& a, Operand<Tensor> b);
Tensor& operator*=(Tensor& a, Operand<Tensor> b);
std::ostream& operator<<(std::ostream& out, const Tensor& tensor);

// Allocates an uninitialized contiguous tensor (no op, no autograd): the building block of
// factories and of the dispatcher's output allocation.
Tensor make_tensor(const Dims& sizes, DType dtype, Device device);
// The bytes of a dense tensor of `sizes` and `dtype` (sizes non-negative); an Error naming `op`
// when the count does not fit in an int64.
size_t byte_size(const Dims& sizes, DType dtype, std::string_view op);

}  // namespace ember

template <>
struct fmt::formatter<ember::Tensor> : fmt::formatter<std::string_view> {
  auto format(const ember::Tensor& tensor, fmt::format_context& ctx) const {
    return fmt::formatter<std::string_view>::format(tensor.str(), ctx);
  }
};
