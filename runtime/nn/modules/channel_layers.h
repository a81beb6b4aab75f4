// Layers that act across the channel dim: torch.nn's LocalResponseNorm, ChannelShuffle and
// Softmax2d, over the functions of nn/functional_channels.h and softmax. Options, defaults and
// reprs are torch.nn's.
#pragma once

#include "runtime/nn/holder.h"

namespace ember::nn {

// libtorch's LocalResponseNormOptions: size is required, the rest are torch.nn's defaults.
struct LocalResponseNormOptions {
  int64_t size;
  double alpha = 1e-4;
  double beta = 0.75;
  double k = 1.0;
};

class LocalResponseNormImpl : public Module {
 public:
  explicit LocalResponseNormImpl(LocalResponseNormOptions options) : Module("LocalResponseNorm"), options_(options) {}
  explicit LocalResponseNormImpl(int64_t size) : LocalResponseNormImpl(LocalResponseNormOptions{size}) {}
  // F::local_response_norm: input [N, C, *] of at least 3 dims.
  Tensor forward(const Tensor& input, Where where = Where::current());
  const LocalResponseNormOptions& options() const { return options_; }

 protected:
  std::string extra_repr() const override;

 private:
  LocalResponseNormOptions options_;
};

class ChannelShuffleImpl : public Module {
 public:
  explicit ChannelShuffleImpl(int64_t groups) : Module("ChannelShuffle"), groups_(groups) {}
  // F::channel_shuffle: input [N, C, *], groups dividing C.
  Tensor forward(const Tensor& input, Where where = Where::current());
  int64_t groups() const { return groups_; }

 protected:
  std::string extra_repr() const override;

 private:
  int64_t groups_;
};

// Softmax over the channels of each spatial position: softmax along dim -3 of a 3-D [C, H, W] or
// 4-D [N, C, H, W] input; another rank is an error, as torch.nn.Softmax2d raises.
class Softmax2dImpl : public Module {
 public:
  Softmax2dImpl() : Module("Softmax2d") {}
  Tensor forward(const Tensor& input, Where where = Where::current());
};

class LocalResponseNorm : public ModuleHolder<LocalResponseNormImpl> {
 public:
  using ModuleHolder::ModuleHolder;
  explicit LocalResponseNorm(LocalResponseNormOptions options)
      : ModuleHolder(std::make_shared<LocalResponseNormImpl>(options)) {}
  explicit LocalResponseNorm(int64_t size) : LocalResponseNorm(LocalResponseNormOptions{size}) {}
};

class ChannelShuffle : public ModuleHolder<ChannelShuffleImpl> {
 public:
  using ModuleHolder::ModuleHolder;
  explicit ChannelShuffle(int64_t groups) : ModuleHolder(std::make_shared<ChannelShuffleImpl>(groups)) {}
};

class Softmax2d : public ModuleHolder<Softmax2dImpl> {
 public:
  using ModuleHolder::ModuleHolder;
  Softmax2d() : ModuleHolder(std::make_shared<Softmax2dImpl>()) {}
};

}  // namespace ember::nn
