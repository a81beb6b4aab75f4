// nn::Flatten and nn::Unflatten: reshaping layers for a Sequential (torch.nn.Flatten, Unflatten).
// Both return views of their input where the strides allow, as PyTorch's do: Flatten is
// reshape (a copy only when the dims it merges are not evenly spaced), Unflatten always a view.
#pragma once

#include "runtime/nn/holder.h"

namespace ember::nn {

// PyTorch's defaults: keep dim 0 (the batch), merge the rest.
struct FlattenOptions {
  int64_t start_dim = 1;
  int64_t end_dim = -1;
};

class FlattenImpl : public Module {
 public:
  explicit FlattenImpl(FlattenOptions options = {}) : Module("Flatten"), options_(options) {}
  // input [..., d_start, ..., d_end, ...] -> [..., d_start * ... * d_end, ...]. Dims out of range
  // for the input, or start_dim after end_dim, are errors naming the module and the input's shape.
  Tensor forward(const Tensor& input, Where where = Where::current());
  const FlattenOptions& options() const { return options_; }

 protected:
  std::string extra_repr() const override;

 private:
  FlattenOptions options_;
};

class Flatten : public ModuleHolder<FlattenImpl> {
 public:
  using ModuleHolder::ModuleHolder;
  explicit Flatten(FlattenOptions options = {}) : ModuleHolder(std::make_shared<FlattenImpl>(options)) {}
};

class UnflattenImpl : public Module {
 public:
  // Splits dim `dim` into `unflattened_size`, which may hold one -1 (inferred from the rest).
  // Sizes that cannot describe any dim (empty, below -1, two -1) are refused here.
  UnflattenImpl(int64_t dim, Dims unflattened_size, Where where = Where::current());
  // input [..., d, ...] -> [..., *unflattened_size, ...], a view. The sizes must multiply up to d.
  Tensor forward(const Tensor& input, Where where = Where::current());
  int64_t dim() const { return dim_; }
  const Dims& unflattened_size() const { return unflattened_size_; }

 protected:
  std::string extra_repr() const override;

 private:
  int64_t dim_;
  Dims unflattened_size_;
};

class Unflatten : public ModuleHolder<UnflattenImpl> {
 public:
  using ModuleHolder::ModuleHolder;
  Unflatten(int64_t dim, Dims unflattened_size, Where where = Where::current())
      : ModuleHolder(std::make_shared<UnflattenImpl>(dim, unflattened_size, where)) {}
};

}  // namespace ember::nn
