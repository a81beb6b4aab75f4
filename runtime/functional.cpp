// The op functions for math: pointwise, reductions, GEMM, normalisation. Each records
// the caller's location, packs attributes and dispatches the registry op of the same name.
#include "runtime/dispatch.h"
#include "runtime/functional.h"
#include "runtime/ops/pointwise_common.h"
#include "runtime/random/random_attrs.h"

namespace ember {

// ---- pointwise ----
#define EMBER_BINARY(function, opname)                                  \
  Tensor function(const Tensor& a, const Tensor& b, Where where) {      \
    CallSiteScope site(where);                                          \
    static const OpDef& op = lookup_op(opname);                                                   \
    return dispatch_one(op, {a, b});                                            \
  }
#define EMBER_UNARY(function, opname)                                   \
  Tensor function(const Tensor& a, Where where) {                       \
    CallSiteScope site(where);                                          \
    static const OpDef& op = lookup_op(opname);                                                   \
    return dispatch_one(op, {a});                                               \
  }
#define EMBER_SCALAR(function, opname, attr)                            \
  Tensor function(const Tensor& a, double value, Where where) {         \
    CallSiteScope site(where);                                          \
    static const OpDef& op = lookup_op(opname);                                                   \
    return dispatch_one(op, {a}, {{attr, value}});                              \
  }

Tensor add(const Tensor& a, const Tensor& b, double alpha, Where where) {
  CallSiteScope site(where);
  static const OpDef& op = lookup_op("add");
  return dispatch_one(op, {a, b}, {{"alpha", alpha}});
}
Tensor sub(const Tensor& a, const Tensor& b, double alpha, Where where) {
  CallSiteScope site(where);
  static const OpDef& op = lookup_op("sub");
  return dispatch_one(op, {a, b}, {{"alpha", alpha}});
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
Tensor sub(const Tensor& a, double value, Where where) {
  CallSiteScope site(where);
  // Checked as sub before it becomes add(a, -value): a bool tensor would pass there, and a
  // range error would name add_scalar and the negated value.
  check(a.dtype() != kBool,
        "sub: subtraction with a bool tensor is not supported (shape {} minus {}); for masks use logical "
        "operations instead",
        a.sizes(), value);
  const DType result = ops::scalar_result_dtype("sub", a.dtype(), value);
  // An integer dtype's lowest value has no negation in range, but subtracting it wraps to the
  // same values as adding it (a - min = a + min, modulo 2^bits), as PyTorch's a - min does.
  const double lowest = result == kInt32 ? -2147483648.0 : -9223372036854775808.0;
  const bool integral = result == kInt32 || result == kInt64;
  return add(a, integral && value == lowest ? value : -value, where);
}
EMBER_UNARY(neg, "neg")
EMBER_UNARY(exp, "exp")
EMBER_UNARY(expm1, "expm1")
EMBER_UNARY(erf, "erf")
EMBER_UNARY(sin, "sin")
EMBER_UNARY(cos, "cos")
EMBER_UNARY(log, "log")
EMBER_UNARY(log1p, "log1p")
EMBER_UNARY(sqrt, "sqrt")
EMBER_UNARY(rsqrt, "rsqrt")
EMBER_UNARY(abs, "abs")
EMBER_UNARY(sign, "sign")
EMBER_UNARY(reciprocal, "reciprocal")
EMBER_UNARY(floor, "floor")
EMBER_UNARY(ceil, "ceil")
EMBER_UNARY(round, "round")
EMBER_UNARY(trunc, "trunc")
EMBER_UNARY(relu, "relu")
EMBER_UNARY(silu, "silu")
EMBER_UNARY(sigmoid, "sigmoid")
EMBER_UNARY(tanh, "tanh")
EMBER_UNARY(clone, "clone")

// The less common math (runtime/ops/math_ops.cpp).
EMBER_UNARY(tan, "tan")
EMBER_UNARY(asin, "asin")
EMBER_UNARY(acos, "acos")
EMBER_UNARY(atan, "atan")
EMBER_UNARY(sinh, "sinh")
EMBER_UNARY(cosh, "cosh")
EMBER_UNARY(asinh, "asinh")
EMBER_UNARY(acosh, "acosh")
EMBER_UNARY(atanh, "atanh")
EMBER_UNARY(log2, "log2")
EMBER_UNARY(log10, "log10")
EMBER_UNARY(exp2, "exp2")
EMBER_UNARY(erfc, "erfc")
EMBER_BINARY(atan2, "atan2")
EMBER_BINARY(fmod, "fmod")
EMBER_BINARY(remainder, "remainder")

// A host divisor as a 0-d tensor on a's device, in the dtype `a op value` has: fmod(int32, 3)
// stays int32, fmod(int32, 2.5) is float32. A floating `a` keeps its dtype (a 0-d `a` too), and
// the value is rounded to it by a conversion, as PyTorch's kernel casts the scalar: a divisor
// past float16's range is inf there, not an error.
namespace {
Tensor divisor_tensor(const char* op, const Tensor& a, double value) {
  if (is_floating(a.dtype()))
    return to_dtype(scalar_tensor(value, {.dtype = kFloat64, .device = a.device()}), a.dtype());
  return scalar_tensor(value, {.dtype = ops::scalar_result_dtype(op, a.dtype(), value), .device = a.device()});
}
}  // namespace
Tensor fmod(const Tensor& a, double b, Where where) {
  CallSiteScope site(where);
  return fmod(a, divisor_tensor("fmod", a, b), where);
}
Tensor remainder(const Tensor& a, double b, Where where) {
  CallSiteScope site(where);
  return remainder(a, divisor_tensor("remainder", a, b), where);
}

Tensor gelu(const Tensor& a, bool tanh_approximation, Where where) {
  CallSiteScope site(where);
  static const OpDef& op = lookup_op("gelu");
  return dispatch_one(op, {a}, {{"tanh", tanh_approximation}});
}
Tensor leaky_relu(const Tensor& a, double negative_slope, Where where) {
  CallSiteScope site(where);
  static const OpDef& op = lookup_op("leaky_relu");
  return dispatch_one(op, {a}, {{"negative_slope", negative_slope}});
}
Tensor elu(const Tensor& a, double alpha, Where where) {
  CallSiteScope site(where);
  static const OpDef& op = lookup_op("elu");
  return dispatch_one(op, {a}, {{"alpha", alpha}});
}
Tensor softplus(const Tensor& a, double beta, double threshold, Where where) {
  CallSiteScope site(where);
  static const OpDef& op = lookup_op("softplus");
  return dispatch_one(op, {a}, {{"beta", beta}, {"threshold", threshold}});
}
Tensor clamp(const Tensor& a, std::optional<double> min, std::optional<double> max, Where where) {
  CallSiteScope site(where);
  static const OpDef& op = lookup_op("clamp");
  Attrs attrs;
  if (min) attrs.set("min", *min);
  if (max) attrs.set("max", *max);
  return dispatch_one(op, {a}, attrs);
}
Tensor where(const Tensor& condition, const Tensor& a, const Tensor& b, Where where) {
  CallSiteScope site(where);
  static const OpDef& op = lookup_op("where");
  return dispatch_one(op, {condition, a, b});
}

// ---- reductions ----
#define EMBER_REDUCTION(function, opname)                                                 \
  Tensor function(const Tensor& a, const Dims& dims, bool keepdim, Where where) {         \
    CallSiteScope site(where);                                                            \
    static const OpDef& op = lookup_op(opname);                                                                     \
    return dispatch_one(op, {a}, {{"dims", dims}, {"keepdim", keepdim}});                         \
  }
EMBER_REDUCTION(sum, "sum")
EMBER_REDUCTION(mean, "mean")
EMBER_REDUCTION(amax, "amax")
EMBER_REDUCTION(amin, "amin")

Tensor var(const Tensor& a, const Dims& dims, int64_t correction, bool keepdim, Where where) {
  CallSiteScope site(where);
  static const OpDef& op = lookup_op("var");
  return dispatch_one(op, {a}, {{"dims", dims}, {"keepdim", keepdim}, {"correction", correction}});
}
Tensor argmax(const Tensor& a, std::optional<int64_t> dim, bool keepdim, Where where) {
  CallSiteScope site(where);
  static const OpDef& op = lookup_op("argmax");
  Attrs attrs{{"keepdim", keepdim}};
  if (dim) attrs.set("dim", *dim);
  return dispatch_one(op, {a}, attrs);
}
Tensor argmin(const Tensor& a, std::optional<int64_t> dim, bool keepdim, Where where) {
  CallSiteScope site(where);
  static const OpDef& op = lookup_op("argmin");
  Attrs attrs{{"keepdim", keepdim}};
  if (dim) attrs.set("dim", *dim);
  return dispatch_one(op, {a}, attrs);
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
  return dispatch_one(op, {input, weight, bias});
}
Tensor linear(const Tensor& input, const Tensor& weight, const Tensor& bias, Activation activation, Where where) {
  CallSiteScope site(where);
  static const OpDef& op = lookup_op("linear");
  if (activation == Activation::None) return dispatch_one(op, {input, weight, bias});
  return dispatch_one(op, {input, weight, bias}, {{"activation", static_cast<int64_t>(activation)}});
}

// ---- normalisation ----
Tensor softmax(const Tensor& a, int64_t dim, Where where) {
  CallSiteScope site(where);
  static const OpDef& op = lookup_op("softmax");
  return dispatch_one(op, {a}, {{"dim", dim}});
}
Tensor log_softmax(const Tensor& a, int64_t dim, Where where) {
  CallSiteScope site(where);
  static const OpDef& op = lookup_op("log_softmax");
  return dispatch_one(op, {a}, {{"dim", dim}});
}
Tensor layer_norm(const Tensor& input, const Dims& normalized_shape, const Tensor& weight,
                  const Tensor& bias, double eps, Where where) {
  CallSiteScope site(where);
  static const OpDef& op = lookup_op("layer_norm");
  return dispatch_one(op, {input, weight, bias}, {{"normalized_shape", normalized_shape}, {"eps", eps}});
}
Tensor dropout(const Tensor& input, double p, bool train, Where where) {
  CallSiteScope site(where);
  check(p >= 0.0 && p <= 1.0, "dropout: probability must be in [0, 1], got {}", p);
  if (!train || p == 0.0) return input;
  static const OpDef& op = lookup_op("dropout");
  Attrs attrs{{"p", p}};
  reserve_random_attrs(attrs, input.device(), static_cast<uint64_t>(input.numel()));
  return dispatch_one(op, {input}, attrs);
}

}  // namespace ember
