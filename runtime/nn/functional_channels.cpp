// local_response_norm and channel_shuffle of nn::functional (functional_channels.h), written as
// torch.nn.functional's and ATen's math_channel_shuffle compose them.
#include "runtime/nn/functional_channels.h"

#include "runtime/functional.h"
#include "runtime/functional_pool.h"

namespace ember::nn::functional {

Tensor local_response_norm(const Tensor& input, int64_t size, double alpha, double beta, double k, Where where) {
  CallSiteScope site(where);
  check(input.defined(), "local_response_norm: the input must be defined");
  const int rank = input.dim();
  check(rank >= 3, "local_response_norm: Expected 3D or higher dimensionality input (got {} dimensions, shape {})",
        rank, input.sizes());
  check(size >= 1, "local_response_norm: size must be positive, got {}", size);
  check(is_floating(input.dtype()), "local_response_norm: the input must be floating point, got {}", input.dtype());
  if (input.numel() == 0) return input;
  // The window around channel c reaches size / 2 channels before it and (size - 1) / 2 after it.
  const int64_t before = size / 2, after = (size - 1) / 2;
  Tensor squares = mul(input, input);
  Tensor mean_square;
  if (rank == 3) {
    const Tensor padded = pad(squares.unsqueeze(1), {0, 0, before, after});  // [N, 1, C + size - 1, L]
    mean_square = avg_pool2d(padded, {size, 1}, {.stride = 1}).squeeze(1);
  } else {
    const Dims& sizes = input.sizes();
    const int64_t rest = input.numel() / (sizes[0] * sizes[1] * sizes[2]);
    const Tensor planes = squares.reshape({sizes[0], 1, sizes[1], sizes[2], rest});
    const Tensor padded = pad(planes, {0, 0, 0, 0, before, after});
    mean_square = avg_pool3d(padded, {size, 1, 1}, {.stride = 1}).squeeze(1).reshape(sizes);
  }
  const Tensor divisor = pow(add(mul(mean_square, alpha), k), beta);
  return div(input, divisor);
}

Tensor channel_shuffle(const Tensor& input, int64_t groups, Where where) {
  CallSiteScope site(where);
  check(input.defined(), "channel_shuffle: the input must be defined");
  check(input.dim() > 2,
        "channel_shuffle: expects input to have at least 3 dimensions, but got input with {} "
        "dimension(s) (shape {})",
        input.dim(), input.sizes());
  check(groups > 0, "channel_shuffle: Number of groups to divide channels in must be positive. Value of groups: {}",
        groups);
  const int64_t channels = input.size(1);
  check(channels % groups == 0,
        "channel_shuffle: Number of channels must be divisible by groups. Got {} channels "
        "and {} groups (input shape {})",
        channels, groups, input.sizes());
  int64_t rest = 1;
  for (int d = 2; d < input.dim(); ++d) rest *= input.size(d);
  const Tensor grouped = input.reshape({input.size(0), groups, channels / groups, rest});
  return clone(grouped.permute({0, 2, 1, 3})).reshape(input.sizes());  // clone: always a new, contiguous tensor
}

}  // namespace ember::nn::functional
