// An autograd graph that is dropped without a backward pass: a running total of losses kept
// without detach() builds one node per step, and freeing that chain must not recurse once per
// node (200,000 nested destructors overflow an 8 MiB stack). Every node must still be freed.
#include <doctest/doctest.h>

#include <memory>

#include "runtime/autograd/node.h"
#include "runtime/ember.h"

using namespace ember;

namespace {

constexpr int kChainLength = 200000;

}  // namespace

TEST_CASE("autograd: a chain of 200,000 nodes dropped without backward is freed without deep recursion") {
  const Tensor x = ones({1}, {.device = kCPU}).requires_grad_();
  for (const bool saves_inputs : {false, true}) {
    INFO((saves_inputs ? "mul (saves its inputs)" : "add"));
    std::weak_ptr<autograd::Node> first, last;
    {
      Tensor total = zeros({1}, {.device = kCPU});
      for (int i = 0; i < kChainLength; ++i) {
        total = saves_inputs ? mul(total, x) : add(total, x);
        if (i == 0) first = total.grad_fn();
      }
      last = total.grad_fn();
      CHECK_FALSE(first.expired());
    }
    CHECK(last.expired());
    CHECK(first.expired());
  }
  // The leaf still works as one: a backward after the chains are gone.
  Tensor loss = sum(mul(x, 3.0));
  loss.backward();
  CHECK(x.grad().item() == 3.0);
}

TEST_CASE("autograd: a node freed while freeing another chain leaves the rest of both intact") {
  // Two chains sharing their first half: dropping one must free only its own second half.
  const Tensor x = ones({1}, {.device = kCPU}).requires_grad_();
  Tensor shared = zeros({1}, {.device = kCPU});
  for (int i = 0; i < 1000; ++i) shared = add(shared, x);
  Tensor a = shared, b = shared;
  for (int i = 0; i < 1000; ++i) {
    a = mul(a, 1.0);
    b = add(b, x);
  }
  std::weak_ptr<autograd::Node> shared_node = shared.grad_fn();
  shared = Tensor();
  a = Tensor();
  CHECK_FALSE(shared_node.expired());  // b still reaches it
  sum(b).backward();
  CHECK(x.grad().item() == 2000.0);
  b = Tensor();
  CHECK(shared_node.expired());
}
