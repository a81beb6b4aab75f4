// The layers of pooling_more.h: each calls its functional form; extra_repr prints the arguments as
// torch.nn's _MaxUnpoolNd (tuples, from _single/_pair/_triple) and _LPPoolNd (as given) do.
#include "runtime/nn/modules/pooling_more.h"

#include <fmt/format.h>

#include <string>
#include <utility>

#include "runtime/nn/python_repr.h"

namespace ember::nn {

namespace F = functional;

template <int Spatial>
MaxUnpoolImpl<Spatial>::MaxUnpoolImpl(SpatialDims kernel_size, MaxUnpoolOptions options, Where where)
    : Module(fmt::format("MaxUnpool{}d", Spatial)) {
  CallSiteScope site(where);
  const std::string op = name();
  kernel_size_ = kernel_size.expand(Spatial, op.c_str(), "kernel_size");
  stride_ = options.stride.values().empty() ? kernel_size_ : options.stride.expand(Spatial, op.c_str(), "stride");
  padding_ = options.padding.expand(Spatial, op.c_str(), "padding");
}

template <int Spatial>
Tensor MaxUnpoolImpl<Spatial>::forward(const Tensor& input, const Tensor& indices, Where where) {
  return forward(input, indices, std::nullopt, where);
}

template <int Spatial>
Tensor MaxUnpoolImpl<Spatial>::forward(const Tensor& input, const Tensor& indices, std::optional<Dims> output_size,
                                       Where where) {
  const MaxUnpoolOptions options{.stride = stride_, .padding = padding_};
  if constexpr (Spatial == 1)
    return F::max_unpool1d(input, indices, kernel_size_, options, output_size, where);
  else if constexpr (Spatial == 2)
    return F::max_unpool2d(input, indices, kernel_size_, options, output_size, where);
  else
    return F::max_unpool3d(input, indices, kernel_size_, options, output_size, where);
}

template <int Spatial>
std::string MaxUnpoolImpl<Spatial>::extra_repr() const {
  return fmt::format("kernel_size={}, stride={}, padding={}", python_tuple(kernel_size_), python_tuple(stride_),
                     python_tuple(padding_));
}

template <int Spatial>
LPPoolImpl<Spatial>::LPPoolImpl(double norm_type, SpatialDims kernel_size, LPPoolOptions options)
    : Module(fmt::format("LPPool{}d", Spatial)),
      norm_type_(norm_type),
      kernel_size_(std::move(kernel_size)),
      options_(std::move(options)) {}

template <int Spatial>
Tensor LPPoolImpl<Spatial>::forward(const Tensor& input, Where where) {
  if constexpr (Spatial == 1)
    return F::lp_pool1d(input, norm_type_, kernel_size_, options_, where);
  else if constexpr (Spatial == 2)
    return F::lp_pool2d(input, norm_type_, kernel_size_, options_, where);
  else
    return F::lp_pool3d(input, norm_type_, kernel_size_, options_, where);
}

namespace {

// PyTorch prints an argument as the user gave it: an int (3) or a tuple ((3, 2)).
std::string as_given(const SpatialDims& values) {
  return values.values().size() == 1 ? std::to_string(values.values()[0]) : python_tuple(values.values());
}

}  // namespace

template <int Spatial>
std::string LPPoolImpl<Spatial>::extra_repr() const {
  // _LPPoolNd keeps stride as given: None when it was not. norm_type is printed in its shortest
  // form, "2" for 2.0: the usual nn.LPPool2d(2, ...) passes an int, which Python prints so.
  const std::string stride = options_.stride.values().empty() ? "None" : as_given(options_.stride);
  return fmt::format("norm_type={}, kernel_size={}, stride={}, ceil_mode={}", norm_type_, as_given(kernel_size_),
                     stride, python_bool(options_.ceil_mode));
}

template class MaxUnpoolImpl<1>;
template class MaxUnpoolImpl<2>;
template class MaxUnpoolImpl<3>;
template class LPPoolImpl<1>;
template class LPPoolImpl<2>;
template class LPPoolImpl<3>;

}  // namespace ember::nn
