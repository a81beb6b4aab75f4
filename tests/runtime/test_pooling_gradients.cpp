// Pooling's gradients (finite differences; max pools' one chosen element on ties and NaN), its
// errors and call sites, the nn pooling layers (runtime/nn/modules/pooling.h), and CUDA against
// the CPU (skipped, never passed, without a GPU).
#include <doctest/doctest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "cuda_test_util.h"
#include "pool_reference.h"
#include "runtime/ember.h"
#include "runtime/functional_pool.h"
#include "runtime/nn/modules/pooling.h"

namespace test_pooling_gradients {

using namespace ember;
using ember::testing::gradcheck_leaves;
using ember::testing::leaf;
using ember::testing::PoolGeometry;
using ember::testing::small_tensor;
using ember::testing::values_of;

namespace {

// The gradient of sum(pooled * upstream) with respect to `input`, upstream fixed random values.
std::vector<double> gradient_of(const Tensor& input, const std::function<Tensor(const Tensor&)>& pool,
                                std::vector<double>* upstream_values) {
  const Tensor x = input.detach().clone().requires_grad_();
  const Tensor out = pool(x);
  const Tensor upstream = small_tensor(out.sizes(), 321);
  *upstream_values = values_of(upstream);
  mul(out, upstream).sum().backward();
  return values_of(x.grad());
}

// Equal up to the order of the sums where windows overlap.
void check_gradient(const std::vector<double>& actual, const std::vector<double>& expected) {
  REQUIRE(actual.size() == expected.size());
  for (size_t i = 0; i < actual.size(); ++i) {
    INFO("element " << i << ": got " << actual[i] << ", expected " << expected[i]);
    CHECK(std::abs(actual[i] - expected[i]) <= 1e-12);
  }
}

std::string error_of(const std::function<void()>& run) {
  try {
    run();
  } catch (const Error& error) {
    return error.what();
  }
  return "(no error)";
}

}  // namespace

TEST_CASE("avg_pool and adaptive_avg_pool: gradients equal central differences") {
  gradcheck_leaves([](const std::vector<Tensor>& x) { return avg_pool1d(x[0], 3, {.stride = 2, .padding = 1,
                                                                         .ceil_mode = true}); },
            {leaf({2, 2, 8}, 1)});
  gradcheck_leaves([](const std::vector<Tensor>& x) {
    return avg_pool2d(x[0], {3, 2}, {.stride = {2, 1}, .padding = 1, .ceil_mode = true, .count_include_pad = false});
  }, {leaf({1, 2, 6, 5}, 2)});
  gradcheck_leaves([](const std::vector<Tensor>& x) { return avg_pool2d(x[0], 2, {.divisor_override = 3}); },
            {leaf({2, 4, 4}, 3)});
  gradcheck_leaves([](const std::vector<Tensor>& x) {
    return avg_pool3d(x[0], {2, 3, 2}, {.stride = {1, 2, 2}, .padding = {1, 1, 0}, .ceil_mode = true});
  }, {leaf({1, 2, 3, 5, 4}, 4)});
  gradcheck_leaves([](const std::vector<Tensor>& x) { return adaptive_avg_pool1d(x[0], 4); }, {leaf({2, 3, 10}, 5)});
  gradcheck_leaves([](const std::vector<Tensor>& x) { return adaptive_avg_pool2d(x[0], {3, 4}); },
                   {leaf({1, 2, 7, 5}, 6)});
  gradcheck_leaves([](const std::vector<Tensor>& x) { return adaptive_avg_pool3d(x[0], {2, 3, 2}); },
            {leaf({2, 3, 5, 3}, 7)});
}

TEST_CASE("max pools away from ties: gradients equal central differences") {
  gradcheck_leaves([](const std::vector<Tensor>& x) {
    return max_pool1d(x[0], 3, {.stride = 2, .padding = 1, .dilation = 2, .ceil_mode = true});
  }, {leaf({2, 2, 9}, 11)});
  gradcheck_leaves([](const std::vector<Tensor>& x) {
    return max_pool2d(x[0], {3, 2}, {.stride = {2, 1}, .padding = {1, 1}, .ceil_mode = true});
  }, {leaf({1, 2, 7, 6}, 12)});
  gradcheck_leaves([](const std::vector<Tensor>& x) { return max_pool3d(x[0], 2, {.stride = 1, .padding = 1}); },
            {leaf({1, 1, 3, 4, 3}, 13)});
  gradcheck_leaves([](const std::vector<Tensor>& x) { return adaptive_max_pool2d(x[0], {3, 2}); },
                   {leaf({2, 7, 5}, 14)});
}

TEST_CASE("max pools send a window's gradient to its one chosen element: the first on ties, the last NaN") {
  std::vector<double> upstream;
  // All equal, overlapping windows: each window's first element (row-major) takes all of its
  // gradient, where amax would split it.
  const Tensor flat = full({1, 2, 4, 5}, 0.5, {.dtype = kFloat64});
  const PoolGeometry overlapping{.kernel = {2, 3}, .stride = {1}, .padding = {1}, .dilation = {1}};
  const std::vector<double> tied = gradient_of(flat, [](const Tensor& x) {
    return max_pool2d(x, {2, 3}, {.stride = 1, .padding = 1});
  }, &upstream);
  const auto chosen = ember::testing::reference_max_pool(flat, 2, overlapping);
  check_gradient(tied, ember::testing::reference_max_pool_gradient(flat.sizes(), 2, chosen.indices, upstream));
  // By hand: window (0, 0) covers rows -1..0, cols -1..1, its first element inside is (0, 0).
  CHECK(chosen.indices[0] == 0);

  // NaN: the last NaN of a window takes the gradient.
  const double nan = std::nan("");
  const Tensor holes = ember::testing::doubles({1, nan, 3, nan, 2, 7, nan, 0, nan}, {1, 3, 3});
  const PoolGeometry square{.kernel = {2}, .stride = {1}, .padding = {0}, .dilation = {1}};
  const std::vector<double> through_nan = gradient_of(holes, [](const Tensor& x) {
    return max_pool2d(x, 2, {.stride = 1});
  }, &upstream);
  const auto nan_chosen = ember::testing::reference_max_pool(holes, 2, square);
  CHECK(nan_chosen.indices == std::vector<int64_t>{3, 1, 6, 8});  // by hand: each window's last NaN
  check_gradient(through_nan,
                 ember::testing::reference_max_pool_gradient(holes.sizes(), 2, nan_chosen.indices, upstream));

  // Adaptive max with ties in 3-D.
  const Tensor steps = floor(mul(small_tensor({1, 1, 4, 5, 3}, 9), 2.0));  // few distinct values
  const std::vector<double> adaptive = gradient_of(steps, [](const Tensor& x) {
    return adaptive_max_pool3d(x, {3, 2, 2});
  }, &upstream);
  const auto adaptive_chosen = ember::testing::reference_adaptive_pool(steps, 3, {3, 2, 2}, /*max=*/true);
  check_gradient(adaptive,
                 ember::testing::reference_max_pool_gradient(steps.sizes(), 3, adaptive_chosen.indices, upstream));
}

TEST_CASE("pool errors name the function, the values and the caller's line") {
  const Tensor image = small_tensor({2, 3, 4, 4}, 1);
  CHECK_THROWS_WITH_AS(max_pool2d(small_tensor({4, 4}, 1), 2),
                       doctest::Contains("max_pool2d: expected a 3-D (unbatched) or 4-D (batched) input, got shape "
                                         "[4, 4]"),
                       Error);
  CHECK_THROWS_WITH_AS(avg_pool2d(zeros({2, 0, 4, 4}), 2),
                       doctest::Contains("avg_pool2d: expected an input whose dims other than the batch are non-empty, "
                                         "got shape [2, 0, 4, 4]"),
                       Error);
  CHECK_THROWS_WITH_AS(max_pool1d(small_tensor({2, 5}, 1), 0),
                       doctest::Contains("max_pool1d: kernel_size must be greater than zero, got [0]"), Error);
  CHECK_THROWS_WITH_AS(avg_pool2d(image, 2, {.stride = {0, 1}}),
                       doctest::Contains("avg_pool2d: stride must be greater than zero, got [0, 1]"), Error);
  CHECK_THROWS_WITH_AS(max_pool2d(image, 2, {.dilation = 0}),
                       doctest::Contains("max_pool2d: dilation must be greater than zero, got [0, 0]"), Error);
  CHECK_THROWS_WITH_AS(max_pool2d(image, 2, {.padding = -1}),
                       doctest::Contains("max_pool2d: padding must be non-negative, got [-1, -1]"), Error);
  CHECK_THROWS_WITH_AS(max_pool1d(small_tensor({2, 9}, 1), 3, {.padding = 2}),
                       doctest::Contains("max_pool1d: padding should be at most half of the kernel size, got padding "
                                         "[2] for kernel_size [3]"),
                       Error);
  CHECK_THROWS_WITH_AS(max_pool2d(image, 2, {.padding = 2}),
                       doctest::Contains("max_pool2d: padding should be at most half of the dilated kernel size, got "
                                         "padding [2, 2] for kernel_size [2, 2] and dilation [1, 1]"),
                       Error);
  CHECK_THROWS_WITH_AS(max_pool3d(small_tensor({1, 6, 6, 6}, 1), 2, {.padding = 2, .dilation = 3}),
                       doctest::Contains("max_pool3d: padding should be at most half of the kernel size"), Error);
  CHECK_THROWS_WITH_AS(max_pool2d(image, 5),
                       doctest::Contains("max_pool2d: the output is too small: input size [4, 4] with kernel_size "
                                         "[5, 5], stride [5, 5], padding [0, 0], dilation [1, 1] and ceil_mode false "
                                         "gives output size [0, 0]"),
                       Error);
  CHECK_THROWS_WITH_AS(max_pool2d(image, {1, 2, 3}),
                       doctest::Contains("max_pool2d: kernel_size must have 1 or 2 values, got [1, 2, 3]"), Error);
  CHECK_THROWS_WITH_AS(max_pool2d(image.to(kBool), 2),
                       doctest::Contains("max_pool2d: bool inputs are not supported"), Error);
  CHECK_THROWS_WITH_AS(avg_pool2d(image.to(kInt64), 2),
                       doctest::Contains("avg_pool2d: the input must be floating point, got"), Error);
  CHECK_THROWS_WITH_AS(avg_pool1d(small_tensor({2, 9}, 1), 3, {.divisor_override = 2}),
                       doctest::Contains("avg_pool1d: divisor_override is an option of avg_pool2d and avg_pool3d only"),
                       Error);
  CHECK_THROWS_WITH_AS(avg_pool2d(image, 2, {.divisor_override = 0}),
                       doctest::Contains("avg_pool2d: divisor_override must not be zero"), Error);
  CHECK_THROWS_WITH_AS(avg_pool3d(small_tensor({1, 2, 5, 5}, 1), 3, {.padding = 1}),
                       doctest::Contains("avg_pool3d: the input size [2, 5, 5] is smaller than kernel_size [3, 3, 3]"),
                       Error);
  CHECK_THROWS_WITH_AS(adaptive_avg_pool2d(image, {2, -1}),
                       doctest::Contains("adaptive_avg_pool2d: output_size must be non-negative, got [2, -1]"), Error);
  CHECK_THROWS_WITH_AS(adaptive_max_pool1d(small_tensor({2, 9}, 1).to(kInt64), 3),
                       doctest::Contains("adaptive_max_pool1d: the input must be floating point, got"), Error);
  CHECK_THROWS_WITH_AS(adaptive_max_pool3d_with_indices(small_tensor({4, 4}, 1), 2),
                       doctest::Contains("adaptive_max_pool3d_with_indices: expected a 4-D (unbatched) or 5-D "
                                         "(batched) input, got shape [4, 4]"),
                       Error);
  // The caller's line, through the functional form and through a module.
  const int line = __LINE__ + 1;
  const std::string functional = error_of([&] { avg_pool2d(image, 2, {.stride = 0}); });
  CHECK(functional.find("test_pooling_gradients.cpp:" + std::to_string(line)) != std::string::npos);
  nn::MaxPool2d pool(7);
  const int module_line = __LINE__ + 1;
  const std::string from_module = error_of([&] { pool(image); });
  INFO(from_module);
  CHECK(from_module.find("max_pool2d: the output is too small") != std::string::npos);
  CHECK(from_module.find("test_pooling_gradients.cpp:" + std::to_string(module_line)) != std::string::npos);
}

TEST_CASE("nn pooling layers: forward equals the functional form, extra_repr as torch.nn prints it") {
  const Tensor image = small_tensor({2, 3, 7, 6}, 21);
  nn::MaxPool2d max({3, 2}, {.stride = {2, 1}, .padding = 1, .ceil_mode = true});
  CHECK(values_of(max(image)) == values_of(max_pool2d(image, {3, 2}, {.stride = {2, 1}, .padding = 1,
                                                                      .ceil_mode = true})));
  const auto [values, indices] = max->forward_with_indices(image);
  const auto [expected_values, expected_indices] =
      max_pool2d_with_indices(image, {3, 2}, {.stride = {2, 1}, .padding = 1, .ceil_mode = true});
  CHECK(values_of(values) == values_of(expected_values));
  CHECK(values_of(indices) == values_of(expected_indices));
  nn::AvgPool3d avg(2, {.count_include_pad = false});
  const Tensor volume = small_tensor({1, 2, 4, 4, 4}, 22);
  CHECK(values_of(avg(volume)) == values_of(avg_pool3d(volume, 2, {.count_include_pad = false})));
  nn::AdaptiveAvgPool1d adaptive(4);
  const Tensor line = small_tensor({2, 3, 10}, 23);
  CHECK(values_of(adaptive(line)) == values_of(adaptive_avg_pool1d(line, 4)));
  nn::AdaptiveMaxPool2d adaptive_max({3, 2});
  CHECK(values_of(std::get<1>(adaptive_max->forward_with_indices(image))) ==
        values_of(std::get<1>(adaptive_max_pool2d_with_indices(image, {3, 2}))));

  // torch: repr(nn.MaxPool2d(3)), repr(nn.MaxPool2d((3, 2), stride=(2, 1), padding=1, ceil_mode=True)),
  // repr(nn.MaxPool1d(2, dilation=2)), repr(nn.AvgPool1d(3)), repr(nn.AvgPool2d(3, stride=2)),
  // repr(nn.AvgPool3d((1, 2, 2))), repr(nn.AdaptiveAvgPool2d((5, 7))), repr(nn.AdaptiveMaxPool1d(4)).
  CHECK(nn::MaxPool2d(3)->str() == "MaxPool2d(kernel_size=3, stride=3, padding=0, dilation=1, ceil_mode=False)");
  CHECK(max->str() == "MaxPool2d(kernel_size=(3, 2), stride=(2, 1), padding=1, dilation=1, ceil_mode=True)");
  CHECK(nn::MaxPool1d(2, {.dilation = 2})->str() ==
        "MaxPool1d(kernel_size=2, stride=2, padding=0, dilation=2, ceil_mode=False)");
  CHECK(nn::AvgPool1d(3)->str() == "AvgPool1d(kernel_size=(3,), stride=(3,), padding=(0,))");
  CHECK(nn::AvgPool2d(3, {.stride = 2})->str() == "AvgPool2d(kernel_size=3, stride=2, padding=0)");
  CHECK(nn::AvgPool3d({1, 2, 2})->str() == "AvgPool3d(kernel_size=(1, 2, 2), stride=(1, 2, 2), padding=0)");
  CHECK(nn::AdaptiveAvgPool2d({5, 7})->str() == "AdaptiveAvgPool2d(output_size=(5, 7))");
  CHECK(nn::AdaptiveMaxPool1d(4)->str() == "AdaptiveMaxPool1d(output_size=4)");
  // An empty holder, assigned later, as the other layers'.
  nn::AvgPool2d later{nullptr};
  later = nn::AvgPool2d(2);
  CHECK(later->str() == "AvgPool2d(kernel_size=2, stride=2, padding=0)");
}

TEST_CASE("pools on CUDA equal the CPU: values, indices and gradients") {
  if (!ember::testing::cuda_or_skip()) return;
  using Pool = std::function<std::tuple<Tensor, Tensor>(const Tensor&)>;
  const std::vector<std::pair<Dims, Pool>> pools = {
      {{2, 3, 9, 8}, [](const Tensor& x) {
         return max_pool2d_with_indices(x, 3, {.stride = 2, .padding = 1, .dilation = {2, 1}, .ceil_mode = true});
       }},
      {{2, 3, 11}, [](const Tensor& x) { return max_pool1d_with_indices(x, 4, {.stride = 3, .padding = 2}); }},
      {{1, 2, 5, 6, 4}, [](const Tensor& x) { return max_pool3d_with_indices(x, 2, {.padding = 1}); }},
      {{2, 3, 7, 5}, [](const Tensor& x) { return adaptive_max_pool2d_with_indices(x, {3, 4}); }},
      {{2, 3, 9, 8}, [](const Tensor& x) {
         return std::tuple{avg_pool2d(x, 3, {.stride = 2, .padding = 1, .ceil_mode = true,
                                             .count_include_pad = false}), Tensor()};
       }},
      {{1, 2, 5, 6, 4}, [](const Tensor& x) {
         return std::tuple{avg_pool3d(x, {2, 3, 2}, {.padding = 1, .divisor_override = 5}), Tensor()};
       }},
      {{2, 3, 10}, [](const Tensor& x) { return std::tuple{adaptive_avg_pool1d(x, 4), Tensor()}; }},
  };
  uint32_t seed = 60;
  for (const auto& [sizes, pool] : pools) {
    INFO(fmt::format("input {}", sizes));
    const Tensor host = small_tensor(sizes, seed++, kFloat32).to(kCPU);
    const Tensor on_cpu = host.detach().clone().requires_grad_();
    const Tensor on_cuda = host.to(cuda_test::kCuda0).detach().requires_grad_();
    const auto [cpu_values, cpu_indices] = pool(on_cpu);
    const auto [cuda_values, cuda_indices] = pool(on_cuda);
    CHECK(cuda_values.device() == cuda_test::kCuda0);
    ember::testing::check_values_close(cuda_values.to(kCPU), values_of(cpu_values), 1e-6);
    if (cpu_indices.defined()) CHECK(values_of(cuda_indices.to(kCPU)) == values_of(cpu_indices));
    const Tensor upstream = small_tensor(cpu_values.sizes(), 7, kFloat32).to(kCPU);
    mul(cpu_values, upstream).sum().backward();
    mul(cuda_values, upstream.to(cuda_test::kCuda0)).sum().backward();
    ember::testing::check_values_close(on_cuda.grad().to(kCPU), values_of(on_cpu.grad()), 1e-5);
  }
}

}  // namespace test_pooling_gradients
