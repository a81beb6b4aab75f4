// More pooling of torch.nn.functional: max_unpool1d/2d/3d (max_pool's partial inverse) and
// lp_pool1d/2d/3d (power-average pooling). Both are composites of registry ops (sort, gather,
// where, scatter_add; pow, avg_pool, sign, relu), so autograd, CUDA and the compile stage's
// capture come from those ops.
#pragma once

#include <optional>

#include "runtime/functional_pool.h"
#include "runtime/tensor.h"

namespace ember::nn::functional {

struct MaxUnpoolOptions {
  SpatialDims stride = Dims{};  // empty (PyTorch's None): kernel_size
  SpatialDims padding = 0;
};

// torch.nn.functional.max_unpool1d/2d/3d: input [N, C, S...] or unbatched [C, S...] and int64
// indices of the same shape (max_pool*_with_indices' second result: flat positions within each
// (N, C) output plane, row-major over the spatial dims) -> [N, C, O...], zeros except
// output[n, c].flat[indices[n, c, i]] = input[n, c, i].
// Output size per spatial dim: (S - 1) stride - 2 padding + kernel_size, or output_size (its last
// `spatial` values when it has spatial + 2), which must lie strictly between that size - stride and
// that size + stride, as F.max_unpool's _unpool_output_size checks.
// An index outside [0, prod(O)) is refused: on the host, naming this op, for CPU tensors outside a
// capture (PyTorch's CPU check: "Found an invalid max index"), else by scatter_add's own check.
// Several indices naming one position: the last in row-major order wins, as PyTorch's CPU loop
// (its CUDA kernel races). The gradient is the derivative of that result: it reaches the winner
// alone, where PyTorch's backward (a gather) gives every duplicate the position's gradient; the
// two agree whenever indices are distinct.
Tensor max_unpool1d(const Tensor& input, const Tensor& indices, SpatialDims kernel_size, MaxUnpoolOptions options = {},
                    std::optional<Dims> output_size = std::nullopt, Where where = Where::current());
Tensor max_unpool2d(const Tensor& input, const Tensor& indices, SpatialDims kernel_size, MaxUnpoolOptions options = {},
                    std::optional<Dims> output_size = std::nullopt, Where where = Where::current());
Tensor max_unpool3d(const Tensor& input, const Tensor& indices, SpatialDims kernel_size, MaxUnpoolOptions options = {},
                    std::optional<Dims> output_size = std::nullopt, Where where = Where::current());

struct LPPoolOptions {
  SpatialDims stride = Dims{};  // empty (PyTorch's None): kernel_size
  bool ceil_mode = false;
};

// torch.nn.functional.lp_pool1d/2d/3d with p = norm_type (non-zero), exactly PyTorch's formula:
//   a = avg_pool(x^p, kernel_size, stride, padding 0, ceil_mode)
//   y = (sign(a) * relu(|a|) * prod(kernel_size))^(1 / p)
// i.e. the p-norm of each window, (sum x^p)^(1/p), for full windows; with ceil_mode a partial last
// window's mean is still multiplied by the whole kernel's element count, as PyTorch's is. Where the
// window's sum is zero the gradient is zero (sign(0) = 0), as PyTorch documents. Floating inputs,
// [N, C, S...] or unbatched [C, S...].
Tensor lp_pool1d(const Tensor& input, double norm_type, SpatialDims kernel_size, LPPoolOptions options = {},
                 Where where = Where::current());
Tensor lp_pool2d(const Tensor& input, double norm_type, SpatialDims kernel_size, LPPoolOptions options = {},
                 Where where = Where::current());
Tensor lp_pool3d(const Tensor& input, double norm_type, SpatialDims kernel_size, LPPoolOptions options = {},
                 Where where = Where::current());

}  // namespace ember::nn::functional
