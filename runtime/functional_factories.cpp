// Factory functions: empty, full, zeros, ones, arange, linspace, rand, randn, randint,
// from_vector, from_blob. Random factories reserve a Philox range and pass (seed, offset).
#include <cmath>

#include "runtime/dispatch.h"
#include "runtime/functional.h"
#include "runtime/ops/pointwise_common.h"
#include "runtime/random/random_attrs.h"
#ifdef EMBER_HAS_CUDA
#include "runtime/cuda/cuda_context.h"
#endif

namespace ember {

namespace {

// `name`: the function the user called (zeros, not the full op it dispatches), checked here so
// that its errors say so, and before a random factory reserves draws for a negative count.
// `fallback`: the factory's dtype when options name none.
Attrs factory_attrs(const char* name, const Dims& sizes, const TensorOptions& options, DType fallback = kFloat32) {
  for (int64_t size : sizes) check(size >= 0, "{}: negative size in shape {}", name, sizes);
  check(sizes.checked_product().has_value(), "{}: shape {} has more elements than an int64 can count", name, sizes);
  return Attrs{{"sizes", sizes}, {"dtype", options.resolved_dtype(fallback)}, {"device", options.resolved_device()}};
}

Tensor finish_factory(Tensor tensor, const TensorOptions& options) {
  if (options.requires_grad) tensor.requires_grad_(true);
  return tensor;
}

// Reserves Philox words for a random factory: two words per element covers float64 draws.
Attrs random_attrs(const char* name, const Dims& sizes, const TensorOptions& options, DType fallback = kFloat32) {
  Attrs attrs = factory_attrs(name, sizes, options, fallback);
  reserve_random_attrs(attrs, options.resolved_device(), 2 * static_cast<uint64_t>(sizes.product()));
  return attrs;
}

}  // namespace

// ---- factories ----
Tensor empty(const Dims& sizes, TensorOptions options, Where where) {
  CallSiteScope site(where);
  static const OpDef& op = lookup_op("empty");
  return finish_factory(dispatch_one(op, {}, factory_attrs("empty", sizes, options)), options);
}

namespace {

Tensor filled(const char* name, const Dims& sizes, double value, const TensorOptions& options) {
  static const OpDef& op = lookup_op("full");
  Attrs attrs = factory_attrs(name, sizes, options);
  ops::check_value_fits(name, value, options.resolved_dtype());
  attrs.set("value", value);
  return finish_factory(dispatch_one(op, {}, attrs), options);
}

}  // namespace

Tensor full(const Dims& sizes, double value, TensorOptions options, Where where) {
  CallSiteScope site(where);
  return filled("full", sizes, value, options);
}
Tensor zeros(const Dims& sizes, TensorOptions options, Where where) {
  CallSiteScope site(where);
  return filled("zeros", sizes, 0.0, options);
}
Tensor ones(const Dims& sizes, TensorOptions options, Where where) {
  CallSiteScope site(where);
  return filled("ones", sizes, 1.0, options);
}
Tensor full_like(const Tensor& like, double value, Where where) {
  CallSiteScope site(where);
  return filled("full_like", like.sizes(), value, {.dtype = like.dtype(), .device = like.device()});
}
Tensor zeros_like(const Tensor& like, Where where) { return full_like(like, 0.0, where); }
Tensor ones_like(const Tensor& like, Where where) { return full_like(like, 1.0, where); }

Tensor arange(double end, TensorOptions options, Where where) {
  return arange(0.0, end, 1.0, options, where);
}
Tensor arange(double start, double end, double step, TensorOptions options, Where where) {
  CallSiteScope site(where);
  static const OpDef& op = lookup_op("arange");
  check(step != 0.0, "arange: step must be non-zero");
  check(std::isfinite(start) && std::isfinite(end) && std::isfinite(step),
        "arange: bounds must be finite (start {}, end {}, step {})", start, end, step);
  const bool integral = start == std::floor(start) && end == std::floor(end) && step == std::floor(step);
  Attrs attrs{{"start", start}, {"end", end}, {"step", step}, {"dtype", options.resolved_dtype(integral ? kInt64 : kFloat32)},
              {"device", options.resolved_device()}};
  return finish_factory(dispatch_one(op, {}, attrs), options);
}
Tensor linspace(double start, double end, int64_t steps, TensorOptions options, Where where) {
  CallSiteScope site(where);
  static const OpDef& op = lookup_op("linspace");
  check(steps >= 0, "linspace: number of steps must be non-negative, got {}", steps);
  // PyTorch converts both ends to the dtype before stepping between them, so an integer linspace
  // runs from trunc(start) to trunc(end): linspace(0.5, 10.7, 4) in int64 is [0, 3, 6, 10], not
  // the truncated [0.5, 3.9, 7.3, 10.7]. Done here, the CPU and CUDA kernels and a captured graph
  // all see the converted ends.
  const DType dtype = options.resolved_dtype();
  // PyTorch fills a single step with fill_ (any dtype) but has no bool kernel for more.
  check(dtype != kBool || steps < 2, "linspace: bool tensors are not supported (from {} to {} in {} steps)", start, end,
        steps);
  if (!is_floating(dtype) && dtype != kBool) {
    start = std::trunc(start);
    end = std::trunc(end);
  }
  Attrs attrs{{"start", start}, {"end", end}, {"steps", steps}, {"dtype", dtype},
              {"device", options.resolved_device()}};
  return finish_factory(dispatch_one(op, {}, attrs), options);
}
Tensor rand(const Dims& sizes, TensorOptions options, Where where) {
  CallSiteScope site(where);
  static const OpDef& op = lookup_op("rand");
  return finish_factory(dispatch_one(op, {}, random_attrs("rand", sizes, options)), options);
}
Tensor randn(const Dims& sizes, TensorOptions options, Where where) {
  CallSiteScope site(where);
  static const OpDef& op = lookup_op("randn");
  return finish_factory(dispatch_one(op, {}, random_attrs("randn", sizes, options)), options);
}
Tensor randint(int64_t low, int64_t high, const Dims& sizes, TensorOptions options, Where where) {
  CallSiteScope site(where);
  static const OpDef& op = lookup_op("randint");
  check_randint_range(low, high, options.resolved_dtype(kInt64));  // before reserving draws
  Attrs attrs = random_attrs("randint", sizes, options, kInt64);
  attrs.set("low", low);
  attrs.set("high", high);
  return finish_factory(dispatch_one(op, {}, attrs), options);
}
Tensor scalar_tensor(double value, TensorOptions options, Where where) {
  CallSiteScope site(where);
  return filled("scalar_tensor", {}, value, options);
}

template <typename T>
Tensor from_vector(const std::vector<T>& values, const Dims& sizes, TensorOptions options, Where where) {
  CallSiteScope site(where);
  check(static_cast<int64_t>(values.size()) == sizes.product(),
        "from_vector: {} values do not fill shape {} ({} elements)", values.size(), sizes, sizes.product());
  Tensor host = make_tensor(sizes, dtype_of<T>(), kCPU);
  T* data = host.data_ptr<T>();
  for (size_t i = 0; i < values.size(); ++i) data[i] = values[i];
  Tensor result = host.to(options.resolved_dtype(dtype_of<T>())).to(options.resolved_device());
  return finish_factory(result, options);
}
template Tensor from_vector(const std::vector<float>&, const Dims&, TensorOptions, Where);
template Tensor from_vector(const std::vector<double>&, const Dims&, TensorOptions, Where);
template Tensor from_vector(const std::vector<int32_t>&, const Dims&, TensorOptions, Where);
template Tensor from_vector(const std::vector<int64_t>&, const Dims&, TensorOptions, Where);
template Tensor from_vector(const std::vector<bool>&, const Dims&, TensorOptions, Where);
template Tensor from_vector(const std::vector<BFloat16>&, const Dims&, TensorOptions, Where);
template Tensor from_vector(const std::vector<Float16>&, const Dims&, TensorOptions, Where);

namespace {

// Memory wrapped as a CUDA tensor must be that device's: kernels given a host address fault, and
// a fault ends the process's CUDA context (PyTorch's from_blob asks the pointer's device too).
void check_blob_device(const void* data, Device device) {
  check(!device.is_cpu() || device.index == 0, "from_blob: the CPU device index must be 0, got {}", device.index);
  if (!device.is_cuda()) return;
  std::string why_not;
  check(cuda_is_available(&why_not), "from_blob: {} is unavailable: {}", device, why_not);
#ifdef EMBER_HAS_CUDA
  if (data != nullptr) cuda::check_device_pointer(data, device, "from_blob");
  else cuda::check_device(device);
#endif
}

}  // namespace

Tensor from_blob(void* data, const Dims& sizes, DType dtype, Device device,
                 std::function<void(void*)> deleter, Where where) {
  CallSiteScope site(where);
  for (int64_t size : sizes) check(size >= 0, "from_blob: negative size in shape {}", sizes);
  check(data != nullptr || sizes.product() == 0, "from_blob: null data for shape {}", sizes);
  check_blob_device(data, device);
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = Storage::wrap(data, byte_size(sizes, dtype, "from_blob"), device, std::move(deleter));
  impl->sizes = sizes;
  impl->strides = contiguous_strides(sizes, "from_blob");
  impl->dtype = dtype;
  impl->device = device;
  return Tensor(std::move(impl));
}

}  // namespace ember
