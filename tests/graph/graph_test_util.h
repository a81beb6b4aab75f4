// Shared by the graph tests: the seed MLP (Linear(100,256)-ReLU-Linear(256,10), cross entropy,
// Adam) and an MLP of any widths, with deterministic weights and batches, and helpers comparing
// tensors exactly.
#pragma once

#include <doctest/doctest.h>

#include <vector>

#include "runtime/ember.h"

namespace ember::graph_test {

// An MLP with ReLU between Linear layers and Adam: the seed and wide reference models.
struct Mlp {
  nn::Sequential model;
  std::unique_ptr<optim::Adam> optimizer;

  Mlp(uint64_t seed, const std::vector<int64_t>& widths, Device device = kCPU, double lr = 1e-3) {
    manual_seed(seed);
    for (size_t i = 0; i + 1 < widths.size(); ++i) {
      model->push_back(nn::Linear(widths[i], widths[i + 1]));
      if (i + 2 < widths.size()) model->push_back(nn::ReLU());
    }
    model->to(device);
    optimizer = std::make_unique<optim::Adam>(model->parameters(), optim::AdamOptions{.lr = lr});
  }
  // One eager training step, exactly what a compiled function of it runs.
  Tensor step(const Tensor& x, const Tensor& y) {
    optimizer->zero_grad();
    Tensor loss = nn::functional::cross_entropy(model->forward(x), y);
    loss.backward();
    optimizer->step();
    return loss;
  }
};

// The seed model: Linear(100,256)-ReLU-Linear(256,10).
struct SeedMlp : Mlp {
  explicit SeedMlp(uint64_t seed, double lr = 1e-3) : Mlp(seed, {100, 256, 10}, kCPU, lr) {}
};

// Batch `index` of a fixed synthetic data set: x ~ N(0, 1), labels in 0..9.
inline std::pair<Tensor, Tensor> batch(int index, int64_t size = 32) {
  manual_seed(1000 + static_cast<uint64_t>(index));
  return {randn({size, 100}), randint(0, 10, {size})};
}

inline bool bit_equal(const Tensor& a, const Tensor& b) {
  if (a.sizes() != b.sizes() || a.dtype() != b.dtype()) return false;
  const std::vector<float> left = a.contiguous().to_vector<float>();
  const std::vector<float> right = b.contiguous().to_vector<float>();
  return left == right;
}

// Parameters, their .grad and Adam's state (step, both moments) equal bit for bit.
inline void check_same_state(Mlp& eager, Mlp& compiled) {
  const std::vector<Tensor> expected = eager.model->parameters();
  const std::vector<Tensor> actual = compiled.model->parameters();
  REQUIRE(expected.size() == actual.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    CHECK(bit_equal(expected[i], actual[i]));
    CHECK(bit_equal(expected[i].grad(), actual[i].grad()));
    const auto* eager_state = eager.optimizer->state(expected[i]);
    const auto* compiled_state = compiled.optimizer->state(actual[i]);
    REQUIRE(eager_state != nullptr);
    REQUIRE(compiled_state != nullptr);
    CHECK(eager_state->step == compiled_state->step);
    CHECK(bit_equal(eager_state->exp_avg, compiled_state->exp_avg));
    CHECK(bit_equal(eager_state->exp_avg_sq, compiled_state->exp_avg_sq));
  }
}

}  // namespace ember::graph_test
