// Float64 references for the pooling tests (test_pooling*.cpp), written as direct loops over each
// window from PyTorch's definitions: its output sizes (pooling_output_shape), its max kernels' scan
// (start at the window's first element inside the input with -inf, take an element that is
// greater or NaN), its AvgPool divisors, and its adaptive windows.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <vector>

#include "finite_difference.h"

namespace ember::testing {

struct PoolGeometry {
  Dims kernel;
  Dims stride;  // empty: the kernel
  Dims padding;
  Dims dilation;
  bool ceil_mode = false;
};

inline int64_t reference_pool_size(int64_t size, int64_t kernel, int64_t stride, int64_t padding, int64_t dilation,
                                   bool ceil_mode) {
  const double steps = static_cast<double>(size + 2 * padding - dilation * (kernel - 1) - 1) / stride;
  int64_t count = static_cast<int64_t>(ceil_mode ? std::ceil(steps) : std::floor(steps)) + 1;
  // With ceil_mode the last window must start inside the input or its left padding.
  if (ceil_mode && (count - 1) * stride >= size + padding) --count;
  return count;
}

// A pooling's shape, seen as planes of up to three spatial dims (missing leading dims have size 1
// and a window of 1), so that one loop serves 1-D, 2-D and 3-D.
struct PoolLayout {
  int64_t planes = 1;
  std::array<int64_t, 3> size{1, 1, 1}, output{1, 1, 1}, kernel{1, 1, 1}, stride{1, 1, 1}, padding{0, 0, 0},
      dilation{1, 1, 1};
  Dims output_shape;  // the input's leading dims, then the spatial outputs

  int64_t plane_size() const { return size[0] * size[1] * size[2]; }
  int64_t plane_outputs() const { return output[0] * output[1] * output[2]; }
};

inline PoolLayout pool_layout(const Dims& input_sizes, int spatial, const PoolGeometry& geometry) {
  PoolLayout layout;
  const int lead = input_sizes.size() - spatial;
  for (int d = 0; d < lead; ++d) {
    layout.planes *= input_sizes[d];
    layout.output_shape.push_back(input_sizes[d]);
  }
  const auto pick = [](const Dims& values, int d, int64_t fallback) {
    return values.empty() ? fallback : values.size() == 1 ? values[0] : values[d];
  };
  for (int d = 0; d < spatial; ++d) {
    const int slot = 3 - spatial + d;
    layout.size[slot] = input_sizes[lead + d];
    layout.kernel[slot] = pick(geometry.kernel, d, 1);
    layout.stride[slot] = pick(geometry.stride, d, layout.kernel[slot]);
    layout.padding[slot] = pick(geometry.padding, d, 0);
    layout.dilation[slot] = pick(geometry.dilation, d, 1);
    layout.output[slot] = reference_pool_size(layout.size[slot], layout.kernel[slot], layout.stride[slot],
                                              layout.padding[slot], layout.dilation[slot], geometry.ceil_mode);
    layout.output_shape.push_back(layout.output[slot]);
  }
  return layout;
}

struct ReferencePool {
  std::vector<double> values;
  std::vector<int64_t> indices;  // max pools: the flat position within the input plane
};

inline ReferencePool reference_max_pool(const Tensor& input, int spatial, const PoolGeometry& geometry) {
  const PoolLayout layout = pool_layout(input.sizes(), spatial, geometry);
  const std::vector<double> x = values_of(input);
  ReferencePool result;
  for (int64_t plane = 0; plane < layout.planes; ++plane)
    for (int64_t o0 = 0; o0 < layout.output[0]; ++o0)
      for (int64_t o1 = 0; o1 < layout.output[1]; ++o1)
        for (int64_t o2 = 0; o2 < layout.output[2]; ++o2) {
          double best = -std::numeric_limits<double>::infinity();
          int64_t best_index = -1;
          const std::array<int64_t, 3> o{o0, o1, o2};
          for (int64_t k0 = 0; k0 < layout.kernel[0]; ++k0)
            for (int64_t k1 = 0; k1 < layout.kernel[1]; ++k1)
              for (int64_t k2 = 0; k2 < layout.kernel[2]; ++k2) {
                const std::array<int64_t, 3> k{k0, k1, k2};
                std::array<int64_t, 3> at{};
                bool inside = true;
                for (int d = 0; d < 3; ++d) {
                  at[d] = o[d] * layout.stride[d] - layout.padding[d] + k[d] * layout.dilation[d];
                  inside = inside && at[d] >= 0 && at[d] < layout.size[d];
                }
                if (!inside) continue;
                const int64_t index = (at[0] * layout.size[1] + at[1]) * layout.size[2] + at[2];
                const double value = x[static_cast<size_t>(plane * layout.plane_size() + index)];
                if (best_index < 0) best_index = index;  // the scan starts here, with -inf
                if (value > best || std::isnan(value)) {
                  best = value;
                  best_index = index;
                }
              }
          result.values.push_back(best);
          result.indices.push_back(best_index);
        }
  return result;
}

// PyTorch's AvgPool: the window clipped to the padded input (with ceil_mode it may run past it)
// gives the divisor with count_include_pad, clipped to the input without; the sum is over the input.
inline std::vector<double> reference_avg_pool(const Tensor& input, int spatial, const PoolGeometry& geometry,
                                              bool count_include_pad, std::optional<int64_t> divisor_override) {
  const PoolLayout layout = pool_layout(input.sizes(), spatial, geometry);
  const std::vector<double> x = values_of(input);
  std::vector<double> result;
  for (int64_t plane = 0; plane < layout.planes; ++plane)
    for (int64_t o0 = 0; o0 < layout.output[0]; ++o0)
      for (int64_t o1 = 0; o1 < layout.output[1]; ++o1)
        for (int64_t o2 = 0; o2 < layout.output[2]; ++o2) {
          const std::array<int64_t, 3> o{o0, o1, o2};
          std::array<int64_t, 3> first{}, last{};  // inside the input, last exclusive
          int64_t padded_count = 1, count = 1;
          for (int d = 0; d < 3; ++d) {
            const int64_t start = o[d] * layout.stride[d] - layout.padding[d];
            const int64_t end = std::min(start + layout.kernel[d], layout.size[d] + layout.padding[d]);
            padded_count *= end - start;
            first[d] = std::max<int64_t>(start, 0);
            last[d] = std::min(end, layout.size[d]);
            count *= last[d] - first[d];
          }
          double total = 0.0;
          for (int64_t i0 = first[0]; i0 < last[0]; ++i0)
            for (int64_t i1 = first[1]; i1 < last[1]; ++i1)
              for (int64_t i2 = first[2]; i2 < last[2]; ++i2) {
                const int64_t index = (i0 * layout.size[1] + i1) * layout.size[2] + i2;
                total += x[static_cast<size_t>(plane * layout.plane_size() + index)];
              }
          const double divisor = static_cast<double>(divisor_override ? *divisor_override
                                                     : count_include_pad ? padded_count
                                                                         : count);
          result.push_back(total / divisor);
        }
  return result;
}

// Adaptive pools: along a dim of `size`, output i covers [floor(i size / out), ceil((i + 1) size / out)).
inline ReferencePool reference_adaptive_pool(const Tensor& input, int spatial, const Dims& output_size, bool max) {
  PoolGeometry unit;  // only for the layout's plane count and sizes
  PoolLayout layout = pool_layout(input.sizes(), spatial, unit);
  for (int d = 0; d < spatial; ++d) layout.output[3 - spatial + d] = output_size[output_size.size() == 1 ? 0 : d];
  const std::vector<double> x = values_of(input);
  const auto bounds = [&](int d, int64_t i) {
    const double size = static_cast<double>(layout.size[d]), out = static_cast<double>(layout.output[d]);
    return std::array<int64_t, 2>{static_cast<int64_t>(std::floor(i * size / out)),
                                  static_cast<int64_t>(std::ceil((i + 1) * size / out))};
  };
  ReferencePool result;
  for (int64_t plane = 0; plane < layout.planes; ++plane)
    for (int64_t o0 = 0; o0 < layout.output[0]; ++o0)
      for (int64_t o1 = 0; o1 < layout.output[1]; ++o1)
        for (int64_t o2 = 0; o2 < layout.output[2]; ++o2) {
          const auto b0 = bounds(0, o0), b1 = bounds(1, o1), b2 = bounds(2, o2);
          double total = 0.0, best = -std::numeric_limits<double>::infinity();
          int64_t best_index = -1;
          for (int64_t i0 = b0[0]; i0 < b0[1]; ++i0)
            for (int64_t i1 = b1[0]; i1 < b1[1]; ++i1)
              for (int64_t i2 = b2[0]; i2 < b2[1]; ++i2) {
                const int64_t index = (i0 * layout.size[1] + i1) * layout.size[2] + i2;
                const double value = x[static_cast<size_t>(plane * layout.plane_size() + index)];
                total += value;
                if (best_index < 0) best_index = index;
                if (value > best || std::isnan(value)) {
                  best = value;
                  best_index = index;
                }
              }
          const double count = static_cast<double>((b0[1] - b0[0]) * (b1[1] - b1[0]) * (b2[1] - b2[0]));
          result.values.push_back(max ? best : total / count);
          result.indices.push_back(best_index);
        }
  return result;
}

// The gradient a max pool sends back for an upstream gradient: each output's to its chosen
// element alone (summed where windows overlap), as PyTorch's max_pool backward scatters it.
inline std::vector<double> reference_max_pool_gradient(const Dims& input_sizes, int spatial,
                                                       const std::vector<int64_t>& indices,
                                                       const std::vector<double>& upstream) {
  int64_t plane_size = 1;
  for (int d = input_sizes.size() - spatial; d < input_sizes.size(); ++d) plane_size *= input_sizes[d];
  const int64_t planes = input_sizes.product() / plane_size;
  const int64_t outputs = static_cast<int64_t>(indices.size()) / planes;
  std::vector<double> gradient(static_cast<size_t>(input_sizes.product()), 0.0);
  for (size_t i = 0; i < indices.size(); ++i)
    gradient[static_cast<size_t>(static_cast<int64_t>(i) / outputs * plane_size + indices[i])] += upstream[i];
  return gradient;
}

// Element by element within `tolerance` relative to max(1, |expected|); NaN where NaN is expected.
inline void check_values_close(const Tensor& actual, const std::vector<double>& expected, double tolerance) {
  const std::vector<double> values = values_of(actual);
  REQUIRE(values.size() == expected.size());
  for (size_t i = 0; i < values.size(); ++i) {
    INFO("element " << i << ": got " << values[i] << ", expected " << expected[i]);
    const bool both_nan = std::isnan(values[i]) && std::isnan(expected[i]);
    const bool close = values[i] == expected[i] ||  // infinities too, whose difference is NaN
                       std::abs(values[i] - expected[i]) <= tolerance * std::max(1.0, std::abs(expected[i]));
    CHECK((both_nan || close));
  }
}

// Equal element by element (infinities included), NaN where NaN is expected.
inline void check_exactly_or_nan(const Tensor& actual, const std::vector<double>& expected) {
  const std::vector<double> values = values_of(actual);
  REQUIRE(values.size() == expected.size());
  for (size_t i = 0; i < values.size(); ++i) {
    INFO("element " << i << ": got " << values[i] << ", expected " << expected[i]);
    CHECK((values[i] == expected[i] || (std::isnan(values[i]) && std::isnan(expected[i]))));
  }
}

}  // namespace ember::testing
