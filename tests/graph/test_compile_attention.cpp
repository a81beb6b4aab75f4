// ember::compile of a training step through scaled_dot_product_attention, the multi-class margin
// losses, cosine_similarity, normalize and the less common math ops: captured whole (fullgraph:
// none of them reads values under a capture), fused where pointwise, and equal to eager step by
// step; integer fmod and remainder too, whose zero-divisor check reads nothing a capture records.
#include <doctest/doctest.h>

#include <memory>

#include "graph/compile.h"
#include "fusion_test_util.h"
#include "runtime/nn/nn.h"
#include "runtime/optim/sgd.h"

namespace test_compile_attention {

using namespace ember;

namespace {

struct Attender {
  nn::Linear query{nullptr}, key{nullptr}, value{nullptr}, head{nullptr};
  std::unique_ptr<optim::SGD> optimizer;

  Attender() {
    manual_seed(81);
    query = nn::Linear(6, 8);
    key = nn::Linear(6, 8);
    value = nn::Linear(6, 8);
    head = nn::Linear(8, 4);
    std::vector<Tensor> parameters;
    for (nn::Linear* layer : {&query, &key, &value, &head})
      for (const Tensor& parameter : (*layer)->parameters()) parameters.push_back(parameter);
    optimizer = std::make_unique<optim::SGD>(parameters, optim::SGDOptions{.lr = 0.05});
  }

  // x [B, T, 6], classes [B * T] in [0, 4).
  Tensor step(const Tensor& x, const Tensor& classes) {
    optimizer->zero_grad();
    const Tensor attended = scaled_dot_product_attention(query(x), key(x), value(x), {}, 0.0, true);
    const Tensor logits = head(normalize(attended, 2.0, -1)).reshape({-1, 4});
    const Tensor columns = arange(4.0, {.dtype = kInt64}).reshape({1, 4});
    const Tensor listed = ember::where(eq(columns, scalar_tensor(0.0, {.dtype = kInt64})), classes.unsqueeze(1),
                                       scalar_tensor(-1.0, {.dtype = kInt64}));
    const Tensor shifted = ember::remainder(logits, 0.75);
    std::vector<Tensor> terms{
        multi_margin_loss(logits, classes, {.p = 2, .margin = 0.5}),
        multilabel_margin_loss(logits, listed),
        mean(cosine_similarity(logits, ember::atan2(logits, add(abs(logits), 1.0)))),
        mul(mean(add(ember::tan(mul(logits, 0.1)), ember::asinh(logits))), 0.01),
        mul(mean(mul(shifted, shifted)), 0.1),
    };
    Tensor loss = terms[0];
    for (size_t i = 1; i < terms.size(); ++i) loss = add(loss, terms[i]);
    loss.backward();
    optimizer->step();
    return loss.detach();
  }
};

}  // namespace

TEST_CASE("compile: a training step through attention and the new losses, captured whole, equals eager") {
  Attender eager, compiled;
  auto train_step = ember::compile(
      [&](const Tensor& x, const Tensor& classes) { return compiled.step(x, classes); }, {.fullgraph = true});
  for (int step = 0; step < 8; ++step) {
    INFO("step ", step);
    manual_seed(800 + static_cast<uint64_t>(step));
    const Tensor x = randn({2, 5, 6});
    const Tensor classes = randint(0, 4, {10});
    const Tensor compiled_loss = train_step(x, classes);
    const Tensor eager_loss = eager.step(x, classes);
    CHECK(std::isfinite(eager_loss.item()));
    CHECK(graph_test::max_relative_error(compiled_loss, eager_loss) <= 1e-5);
  }
  CHECK(train_step.state().replays() == 6);
  graph_test::check_same_values(compiled.optimizer->param_groups()[0].params,
                                eager.optimizer->param_groups()[0].params);
}

TEST_CASE("compile: integer fmod and remainder capture whole, and a replay still refuses a zero divisor") {
  auto function = ember::compile(
      [](const Tensor& a, const Tensor& b) { return add(ember::remainder(ember::fmod(a, b), b), 1.0); },
      {.fullgraph = true});
  const Tensor a = from_vector<int64_t>({7, -7, 9}), b = from_vector<int64_t>({3, -3, 4});
  for (int call = 0; call < 4; ++call) {
    INFO("call ", call);
    const Tensor result = function(a, b);
    CHECK(result.dtype() == kInt64);
    CHECK(result.to_vector<int64_t>() == std::vector<int64_t>{2, 0, 2});
  }
  CHECK(function.state().replays() == 2);
  CHECK_THROWS_WITH_AS(function(a, from_vector<int64_t>({3, 0, 4})),
                       doctest::Contains("fmod: integer division by zero"), Error);
}

}  // namespace test_compile_attention
