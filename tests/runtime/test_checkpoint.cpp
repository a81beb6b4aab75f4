// utils::checkpoint against the same code without it: equal gradients (float64, bit for bit: the
// recomputation runs the same kernels), fewer bytes held between forward and backward, dropout's
// masks drawn again identically, and the generators left where the un-checkpointed run leaves them.
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "runtime/ember.h"

namespace test_checkpoint {

using namespace ember;

namespace {

struct Block {
  nn::Linear first{8, 16, {.dtype = kFloat64}};
  nn::Linear second{16, 8, {.dtype = kFloat64}};
  double dropout = 0.0;
  int calls = 0;
  Tensor forward(const Tensor& x) {
    ++calls;
    Tensor h = tanh(first->forward(x));
    if (dropout > 0) h = nn::functional::dropout(h, dropout, /*training=*/true);
    return mul(second->forward(h), sigmoid(x));
  }
  std::vector<Tensor> parameters() const { return {first->weight, first->bias, second->weight, second->bias}; }
};

Tensor input(uint64_t seed) {
  manual_seed(seed);
  return randn({5, 8}, {.dtype = kFloat64}).requires_grad_();
}

// x's and every parameter's gradient of sum(block(x)^2), with or without checkpoint.
std::vector<std::vector<double>> gradients(Block& block, const Tensor& x, bool checkpointed) {
  Tensor(x).set_grad(Tensor());
  for (Tensor p : block.parameters()) p.set_grad(Tensor());
  const auto body = [&](const Tensor& in) { return block.forward(in); };
  const Tensor out = checkpointed ? utils::checkpoint(body, x) : body(x);
  mul(out, out).sum().backward();
  std::vector<std::vector<double>> grads{x.grad().to_vector<double>()};
  for (const Tensor& p : block.parameters()) grads.push_back(p.grad().to_vector<double>());
  return grads;
}

}  // namespace

TEST_CASE("checkpoint: gradients of the input and the parameters equal those without it, bit for bit") {
  manual_seed(3);
  Block block;
  const Tensor x = input(4);
  const std::vector<std::vector<double>> plain = gradients(block, x, false);
  block.calls = 0;
  const std::vector<std::vector<double>> checkpointed = gradients(block, x, true);
  CHECK(block.calls == 2);  // the forward, and one recomputation for the whole backward
  REQUIRE(plain.size() == checkpointed.size());
  for (size_t i = 0; i < plain.size(); ++i) {
    INFO("gradient ", i);
    CHECK(plain[i] == checkpointed[i]);
  }
}

TEST_CASE("checkpoint: the function's activations are not held between its forward and backward") {
  manual_seed(5);
  const Tensor x = randn({256, 256}).requires_grad_();
  const auto chain = [](const Tensor& in) {  // each tanh saves its output: 8 activations of 256 KiB
    Tensor h = in;
    for (int i = 0; i < 8; ++i) h = tanh(h);
    return h;
  };
  const auto held_after_forward = [&](bool checkpointed) {
    const int64_t before = memory_stats(kCPU).allocated_bytes;
    const Tensor out = checkpointed ? utils::checkpoint(chain, x) : chain(x);
    const int64_t held = memory_stats(kCPU).allocated_bytes - before;
    out.sum().backward();
    return held;
  };
  const int64_t plain = held_after_forward(false);
  const int64_t checkpointed = held_after_forward(true);
  const int64_t activation = 256 * 256 * 4;
  CHECK(plain >= 8 * activation);         // every tanh's output
  CHECK(checkpointed <= 1 * activation);  // only the result
  Tensor(x).set_grad(Tensor());
  const Tensor expected = [&] {
    chain(x).sum().backward();
    return x.grad().clone();
  }();
  Tensor(x).set_grad(Tensor());
  utils::checkpoint(chain, x).sum().backward();
  CHECK(x.grad().to_vector<float>() == expected.to_vector<float>());
}

TEST_CASE("checkpoint: dropout draws the same mask again, and the generator ends where it would have") {
  manual_seed(6);
  Block block;
  block.dropout = 0.5;
  const Tensor x = input(7);
  manual_seed(8);
  const std::vector<std::vector<double>> plain = gradients(block, x, false);
  const double next_plain = rand({1}, {.dtype = kFloat64}).item();
  manual_seed(8);
  const std::vector<std::vector<double>> checkpointed = gradients(block, x, true);
  const double next_checkpointed = rand({1}, {.dtype = kFloat64}).item();
  for (size_t i = 0; i < plain.size(); ++i) {
    INFO("gradient ", i);
    CHECK(plain[i] == checkpointed[i]);
  }
  CHECK(next_plain == next_checkpointed);  // the recomputation's draws were given back

  // Without preserve_rng_state the recomputation draws other masks: the gradient is not the plain one.
  manual_seed(8);
  Tensor(x).set_grad(Tensor());
  const Tensor out =
      utils::checkpoint([&](const Tensor& in) { return block.forward(in); }, x, {.preserve_rng_state = false});
  mul(out, out).sum().backward();
  CHECK(x.grad().to_vector<double>() != plain[0]);
}

TEST_CASE("checkpoint: autograd::grad, create_graph and a retained graph see the recomputed tensors") {
  manual_seed(9);
  const Tensor x = randn({6}, {.dtype = kFloat64}).requires_grad_();
  int calls = 0;
  const auto cube_of_tanh = [&](const Tensor& in) {
    ++calls;
    const Tensor t = tanh(in);
    return mul(mul(t, t), t);
  };
  const auto second_derivative = [&](bool checkpointed) {
    const Tensor y = (checkpointed ? utils::checkpoint(cube_of_tanh, x) : cube_of_tanh(x)).sum();
    const Tensor dy = autograd::grad({y}, {x}, {}, /*retain_graph=*/true, /*create_graph=*/true)[0];
    const Tensor again = autograd::grad({y}, {x}, {}, /*retain_graph=*/true)[0];  // the retained graph
    CHECK(again.to_vector<double>() == dy.to_vector<double>());
    const Tensor d2y = autograd::grad({dy.sum()}, {x})[0];
    return std::vector<std::vector<double>>{dy.to_vector<double>(), d2y.to_vector<double>()};
  };
  const auto plain = second_derivative(false);
  calls = 0;
  const auto checkpointed = second_derivative(true);
  CHECK(calls == 2);  // recomputed once for all three backward passes
  CHECK(plain == checkpointed);
  // Against the closed form: d/dx tanh^3 = 3 t^2 (1 - t^2).
  const std::vector<double> values = x.to_vector<double>();
  for (size_t i = 0; i < values.size(); ++i) {
    const double t = std::tanh(values[i]);
    CHECK(checkpointed[0][i] == doctest::Approx(3 * t * t * (1 - t * t)).epsilon(1e-12));
  }
}

TEST_CASE("checkpoint: without grad mode the function just runs, once") {
  int calls = 0;
  const Tensor x = ones({3}).requires_grad_();
  const NoGradGuard no_grad;
  const Tensor y = utils::checkpoint(
      [&](const Tensor& in) {
        ++calls;
        return mul(in, 2.0);
      },
      x);
  CHECK(calls == 1);
  CHECK_FALSE(y.requires_grad());
  CHECK(y.to_vector<float>() == std::vector<float>{2.0f, 2.0f, 2.0f});
}

TEST_CASE("checkpoint: a recomputed tensor is freed once its node has run, as the plain run frees it") {
  manual_seed(10);
  const Tensor x = randn({256, 256}).requires_grad_();
  const int64_t activation = 256 * 256 * 4;
  // Halfway through the chain's backward, a hook reads what is allocated: the plain run holds the
  // four outputs still to be differentiated (each tanh saves its output); a checkpointed one must
  // not hold the four recomputed outputs whose nodes already ran on top of those.
  const auto held_halfway = [&](bool checkpointed) {
    int64_t held = -1;
    const auto chain = [&](const Tensor& in) {
      Tensor h = in;
      for (int i = 0; i < 8; ++i) {
        h = tanh(h);
        if (i == 3) h.register_hook([&](const Tensor&) { held = memory_stats(kCPU).allocated_bytes; });
      }
      return h;
    };
    const int64_t before = memory_stats(kCPU).allocated_bytes;
    (checkpointed ? utils::checkpoint(chain, x) : chain(x)).sum().backward();
    Tensor(x).set_grad(Tensor());
    return held - before;
  };
  const int64_t plain = held_halfway(false);
  const int64_t checkpointed = held_halfway(true);
  INFO("plain ", plain, " checkpointed ", checkpointed);
  CHECK(plain > 0);
  CHECK(checkpointed <= plain + activation);
}

}  // namespace test_checkpoint
