// register_hook / remove_hook edge cases libtorch handles: an empty observer (a hook returning
// nothing) is refused when registered, not at backward, and a leaf's hooks, which it keeps while
// it does not require grad, can be removed then too, and a hook a leaf's earlier hook removes during
// backward does not run.
#include <doctest/doctest.h>

#include <functional>
#include <string>
#include <vector>

#include "error_of.h"
#include "runtime/ember.h"

namespace test_hook_removal_review {

using namespace ember;
using ember::testing::error_of;
using ember::testing::names_line;

TEST_CASE("register_hook refuses an empty observer at registration, naming the caller's line") {
  Tensor x = full({2}, 1.5, {.dtype = kFloat64}).requires_grad_();
  const std::function<void(const Tensor&)> empty_observer;
  void (*const null_observer)(const Tensor&) = nullptr;
  const int line = __LINE__ + 1;
  const std::string message = error_of([&] { x.register_hook(empty_observer); });
  CHECK(message.find("register_hook: the hook is empty") != std::string::npos);
  CHECK(names_line(message, line));
  CHECK(error_of([&] { x.register_hook(null_observer); }).find("the hook is empty") != std::string::npos);
  // Nothing was registered: the next hook gets position 0, and backward runs (an empty observer
  // left behind threw std::bad_function_call there).
  CHECK(x.register_hook([](const Tensor& grad) { return mul(grad, 2.0); }) == 0);
  mul(x, x).sum().backward();
  CHECK(x.grad().to_vector<double>() == std::vector<double>{6.0, 6.0});  // 2 * (2 x)
}

TEST_CASE("remove_hook takes a hook off a leaf that stopped requiring grad, which keeps its hooks") {
  Tensor x = full({2}, 1.5, {.dtype = kFloat64}).requires_grad_();
  const unsigned scaled = x.register_hook([](const Tensor& grad) { return mul(grad, 5.0); });
  x.requires_grad_(false);
  x.remove_hook(scaled);  // libtorch's remove_hook does not ask for requires_grad
  x.requires_grad_(true);
  mul(x, x).sum().backward();
  CHECK(x.grad().to_vector<double>() == std::vector<double>{3.0, 3.0});  // 2 x, not scaled by 5
  // Still refused: a position such a leaf never had, and any position of a tensor without hooks.
  x.requires_grad_(false);
  CHECK(error_of([&] { x.remove_hook(1); }).find("no hook at position 1") != std::string::npos);
  CHECK(error_of([] { ones({2}).remove_hook(0); }).find("does not require grad") != std::string::npos);
}

TEST_CASE("a leaf's hook may remove a later hook of the leaf during backward, which then does not run") {
  // As on a non-leaf, and as libtorch's, whose hooks run from the live list and skip an emptied slot.
  Tensor x = full({2}, 1.5, {.dtype = kFloat64}).requires_grad_();
  unsigned later = 0;
  x.register_hook([&](const Tensor& grad) {
    x.remove_hook(later);
    return grad;
  });
  later = x.register_hook([](const Tensor& grad) { return mul(grad, 7.0); });
  mul(x, x).sum().backward();
  CHECK(x.grad().to_vector<double>() == std::vector<double>{3.0, 3.0});  // 2 x, not 7 * 2 x
}

}  // namespace test_hook_removal_review
