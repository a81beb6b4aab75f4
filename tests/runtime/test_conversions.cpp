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
