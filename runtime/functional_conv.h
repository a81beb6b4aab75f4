// Convolutions and their sliding windows, with torch.nn.functional's semantics: conv1d/2d/3d,
// conv_transpose1d/2d/3d, unfold (im2col) and fold (col2im). They are composites of registry ops
// (runtime/conv_windows.h): a convolution gathers the input's windows with one index_select per
// spatial dim and multiplies them by the weight in one GEMM (`linear`, so the bias is its epilogue);
// a transposed convolution does the GEMM first and sums the windows back with index_add. Autograd
// (to any order), CUDA, autocast and the compile stage's capture come from those ops.
//
// Memory: the windows of a k x k convolution are k^2 times the (padded) input, as with any im2col.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "runtime/spatial_dims.h"
#include "runtime/tensor.h"

namespace ember {

// A convolution's padding: amounts added at both ends of each spatial dim (one for all, or one per
// dim), or PyTorch's strings "valid" (none) and "same" (the output keeps the input's size: stride 1
// only; an odd total dilation (kernel - 1) puts the extra element after, as PyTorch).
class ConvPadding {
 public:
  ConvPadding(int64_t amount = 0) : amounts_(amount) {}                       // NOLINT
  ConvPadding(std::initializer_list<int64_t> amounts) : amounts_(amounts) {}  // NOLINT
  ConvPadding(const Dims& amounts) : amounts_(amounts) {}                     // NOLINT
  // "valid" or "same". A string literal only, so that 0 is an amount. Any other string is kept and
  // refused by the convolution (or module) that receives it, whose error can name the op and the
  // user's line (no call site is known while the options are being built).
  template <size_t N>
  ConvPadding(const char (&preset)[N]) : ConvPadding(parse(std::string_view(preset, N - 1))) {}  // NOLINT

  bool same() const { return same_; }
  bool valid() const { return valid_; }
  const SpatialDims& amounts() const { return amounts_; }  // 0 for "valid" and for "same"
  // An error naming `op` when the padding was a string other than "valid" and "same".
  void check_preset(const char* op) const;

 private:
  static ConvPadding parse(std::string_view preset);

  SpatialDims amounts_;
  bool same_ = false;
  bool valid_ = false;          // said "valid" (no padding, as 0 is; module reprs print the word)
  std::string unknown_preset_;  // a string that is neither, for check_preset
};

struct ConvOptions {
  SpatialDims stride = 1;
  ConvPadding padding = 0;
  SpatialDims dilation = 1;
  int64_t groups = 1;  // input and output channels split into groups convolved apart
};

// input [N, C_in, S...] or unbatched [C_in, S...]; weight [C_out, C_in / groups, K...]; bias
// [C_out] or undefined. Result [N, C_out, O...] (unbatched without N), O = floor((S + 2 padding -
// dilation (K - 1) - 1) / stride) + 1. input, weight and bias share a floating dtype (under
// autocast they are lowered to its dtype first, as PyTorch's conv is on its lower-precision list).
// An empty batch gives an empty result and no input channels the bias alone (an empty sum); an
// input with a spatial dim of 0, a kernel dim of 0 or fewer weight rows than groups is an error,
// as in PyTorch.
Tensor conv1d(const Tensor& input, const Tensor& weight, const Tensor& bias = {}, ConvOptions options = {},
              Where where = Where::current());
Tensor conv2d(const Tensor& input, const Tensor& weight, const Tensor& bias = {}, ConvOptions options = {},
              Where where = Where::current());
Tensor conv3d(const Tensor& input, const Tensor& weight, const Tensor& bias = {}, ConvOptions options = {},
              Where where = Where::current());

struct ConvTransposeOptions {
  SpatialDims stride = 1;
  SpatialDims padding = 0;         // removed from both ends of the full output
  SpatialDims output_padding = 0;  // added after, to pick one of the stride's possible sizes; < stride or dilation
  int64_t groups = 1;
  SpatialDims dilation = 1;
};

// The adjoint of conv (its input gradient): input [N, C_in, S...] or unbatched; weight [C_in,
// C_out / groups, K...]; bias [C_out]. Result [N, C_out, O...], O = (S - 1) stride - 2 padding +
// dilation (K - 1) + output_padding + 1. An empty batch gives an empty result; no input channels (a
// weight without rows), a spatial dim of 0 or a kernel dim of 0 is an error, as in PyTorch.
Tensor conv_transpose1d(const Tensor& input, const Tensor& weight, const Tensor& bias = {},
                        ConvTransposeOptions options = {}, Where where = Where::current());
Tensor conv_transpose2d(const Tensor& input, const Tensor& weight, const Tensor& bias = {},
                        ConvTransposeOptions options = {}, Where where = Where::current());
Tensor conv_transpose3d(const Tensor& input, const Tensor& weight, const Tensor& bias = {},
                        ConvTransposeOptions options = {}, Where where = Where::current());

struct UnfoldOptions {
  SpatialDims dilation = 1;
  SpatialDims padding = 0;  // zeros at both ends
  SpatialDims stride = 1;
};

// torch.nn.functional.unfold (im2col), two spatial dims as PyTorch's: input [N, C, H, W] (or
// [C, H, W]) -> [N, C * kh * kw, L], column l holding window l (row-major over the output
// positions), rows ordered (c, i, j). Only the batch may be 0 (PyTorch's im2col check).
Tensor unfold(const Tensor& input, SpatialDims kernel_size, UnfoldOptions options = {}, Where where = Where::current());
// torch.nn.functional.fold (col2im), unfold's adjoint: input [N, C * kh * kw, L] (or unbatched)
// -> [N, C, output_size], overlapping window elements summed. L must be the number of windows
// that output_size (plus padding) holds.
Tensor fold(const Tensor& input, SpatialDims output_size, SpatialDims kernel_size, UnfoldOptions options = {},
            Where where = Where::current());

}  // namespace ember
