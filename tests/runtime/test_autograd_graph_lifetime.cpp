// An autograd graph that is dropped without a backward pass: a running total of losses kept
// without detach() builds one node per step, and freeing that chain must not recurse once per
// node (200,000 nested destructors overflow an 8 MiB stack). Every node must still be freed.
#include <doctest/doctest.h>

#include <memory>

#include "runtime/autograd/node.h"
#include "runtime/ember.h"

namespace test_autograd_graph_lifetime {

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

TEST_CASE("autograd: a chain of 200,000 views of views is freed without deep recursion") {
  // Each view made in grad mode holds its parent (to remake its history): the chain is freed in a
  // loop, and the base goes with it.
  std::weak_ptr<TensorImpl> base_alive;
  {
    Tensor base = zeros({kChainLength + 2}, {.device = kCPU});
    base_alive = base.impl_ptr();
    Tensor rest = base;
    for (int i = 0; i < kChainLength; ++i) rest = rest.slice(0, 1, rest.size(0));
    base = Tensor();
    CHECK(rest.size(0) == 2);
    CHECK_FALSE(base_alive.expired());
  }
  CHECK(base_alive.expired());
}

TEST_CASE("autograd: the history of a view 100,000 views deep is remade in a loop after its base changes") {
  const Tensor x = ones({4}, {.device = kCPU}).requires_grad_();
  Tensor base = mul(x, 1.0);  // a non-leaf: its views take their history from it
  Tensor view = base;
  constexpr int kDepth = 100000;
  for (int i = 0; i < kDepth; ++i) view = view.view({2, 2}).view({4});
  base.mul_(2.0);  // every view in the chain is now stale
  sum(view).backward();
  CHECK(x.grad().to_vector<float>() == std::vector<float>(4, 2.0f));
}

}  // namespace test_autograd_graph_lifetime
