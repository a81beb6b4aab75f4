// Pooling (runtime/functional_pool.h, runtime/nn/modules/pooling.h) against PyTorch's behaviour at
// its edges, each expectation worked out from PyTorch's source (pool_pytorch_scan.h transcribes its
// CPU kernels in float64) or by hand, never read back from ember: the 1-D padding limit, ceil_mode
// windows that start in the padding or run past it, strides larger than the kernel, dilation, NaN
// and infinities, adaptive sizes, empty and unbatched inputs, 16-bit and strided inputs, second
// derivatives and reprs. Cases that found no difference are kept as regression checks.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "numeric_check.h"
#include "pool_pytorch_scan.h"
#include "runtime/ember.h"
#include "runtime/functional_pool.h"
#include "runtime/nn/modules/pooling.h"

namespace test_pool_pytorch_parity {

using namespace ember;
using namespace ember::testing::pool_scan;
using ember::testing::check_close;
using ember::testing::random_tensor;
using ember::testing::values_of;

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

}  // namespace test_pool_pytorch_parity
