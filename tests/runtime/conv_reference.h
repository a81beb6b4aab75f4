// Float64 references for the convolutions, written as the definitions read: every output element
// a sum over its window (conv), every input element scattered into its window (conv_transpose),
// for 1-3 spatial dims. Shared by test_conv.cpp and test_conv_transpose.cpp.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "numeric_check.h"
#include "runtime/functional_conv.h"

namespace ember::testing {

struct ConvGeometry {
  std::vector<int64_t> stride, padding, dilation;  // one per spatial dim
  std::vector<int64_t> output_padding;             // transposed only; empty means 0s
  int64_t groups = 1;
};

// Calls visit(index) for every index of `sizes`, row-major.
inline void for_each_index(const std::vector<int64_t>& sizes,
                           const std::function<void(const std::vector<int64_t>&)>& visit) {
  int64_t count = 1;
  for (const int64_t size : sizes) count *= size;
  std::vector<int64_t> index(sizes.size());
  for (int64_t flat = 0; flat < count; ++flat) {
    int64_t rest = flat;
    for (int d = static_cast<int>(sizes.size()) - 1; d >= 0; --d) {
      index[d] = rest % sizes[d];
      rest /= sizes[d];
    }
    visit(index);
  }
}

inline int64_t flat_index(const std::vector<int64_t>& index, const std::vector<int64_t>& sizes) {
  int64_t flat = 0;
  for (size_t d = 0; d < sizes.size(); ++d) flat = flat * sizes[d] + index[d];
  return flat;
}

// conv: input [N, C, S...], weight [OC, C / groups, K...], bias [OC] or undefined -> values and shape.
inline std::vector<double> conv_reference(const Tensor& input, const Tensor& weight, const Tensor& bias,
                                          const ConvGeometry& g, std::vector<int64_t>& shape) {
  const std::vector<double> x = values_of(input), w = values_of(weight);
  const std::vector<double> b = bias.defined() ? values_of(bias) : std::vector<double>{};
  const int spatial = input.dim() - 2;
  const int64_t batch = input.size(0), channels = input.size(1), out_channels = weight.size(0);
  const int64_t group_in = channels / g.groups, group_out = out_channels / g.groups;
  std::vector<int64_t> in_sizes(input.sizes().begin(), input.sizes().end());
  std::vector<int64_t> w_sizes(weight.sizes().begin(), weight.sizes().end());
  std::vector<int64_t> kernel(w_sizes.begin() + 2, w_sizes.end()), out;
  for (int d = 0; d < spatial; ++d)
    out.push_back((in_sizes[2 + d] + 2 * g.padding[d] - g.dilation[d] * (kernel[d] - 1) - 1) / g.stride[d] + 1);
  shape = {batch, out_channels};
  shape.insert(shape.end(), out.begin(), out.end());
  std::vector<double> result;
  for_each_index(shape, [&](const std::vector<int64_t>& o) {
    const int64_t n = o[0], oc = o[1], group = oc / group_out;
    double sum = b.empty() ? 0.0 : b[oc];
    for (int64_t ci = 0; ci < group_in; ++ci)
      for_each_index(kernel, [&](const std::vector<int64_t>& k) {
        std::vector<int64_t> at = {n, group * group_in + ci};
        for (int d = 0; d < spatial; ++d) {
          const int64_t position = o[2 + d] * g.stride[d] - g.padding[d] + k[d] * g.dilation[d];
          if (position < 0 || position >= in_sizes[2 + d]) return;  // a zero of the padding
          at.push_back(position);
        }
        std::vector<int64_t> wi = {oc, ci};
        wi.insert(wi.end(), k.begin(), k.end());
        sum += x[flat_index(at, in_sizes)] * w[flat_index(wi, w_sizes)];
      });
    result.push_back(sum);
  });
  return result;
}

// conv_transpose: input [N, C, S...], weight [C, OC / groups, K...] -> values and shape.
inline std::vector<double> conv_transpose_reference(const Tensor& input, const Tensor& weight, const Tensor& bias,
                                                    const ConvGeometry& g, std::vector<int64_t>& shape) {
  const std::vector<double> x = values_of(input), w = values_of(weight);
  const int spatial = input.dim() - 2;
  const int64_t batch = input.size(0), channels = input.size(1), group_out = weight.size(1);
  const int64_t group_in = channels / g.groups, out_channels = group_out * g.groups;
  std::vector<int64_t> in_sizes(input.sizes().begin(), input.sizes().end());
  std::vector<int64_t> w_sizes(weight.sizes().begin(), weight.sizes().end());
  std::vector<int64_t> kernel(w_sizes.begin() + 2, w_sizes.end()), out;
  for (int d = 0; d < spatial; ++d)
    out.push_back((in_sizes[2 + d] - 1) * g.stride[d] - 2 * g.padding[d] + g.dilation[d] * (kernel[d] - 1) +
                  (g.output_padding.empty() ? 0 : g.output_padding[d]) + 1);
  shape = {batch, out_channels};
  shape.insert(shape.end(), out.begin(), out.end());
  int64_t count = 1;
  for (const int64_t size : shape) count *= size;
  std::vector<double> result(count, 0.0);
  if (bias.defined()) {
    const std::vector<double> b = values_of(bias);
    for_each_index(shape, [&](const std::vector<int64_t>& o) { result[flat_index(o, shape)] = b[o[1]]; });
  }
  for_each_index(in_sizes, [&](const std::vector<int64_t>& i) {
    const int64_t n = i[0], c = i[1], group = c / group_in;
    for (int64_t oc = 0; oc < group_out; ++oc)
      for_each_index(kernel, [&](const std::vector<int64_t>& k) {
        std::vector<int64_t> at = {n, group * group_out + oc};
        for (int d = 0; d < spatial; ++d) {
          const int64_t position = i[2 + d] * g.stride[d] - g.padding[d] + k[d] * g.dilation[d];
          if (position < 0 || position >= out[d]) return;  // cut with the padding
          at.push_back(position);
        }
        std::vector<int64_t> wi = {c, oc};
        wi.insert(wi.end(), k.begin(), k.end());
        result[flat_index(at, shape)] += x[flat_index(i, in_sizes)] * w[flat_index(wi, w_sizes)];
      });
  });
  return result;
}

}  // namespace ember::testing
