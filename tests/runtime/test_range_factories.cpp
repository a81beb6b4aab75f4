// arange and linspace round `start + i * step` as a product and then a sum, as PyTorch and NumPy
// do (and ember's CUDA kernels): a fused multiply-add rounds once and gives other last bits for
// steps that binary cannot hold exactly, such as 0.1.
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "runtime/ember.h"
#include "skip_case.h"

namespace test_range_factories {

using namespace ember;

namespace {

const Device kCuda0{DeviceType::CUDA, 0};

}  // namespace

TEST_CASE("arange and linspace in float64 give NumPy's values for a step of 0.1") {
  // Python: [0.1 + i * 0.1 for i in range(9)] (two roundings per element); with one rounding
  // element 5 would be 0.6000000000000001.
  const std::vector<double> arange_expected{0.1, 0.2, 0.30000000000000004, 0.4, 0.5, 0.6, 0.7000000000000001, 0.8, 0.9};
  const TensorOptions float64_on_cpu{.dtype = kFloat64, .device = kCPU};
  CHECK(arange(0.1, 0.95, 0.1, float64_on_cpu).to_vector<double>() == arange_expected);
  // numpy.linspace(0, 1, 11): start + i * step below the middle, end - (n - 1 - i) * step above it.
  const std::vector<double> linspace_expected{0.0, 0.1, 0.2, 0.30000000000000004, 0.4, 0.5,
                                              0.6, 0.7, 0.8, 0.9, 1.0};
  CHECK(linspace(0.0, 1.0, 11, float64_on_cpu).to_vector<double>() == linspace_expected);
}

TEST_CASE("cuda arange and linspace are bit-identical to the CPU") {
  if (!ember::testing::cuda_or_skip()) return;
  for (DType dtype : {kFloat64, kFloat32}) {
    CAPTURE(dtype_name(dtype));
    const Tensor cpu_range = arange(-3.7, 250.0, 0.1, TensorOptions{.dtype = dtype, .device = kCPU});
    const Tensor gpu_range = arange(-3.7, 250.0, 0.1, TensorOptions{.dtype = dtype, .device = kCuda0}).to(kCPU);
    CHECK(cpu_range.to(kFloat64).to_vector<double>() == gpu_range.to(kFloat64).to_vector<double>());
    const Tensor cpu_space = linspace(-1.3, 7.9, 1001, {.dtype = dtype, .device = kCPU});
    const Tensor gpu_space = linspace(-1.3, 7.9, 1001, {.dtype = dtype, .device = kCuda0}).to(kCPU);
    CHECK(cpu_space.to(kFloat64).to_vector<double>() == gpu_space.to(kFloat64).to_vector<double>());
  }
}

TEST_CASE("integer arange counts in int64 from truncated bounds, as PyTorch") {
  const TensorOptions int64_cpu{.dtype = kInt64, .device = kCPU};
  const TensorOptions int32_cpu{.dtype = kInt32, .device = kCPU};
  // Past 2^53 a double start + i * step repeats 2^53 and skips 2^53 + 3.
  const double two_to_53 = 9007199254740992.0;
  CHECK(arange(two_to_53, two_to_53 + 4.0).to_vector<int64_t>() ==
        std::vector<int64_t>{9007199254740992, 9007199254740993, 9007199254740994, 9007199254740995});
  CHECK(arange(-two_to_53 - 4.0, -two_to_53, 1.0, int64_cpu).to_vector<int64_t>() ==
        std::vector<int64_t>{-9007199254740996, -9007199254740995, -9007199254740994, -9007199254740993});
  // torch.arange(-0.5, 5, dtype=torch.int64): the start truncates to 0 and the count is 5.
  CHECK(arange(-0.5, 5.0, 1.0, int64_cpu).to_vector<int64_t>() == std::vector<int64_t>{0, 1, 2, 3, 4});
  CHECK(arange(0.0, 2.5, 1.0, int64_cpu).to_vector<int64_t>() == std::vector<int64_t>{0, 1});
  CHECK(arange(7.9, 0.0, -2.9, int64_cpu).to_vector<int64_t>() == std::vector<int64_t>{7, 5, 3, 1});
  // int32 counts from the bounds as given (PyTorch's size rule for every dtype but int64).
  CHECK(arange(-0.5, 5.0, 1.0, int32_cpu).to_vector<int32_t>() == std::vector<int32_t>{0, 1, 2, 3, 4, 5});
  CHECK_THROWS_WITH_AS(arange(0.0, 5.0, 0.5, int64_cpu),
                       doctest::Contains("arange: step 0.5 is zero for a int64 tensor"), Error);
  CHECK_THROWS_WITH_AS(arange(0.0, 2.0, 1.0, {.dtype = kBool, .device = kCPU}),
                       doctest::Contains("arange: bool tensors are not supported"), Error);
}

TEST_CASE("arange refuses a step away from the end even when (end - start) * step underflows") {
  CHECK_THROWS_WITH_AS(arange(1e-200, 0.0, 1e-200, {.device = kCPU}),
                       doctest::Contains("arange: step 1e-200 does not move from 1e-200 towards 0"), Error);
  CHECK_THROWS_WITH_AS(arange(0.0, 1e-200, -1e-200, {.device = kCPU}),
                       doctest::Contains("arange: step -1e-200 does not move from 0 towards 1e-200"), Error);
  CHECK(arange(0.0, 3e-200, 1e-200, {.dtype = kFloat64, .device = kCPU}).numel() == 3);
}

TEST_CASE("cuda integer arange equals the CPU's past 2^53") {
  if (!ember::testing::cuda_or_skip()) return;
  const double start = 9007199254740992.0;
  const Tensor cpu_range = arange(start, start + 1000.0, 3.0, {.dtype = kInt64, .device = kCPU});
  const Tensor gpu_range = arange(start, start + 1000.0, 3.0, {.dtype = kInt64, .device = kCuda0}).to(kCPU);
  CHECK(cpu_range.to_vector<int64_t>() == gpu_range.to_vector<int64_t>());
}

TEST_CASE("linspace checks only the ends it stores, as PyTorch converts them") {
  const TensorOptions half_cpu{.dtype = kFloat16, .device = kCPU};
  CHECK(linspace(0.0, 1e5, 1, half_cpu).to(kFloat64).to_vector<double>() == std::vector<double>{0.0});
  CHECK(linspace(1e5, 1e6, 0, half_cpu).numel() == 0);
  const TensorOptions int64_cpu{.dtype = kInt64, .device = kCPU};
  CHECK(linspace(3.0, std::nan(""), 1, int64_cpu).to_vector<int64_t>() == std::vector<int64_t>{3});
  CHECK_THROWS_WITH_AS(linspace(0.0, 1e5, 2, half_cpu), doctest::Contains("linspace: value 100000"), Error);
  CHECK_THROWS_WITH_AS(linspace(1e5, 0.0, 1, half_cpu), doctest::Contains("linspace: value 100000"), Error);
}

}  // namespace test_range_factories
