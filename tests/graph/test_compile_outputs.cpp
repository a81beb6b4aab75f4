// ember::compile with several results: a training step returning (loss, logits) as a pair, a
// tuple of three, or a vector; results that are the same tensor twice, an input or a parameter.
// Each replay must return what eager returns, as tensors of the caller's own: a later call must
// not overwrite what an earlier call returned.
#include <doctest/doctest.h>

#include <tuple>

#include "fusion_test_util.h"
#include "graph/compile.h"
#include "runtime/nn/nn.h"
#include "runtime/optim/sgd.h"

namespace test_compile_outputs {

using namespace ember;

namespace {

struct Classifier {
  nn::Sequential layers;
  std::unique_ptr<optim::SGD> optimizer;
  Classifier() {
    manual_seed(31);
    layers = nn::Sequential(nn::Linear(8, 16), nn::ReLU(), nn::Linear(16, 4));
    optimizer = std::make_unique<optim::SGD>(layers->parameters(), optim::SGDOptions{.lr = 0.1, .momentum = 0.5});
  }
  std::pair<Tensor, Tensor> step(const Tensor& x, const Tensor& y) {
    optimizer->zero_grad();
    Tensor logits = layers->forward(x);
    Tensor loss = cross_entropy(logits, y);
    loss.backward();
    optimizer->step();
    return {loss.detach(), logits.detach()};
  }
};

std::pair<Tensor, Tensor> batch(int call) {
  manual_seed(40 + static_cast<uint64_t>(call));
  Tensor x = randn({6, 8});
  Tensor y = randint(0, 4, {6}, {.dtype = kInt64});
  return {x, y};
}

}  // namespace

TEST_CASE("compile: a step returning (loss, logits) replays both, each call's its own") {
  Classifier eager, compiled;
  auto step = ember::compile([&](const Tensor& x, const Tensor& y) { return compiled.step(x, y); },
                             {.fullgraph = true});
  std::vector<std::pair<Tensor, Tensor>> kept, expected;
  for (int call = 0; call < 5; ++call) {
    const auto [x, y] = batch(call);
    kept.push_back(step(x, y));
    expected.push_back(eager.step(x, y));
  }
  for (size_t call = 0; call < kept.size(); ++call) {  // checked after all calls ran
    INFO("call ", call);
    CHECK(graph_test::max_relative_error(kept[call].first, expected[call].first) <= 1e-5);
    CHECK(graph_test::max_relative_error(kept[call].second, expected[call].second) <= 1e-5);
  }
  CHECK(step.state().replays() == 3);
  REQUIRE(step.state().graph() != nullptr);
  CHECK(step.state().graph()->outputs.size() == 2);
}

TEST_CASE("compile: tuples and vectors of results, with repeats, inputs and parameters among them") {
  NoGradGuard no_grad;
  const Tensor w = mul(randn({8, 3}), 0.5);
  auto as_tuple = [&](const Tensor& x) {
    const Tensor h = tanh(mm(x, w));
    return std::make_tuple(sum(h), h, h, x, w);  // h twice, the input, a state tensor
  };
  auto as_vector = [&](const Tensor& x) {
    const Tensor h = sigmoid(mm(x, w));
    return std::vector<Tensor>{mean(h), exp(h)};
  };
  auto tuple_step = ember::compile(as_tuple, {.fullgraph = true});
  auto vector_step = ember::compile(as_vector, {.fullgraph = true});
  std::vector<std::tuple<Tensor, Tensor, Tensor, Tensor, Tensor>> tuples;
  std::vector<std::vector<Tensor>> vectors;
  std::vector<Tensor> inputs;
  for (int call = 0; call < 4; ++call) {
    inputs.push_back(batch(call).first);
    tuples.push_back(tuple_step(inputs.back()));
    vectors.push_back(vector_step(inputs.back()));
  }
  for (size_t call = 0; call < inputs.size(); ++call) {
    INFO("call ", call);
    const auto [total, h, h_again, x, state] = tuples[call];
    const auto [expected_total, expected_h, unused_h, unused_x, unused_w] = as_tuple(inputs[call]);
    CHECK(graph_test::max_relative_error(total, expected_total) <= 1e-6);
    CHECK(graph_test::max_relative_error(h, expected_h) <= 1e-6);
    CHECK(graph_test::max_relative_error(h_again, expected_h) <= 1e-6);
    CHECK(graph_test::max_relative_error(x, inputs[call]) == 0);
    CHECK(graph_test::max_relative_error(state, w) == 0);
    const std::vector<Tensor> expected = as_vector(inputs[call]);
    REQUIRE(vectors[call].size() == 2);
    for (size_t i = 0; i < 2; ++i) CHECK(graph_test::max_relative_error(vectors[call][i], expected[i]) <= 1e-6);
  }
  // Call 2 passes another input while the captured one lives (`inputs` keeps it): it is traced
  // once to learn that fn reads it only as its argument; call 3 replays.
  CHECK(tuple_step.state().replays() == 1);
  CHECK(vector_step.state().replays() == 1);
  CHECK(tuple_step.state().captures() == 1);
}

TEST_CASE("compile: an undefined result is an error naming the function's result") {
  auto step = ember::compile([](const Tensor& x) { return std::make_pair(exp(x), Tensor()); });
  const Tensor x = randn({3});
  (void)step(x);  // the eager warm-up returns what fn returns
  CHECK_THROWS_WITH_AS(step(x), doctest::Contains("compile: the function returned an undefined tensor"), Error);
}

}  // namespace test_compile_outputs
