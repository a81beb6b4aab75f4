// What nn::Conv and nn::ConvTranspose share (conv.cpp, conv_transpose.cpp): torch.nn's
// _ConvNd.__init__ checks and reset_parameters.
#pragma once

#include <cstdint>

#include "runtime/random/generator.h"
#include "runtime/tensor.h"

namespace ember::nn {

// groups > 0, channel counts >= 0 and divisible by groups; errors name the layer (`name`).
void check_conv_layer(const char* name, int64_t in_channels, int64_t out_channels, int64_t groups);

// weight ~ kaiming_uniform_(a = sqrt(5)), i.e. U(-1/sqrt(fan_in), 1/sqrt(fan_in)) with fan_in =
// weight.size(1) * kernel elements, and bias (when defined) ~ U with the same bound.
void reset_conv_parameters(Tensor& weight, Tensor& bias, Generator* generator);

}  // namespace ember::nn
