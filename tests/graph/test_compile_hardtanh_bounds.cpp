// hardtanh and hardtanh_backward compiled with bounds a careless codegen would spell wrong (NaN,
// the infinities, equal and crossed bounds, doubles float cannot hold): the fused kernels construct
// fn::Clamp and fn::HardtanhBackward from the attributes (graph/fusion_ops.cpp) and must equal the
// eager kernels bit for bit, NaN and -0 included, in float32, bfloat16 and float64.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "graph/compile.h"
#include "graph/fusion.h"
#include "runtime/ember.h"

namespace test_compile_hardtanh_bounds {

using namespace ember;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// Same dtype, shape and bytes: NaN payloads and the sign of zero count.
bool same_bytes(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.sizes() == b.sizes() &&
         std::memcmp(a.contiguous().raw_data_ptr(), b.contiguous().raw_data_ptr(), a.nbytes()) == 0;
}

// hardtanh (the registry op: crossed bounds are the op's, F::hardtanh refuses them) of x plus scale,
// and x's gradient for the weights scale + 0.5 times scale: each op feeds a neighbour, so the forward
// and hardtanh_backward each run inside a fused group.
Tensor values_and_gradient(const Tensor& x, const Tensor& scale, const Attrs& bounds) {
  static const OpDef& hardtanh = lookup_op("hardtanh");
  const Tensor leaf = x.detach().requires_grad_();
  const Tensor y = dispatch_one(hardtanh, {leaf}, bounds);
  sum(mul(y, add(scale, 0.5))).backward();
  return cat({add(y, scale), mul(leaf.grad(), scale)}, 0);
}

}  // namespace

TEST_CASE("compile: hardtanh and its backward with NaN, infinite, equal, crossed and inexact bounds equal eager") {
  const std::vector<double> points = {-kInf, -3.0, -1.0, -0.5, -0.0, 0.0, 0.1, 0.3, 0.5, 1.0, 6.0, kInf, kNaN, -1e30};
  const std::vector<std::pair<double, double>> bounds = {{kNaN, 1.0}, {-1.0, kNaN}, {-kInf, kInf}, {-kInf, -kInf},
                                                         {0.5, 0.5},  {1.0, -1.0},  {-0.1, 0.3},   {0.0, 6.0}};
  const int64_t count = static_cast<int64_t>(points.size());
  for (DType dtype : {kFloat32, kBFloat16, kFloat64}) {
    for (const auto& [low, high] : bounds) {
      INFO(std::string(dtype_name(dtype)), " min_val ", low, " max_val ", high);
      const Attrs attrs{{"min_val", low}, {"max_val", high}};
      auto compiled =
          ember::compile([&](const Tensor& x, const Tensor& scale) { return values_and_gradient(x, scale, attrs); },
                         {.fullgraph = true, .fuse = true});
      const Tensor x = from_vector<double>(points, {count}, {.dtype = kFloat64}).to(dtype);
      for (int call = 0; call < 4; ++call) {  // two eager calls, then replays
        INFO("call ", call);
        const Tensor scale = full({count}, 1.0 + call, {.dtype = dtype});
        CHECK(same_bytes(compiled(x, scale), values_and_gradient(x, scale, attrs)));
      }
      // Both ops ran inside fused kernels, not as their eager kernels.
      REQUIRE(compiled.state().graph() != nullptr);
      CHECK(compiled.state().graph()->count_op("hardtanh") == 0);
      CHECK(compiled.state().graph()->count_op("hardtanh_backward") == 0);
      CHECK(compiled.state().replays() == 2);
    }
  }
}

}  // namespace test_compile_hardtanh_bounds
