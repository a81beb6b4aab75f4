// Code the engine runs during backward() that calls back into autograd: hooks that record ops on
// their own leaf, run a backward of their own or register more hooks, and threads that read one
// shared view's history at once after its base was updated in place (weight tying trained by
// several threads). Each once deadlocked, freed a hook while it ran, or corrupted the heap.
#include <doctest/doctest.h>

#include <atomic>
#include <barrier>
#include <thread>
#include <vector>

#include "runtime/ember.h"

namespace test_autograd_reentry {

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

TEST_CASE("autograd: a hook that registers another hook on its tensor runs safely, the new one next time") {
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

TEST_CASE("autograd: threads reading a shared view's stale history remake it once, correctly") {
  // wt = base.t() kept across steps (tied weights); an in-place update of base between steps makes
  // wt's history stale, and every thread's next reader of it finds it so at the same moment. Most
  // steps only read the history (the race window is widest then); every 50th runs backward.
  constexpr int kThreads = 4;
  constexpr int kSteps = 100000;
  constexpr int kBackwardEvery = 500;
  Tensor w = ones({4, 4}, {.dtype = kFloat64}).requires_grad_();
  Tensor base = mul(w, 1.0);
  Tensor wt = base.t();
  const Tensor x = ones({2, 4}, {.dtype = kFloat64});
  std::barrier sync(kThreads + 1);
  std::atomic<int> wrong{0};
  auto worker = [&] {
    for (int step = 0; step < kSteps; ++step) {
      sync.arrive_and_wait();
      if (step % kBackwardEvery == kBackwardEvery - 1) {
        matmul(x, wt).sum().backward(Tensor(), /*retain_graph=*/true);  // d/dw sum(x w^T) = 2 per element
      } else if (!wt.requires_grad()) {
        ++wrong;  // counted, not CHECKed: an assertion per step would slow the race to a crawl
      }
      sync.arrive_and_wait();
    }
  };
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) threads.emplace_back(worker);
  for (int step = 0; step < kSteps; ++step) {
    {
      NoGradGuard no_grad;
      base.mul_(1.0);  // an update of the base: bumps its version, wt's history is stale
    }
    sync.arrive_and_wait();
    sync.arrive_and_wait();
  }
  for (std::thread& thread : threads) thread.join();
  CHECK(wrong == 0);
  CHECK(w.grad().to_vector<double>() == std::vector<double>(16, 2.0 * kThreads * (kSteps / kBackwardEvery)));
}

}  // namespace test_autograd_reentry
