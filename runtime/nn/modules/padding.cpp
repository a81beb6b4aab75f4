// nn's padding layers: the checks of their padding tuples, F::pad with each kind's mode, and
// PyTorch's reprs (torch/nn/modules/padding.py).
#include "runtime/nn/modules/padding.h"

#include <string>

#include "runtime/nn/python_repr.h"

namespace ember::nn {

namespace {

std::string layer_name(PadKind kind, int padded_dims) {
  const char* prefix = "";
  switch (kind) {
    case PadKind::Zero:
      prefix = "ZeroPad";
      break;
    case PadKind::Constant:
      prefix = "ConstantPad";
      break;
    case PadKind::Reflection:
      prefix = "ReflectionPad";
      break;
    case PadKind::Replication:
      prefix = "ReplicationPad";
      break;
    case PadKind::Circular:
      prefix = "CircularPad";
      break;
  }
  return fmt::format("{}{}d", prefix, padded_dims);
}

PadMode mode_of(PadKind kind) {
  switch (kind) {
    case PadKind::Zero:
    case PadKind::Constant:
      return PadMode::Constant;
    case PadKind::Reflection:
      return PadMode::Reflect;
    case PadKind::Replication:
      return PadMode::Replicate;
    case PadKind::Circular:
      return PadMode::Circular;
  }
  internal_assert(false, "unknown PadKind");
  return PadMode::Constant;
}

}  // namespace

PadImpl::PadImpl(PadKind kind, int padded_dims, std::vector<int64_t> padding, double value, Where where)
    : Module(layer_name(kind, padded_dims)),
      kind_(kind),
      padded_dims_(padded_dims),
      padding_(std::move(padding)),
      value_(value) {
  CallSiteScope site(where);
  // PyTorch takes any tuple here and lets F.pad fail later; a wrong length is refused up front.
  check(padding_.size() == static_cast<size_t>(2 * padded_dims),
        "{}: padding must be an int or a tuple of {} ints (before and after each of the last {} dims), got {}", name(),
        2 * padded_dims, padded_dims, python_tuple(Dims(padding_)));
}

Tensor PadImpl::forward(const Tensor& input, Where where) {
  CallSiteScope site(where);
  check(input.defined(), "{}: the input is an undefined tensor", name());
  // PyTorch's _CircularPadNd._check_input_dim; the other layers leave the ranks to F.pad.
  if (kind_ == PadKind::Circular)
    check(input.dim() == padded_dims_ + 1 || input.dim() == padded_dims_ + 2,
          "{}: expected {}D or {}D input (got {}D input of shape {})", name(), padded_dims_ + 1, padded_dims_ + 2,
          input.dim(), input.sizes());
  return pad(input, padding_, mode_of(kind_),
             kind_ == PadKind::Constant ? std::optional<double>(value_) : std::nullopt);
}

std::string PadImpl::extra_repr() const {
  const std::string padding = python_tuple(Dims(padding_));
  if (kind_ == PadKind::Constant) return fmt::format("padding={}, value={}", padding, python_float(value_));
  return padding;
}

}  // namespace ember::nn
