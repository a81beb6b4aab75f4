// Pooling (runtime/functional_pool.h) and batch norm (F.batch_norm, nn::BatchNorm2d/3d) against
// PyTorch's behaviour at its edges, each expectation worked out here from PyTorch's source (its
// Pool.h output sizes and padding checks, its CPU max and avg pool kernels' scans and divisors, its
// adaptive windows, and Normalization.cpp's batch norm) with plain float64 loops, never read back
// from ember: ceil_mode windows that start in the padding or run past it, strides larger than the
// kernel, dilation, ties and NaN, empty and unbatched inputs, second derivatives, reprs; and batch
// norm's mixed 16-bit dtypes, eps = 0, empty batches, the cumulative average and state_dict keys.
#include <doctest/doctest.h>

#include <array>
#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "numeric_check.h"
#include "runtime/ember.h"
#include "runtime/functional_pool.h"
#include "runtime/nn/modules/batch_norm.h"
#include "runtime/nn/modules/pooling.h"

using namespace ember;
using ember::testing::check_close;
using ember::testing::random_tensor;
using ember::testing::values_of;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

std::vector<int64_t> int64s_of(const Tensor& tensor) {
  REQUIRE(tensor.dtype() == kInt64);
  return tensor.contiguous().to_vector<int64_t>();
}

// One pooling's geometry over up to three spatial dims (leading unused dims: size 1, kernel 1).
struct Geometry {
  std::array<int64_t, 3> size{1, 1, 1}, kernel{1, 1, 1}, stride{1, 1, 1}, padding{0, 0, 0}, dilation{1, 1, 1};
  bool ceil_mode = false;
};

// PyTorch's pooling_output_shape, written from its formula with floor division on doubles.
int64_t pooled_size(int64_t size, int64_t kernel, int64_t stride, int64_t padding, int64_t dilation, bool ceil_mode) {
  const double numerator = static_cast<double>(size + 2 * padding - dilation * (kernel - 1) - 1 +
                                               (ceil_mode ? stride - 1 : 0));
  int64_t count = static_cast<int64_t>(std::floor(numerator / static_cast<double>(stride))) + 1;
  if (ceil_mode && (count - 1) * stride >= size + padding) --count;
  return count;
}

std::array<int64_t, 3> outputs_of(const Geometry& g) {
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
MaxResult scan_max_pool(const std::vector<double>& input, int64_t planes, const Geometry& g) {
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
std::vector<double> scan_avg_pool(const std::vector<double>& input, int64_t planes, const Geometry& g,
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

}  // namespace

// ---- pooling ----

TEST_CASE("parity: max_pool1d_with_indices takes padding up to half the dilated kernel, as PyTorch's") {
  // PyTorch's max_pool1d_with_indices runs max_pool2d_with_indices on [N, C, 1, L] with kernel
  // (1, k), padding (0, p) and dilation (1, d), so pool2d's limit applies: p <= ((k - 1) d + 1) / 2.
  // Kernel 2, dilation 3: the dilated kernel spans 4, so padding 2 is allowed (kernel / 2 is 1).
  const Tensor x = random_tensor({2, 3, 9}, 7);
  Geometry g;
  g.size[2] = 9, g.kernel[2] = 2, g.stride[2] = 2, g.padding[2] = 2, g.dilation[2] = 3;
  const MaxResult expected = scan_max_pool(values_of(x), 6, g);
  const auto [values, indices] = max_pool1d_with_indices(x, 2, {.stride = 2, .padding = 2, .dilation = 3});
  CHECK(values.sizes() == Dims{2, 3, outputs_of(g)[2]});
  CHECK(values_of(values) == expected.values);
  CHECK(int64s_of(indices) == expected.indices);
  // The module's forward_with_indices is PyTorch's MaxPool1d(return_indices=True).
  nn::MaxPool1d layer(2, {.stride = 2, .padding = 2, .dilation = 3});
  CHECK(values_of(std::get<0>(layer->forward_with_indices(x))) == expected.values);
  // max_pool1d takes that path too when its input records gradients (or is on CUDA); only its CPU
  // kernel without gradients checks half the kernel.
  const Tensor leaf = x.detach().clone().requires_grad_();
  CHECK(values_of(max_pool1d(leaf, 2, {.stride = 2, .padding = 2, .dilation = 3})) == expected.values);
  CHECK_THROWS_WITH_AS(max_pool1d(x, 2, {.stride = 2, .padding = 2, .dilation = 3}),
                       doctest::Contains("max_pool1d: padding should be at most half of the kernel size"), Error);
  // Past that limit PyTorch refuses too.
  CHECK_THROWS_WITH_AS(max_pool1d_with_indices(x, 2, {.padding = 3, .dilation = 3}),
                       doctest::Contains("max_pool1d_with_indices: padding should be at most half"), Error);
}

TEST_CASE("parity: ceil_mode windows past the input, strides beyond the kernel, dilation, in 1-D/2-D/3-D") {
  struct Case {
    int spatial;
    Dims input;
    Dims kernel, stride, padding, dilation;
    bool ceil_mode;
  };
  const std::vector<Case> cases = {
      // stride 3 > kernel 2: the last window holds the last element alone (ceil_mode)
      {1, {1, 2, 7}, {2}, {3}, {0}, {1}, true},
      {1, {1, 2, 7}, {2}, {3}, {1}, {1}, true},
      // the last window runs past the right padding: the divisor stops at the padding's end
      {1, {2, 1, 6}, {3}, {2}, {1}, {1}, true},
      // padding == kernel / 2 with an even kernel
      {2, {1, 2, 5, 6}, {4, 2}, {3, 2}, {2, 1}, {1, 1}, true},
      {2, {2, 1, 7, 5}, {3, 3}, {4, 2}, {1, 1}, {2, 1}, true},
      {3, {1, 1, 5, 4, 7}, {2, 3, 2}, {3, 2, 3}, {1, 1, 1}, {2, 1, 1}, true},
      {3, {2, 4, 3, 5}, {3, 2, 2}, {2, 2, 4}, {1, 1, 0}, {1, 1, 1}, false},
  };
  uint32_t seed = 100;
  for (const Case& c : cases) {
    INFO(fmt::format("input {}, kernel {}, stride {}, padding {}, dilation {}, ceil_mode {}", c.input, c.kernel,
                     c.stride, c.padding, c.dilation, c.ceil_mode));
    const Tensor x = random_tensor(c.input, seed++);
    Geometry g;
    g.ceil_mode = c.ceil_mode;
    int64_t planes = 1;
    const int lead = c.input.size() - c.spatial;
    for (int d = 0; d < lead; ++d) planes *= c.input[d];
    for (int d = 0; d < c.spatial; ++d) {
      const int slot = 3 - c.spatial + d;
      g.size[slot] = c.input[lead + d];
      g.kernel[slot] = c.kernel[d], g.stride[slot] = c.stride[d], g.padding[slot] = c.padding[d];
      g.dilation[slot] = c.dilation[d];
    }
    Dims shape;
    for (int d = 0; d < lead; ++d) shape.push_back(c.input[d]);
    for (int d = 0; d < c.spatial; ++d) shape.push_back(outputs_of(g)[3 - c.spatial + d]);

    const MaxResult expected = scan_max_pool(values_of(x), planes, g);
    const MaxPoolOptions max_options{.stride = c.stride, .padding = c.padding, .dilation = c.dilation,
                                     .ceil_mode = c.ceil_mode};
    const auto [values, indices] = c.spatial == 1   ? max_pool1d_with_indices(x, c.kernel, max_options)
                                   : c.spatial == 2 ? max_pool2d_with_indices(x, c.kernel, max_options)
                                                    : max_pool3d_with_indices(x, c.kernel, max_options);
    CHECK(values.sizes() == shape);
    CHECK(values_of(values) == expected.values);
    CHECK(int64s_of(indices) == expected.indices);

    bool dilated = false;
    for (const int64_t d : c.dilation) dilated = dilated || d != 1;
    if (dilated) continue;  // avg pools take no dilation
    for (const bool count_include_pad : {true, false}) {
      INFO("count_include_pad ", count_include_pad);
      const AvgPoolOptions avg_options{.stride = c.stride, .padding = c.padding, .ceil_mode = c.ceil_mode,
                                       .count_include_pad = count_include_pad};
      const Tensor avg = c.spatial == 1   ? avg_pool1d(x, c.kernel, avg_options)
                         : c.spatial == 2 ? avg_pool2d(x, c.kernel, avg_options)
                                          : avg_pool3d(x, c.kernel, avg_options);
      CHECK(avg.sizes() == shape);
      check_close(avg, scan_avg_pool(values_of(x), planes, g, count_include_pad), 1e-14);
    }
  }
  // Worked by hand: L = 6, kernel 3, stride 2, padding 1, ceil_mode: 4 windows starting at -1, 1,
  // 3, 5; the last covers 5 and the padding at 6 (7 lies past it), so its divisor is 2 with
  // count_include_pad and 1 without.
  const Tensor line = from_vector<double>({1, 2, 3, 4, 5, 6}, {1, 1, 6}, {.dtype = kFloat64});
  CHECK(values_of(avg_pool1d(line, 3, {.stride = 2, .padding = 1, .ceil_mode = true})) ==
        std::vector<double>{3.0 / 3, 9.0 / 3, 15.0 / 3, 6.0 / 2});
  CHECK(values_of(avg_pool1d(line, 3, {.stride = 2, .padding = 1, .ceil_mode = true, .count_include_pad = false})) ==
        std::vector<double>{3.0 / 2, 9.0 / 3, 15.0 / 3, 6.0 / 1});
}

TEST_CASE("parity: NaN and infinities through max and avg pools") {
  const double nan = std::nan("");
  // Windows of 2 with stride 2: [nan, 1], [inf, -inf], [-inf, -inf], [3, nan].
  const Tensor x = from_vector<double>({nan, 1, kInf, -kInf, -kInf, -kInf, 3, nan}, {1, 1, 8}, {.dtype = kFloat64});
  const auto [values, indices] = max_pool1d_with_indices(x, 2);
  const std::vector<double> got = values_of(values);
  CHECK(std::isnan(got[0]));
  CHECK(got[1] == kInf);
  CHECK(got[2] == -kInf);
  CHECK(std::isnan(got[3]));
  CHECK(int64s_of(indices) == std::vector<int64_t>{0, 2, 4, 7});
  const std::vector<double> mean = values_of(avg_pool1d(x, 2));
  CHECK(std::isnan(mean[0]));
  CHECK(std::isnan(mean[1]));  // inf + -inf
  CHECK(mean[2] == -kInf);
  CHECK(std::isnan(mean[3]));
  // Adaptive windows of an 8-long line into 3: [0, 3), [2, 6), [5, 8).
  const auto [adaptive, adaptive_indices] = adaptive_max_pool1d_with_indices(x, 3);
  CHECK(std::isnan(values_of(adaptive)[0]));
  CHECK(int64s_of(adaptive_indices) == std::vector<int64_t>{0, 2, 7});
  // All -inf: the window's first element (its start, not the padding's).
  const Tensor lows = full({1, 1, 5}, -kInf, {.dtype = kFloat64});
  CHECK(int64s_of(std::get<1>(adaptive_max_pool1d_with_indices(lows, 2))) == std::vector<int64_t>{0, 2});
  // Windows start at -1, 1 and 3: their first elements inside are 0, 1 and 3.
  CHECK(int64s_of(std::get<1>(max_pool1d_with_indices(lows, 3, {.stride = 2, .padding = 1}))) ==
        std::vector<int64_t>{0, 1, 3});
}

TEST_CASE("parity: adaptive pools with outputs larger than the input, of 1, and not dividing it") {
  for (const auto& [size, output] : std::vector<std::pair<int64_t, int64_t>>{{3, 7}, {5, 1}, {7, 3}, {4, 4}, {1, 3}}) {
    INFO("size ", size, ", output ", output);
    const Tensor x = random_tensor({2, size}, static_cast<uint32_t>(size * 10 + output));
    const std::vector<double> input = values_of(x);
    std::vector<double> means, maxima;
    std::vector<int64_t> argmax;
    for (int64_t c = 0; c < 2; ++c)
      for (int64_t i = 0; i < output; ++i) {
        // PyTorch's start_index and end_index in integers.
        const int64_t begin = (i * size) / output;
        const int64_t end = ((i + 1) * size + output - 1) / output;
        double sum = 0, best = -kInf;
        int64_t best_index = begin;
        for (int64_t j = begin; j < end; ++j) {
          sum += input[c * size + j];
          if (input[c * size + j] > best) best = input[c * size + j], best_index = j;
        }
        means.push_back(sum / static_cast<double>(end - begin));
        maxima.push_back(best);
        argmax.push_back(best_index);
      }
    check_close(adaptive_avg_pool1d(x, output), means, 1e-14);
    const auto [values, indices] = adaptive_max_pool1d_with_indices(x, output);
    CHECK(values.sizes() == Dims{2, output});
    CHECK(values_of(values) == maxima);
    CHECK(int64s_of(indices) == argmax);
  }
  // 2-D: rows 3 -> 5, columns 5 -> 2, against the separable 1-D windows.
  const Tensor image = random_tensor({1, 2, 3, 5}, 9);
  const std::vector<double> pixels = values_of(image);
  std::vector<double> expected;
  for (int64_t c = 0; c < 2; ++c)
    for (int64_t i = 0; i < 5; ++i)
      for (int64_t j = 0; j < 2; ++j) {
        const int64_t r0 = (i * 3) / 5, r1 = ((i + 1) * 3 + 4) / 5, c0 = (j * 5) / 2, c1 = ((j + 1) * 5 + 1) / 2;
        double sum = 0;
        for (int64_t r = r0; r < r1; ++r)
          for (int64_t k = c0; k < c1; ++k) sum += pixels[(c * 3 + r) * 5 + k];
        expected.push_back(sum / static_cast<double>((r1 - r0) * (c1 - c0)));
      }
  check_close(adaptive_avg_pool2d(image, {5, 2}), expected, 1e-14);
}

TEST_CASE("parity: empty batches and unbatched inputs keep PyTorch's shapes, with indices too") {
  const Tensor empty1 = zeros({0, 2, 7}, {.dtype = kFloat64});
  const auto [values1, indices1] = max_pool1d_with_indices(empty1, 3, {.stride = 2, .padding = 1, .ceil_mode = true});
  CHECK(values1.sizes() == Dims{0, 2, 4});
  CHECK(indices1.sizes() == Dims{0, 2, 4});
  CHECK(indices1.dtype() == kInt64);
  const Tensor empty3 = zeros({0, 2, 4, 5, 6}, {.dtype = kFloat64});
  CHECK(std::get<1>(max_pool3d_with_indices(empty3, 2)).sizes() == Dims{0, 2, 2, 2, 3});
  CHECK(avg_pool3d(empty3, 2, {.ceil_mode = true}).sizes() == Dims{0, 2, 2, 3, 3});
  CHECK(std::get<1>(adaptive_max_pool2d_with_indices(zeros({0, 3, 4, 4}, {.dtype = kFloat64}), {3, 5})).sizes() ==
        Dims{0, 3, 3, 5});
  CHECK(adaptive_avg_pool1d(empty1, 5).sizes() == Dims{0, 2, 5});

  // Unbatched [C, D, H, W]: the batched result without its N, indices within each plane.
  const Tensor volume = random_tensor({2, 3, 4, 5}, 31);
  const auto [unbatched, unbatched_indices] = max_pool3d_with_indices(volume, 2, {.stride = 1, .padding = 1});
  const auto [batched, batched_indices] =
      max_pool3d_with_indices(volume.unsqueeze(0), 2, {.stride = 1, .padding = 1});
  CHECK(unbatched.sizes() == Dims{2, 4, 5, 6});
  CHECK(values_of(unbatched) == values_of(batched));
  CHECK(int64s_of(unbatched_indices) == int64s_of(batched_indices));
  Geometry g;
  g.size = {3, 4, 5}, g.kernel = {2, 2, 2}, g.stride = {1, 1, 1}, g.padding = {1, 1, 1};
  CHECK(int64s_of(unbatched_indices) == scan_max_pool(values_of(volume), 2, g).indices);
}

TEST_CASE("parity: 16-bit and non-contiguous pools") {
  // fp16 avg_pool: summed in float32 and rounded once, so within half an fp16 ulp of the mean of
  // the fp16 values.
  const Tensor half = random_tensor({2, 3, 6, 7}, 41, kFloat16);
  Geometry g;
  g.size = {1, 6, 7}, g.kernel = {1, 3, 3}, g.stride = {1, 2, 2}, g.padding = {0, 1, 1}, g.ceil_mode = true;
  const Tensor pooled = avg_pool2d(half, 3, {.stride = 2, .padding = 1, .ceil_mode = true});
  CHECK(pooled.dtype() == kFloat16);
  check_close(pooled, scan_avg_pool(values_of(half), 6, g, true), 1.01 * std::ldexp(1.0, -11));
  const Tensor adaptive = adaptive_avg_pool2d(half, {4, 3});
  CHECK(adaptive.dtype() == kFloat16);
  check_close(adaptive, values_of(adaptive_avg_pool2d(half.to(kFloat64), {4, 3})), 1.01 * std::ldexp(1.0, -11));
  const auto [half_values, half_indices] = max_pool2d_with_indices(half, 3, {.stride = 2, .padding = 1});
  CHECK(half_values.dtype() == kFloat16);
  g.ceil_mode = false;
  const MaxResult half_expected = scan_max_pool(values_of(half), 6, g);
  CHECK(values_of(half_values) == half_expected.values);
  CHECK(int64s_of(half_indices) == half_expected.indices);

  // A channel slice with a stride: pooled as its contiguous copy.
  const Tensor wide = random_tensor({2, 6, 5, 4}, 42);
  const Tensor every_other = wide.slice(1, 0, 6, 2).transpose(2, 3);
  CHECK_FALSE(every_other.is_contiguous());
  check_close(avg_pool2d(every_other, 2, {.padding = 1, .count_include_pad = false}),
              values_of(avg_pool2d(every_other.contiguous(), 2, {.padding = 1, .count_include_pad = false})), 0.0);
  CHECK(values_of(adaptive_max_pool2d(every_other, {3, 2})) ==
        values_of(adaptive_max_pool2d(every_other.contiguous(), {3, 2})));
}

TEST_CASE("parity: pools' second derivatives: the gradient is linear in the upstream gradient") {
  // PyTorch's max_pool backward's own derivative gathers the upstream's gradient at the chosen
  // indices; avg_pool's backward is avg_pool's adjoint. So d/dv <dx, w> with dx = J^T v is J w:
  // for max pool w at each window's index, for avg pool avg_pool(w).
  const Tensor x = random_tensor({2, 2, 5, 6}, 51).requires_grad_();
  const MaxPoolOptions options{.stride = 2, .padding = 1, .dilation = {1, 2}, .ceil_mode = true};
  const auto [values, indices] = max_pool2d_with_indices(x, 3, options);
  const Tensor v = random_tensor(values.sizes(), 52).requires_grad_();
  mul(values, v).sum().backward({}, std::nullopt, /*create_graph=*/true, {x});
  const Tensor dx = x.grad();
  REQUIRE(dx.requires_grad());
  const Tensor w = random_tensor(x.sizes(), 53);
  mul(dx, w).sum().backward({}, std::nullopt, false, {v});
  const std::vector<double> w_values = values_of(w);
  const std::vector<int64_t> chosen = int64s_of(indices);
  std::vector<double> expected;
  const int64_t plane = 5 * 6, outputs = values.size(2) * values.size(3);
  for (size_t i = 0; i < chosen.size(); ++i)
    expected.push_back(w_values[static_cast<int64_t>(i) / outputs * plane + chosen[i]]);
  check_close(v.grad(), expected, 1e-14);

  const Tensor y = random_tensor({2, 2, 5, 6}, 54).requires_grad_();
  const AvgPoolOptions avg_options{.stride = 2, .padding = 1, .ceil_mode = true, .count_include_pad = false};
  const Tensor averaged = avg_pool2d(y, 3, avg_options);
  const Tensor u = random_tensor(averaged.sizes(), 55).requires_grad_();
  mul(averaged, u).sum().backward({}, std::nullopt, /*create_graph=*/true, {y});
  mul(y.grad(), w).sum().backward({}, std::nullopt, false, {u});
  check_close(u.grad(), values_of(avg_pool2d(w, 3, avg_options)), 1e-14);
}

TEST_CASE("parity: pooling layers print as torch.nn's") {
  // repr(nn.MaxPool3d((1, 2, 2), stride=(1, 2, 1))), repr(nn.MaxPool1d(3, stride=2, padding=1, ceil_mode=True)),
  // repr(nn.AvgPool1d(3, stride=2, padding=1)), repr(nn.AvgPool2d((2, 3), padding=(1, 1))),
  // repr(nn.AdaptiveMaxPool3d((2, 3, 4))), repr(nn.AdaptiveAvgPool2d(1)).
  CHECK(nn::MaxPool3d({1, 2, 2}, {.stride = {1, 2, 1}})->str() ==
        "MaxPool3d(kernel_size=(1, 2, 2), stride=(1, 2, 1), padding=0, dilation=1, ceil_mode=False)");
  CHECK(nn::MaxPool1d(3, {.stride = 2, .padding = 1, .ceil_mode = true})->str() ==
        "MaxPool1d(kernel_size=3, stride=2, padding=1, dilation=1, ceil_mode=True)");
  CHECK(nn::AvgPool1d(3, {.stride = 2, .padding = 1})->str() ==
        "AvgPool1d(kernel_size=(3,), stride=(2,), padding=(1,))");
  CHECK(nn::AvgPool2d({2, 3}, {.padding = {1, 1}})->str() ==
        "AvgPool2d(kernel_size=(2, 3), stride=(2, 3), padding=(1, 1))");
  CHECK(nn::AdaptiveMaxPool3d({2, 3, 4})->str() == "AdaptiveMaxPool3d(output_size=(2, 3, 4))");
  CHECK(nn::AdaptiveAvgPool2d(1)->str() == "AdaptiveAvgPool2d(output_size=1)");
}

// ---- batch norm ----

TEST_CASE("parity: batch_norm with a 16-bit input and float32 bias alone returns the input's dtype") {
  // PyTorch's batch norm is mixed when the first parameter given (weight, bias, running_mean,
  // running_var) has another dtype than the input; it computes in float32 and its output keeps the
  // input's dtype (empty_like(input)).
  const Tensor x = random_tensor({4, 3, 5}, 61);
  const Tensor bias = random_tensor({3}, 62, kFloat32);
  for (const DType low : {kFloat16, kBFloat16}) {
    INFO(low);
    const Tensor y = batch_norm(x.to(low), {}, {}, {}, bias, /*training=*/true);
    CHECK(y.dtype() == low);
    // The reference: the 16-bit values normalised in float64, plus the bias.
    const std::vector<double> input = values_of(x.to(low)), shift = values_of(bias);
    std::vector<double> expected(input.size());
    for (int64_t c = 0; c < 3; ++c) {
      double sum = 0, squares = 0;
      for (int64_t n = 0; n < 4; ++n)
        for (int64_t l = 0; l < 5; ++l) sum += input[(n * 3 + c) * 5 + l];
      const double mean = sum / 20;
      for (int64_t n = 0; n < 4; ++n)
        for (int64_t l = 0; l < 5; ++l) squares += std::pow(input[(n * 3 + c) * 5 + l] - mean, 2);
      for (int64_t n = 0; n < 4; ++n)
        for (int64_t l = 0; l < 5; ++l) {
          const int64_t i = (n * 3 + c) * 5 + l;
          expected[i] = (input[i] - mean) / std::sqrt(squares / 20 + 1e-5) + shift[c];
        }
    }
    check_close(y, expected, low == kFloat16 ? 2e-3 : 1.6e-2);
  }
}

TEST_CASE("parity: a 16-bit batch norm with 16-bit parameters rounds once, as PyTorch's float accumulation") {
  // PyTorch's kernels (CPU and CUDA) keep the statistics and the transform in float32 for 16-bit
  // inputs whatever the parameters' dtype, rounding only the output; so each value is within half
  // an ulp of the float64 result on the same 16-bit numbers (plus float32's own error). A mean
  // rounded to 16 bits first would shift a whole channel by up to its half ulp (at values near 10
  // that is 2^-8 in fp16, far beyond a result near 0's half ulp).
  for (const DType low : {kFloat16, kBFloat16}) {
    INFO(low);
    const int mantissa = low == kFloat16 ? 10 : 7;
    const Tensor x = add(mul(random_tensor({8, 3, 6, 5}, 95), 3.0), 10.0).to(low);
    nn::BatchNorm2d layer({.num_features = 3, .dtype = low});
    {
      NoGradGuard no_grad;
      layer->weight.copy_(random_tensor({3}, 96).to(low));
      layer->bias.copy_(random_tensor({3}, 97).to(low));
    }
    const std::vector<double> v = values_of(x), w = values_of(layer->weight), b = values_of(layer->bias);
    std::vector<double> expected(v.size());
    for (int64_t c = 0; c < 3; ++c) {
      double sum = 0, squares = 0;
      for (int64_t n = 0; n < 8; ++n)
        for (int64_t k = 0; k < 30; ++k) sum += v[(n * 3 + c) * 30 + k];
      const double mean = sum / 240;
      for (int64_t n = 0; n < 8; ++n)
        for (int64_t k = 0; k < 30; ++k) squares += std::pow(v[(n * 3 + c) * 30 + k] - mean, 2);
      for (int64_t n = 0; n < 8; ++n)
        for (int64_t k = 0; k < 30; ++k) {
          const int64_t i = (n * 3 + c) * 30 + k;
          expected[i] = (v[i] - mean) / std::sqrt(squares / 240 + 1e-5) * w[c] + b[c];
        }
    }
    const auto check_rounded_once = [&](const Tensor& y) {
      CHECK(y.dtype() == low);
      const std::vector<double> got = values_of(y);
      size_t worst = 0;
      double worst_ratio = 0;
      for (size_t i = 0; i < got.size(); ++i) {
        const double half_ulp = std::ldexp(1.0, std::ilogb(std::abs(expected[i])) - mantissa - 1);
        const double ratio = std::abs(got[i] - expected[i]) / (half_ulp + 1e-5);
        if (ratio > worst_ratio) worst_ratio = ratio, worst = i;
      }
      INFO("element " << worst << ": got " << got[worst] << ", expected " << expected[worst]);
      CHECK(worst_ratio <= 1.0);
    };
    check_rounded_once(layer(x));
    check_rounded_once(batch_norm(x, {}, {}, layer->weight, layer->bias, /*training=*/true));
  }
}

TEST_CASE("parity: batch norm with eps = 0 over a constant channel gives the bias, as PyTorch's inverse std of 0") {
  // PyTorch's batch statistics take invstd = 0 where var == 0 and eps == 0 (its InvStd), so a
  // constant channel normalises to 0 (then the bias), not 0 * inf = NaN; its gradient is then 0.
  Tensor x = random_tensor({3, 2, 2, 2}, 71);
  {
    NoGradGuard no_grad;
    x.select(1, 1).fill_(2.5);  // channel 1 constant
  }
  x.requires_grad_();
  const Tensor weight = from_vector<double>({1.5, 2.0}, {2}, {.dtype = kFloat64});
  const Tensor bias = from_vector<double>({0.25, -0.75}, {2}, {.dtype = kFloat64});
  const Tensor y = batch_norm(x, {}, {}, weight, bias, /*training=*/true, 0.1, /*eps=*/0.0);
  const std::vector<double> got = values_of(y);
  for (int64_t n = 0; n < 3; ++n)
    for (int64_t k = 0; k < 4; ++k) CHECK(got[(n * 2 + 1) * 4 + k] == -0.75);
  y.sum().backward();
  const std::vector<double> gradient = values_of(x.grad());
  for (int64_t n = 0; n < 3; ++n)
    for (int64_t k = 0; k < 4; ++k) CHECK(gradient[(n * 2 + 1) * 4 + k] == 0.0);
  for (const double g : gradient) CHECK_FALSE(std::isnan(g));

  nn::BatchNorm2d layer({.num_features = 2, .eps = 0.0, .dtype = kFloat64});
  const std::vector<double> from_module = values_of(layer(x.detach()));
  for (int64_t n = 0; n < 3; ++n)
    for (int64_t k = 0; k < 4; ++k) CHECK(from_module[(n * 2 + 1) * 4 + k] == 0.0);
}

TEST_CASE("parity: batch_norm on an empty batch: an empty result and the estimates unchanged") {
  // PyTorch's _batch_norm_impl_index returns before any update when the input has no elements.
  Tensor running_mean = from_vector<double>({0.5, -1}, {2}, {.dtype = kFloat64});
  Tensor running_var = from_vector<double>({2, 3}, {2}, {.dtype = kFloat64});
  const Tensor y = batch_norm(zeros({0, 2, 3, 3}, {.dtype = kFloat64}), running_mean, running_var, {}, {}, true);
  CHECK(y.sizes() == Dims{0, 2, 3, 3});
  CHECK(values_of(running_mean) == std::vector<double>{0.5, -1});
  CHECK(values_of(running_var) == std::vector<double>{2, 3});
  nn::BatchNorm3d layer({.num_features = 2, .dtype = kFloat64});
  CHECK(layer(zeros({0, 2, 1, 2, 2}, {.dtype = kFloat64})).sizes() == Dims{0, 2, 1, 2, 2});
  CHECK(values_of(layer->running_mean) == std::vector<double>{0, 0});
  CHECK(values_of(layer->running_var) == std::vector<double>{1, 1});
}

TEST_CASE("parity: BatchNorm2d's cumulative average, eval without estimates, state_dict keys and repr") {
  nn::BatchNorm2d layer({.num_features = 2, .momentum = std::nullopt, .dtype = kFloat64});
  std::vector<std::vector<double>> means(2), unbiased(2);
  for (uint32_t step = 0; step < 3; ++step) {
    const Tensor x = random_tensor({2, 2, 3, 2}, 80 + step);
    layer(x);
    const std::vector<double> v = values_of(x);
    for (int64_t c = 0; c < 2; ++c) {
      double sum = 0, squares = 0;
      for (int64_t n = 0; n < 2; ++n)
        for (int64_t k = 0; k < 6; ++k) sum += v[(n * 2 + c) * 6 + k];
      const double mean = sum / 12;
      for (int64_t n = 0; n < 2; ++n)
        for (int64_t k = 0; k < 6; ++k) squares += std::pow(v[(n * 2 + c) * 6 + k] - mean, 2);
      means[c].push_back(mean);
      unbiased[c].push_back(squares / 11);
    }
  }
  // Factor 1 / count: the running values are the plain averages (the initial 0 and 1 are
  // weighted by 0 after the first step).
  for (int64_t c = 0; c < 2; ++c) {
    CHECK(values_of(layer->running_mean)[c] ==
          doctest::Approx((means[c][0] + means[c][1] + means[c][2]) / 3).epsilon(1e-13));
    CHECK(values_of(layer->running_var)[c] ==
          doctest::Approx((unbiased[c][0] + unbiased[c][1] + unbiased[c][2]) / 3).epsilon(1e-13));
  }
  CHECK(layer->num_batches_tracked.to_vector<int64_t>() == std::vector<int64_t>{3});
  CHECK(layer->state_dict().keys() ==
        std::vector<std::string>{"weight", "bias", "running_mean", "running_var", "num_batches_tracked"});
  CHECK(layer->str() == "BatchNorm2d(2, eps=1e-05, momentum=None, affine=True, track_running_stats=True)");
  CHECK(nn::BatchNorm3d({.num_features = 5, .eps = 1e-3, .momentum = 0.2})->str() ==
        "BatchNorm3d(5, eps=0.001, momentum=0.2, affine=True, track_running_stats=True)");

  // track_running_stats = false: no buffers, the batch's statistics in eval mode too, and
  // PyTorch's one-value-per-channel check then applies in eval mode as well.
  nn::BatchNorm2d stateless({.num_features = 2, .affine = false, .track_running_stats = false, .dtype = kFloat64});
  CHECK(stateless->state_dict().keys().empty());
  stateless->eval();
  const Tensor x = random_tensor({2, 2, 2, 1}, 90);
  stateless->train();
  const std::vector<double> trained = values_of(stateless(x));
  stateless->eval();
  CHECK(values_of(stateless(x)) == trained);
  CHECK_THROWS_WITH_AS(stateless(random_tensor({1, 2, 1, 1}, 91)),
                       doctest::Contains("Expected more than 1 value per channel when training"), Error);
}
