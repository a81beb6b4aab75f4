// nn::Dropout1d, Dropout2d, Dropout3d (whole channels zeroed with probability p, the rest scaled by
// 1 / (1 - p)), nn::AlphaDropout and nn::FeatureAlphaDropout (SELU's dropout, per element or per
// channel): torch.nn's, the identity in eval mode. The forms are F::dropout1d/2d/3d,
// F::alpha_dropout and F::feature_alpha_dropout (functional_layers_more.h).
#pragma once

#include "runtime/nn/holder.h"

namespace ember::nn {

// The layer behind the five, which differ only in the function their forward calls.
class ChannelDropoutImpl : public Module {
 public:
  using Function = Tensor (*)(const Tensor&, double, bool, Where);
  Tensor forward(const Tensor& input, Where where = Where::current());
  double p() const { return p_; }

 protected:
  ChannelDropoutImpl(const char* name, Function function, double p, Where where);
  std::string extra_repr() const override;

 private:
  Function function_;
  double p_;
};

class Dropout1dImpl : public ChannelDropoutImpl {
 public:
  explicit Dropout1dImpl(double p = 0.5, Where where = Where::current());
};
class Dropout2dImpl : public ChannelDropoutImpl {
 public:
  explicit Dropout2dImpl(double p = 0.5, Where where = Where::current());
};
class Dropout3dImpl : public ChannelDropoutImpl {
 public:
  explicit Dropout3dImpl(double p = 0.5, Where where = Where::current());
};
class AlphaDropoutImpl : public ChannelDropoutImpl {
 public:
  explicit AlphaDropoutImpl(double p = 0.5, Where where = Where::current());
};
class FeatureAlphaDropoutImpl : public ChannelDropoutImpl {
 public:
  explicit FeatureAlphaDropoutImpl(double p = 0.5, Where where = Where::current());
};

template <typename Impl>
class ChannelDropoutHolder : public ModuleHolder<Impl> {
 public:
  using ModuleHolder<Impl>::ModuleHolder;
  explicit ChannelDropoutHolder(double p = 0.5, Where where = Where::current())
      : ModuleHolder<Impl>(std::make_shared<Impl>(p, where)) {}
};
using Dropout1d = ChannelDropoutHolder<Dropout1dImpl>;
using Dropout2d = ChannelDropoutHolder<Dropout2dImpl>;
using Dropout3d = ChannelDropoutHolder<Dropout3dImpl>;
using AlphaDropout = ChannelDropoutHolder<AlphaDropoutImpl>;
using FeatureAlphaDropout = ChannelDropoutHolder<FeatureAlphaDropoutImpl>;

}  // namespace ember::nn
