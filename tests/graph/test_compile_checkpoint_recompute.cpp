// utils::checkpoint inside ember::compile recomputes as eager checkpointing does: the backward's
// recomputation is captured as nodes of its own (not merged back into the forward's by CSE), so
// the compiled step's memory plan frees the checkpointed activations after the forward; random
// ops recomputed there draw the forward's numbers at every replay, not only at the capture; and a
// compiled forward whose backward the caller runs recomputes in its backward graph.
#include <doctest/doctest.h>

#include "compile_autograd_util.h"
#include "fusion_test_util.h"
#include "graph/capture.h"
#include "graph/compile.h"
#include "graph/memory_plan.h"
#include "runtime/ember.h"

namespace test_compile_checkpoint_recompute {

using namespace ember;

namespace {

constexpr int64_t kWidth = 64;
constexpr int64_t kBatch = 256;
constexpr int64_t kActivationBytes = kWidth * kBatch * 4;

constexpr int kBlocks = 3;  // each of three tanh layers

// Three blocks of three tanh layers (tanh saves its output for backward) and a head; with
// `checkpointed` each block runs in a checkpoint of its own, which keeps only the block's output
// through the forward and recomputes the rest when the backward reaches the block. `dropout` adds
// a dropout after the first layer of the first block.
struct Trainer {
  std::vector<nn::Sequential> blocks;
  nn::Linear head{nullptr};
  std::unique_ptr<optim::SGD> optimizer;
  bool checkpointed;
  explicit Trainer(bool checkpointed, bool dropout = false) : checkpointed(checkpointed) {
    manual_seed(17);
    for (int b = 0; b < kBlocks; ++b) {
      nn::Sequential block(nn::Linear(kWidth, kWidth), nn::Tanh());
      if (dropout && b == 0) block->push_back(nn::Dropout(0.3));
      block->push_back(nn::Linear(kWidth, kWidth));
      block->push_back(nn::Tanh());
      block->push_back(nn::Linear(kWidth, kWidth));
      block->push_back(nn::Tanh());
      blocks.push_back(block);
    }
    head = nn::Linear(kWidth, 4);
    optimizer = std::make_unique<optim::SGD>(parameters(), optim::SGDOptions{.lr = 0.05});
  }
  Tensor forward(const Tensor& x) {
    Tensor hidden = x;
    for (nn::Sequential& block : blocks)
      hidden = checkpointed ? utils::checkpoint([&](const Tensor& in) { return block->forward(in); }, hidden)
                            : block->forward(hidden);
    return head->forward(hidden);
  }
  Tensor step(const Tensor& x) {
    optimizer->zero_grad();
    const Tensor out = forward(x);
    Tensor loss = mean(mul(out, out));
    loss.backward();
    optimizer->step();
    return loss.detach();
  }
  std::vector<Tensor> parameters() const {
    std::vector<Tensor> all;
    for (const nn::Sequential& block : blocks)
      for (const Tensor& p : block->parameters()) all.push_back(p);
    for (const Tensor& p : head->parameters()) all.push_back(p);
    return all;
  }
};

Tensor batch(int call) {
  manual_seed(900 + static_cast<uint64_t>(call));
  return randn({kBatch, kWidth});
}

// max |actual - expected| over max |expected|: gradients here are far below 1, where
// max_relative_error's floor of 1 would let a wrong one pass.
double error_to_largest(const Tensor& actual, const Tensor& expected) {
  const double largest = amax(abs(expected.to(kFloat64))).item<double>();
  return amax(abs(sub(actual.to(kFloat64), expected.to(kFloat64)))).item<double>() / largest;
}

// The parameters after a step, and the gradients the step made (an SGD step moves the parameters
// by little, so a wrong gradient would hide in them).
void check_same_parameters(const Trainer& compiled, const Trainer& eager, double tolerance) {
  const std::vector<Tensor> a = compiled.parameters(), b = eager.parameters();
  REQUIRE(a.size() == b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    INFO("parameter ", i);
    CHECK(graph_test::max_relative_error(a[i], b[i]) <= tolerance);
    REQUIRE(a[i].grad().defined());
    CHECK(error_to_largest(a[i].grad(), b[i].grad()) <= 1e-5);
  }
}

// The graph's matrix products (library calls, never fused away), whichever op made them.
int count_gemms(const graph::Graph& graph) {
  int count = 0;
  for (const graph::Node& node : graph.nodes)
    for (const char* gemm : {"linear", "matmul", "mm", "bmm"}) count += node.op->name == gemm;
  return count;
}

int64_t arena_bytes_of(bool checkpointed) {
  Trainer trainer(checkpointed);
  auto step = ember::compile([&](const Tensor& x) { return trainer.step(x); }, {.fullgraph = true});
  for (int call = 0; call < 3; ++call) (void)step(batch(call));
  REQUIRE(step.state().executor() != nullptr);
  REQUIRE(step.state().executor()->memory_plan() != nullptr);
  return step.state().executor()->memory_plan()->arena_bytes;
}

}  // namespace

TEST_CASE("compile: a checkpointed training step recomputes in its backward and matches eager checkpointing") {
  Trainer compiled(true), eager(true), plain(false);
  auto step = ember::compile([&](const Tensor& x) { return compiled.step(x); }, {.fullgraph = true});
  for (int call = 0; call < 5; ++call) {
    INFO("call ", call);
    const Tensor loss = step(batch(call));
    CHECK(graph_test::max_relative_error(loss, eager.step(batch(call))) <= 1e-6);
    CHECK(graph_test::max_relative_error(loss, plain.step(batch(call))) <= 1e-6);
    check_same_parameters(compiled, eager, 1e-6);
  }
  CHECK(step.state().captures() == 1);
  CHECK_FALSE(step.state().fell_back_to_eager());
  // The recomputation is in the graph: the nine checkpointed layers' products once more than a
  // plain step's graph has (none merged back into the forward's).
  Trainer other(false);
  auto plain_step = ember::compile([&](const Tensor& x) { return other.step(x); }, {.fullgraph = true});
  for (int call = 0; call < 3; ++call) (void)plain_step(batch(call));
  REQUIRE(step.state().graph() != nullptr);
  REQUIRE(plain_step.state().graph() != nullptr);
  const int plain_gemms = count_gemms(*plain_step.state().graph());
  INFO(graph::to_text(*step.state().graph()));
  CHECK(plain_gemms >= 10);
  CHECK(count_gemms(*step.state().graph()) == plain_gemms + 9);
}

TEST_CASE("compile: checkpointing frees the checkpointed activations from the compiled step's arena") {
  const int64_t plain = arena_bytes_of(false), checkpointed = arena_bytes_of(true);
  INFO("plain arena ", plain, " bytes, checkpointed ", checkpointed, " bytes");
  // When the backward starts, the plain step holds all nine layers' outputs (tanh saves its
  // result); the checkpointed one holds the three blocks' outputs, and while it recomputes a block
  // that block's three on top: at most six, so at least three activations fewer at the peak.
  CHECK(checkpointed <= plain - 3 * kActivationBytes);
}

TEST_CASE("compile: dropout inside a checkpoint draws the forward's mask again in every replayed backward") {
  // Eager checkpointing gives the recomputation the forward's generator state and then gives it
  // back, so a checkpointed step trains exactly as a plain one. Replays must do the same: if the
  // recomputed dropout drew a new range, its gradient would use another mask than its forward.
  Trainer compiled(true, /*dropout=*/true), eager(false, /*dropout=*/true);
  auto step = ember::compile([&](const Tensor& x) { return compiled.step(x); }, {.fullgraph = true});
  for (int call = 0; call < 6; ++call) {
    INFO("call ", call);
    const Tensor x = batch(call);
    manual_seed(300 + static_cast<uint64_t>(call));
    const Tensor compiled_loss = step(x);
    const Tensor after_compiled = randn({3});  // the generator goes on where eager's does
    manual_seed(300 + static_cast<uint64_t>(call));
    const Tensor eager_loss = eager.step(x);
    const Tensor after_eager = randn({3});
    CHECK(graph_test::max_relative_error(compiled_loss, eager_loss) <= 1e-6);
    CHECK(graph_test::max_relative_error(after_compiled, after_eager) == 0);
    check_same_parameters(compiled, eager, 1e-6);
  }
  CHECK(step.state().captures() == 1);
  CHECK(step.state().replays() >= 3);
}

namespace {

// Trains `compiled` through `forward` (a compiled forward whose backward the caller runs) and
// `eager` without checkpoint, from the same seeds, comparing outputs and gradients at each call.
template <typename Forward>
void train_side_by_side(Forward& forward, Trainer& compiled, Trainer& eager) {
  for (int call = 0; call < 5; ++call) {
    INFO("call ", call);
    const Tensor x = batch(call);
    compiled.optimizer->zero_grad();
    eager.optimizer->zero_grad();
    manual_seed(40 + static_cast<uint64_t>(call));
    const Tensor compiled_out = forward(x);
    mean(mul(compiled_out, compiled_out)).backward();
    manual_seed(40 + static_cast<uint64_t>(call));
    const Tensor eager_out = eager.forward(x);
    mean(mul(eager_out, eager_out)).backward();
    CHECK(graph_test::max_relative_error(compiled_out, eager_out) <= 1e-6);
    const std::vector<Tensor> a = compiled.parameters(), b = eager.parameters();
    for (size_t i = 0; i < a.size(); ++i) {
      INFO("gradient of parameter ", i);
      REQUIRE(a[i].grad().defined());
      CHECK(error_to_largest(a[i].grad(), b[i].grad()) <= 1e-5);
    }
    compiled.optimizer->step();
    eager.optimizer->step();
  }
}

}  // namespace

TEST_CASE("compile: a compiled forward that checkpoints recomputes in the backward graph the caller runs") {
  Trainer compiled(true), eager(false);
  auto forward = ember::compile([&](const Tensor& x) { return compiled.forward(x); }, {.fullgraph = true});
  train_side_by_side(forward, compiled, eager);
  CHECK(forward.state().captures() == 1);
  CHECK_FALSE(forward.state().fell_back_to_eager());
  REQUIRE(forward.state().backward_executor() != nullptr);
  // The backward graph recomputes the nine checkpointed layers' products (9), then makes the
  // gradients: the head's and eight layers' of input and weight (18), the first layer's of its
  // weight only (x needs none): 28, where a plain forward's backward graph has 19.
  INFO(graph::to_text(forward.state().backward_executor()->graph()));
  CHECK(count_gemms(forward.state().backward_executor()->graph()) == 9 + 19);
}

TEST_CASE("compile: a compiled forward whose checkpoint draws random numbers is a graph break, not a wrong mask") {
  // The backward graph replays apart from its forward (after other calls, or twice for one), so
  // it cannot know which forward's numbers the recomputed dropout must draw again.
  {
    Trainer compiled(true, /*dropout=*/true);
    auto forward = ember::compile([&](const Tensor& x) { return compiled.forward(x); }, {.fullgraph = true});
    (void)forward(batch(0));
    CHECK_THROWS_WITH_AS(forward(batch(1)), doctest::Contains("recomputes a checkpoint that draws random numbers"),
                         graph::GraphBreak);
  }
  Trainer compiled(true, /*dropout=*/true), eager(false, /*dropout=*/true);
  auto forward = ember::compile([&](const Tensor& x) { return compiled.forward(x); });
  train_side_by_side(forward, compiled, eager);
}

TEST_CASE("compile: a checkpointed step with a graph break runs as segments and still trains as eager") {
  // The loss read on the host splits the step into compiled segments; fn's host code runs each
  // call, so the checkpoint's frame and its generator resets are eager ones there.
  Trainer compiled(true, /*dropout=*/true), eager(false, /*dropout=*/true);
  std::vector<double> seen;
  auto step = ember::compile([&](const Tensor& x) {
    const Tensor loss = compiled.step(x);
    seen.push_back(loss.item<double>());
    return loss;
  });
  for (int call = 0; call < 4; ++call) {
    INFO("call ", call);
    const Tensor x = batch(call);
    manual_seed(600 + static_cast<uint64_t>(call));
    const Tensor compiled_loss = step(x);
    manual_seed(600 + static_cast<uint64_t>(call));
    const Tensor eager_loss = eager.step(x);
    CHECK(graph_test::max_relative_error(compiled_loss, eager_loss) <= 1e-6);
    check_same_parameters(compiled, eager, 1e-6);
  }
  CHECK(seen.size() == 4);
  CHECK_FALSE(step.state().graph_breaks().empty());
}

}  // namespace test_compile_checkpoint_recompute
