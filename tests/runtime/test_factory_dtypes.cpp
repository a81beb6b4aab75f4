// Which dtype a factory picks when options name none, as libtorch does: from_vector keeps the
// values' type (an int64 id above 2^24 must not pass through float32), randint gives int64, arange
// gives int64 over integral bounds; options that name only a device do not change that.
#include <doctest/doctest.h>

#include <cstdint>
#include <vector>

#include "runtime/ember.h"

namespace test_factory_dtypes {

using namespace ember;

namespace {
const TensorOptions kOnCpu{.device = kCPU};
}  // namespace

TEST_CASE("from_vector keeps the values' dtype unless options name one") {
  const std::vector<int64_t> ids{(int64_t{1} << 53) + 1, -7, 3};
  for (const Tensor& tensor : {from_vector(ids), from_vector(ids, {3}), from_vector(ids, {3}, kOnCpu)}) {
    CHECK(tensor.dtype() == kInt64);
    CHECK(tensor.to_vector<int64_t>() == ids);  // exact: no float on the way
  }
  const std::vector<double> values{0.1, 1e300};
  CHECK(from_vector(values, {2}, kOnCpu).dtype() == kFloat64);
  CHECK(from_vector(values, {2}, kOnCpu).to_vector<double>() == values);
  CHECK(from_vector(std::vector<bool>{true, false}, {2}, kOnCpu).dtype() == kBool);
  CHECK(from_vector(std::vector<BFloat16>{BFloat16(1.5f)}, {1}, kOnCpu).dtype() == kBFloat16);
  // Named, the dtype converts.
  const Tensor as_float = from_vector(values, {2}, {.dtype = kFloat32, .device = kCPU});
  CHECK(as_float.dtype() == kFloat32);
  CHECK(as_float.to_vector<float>() == std::vector<float>{0.1f, INFINITY});
}

TEST_CASE("randint gives int64 and arange over integral bounds int64, also with options for the device only") {
  CHECK(randint(0, 10, {4}).dtype() == kInt64);
  CHECK(randint(0, 10, {4}, kOnCpu).dtype() == kInt64);
  CHECK(randint(0, 10, {4}, {.dtype = kInt32, .device = kCPU}).dtype() == kInt32);
  CHECK(arange(5.0, kOnCpu).dtype() == kInt64);
  CHECK(arange(0.0, 5.0, 1.0, kOnCpu).to_vector<int64_t>() == std::vector<int64_t>{0, 1, 2, 3, 4});
  CHECK(arange(0.0, 2.0, 0.5, kOnCpu).dtype() == kFloat32);
  CHECK(arange(0.0, 5.0, 1.0, {.dtype = kFloat64, .device = kCPU}).dtype() == kFloat64);
  // The rest keep float32.
  CHECK(zeros({2}, kOnCpu).dtype() == kFloat32);
  CHECK(randn({2}, kOnCpu).dtype() == kFloat32);
  CHECK(linspace(0.0, 1.0, 3, kOnCpu).dtype() == kFloat32);
  CHECK(full({2}, 3.0, kOnCpu).dtype() == kFloat32);
}

}  // namespace test_factory_dtypes
