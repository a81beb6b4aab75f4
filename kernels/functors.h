// The math of every pointwise op, written once. Each functor is called by the CPU iterator
// (kernels/cpu/pointwise_loop.h), by CUDA kernels, and by generated code (the compile stage emits
// `ember::fn::Add{alpha}(a, b)`), so CPU tests exercise the same expressions the GPU runs.
// Functors take and return compute types (float, double, int32_t, int64_t, bool); comparisons
// return bool. Op files decide dtypes (float-only ops never see integers), functors only compute.
// Branches are selects on the element (vectorizable) or on a member (hoisted out of the loop).
// Call operators are force-inlined on the host: a loop only vectorizes with its functor inlined.
//
// The functors live in binary_functors.h (two operands, comparisons, a tensor and a host scalar),
// unary_functors.h (one operand, activations and their backward), activation_more_functors.h
// (hardswish, hardsigmoid, mish, log_sigmoid and hardtanh's backward), predicate_functors.h (isnan,
// isinf, isfinite, the logical ops), math_functors.h (the less common math: inverse and
// hyperbolic trigonometry, log2, log10, exp2, erfc, atan2, fmod, remainder) and
// special_functors.h (torch.special: lgamma, digamma, polygamma, erfinv, the Bessel functions
// i0, i0e, i1, i1e, ndtri, log_ndtr, erfcx), on the shared helpers of functor_math.h. Code that calls functors (generated kernels too) includes this header.
#pragma once

#include "kernels/activation_more_functors.h"
#include "kernels/binary_functors.h"
#include "kernels/math_functors.h"
#include "kernels/predicate_functors.h"
#include "kernels/special_functors.h"
#include "kernels/unary_functors.h"
