// The autograd engine's contract with its callers, as PyTorch's: backward() from several threads
// sharing a leaf accumulates every gradient, a seed of another dtype is cast to the root's, and a
// leaf that stopped requiring grad after the graph was built receives nothing.
#include <doctest/doctest.h>

#include <thread>
#include <vector>

#include "runtime/ember.h"

namespace test_autograd_engine {

using namespace ember;

TEST_CASE("autograd: backward from two threads sharing a leaf accumulates every gradient") {
  // Each backward adds 1 per element; a lost update or a torn accumulator shows in the total.
  constexpr int kCalls = 1000;
  for (int round = 0; round < 3; ++round) {
    INFO("round ", round);
    const Tensor weight = ones({256}, {.dtype = kFloat64, .requires_grad = true});
    auto train = [&] {
      for (int call = 0; call < kCalls; ++call) mul(weight, 1.0).sum().backward();
    };
    std::thread first(train), second(train);
    first.join();
    second.join();
    CHECK(weight.grad().sum().item() == 256.0 * 2 * kCalls);
  }
}

TEST_CASE("autograd: a seed of another dtype is cast to the root's, so a leaf's .grad keeps its dtype") {
  Tensor leaf = ones({3}, {.requires_grad = true});
  leaf.backward(full({3}, 2.0, {.dtype = kFloat64}));
  REQUIRE(leaf.grad().defined());
  CHECK(leaf.grad().dtype() == kFloat32);
  CHECK(leaf.grad().to_vector<float>() == std::vector<float>(3, 2.0f));
  optim::SGD optimizer({leaf}, {.lr = 0.5});
  optimizer.step();  // refused a float64 gradient for a float32 parameter before
  CHECK(leaf.to_vector<float>() == std::vector<float>(3, 0.0f));

  const Tensor x = ones({2}, {.dtype = kFloat64, .requires_grad = true});
  mul(x, 3.0).backward(ones({2}, {.dtype = kFloat32}));
  CHECK(x.grad().dtype() == kFloat64);
  CHECK(x.grad().to_vector<double>() == std::vector<double>{3.0, 3.0});
}

TEST_CASE("autograd: a leaf that stops requiring grad after the graph was built gets no gradient") {
  for (const bool by_detach : {false, true}) {
    INFO((by_detach ? "detach_()" : "requires_grad_(false)"));
    Tensor x = ones({3}, {.requires_grad = true});
    const Tensor other = ones({3}, {.requires_grad = true});
    const Tensor loss = add(mul(x, 2.0), other).sum();
    if (by_detach) {
      x.detach_();
    } else {
      x.requires_grad_(false);
    }
    loss.backward();
    CHECK_FALSE(x.grad().defined());
    CHECK(other.grad().to_vector<float>() == std::vector<float>(3, 1.0f));  // the rest of the graph ran
  }
}

}  // namespace test_autograd_engine
