// The argument checks, autocast lowering and layout helpers shared by the convolutions
// (functional_conv.cpp), the transposed convolutions (functional_conv_transpose.cpp), unfold/fold
// and the conv layers. Internal to the library.
#pragma once

#include <cstdint>

#include "runtime/spatial_dims.h"
#include "runtime/tensor.h"

namespace ember::detail {

// Under autocast, float32 and 16-bit tensors lowered to autocast's dtype (each cast a dispatched
// to_dtype, so gradients flow back in the caller's dtype); float64 and undefined tensors as they
// are, as PyTorch's autocast leaves float64 alone.
Tensor conv_autocast_lowered(const Tensor& tensor);

// input, weight and (when defined) bias: floating, one dtype, one device; weight has spatial + 2
// dims; bias is 1-D.
void check_conv_operands(const char* op, const Tensor& input, const Tensor& weight, const Tensor& bias, int spatial);

// groups > 0 and, as PyTorch's check_shape_forward, at least `groups` rows in the weight's dim 0
// (conv's output channels, conv_transpose's input channels): a weight with none is an error.
void check_conv_groups(const char* op, const Tensor& weight, int64_t groups);

// What PyTorch's convolution kernels refuse although the shapes agree: a kernel dim of size 0, and
// an input `batched` [N, C, S...] with no elements unless N or C is the 0 (an empty batch gives an
// empty result; a spatial dim of 0 is "only zero batch or zero channel inputs are supported").
void check_conv_not_degenerate(const char* op, const Tensor& batched, const Tensor& weight);

// input [N, C, S...] as it is, or unbatched [C, S...] with a batch dim of 1 added (`unbatched` set).
Tensor conv_batched_input(const char* op, const Tensor& input, int spatial, bool& unbatched);

// `values` expanded to one per spatial dim, each > 0 (positive) or >= 0 (!positive).
Dims conv_sizes(const char* op, const char* what, const SpatialDims& values, int spatial, bool positive);

// A convolution's operands as its body uses them: each lowered under autocast, all checked
// (check_conv_operands), and the input with a batch dim (`unbatched` says whether one was added).
struct ConvOperands {
  Tensor input, weight, bias;  // lowered; bias may be undefined
  Tensor batched;              // input as [N, C, S...]
  bool unbatched = false;
};
ConvOperands conv_operands(const char* op, int spatial, const Tensor& input, const Tensor& weight, const Tensor& bias);

// The permutation [N, C, S...] -> [N, S..., C]; it also takes a weight [out, in, K...] to the
// order of a channels-last window, [out, K..., in].
Dims channels_last_order(int spatial);

// padding="same": dilation * (kernel - 1) zeros per dim, split with the odd one after (PyTorch's).
void same_padding(const Dims& kernel, const Dims& dilation, Dims& before, Dims& after);

// The product of dims [from, dims.size()).
int64_t trailing_product(const Dims& dims, int from);

}  // namespace ember::detail
