// More of torch's math as composites of registry ops, so autograd, CUDA, autocast and compile
// capture come from the ops they call: xlogy, sinc, heaviside, frac, logit, isin
// (functional_math_extra_pointwise.cpp); diff, trapezoid, cumulative_trapezoid, cov, corrcoef,
// renorm (functional_math_extra_statistics.cpp); matrix_power, addmv, addbmm, baddbmm,
// chain_matmul, linalg_multi_dot (functional_linalg_products.cpp). Included by runtime/functional.h.
//
// Not here: copysign. Its result's sign is the sign bit of b, which for -0.0 and for a NaN with
// the sign bit set no comparison of values can see, and ember has no sign-bit op to build it from.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "runtime/tensor.h"

namespace ember {

// ---- pointwise (functional_math_extra_pointwise.cpp) ----
// torch.xlogy: x log(y), 0 where x == 0 (even for y = 0 or inf) unless y is NaN, which gives NaN.
// x and y broadcast; the dtype is their result type, float32 for integers; 16-bit computed in
// float32 and rounded once. A host number takes the tensor's floating dtype (float32 for integers).
// Gradients log(y) to x (0 where x == 0) and x / y to y, as torch's.
Tensor xlogy(const Tensor& x, const Tensor& y, Where where = Where::current());
Tensor xlogy(const Tensor& x, double y, Where where = Where::current());
Tensor xlogy(double x, const Tensor& y, Where where = Where::current());
// torch.sinc: sin(pi x) / (pi x), 1 at x = 0 (gradient 0 there). Integers become float32.
Tensor sinc(const Tensor& x, Where where = Where::current());
// torch.heaviside: 0 where x < 0, values where x == 0, 1 where x > 0 (and where x is NaN: torch's
// `x == 0 ? values : x > 0` gives 0). x and values of one dtype, broadcasting. The gradient reaches
// values at the zeros of x (torch has none; this is the derivative of the definition).
Tensor heaviside(const Tensor& x, const Tensor& values, Where where = Where::current());
// torch.frac: x - trunc(x), the sign of x (NaN for infinities). Floating inputs only.
Tensor frac(const Tensor& x, Where where = Where::current());
// torch.logit: log(z / (1 - z)) with z = clamp(x, eps, 1 - eps) when eps is given and >= 0, z = x
// otherwise (NaN outside [0, 1], +-inf at the ends). Integers become float32. The gradient is
// 1 / (z (1 - z)) inside [eps, 1 - eps] and 0 outside it; without eps, torch gives NaN outside
// [0, 1] where this gives 1 / (x (1 - x)) (the value there is NaN either way).
Tensor logit(const Tensor& x, std::optional<double> eps = std::nullopt, Where where = Where::current());
// torch.isin: for each element, whether it equals one of test_elements (of any shape), as a bool
// tensor of elements' shape; invert negates. The two dtypes compare in their result type; NaN is in
// nothing. Computed as one broadcast eq against every test element (memory numel x test numel), so
// it needs no host read; assume_unique changes nothing here.
Tensor isin(const Tensor& elements, const Tensor& test_elements, bool assume_unique = false, bool invert = false,
            Where where = Where::current());
Tensor isin(const Tensor& elements, double test_element, bool assume_unique = false, bool invert = false,
            Where where = Where::current());

// ---- differences, integrals, statistics (functional_math_extra_statistics.cpp) ----
// torch.diff: the n-th forward difference along dim (out[i] = a[i + 1] - a[i], n times; logical_xor
// for bool) of prepend, a, append joined along dim (they need a's number of dims). Each step drops
// one element; past the size the result is empty along dim. n >= 0, a needs >= 1 dim.
Tensor diff(const Tensor& a, int64_t n = 1, int64_t dim = -1, const Tensor& prepend = {}, const Tensor& append = {},
            Where where = Where::current());
// torch.trapezoid: the trapezoidal rule along dim, with spacing dx, or sample points x (1-D of the
// dim's size, or broadcasting to y): sum((x[i+1] - x[i]) (y[i+1] + y[i]) / 2). An empty dim gives
// zeros of y's dtype; integers otherwise become float32. bool refused. trapz is its old name.
Tensor trapezoid(const Tensor& y, double dx = 1.0, int64_t dim = -1, Where where = Where::current());
Tensor trapezoid(const Tensor& y, const Tensor& x, int64_t dim = -1, Where where = Where::current());
Tensor trapz(const Tensor& y, double dx = 1.0, int64_t dim = -1, Where where = Where::current());
Tensor trapz(const Tensor& y, const Tensor& x, int64_t dim = -1, Where where = Where::current());
// torch.cumulative_trapezoid: the running sums of trapezoid's terms along dim (one fewer element).
Tensor cumulative_trapezoid(const Tensor& y, double dx = 1.0, int64_t dim = -1, Where where = Where::current());
Tensor cumulative_trapezoid(const Tensor& y, const Tensor& x, int64_t dim = -1, Where where = Where::current());
// torch.cov: the covariance matrix of the variables in the rows of a (a 1-D input is one variable,
// the observations in the columns), with frequency weights (integral, >= 0) and observation weights
// (floating, >= 0), each 1-D of the observation count or undefined. With w = fweights * aweights:
// cov = sum_k w_k (a_ik - m_i)(a_jk - m_j) / (sum w - correction sum(w aweights) / sum w) (just
// sum w - correction without aweights), m the w-weighted means; a divisor <= 0 is taken as 0 (inf or
// NaN, as torch). The result is squeezed (one variable: 0-d). Integers become float32 and aweights'
// dtype promotes with the input's (float32 data with float64 aweights gives float64, as torch's
// products do); bool refused. Weight checks read the weights on the host (a compiled step breaks
// there), as torch's; without weights nothing is read.
Tensor cov(const Tensor& a, int64_t correction = 1, const Tensor& fweights = {}, const Tensor& aweights = {},
           Where where = Where::current());
// torch.corrcoef: cov(a) divided by the outer product of its diagonal's square roots, clamped to
// [-1, 1]; one variable gives cov / cov (1, or NaN).
Tensor corrcoef(const Tensor& a, Where where = Where::current());
// torch.renorm: each slice along dim (a.select(dim, i)) whose p-norm exceeds maxnorm is scaled by
// maxnorm / (norm + 1e-7); the others are kept. p > 0, maxnorm >= 0, >= 2 dims, floating input (16-bit
// norms computed in float32). The gradient includes the scale's dependence on the slice.
Tensor renorm(const Tensor& a, double p, int64_t dim, double maxnorm, Where where = Where::current());

// ---- matrix products (functional_linalg_products.cpp) ----
// torch.linalg.matrix_power: a [.., n, n] raised to integer power k by repeated squaring (as torch
// multiplies); k = 0 gives identities. Negative k needs an inverse, which ember lacks: refused.
Tensor matrix_power(const Tensor& a, int64_t k, Where where = Where::current());
// torch.addmv: beta input + alpha (mat @ vec), input broadcasting to [m]; addbmm: beta input +
// alpha sum_b batch1[b] @ batch2[b], input broadcasting to [n, p]; baddbmm: beta input + alpha
// batch1 @ batch2, input broadcasting to [B, n, p]. With beta = 0 input is ignored (its NaN and inf
// too). All of one dtype; integer ones need integral beta and alpha.
Tensor addmv(const Tensor& input, const Tensor& mat, const Tensor& vec, double beta = 1.0, double alpha = 1.0,
             Where where = Where::current());
Tensor addbmm(const Tensor& input, const Tensor& batch1, const Tensor& batch2, double beta = 1.0, double alpha = 1.0,
              Where where = Where::current());
Tensor baddbmm(const Tensor& input, const Tensor& batch1, const Tensor& batch2, double beta = 1.0, double alpha = 1.0,
               Where where = Where::current());
// torch.linalg.multi_dot: the product of >= 2 matrices of one dtype, the first and last may be 1-D
// (a row and a column vector, dropped from the result), multiplied in the order that costs the
// fewest multiplications (torch's dynamic program and ties). chain_matmul: >= 1 matrices, all 2-D.
Tensor linalg_multi_dot(const std::vector<Tensor>& tensors, Where where = Where::current());
Tensor chain_matmul(const std::vector<Tensor>& matrices, Where where = Where::current());

}  // namespace ember
