// Tensor::register_hook's position and remove_hook, as libtorch's: a removed hook stops running,
// every other position stays valid, a hook may only observe (return nothing), and a non-leaf's
// positions belong to its current version.
#include <doctest/doctest.h>

#include <functional>
#include <string>
#include <vector>

#include "error_of.h"
#include "runtime/ember.h"

namespace test_hook_removal {

using namespace ember;
using ember::testing::error_of;
using ember::testing::names_line;

namespace {

// x's gradient of sum(4 x) through `hooked` (x itself, or a non-leaf x * 1).
std::vector<double> gradient_through(const Tensor& x, const Tensor& hooked) {
  mul(hooked, 4.0).sum().backward();
  std::vector<double> grad = x.grad().to_vector<double>();
  Tensor(x).set_grad(Tensor());
  return grad;
}

}  // namespace

TEST_CASE("register_hook returns each hook's position and remove_hook stops only that hook") {
  for (const bool leaf : {true, false}) {
    INFO("hooks on a ", (leaf ? "leaf" : "non-leaf"));
    Tensor x = ones({2}, {.dtype = kFloat64}).requires_grad_();
    Tensor hooked = leaf ? x : mul(x, 1.0);
    const unsigned doubled = hooked.register_hook([](const Tensor& grad) { return mul(grad, 2.0); });
    const unsigned tripled = hooked.register_hook([](const Tensor& grad) { return mul(grad, 3.0); });
    const unsigned plus_one = hooked.register_hook([](const Tensor& grad) { return add(grad, 1.0); });
    CHECK(doubled == 0);
    CHECK(tripled == 1);
    CHECK(plus_one == 2);
    CHECK(gradient_through(x, hooked) == std::vector<double>{25.0, 25.0});  // (4 * 2 * 3) + 1
    hooked.remove_hook(tripled);
    CHECK(gradient_through(x, hooked) == std::vector<double>{9.0, 9.0});  // the others still run, in order
    hooked.remove_hook(tripled);                                          // again: nothing changes, as libtorch's
    hooked.remove_hook(doubled);
    CHECK(gradient_through(x, hooked) == std::vector<double>{5.0, 5.0});
    CHECK(hooked.register_hook([](const Tensor& grad) { return mul(grad, 10.0); }) == 3);  // never reused
    CHECK(gradient_through(x, hooked) == std::vector<double>{50.0, 50.0});
  }
}

TEST_CASE("a hook that returns nothing observes the gradient and leaves it as it was") {
  Tensor x = full({3}, 2.0, {.dtype = kFloat64}).requires_grad_();
  std::vector<double> seen;
  const unsigned position = x.register_hook([&](const Tensor& grad) { seen = grad.to_vector<double>(); });
  CHECK(gradient_through(x, x) == std::vector<double>{4.0, 4.0, 4.0});
  CHECK(seen == std::vector<double>{4.0, 4.0, 4.0});
  x.remove_hook(position);
  seen.clear();
  gradient_through(x, x);
  CHECK(seen.empty());
}

TEST_CASE("remove_hook refuses a position the tensor never had, naming it and the count") {
  Tensor x = ones({2}, {.dtype = kFloat64}).requires_grad_();
  x.register_hook([](const Tensor&) {});
  const int line = __LINE__ + 1;
  const std::string unknown = error_of([&] { x.remove_hook(1); });
  CHECK(unknown.find("remove_hook: no hook at position 1") != std::string::npos);
  CHECK(unknown.find("has had 1 hooks") != std::string::npos);
  CHECK(names_line(unknown, line));
  const std::string no_grad = error_of([] { ones({2}).remove_hook(0); });
  CHECK(no_grad.find("does not require grad") != std::string::npos);
  const std::string empty = error_of([&] { x.register_hook(GradHook()); });
  CHECK(empty.find("register_hook: the hook is empty") != std::string::npos);
  CHECK(gradient_through(x, x) == std::vector<double>{4.0, 4.0});  // the refusals lost nothing
}

TEST_CASE("a non-leaf's positions belong to its version: after an in-place op it starts a new list") {
  Tensor x = ones({2}, {.dtype = kFloat64}).requires_grad_();
  Tensor y = mul(x, 1.0);
  const unsigned old_hook = y.register_hook([](const Tensor& grad) { return mul(grad, 3.0); });
  y.mul_(2.0);
  // The old version's hook still shapes that version's gradient (PyTorch's hooks stay behind).
  const std::string gone = error_of([&] { y.remove_hook(old_hook); });
  CHECK(gone.find("no hook at position 0") != std::string::npos);
  CHECK(gone.find("since its last in-place update") != std::string::npos);
  const unsigned new_hook = y.register_hook([](const Tensor& grad) { return mul(grad, 5.0); });
  CHECK(new_hook == 0);
  CHECK(gradient_through(x, y) == std::vector<double>{120.0, 120.0});  // 4 * 5 * 2 * 3
  y.remove_hook(new_hook);
  CHECK(gradient_through(x, y) == std::vector<double>{24.0, 24.0});
}

TEST_CASE("a hook may remove a later hook of its tensor during backward, which then does not run") {
  Tensor x = ones({2}, {.dtype = kFloat64}).requires_grad_();
  Tensor y = mul(x, 1.0);
  unsigned later = 0;
  y.register_hook([&](const Tensor& grad) {
    y.remove_hook(later);
    return grad;
  });
  later = y.register_hook([](const Tensor& grad) { return mul(grad, 7.0); });
  CHECK(gradient_through(x, y) == std::vector<double>{4.0, 4.0});
}

}  // namespace test_hook_removal
