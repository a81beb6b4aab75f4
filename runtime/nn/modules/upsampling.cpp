// nn::Upsample and its fixed-mode forms, nn::PixelShuffle and nn::PixelUnshuffle: forward calls the
// functional form; extra_repr prints PyTorch's text.
#include "runtime/nn/modules/upsampling.h"

#include "runtime/nn/python_repr.h"

namespace ember::nn {

namespace {

// Python's repr of the float, or of the tuple of floats, that nn.Upsample keeps.
std::string python_scale(const functional::ScaleFactors& factors) {
  const std::vector<double>& values = factors.values();
  if (values.size() == 1) return python_float(values[0]);
  std::string text = "(";
  for (size_t i = 0; i < values.size(); ++i) text += (i == 0 ? "" : ", ") + python_float(values[i]);
  return text + ")";
}

}  // namespace

Tensor UpsampleImpl::forward(const Tensor& input, Where where) {
  return functional::interpolate(input,
                                 {.size = options_.size,
                                  .scale_factor = options_.scale_factor,
                                  .mode = options_.mode,
                                  .align_corners = options_.align_corners,
                                  .recompute_scale_factor = options_.recompute_scale_factor},
                                 where);
}

std::string UpsampleImpl::extra_repr() const {
  std::string info;
  if (options_.scale_factor) {
    info = "scale_factor=" + python_scale(*options_.scale_factor);
  } else if (options_.size) {
    const Dims& sizes = options_.size->values();
    info = "size=" + (sizes.size() == 1 ? std::to_string(sizes[0]) : python_tuple(sizes));
  } else {
    info = "size=None";
  }
  return fmt::format("{}, mode='{}'", info, functional::interpolate_mode_name(options_.mode));
}

Tensor PixelShuffleImpl::forward(const Tensor& input, Where where) {
  return functional::pixel_shuffle(input, upscale_factor_, where);
}

std::string PixelShuffleImpl::extra_repr() const { return fmt::format("upscale_factor={}", upscale_factor_); }

Tensor PixelUnshuffleImpl::forward(const Tensor& input, Where where) {
  return functional::pixel_unshuffle(input, downscale_factor_, where);
}

std::string PixelUnshuffleImpl::extra_repr() const { return fmt::format("downscale_factor={}", downscale_factor_); }

}  // namespace ember::nn
