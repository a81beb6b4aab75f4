// nn::init: in-place parameter initialisers with PyTorch's formulas (torch.nn.init). Random ones
// draw from `generator`, or from the default generator of the tensor's device when it is null, so
// a seeded ember::Generator makes initialisation reproducible. They run without recording autograd.
// On a zero-element tensor each is a no-op, as in PyTorch. Errors name the function called and the
// caller's line (`where`).
#pragma once

#include <utility>

#include "runtime/random/generator.h"
#include "runtime/tensor.h"

namespace ember::nn::init {

enum class FanMode { FanIn, FanOut };
// Linear also stands for the convolutions, whose gain is 1 as well.
enum class Nonlinearity { Linear, Sigmoid, Tanh, ReLU, LeakyReLU, SELU };

// The recommended gain for a nonlinearity: 1 (linear, sigmoid), 5/3 (tanh), sqrt(2) (relu),
// sqrt(2 / (1 + slope^2)) (leaky relu, `param` = negative slope), 3/4 (selu).
double calculate_gain(Nonlinearity nonlinearity, double param = 0.01);

// fan_in = size(1) * receptive field, fan_out = size(0) * receptive field (receptive field = the
// product of dims 2..); needs at least 2 dims.
std::pair<int64_t, int64_t> calculate_fan_in_and_fan_out(const Tensor& tensor, Where where = Where::current());

// U[low, high): never high itself, in any dtype. As PyTorch's uniform_, the draw has as many random
// bits as the dtype's significand, and low and high must be finite values of the dtype with
// high - low at most its largest value (so every draw is finite).
Tensor uniform_(Tensor tensor, double low = 0.0, double high = 1.0, Generator* generator = nullptr,
                Where where = Where::current());
// N(mean, std^2).
Tensor normal_(Tensor tensor, double mean = 0.0, double std = 1.0, Generator* generator = nullptr,
               Where where = Where::current());
Tensor constant_(Tensor tensor, double value, Where where = Where::current());
Tensor zeros_(Tensor tensor, Where where = Where::current());
Tensor ones_(Tensor tensor, Where where = Where::current());

// U(-b, b) with b = gain * sqrt(6 / (fan_in + fan_out)).
Tensor xavier_uniform_(Tensor tensor, double gain = 1.0, Generator* generator = nullptr,
                       Where where = Where::current());
// N(0, s^2) with s = gain * sqrt(2 / (fan_in + fan_out)).
Tensor xavier_normal_(Tensor tensor, double gain = 1.0, Generator* generator = nullptr,
                      Where where = Where::current());

// U(-b, b) with b = sqrt(3) * gain / sqrt(fan), gain = calculate_gain(nonlinearity, a).
// nn::Linear uses a = sqrt(5), which gives b = 1 / sqrt(fan_in).
Tensor kaiming_uniform_(Tensor tensor, double a = 0.0, FanMode mode = FanMode::FanIn,
                        Nonlinearity nonlinearity = Nonlinearity::LeakyReLU, Generator* generator = nullptr,
                        Where where = Where::current());
// N(0, s^2) with s = gain / sqrt(fan).
Tensor kaiming_normal_(Tensor tensor, double a = 0.0, FanMode mode = FanMode::FanIn,
                       Nonlinearity nonlinearity = Nonlinearity::LeakyReLU, Generator* generator = nullptr,
                       Where where = Where::current());

// N(mean, std^2) truncated to [a, b], by PyTorch's inverse-CDF method: U[2 cdf(a') - 1, 2 cdf(b') - 1)
// with a' = (a - mean) / std (likewise b'), then erfinv, times std sqrt(2), plus mean, clamped to
// [a, b]. Computed in float64 and rounded once into the tensor (init_trunc_normal.cpp). The result
// is only accurate when [a, b] is not far in a tail (PyTorch warns beyond 2 std; ember does not).
Tensor trunc_normal_(Tensor tensor, double mean = 0.0, double std = 1.0, double a = -2.0, double b = 2.0,
                     Generator* generator = nullptr, Where where = Where::current());

// The identity matrix, for a 2-D tensor of any dtype.
Tensor eye_(Tensor tensor, Where where = Where::current());
// For a 3-, 4- or 5-D convolution weight: zeros but a 1 at the kernel's centre for output channel
// g * (out / groups) + d and input channel d (d < min(out / groups, in)), so that a convolution
// with "same" padding passes its input through.
Tensor dirac_(Tensor tensor, int64_t groups = 1, Where where = Where::current());
// A (semi-)orthogonal matrix times gain: the tensor seen as [size(0), numel / size(0)] gets Q of
// the QR factorisation of N(0, 1) draws (of their transpose when wide), with R's diagonal made
// positive (PyTorch's unique choice). Needs at least 2 dims.
Tensor orthogonal_(Tensor tensor, double gain = 1.0, Generator* generator = nullptr, Where where = Where::current());

}  // namespace ember::nn::init
