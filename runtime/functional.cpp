// The op functions: each records the caller's location, packs attributes and dispatches.
#include "runtime/functional.h"

#include <cmath>

#include "runtime/dispatch.h"
#include "runtime/random/generator.h"

namespace ember {

namespace {

// One dispatch of a single-output op looked up once per call site of this helper.
Tensor call(const OpDef& op, std::initializer_list<Tensor> inputs, const Attrs& attrs = {}) {
  return dispatch_one(op, inputs, attrs);
}

Attrs factory_attrs(const Dims& sizes, const TensorOptions& options) {
  return Attrs{{"sizes", sizes}, {"dtype", options.dtype}, {"device", options.resolved_device()}};
}

Tensor finish_factory(Tensor tensor, const TensorOptions& options) {
  if (options.requires_grad) tensor.requires_grad_(true);
  return tensor;
}

// Reserves Philox words for a random factory: two words per element covers float64 draws.
Attrs random_attrs(const Dims& sizes, const TensorOptions& options) {
  Attrs attrs = factory_attrs(sizes, options);
  GeneratorState at = default_generator(options.resolved_device()).reserve(2 * static_cast<uint64_t>(sizes.product()));
  attrs.set("seed", static_cast<int64_t>(at.seed));
  attrs.set("offset", static_cast<int64_t>(at.offset));
  return attrs;
}

}  // namespace


// ---- factories ----
Tensor empty(const Dims& sizes, TensorOptions options, Where where) {
  CallSiteScope site(where);
  static const OpDef& op = lookup_op("empty");
  return finish_factory(call(op, {}, factory_attrs(sizes, options)), options);
}
Tensor full(const Dims& sizes, double value, TensorOptions options, Where where) {
  CallSiteScope site(where);
  static const OpDef& op = lookup_op("full");
  Attrs attrs = factory_attrs(sizes, options);
  attrs.set("value", value);
  return finish_factory(call(op, {}, attrs), options);
}
Tensor zeros(const Dims& sizes, TensorOptions options, Where where) { return full(sizes, 0.0, options, where); }
Tensor ones(const Dims& sizes, TensorOptions options, Where where) { return full(sizes, 1.0, options, where); }
Tensor full_like(const Tensor& like, double value, Where where) {
  return full(like.sizes(), value, {.dtype = like.dtype(), .device = like.device()}, where);
}
Tensor zeros_like(const Tensor& like, Where where) { return full_like(like, 0.0, where); }
Tensor ones_like(const Tensor& like, Where where) { return full_like(like, 1.0, where); }

Tensor arange(double end, std::optional<TensorOptions> options, Where where) {
  return arange(0.0, end, 1.0, options, where);
}
Tensor arange(double start, double end, double step, std::optional<TensorOptions> options, Where where) {
  CallSiteScope site(where);
  static const OpDef& op = lookup_op("arange");
  check(step != 0.0, "arange: step must be non-zero");
  check(std::isfinite(start) && std::isfinite(end) && std::isfinite(step),
        "arange: bounds must be finite (start {}, end {}, step {})", start, end, step);
  const bool integral = start == std::floor(start) && end == std::floor(end) && step == std::floor(step);
  TensorOptions resolved = options.value_or(TensorOptions{.dtype = integral ? kInt64 : kFloat32, .device = {}});
  Attrs attrs{{"start", start}, {"end", end}, {"step", step}, {"dtype", resolved.dtype},
              {"device", resolved.resolved_device()}};
  return finish_factory(call(op, {}, attrs), resolved);
}
Tensor linspace(double start, double end, int64_t steps, TensorOptions options, Where where) {
  CallSiteScope site(where);
  static const OpDef& op = lookup_op("linspace");
  check(steps >= 0, "linspace: number of steps must be non-negative, got {}", steps);
  Attrs attrs{{"start", start}, {"end", end}, {"steps", steps}, {"dtype", options.dtype},
              {"device", options.resolved_device()}};
  return finish_factory(call(op, {}, attrs), options);
}
Tensor rand(const Dims& sizes, TensorOptions options, Where where) {
  CallSiteScope site(where);
  static const OpDef& op = lookup_op("rand");
  return finish_factory(call(op, {}, random_attrs(sizes, options)), options);
}
Tensor randn(const Dims& sizes, TensorOptions options, Where where) {
  CallSiteScope site(where);
  static const OpDef& op = lookup_op("randn");
  return finish_factory(call(op, {}, random_attrs(sizes, options)), options);
}
Tensor randint(int64_t low, int64_t high, const Dims& sizes, TensorOptions options, Where where) {
  CallSiteScope site(where);
  static const OpDef& op = lookup_op("randint");
  check(low < high, "randint: low ({}) must be less than high ({})", low, high);
  Attrs attrs = random_attrs(sizes, options);
  attrs.set("low", low);
  attrs.set("high", high);
  return finish_factory(call(op, {}, attrs), options);
}
Tensor scalar_tensor(double value, TensorOptions options, Where where) { return full({}, value, options, where); }

template <typename T>
Tensor from_vector(const std::vector<T>& values, const Dims& sizes, TensorOptions options, Where where) {
  CallSiteScope site(where);
  check(static_cast<int64_t>(values.size()) == sizes.product(),
        "from_vector: {} values do not fill shape {} ({} elements)", values.size(), sizes, sizes.product());
  Tensor host = make_tensor(sizes, dtype_of<T>(), kCPU);
  T* data = host.data_ptr<T>();
  for (size_t i = 0; i < values.size(); ++i) data[i] = values[i];
  Tensor result = host.to(options.dtype).to(options.resolved_device());
  return finish_factory(result, options);
}
template Tensor from_vector(const std::vector<float>&, const Dims&, TensorOptions, Where);
template Tensor from_vector(const std::vector<double>&, const Dims&, TensorOptions, Where);
template Tensor from_vector(const std::vector<int32_t>&, const Dims&, TensorOptions, Where);
template Tensor from_vector(const std::vector<int64_t>&, const Dims&, TensorOptions, Where);
template Tensor from_vector(const std::vector<bool>&, const Dims&, TensorOptions, Where);
template Tensor from_vector(const std::vector<BFloat16>&, const Dims&, TensorOptions, Where);
template Tensor from_vector(const std::vector<Float16>&, const Dims&, TensorOptions, Where);

Tensor from_blob(void* data, const Dims& sizes, DType dtype, Device device,
                 std::function<void(void*)> deleter, Where where) {
  CallSiteScope site(where);
  check(data != nullptr || sizes.product() == 0, "from_blob: null data for shape {}", sizes);
  for (int64_t size : sizes) check(size >= 0, "from_blob: negative size in shape {}", sizes);
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = Storage::wrap(data, static_cast<size_t>(sizes.product()) * element_size(dtype), device,
                                std::move(deleter));
  impl->sizes = sizes;
  impl->strides = contiguous_strides(sizes);
  impl->dtype = dtype;
  impl->device = device;
  return Tensor(std::move(impl));
}

// ---- pointwise ----
#define EMBER_BINARY(function, opname)                                  \
  Tensor function(const Tensor& a, const Tensor& b, Where where) {      \
    CallSiteScope site(where);                                          \
    static const OpDef& op = lookup_op(opname);                                                   \
    return call(op, {a, b});                                            \
  }
#define EMBER_UNARY(function, opname)                                   \
  Tensor function(const Tensor& a, Where where) {                       \
    CallSiteScope site(where);                                          \
    static const OpDef& op = lookup_op(opname);                                                   \
    return call(op, {a});                                               \
  }
#define EMBER_SCALAR(function, opname, attr)                            \
  Tensor function(const Tensor& a, double value, Where where) {         \
    CallSiteScope site(where);                                          \
    static const OpDef& op = lookup_op(opname);                                                   \
    return call(op, {a}, {{attr, value}});                              \
  }

Tensor add(const Tensor& a, const Tensor& b, double alpha, Where where) {
  CallSiteScope site(where);
  static const OpDef& op = lookup_op("add");
  return call(op, {a, b}, {{"alpha", alpha}});
}
Tensor sub(const Tensor& a, const Tensor& b, double alpha, Where where) {
  CallSiteScope site(where);
  static const OpDef& op = lookup_op("sub");
  return call(op, {a, b}, {{"alpha", alpha}});
}
EMBER_BINARY(mul, "mul")
EMBER_BINARY(div, "div")
EMBER_BINARY(pow, "pow")
EMBER_BINARY(maximum, "maximum")
EMBER_BINARY(minimum, "minimum")
EMBER_BINARY(eq, "eq")
EMBER_BINARY(ne, "ne")
EMBER_BINARY(lt, "lt")
EMBER_BINARY(le, "le")
EMBER_BINARY(gt, "gt")
EMBER_BINARY(ge, "ge")
EMBER_SCALAR(add, "add_scalar", "value")
EMBER_SCALAR(mul, "mul_scalar", "value")
EMBER_SCALAR(div, "div_scalar", "value")
EMBER_SCALAR(pow, "pow_scalar", "value")
EMBER_SCALAR(rsub, "rsub_scalar", "value")
EMBER_SCALAR(rdiv, "rdiv_scalar", "value")
Tensor sub(const Tensor& a, double value, Where where) { return add(a, -value, where); }
EMBER_UNARY(neg, "neg")
EMBER_UNARY(exp, "exp")
EMBER_UNARY(log, "log")
EMBER_UNARY(log1p, "log1p")
EMBER_UNARY(sqrt, "sqrt")
EMBER_UNARY(rsqrt, "rsqrt")
EMBER_UNARY(abs, "abs")
EMBER_UNARY(sign, "sign")
EMBER_UNARY(reciprocal, "reciprocal")
EMBER_UNARY(relu, "relu")
EMBER_UNARY(silu, "silu")
EMBER_UNARY(sigmoid, "sigmoid")
EMBER_UNARY(tanh, "tanh")
EMBER_UNARY(clone, "clone")

Tensor gelu(const Tensor& a, bool tanh_approximation, Where where) {
  CallSiteScope site(where);
  static const OpDef& op = lookup_op("gelu");
  return call(op, {a}, {{"tanh", tanh_approximation}});
}
Tensor clamp(const Tensor& a, std::optional<double> min, std::optional<double> max, Where where) {
  CallSiteScope site(where);
  static const OpDef& op = lookup_op("clamp");
  Attrs attrs;
  if (min) attrs.set("min", *min);
  if (max) attrs.set("max", *max);
  return call(op, {a}, attrs);
}
Tensor where(const Tensor& condition, const Tensor& a, const Tensor& b, Where where) {
  CallSiteScope site(where);
  static const OpDef& op = lookup_op("where");
  return call(op, {condition, a, b});
}

// ---- reductions ----
#define EMBER_REDUCTION(function, opname)                                                 \
  Tensor function(const Tensor& a, const Dims& dims, bool keepdim, Where where) {         \
    CallSiteScope site(where);                                                            \
    static const OpDef& op = lookup_op(opname);                                                                     \
    return call(op, {a}, {{"dims", dims}, {"keepdim", keepdim}});                         \
  }
EMBER_REDUCTION(sum, "sum")
EMBER_REDUCTION(mean, "mean")
EMBER_REDUCTION(amax, "amax")
EMBER_REDUCTION(amin, "amin")

Tensor var(const Tensor& a, const Dims& dims, int64_t correction, bool keepdim, Where where) {
  CallSiteScope site(where);
  static const OpDef& op = lookup_op("var");
  return call(op, {a}, {{"dims", dims}, {"keepdim", keepdim}, {"correction", correction}});
}
Tensor argmax(const Tensor& a, std::optional<int64_t> dim, bool keepdim, Where where) {
  CallSiteScope site(where);
  static const OpDef& op = lookup_op("argmax");
  Attrs attrs{{"keepdim", keepdim}};
  if (dim) attrs.set("dim", *dim);
  return call(op, {a}, attrs);
}
Tensor argmin(const Tensor& a, std::optional<int64_t> dim, bool keepdim, Where where) {
  CallSiteScope site(where);
  static const OpDef& op = lookup_op("argmin");
  Attrs attrs{{"keepdim", keepdim}};
  if (dim) attrs.set("dim", *dim);
  return call(op, {a}, attrs);
}
Tensor sum_to_size(const Tensor& a, const Dims& sizes, Where where) {
  CallSiteScope site(where);
  if (a.sizes() == sizes) return a;
  const int lead = a.dim() - sizes.size();
  check(lead >= 0, "sum_to_size: cannot reduce shape {} to the larger shape {}", a.sizes(), sizes);
  Dims dims;
  for (int i = 0; i < a.dim(); ++i) {
    if (i < lead) {
      dims.push_back(i);
    } else if (sizes[i - lead] == 1 && a.size(i) != 1) {
      dims.push_back(i);
    } else {
      check(sizes[i - lead] == a.size(i), "sum_to_size: shape {} does not broadcast to {}", sizes,
            a.sizes());
    }
  }
  Tensor reduced = dims.empty() ? a : sum(a, dims, true);
  return reduced.view(sizes);
}

// ---- linear algebra ----
EMBER_BINARY(matmul, "matmul")
EMBER_BINARY(mm, "mm")
EMBER_BINARY(bmm, "bmm")
Tensor linear(const Tensor& input, const Tensor& weight, const Tensor& bias, Where where) {
  CallSiteScope site(where);
  static const OpDef& op = lookup_op("linear");
  return call(op, {input, weight, bias});
}

// ---- normalisation ----
Tensor softmax(const Tensor& a, int64_t dim, Where where) {
  CallSiteScope site(where);
  static const OpDef& op = lookup_op("softmax");
  return call(op, {a}, {{"dim", dim}});
}
Tensor log_softmax(const Tensor& a, int64_t dim, Where where) {
  CallSiteScope site(where);
  static const OpDef& op = lookup_op("log_softmax");
  return call(op, {a}, {{"dim", dim}});
}
Tensor layer_norm(const Tensor& input, const Dims& normalized_shape, const Tensor& weight,
                  const Tensor& bias, double eps, Where where) {
  CallSiteScope site(where);
  static const OpDef& op = lookup_op("layer_norm");
  return call(op, {input, weight, bias}, {{"normalized_shape", normalized_shape}, {"eps", eps}});
}
Tensor dropout(const Tensor& input, double p, bool train, Where where) {
  CallSiteScope site(where);
  check(p >= 0.0 && p <= 1.0, "dropout: probability must be in [0, 1], got {}", p);
  if (!train || p == 0.0) return input;
  static const OpDef& op = lookup_op("dropout");
  GeneratorState at = default_generator(input.device()).reserve(static_cast<uint64_t>(input.numel()));
  return call(op, {input}, {{"p", p}, {"seed", static_cast<int64_t>(at.seed)},
                            {"offset", static_cast<int64_t>(at.offset)}});
}

// ---- losses ----
Tensor cross_entropy(const Tensor& logits, const Tensor& target, CrossEntropyOptions options, Where where) {
  CallSiteScope site(where);
  static const OpDef& op = lookup_op("cross_entropy");
  check(options.label_smoothing >= 0.0 && options.label_smoothing <= 1.0,
        "cross_entropy: label_smoothing must be in [0, 1], got {}", options.label_smoothing);
  return call(op, {logits, target},
              {{"reduction", static_cast<int64_t>(options.reduction)},
               {"ignore_index", options.ignore_index},
               {"label_smoothing", options.label_smoothing}});
}
Tensor nll_loss(const Tensor& log_probs, const Tensor& target, Reduction reduction, int64_t ignore_index,
                Where where) {
  CallSiteScope site(where);
  static const OpDef& op = lookup_op("nll_loss");
  return call(op, {log_probs, target},
              {{"reduction", static_cast<int64_t>(reduction)}, {"ignore_index", ignore_index}});
}
Tensor mse_loss(const Tensor& input, const Tensor& target, Reduction reduction, Where where) {
  CallSiteScope site(where);
  static const OpDef& op = lookup_op("mse_loss");
  return call(op, {input, target}, {{"reduction", static_cast<int64_t>(reduction)}});
}

// ---- indexing and joining ----
EMBER_BINARY(embedding, "embedding")
Tensor cat(const std::vector<Tensor>& tensors, int64_t dim, Where where) {
  CallSiteScope site(where);
  static const OpDef& op = lookup_op("cat");
  check(!tensors.empty(), "cat: expected a non-empty list of tensors");
  const Attrs attrs{{"dim", dim}};
  return dispatch_one(op, std::span<const Tensor>(tensors), attrs);
}
Tensor stack(const std::vector<Tensor>& tensors, int64_t dim, Where where) {
  CallSiteScope site(where);
  check(!tensors.empty(), "stack: expected a non-empty list of tensors");
  const int wrapped = wrap_dim(dim, tensors[0].dim() + 1, "stack");
  std::vector<Tensor> expanded;
  for (const Tensor& tensor : tensors) {
    check(tensor.sizes() == tensors[0].sizes(), "stack: all tensors must have one shape, got {} and {}",
          tensors[0].sizes(), tensor.sizes());
    expanded.push_back(unsqueeze(tensor, wrapped));
  }
  return cat(expanded, wrapped);
}
Tensor index_select(const Tensor& a, int64_t dim, const Tensor& index, Where where) {
  CallSiteScope site(where);
  static const OpDef& op = lookup_op("index_select");
  return call(op, {a, index}, {{"dim", dim}});
}
Tensor gather(const Tensor& a, int64_t dim, const Tensor& index, Where where) {
  CallSiteScope site(where);
  static const OpDef& op = lookup_op("gather");
  return call(op, {a, index}, {{"dim", dim}});
}
Tensor one_hot(const Tensor& index, int64_t num_classes, Where where) {
  CallSiteScope site(where);
  static const OpDef& op = lookup_op("one_hot");
  return call(op, {index}, {{"num_classes", num_classes}});
}

// ---- views ----
Tensor view(const Tensor& a, const Dims& shape, Where where) {
  CallSiteScope site(where);
  static const OpDef& op = lookup_op("view");
  return call(op, {a}, {{"shape", shape}});
}
Tensor reshape(const Tensor& a, const Dims& shape, Where where) {
  CallSiteScope site(where);
  return a.is_contiguous() ? view(a, shape) : view(clone(a), shape);
}
Tensor transpose(const Tensor& a, int64_t dim0, int64_t dim1, Where where) {
  CallSiteScope site(where);
  static const OpDef& op = lookup_op("transpose");
  return call(op, {a}, {{"dim0", dim0}, {"dim1", dim1}});
}
Tensor permute(const Tensor& a, const Dims& order, Where where) {
  CallSiteScope site(where);
  static const OpDef& op = lookup_op("permute");
  return call(op, {a}, {{"order", order}});
}
Tensor slice(const Tensor& a, int64_t dim, int64_t start, int64_t end, int64_t step, Where where) {
  CallSiteScope site(where);
  static const OpDef& op = lookup_op("slice");
  return call(op, {a}, {{"dim", dim}, {"start", start}, {"end", end}, {"step", step}});
}
Tensor expand(const Tensor& a, const Dims& shape, Where where) {
  CallSiteScope site(where);
  static const OpDef& op = lookup_op("expand");
  return call(op, {a}, {{"shape", shape}});
}
Tensor squeeze(const Tensor& a, std::optional<int64_t> dim, Where where) {
  CallSiteScope site(where);
  static const OpDef& op = lookup_op("squeeze");
  Attrs attrs;
  if (dim) attrs.set("dim", *dim);
  return call(op, {a}, attrs);
}
Tensor unsqueeze(const Tensor& a, int64_t dim, Where where) {
  CallSiteScope site(where);
  static const OpDef& op = lookup_op("unsqueeze");
  return call(op, {a}, {{"dim", dim}});
}
Tensor flatten(const Tensor& a, int64_t start_dim, int64_t end_dim, Where where) {
  CallSiteScope site(where);
  if (a.dim() == 0) return reshape(a, {1});
  const int first = wrap_dim(start_dim, a.dim(), "flatten");
  const int last = wrap_dim(end_dim, a.dim(), "flatten");
  check(first <= last, "flatten: start_dim {} comes after end_dim {}", start_dim, end_dim);
  Dims shape;
  for (int i = 0; i < first; ++i) shape.push_back(a.size(i));
  int64_t merged = 1;
  for (int i = first; i <= last; ++i) merged *= a.size(i);
  shape.push_back(merged);
  for (int i = last + 1; i < a.dim(); ++i) shape.push_back(a.size(i));
  return reshape(a, shape);
}

// ---- copies and conversions ----
Tensor contiguous(const Tensor& a, Where where) { return a.contiguous(where); }
Tensor to_dtype(const Tensor& a, DType dtype, Where where) {
  CallSiteScope site(where);
  static const OpDef& op = lookup_op("to_dtype");
  return call(op, {a}, {{"dtype", dtype}});
}
Tensor to_device(const Tensor& a, Device device, bool non_blocking, Where where) {
  CallSiteScope site(where);
  static const OpDef& op = lookup_op("to_device");
  return call(op, {a}, {{"device", device}, {"non_blocking", non_blocking}});
}

// ---- in place ----
namespace {
Tensor& call_inplace(const OpDef& op, Tensor& target, std::initializer_list<Tensor> inputs,
                     const Attrs& attrs) {
  TensorList outputs = dispatch(OpCall{op, std::span<const Tensor>(inputs.begin(), inputs.size()), attrs});
  // The kernel wrote into `target`; autograd may have given it a new grad_fn through `outputs`.
  internal_assert(outputs[0].impl() == target.impl(), "in-place op returned another tensor");
  return target;
}
}  // namespace

Tensor& add_(Tensor& a, const Tensor& b, double alpha, Where where) {
  CallSiteScope site(where);
  static const OpDef& op = lookup_op("add_");
  return call_inplace(op, a, {a, b}, {{"alpha", alpha}});
}
Tensor& mul_(Tensor& a, const Tensor& b, Where where) {
  CallSiteScope site(where);
  static const OpDef& op = lookup_op("mul_");
  return call_inplace(op, a, {a, b}, {});
}
Tensor& mul_(Tensor& a, double value, Where where) {
  CallSiteScope site(where);
  static const OpDef& op = lookup_op("mul_scalar_");
  return call_inplace(op, a, {a}, {{"value", value}});
}
Tensor& copy_(Tensor& destination, const Tensor& source, Where where) {
  CallSiteScope site(where);
  static const OpDef& op = lookup_op("copy_");
  return call_inplace(op, destination, {destination, source}, {});
}
Tensor& fill_(Tensor& a, double value, Where where) {
  CallSiteScope site(where);
  static const OpDef& op = lookup_op("fill_");
  return call_inplace(op, a, {a}, {{"value", value}});
}
Tensor& zero_(Tensor& a, Where where) { return fill_(a, 0.0, where); }

}  // namespace ember
