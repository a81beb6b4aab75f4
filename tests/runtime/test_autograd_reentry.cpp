// Code the engine runs during backward() that calls back into autograd: hooks that record ops on
// their own leaf, run a backward of their own or register more hooks. Each once deadlocked or
// freed a hook while it ran.
#include <doctest/doctest.h>

#include <thread>
#include <vector>

#include "runtime/ember.h"

using namespace ember;

TEST_CASE("autograd: a leaf's hook may record ops on its own leaf and run a backward through it") {
  Tensor x = full({2}, 3.0, {.dtype = kFloat64}).requires_grad_();
  Tensor inner_grad;
  bool entered = false;
  x.register_hook([&](const Tensor& grad) {
    if (!entered) {  // the inner backward reaches this hook too
      entered = true;
      const AutoGradMode recording(true);  // backward runs hooks with grad mode off, as PyTorch's
      Tensor other = full({2}, 5.0, {.dtype = kFloat64}).requires_grad_();
      mul(x, other).sum().backward();  // x gets 5, doubled by this hook to 10
      inner_grad = other.grad().clone();
    }
    return mul(grad, 2.0);
  });
  mul(x, 4.0).sum().backward();  // x gets 4, doubled to 8, after the inner 10
  REQUIRE(inner_grad.defined());
  CHECK(inner_grad.to_vector<double>() == std::vector<double>{3.0, 3.0});  // d/d other sum(x * other) = x
  CHECK(x.grad().to_vector<double>() == std::vector<double>{18.0, 18.0});
}

TEST_CASE("autograd: a hook that registers another hook on its tensor runs safely; the new one from the next backward") {
  for (const bool leaf : {true, false}) {
    INFO("hook on a ", (leaf ? "leaf" : "non-leaf"));
    Tensor x = ones({3}, {.dtype = kFloat64}).requires_grad_();
    Tensor hooked = leaf ? x : mul(x, 1.0);
    int first_runs = 0, later_runs = 0;
    // Each run registers more hooks than the list has room for, so a loop over the list itself
    // would read a moved-from element.
    hooked.register_hook([&](const Tensor& grad) {
      ++first_runs;
      for (int i = 0; i < 8; ++i)
        hooked.register_hook([&](const Tensor& g) {
          ++later_runs;
          return g;
        });
      return mul(grad, 2.0);
    });
    mul(hooked, 1.0).sum().backward(Tensor(), /*retain_graph=*/true);
    CHECK(first_runs == 1);
    CHECK(later_runs == 0);
    CHECK(x.grad().to_vector<double>() == std::vector<double>(3, 2.0));
    mul(hooked, 1.0).sum().backward();
    CHECK(first_runs == 2);
    CHECK(later_runs == 8);
    CHECK(x.grad().to_vector<double>() == std::vector<double>(3, 4.0));
  }
}
