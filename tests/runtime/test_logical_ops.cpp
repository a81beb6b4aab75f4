// isnan, isinf, isfinite, the logical ops, any / all and count_nonzero: exact expected values with
// NaN, +-inf and -0.0 in every dtype PyTorch accepts, broadcasting, keepdim, negative dims, empty
// tensors, the Tensor methods and the errors.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>

#include "error_of.h"
#include "runtime/ember.h"
#include "runtime/ops/registry.h"

namespace test_logical_ops {

using namespace ember;
using ember::testing::error_of;
using ember::testing::names_line;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// 1.0 / 0.0 for each element of a bool tensor, to compare with a plain list.
std::vector<int> bits(const Tensor& mask) {
  REQUIRE(mask.dtype() == kBool);
  std::vector<int> out;
  for (bool value : mask.contiguous().to_vector<bool>()) out.push_back(value ? 1 : 0);
  return out;
}

Tensor floats(const std::vector<double>& values, DType dtype, const Dims& sizes = {}) {
  return from_vector<double>(values, sizes.size() == 0 ? Dims{static_cast<int64_t>(values.size())} : sizes,
                             {.dtype = dtype});
}

const std::vector<double> kSpecial = {1.5, kNaN, kInf, -kInf, -0.0, 0.0, -2.0};

}  // namespace

TEST_CASE("isnan, isinf and isfinite find NaN and infinities in every floating dtype") {
  for (DType dtype : {kFloat32, kFloat64, kBFloat16, kFloat16}) {
    INFO(dtype);
    const Tensor x = floats(kSpecial, dtype);
    CHECK(bits(isnan(x)) == std::vector<int>{0, 1, 0, 0, 0, 0, 0});
    CHECK(bits(isinf(x)) == std::vector<int>{0, 0, 1, 1, 0, 0, 0});
    CHECK(bits(isfinite(x)) == std::vector<int>{1, 0, 0, 0, 1, 1, 1});
    CHECK(bits(x.isnan()) == bits(isnan(x)));
    CHECK(bits(x.isinf()) == bits(isinf(x)));
    CHECK(bits(x.isfinite()) == bits(isfinite(x)));
  }
}

TEST_CASE("isnan, isinf and isfinite of integers and bool: never NaN or infinite, always finite") {
  const Tensor ints = from_vector<int64_t>({-9223372036854775807LL - 1, 0, 7});
  const Tensor int32s = to_dtype(ints.slice(0, 1, 3), kInt32);
  const Tensor flags = to_dtype(from_vector<double>({1.0, 0.0}), kBool);
  for (const Tensor& x : {ints, int32s, flags}) {
    INFO(x.dtype());
    const std::vector<int> none(static_cast<size_t>(x.numel()), 0), every(static_cast<size_t>(x.numel()), 1);
    CHECK(bits(isnan(x)) == none);
    CHECK(bits(isinf(x)) == none);
    CHECK(bits(isfinite(x)) == every);
  }
}

TEST_CASE("isnan keeps the shape of 0-d, empty and strided inputs") {
  CHECK(isnan(scalar_tensor(kNaN)).dim() == 0);
  CHECK(isnan(scalar_tensor(kNaN)).item<bool>());
  CHECK(isfinite(zeros({0, 3})).sizes() == Dims{0, 3});
  const Tensor grid = floats({kNaN, 1.0, kInf, 2.0, 3.0, kNaN}, kFloat32, {2, 3});
  CHECK(bits(isnan(grid.t())) == std::vector<int>{1, 0, 0, 0, 0, 1});  // [3, 2], column-major reads
  CHECK(bits(isinf(grid.slice(1, 0, 3, 2))) == std::vector<int>{0, 1, 0, 0});
}

TEST_CASE("logical_not, logical_and, logical_or and logical_xor read nonzero as true, NaN included") {
  for (DType dtype : {kFloat32, kFloat64, kBFloat16}) {
    INFO(dtype);
    const Tensor x = floats(kSpecial, dtype);                        // 1.5 nan inf -inf -0 0 -2
    const Tensor y = floats({0.0, 0.0, 3.0, -0.0, 1.0, 0.0, kNaN}, dtype);
    CHECK(bits(logical_not(x)) == std::vector<int>{0, 0, 0, 0, 1, 1, 0});
    CHECK(bits(logical_and(x, y)) == std::vector<int>{0, 0, 1, 0, 0, 0, 1});
    CHECK(bits(logical_or(x, y)) == std::vector<int>{1, 1, 1, 1, 1, 0, 1});
    CHECK(bits(logical_xor(x, y)) == std::vector<int>{1, 1, 0, 1, 1, 0, 0});
    CHECK(bits(x.logical_not()) == bits(logical_not(x)));
    CHECK(bits(x.logical_and(y)) == bits(logical_and(x, y)));
    CHECK(bits(x.logical_or(y)) == bits(logical_or(x, y)));
    CHECK(bits(x.logical_xor(y)) == bits(logical_xor(x, y)));
  }
}

TEST_CASE("logical ops broadcast and mix dtypes: int64 with float, bool with int32") {
  const Tensor column = from_vector<int64_t>({0, 5}, Dims{2, 1});
  const Tensor row = floats({0.0, -0.5, kNaN}, kFloat32);
  const Tensor both = logical_and(column, row);
  CHECK(both.sizes() == Dims{2, 3});
  CHECK(bits(both) == std::vector<int>{0, 0, 0, 0, 1, 1});
  CHECK(bits(logical_or(column, row)) == std::vector<int>{0, 1, 1, 1, 1, 1});
  CHECK(bits(logical_xor(column, row)) == std::vector<int>{0, 1, 1, 1, 0, 0});
  const Tensor flags = to_dtype(from_vector<double>({1.0, 0.0, 1.0}), kBool);
  const Tensor counts = to_dtype(from_vector<double>({0.0, 0.0, 4.0}), kInt32);
  CHECK(bits(logical_xor(flags, counts)) == std::vector<int>{1, 0, 0});
  CHECK(bits(logical_not(counts)) == std::vector<int>{1, 1, 0});
  CHECK(logical_and(zeros({0}), ones({1})).sizes() == Dims{0});
}

TEST_CASE("logical ops refuse shapes that do not broadcast, naming the op, the shapes and the line") {
  const Tensor a = zeros({2, 3}), b = zeros({4});
  const int line = __LINE__ + 1;
  const std::string message = error_of([&] { (void)logical_and(a, b); });
  CHECK(message.find("logical_and") != std::string::npos);
  CHECK(message.find("[2, 3]") != std::string::npos);
  CHECK(message.find("[4]") != std::string::npos);
  CHECK(names_line(message, line));
}

TEST_CASE("any and all: bool results of every dtype, NaN counts as true, empty groups give false and true") {
  const Tensor x = floats({0.0, -0.0, kNaN, 0.0, 2.0, 3.0}, kFloat32, {2, 3});
  CHECK(any(x).item<bool>());
  CHECK(!all(x).item<bool>());
  CHECK(any(x).dim() == 0);
  CHECK(any(x).dtype() == kBool);
  CHECK(bits(any(x, 1)) == std::vector<int>{1, 1});          // the NaN makes row 0 true
  CHECK(bits(all(x, 1)) == std::vector<int>{0, 0});
  CHECK(bits(all(x, 0)) == std::vector<int>{0, 0, 1});
  CHECK(bits(any(x, -2)) == std::vector<int>{0, 1, 1});
  CHECK(any(x, 1, true).sizes() == Dims{2, 1});
  CHECK(all(x, -1, true).sizes() == Dims{2, 1});
  CHECK(bits(x.any(0)) == bits(any(x, 0)));
  CHECK(x.all().item<bool>() == all(x).item<bool>());
  CHECK(x.any().item<bool>());
  CHECK(bits(x.all(1, true)) == std::vector<int>{0, 0});
  // Every dtype, including bool and integers.
  const Tensor ints = from_vector<int64_t>({0, 0, 7, 1}, Dims{2, 2});
  CHECK(bits(any(ints, 1)) == std::vector<int>{0, 1});
  CHECK(bits(all(ints, 1)) == std::vector<int>{0, 1});
  CHECK(bits(all(to_dtype(ints, kInt32), 0)) == std::vector<int>{0, 0});
  CHECK(bits(any(to_dtype(ints, kBool), 0)) == std::vector<int>{1, 1});
  CHECK(bits(all(to_dtype(ints, kBFloat16), 1)) == std::vector<int>{0, 1});
  // Empty: any of nothing is false, all of nothing is true, as PyTorch's.
  CHECK(!any(zeros({0})).item<bool>());
  CHECK(all(zeros({0})).item<bool>());
  CHECK(bits(any(zeros({2, 0}), 1)) == std::vector<int>{0, 0});
  CHECK(bits(all(zeros({2, 0}), 1)) == std::vector<int>{1, 1});
  CHECK(any(zeros({0, 3}), 1).sizes() == Dims{0});
  // 0-d inputs accept dim 0 and -1.
  CHECK(all(scalar_tensor(2.0), -1).item<bool>());
}

TEST_CASE("any and all refuse a dim out of range, naming the op, the dim, the rank and the line") {
  const Tensor x = zeros({2, 3});
  const int line = __LINE__ + 1;
  const std::string message = error_of([&] { (void)any(x, 2); });
  CHECK(message.find("any: dim 2 is out of range for a tensor of rank 2") != std::string::npos);
  CHECK(names_line(message, line));
  CHECK(error_of([&] { (void)x.all(-3); }).find("all: dim -3 is out of range") != std::string::npos);
}

TEST_CASE("count_nonzero counts NaN and not -0.0, over all dims or some, as int64") {
  const Tensor x = floats({0.0, -0.0, kNaN, 1.0, 0.0, -kInf}, kFloat64, {2, 3});
  CHECK(count_nonzero(x).dtype() == kInt64);
  CHECK(count_nonzero(x).item<int64_t>() == 3);
  CHECK(count_nonzero(x, {1}).to_vector<int64_t>() == std::vector<int64_t>{1, 2});
  CHECK(count_nonzero(x, {-2}).to_vector<int64_t>() == std::vector<int64_t>{1, 0, 2});
  CHECK(x.count_nonzero({0, 1}).item<int64_t>() == 3);
  CHECK(count_nonzero(from_vector<int64_t>({0, 3, -1})).item<int64_t>() == 2);
  CHECK(count_nonzero(zeros({0})).item<int64_t>() == 0);
  CHECK(error_of([&] { (void)count_nonzero(x, {2}); }).find("count_nonzero: dim 2 is out of range") !=
        std::string::npos);
}

TEST_CASE("the value tests, logical ops, any, all, prod and the running reductions have CUDA kernels in a CUDA build") {
#ifdef EMBER_HAS_CUDA
  const Device cuda0{DeviceType::CUDA, 0};
  for (const char* name : {"isnan", "isinf", "isfinite", "logical_not", "logical_and", "logical_or", "logical_xor",
                           "any", "all", "prod", "cumsum", "cumprod", "cummax", "cummin", "logcumsumexp"}) {
    CAPTURE(name);
    CHECK(static_cast<bool>(registry().get(name).kernel_for(cuda0)));
  }
#else
  CHECK_FALSE(static_cast<bool>(registry().get("isnan").kernel_for(Device{DeviceType::CUDA, 0})));
#endif
}

}  // namespace test_logical_ops
