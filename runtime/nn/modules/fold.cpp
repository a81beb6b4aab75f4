// nn::Fold and nn::Unfold: forward calls F::fold / F::unfold; extra_repr prints the arguments as
// given, as torch.nn.Fold and Unfold keep them (an int or a tuple).
#include "runtime/nn/modules/fold.h"

#include <fmt/format.h>

#include <string>
#include <utility>

#include "runtime/nn/python_repr.h"

namespace ember::nn {

namespace {

std::string as_given(const SpatialDims& values) {
  return values.values().size() == 1 ? std::to_string(values.values()[0]) : python_tuple(values.values());
}

std::string window_arguments(const UnfoldOptions& options) {
  return fmt::format("dilation={}, padding={}, stride={}", as_given(options.dilation), as_given(options.padding),
                     as_given(options.stride));
}

}  // namespace

FoldImpl::FoldImpl(SpatialDims output_size, SpatialDims kernel_size, FoldOptions options)
    : Module("Fold"),
      output_size_(std::move(output_size)),
      kernel_size_(std::move(kernel_size)),
      options_(std::move(options)) {}

Tensor FoldImpl::forward(const Tensor& input, Where where) {
  return fold(input, output_size_, kernel_size_, options_, where);
}

std::string FoldImpl::extra_repr() const {
  return fmt::format("output_size={}, kernel_size={}, {}", as_given(output_size_), as_given(kernel_size_),
                     window_arguments(options_));
}

UnfoldImpl::UnfoldImpl(SpatialDims kernel_size, UnfoldOptions options)
    : Module("Unfold"), kernel_size_(std::move(kernel_size)), options_(std::move(options)) {}

Tensor UnfoldImpl::forward(const Tensor& input, Where where) { return unfold(input, kernel_size_, options_, where); }

std::string UnfoldImpl::extra_repr() const {
  return fmt::format("kernel_size={}, {}", as_given(kernel_size_), window_arguments(options_));
}

}  // namespace ember::nn
