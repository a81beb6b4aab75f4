// Review tests of the registry ops hardtanh, hardswish, hardsigmoid, mish and log_sigmoid and their
// backward ops (runtime/ops/activation_more_ops.cpp) against PyTorch 2.x: F.hardtanh's refusal of
// crossed bounds, the piecewise-linear ops' float32 rounding against PyTorch's CPU formulas
// evaluated in float, hardtanh's bounds (NaN, infinities, doubles float cannot hold), log_sigmoid's
// precision far above 0, and the backward ops with broadcast and mixed-dtype operands.
#include <doctest/doctest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "error_of.h"
#include "finite_difference.h"
#include "runtime/ember.h"

using namespace ember;
using namespace ember::testing;
namespace F = ember::nn::functional;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

}  // namespace

TEST_CASE("F::hardtanh refuses min_val > max_val as torch.nn.functional.hardtanh does, the op clamps") {
  // torch/nn/functional.py (PyTorch 2.3 on): `if min_val > max_val: raise ValueError("min_val cannot be
  // greater than max_val")`, before the dtype is looked at. Equal bounds pass, and so does a NaN bound
  // (the comparison is false); aten::hardtanh itself has clamp's values for any bounds.
  const Tensor x = doubles({-5.0, 0.0, 5.0});
  const int line = __LINE__ + 1;
  const std::string crossed = error_of([&] { F::hardtanh(x, 1.0, -1.0); });
  check_refusal(crossed, "hardtanh: min_val cannot be greater than max_val, got min_val = 1 and max_val = -1", line);
  const int integer_line = __LINE__ + 1;
  const std::string integer_crossed = error_of([&] { F::hardtanh(from_vector<int64_t>({-5, 5}), 2.5, 0.5); });
  check_refusal(integer_crossed, "min_val = 2.5 and max_val = 0.5", integer_line);
  CHECK(values_of(F::hardtanh(x, 0.5, 0.5)) == std::vector<double>{0.5, 0.5, 0.5});
  CHECK(std::isnan(values_of(F::hardtanh(x, kNaN, 1.0))[1]));
  const Attrs crossed_bounds{{"min_val", 1.0}, {"max_val", -1.0}};
  CHECK(values_of(dispatch_one(lookup_op("hardtanh"), {x}, crossed_bounds)) == std::vector<double>{-1.0, -1.0, -1.0});
}
