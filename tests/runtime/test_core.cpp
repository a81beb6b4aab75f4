// Core tensor, dispatcher and autograd behaviour.
#include <doctest/doctest.h>

#include "runtime/ember.h"

using namespace ember;

TEST_CASE("add broadcasts and backpropagates to both inputs") {
  Tensor a = from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3}).requires_grad_();
  Tensor b = from_vector<float>({10, 20, 30}, {3}).requires_grad_();
  Tensor c = add(a, b, 2.0);
  CHECK(c.to_vector<float>() == std::vector<float>{21, 42, 63, 24, 45, 66});
  c.sum().backward();
  CHECK(a.grad().to_vector<float>() == std::vector<float>(6, 1.0f));
  CHECK(b.grad().to_vector<float>() == std::vector<float>{4, 4, 4});
}
