// F::pixel_shuffle and F::pixel_unshuffle (functional_interpolate.h): a reshape that splits the
// factor out of its dims, a permute that moves it, and a reshape that merges it in; the checks and
// messages are PyTorch's (aten/src/ATen/native/PixelShuffle.h).
#include "runtime/functional.h"
#include "runtime/nn/functional_interpolate.h"

namespace ember::nn::functional {

namespace {

// The dims before the last three (any number of batch dims), then `tail`.
Dims leading_then(const Tensor& input, std::initializer_list<int64_t> tail) {
  Dims shape;
  for (int d = 0; d < input.dim() - 3; ++d) shape.push_back(input.size(d));
  for (const int64_t size : tail) shape.push_back(size);
  return shape;
}

// The identity over the leading dims, then the last five dims in `tail` order (0..4 from there).
Dims leading_then_order(int leading, std::initializer_list<int64_t> tail) {
  Dims order;
  for (int d = 0; d < leading; ++d) order.push_back(d);
  for (const int64_t d : tail) order.push_back(leading + d);
  return order;
}

// factor^2, refused when int64 cannot hold it (no channel count could be divisible by it then).
int64_t squared(int64_t factor, const char* op, const char* what) {
  int64_t square = 0;
  check(!__builtin_mul_overflow(factor, factor, &square), "{}: {} {} squared overflows int64", op, what, factor);
  return square;
}

}  // namespace

Tensor pixel_shuffle(const Tensor& input, int64_t upscale_factor, Where where) {
  CallSiteScope site(where);
  check(input.defined() && input.dim() >= 3,
        "pixel_shuffle expects input to have at least 3 dimensions, but got input with {} dimension(s)",
        input.defined() ? input.dim() : 0);
  check(upscale_factor > 0, "pixel_shuffle expects a positive upscale_factor, but got {}", upscale_factor);
  const int64_t r = upscale_factor;
  const int64_t channels = input.size(-3);
  const int64_t square = squared(r, "pixel_shuffle", "upscale_factor");
  check(channels % square == 0,
        "pixel_shuffle expects its input's 'channel' dimension to be divisible by the square "
        "of upscale_factor, but input.size(-3)={} is not divisible by {} (input shape {})",
        channels, square, input.sizes());
  const int64_t height = input.size(-2);
  const int64_t width = input.size(-1);
  const int leading = input.dim() - 3;
  // [*, C, r, r, H, W] -> [*, C, H, r, W, r]: out[c, h r + i, w r + j] = in[c r^2 + i r + j, h, w].
  const Tensor split = reshape(input, leading_then(input, {channels / square, r, r, height, width}));
  const Tensor moved = permute(split, leading_then_order(leading, {0, 3, 1, 4, 2}));
  return reshape(moved, leading_then(input, {channels / square, height * r, width * r}));
}

Tensor pixel_unshuffle(const Tensor& input, int64_t downscale_factor, Where where) {
  CallSiteScope site(where);
  check(input.defined() && input.dim() >= 3,
        "pixel_unshuffle expects input to have at least 3 dimensions, but got input with {} dimension(s)",
        input.defined() ? input.dim() : 0);
  check(downscale_factor > 0, "pixel_unshuffle expects a positive downscale_factor, but got {}", downscale_factor);
  const int64_t r = downscale_factor;
  const int64_t channels = input.size(-3);
  const int64_t height = input.size(-2);
  const int64_t width = input.size(-1);
  check(height % r == 0,
        "pixel_unshuffle expects height to be divisible by downscale_factor, but input.size(-2)={} "
        "is not divisible by {} (input shape {})",
        height, r, input.sizes());
  check(width % r == 0,
        "pixel_unshuffle expects width to be divisible by downscale_factor, but input.size(-1)={} "
        "is not divisible by {} (input shape {})",
        width, r, input.sizes());
  const int64_t square = squared(r, "pixel_unshuffle", "downscale_factor");
  const int leading = input.dim() - 3;
  // [*, C, H, r, W, r] -> [*, C, r, r, H, W]: out[c r^2 + i r + j, h, w] = in[c, h r + i, w r + j].
  const Tensor split = reshape(input, leading_then(input, {channels, height / r, r, width / r, r}));
  const Tensor moved = permute(split, leading_then_order(leading, {0, 2, 4, 1, 3}));
  return reshape(moved, leading_then(input, {channels * square, height / r, width / r}));
}

}  // namespace ember::nn::functional
