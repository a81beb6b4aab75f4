// nn::Conv1d/2d/3d and nn::ConvTranspose1d/2d/3d (torch.nn's): the weight and bias of a
// convolution, initialised as PyTorch's (kaiming_uniform_ with a = sqrt(5), so U(-1/sqrt(fan_in),
// 1/sqrt(fan_in)), and the bias with the same bound), and a forward that calls the functional
// convolutions of runtime/functional_conv.h. Conv's padding_mode other than zeros pads the input
// with pad() first, as PyTorch does.
#pragma once

#include <optional>
#include <string>

#include "runtime/functional_conv.h"
#include "runtime/nn/holder.h"
#include "runtime/random/generator.h"

namespace ember::nn {

enum class ConvPaddingMode { Zeros, Reflect, Replicate, Circular };

struct ConvLayerOptions {
  SpatialDims stride = 1;
  ConvPadding padding = 0;  // amounts, "valid" or "same"
  SpatialDims dilation = 1;
  int64_t groups = 1;
  bool bias = true;
  ConvPaddingMode padding_mode = ConvPaddingMode::Zeros;
  DType dtype = DType::Float32;
  std::optional<Device> device = std::nullopt;  // empty: the default device
  Generator* generator = nullptr;               // initialisation draws; null: the device's default generator
};

// The layer behind Conv1d, Conv2d and Conv3d (which fix the number of spatial dims and the name).
class ConvImpl : public Module {
 public:
  // input [N, C_in, S...] or unbatched [C_in, S...] -> [N, C_out, O...]
  Tensor forward(const Tensor& input, Where where = Where::current());
  // Redraws weight and bias as the constructor did.
  void reset_parameters(Generator* generator = nullptr);

  int64_t in_channels() const { return in_channels_; }
  int64_t out_channels() const { return out_channels_; }
  const Dims& kernel_size() const { return kernel_size_; }

  Tensor weight;  // [out_channels, in_channels / groups, kernel_size...]
  Tensor bias;    // [out_channels], undefined without bias

 protected:
  ConvImpl(const char* name, int spatial, int64_t in_channels, int64_t out_channels, const SpatialDims& kernel_size,
           const ConvLayerOptions& options, Where where);
  std::string extra_repr() const override;

 private:
  int spatial_;
  int64_t in_channels_, out_channels_;
  Dims kernel_size_, stride_, dilation_;
  Dims pad_before_, pad_after_;  // zeros (or padding_mode's border) at each end of each spatial dim
  ConvPadding padding_;
  int64_t groups_;
  ConvPaddingMode padding_mode_;
};

class Conv1dImpl : public ConvImpl {
 public:
  Conv1dImpl(int64_t in_channels, int64_t out_channels, SpatialDims kernel_size, ConvLayerOptions options = {},
             Where where = Where::current())
      : ConvImpl("Conv1d", 1, in_channels, out_channels, kernel_size, options, where) {}
};
class Conv2dImpl : public ConvImpl {
 public:
  Conv2dImpl(int64_t in_channels, int64_t out_channels, SpatialDims kernel_size, ConvLayerOptions options = {},
             Where where = Where::current())
      : ConvImpl("Conv2d", 2, in_channels, out_channels, kernel_size, options, where) {}
};
class Conv3dImpl : public ConvImpl {
 public:
  Conv3dImpl(int64_t in_channels, int64_t out_channels, SpatialDims kernel_size, ConvLayerOptions options = {},
             Where where = Where::current())
      : ConvImpl("Conv3d", 3, in_channels, out_channels, kernel_size, options, where) {}
};

struct ConvTransposeLayerOptions {
  SpatialDims stride = 1;
  SpatialDims padding = 0;
  SpatialDims output_padding = 0;
  int64_t groups = 1;
  bool bias = true;
  SpatialDims dilation = 1;
  DType dtype = DType::Float32;
  std::optional<Device> device = std::nullopt;
  Generator* generator = nullptr;
};

// The layer behind ConvTranspose1d/2d/3d.
class ConvTransposeImpl : public Module {
 public:
  // input [N, C_in, S...] or unbatched -> [N, C_out, O...], with the options' output_padding.
  Tensor forward(const Tensor& input, Where where = Where::current());
  // output_size (the spatial sizes, or with the batch and channel dims in front) picks the
  // output_padding that gives it, as PyTorch's forward(input, output_size); it must lie within the
  // range of sizes the stride (or dilation) allows.
  Tensor forward(const Tensor& input, const Dims& output_size, Where where = Where::current());
  void reset_parameters(Generator* generator = nullptr);

  int64_t in_channels() const { return in_channels_; }
  int64_t out_channels() const { return out_channels_; }
  const Dims& kernel_size() const { return kernel_size_; }

  Tensor weight;  // [in_channels, out_channels / groups, kernel_size...]
  Tensor bias;    // [out_channels], undefined without bias

 protected:
  ConvTransposeImpl(const char* name, int spatial, int64_t in_channels, int64_t out_channels,
                    const SpatialDims& kernel_size, const ConvTransposeLayerOptions& options, Where where);
  std::string extra_repr() const override;

 private:
  int spatial_;
  int64_t in_channels_, out_channels_;
  Dims kernel_size_, stride_, padding_, output_padding_, dilation_;
  int64_t groups_;
};

class ConvTranspose1dImpl : public ConvTransposeImpl {
 public:
  ConvTranspose1dImpl(int64_t in_channels, int64_t out_channels, SpatialDims kernel_size,
                      ConvTransposeLayerOptions options = {}, Where where = Where::current())
      : ConvTransposeImpl("ConvTranspose1d", 1, in_channels, out_channels, kernel_size, options, where) {}
};
class ConvTranspose2dImpl : public ConvTransposeImpl {
 public:
  ConvTranspose2dImpl(int64_t in_channels, int64_t out_channels, SpatialDims kernel_size,
                      ConvTransposeLayerOptions options = {}, Where where = Where::current())
      : ConvTransposeImpl("ConvTranspose2d", 2, in_channels, out_channels, kernel_size, options, where) {}
};
class ConvTranspose3dImpl : public ConvTransposeImpl {
 public:
  ConvTranspose3dImpl(int64_t in_channels, int64_t out_channels, SpatialDims kernel_size,
                      ConvTransposeLayerOptions options = {}, Where where = Where::current())
      : ConvTransposeImpl("ConvTranspose3d", 3, in_channels, out_channels, kernel_size, options, where) {}
};

// The holders: nn::Conv2d conv(3, 16, 3, {.padding = 1}); conv(x) calls conv->forward(x).
template <typename Impl, typename Options>
class ConvHolder : public ModuleHolder<Impl> {
 public:
  using ModuleHolder<Impl>::ModuleHolder;
  ConvHolder(int64_t in_channels, int64_t out_channels, SpatialDims kernel_size, Options options = {},
             Where where = Where::current())
      : ModuleHolder<Impl>(std::make_shared<Impl>(in_channels, out_channels, kernel_size, options, where)) {}
};
using Conv1d = ConvHolder<Conv1dImpl, ConvLayerOptions>;
using Conv2d = ConvHolder<Conv2dImpl, ConvLayerOptions>;
using Conv3d = ConvHolder<Conv3dImpl, ConvLayerOptions>;
using ConvTranspose1d = ConvHolder<ConvTranspose1dImpl, ConvTransposeLayerOptions>;
using ConvTranspose2d = ConvHolder<ConvTranspose2dImpl, ConvTransposeLayerOptions>;
using ConvTranspose3d = ConvHolder<ConvTranspose3dImpl, ConvTransposeLayerOptions>;

}  // namespace ember::nn
