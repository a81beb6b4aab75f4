// Pointwise math against PyTorch 2.x's rules where ember once differed: signed zeros through the
// float kernels. Expected values come from C's <cmath> in double (what PyTorch's kernels call).
#include <cmath>
#include <string>
#include <vector>

#include "kernels/fast_math.h"
#include "pointwise_test_util.h"

using namespace pointwise_test;

// C's log1p (and so PyTorch's, on the CPU through Sleef and on CUDA through log1pf) keeps the sign
// of a zero: log1p(-0.0) is -0.0, so 1 / log1p(x) keeps its sign at -0.0. Enough elements to reach
// the vectorized loop as well as its tail.
TEST_CASE("log1p keeps the sign of a zero in every floating dtype") {
  std::vector<double> values(37, -0.0);
  for (size_t i = 0; i < values.size(); i += 2) values[i] = 0.0;
  for (DType dtype : {kFloat32, kFloat64, kBFloat16, kFloat16}) {
    const std::vector<double> result = values_of(ember::log1p(tensor_from(values, {37}, dtype)));
    const std::string name(dtype_name(dtype));
    for (size_t i = 0; i < values.size(); ++i) {
      CAPTURE(name);
      CAPTURE(i);
      CHECK(result[i] == 0.0);
      CHECK(std::signbit(result[i]) == std::signbit(std::log1p(values[i])));
    }
  }
  CHECK(std::signbit(ember::fn::math::log1p_float(-0.0f)));
  CHECK_FALSE(std::signbit(ember::fn::math::log1p_float(0.0f)));
}
