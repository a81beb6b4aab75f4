// The pooling layers (pooling.h): each calls its functional pool; extra_repr prints the arguments
// as torch.nn's modules do.
#include "runtime/nn/modules/pooling.h"

#include <fmt/format.h>

#include <string>
#include <utility>

#include "runtime/nn/python_repr.h"

namespace ember::nn {

namespace {

// PyTorch prints an argument as the user gave it: an int (3) or a tuple ((3, 2)).
std::string as_given(const SpatialDims& values) {
  return values.values().size() == 1 ? std::to_string(values.values()[0]) : python_tuple(values.values());
}

// AvgPool1d stores its arguments through _single: always a tuple, (3,).
std::string as_single(const SpatialDims& values) { return python_tuple(Dims{values.values()[0]}); }

}  // namespace

template <int Spatial>
MaxPoolImpl<Spatial>::MaxPoolImpl(SpatialDims kernel_size, MaxPoolOptions options)
    : Module(fmt::format("MaxPool{}d", Spatial)), kernel_size_(std::move(kernel_size)), options_(std::move(options)) {}

template <int Spatial>
Tensor MaxPoolImpl<Spatial>::forward(const Tensor& input, Where where) {
  if constexpr (Spatial == 1) return max_pool1d(input, kernel_size_, options_, where);
  else if constexpr (Spatial == 2) return max_pool2d(input, kernel_size_, options_, where);
  else return max_pool3d(input, kernel_size_, options_, where);
}

template <int Spatial>
std::tuple<Tensor, Tensor> MaxPoolImpl<Spatial>::forward_with_indices(const Tensor& input, Where where) {
  if constexpr (Spatial == 1) return max_pool1d_with_indices(input, kernel_size_, options_, where);
  else if constexpr (Spatial == 2) return max_pool2d_with_indices(input, kernel_size_, options_, where);
  else return max_pool3d_with_indices(input, kernel_size_, options_, where);
}

template <int Spatial>
std::string MaxPoolImpl<Spatial>::extra_repr() const {
  // stride: PyTorch's None prints as the kernel size it stands for.
  const SpatialDims& stride = options_.stride.values().empty() ? kernel_size_ : options_.stride;
  return fmt::format("kernel_size={}, stride={}, padding={}, dilation={}, ceil_mode={}", as_given(kernel_size_),
                     as_given(stride), as_given(options_.padding), as_given(options_.dilation),
                     python_bool(options_.ceil_mode));
}

template <int Spatial>
AvgPoolImpl<Spatial>::AvgPoolImpl(SpatialDims kernel_size, AvgPoolOptions options)
    : Module(fmt::format("AvgPool{}d", Spatial)), kernel_size_(std::move(kernel_size)), options_(std::move(options)) {}

template <int Spatial>
Tensor AvgPoolImpl<Spatial>::forward(const Tensor& input, Where where) {
  if constexpr (Spatial == 1) return avg_pool1d(input, kernel_size_, options_, where);
  else if constexpr (Spatial == 2) return avg_pool2d(input, kernel_size_, options_, where);
  else return avg_pool3d(input, kernel_size_, options_, where);
}

template <int Spatial>
std::string AvgPoolImpl<Spatial>::extra_repr() const {
  const SpatialDims& stride = options_.stride.values().empty() ? kernel_size_ : options_.stride;
  const auto shown = [](const SpatialDims& values) { return Spatial == 1 ? as_single(values) : as_given(values); };
  return fmt::format("kernel_size={}, stride={}, padding={}", shown(kernel_size_), shown(stride),
                     shown(options_.padding));
}

template <int Spatial>
AdaptiveAvgPoolImpl<Spatial>::AdaptiveAvgPoolImpl(SpatialDims output_size)
    : Module(fmt::format("AdaptiveAvgPool{}d", Spatial)), output_size_(std::move(output_size)) {}

template <int Spatial>
Tensor AdaptiveAvgPoolImpl<Spatial>::forward(const Tensor& input, Where where) {
  if constexpr (Spatial == 1) return adaptive_avg_pool1d(input, output_size_, where);
  else if constexpr (Spatial == 2) return adaptive_avg_pool2d(input, output_size_, where);
  else return adaptive_avg_pool3d(input, output_size_, where);
}

template <int Spatial>
std::string AdaptiveAvgPoolImpl<Spatial>::extra_repr() const {
  return fmt::format("output_size={}", as_given(output_size_));
}

template <int Spatial>
AdaptiveMaxPoolImpl<Spatial>::AdaptiveMaxPoolImpl(SpatialDims output_size)
    : Module(fmt::format("AdaptiveMaxPool{}d", Spatial)), output_size_(std::move(output_size)) {}

template <int Spatial>
Tensor AdaptiveMaxPoolImpl<Spatial>::forward(const Tensor& input, Where where) {
  if constexpr (Spatial == 1) return adaptive_max_pool1d(input, output_size_, where);
  else if constexpr (Spatial == 2) return adaptive_max_pool2d(input, output_size_, where);
  else return adaptive_max_pool3d(input, output_size_, where);
}

template <int Spatial>
std::tuple<Tensor, Tensor> AdaptiveMaxPoolImpl<Spatial>::forward_with_indices(const Tensor& input, Where where) {
  if constexpr (Spatial == 1) return adaptive_max_pool1d_with_indices(input, output_size_, where);
  else if constexpr (Spatial == 2) return adaptive_max_pool2d_with_indices(input, output_size_, where);
  else return adaptive_max_pool3d_with_indices(input, output_size_, where);
}

template <int Spatial>
std::string AdaptiveMaxPoolImpl<Spatial>::extra_repr() const {
  return fmt::format("output_size={}", as_given(output_size_));
}

template class MaxPoolImpl<1>;
template class MaxPoolImpl<2>;
template class MaxPoolImpl<3>;
template class AvgPoolImpl<1>;
template class AvgPoolImpl<2>;
template class AvgPoolImpl<3>;
template class AdaptiveAvgPoolImpl<1>;
template class AdaptiveAvgPoolImpl<2>;
template class AdaptiveAvgPoolImpl<3>;
template class AdaptiveMaxPoolImpl<1>;
template class AdaptiveMaxPoolImpl<2>;
template class AdaptiveMaxPoolImpl<3>;

}  // namespace ember::nn
