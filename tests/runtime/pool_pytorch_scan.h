// A float64 transcription of PyTorch's CPU pooling kernels for the parity tests
// (test_pool_pytorch_parity.cpp, test_pool_pytorch_random.cpp), written from PyTorch's source and
// independent of ember's code and of pool_reference.h: Pool.h's output size, the max kernel's scan
// (each dim's start moved past the left padding by whole dilations, -inf, greater-or-NaN wins),
// and the avg kernel's divisors.
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <vector>

#include "runtime/ember.h"

namespace ember::testing::pool_scan {

inline constexpr double kInf = std::numeric_limits<double>::infinity();

inline std::vector<int64_t> int64s_of(const Tensor& tensor) {
  REQUIRE(tensor.dtype() == kInt64);
  return tensor.contiguous().to_vector<int64_t>();
}

// One pooling's geometry over up to three spatial dims (leading unused dims: size 1, kernel 1).
struct Geometry {
  std::array<int64_t, 3> size{1, 1, 1}, kernel{1, 1, 1}, stride{1, 1, 1}, padding{0, 0, 0}, dilation{1, 1, 1};
  bool ceil_mode = false;
};

// PyTorch's pooling_output_shape, written from its formula with floor division on doubles.
inline int64_t pooled_size(int64_t size, int64_t kernel, int64_t stride, int64_t padding, int64_t dilation, bool ceil_mode) {
  const double numerator = static_cast<double>(size + 2 * padding - dilation * (kernel - 1) - 1 +
                                               (ceil_mode ? stride - 1 : 0));
  int64_t count = static_cast<int64_t>(std::floor(numerator / static_cast<double>(stride))) + 1;
  if (ceil_mode && (count - 1) * stride >= size + padding) --count;
  return count;
}

inline std::array<int64_t, 3> outputs_of(const Geometry& g) {
  std::array<int64_t, 3> out{};
  for (int d = 0; d < 3; ++d)
    out[d] = pooled_size(g.size[d], g.kernel[d], g.stride[d], g.padding[d], g.dilation[d], g.ceil_mode);
  return out;
}

struct MaxResult {
  std::vector<double> values;
  std::vector<int64_t> indices;
};

// PyTorch's CPU max pool kernel, per plane: each dim's start moved past the left padding by whole
// dilations, the index starting at that first element, the value at -inf, and an element taken
// when it is greater or NaN.
inline MaxResult scan_max_pool(const std::vector<double>& input, int64_t planes, const Geometry& g) {
  const std::array<int64_t, 3> out = outputs_of(g);
  const int64_t plane = g.size[0] * g.size[1] * g.size[2];
  MaxResult result;
  for (int64_t p = 0; p < planes; ++p)
    for (int64_t o0 = 0; o0 < out[0]; ++o0)
      for (int64_t o1 = 0; o1 < out[1]; ++o1)
        for (int64_t o2 = 0; o2 < out[2]; ++o2) {
          const std::array<int64_t, 3> o{o0, o1, o2};
          std::array<int64_t, 3> begin{}, end{};
          for (int d = 0; d < 3; ++d) {
            begin[d] = o[d] * g.stride[d] - g.padding[d];
            end[d] = std::min(begin[d] + (g.kernel[d] - 1) * g.dilation[d] + 1, g.size[d]);
            while (begin[d] < 0) begin[d] += g.dilation[d];
          }
          int64_t best_index = (begin[0] * g.size[1] + begin[1]) * g.size[2] + begin[2];
          double best = -kInf;
          for (int64_t i0 = begin[0]; i0 < end[0]; i0 += g.dilation[0])
            for (int64_t i1 = begin[1]; i1 < end[1]; i1 += g.dilation[1])
              for (int64_t i2 = begin[2]; i2 < end[2]; i2 += g.dilation[2]) {
                const int64_t index = (i0 * g.size[1] + i1) * g.size[2] + i2;
                const double value = input[p * plane + index];
                if (value > best || std::isnan(value)) best = value, best_index = index;
              }
          result.values.push_back(best);
          result.indices.push_back(best_index);
        }
  return result;
}

// PyTorch's CPU avg pool kernel: the window clipped to the padded input for the divisor with
// count_include_pad, to the input for the sum and the divisor without it.
inline std::vector<double> scan_avg_pool(const std::vector<double>& input, int64_t planes, const Geometry& g,
                                  bool count_include_pad, std::optional<int64_t> divisor_override = std::nullopt) {
  const std::array<int64_t, 3> out = outputs_of(g);
  const int64_t plane = g.size[0] * g.size[1] * g.size[2];
  std::vector<double> result;
  for (int64_t p = 0; p < planes; ++p)
    for (int64_t o0 = 0; o0 < out[0]; ++o0)
      for (int64_t o1 = 0; o1 < out[1]; ++o1)
        for (int64_t o2 = 0; o2 < out[2]; ++o2) {
          const std::array<int64_t, 3> o{o0, o1, o2};
          std::array<int64_t, 3> begin{}, end{};
          int64_t padded_count = 1, count = 1;
          for (int d = 0; d < 3; ++d) {
            begin[d] = o[d] * g.stride[d] - g.padding[d];
            end[d] = std::min(begin[d] + g.kernel[d], g.size[d] + g.padding[d]);
            padded_count *= end[d] - begin[d];
            begin[d] = std::max<int64_t>(begin[d], 0);
            end[d] = std::min(end[d], g.size[d]);
            count *= end[d] - begin[d];
          }
          double sum = 0;
          for (int64_t i0 = begin[0]; i0 < end[0]; ++i0)
            for (int64_t i1 = begin[1]; i1 < end[1]; ++i1)
              for (int64_t i2 = begin[2]; i2 < end[2]; ++i2)
                sum += input[p * plane + (i0 * g.size[1] + i1) * g.size[2] + i2];
          const double divisor = divisor_override ? static_cast<double>(*divisor_override)
                                 : count_include_pad ? static_cast<double>(padded_count)
                                                     : static_cast<double>(count);
          result.push_back(sum / divisor);
        }
  return result;
}

}  // namespace ember::testing::pool_scan
