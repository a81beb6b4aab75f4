// nn::Dropout: zeroes each element with probability p and scales the rest by 1/(1-p) while
// training; the identity in eval mode.
#pragma once

#include "runtime/nn/holder.h"

namespace ember::nn {

class DropoutImpl : public Module {
 public:
  explicit DropoutImpl(double p = 0.5, Where where = Where::current());
  Tensor forward(const Tensor& input, Where where = Where::current());
  double p() const { return p_; }

 protected:
  std::string extra_repr() const override;

 private:
  double p_;
};

class Dropout : public ModuleHolder<DropoutImpl> {
 public:
  using ModuleHolder::ModuleHolder;
  explicit Dropout(double p = 0.5, Where where = Where::current())
      : ModuleHolder(std::make_shared<DropoutImpl>(p, where)) {}
};

}  // namespace ember::nn
