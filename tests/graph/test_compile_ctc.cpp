// ember::compile of a training step through ctc_loss (runtime/functional_losses_ctc.cpp): its
// lengths are used as tensors, never read on the host under a capture, so the step captures whole
// (fullgraph) with the lengths as graph inputs; replays with other lengths equal eager step by
// step. The host-lengths overload captures its lengths as constants, as any host value in fn.
#include <doctest/doctest.h>

#include <cmath>
#include <memory>
#include <vector>

#include "graph/compile.h"
#include "fusion_test_util.h"
#include "runtime/nn/nn.h"
#include "runtime/optim/sgd.h"

namespace test_compile_ctc {

using namespace ember;

namespace {

constexpr int64_t kTime = 6, kBatch = 3, kFeatures = 4, kClasses = 5;

struct Recognizer {
  nn::Linear head{nullptr};
  std::unique_ptr<optim::SGD> optimizer;

  Recognizer() {
    manual_seed(91);
    head = nn::Linear(kFeatures, kClasses);
    optimizer = std::make_unique<optim::SGD>(head->parameters(), optim::SGDOptions{.lr = 0.1});
  }

  Tensor finish(const Tensor& loss) {
    loss.backward();
    optimizer->step();
    return loss.detach();
  }

  // x [T, N, F]; targets [N, 3] padded, classes in [1, C).
  Tensor step(const Tensor& x, const Tensor& targets, const Tensor& input_lengths, const Tensor& target_lengths) {
    optimizer->zero_grad();
    return finish(ctc_loss(log_softmax(head(x), 2), targets, input_lengths, target_lengths));
  }

  Tensor step_with_host_lengths(const Tensor& x, const Tensor& targets) {
    optimizer->zero_grad();
    return finish(ctc_loss(log_softmax(head(x), 2), targets, std::vector<int64_t>{6, 5, 4}, {3, 2, 1},
                           {.reduction = Reduction::Sum}));
  }
};

struct Inputs {
  Tensor x, targets, input_lengths, target_lengths;
};

Inputs inputs_of(int step) {
  manual_seed(900 + static_cast<uint64_t>(step));
  return {randn({kTime, kBatch, kFeatures}), randint(1, kClasses, {kBatch, 3}),
          from_vector<int64_t>({kTime, 5 - step % 2, 4 + step % 3}),
          from_vector<int64_t>({3, 2 - step % 2, 1 + step % 2})};
}

void check_same_parameters(Recognizer& compiled, Recognizer& eager) {
  graph_test::check_same_values(compiled.head->parameters(), eager.head->parameters());
}

}  // namespace

TEST_CASE("compile: a training step through ctc_loss captures whole and equals eager as its lengths change") {
  Recognizer eager, compiled;
  auto train_step = ember::compile(
      [&](const Tensor& x, const Tensor& targets, const Tensor& input_lengths, const Tensor& target_lengths) {
        return compiled.step(x, targets, input_lengths, target_lengths);
      },
      {.fullgraph = true});
  for (int step = 0; step < 8; ++step) {
    INFO("step ", step);
    const Inputs in = inputs_of(step);
    const Tensor compiled_loss = train_step(in.x, in.targets, in.input_lengths, in.target_lengths);
    const Tensor eager_loss = eager.step(in.x, in.targets, in.input_lengths, in.target_lengths);
    CHECK(std::isfinite(eager_loss.item()));
    CHECK(graph_test::max_relative_error(compiled_loss, eager_loss) <= 1e-5);
  }
  CHECK(train_step.state().replays() == 6);
  check_same_parameters(compiled, eager);
}

TEST_CASE("compile: ctc_loss with host lengths captures them as constants and equals eager") {
  Recognizer eager, compiled;
  auto train_step = ember::compile(
      [&](const Tensor& x, const Tensor& targets) { return compiled.step_with_host_lengths(x, targets); },
      {.fullgraph = true});
  for (int step = 0; step < 6; ++step) {
    INFO("step ", step);
    const Inputs in = inputs_of(step);
    const Tensor compiled_loss = train_step(in.x, in.targets);
    const Tensor eager_loss = eager.step_with_host_lengths(in.x, in.targets);
    CHECK(std::isfinite(eager_loss.item()));
    CHECK(graph_test::max_relative_error(compiled_loss, eager_loss) <= 1e-5);
  }
  CHECK(train_step.state().replays() == 4);
  check_same_parameters(compiled, eager);
}

TEST_CASE("compile: ctc_loss with concatenated targets, unread under capture, equals eager in value and gradient") {
  // Under a capture the lengths are not read, so the concatenated targets are spread over the
  // widest shape they allow (every target in one sequence) and the recursion runs all T steps.
  const auto loss_and_gradient = [](const Tensor& logits, const Tensor& targets, const Tensor& input_lengths,
                                    const Tensor& target_lengths) {
    Tensor leaf = logits.detach().requires_grad_();
    const Tensor losses = ctc_loss(log_softmax(leaf, 2), targets, input_lengths, target_lengths,
                                   {.reduction = Reduction::None});
    sum(losses).backward();
    return std::vector<Tensor>{losses.detach(), leaf.grad()};
  };
  auto compiled = ember::compile(
      [&](const Tensor& logits, const Tensor& targets, const Tensor& input_lengths, const Tensor& target_lengths) {
        const std::vector<Tensor> results = loss_and_gradient(logits, targets, input_lengths, target_lengths);
        return cat({results[0], results[1].reshape({-1})}, 0);
      },
      {.fullgraph = true});
  for (int call = 0; call < 4; ++call) {
    INFO("call ", call);
    manual_seed(950 + static_cast<uint64_t>(call));
    const Tensor logits = randn({kTime, kBatch, kClasses});
    // Sequence 1's target is empty on odd calls; the lengths add up to the 4 targets.
    const Tensor targets = randint(1, kClasses, {4});
    const Tensor input_lengths = from_vector<int64_t>({kTime, 4, 5 - call % 2});
    const Tensor target_lengths = call % 2 == 0 ? from_vector<int64_t>({2, 1, 1}) : from_vector<int64_t>({3, 0, 1});
    const std::vector<Tensor> eager = loss_and_gradient(logits, targets, input_lengths, target_lengths);
    const Tensor expected = cat({eager[0], eager[1].reshape({-1})}, 0);
    CHECK(std::isfinite(sum(eager[0]).item()));
    CHECK(eager[1].abs().sum().item() > 0.0);
    CHECK(graph_test::max_relative_error(compiled(logits, targets, input_lengths, target_lengths), expected) <= 1e-5);
  }
  CHECK(compiled.state().replays() == 2);
}

}  // namespace test_compile_ctc
