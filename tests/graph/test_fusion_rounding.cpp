// A fused group rounds every op's result as the eager op does, so float32 chains and whole training
// steps with fusion on equal eager bit for bit, not just within float32 rounding. libember and the
// generated code are both built without multiply-add contraction (runtime/CMakeLists.txt): a
// multiply of one op and an add of the next are never joined into one FMA, and the FMAs inside a
// formula (the polynomials of kernels/fast_math.h) are explicit mul_add calls that the eager kernel
// and the fused code compile alike.
#include <doctest/doctest.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "graph/compile.h"
#include "graph/fusion.h"
#include "graph_test_util.h"

namespace test_fusion_rounding {

using namespace ember;
namespace F = ember::nn::functional;

namespace {

struct Chain {
  const char* name;
  std::function<Tensor(const Tensor&, const Tensor&)> run;
};

// Compiles each chain whole, and checks two eager calls and two replays against eager, and that
// the chain became one fused group.
void check_chains_bit_equal(const std::vector<Chain>& chains) {
  const NoGradGuard inference;
  for (const Chain& chain : chains) {
    INFO(std::string(chain.name));
    auto compiled = ember::compile(chain.run, {.fullgraph = true});
    for (int call = 0; call < 4; ++call) {  // calls 0 and 1 run eagerly, then replays
      INFO("call ", call);
      manual_seed(40 + static_cast<uint64_t>(call));
      // 100k elements: contracted, about 30% of add(mul(x, y), y)'s results were an ulp off.
      const Tensor x = randn({100003}), y = randn({100003});
      CHECK(graph_test::bit_equal(compiled(x, y), chain.run(x, y)));
    }
    REQUIRE(compiled.state().graph() != nullptr);
    CHECK(graph::fused_ops(*compiled.state().graph()).size() == 1);
  }
}

}  // namespace

TEST_CASE("compile: fused float32 multiply-add chains equal eager bit for bit") {
  check_chains_bit_equal({
      {"add(mul(x, y), y)", [](const Tensor& x, const Tensor& y) { return add(mul(x, y), y); }},
      {"sub(mul(x, 1.37), mul(y, y))",
       [](const Tensor& x, const Tensor& y) { return sub(mul(x, 1.37), mul(y, y)); }},
      {"add(mul(add(mul(x, y), 0.5), x), y)",
       [](const Tensor& x, const Tensor& y) { return add(mul(add(mul(x, y), 0.5), x), y); }},
      {"add(x, y, alpha 0.3) after mul", [](const Tensor& x, const Tensor& y) { return add(x, mul(y, x), 0.3); }},
      {"sum(add(mul(x, y), x))", [](const Tensor& x, const Tensor& y) { return sum(add(mul(x, y), x)); }},
  });
}

// The transcendental functors end in a multiply (exp's scaling, tanh's and erf's polynomials) or
// start with one, which a contracting compiler joined with a neighbouring op's add or subtract.
TEST_CASE("compile: fused float32 chains through exp, tanh, erf, gelu and other polynomials equal eager") {
  check_chains_bit_equal({
      {"sub(exp(x), 1)", [](const Tensor& x, const Tensor&) { return sub(ember::exp(x), 1.0); }},
      {"sigmoid(add(mul(x, y), 1))", [](const Tensor& x, const Tensor& y) { return sigmoid(add(mul(x, y), 1.0)); }},
      {"add(mul(tanh(x), y), x)", [](const Tensor& x, const Tensor& y) { return add(mul(ember::tanh(x), y), x); }},
      {"add(mul(erf(x), 0.5), 0.5)", [](const Tensor& x, const Tensor&) { return add(mul(ember::erf(x), 0.5), 0.5); }},
      {"gelu(add(mul(x, y), y))", [](const Tensor& x, const Tensor& y) { return gelu(add(mul(x, y), y)); }},
      {"add(mul(gelu tanh(x), y), x)",
       [](const Tensor& x, const Tensor& y) { return add(mul(gelu(x, true), y), x); }},
      {"add(mul(elu(x), 1.5), silu(y))",
       [](const Tensor& x, const Tensor& y) { return add(mul(elu(x), 1.5), silu(y)); }},
      {"add(mul(expm1(x), y), x)", [](const Tensor& x, const Tensor& y) { return add(mul(ember::expm1(x), y), x); }},
      {"sub(mul(log1p(abs(x)), y), softplus(y))",
       [](const Tensor& x, const Tensor& y) { return sub(mul(log1p(ember::abs(x)), y), softplus(y)); }},
      {"add(mul(sin(x), y), x)", [](const Tensor& x, const Tensor& y) { return add(mul(ember::sin(x), y), x); }},
      {"add(mish(mul(x, 3)), logsigmoid(y))",
       [](const Tensor& x, const Tensor& y) { return add(F::mish(mul(x, 3.0)), F::logsigmoid(y)); }},
      {"sub(hardswish(mul(x, 4)), hardsigmoid(hardtanh(y)))",
       [](const Tensor& x, const Tensor& y) {
         return sub(F::hardswish(mul(x, 4.0)), F::hardsigmoid(F::hardtanh(mul(y, 2.0), -1.5, 0.5)));
       }},
  });
}

namespace {

void check_same_bits(const std::vector<Tensor>& actual, const std::vector<Tensor>& expected) {
  REQUIRE(actual.size() == expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    INFO("parameter ", i);
    CHECK(graph_test::bit_equal(actual[i], expected[i]));
    CHECK(graph_test::bit_equal(actual[i].grad(), expected[i].grad()));
  }
}

// Two Linear layers and Adam; `activation` and `loss` are the pointwise chains between them.
struct TwoLayerNet {
  nn::Linear first{nullptr}, second{nullptr};
  std::unique_ptr<optim::Adam> optimizer;
  std::function<Tensor(const Tensor&)> activation;
  std::function<Tensor(const Tensor&, const Tensor&)> loss;
  TwoLayerNet(uint64_t seed, std::function<Tensor(const Tensor&)> activation_chain,
              std::function<Tensor(const Tensor&, const Tensor&)> loss_chain)
      : activation(std::move(activation_chain)), loss(std::move(loss_chain)) {
    manual_seed(seed);
    first = nn::Linear(20, 32);
    second = nn::Linear(32, 4);
    optimizer = std::make_unique<optim::Adam>(parameters(), optim::AdamOptions{.lr = 1e-2});
  }
  std::vector<Tensor> parameters() const {
    std::vector<Tensor> all = first->parameters();
    for (const Tensor& parameter : second->parameters()) all.push_back(parameter);
    return all;
  }
  Tensor step(const Tensor& x, const Tensor& target) {
    optimizer->zero_grad();
    Tensor value = loss(second->forward(activation(first->forward(x))), target);
    value.backward();
    optimizer->step();
    return value;
  }
};

// 20 steps compiled whole with fusion and 20 eager ones: losses, parameters and gradients agree
// bit for bit.
void check_training_bit_equal(const std::function<Tensor(const Tensor&)>& activation,
                              const std::function<Tensor(const Tensor&, const Tensor&)>& loss) {
  TwoLayerNet eager(23, activation, loss), compiled(23, activation, loss);
  auto train_step = ember::compile([&](const Tensor& x, const Tensor& y) { return compiled.step(x, y); },
                                   {.fullgraph = true, .fuse = true});
  for (int step = 0; step < 20; ++step) {
    INFO("step ", step);
    manual_seed(700 + static_cast<uint64_t>(step));
    const Tensor x = randn({16, 20}), target = randn({16, 4});
    CHECK(graph_test::bit_equal(train_step(x, target), eager.step(x, target)));
  }
  CHECK(train_step.state().replays() == 18);
  REQUIRE(train_step.state().graph() != nullptr);
  CHECK(graph::fused_ops(*train_step.state().graph()).size() >= 2);
  check_same_bits(compiled.parameters(), eager.parameters());
}

}  // namespace

TEST_CASE("compile: a training step of multiply-add chains with fusion equals eager bit for bit") {
  // Each product feeds one add and nothing else, so a contracting compiler joins the two
  // (contracted: 4 of 20 losses differed).
  check_training_bit_equal([](const Tensor& hidden) { return add(mul(hidden, 1.37), hidden); },
                           [](const Tensor& out, const Tensor& target) { return sum(add(mul(out, 1.37), target)); });
}

TEST_CASE("compile: a GELU-tanh and SiLU training step with a smooth loss equals eager bit for bit") {
  check_training_bit_equal(
      [](const Tensor& hidden) {
        const Tensor activated = gelu(hidden, /*tanh_approximation=*/true);
        return add(mul(activated, sigmoid(activated)), mul(ember::tanh(hidden), 0.5));
      },
      // sqrt(1 + d^2) - 1 and a SiLU term: chains ending in a mean.
      [](const Tensor& out, const Tensor& target) {
        const Tensor difference = sub(out, target);
        return mean(add(sub(sqrt(add(mul(difference, difference), 1.0)), 1.0), mul(silu(difference), 0.1)));
      });
}

TEST_CASE("compile: a training step through hardswish, mish, hardtanh and logsigmoid equals eager bit for bit") {
  // Their backward ops (hardswish_backward, ...) fuse with the neighbouring chains too.
  check_training_bit_equal(
      [](const Tensor& hidden) {
        return add(F::hardswish(mul(hidden, 3.0)), F::mish(F::hardtanh(mul(hidden, 2.0), -1.0, 1.5)));
      },
      [](const Tensor& out, const Tensor& target) { return mean(F::logsigmoid(mul(out, target))); });
}

TEST_CASE("compile: 40 bf16 autocast training steps through GELU equal eager bit for bit") {
  // Autocast keeps the loss in float32 around bf16 GEMMs; a guard (this net matched eager contracted too).
  struct Net {
    nn::Sequential layers;
    std::unique_ptr<optim::Adam> optimizer;
    Net() {
      manual_seed(5);
      layers = nn::Sequential(nn::Linear(6, 8), nn::GELU(), nn::Linear(8, 3));
      optimizer = std::make_unique<optim::Adam>(layers->parameters(), optim::AdamOptions{.lr = 0.01});
    }
    Tensor step(const Tensor& x, const Tensor& y) {
      optimizer->zero_grad();
      Tensor loss;
      {
        const AutocastGuard autocast(kBFloat16);
        loss = nn::functional::cross_entropy(layers->forward(x), y);
      }
      loss.backward();
      optimizer->step();
      return loss.detach();
    }
  };
  Net eager, compiled;
  auto train_step = ember::compile([&](const Tensor& x, const Tensor& y) { return compiled.step(x, y); },
                                   {.fullgraph = true, .fuse = true});
  for (int step = 0; step < 40; ++step) {
    INFO("step ", step);
    manual_seed(100 + static_cast<uint64_t>(step));
    const Tensor x = randn({8, 6}), y = randint(0, 3, {8});
    CHECK(graph_test::bit_equal(train_step(x, y), eager.step(x, y)));
  }
  REQUIRE(train_step.state().graph() != nullptr);
  CHECK(!graph::fused_ops(*train_step.state().graph()).empty());
  check_same_bits(compiled.layers->parameters(), eager.layers->parameters());
}

TEST_CASE("compile: 40 seed-MLP training steps with fusion equal eager bit for bit") {
  graph_test::SeedMlp eager(17), compiled(17);
  auto train_step = ember::compile([&](const Tensor& x, const Tensor& y) { return compiled.step(x, y); },
                                   {.fullgraph = true, .fuse = true});
  for (int step = 0; step < 40; ++step) {
    INFO("step ", step);
    const auto [x, y] = graph_test::batch(step);
    CHECK(graph_test::bit_equal(train_step(x, y), eager.step(x, y)));
  }
  REQUIRE(train_step.state().graph() != nullptr);
  CHECK(!graph::fused_ops(*train_step.state().graph()).empty());
  graph_test::check_same_state(eager, compiled);
}

}  // namespace test_fusion_rounding
