// torch's remaining pointwise helpers (fmax, fmin, float_power, true_divide, floor_divide, deg2rad,
// rad2deg, signbit, fix, positive) and small products (addr, inner, dist), as composites of registry
// ops (runtime/functional_math_composites.cpp): autograd, CUDA and ember::compile come from the ops
// they are made of. torch.linalg's ones (vecdot, matrix_exp, ...) are in runtime/linalg_composites.h.
#pragma once

#include "runtime/tensor.h"

namespace ember {

// ---- pointwise (broadcasting, torch's type promotion) ----

// fmax / fmin: the larger (smaller) of a and b where a NaN loses to a number; two NaNs give NaN.
// The gradient goes to the chosen input only, to a on ties (torch's rule). Integers and bool too.
Tensor fmax(const Tensor& a, const Tensor& b, Where where = Where::current());
Tensor fmin(const Tensor& a, const Tensor& b, Where where = Where::current());
// float_power: pow computed in float64 whatever the inputs' dtypes; the result is always float64.
Tensor float_power(const Tensor& a, const Tensor& exponent, Where where = Where::current());
Tensor float_power(const Tensor& a, double exponent, Where where = Where::current());
// true_divide: div (integers give float32, as torch's true division).
Tensor true_divide(const Tensor& a, const Tensor& b, Where where = Where::current());
Tensor true_divide(const Tensor& a, double b, Where where = Where::current());
// floor_divide: a / b rounded toward -inf, in the inputs' result_type. Integers: Python's //, an
// integer zero divisor is an error (checked on the host, a sync); the quotient is formed in
// float64, so an int64 dividend beyond +-2^53 is refused rather than rounded.
// Floating: torch's div_floor (from fmod, so 1 // 0.1 is 9 as in Python, not floor(1 / 0.1) = 10;
// b == 0 gives a / b). No gradient (torch has none): the result is detached. Bool is refused.
Tensor floor_divide(const Tensor& a, const Tensor& b, Where where = Where::current());
// With a host value, taken as a 0-d tensor (for an integral a: int64 when whole, else float32; for a
// floating a: float64), so the promotion is torch's for a Scalar: int32 // 2 stays int32, int32 // 2.5
// is float32, float16 // 0.1 stays float16.
Tensor floor_divide(const Tensor& a, double b, Where where = Where::current());
// deg2rad: a * pi / 180; rad2deg: a * 180 / pi. Integers become float32 (torch's default dtype).
Tensor deg2rad(const Tensor& a, Where where = Where::current());
Tensor rad2deg(const Tensor& a, Where where = Where::current());
// signbit: a < 0 as bool, true for -0.0 and -inf. Weaker than torch: the sign of a NaN cannot be read
// without a bit view, so every NaN gives false (torch reads -nan's sign bit as true).
Tensor signbit(const Tensor& a, Where where = Where::current());
// fix: trunc (torch.fix's alias). positive: a itself (torch returns self); bool is refused as in torch.
Tensor fix(const Tensor& a, Where where = Where::current());
Tensor positive(const Tensor& a, Where where = Where::current());

// ---- products ----

// addr: beta input + alpha outer(vec1, vec2), input broadcast to [n, m]; with beta == 0 input is not
// read (its NaNs do not propagate), as torch. Integer and bool tensors need integral alpha and beta.
Tensor addr(const Tensor& input, const Tensor& vec1, const Tensor& vec2, double beta = 1.0, double alpha = 1.0,
            Where where = Where::current());
// inner: the sum over the last dims of a and b (which must match), shape a[:-1] + b[:-1]; a 0-d
// operand multiplies the other.
Tensor inner(const Tensor& a, const Tensor& b, Where where = Where::current());
// dist: the p-norm of a - b (broadcast) over every element: p = 0 counts non-zeros, inf / -inf take
// the largest / smallest |a - b|. Floating inputs, as torch.
Tensor dist(const Tensor& a, const Tensor& b, double p = 2.0, Where where = Where::current());

}  // namespace ember
