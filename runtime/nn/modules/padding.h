// nn::ZeroPad1d/2d/3d, ConstantPad1d/2d/3d, ReflectionPad1d/2d/3d, ReplicationPad1d/2d/3d and
// CircularPad1d/2d/3d: torch.nn's padding layers over F::pad. `padding` is an int (the same on
// every side) or (left, right[, top, bottom[, front, back]]) with 2, 4 or 6 entries for 1, 2 or 3
// padded dims; they print as PyTorch's: "ZeroPad2d((1, 1, 2, 0))", "ConstantPad1d(padding=(2, 2), value=3.5)".
#pragma once

#include <concepts>
#include <initializer_list>
#include <vector>

#include "runtime/functional_shape_ops.h"
#include "runtime/nn/holder.h"

namespace ember::nn {

// Zero is Constant with value 0 under its own name and repr.
enum class PadKind { Zero, Constant, Reflection, Replication, Circular };

// The layer behind all fifteen: F::pad with the kind's mode, padding and value.
class PadImpl : public Module {
 public:
  Tensor forward(const Tensor& input, Where where = Where::current());
  // (left, right, top, bottom, front, back), as many as the padded dims need.
  const std::vector<int64_t>& padding() const { return padding_; }
  double value() const { return value_; }

 protected:
  PadImpl(PadKind kind, int padded_dims, std::vector<int64_t> padding, double value, Where where);
  std::string extra_repr() const override;

 private:
  PadKind kind_;
  int padded_dims_;
  std::vector<int64_t> padding_;
  double value_;
};

template <PadKind kind, int padded_dims>
class PadNdImpl : public PadImpl {
 public:
  explicit PadNdImpl(std::vector<int64_t> padding, Where where = Where::current()) requires(kind != PadKind::Constant)
      : PadImpl(kind, padded_dims, std::move(padding), 0.0, where) {}
  explicit PadNdImpl(int64_t padding, Where where = Where::current()) requires(kind != PadKind::Constant)
      : PadImpl(kind, padded_dims, std::vector<int64_t>(2 * padded_dims, padding), 0.0, where) {}
  PadNdImpl(std::vector<int64_t> padding, double value,
            Where where = Where::current()) requires(kind == PadKind::Constant)
      : PadImpl(kind, padded_dims, std::move(padding), value, where) {}
  PadNdImpl(int64_t padding, double value, Where where = Where::current()) requires(kind == PadKind::Constant)
      : PadImpl(kind, padded_dims, std::vector<int64_t>(2 * padded_dims, padding), value, where) {}
};

template <PadKind kind, int padded_dims>
class PadHolder : public ModuleHolder<PadNdImpl<kind, padded_dims>> {
  using Impl = PadNdImpl<kind, padded_dims>;

 public:
  using ModuleHolder<Impl>::ModuleHolder;
  // A template, so that ZeroPad2d(0) is a padding of 0 rather than an ambiguous null holder.
  template <std::integral Count>
  explicit PadHolder(Count padding, Where where = Where::current()) requires(kind != PadKind::Constant)
      : ModuleHolder<Impl>(std::make_shared<Impl>(static_cast<int64_t>(padding), where)) {}
  explicit PadHolder(std::vector<int64_t> padding, Where where = Where::current()) requires(kind != PadKind::Constant)
      : ModuleHolder<Impl>(std::make_shared<Impl>(std::move(padding), where)) {}
  // A braced tuple, ZeroPad2d({1, 1, 2, 0}): an exact match, so it is not read as a shared_ptr's arguments.
  explicit PadHolder(std::initializer_list<int64_t> padding,
                     Where where = Where::current()) requires(kind != PadKind::Constant)
      : ModuleHolder<Impl>(std::make_shared<Impl>(std::vector<int64_t>(padding), where)) {}
  template <std::integral Count>
  PadHolder(Count padding, double value, Where where = Where::current()) requires(kind == PadKind::Constant)
      : ModuleHolder<Impl>(std::make_shared<Impl>(static_cast<int64_t>(padding), value, where)) {}
  PadHolder(std::vector<int64_t> padding, double value,
            Where where = Where::current()) requires(kind == PadKind::Constant)
      : ModuleHolder<Impl>(std::make_shared<Impl>(std::move(padding), value, where)) {}
  PadHolder(std::initializer_list<int64_t> padding, double value,
            Where where = Where::current()) requires(kind == PadKind::Constant)
      : ModuleHolder<Impl>(std::make_shared<Impl>(std::vector<int64_t>(padding), value, where)) {}
};

using ZeroPad1dImpl = PadNdImpl<PadKind::Zero, 1>;
using ZeroPad2dImpl = PadNdImpl<PadKind::Zero, 2>;
using ZeroPad3dImpl = PadNdImpl<PadKind::Zero, 3>;
using ConstantPad1dImpl = PadNdImpl<PadKind::Constant, 1>;
using ConstantPad2dImpl = PadNdImpl<PadKind::Constant, 2>;
using ConstantPad3dImpl = PadNdImpl<PadKind::Constant, 3>;
using ReflectionPad1dImpl = PadNdImpl<PadKind::Reflection, 1>;
using ReflectionPad2dImpl = PadNdImpl<PadKind::Reflection, 2>;
using ReflectionPad3dImpl = PadNdImpl<PadKind::Reflection, 3>;
using ReplicationPad1dImpl = PadNdImpl<PadKind::Replication, 1>;
using ReplicationPad2dImpl = PadNdImpl<PadKind::Replication, 2>;
using ReplicationPad3dImpl = PadNdImpl<PadKind::Replication, 3>;
using CircularPad1dImpl = PadNdImpl<PadKind::Circular, 1>;
using CircularPad2dImpl = PadNdImpl<PadKind::Circular, 2>;
using CircularPad3dImpl = PadNdImpl<PadKind::Circular, 3>;

using ZeroPad1d = PadHolder<PadKind::Zero, 1>;
using ZeroPad2d = PadHolder<PadKind::Zero, 2>;
using ZeroPad3d = PadHolder<PadKind::Zero, 3>;
using ConstantPad1d = PadHolder<PadKind::Constant, 1>;
using ConstantPad2d = PadHolder<PadKind::Constant, 2>;
using ConstantPad3d = PadHolder<PadKind::Constant, 3>;
using ReflectionPad1d = PadHolder<PadKind::Reflection, 1>;
using ReflectionPad2d = PadHolder<PadKind::Reflection, 2>;
using ReflectionPad3d = PadHolder<PadKind::Reflection, 3>;
using ReplicationPad1d = PadHolder<PadKind::Replication, 1>;
using ReplicationPad2d = PadHolder<PadKind::Replication, 2>;
using ReplicationPad3d = PadHolder<PadKind::Replication, 3>;
using CircularPad1d = PadHolder<PadKind::Circular, 1>;
using CircularPad2d = PadHolder<PadKind::Circular, 2>;
using CircularPad3d = PadHolder<PadKind::Circular, 3>;

}  // namespace ember::nn
