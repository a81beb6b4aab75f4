// The op functions users call: ember::add, ember::matmul, ember::softmax, ... Each is a thin
// wrapper that packs its arguments and dispatches the registry op of the same name; the op's
// math, shape rule and backward live in kernels/ and runtime/ops/. The comment on each function
// names its registry op and that op's attributes when they differ from the function. Functions
// marked "composite" have no op of their own: they call the others (functional_losses*.cpp,
// functional_reductions.cpp, functional_shape.cpp), which gives them autograd, CUDA, autocast and
// capture.
#pragma once

#include <optional>
#include <tuple>
#include <vector>

#include "kernels/gemm_activation.h"
#include "runtime/functional_arrange.h"
#include "runtime/functional_cdist.h"
#include "runtime/functional_einsum.h"
#include "runtime/functional_math_extra.h"
#include "runtime/functional_math_more.h"
#include "runtime/functional_shape_more.h"
#include "runtime/functional_select.h"
#include "runtime/functional_shape_ops.h"
#include "runtime/functional_sort.h"
#include "runtime/tensor.h"

namespace ember {

// BatchMean (the sum divided by the input's dim-0 size) is kl_div's only; other losses refuse it.
enum class Reduction : int64_t { None = 0, Mean = 1, Sum = 2, BatchMean = 3 };

// ---- factories (ops: empty, full, arange, linspace, rand, randn, randint) ----
Tensor empty(const Dims& sizes, TensorOptions options = {}, Where where = Where::current());
Tensor zeros(const Dims& sizes, TensorOptions options = {}, Where where = Where::current());
Tensor ones(const Dims& sizes, TensorOptions options = {}, Where where = Where::current());
// full: attrs sizes, value, dtype, device
Tensor full(const Dims& sizes, double value, TensorOptions options = {},
            Where where = Where::current());
Tensor zeros_like(const Tensor& like, Where where = Where::current());
Tensor ones_like(const Tensor& like, Where where = Where::current());
Tensor full_like(const Tensor& like, double value, Where where = Where::current());
// arange: attrs start, end, step, dtype, device. Default dtype int64 when all bounds are integral,
// like PyTorch; options.dtype chooses.
Tensor arange(double end, TensorOptions options = {}, Where where = Where::current());
Tensor arange(double start, double end, double step = 1.0, TensorOptions options = {},
              Where where = Where::current());
// linspace: attrs start, end, steps, dtype, device
Tensor linspace(double start, double end, int64_t steps, TensorOptions options = {},
                Where where = Where::current());
// rand / randn: attrs sizes, seed, offset, dtype, device. Numbers come from the default
// generator's Philox stream; the wrapper reserves the counter range and passes seed/offset.
Tensor rand(const Dims& sizes, TensorOptions options = {}, Where where = Where::current());
Tensor randn(const Dims& sizes, TensorOptions options = {}, Where where = Where::current());
// randint: attrs low, high, sizes, seed, offset, dtype (default int64), device. Values in [low, high).
Tensor randint(int64_t low, int64_t high, const Dims& sizes, TensorOptions options = {},
               Where where = Where::current());
// Copies host values into a new tensor of `sizes` (numel must match), of the values' dtype unless
// options.dtype says otherwise (as libtorch's torch::tensor).
template <typename T>
Tensor from_vector(const std::vector<T>& values, const Dims& sizes, TensorOptions options = {},
                   Where where = Where::current());
template <typename T>
Tensor from_vector(const std::vector<T>& values, Where where = Where::current()) {
  return from_vector(values, Dims{static_cast<int64_t>(values.size())}, TensorOptions{}, where);
}
// Wraps caller-owned memory without copying; `deleter` runs when the last tensor lets go.
Tensor from_blob(void* data, const Dims& sizes, DType dtype, Device device = kCPU,
                 std::function<void(void*)> deleter = {}, Where where = Where::current());
Tensor scalar_tensor(double value, TensorOptions options = {}, Where where = Where::current());

// ---- pointwise binary (broadcasting, type promotion) ----
Tensor add(const Tensor& a, const Tensor& b, double alpha = 1.0, Where where = Where::current());  // add: alpha
Tensor sub(const Tensor& a, const Tensor& b, double alpha = 1.0, Where where = Where::current());  // sub: alpha
Tensor mul(const Tensor& a, const Tensor& b, Where where = Where::current());
Tensor div(const Tensor& a, const Tensor& b, Where where = Where::current());
Tensor pow(const Tensor& a, const Tensor& exponent, Where where = Where::current());
Tensor maximum(const Tensor& a, const Tensor& b, Where where = Where::current());
Tensor minimum(const Tensor& a, const Tensor& b, Where where = Where::current());
// With a host scalar (the tensor's dtype is kept): ops add_scalar, mul_scalar, div_scalar,
// pow_scalar, rsub_scalar (value - a), rdiv_scalar (value / a); attr value. The value is a double,
// so ember takes a whole value as libtorch takes an integer Scalar and any other as a floating
// one: an integer tensor stays integer with 3.0 (and wraps on overflow, as int32 * 1000000000
// does in libtorch), becomes float32 with 2.5 or under division; bool + 1 is int64.
Tensor add(const Tensor& a, double value, Where where = Where::current());
Tensor sub(const Tensor& a, double value, Where where = Where::current());
Tensor mul(const Tensor& a, double value, Where where = Where::current());
Tensor div(const Tensor& a, double value, Where where = Where::current());
Tensor pow(const Tensor& a, double exponent, Where where = Where::current());
Tensor rsub(const Tensor& a, double value, Where where = Where::current());
Tensor rdiv(const Tensor& a, double value, Where where = Where::current());

// ---- pointwise unary ----
Tensor neg(const Tensor& a, Where where = Where::current());
Tensor exp(const Tensor& a, Where where = Where::current());
Tensor expm1(const Tensor& a, Where where = Where::current());  // e^x - 1, exact near 0
Tensor erf(const Tensor& a, Where where = Where::current());
Tensor sin(const Tensor& a, Where where = Where::current());
Tensor cos(const Tensor& a, Where where = Where::current());
Tensor log(const Tensor& a, Where where = Where::current());
Tensor log1p(const Tensor& a, Where where = Where::current());
Tensor sqrt(const Tensor& a, Where where = Where::current());
Tensor rsqrt(const Tensor& a, Where where = Where::current());
Tensor abs(const Tensor& a, Where where = Where::current());
Tensor sign(const Tensor& a, Where where = Where::current());
Tensor reciprocal(const Tensor& a, Where where = Where::current());
// floor, ceil, round (halves to even, as torch.round), trunc: integer tensors pass unchanged.
Tensor floor(const Tensor& a, Where where = Where::current());
Tensor ceil(const Tensor& a, Where where = Where::current());
Tensor round(const Tensor& a, Where where = Where::current());
Tensor trunc(const Tensor& a, Where where = Where::current());
Tensor relu(const Tensor& a, Where where = Where::current());
// gelu: attr tanh (bool): the tanh approximation instead of the exact erf form.
Tensor gelu(const Tensor& a, bool tanh_approximation = false, Where where = Where::current());
Tensor silu(const Tensor& a, Where where = Where::current());
Tensor sigmoid(const Tensor& a, Where where = Where::current());
Tensor tanh(const Tensor& a, Where where = Where::current());
// gelu, silu, leaky_relu, elu and softplus take floating tensors only, as PyTorch's kernels do.
// leaky_relu: attr negative_slope (x for x > 0, negative_slope * x elsewhere).
Tensor leaky_relu(const Tensor& a, double negative_slope = 0.01, Where where = Where::current());
// elu: attr alpha (x for x > 0, alpha * (e^x - 1) elsewhere).
Tensor elu(const Tensor& a, double alpha = 1.0, Where where = Where::current());
// softplus: attrs beta, threshold (log(1 + e^(beta x)) / beta; x itself where beta x > threshold).
Tensor softplus(const Tensor& a, double beta = 1.0, double threshold = 20.0, Where where = Where::current());
// clamp: attrs min and/or max (double; absent = unbounded).
Tensor clamp(const Tensor& a, std::optional<double> min, std::optional<double> max,
             Where where = Where::current());

// ---- the less common math (runtime/ops/math_ops.cpp; integers become float32, like torch's) ----
Tensor tan(const Tensor& a, Where where = Where::current());
Tensor asin(const Tensor& a, Where where = Where::current());  // NaN outside [-1, 1]
Tensor acos(const Tensor& a, Where where = Where::current());  // NaN outside [-1, 1]
Tensor atan(const Tensor& a, Where where = Where::current());
Tensor sinh(const Tensor& a, Where where = Where::current());
Tensor cosh(const Tensor& a, Where where = Where::current());
Tensor asinh(const Tensor& a, Where where = Where::current());
Tensor acosh(const Tensor& a, Where where = Where::current());  // NaN below 1
Tensor atanh(const Tensor& a, Where where = Where::current());  // +-inf at +-1, NaN beyond
Tensor log2(const Tensor& a, Where where = Where::current());
Tensor log10(const Tensor& a, Where where = Where::current());
Tensor exp2(const Tensor& a, Where where = Where::current());
Tensor erfc(const Tensor& a, Where where = Where::current());  // 1 - erf(x), accurate where erf is near 1
// atan2(a, b): the angle of the point (b, a) in (-pi, pi], broadcasting; integers give float32.
Tensor atan2(const Tensor& a, const Tensor& b, Where where = Where::current());
// fmod: a - trunc(a / b) b, the dividend's sign (C's fmod); remainder: a - floor(a / b) b, the
// divisor's sign (Python's %). Both broadcast and promote like add and keep integer dtypes; an
// integer zero divisor is an error (a floating one gives NaN); bool is refused. With a host
// value, the tensor's dtype is kept as add's is (an integer tensor with 2.5 becomes float32).
Tensor fmod(const Tensor& a, const Tensor& b, Where where = Where::current());
Tensor fmod(const Tensor& a, double b, Where where = Where::current());
Tensor remainder(const Tensor& a, const Tensor& b, Where where = Where::current());
Tensor remainder(const Tensor& a, double b, Where where = Where::current());

// ---- comparisons (bool results) and selection ----
Tensor eq(const Tensor& a, const Tensor& b, Where where = Where::current());
Tensor ne(const Tensor& a, const Tensor& b, Where where = Where::current());
Tensor lt(const Tensor& a, const Tensor& b, Where where = Where::current());
Tensor le(const Tensor& a, const Tensor& b, Where where = Where::current());
Tensor gt(const Tensor& a, const Tensor& b, Where where = Where::current());
Tensor ge(const Tensor& a, const Tensor& b, Where where = Where::current());
Tensor where(const Tensor& condition, const Tensor& a, const Tensor& b, Where where = Where::current());
// Value tests and logic (functional_logical.cpp), bool results, every dtype accepted as in
// PyTorch: integers are never NaN or infinite (isfinite is true for them); the logical ops read a
// value as true when it is nonzero (NaN is, -0.0 is not) and compare in the inputs' result_type,
// broadcasting like eq. None has a gradient.
Tensor isnan(const Tensor& a, Where where = Where::current());
Tensor isinf(const Tensor& a, Where where = Where::current());
Tensor isfinite(const Tensor& a, Where where = Where::current());
Tensor logical_not(const Tensor& a, Where where = Where::current());
Tensor logical_and(const Tensor& a, const Tensor& b, Where where = Where::current());
Tensor logical_or(const Tensor& a, const Tensor& b, Where where = Where::current());
Tensor logical_xor(const Tensor& a, const Tensor& b, Where where = Where::current());

// ---- reductions: attrs dims (Dims; empty = all dims), keepdim ----
Tensor sum(const Tensor& a, const Dims& dims = {}, bool keepdim = false, Where where = Where::current());
Tensor mean(const Tensor& a, const Dims& dims = {}, bool keepdim = false, Where where = Where::current());
Tensor amax(const Tensor& a, const Dims& dims = {}, bool keepdim = false, Where where = Where::current());
Tensor amin(const Tensor& a, const Dims& dims = {}, bool keepdim = false, Where where = Where::current());
// var: attrs dims, keepdim, correction (int64; 1 = unbiased, PyTorch's default)
Tensor var(const Tensor& a, const Dims& dims = {}, int64_t correction = 1, bool keepdim = false,
           Where where = Where::current());
// argmax / argmin: attrs dim (int64; absent = over the flattened tensor), keepdim. int64 result.
Tensor argmax(const Tensor& a, std::optional<int64_t> dim = {}, bool keepdim = false,
              Where where = Where::current());
Tensor argmin(const Tensor& a, std::optional<int64_t> dim = {}, bool keepdim = false,
              Where where = Where::current());
// Composites (functional_reductions.cpp), as PyTorch defines them:
// std: sqrt(var(a, dims, correction, keepdim)); its gradient is 0 where the result is 0. Call it
// ember::std (torch::std's habit): after `using namespace ember` a bare std(...) is ambiguous.
Tensor std(const Tensor& a, const Dims& dims = {}, int64_t correction = 1, bool keepdim = false,
           Where where = Where::current());
// logsumexp: log(sum(exp(a))) over dims, computed as m + log(sum(exp(a - m))) with m the max
// (0 where the max is infinite), so rows of -inf give -inf; an empty reduction gives -inf.
// Integer inputs become float32.
Tensor logsumexp(const Tensor& a, const Dims& dims = {}, bool keepdim = false, Where where = Where::current());
// max / min along dim: (values, int64 indices), the indices argmax's / argmin's (first on ties,
// NaN wins); the gradient reaches the selected element only.
std::tuple<Tensor, Tensor> max(const Tensor& a, int64_t dim, bool keepdim = false, Where where = Where::current());
std::tuple<Tensor, Tensor> min(const Tensor& a, int64_t dim, bool keepdim = false, Where where = Where::current());
// norm: the vector p-norm over dims (torch.linalg.vector_norm): p = 2 sqrt(sum x^2), 1 sum |x|,
// inf max |x|, -inf min |x|, 0 the count of non-zeros, else (sum |x|^p)^(1/p). Floating inputs;
// bf16/fp16 ones are computed in float32 and rounded once, as PyTorch accumulates them.
Tensor norm(const Tensor& a, double p = 2.0, const Dims& dims = {}, bool keepdim = false,
            Where where = Where::current());
// normalize: a / max(norm(a, p, dim), eps) along dim (torch.nn.functional.normalize): unit
// vectors, a zero vector kept 0. cosine_similarity: x1 and x2 broadcast, each divided by its 2-norm
// along dim clamped to eps (the clamp carries no gradient, as in PyTorch), the products summed
// over dim; integers are taken in the floating result type, an integer result type refused
// (runtime/functional_similarity.cpp).
Tensor normalize(const Tensor& a, double p = 2.0, int64_t dim = 1, double eps = 1e-12, Where where = Where::current());
Tensor cosine_similarity(const Tensor& x1, const Tensor& x2, int64_t dim = 1, double eps = 1e-8,
                         Where where = Where::current());
// any / all: attrs dims (empty = all, else the one dim), keepdim. Bool results for every input
// dtype; an element counts as true when nonzero (NaN too). Over no elements any is false and all
// is true.
Tensor any(const Tensor& a, Where where = Where::current());
Tensor any(const Tensor& a, int64_t dim, bool keepdim = false, Where where = Where::current());
Tensor all(const Tensor& a, Where where = Where::current());
Tensor all(const Tensor& a, int64_t dim, bool keepdim = false, Where where = Where::current());
// Composite: the number of nonzero elements over dims (empty = all), int64, as sum(a != 0).
Tensor count_nonzero(const Tensor& a, const Dims& dims = {}, Where where = Where::current());
// prod: attrs dims (empty = all, else the one dim), keepdim. Integers and bool multiply (wrapping)
// to int64, floating inputs keep their dtype; `dtype` converts the input first, as PyTorch's dtype
// argument does. The product of no elements is 1. The gradient is the product of the other
// elements, exact with zeros (one zero: the others' product there and 0 elsewhere; two or more: 0).
Tensor prod(const Tensor& a, std::optional<DType> dtype = {}, Where where = Where::current());
Tensor prod(const Tensor& a, int64_t dim, bool keepdim = false, std::optional<DType> dtype = {},
            Where where = Where::current());
// cumsum: attrs dim, reverse (false here: running sums from the start of dim). Integers and bool
// sum to int64, floating inputs keep their dtype (summed in double on the CPU and CUDA alike);
// `dtype` converts the input first.
Tensor cumsum(const Tensor& a, int64_t dim, std::optional<DType> dtype = {}, Where where = Where::current());
// cumprod: running products along dim, dtypes as cumsum's (integers and bool multiply, wrapping,
// to int64); `dtype` converts the input first. The gradient is exact with zeros in the slice (it
// never divides by an element that may be 0).
Tensor cumprod(const Tensor& a, int64_t dim, std::optional<DType> dtype = {}, Where where = Where::current());
// cummax / cummin: the running maximum (minimum) along dim and, int64, the index where it was
// reached, as PyTorch's kernel: a tie takes the later index, a NaN is carried from where it
// appears (each later NaN taking its own index). The gradient goes to the recorded index.
std::tuple<Tensor, Tensor> cummax(const Tensor& a, int64_t dim, Where where = Where::current());
std::tuple<Tensor, Tensor> cummin(const Tensor& a, int64_t dim, Where where = Where::current());
// logcumsumexp: log of the running sum of exp along dim (floating inputs), as a running log-add-exp,
// so it neither overflows nor loses small terms beside large ones.
Tensor logcumsumexp(const Tensor& a, int64_t dim, Where where = Where::current());
// Reduces `a` (broadcast up to a's shape) back to `sizes`: the gradient of broadcasting.
Tensor sum_to_size(const Tensor& a, const Dims& sizes, Where where = Where::current());

// ---- linear algebra (Eigen GEMM on strided inputs, no copies for transposes) ----
Tensor matmul(const Tensor& a, const Tensor& b, Where where = Where::current());  // 1-D/2-D/batched
Tensor mm(const Tensor& a, const Tensor& b, Where where = Where::current());
Tensor bmm(const Tensor& a, const Tensor& b, Where where = Where::current());
// linear: input [*, in], weight [out, in], bias [out] or undefined -> [*, out]
Tensor linear(const Tensor& input, const Tensor& weight, const Tensor& bias = {},
              Where where = Where::current());
// linear with attr activation (int64 code of ember::Activation): activation(x W^T + b) in one
// kernel, the GEMM epilogue the compile stage fuses linear -> relu / gelu into.
Tensor linear(const Tensor& input, const Tensor& weight, const Tensor& bias, Activation activation,
              Where where = Where::current());

// ---- normalisation, activation with a dim ----
Tensor softmax(const Tensor& a, int64_t dim, Where where = Where::current());      // attr dim
Tensor log_softmax(const Tensor& a, int64_t dim, Where where = Where::current());  // attr dim
// layer_norm: inputs input, weight (or undefined), bias (or undefined); attrs normalized_shape, eps.
// Outputs of the op: y, mean, rstd (the function returns y).
Tensor layer_norm(const Tensor& input, const Dims& normalized_shape, const Tensor& weight = {},
                  const Tensor& bias = {}, double eps = 1e-5, Where where = Where::current());
// rms_norm (composite, runtime/functional_norms.cpp): x / sqrt(mean(x^2) + eps) over the trailing
// normalized_shape dims, times weight (or undefined). 16-bit inputs are computed in float32 (the
// weight applied there too) and the result rounded once to the input's dtype; eps defaults to the
// machine epsilon of that computing type (float32's for 16-bit inputs), as PyTorch's.
Tensor rms_norm(const Tensor& input, const Dims& normalized_shape, const Tensor& weight = {},
                std::optional<double> eps = std::nullopt, Where where = Where::current());
// group_norm (composite): input [N, C, *] normalised over each group of C / num_groups channels
// and all of *, with the biased variance, then weight and bias [C] (or undefined) per channel.
// 16-bit inputs are computed in float32 and rounded once.
Tensor group_norm(const Tensor& input, int64_t num_groups, const Tensor& weight = {}, const Tensor& bias = {},
                  double eps = 1e-5, Where where = Where::current());
// batch_norm (composite, runtime/functional_batch_norm.cpp; torch.nn.functional.batch_norm):
// input [N, C, *] normalised per channel with the batch's mean and biased variance over every dim
// but C (training, or when no running estimates are given) or with running_mean / running_var [C];
// then weight and bias [C] (or undefined). Training with estimates updates them in place, without
// recording gradients: running = momentum * batch + (1 - momentum) * running, the variance
// unbiased (n / (n - 1)). A 16-bit input is computed in float32 and rounded once, with 16-bit or
// float32 estimates and parameters alike (PyTorch's kernels keep the statistics in float32). With
// eps = 0, a channel whose batch variance is 0 normalises to 0 (PyTorch's inverse std of 0), not NaN.
Tensor batch_norm(const Tensor& input, const Tensor& running_mean, const Tensor& running_var,
                  const Tensor& weight = {}, const Tensor& bias = {}, bool training = false, double momentum = 0.1,
                  double eps = 1e-5, Where where = Where::current());
// dropout: attrs p, seed, offset. Outputs: y, mask (the function returns y). Identity when !train.
Tensor dropout(const Tensor& input, double p, bool train, Where where = Where::current());

// ---- losses (functional_losses.cpp, functional_losses_pointwise.cpp) ----
// Reduction: None gives each element's (row's) loss, Sum their sum, Mean their mean (nan when empty).
struct CrossEntropyOptions {
  Reduction reduction = Reduction::Mean;
  int64_t ignore_index = -100;
  double label_smoothing = 0.0;
  Tensor weight = {};  // [C] per-class weights, or undefined
};
// cross_entropy: inputs logits [N, C], target int64 [N]; attrs reduction (int64), ignore_index,
// label_smoothing. Fused log_softmax + nll. With a weight it is a composite (the op's per-row
// losses, and log_softmax for smoothing): row i counts w[y_i] times and Mean divides by the sum of
// w[y_i] over counted rows; the smoothing term weighs class c by w[c] (PyTorch's formula). Also
// PyTorch's other forms: logits [N, C, d1, ...] with target [N, d1, ...] (each position a row),
// and a floating target of the logits' shape holding class probabilities (Mean over samples).
Tensor cross_entropy(const Tensor& logits, const Tensor& target, CrossEntropyOptions options = {},
                     Where where = Where::current());
// nll_loss: inputs log_probs [N, C] (or [N, C, d1, ...] with target [N, d1, ...]), target int64
// [N]; attrs reduction, ignore_index.
Tensor nll_loss(const Tensor& log_probs, const Tensor& target, Reduction reduction = Reduction::Mean,
                int64_t ignore_index = -100, Where where = Where::current());
// Composite: nll_loss with per-class weights [C] (undefined: none): -w[y_i] log_probs[i, y_i],
// Mean divides by the sum of w[y_i] over rows whose target is not ignore_index.
Tensor nll_loss(const Tensor& log_probs, const Tensor& target, const Tensor& weight,
                Reduction reduction = Reduction::Mean, int64_t ignore_index = -100, Where where = Where::current());
// mse_loss: attr reduction.
Tensor mse_loss(const Tensor& input, const Tensor& target, Reduction reduction = Reduction::Mean,
                Where where = Where::current());
// Composites, x = input and y = target broadcast together: l1_loss |x - y|; smooth_l1_loss
// 0.5 (x - y)^2 / beta where |x - y| < beta, else |x - y| - beta / 2 (beta >= 0; 0 is l1_loss);
// huber_loss 0.5 (x - y)^2 where |x - y| < delta, else delta (|x - y| - delta / 2) (delta > 0).
// As PyTorch's: l1 and smooth_l1 promote to a common floating dtype and take an integer target;
// huber keeps the input's dtype (PyTorch computes into empty_like(input)) and needs a floating one.
Tensor l1_loss(const Tensor& input, const Tensor& target, Reduction reduction = Reduction::Mean,
               Where where = Where::current());
Tensor smooth_l1_loss(const Tensor& input, const Tensor& target, Reduction reduction = Reduction::Mean,
                      double beta = 1.0, Where where = Where::current());
Tensor huber_loss(const Tensor& input, const Tensor& target, Reduction reduction = Reduction::Mean,
                  double delta = 1.0, Where where = Where::current());
// Composites with input and target of one shape, weight (or undefined) broadcasting to it.
// binary_cross_entropy: -w (y max(log x, -100) + (1 - y) max(log(1 - x), -100)). On the CPU
// outside compile, input and target values outside [0, 1] are errors (PyTorch's CPU check; its
// CUDA kernel asserts instead).
Tensor binary_cross_entropy(const Tensor& input, const Tensor& target, const Tensor& weight = {},
                            Reduction reduction = Reduction::Mean, Where where = Where::current());
// binary_cross_entropy_with_logits: -w (p y log sigmoid(x) + (1 - y) log sigmoid(-x)), p =
// pos_weight (broadcasting over the last dims, e.g. [C]), in the stable form
// (1 - y) x - (1 + (p - 1) y) log sigmoid(x). The result has the target's dtype, as PyTorch's
// (computed in place in 1 - y).
Tensor binary_cross_entropy_with_logits(const Tensor& input, const Tensor& target, const Tensor& weight = {},
                                        Reduction reduction = Reduction::Mean, const Tensor& pos_weight = {},
                                        Where where = Where::current());
// Composite, broadcasting like l1_loss (an integer target too). kl_div: input holds log-probabilities; y log y - y x
// (0 where y = 0), or exp(y) (y - x) with log_target. BatchMean divides the sum by input.size(0)
// (the sum for a 0-d input).
Tensor kl_div(const Tensor& input, const Tensor& target, Reduction reduction = Reduction::Mean,
              bool log_target = false, Where where = Where::current());

// ---- indexing and joining ----
Tensor embedding(const Tensor& weight, const Tensor& indices, Where where = Where::current());
// Composite: rows looked up at padding_idx (negative counts from the end) get no gradient.
Tensor embedding(const Tensor& weight, const Tensor& indices, std::optional<int64_t> padding_idx,
                 Where where = Where::current());
Tensor cat(const std::vector<Tensor>& tensors, int64_t dim = 0, Where where = Where::current());  // attr dim
Tensor stack(const std::vector<Tensor>& tensors, int64_t dim = 0, Where where = Where::current());
Tensor index_select(const Tensor& a, int64_t dim, const Tensor& index, Where where = Where::current());
Tensor gather(const Tensor& a, int64_t dim, const Tensor& index, Where where = Where::current());
// one_hot: attr num_classes (int64; -1 = max + 1). int64 result.
Tensor one_hot(const Tensor& index, int64_t num_classes = -1, Where where = Where::current());

// ---- views (ops: view, transpose, permute, slice, expand, squeeze, unsqueeze, diagonal) ----
Tensor view(const Tensor& a, const Dims& shape, Where where = Where::current());
Tensor reshape(const Tensor& a, const Dims& shape, Where where = Where::current());
Tensor transpose(const Tensor& a, int64_t dim0, int64_t dim1, Where where = Where::current());
Tensor permute(const Tensor& a, const Dims& order, Where where = Where::current());
Tensor slice(const Tensor& a, int64_t dim, int64_t start, int64_t end, int64_t step = 1,
             Where where = Where::current());
Tensor expand(const Tensor& a, const Dims& shape, Where where = Where::current());
Tensor squeeze(const Tensor& a, std::optional<int64_t> dim = {}, Where where = Where::current());
Tensor unsqueeze(const Tensor& a, int64_t dim, Where where = Where::current());
// torch.diagonal: the diagonal `offset` of the plane (dim1, dim2) as a view, those two dims gone and
// a last dim of its length appended: element (.., i) is a[.., i, .., i + offset, ..] for offset >= 0
// and a[.., i - offset, .., i, ..] below, its stride stride(dim1) + stride(dim2). The length is
// min(size(dim1), size(dim2) - offset) (min(size(dim1) + offset, size(dim2)) for offset < 0), 0
// when the offset lies past the plane. At least 2 dims, dim1 != dim2, negative dims count from the
// end. Writes through it (fill_, copy_, add_) change a.
Tensor diagonal(const Tensor& a, int64_t offset = 0, int64_t dim1 = 0, int64_t dim2 = 1,
                Where where = Where::current());
Tensor flatten(const Tensor& a, int64_t start_dim = 0, int64_t end_dim = -1, Where where = Where::current());

// ---- copies and conversions ----
Tensor clone(const Tensor& a, Where where = Where::current());              // op clone
Tensor contiguous(const Tensor& a, Where where = Where::current());         // clone when needed
Tensor to_dtype(const Tensor& a, DType dtype, Where where = Where::current());  // op to_dtype: attr dtype
Tensor to_device(const Tensor& a, Device device, bool non_blocking = false,
                 Where where = Where::current());  // op to_device: attrs device, non_blocking

// ---- in place: ops add_ (alpha), mul_, mul_scalar_ (value), copy_, fill_ (value) ----
Tensor& add_(Tensor& a, const Tensor& b, double alpha = 1.0, Where where = Where::current());
Tensor& mul_(Tensor& a, const Tensor& b, Where where = Where::current());
Tensor& mul_(Tensor& a, double value, Where where = Where::current());
Tensor& copy_(Tensor& destination, const Tensor& source, Where where = Where::current());
Tensor& fill_(Tensor& a, double value, Where where = Where::current());
Tensor& zero_(Tensor& a, Where where = Where::current());

// Runs backward from several roots at once (torch.autograd.backward). retain_graph defaults to
// create_graph, as in PyTorch; create_graph and inputs: see Tensor::backward.
void backward(const std::vector<Tensor>& roots, const std::vector<Tensor>& grad_roots = {},
              std::optional<bool> retain_graph = std::nullopt, bool create_graph = false,
              Where where = Where::current());
void backward(const std::vector<Tensor>& roots, const std::vector<Tensor>& grad_roots,
              std::optional<bool> retain_graph, bool create_graph, const std::vector<Tensor>& inputs,
              Where where = Where::current());

}  // namespace ember
