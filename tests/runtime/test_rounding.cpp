// floor, ceil, round and trunc against PyTorch's values where they decide something: halves (round
// goes to even), the sign of zero results, NaN and the infinities, integers (passed through
// unchanged, dtype kept), bool (refused), 16-bit floats, and the zero gradient.
#include <cmath>
#include <cstdint>
#include <limits>

#include "error_of.h"
#include "pointwise_test_util.h"

namespace test_rounding {

using namespace pointwise_test;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// torch.floor/ceil/round/trunc of these, in float32 and float64 alike (all are exact there).
const std::vector<double> kInputs = {0.5, 1.5, 2.5, -0.5, -2.5, -0.3, 0.7, -1.7, -0.0, 1e20, kNaN, kInf, -kInf};

}  // namespace

TEST_CASE("floor, ceil, round and trunc give torch's values: halves to even, signed zeros, NaN and inf") {
  for (DType dtype : {kFloat32, kFloat64, kBFloat16, kFloat16}) {
    INFO(dtype_name(dtype));
    // 1e20 is beyond float16's range: there it is inf, which every op keeps.
    const double big = dtype == kFloat16 ? kInf : values_of(tensor_from({1e20}, {1}, dtype))[0];
    const Tensor x = tensor_from(kInputs, {static_cast<int64_t>(kInputs.size())}, dtype);
    check_same(values_of(ember::floor(x)), {0, 1, 2, -1, -3, -1, 0, -2, -0.0, big, kNaN, kInf, -kInf}, "floor");
    check_same(values_of(ember::ceil(x)), {1, 2, 3, -0.0, -2, -0.0, 1, -1, -0.0, big, kNaN, kInf, -kInf}, "ceil");
    check_same(values_of(ember::round(x)), {0, 2, 2, -0.0, -2, -0.0, 1, -2, -0.0, big, kNaN, kInf, -kInf}, "round");
    check_same(values_of(ember::trunc(x)), {0, 1, 2, -0.0, -2, -0.0, 0, -1, -0.0, big, kNaN, kInf, -kInf}, "trunc");
    CHECK(ember::round(x).dtype() == dtype);
  }
  // The largest float below 0.5 rounds down (adding 0.5 and flooring would give 1).
  check_same(values_of(ember::round(tensor_from({0.49999997}, {1}, kFloat32))), {0.0}, "round(0.49999997f)");
}

TEST_CASE("floor, ceil, round and trunc pass integers through unchanged and refuse bool") {
  constexpr int64_t kLargest = std::numeric_limits<int64_t>::max();
  const Tensor int64s = from_vector<int64_t>({kLargest, -7, 0, std::numeric_limits<int64_t>::min()});
  const Tensor int32s = from_vector<int32_t>({std::numeric_limits<int32_t>::max(), -7, 3});
  for (auto* op : {&ember::floor, &ember::ceil, &ember::round, &ember::trunc}) {
    const Tensor a = op(int64s, Where::current());
    CHECK(a.dtype() == kInt64);
    CHECK(a.to_vector<int64_t>() == int64s.to_vector<int64_t>());
    const Tensor b = op(int32s, Where::current());
    CHECK(b.dtype() == kInt32);
    CHECK(b.to_vector<int32_t>() == int32s.to_vector<int32_t>());
  }
  const std::string message = ember::testing::error_of([] { ember::floor(from_vector<bool>({true, false})); });
  CHECK(message.find("floor: bool tensors are not supported (shape [2])") != std::string::npos);
  CHECK(message.find("test_rounding.cpp") != std::string::npos);
}

TEST_CASE("floor, ceil, round and trunc have a zero gradient, also at their jumps") {
  for (auto* op : {&ember::floor, &ember::ceil, &ember::round, &ember::trunc}) {
    const Tensor x = tensor_from({0.5, 1.0, -1.3, 2.5}, {4}).requires_grad_();
    sum(mul(op(x, Where::current()), 3.0)).backward();
    check_same(values_of(x.grad()), {0.0, 0.0, 0.0, 0.0}, "gradient");
  }
}

}  // namespace test_rounding
