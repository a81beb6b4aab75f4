// Loss fusion (graph/loss_fusion.cpp): cross_entropy and its backward become one
// cross_entropy_with_backward node whose two outputs have the bits of the pair; a backward whose
// grad is computed from the loss, one after an in-place op, or one with other attributes, stays
// separate; a compiled training step ends up with the fused node and trains bit for bit as eager
// does.
#include <doctest/doctest.h>

#include "capture_util.h"
#include "graph/compile.h"
#include "graph/passes.h"
#include "graph_test_util.h"

namespace test_loss_fusion {

using namespace ember;
using namespace ember::graph;
using graph_test::capture_one;
using graph_test::replay_one;

namespace {

struct Classifier {
  Tensor weight, bias, target;
  Classifier() {
    manual_seed(31);
    weight = randn({6, 4}).requires_grad_();
    bias = randn({6});
    target = from_vector<int64_t>({5, 0, 3, 3, 1});
  }
  // The loss plus the weight's gradient, as one value that depends on both outputs of the pair.
  Tensor step(const Tensor& input, CrossEntropyOptions options, bool gradient_from_loss = false) {
    weight.set_grad(Tensor());
    Tensor loss = cross_entropy(linear(input, weight, bias), target, options);
    const Tensor seed = options.reduction == Reduction::None ? ones_like(loss) : ones({});
    loss.backward(gradient_from_loss ? mul(loss.detach(), 2.0) : seed);
    return add(loss.sum(), weight.grad().sum());
  }
};

}  // namespace

TEST_CASE("loss fusion: cross_entropy and its backward become one node with the pair's bits") {
  Classifier model;
  manual_seed(32);
  const Tensor input = randn({5, 4});
  for (Reduction reduction : {Reduction::Mean, Reduction::Sum, Reduction::None}) {
    for (double smoothing : {0.0, 0.2}) {
      INFO("reduction " << static_cast<int>(reduction) << " smoothing " << smoothing);
      const CrossEntropyOptions options{.reduction = reduction, .ignore_index = 3, .label_smoothing = smoothing};
      auto fn = [&](const Tensor& in) { return model.step(in, options); };
      Graph graph = capture_one(fn, input);
      fold_constants(graph);  // backward()'s seed gradient becomes a constant, as in compile()
      REQUIRE(graph.count_op("cross_entropy_backward") == 1);
      std::vector<std::string> notes;
      CHECK(fuse_loss_backward(graph, &notes) == 1);
      verify(graph);
      CHECK(graph.count_op("cross_entropy") == 0);
      CHECK(graph.count_op("cross_entropy_backward") == 0);
      CHECK(graph.count_op("cross_entropy_with_backward") == 1);
      REQUIRE(notes.size() == 1);
      CHECK(notes[0].find("into cross_entropy_with_backward") != std::string::npos);
      CHECK(graph_test::bit_equal(replay_one(graph, input), fn(input)));
    }
  }
}

TEST_CASE("loss fusion: a gradient computed from the loss, an in-place op between, other attributes: no fusion") {
  Classifier model;
  manual_seed(33);
  const Tensor input = randn({5, 4});
  const CrossEntropyOptions per_row{.reduction = Reduction::None};
  Graph from_loss = capture_one([&](const Tensor& in) { return model.step(in, per_row, true); }, input);
  fold_constants(from_loss);
  std::vector<std::string> notes;
  CHECK(fuse_loss_backward(from_loss, &notes) == 0);
  CHECK(from_loss.count_op("cross_entropy_backward") == 1);
  REQUIRE(notes.size() == 1);
  CHECK(notes[0].find("is computed after it") != std::string::npos);
  CHECK(graph_test::bit_equal(replay_one(from_loss, input), model.step(input, per_row, true)));

  // An in-place op between the loss and its backward keeps them apart (conservatively: it could
  // write the logits' buffer through a view, which the value ids would not show).
  Tensor counter = zeros({1});
  Graph written = capture_one([&](const Tensor& in) {
    model.weight.set_grad(Tensor());
    Tensor loss = cross_entropy(linear(in, model.weight, model.bias), model.target);
    counter.mul_(2.0);
    loss.backward();
    return add(loss, model.weight.grad().sum());
  }, input);
  fold_constants(written);
  notes.clear();
  CHECK(fuse_loss_backward(written, &notes) == 0);
  REQUIRE(notes.size() == 1);
  CHECK(notes[0].find("runs before its backward") != std::string::npos);

  // A cross_entropy whose attributes differ from the backward's is not its forward.
  Graph mixed = capture_one([&](const Tensor& in) {
    const Tensor logits = linear(in, model.weight, model.bias);
    const Tensor other = cross_entropy(logits, model.target, {.reduction = Reduction::Sum});
    model.weight.set_grad(Tensor());
    cross_entropy(logits, model.target).backward();
    return add(other, model.weight.grad().sum());
  }, input);
  fold_constants(mixed);
  CHECK(fuse_loss_backward(mixed) == 1);  // the mean loss pairs with its backward, the sum stays
  verify(mixed);
  CHECK(mixed.count_op("cross_entropy") == 1);
  CHECK(mixed.count_op("cross_entropy_with_backward") == 1);
}

TEST_CASE("loss fusion: a compiled training step runs the fused node and trains as eager does") {
  auto make = [] {
    manual_seed(34);
    return nn::Sequential(nn::Linear(8, 16), nn::ReLU(), nn::Linear(16, 5));
  };
  nn::Sequential eager_model = make(), compiled_model = make();
  optim::Adam eager_opt(eager_model->parameters(), {.lr = 1e-2});
  optim::Adam compiled_opt(compiled_model->parameters(), {.lr = 1e-2});
  auto run = [](nn::Sequential& model, optim::Adam& opt, const Tensor& x, const Tensor& y) {
    opt.zero_grad();
    Tensor loss = cross_entropy(model->forward(x), y, {.label_smoothing = 0.1});
    loss.backward();
    opt.step();
    return loss;
  };
  auto train_step = ember::compile(
      [&](const Tensor& x, const Tensor& y) { return run(compiled_model, compiled_opt, x, y); }, {.fullgraph = true});
  for (int step = 0; step < 20; ++step) {
    manual_seed(600 + static_cast<uint64_t>(step));
    const Tensor x = randn({12, 8});
    const Tensor y = randint(0, 5, {12});
    INFO("step " << step);
    CHECK(graph_test::bit_equal(run(eager_model, eager_opt, x, y), train_step(x, y)));
  }
  REQUIRE(train_step.state().graph() != nullptr);
  CHECK(train_step.state().graph()->count_op("cross_entropy_with_backward") == 1);
  CHECK(train_step.state().graph()->count_op("cross_entropy_backward") == 0);
  const std::vector<Tensor> expected = eager_model->parameters(), actual = compiled_model->parameters();
  for (size_t i = 0; i < expected.size(); ++i) CHECK(graph_test::bit_equal(expected[i], actual[i]));
}

}  // namespace test_loss_fusion
