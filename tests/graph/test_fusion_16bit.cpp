// Fused groups over bfloat16 and float16 round every step's result to 16 bits, as eager stores
// each op's result: compiled chains, an inference GEMM with gelu, and a bf16 autocast training
// step with GELU and Dropout equal eager bit for bit.
#include <doctest/doctest.h>

#include <functional>
#include <memory>
#include <string>
#include <utility>

#include "graph/compile.h"
#include "graph/fusion.h"
#include "graph_test_util.h"

namespace test_fusion_16bit {

using namespace ember;

namespace {

// The same dtype and the same bits (16-bit values widen to float exactly).
bool same_bits(const Tensor& actual, const Tensor& expected) {
  if (actual.dtype() != expected.dtype()) return false;
  return graph_test::bit_equal(actual.to(kFloat32), expected.to(kFloat32));
}

struct Chain {
  const char* name;
  std::function<Tensor(const Tensor&)> run;
};

}  // namespace

TEST_CASE("compile: fused 16-bit pointwise chains and reductions equal eager bit for bit") {
  const Chain chains[] = {
      {"add(mul(x, 1.37), x)", [](const Tensor& x) { return add(mul(x, 1.37), x); }},
      {"mul(exp(x), 3)", [](const Tensor& x) { return mul(exp(x), 3.0); }},
      {"gelu(mul(x, 1.37))", [](const Tensor& x) { return gelu(mul(x, 1.37)); }},
      {"tanh(mul(add(x, 0.1), 1.37))", [](const Tensor& x) { return tanh(mul(add(x, 0.1), 1.37)); }},
      {"sum(mul(x, x))", [](const Tensor& x) { return sum(mul(x, x)); }},
  };
  const NoGradGuard inference;
  for (const DType dtype : {kBFloat16, kFloat16}) {
    for (const Chain& chain : chains) {
      INFO(chain.name, " in ", dtype);
      auto compiled = ember::compile(chain.run, {.fullgraph = true});
      for (int call = 0; call < 4; ++call) {
        INFO("call ", call);
        manual_seed(static_cast<uint64_t>(call));
        const Tensor x = randn({1000}).to(dtype);
        CHECK(same_bits(compiled(x), chain.run(x)));
      }
      REQUIRE(compiled.state().graph() != nullptr);
      CHECK(graph::fused_ops(*compiled.state().graph()).size() == 1);  // the chain is one group
    }
  }
}

TEST_CASE("compile: a 16-bit inference linear followed by gelu equals eager (gelu stays off the GEMM)") {
  const NoGradGuard inference;
  manual_seed(8);
  const Tensor weight = randn({16, 24}).to(kBFloat16);
  const Tensor bias = randn({16}).to(kBFloat16);
  const auto layer = [&](const Tensor& x) { return gelu(linear(x, weight, bias)); };
  auto compiled = ember::compile(layer, {.fullgraph = true});
  for (int call = 0; call < 4; ++call) {
    INFO("call ", call);
    manual_seed(80 + static_cast<uint64_t>(call));
    const Tensor x = randn({5, 24}).to(kBFloat16);
    CHECK(same_bits(compiled(x), layer(x)));
  }
}

namespace {

struct Net {
  nn::Sequential layers;
  std::unique_ptr<optim::Adam> optimizer;
  Net() {
    manual_seed(5);
    layers = nn::Sequential(nn::Linear(6, 8), nn::GELU(), nn::Dropout(0.4), nn::Linear(8, 3));
    optimizer = std::make_unique<optim::Adam>(layers->parameters(), optim::AdamOptions{.lr = 0.01});
  }
  Tensor loss(const Tensor& x, const Tensor& y) {
    const AutocastGuard autocast(kBFloat16);
    return nn::functional::cross_entropy(layers->forward(x), y);
  }
  Tensor step(const Tensor& x, const Tensor& y) {
    optimizer->zero_grad();
    Tensor loss_value = loss(x, y);
    loss_value.backward();
    optimizer->step();
    return loss_value.detach();
  }
};

void check_same_parameters(Net& actual, Net& expected) {
  const std::vector<Tensor> got = actual.layers->parameters(), want = expected.layers->parameters();
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    INFO("parameter ", i);
    CHECK(same_bits(got[i], want[i]));
    CHECK(same_bits(got[i].grad(), want[i].grad()));
  }
}

std::pair<Tensor, Tensor> batch(int step) {
  manual_seed(100 + static_cast<uint64_t>(step));
  return {randn({8, 6}), randint(0, 3, {8})};
}

}  // namespace

TEST_CASE("compile: a bf16 autocast training step with GELU and Dropout equals eager bit for bit") {
  SUBCASE("the whole step compiled") {
    Net eager, compiled;
    auto step = ember::compile([&](const Tensor& x, const Tensor& y) { return compiled.step(x, y); },
                               {.fullgraph = true});
    for (int call = 0; call < 6; ++call) {
      INFO("step ", call);
      const auto [x, y] = batch(call);
      manual_seed(1000 + static_cast<uint64_t>(call));  // the same dropout masks
      const Tensor actual = step(x, y);
      manual_seed(1000 + static_cast<uint64_t>(call));
      const Tensor expected = eager.step(x, y);
      CHECK(same_bits(actual, expected));
      check_same_parameters(compiled, eager);
    }
    CHECK(step.state().captures_made() == 1);
    REQUIRE(step.state().graph() != nullptr);
    CHECK(!graph::fused_ops(*step.state().graph()).empty());
  }
  SUBCASE("the forward compiled, backward and step outside") {
    Net eager, compiled;
    auto forward = ember::compile([&](const Tensor& x, const Tensor& y) { return compiled.loss(x, y); },
                                  {.fullgraph = true});
    for (int call = 0; call < 6; ++call) {
      INFO("step ", call);
      const auto [x, y] = batch(call);
      compiled.optimizer->zero_grad();
      manual_seed(1000 + static_cast<uint64_t>(call));
      const Tensor actual = forward(x, y);
      actual.backward();
      compiled.optimizer->step();
      manual_seed(1000 + static_cast<uint64_t>(call));
      const Tensor expected = eager.step(x, y);
      CHECK(same_bits(actual.detach(), expected));
      check_same_parameters(compiled, eager);
    }
    CHECK(forward.state().captures_made() == 1);
  }
}

}  // namespace test_fusion_16bit
