// Autocast and the composites on PyTorch's float32 lists (logsumexp, norm, kl_div, the binary
// cross entropies): with no OpDef to carry a policy, they cast their bf16/fp16 inputs to float32
// themselves, so every step runs in float32 (PyTorch's autocast computes them in float32), and
// gradients return to the 16-bit leaves through the recorded casts.
#include <doctest/doctest.h>

#include <functional>
#include <string>

#include "numeric_check.h"

namespace test_autocast_composites {

using namespace ember;
using namespace ember::testing;

namespace {

bool same_values(const Tensor& a, const Tensor& b) {
  return a.sizes() == b.sizes() && a.dtype() == b.dtype() && values_of(a) == values_of(b);
}

// x: values in (0, 1), which every composite takes (binary_cross_entropy's input must be one).
using Composite = std::function<Tensor(const Tensor& x, const Tensor& probabilities, const Tensor& weight)>;

Tensor unit_values(uint32_t seed) { return sigmoid(random_tensor({6, 5}, seed, kFloat32)); }

const std::vector<std::pair<std::string, Composite>>& composites() {
  static const std::vector<std::pair<std::string, Composite>> list = {
      {"logsumexp", [](const Tensor& x, const Tensor&, const Tensor&) { return logsumexp(x, {1}); }},
      {"norm", [](const Tensor& x, const Tensor&, const Tensor&) { return norm(x); }},
      {"norm p=3 dim 1", [](const Tensor& x, const Tensor&, const Tensor&) { return norm(x, 3.0, {1}); }},
      {"kl_div", [](const Tensor& x, const Tensor& p, const Tensor&) { return kl_div(x, p); }},
      {"kl_div log_target",
       [](const Tensor& x, const Tensor& p, const Tensor&) { return kl_div(x, log(p), Reduction::Sum, true); }},
      {"binary_cross_entropy_with_logits",
       [](const Tensor& x, const Tensor& p, const Tensor& w) {
         return binary_cross_entropy_with_logits(x, p, w, Reduction::Mean, w);
       }},
      {"binary_cross_entropy",
       [](const Tensor& x, const Tensor& p, const Tensor& w) { return binary_cross_entropy(x, p, w); }},
  };
  return list;
}

}  // namespace

TEST_CASE("autocast: composites on the float32 list equal their float32 computation bit for bit") {
  for (DType dtype : {kBFloat16, kFloat16}) {
    const Tensor x = unit_values(41).to(dtype);
    const Tensor probabilities = unit_values(42).to(dtype);
    const Tensor weight = abs(random_tensor({6, 5}, 43, kFloat32)).to(dtype);
    const auto f32 = [](const Tensor& t) { return t.to(kFloat32); };
    for (const auto& [name, composite] : composites()) {
      INFO("dtype ", dtype, ", ", name);
      Tensor result;
      {
        AutocastGuard autocast(dtype);
        result = composite(x, probabilities, weight);
      }
      CHECK(result.dtype() == kFloat32);
      CHECK(same_values(result, composite(f32(x), f32(probabilities), f32(weight))));
    }
  }
}

TEST_CASE("autocast: a float16 norm past float16's range is float32 and finite, as PyTorch's") {
  // with torch.autocast("cuda", dtype=torch.float16): torch.full((4,), 300., dtype=torch.float16).norm()
  // is 600. in float32.
  const Tensor x = full({4}, 300.0, {.dtype = kFloat16});
  AutocastGuard autocast(kFloat16);
  const Tensor result = norm(x);
  CHECK(result.dtype() == kFloat32);
  CHECK(result.item() == 600.0);
}

TEST_CASE("autocast: gradients of the float32-list composites reach 16-bit leaves in their dtype") {
  for (const auto& [name, composite] : composites()) {
    INFO(name);
    const Tensor values = unit_values(44);
    const Tensor probabilities = unit_values(45);
    const Tensor weight = abs(random_tensor({6, 5}, 46, kFloat32));
    const Tensor x16 = values.to(kBFloat16).requires_grad_();
    {
      AutocastGuard autocast(kBFloat16);
      sum(composite(x16, probabilities.to(kBFloat16), weight.to(kBFloat16))).backward();
    }
    const Tensor x32 = values.to(kBFloat16).to(kFloat32).requires_grad_();
    sum(composite(x32, probabilities.to(kBFloat16).to(kFloat32), weight.to(kBFloat16).to(kFloat32))).backward();
    REQUIRE(x16.grad().defined());
    CHECK(x16.grad().dtype() == kBFloat16);
    CHECK(values_of(x16.grad()) == values_of(x32.grad().to(kBFloat16)));
  }
}

}  // namespace test_autocast_composites
