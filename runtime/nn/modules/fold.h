// nn::Fold and nn::Unfold (torch.nn.Fold, Unfold): holders of the arguments of F::fold (col2im) and
// F::unfold (im2col), runtime/functional_conv.h, checked when they run.
#pragma once

#include "runtime/functional_conv.h"
#include "runtime/nn/holder.h"

namespace ember::nn {

// dilation, padding and stride, torch.nn's defaults (1, 0, 1).
using FoldOptions = UnfoldOptions;

class FoldImpl : public Module {
 public:
  FoldImpl(SpatialDims output_size, SpatialDims kernel_size, FoldOptions options = {});
  // [N, C * kh * kw, L] (or unbatched) -> [N, C, output_size...], overlapping values summed.
  Tensor forward(const Tensor& input, Where where = Where::current());
  const SpatialDims& output_size() const { return output_size_; }
  const SpatialDims& kernel_size() const { return kernel_size_; }
  const FoldOptions& options() const { return options_; }

 protected:
  std::string extra_repr() const override;

 private:
  SpatialDims output_size_, kernel_size_;
  FoldOptions options_;
};

class UnfoldImpl : public Module {
 public:
  explicit UnfoldImpl(SpatialDims kernel_size, UnfoldOptions options = {});
  // [N, C, H, W] (or unbatched) -> [N, C * kh * kw, L], one column per window.
  Tensor forward(const Tensor& input, Where where = Where::current());
  const SpatialDims& kernel_size() const { return kernel_size_; }
  const UnfoldOptions& options() const { return options_; }

 protected:
  std::string extra_repr() const override;

 private:
  SpatialDims kernel_size_;
  UnfoldOptions options_;
};

class Fold : public ModuleHolder<FoldImpl> {
 public:
  using ModuleHolder::ModuleHolder;
  Fold(SpatialDims output_size, SpatialDims kernel_size, FoldOptions options = {})
      : ModuleHolder(std::make_shared<FoldImpl>(output_size, kernel_size, options)) {}
};

class Unfold : public ModuleHolder<UnfoldImpl> {
 public:
  using ModuleHolder::ModuleHolder;
  explicit Unfold(SpatialDims kernel_size, UnfoldOptions options = {})
      : ModuleHolder(std::make_shared<UnfoldImpl>(kernel_size, options)) {}
};

}  // namespace ember::nn
