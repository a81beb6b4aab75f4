// Pooling (runtime/functional_pool.h) over random geometries against a float64 transcription of
// PyTorch's CPU kernels (pool_pytorch_scan.h): max and avg pools of every kernel, stride, padding
// (up to PyTorch's limits), dilation and ceil_mode drawn, and adaptive pools of every input and
// output size drawn, values and indices alike.
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <random>
#include <vector>

#include "numeric_check.h"
#include "pool_pytorch_scan.h"
#include "runtime/ember.h"
#include "runtime/functional_pool.h"

namespace test_pool_pytorch_random {

using namespace ember;
using namespace ember::testing::pool_scan;
using ember::testing::check_close;
using ember::testing::random_tensor;
using ember::testing::values_of;

TEST_CASE("parity: 300 random geometries within PyTorch's limits equal its kernels' scans") {
  // Kernel 1-4, stride 1-5, dilation 1-3, padding up to PyTorch's limit (half the kernel; half the
  // dilated kernel in 2-D and for max_pool1d_with_indices), ceil_mode either way; the input at
  // least one dilated kernel minus the padding. Geometries with a window of padding alone (ember's
  // documented index -1) are left out.
  std::mt19937 engine(2024);
  const auto draw = [&](int64_t low, int64_t high) {
    return std::uniform_int_distribution<int64_t>(low, high)(engine);
  };
  int tried = 0;
  for (int attempt = 0; tried < 300 && attempt < 3000; ++attempt) {
    const int spatial = static_cast<int>(draw(1, 3));
    Geometry g;
    g.ceil_mode = draw(0, 1) == 1;
    Dims kernel, stride, padding, dilation, input{draw(1, 2), draw(1, 2)};
    bool empty_window = false, dilated = false;
    for (int d = 0; d < spatial; ++d) {
      const int slot = 3 - spatial + d;
      g.kernel[slot] = draw(1, 4), g.stride[slot] = draw(1, 5), g.dilation[slot] = draw(1, 3);
      const int64_t span = (g.kernel[slot] - 1) * g.dilation[slot] + 1;
      g.padding[slot] = draw(0, (spatial == 3 ? g.kernel[slot] : span) / 2);
      g.size[slot] = draw(std::max<int64_t>(1, span - 2 * g.padding[slot]), span + 6);
      kernel.push_back(g.kernel[slot]), stride.push_back(g.stride[slot]);
      padding.push_back(g.padding[slot]), dilation.push_back(g.dilation[slot]), input.push_back(g.size[slot]);
      dilated = dilated || g.dilation[slot] != 1;
      const int64_t outputs = outputs_of(g)[slot];
      for (int64_t o = 0; o < outputs; ++o) {  // does window o hold an element of the input?
        bool inside = false;
        for (int64_t k = 0; k < g.kernel[slot]; ++k) {
          const int64_t at = o * g.stride[slot] - g.padding[slot] + k * g.dilation[slot];
          inside = inside || (at >= 0 && at < g.size[slot]);
        }
        empty_window = empty_window || !inside;
      }
    }
    if (empty_window) continue;
    ++tried;
    INFO(fmt::format("input {}, kernel {}, stride {}, padding {}, dilation {}, ceil_mode {}", input, kernel, stride,
                     padding, dilation, g.ceil_mode));
    const Tensor x = random_tensor(input, static_cast<uint32_t>(attempt));
    const MaxResult expected = scan_max_pool(values_of(x), input[0] * input[1], g);
    const MaxPoolOptions options{.stride = stride, .padding = padding, .dilation = dilation,
                                 .ceil_mode = g.ceil_mode};
    const auto [values, indices] = spatial == 1   ? max_pool1d_with_indices(x, kernel, options)
                                   : spatial == 2 ? max_pool2d_with_indices(x, kernel, options)
                                                  : max_pool3d_with_indices(x, kernel, options);
    REQUIRE(values.numel() == static_cast<int64_t>(expected.values.size()));
    CHECK(values_of(values) == expected.values);
    CHECK(int64s_of(indices) == expected.indices);
    if (dilated) continue;
    // avg_pool3d also wants the input at least as large as the kernel.
    bool fits = true;
    for (int d = 0; d < 3; ++d) fits = fits && g.size[d] >= g.kernel[d];
    if (spatial == 3 && !fits) continue;
    for (const bool count_include_pad : {true, false}) {
      const AvgPoolOptions avg_options{.stride = stride, .padding = padding, .ceil_mode = g.ceil_mode,
                                       .count_include_pad = count_include_pad};
      const Tensor avg = spatial == 1   ? avg_pool1d(x, kernel, avg_options)
                         : spatial == 2 ? avg_pool2d(x, kernel, avg_options)
                                        : avg_pool3d(x, kernel, avg_options);
      check_close(avg, scan_avg_pool(values_of(x), input[0] * input[1], g, count_include_pad), 1e-14);
    }
  }
  CHECK(tried == 300);
}

TEST_CASE("parity: 100 random adaptive pools in 1-D/2-D/3-D equal PyTorch's windows") {
  // Each spatial dim of size 1-7 pooled to 1-9 (often larger than the input); windows
  // [floor(i S / O), ceil((i + 1) S / O)) along each dim, the max taken by a row-major scan from
  // the window's first element (PyTorch's adaptive max kernels), the mean over the box.
  std::mt19937 engine(77);
  const auto draw = [&](int64_t low, int64_t high) {
    return std::uniform_int_distribution<int64_t>(low, high)(engine);
  };
  for (int trial = 0; trial < 100; ++trial) {
    const int spatial = static_cast<int>(draw(1, 3));
    std::array<int64_t, 3> size{1, 1, 1}, out{1, 1, 1};
    Dims input{draw(1, 2), draw(1, 3)}, output;
    for (int d = 0; d < spatial; ++d) {
      size[3 - spatial + d] = draw(1, 7), out[3 - spatial + d] = draw(1, 9);
      input.push_back(size[3 - spatial + d]), output.push_back(out[3 - spatial + d]);
    }
    INFO(fmt::format("input {}, output_size {}", input, output));
    const Tensor x = random_tensor(input, 500 + static_cast<uint32_t>(trial));
    const std::vector<double> v = values_of(x);
    std::vector<double> means, maxima;
    std::vector<int64_t> argmax;
    const int64_t plane = size[0] * size[1] * size[2];
    const auto begin = [](int64_t i, int64_t s, int64_t o) { return i * s / o; };
    const auto end = [](int64_t i, int64_t s, int64_t o) { return ((i + 1) * s + o - 1) / o; };
    for (int64_t p = 0; p < input[0] * input[1]; ++p)
      for (int64_t a = 0; a < out[0]; ++a)
        for (int64_t b = 0; b < out[1]; ++b)
          for (int64_t c = 0; c < out[2]; ++c) {
            double sum = 0, best = -kInf;
            int64_t count = 0;
            int64_t best_index = (begin(a, size[0], out[0]) * size[1] + begin(b, size[1], out[1])) * size[2] +
                                 begin(c, size[2], out[2]);
            for (int64_t i = begin(a, size[0], out[0]); i < end(a, size[0], out[0]); ++i)
              for (int64_t j = begin(b, size[1], out[1]); j < end(b, size[1], out[1]); ++j)
                for (int64_t k = begin(c, size[2], out[2]); k < end(c, size[2], out[2]); ++k) {
                  const int64_t index = (i * size[1] + j) * size[2] + k;
                  const double value = v[p * plane + index];
                  sum += value, ++count;
                  if (value > best || std::isnan(value)) best = value, best_index = index;
                }
            means.push_back(sum / static_cast<double>(count));
            maxima.push_back(best);
            argmax.push_back(best_index);
          }
    const Tensor avg = spatial == 1   ? adaptive_avg_pool1d(x, output)
                       : spatial == 2 ? adaptive_avg_pool2d(x, output)
                                      : adaptive_avg_pool3d(x, output);
    const auto [values, indices] = spatial == 1   ? adaptive_max_pool1d_with_indices(x, output)
                                   : spatial == 2 ? adaptive_max_pool2d_with_indices(x, output)
                                                  : adaptive_max_pool3d_with_indices(x, output);
    check_close(avg, means, 1e-14);
    CHECK(values_of(values) == maxima);
    CHECK(int64s_of(indices) == argmax);
  }
}

}  // namespace test_pool_pytorch_random
