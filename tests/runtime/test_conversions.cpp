// Floating values converted to integer dtypes: C++ leaves NaN and out-of-range conversions
// undefined (x86 gives INT_MIN, CUDA's instructions saturate), so every kernel converts through
// fn::detail::convert: truncation toward zero, saturation at the type's range, NaN to 0, the
// same on both devices.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "runtime/ember.h"
#include "skip_case.h"

namespace test_conversions {

using namespace ember;

namespace {

const Device kCuda0{DeviceType::CUDA, 0};
constexpr double kNan = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

const std::vector<double> kSpecial{kNan, kInf, -kInf, 1e20, -1e20, 3.7, -3.7, 2147483647.5, -2147483648.5, 0.0};

}  // namespace

// Tensor conversions saturate; a host scalar an integer tensor cannot hold is refused, as PyTorch does.
TEST_CASE("float to int conversions saturate in to and copy_, full and fill_ refuse scalars they cannot hold") {
  constexpr int32_t kMax32 = std::numeric_limits<int32_t>::max();
  constexpr int32_t kMin32 = std::numeric_limits<int32_t>::min();
  constexpr int64_t kMax64 = std::numeric_limits<int64_t>::max();
  constexpr int64_t kMin64 = std::numeric_limits<int64_t>::min();
  for (DType from : {kFloat64, kFloat32}) {
    CAPTURE(dtype_name(from));
    const Tensor values = from_vector(kSpecial, Dims{static_cast<int64_t>(kSpecial.size())},
                                      {.dtype = from, .device = kCPU});
    // float32 rounds 2147483647.5 up to 2^31 and -2147483648.5 to -2^31: both saturate alike.
    CHECK(values.to(kInt32).to_vector<int32_t>() ==
          std::vector<int32_t>{0, kMax32, kMin32, kMax32, kMin32, 3, -3, kMax32, kMin32, 0});
    const int64_t rounded_up = from == kFloat64 ? int64_t{2147483647} : int64_t{2147483648};
    CHECK(values.to(kInt64).to_vector<int64_t>() ==
          std::vector<int64_t>{0, kMax64, kMin64, kMax64, kMin64, 3, -3, rounded_up, int64_t{-2147483648}, 0});
    Tensor target = zeros({static_cast<int64_t>(kSpecial.size())}, {.dtype = kInt32, .device = kCPU});
    target.copy_(values);
    CHECK(target.to_vector<int32_t>() == values.to(kInt32).to_vector<int32_t>());
  }
  CHECK_THROWS_WITH_AS(full({2}, kNan, {.dtype = kInt32, .device = kCPU}),
                       doctest::Contains("full: value nan cannot be stored in an int32 tensor"), Error);
  CHECK_THROWS_AS(full({2}, 1e20, {.dtype = kInt64, .device = kCPU}), Error);
  CHECK(full({2}, -3.7, {.dtype = kInt64, .device = kCPU}).to_vector<int64_t>() == std::vector<int64_t>{-3, -3});
  Tensor filled = zeros({3}, {.dtype = kInt32, .device = kCPU});
  CHECK_THROWS_WITH_AS(filled.fill_(-kInf), doctest::Contains("fill_: value -inf cannot be stored in an int32"),
                       Error);
  CHECK(filled.to_vector<int32_t>() == std::vector<int32_t>(3, 0));
  filled.fill_(-2147483648.5);  // truncates to int32's minimum: it fits
  CHECK(filled.to_vector<int32_t>() == std::vector<int32_t>(3, kMin32));
}

TEST_CASE("cuda float to int conversions give the CPU's values") {
  if (!ember::testing::cuda_or_skip()) return;
  for (DType from : {kFloat64, kFloat32, kBFloat16}) {
    for (DType to : {kInt32, kInt64, kBool}) {
      CAPTURE(dtype_name(from));
      CAPTURE(dtype_name(to));
      const Tensor values = from_vector(kSpecial, Dims{static_cast<int64_t>(kSpecial.size())},
                                        {.dtype = from, .device = kCPU});
      const Tensor cpu = values.to(to).to(kInt64);
      const Tensor gpu = values.to(kCuda0).to(to).to(kCPU).to(kInt64);
      CHECK(cpu.to_vector<int64_t>() == gpu.to_vector<int64_t>());
    }
  }
  // A scalar an integer tensor cannot hold is refused on CUDA too (full's shape rule, fill_'s kernel).
  CHECK_THROWS_AS(full({2}, kNan, {.dtype = kInt32, .device = kCuda0}), Error);
  Tensor filled = zeros({2}, {.dtype = kInt64, .device = kCuda0});
  CHECK_THROWS_AS(filled.fill_(kNan), Error);
  CHECK(filled.to(kCPU).to_vector<int64_t>() == std::vector<int64_t>{0, 0});
}

TEST_CASE("a fill value past a floating dtype's largest finite value is refused, as PyTorch's checked_convert") {
  const TensorOptions half_cpu{.dtype = kFloat16, .device = kCPU};
  CHECK_THROWS_WITH_AS(full({2}, 1e5, half_cpu),
                       doctest::Contains("full: value 100000 cannot be stored in a float16 tensor without overflow "
                                         "(its largest finite value is 65504)"),
                       Error);
  CHECK_THROWS_WITH_AS(full({2}, -1e39, {.dtype = kBFloat16, .device = kCPU}),
                       doctest::Contains("full: value -1e+39 cannot be stored in a bfloat16 tensor"), Error);
  CHECK_THROWS_WITH_AS(scalar_tensor(70000.0, half_cpu), doctest::Contains("scalar_tensor: value 70000"), Error);
  CHECK_THROWS_WITH_AS(full_like(zeros({2}, half_cpu), -65505.0), doctest::Contains("full_like: value -65505"), Error);
  CHECK_THROWS_WITH_AS(linspace(0.0, 1e5, 3, half_cpu), doctest::Contains("linspace: value 100000"), Error);
  Tensor target = zeros({2}, {.device = kCPU});
  CHECK_THROWS_WITH_AS(target.fill_(1e39), doctest::Contains("fill_: value 1e+39 cannot be stored in a float32"),
                       Error);
  CHECK(target.to_vector<float>() == std::vector<float>{0.0f, 0.0f});
  // The largest value, infinities and NaN are values of the type.
  CHECK(full({1}, -65504.0, half_cpu).to(kFloat64).item() == -65504.0);
  CHECK(std::isinf(full({1}, kInf, half_cpu).to(kFloat64).item()));
  CHECK(std::isnan(zeros({1}, half_cpu).fill_(kNan).to(kFloat64).item()));
  CHECK(full({1}, 1e300, {.dtype = kFloat64, .device = kCPU}).item() == 1e300);
}

TEST_CASE("internal constants beside a float16 tensor still round to inf: clamp's gradient with a bound past 65504") {
  Tensor x = from_vector<float>({-2.0f, 0.5f, 3.0f}).to(kFloat16).detach().requires_grad_();
  sum(clamp(x, -1e6, 1.0)).backward();
  CHECK(x.grad().to(kFloat32).to_vector<float>() == std::vector<float>{1.0f, 1.0f, 0.0f});
}

}  // namespace test_conversions
