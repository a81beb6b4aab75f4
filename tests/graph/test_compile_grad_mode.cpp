// ember::compile and grad mode set inside fn: a function that enables grad itself (AutoGradMode)
// returns results with autograd history also when called under a NoGradGuard, as in eager mode,
// and the caller's backward() through a replay's result fills the same gradients.
#include <doctest/doctest.h>

#include "graph/compile.h"
#include "graph_test_util.h"

namespace test_compile_grad_mode {

using namespace ember;
using graph_test::bit_equal;

namespace {

Tensor loss_with_grad_enabled(const Tensor& x, const Tensor& w) {
  const AutoGradMode enabled(true);
  return sum(tanh(mm(x, w)));
}

}  // namespace

TEST_CASE("compile: fn enabling grad itself under the caller's NoGradGuard returns results with history") {
  manual_seed(6);
  const Tensor w_eager = randn({4, 3}).requires_grad_();
  const Tensor w_compiled = w_eager.detach().clone().requires_grad_();
  auto loss_of = ember::compile([&](const Tensor& x) { return loss_with_grad_enabled(x, w_compiled); },
                                {.fullgraph = true});
  for (int call = 0; call < 5; ++call) {
    INFO("call ", call);
    manual_seed(600 + static_cast<uint64_t>(call));
    const Tensor x = randn({2, 4});
    Tensor actual, expected;
    {
      const NoGradGuard caller_without_grad;
      actual = loss_of(x);
      expected = loss_with_grad_enabled(x, w_eager);
    }
    CHECK(bit_equal(actual, expected));
    REQUIRE(expected.requires_grad());
    REQUIRE(actual.requires_grad());
    actual.backward();
    expected.backward();
    CHECK(bit_equal(w_compiled.grad(), w_eager.grad()));
  }
  CHECK(loss_of.state().captures_made() == 1);
  CHECK(loss_of.state().replays() == 3);
}

}  // namespace test_compile_grad_mode
