// Resampling layers (torch.nn's Upsample, UpsamplingNearest2d, UpsamplingBilinear2d, PixelShuffle,
// PixelUnshuffle): holders of F::interpolate's and F::pixel_shuffle's arguments
// (runtime/nn/functional_interpolate.h), checked when they run, as PyTorch's are.
#pragma once

#include <optional>

#include "runtime/nn/functional_interpolate.h"
#include "runtime/nn/holder.h"

namespace ember::nn {

// torch.nn.Upsample's arguments: F::interpolate's, without antialias.
struct UpsampleOptions {
  std::optional<SpatialDims> size;
  std::optional<functional::ScaleFactors> scale_factor;
  functional::InterpolateMode mode = functional::InterpolateMode::Nearest;
  std::optional<bool> align_corners;
  std::optional<bool> recompute_scale_factor;
};

class UpsampleImpl : public Module {
 public:
  explicit UpsampleImpl(UpsampleOptions options = {}) : UpsampleImpl("Upsample", std::move(options)) {}
  // F::interpolate(input, options): errors name the caller's line.
  Tensor forward(const Tensor& input, Where where = Where::current());
  const UpsampleOptions& options() const { return options_; }

 protected:
  // For the fixed-mode subclasses, which print under their own names.
  UpsampleImpl(std::string name, UpsampleOptions options) : Module(std::move(name)), options_(std::move(options)) {}
  // PyTorch's: "scale_factor=2.0, mode='nearest'", or "size=(4, 6), mode='bilinear'".
  std::string extra_repr() const override;

 private:
  UpsampleOptions options_;
};

class Upsample : public ModuleHolder<UpsampleImpl> {
 public:
  using ModuleHolder::ModuleHolder;
  explicit Upsample(UpsampleOptions options = {}) : ModuleHolder(std::make_shared<UpsampleImpl>(std::move(options))) {}
};

// The arguments of the fixed-mode layers below.
struct UpsamplingOptions {
  std::optional<SpatialDims> size;
  std::optional<functional::ScaleFactors> scale_factor;
};

// torch.nn.UpsamplingNearest2d: Upsample with mode 'nearest'.
class UpsamplingNearest2dImpl : public UpsampleImpl {
 public:
  explicit UpsamplingNearest2dImpl(UpsamplingOptions options)
      : UpsampleImpl("UpsamplingNearest2d", {.size = std::move(options.size),
                                             .scale_factor = std::move(options.scale_factor),
                                             .mode = functional::InterpolateMode::Nearest}) {}
};

class UpsamplingNearest2d : public ModuleHolder<UpsamplingNearest2dImpl> {
 public:
  using ModuleHolder::ModuleHolder;
  explicit UpsamplingNearest2d(UpsamplingOptions options)
      : ModuleHolder(std::make_shared<UpsamplingNearest2dImpl>(std::move(options))) {}
};

// torch.nn.UpsamplingBilinear2d: Upsample with mode 'bilinear' and align_corners=True.
class UpsamplingBilinear2dImpl : public UpsampleImpl {
 public:
  explicit UpsamplingBilinear2dImpl(UpsamplingOptions options)
      : UpsampleImpl("UpsamplingBilinear2d", {.size = std::move(options.size),
                                              .scale_factor = std::move(options.scale_factor),
                                              .mode = functional::InterpolateMode::Bilinear,
                                              .align_corners = true}) {}
};

class UpsamplingBilinear2d : public ModuleHolder<UpsamplingBilinear2dImpl> {
 public:
  using ModuleHolder::ModuleHolder;
  explicit UpsamplingBilinear2d(UpsamplingOptions options)
      : ModuleHolder(std::make_shared<UpsamplingBilinear2dImpl>(std::move(options))) {}
};

// torch.nn.PixelShuffle / PixelUnshuffle: F::pixel_shuffle / F::pixel_unshuffle with their factor.
class PixelShuffleImpl : public Module {
 public:
  explicit PixelShuffleImpl(int64_t upscale_factor) : Module("PixelShuffle"), upscale_factor_(upscale_factor) {}
  Tensor forward(const Tensor& input, Where where = Where::current());
  int64_t upscale_factor() const { return upscale_factor_; }

 protected:
  std::string extra_repr() const override;

 private:
  int64_t upscale_factor_;
};

class PixelShuffle : public ModuleHolder<PixelShuffleImpl> {
 public:
  using ModuleHolder::ModuleHolder;
  explicit PixelShuffle(int64_t upscale_factor) : ModuleHolder(std::make_shared<PixelShuffleImpl>(upscale_factor)) {}
};

class PixelUnshuffleImpl : public Module {
 public:
  explicit PixelUnshuffleImpl(int64_t downscale_factor)
      : Module("PixelUnshuffle"), downscale_factor_(downscale_factor) {}
  Tensor forward(const Tensor& input, Where where = Where::current());
  int64_t downscale_factor() const { return downscale_factor_; }

 protected:
  std::string extra_repr() const override;

 private:
  int64_t downscale_factor_;
};

class PixelUnshuffle : public ModuleHolder<PixelUnshuffleImpl> {
 public:
  using ModuleHolder::ModuleHolder;
  explicit PixelUnshuffle(int64_t downscale_factor)
      : ModuleHolder(std::make_shared<PixelUnshuffleImpl>(downscale_factor)) {}
};

}  // namespace ember::nn
