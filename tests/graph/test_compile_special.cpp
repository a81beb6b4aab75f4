// torch.special under the compile stage: a chain of the special ops fuses into one generated
// kernel whose CPU and CUDA text call their functors (the CUDA text is also NVRTC-compiled where a
// GPU is present), and a training step fitting Gamma, Beta, von Mises and probit likelihoods by
// their learned parameters (lgamma, digamma, i0e, log_ndtr, ndtri and their backward ops) is
// captured whole, fused, and equals eager training step by step.
#include <doctest/doctest.h>

#include <cmath>
#include <memory>
#include <numbers>

#include "fusion_test_util.h"
#include "graph/codegen_cpp.h"
#include "graph/compile.h"
#include "graph/fusion.h"
#include "runtime/optim/adam.h"
#include "runtime/special.h"

namespace test_compile_special {

using namespace ember;
using namespace ember::graph;
using graph_test::GraphBuilder;

TEST_CASE("compile special: a chain of the special ops fuses into one kernel that equals eager") {
  for (DType dtype : {kFloat32, kFloat64}) {
    INFO(dtype);
    GraphBuilder builder;
    const ValueId x = builder.input(to_dtype(add(mul(rand({4, 6}), 0.9), 0.05), dtype));  // in (0.05, 0.95)
    const ValueId probit = builder.node("ndtri", {x});
    const ValueId tail = builder.node("log_ndtr", {probit});
    const ValueId inverse = builder.node("erfinv", {x});
    const ValueId scaled = builder.node("erfcx", {inverse});
    const ValueId gamma = builder.node("lgamma", {x});
    const ValueId psi = builder.node("digamma", {x});
    const ValueId trigamma = builder.node("polygamma", {x}, {{"n", int64_t{1}}});
    const ValueId bessel = builder.node("i1e", {builder.node("i0", {x})});
    ValueId total = builder.node("add", {tail, scaled}, {{"alpha", 1.0}});
    for (ValueId term : {gamma, psi, trigamma, bessel}) total = builder.node("add", {total, term}, {{"alpha", 1.0}});
    builder.graph.outputs = {total};
    Graph graph = builder.graph;
    REQUIRE(fuse_pointwise(graph) == 1);
    verify(graph);
    CHECK(graph.nodes.size() == 1);
    const std::vector<const FusedOpDef*> fused = fused_ops(graph);
    REQUIRE(fused.size() == 1);
    const std::string cuda = emit_group_source(fused[0]->group, Target::Cuda);
    for (const char* functor : {"ember::fn::Ndtri{}", "ember::fn::LogNdtr{}", "ember::fn::Erfinv{}",
                                "ember::fn::Erfcx{}", "ember::fn::Lgamma{}", "ember::fn::Digamma{}",
                                "ember::fn::Polygamma{1}", "ember::fn::I0{}", "ember::fn::I1e{}"})
      CHECK_MESSAGE(cuda.find(functor) != std::string::npos, functor);
    const double error = graph_test::max_relative_error(builder.run(graph).at(0), builder.eager[total]);
    CHECK(error <= (dtype == kFloat32 ? 1e-6 : 1e-14));
  }
}

namespace {

// Learned distribution parameters (through exp, so they stay positive) fitted by maximum
// likelihood: Gamma(alpha, beta) and Beta(a, b) on positive and unit-interval data, a von Mises
// concentration kappa (its normalizer log(2 pi I0(kappa)) = log(2 pi) + log i0e(kappa) + kappa)
// and a probit model whose latent scale also enters through ndtri of a fixed quantile.
struct Likelihoods {
  Tensor log_alpha = full({4}, 0.3), log_beta = full({4}, -0.2);
  Tensor log_a = full({4}, 0.5), log_b = full({4}, 0.1);
  Tensor log_kappa = full({4}, 0.2), slope = full({4}, 0.4);
  std::unique_ptr<optim::Adam> optimizer;

  Likelihoods() {
    std::vector<Tensor> parameters = {log_alpha, log_beta, log_a, log_b, log_kappa, slope};
    for (Tensor& parameter : parameters) parameter.requires_grad_();
    optimizer = std::make_unique<optim::Adam>(parameters, optim::AdamOptions{.lr = 0.05});
  }

  Tensor step(const Tensor& positive, const Tensor& unit, const Tensor& angle, const Tensor& label) {
    optimizer->zero_grad();
    const Tensor alpha = exp(log_alpha), beta = exp(log_beta), a = exp(log_a), b = exp(log_b);
    const Tensor kappa = exp(log_kappa);
    // Gamma: -(alpha log beta + (alpha - 1) log y - beta y - lgamma(alpha)).
    const Tensor gamma_nll = neg(
        sub(add(mul(alpha, log(beta)), sub(mul(sub(alpha, 1.0), log(positive)), mul(beta, positive))), lgamma(alpha)));
    // Beta: lgamma(a) + lgamma(b) - lgamma(a + b) - (a - 1) log x - (b - 1) log(1 - x), with
    // digamma through a moment-matching penalty on E[log x] = psi(a) - psi(a + b).
    const Tensor beta_nll = sub(sub(add(lgamma(a), lgamma(b)), lgamma(add(a, b))),
                                add(mul(sub(a, 1.0), log(unit)), mul(sub(b, 1.0), log(rsub(unit, 1.0)))));
    const Tensor moment = sub(sub(digamma(a), digamma(add(a, b))), log(unit));
    // von Mises about 0: -(kappa cos y) + log(2 pi) + log i0e(kappa) + kappa.
    const Tensor von_mises_nll =
        add(sub(add(log(special::i0e(kappa)), kappa), mul(kappa, cos(angle))), std::log(2 * std::numbers::pi));
    // Probit: -log Phi(s z) for label 1, -log Phi(-s z) for label 0; z from ndtri of the data.
    const Tensor z = special::ndtri(unit);
    const Tensor sign = sub(mul(label, 2.0), 1.0);
    const Tensor probit_nll = neg(special::log_ndtr(mul(mul(slope, z), sign)));
    const Tensor loss = add(add(mean(gamma_nll), mean(beta_nll)),
                            add(add(mul(mean(mul(moment, moment)), 0.1), mean(von_mises_nll)), mean(probit_nll)));
    loss.backward();
    optimizer->step();
    return loss.detach();
  }
};

std::vector<Tensor> batch(int step) {
  manual_seed(900 + static_cast<uint64_t>(step));
  const Tensor positive = add(mul(rand({16, 4}), 3.0), 0.1);
  const Tensor unit = add(mul(rand({16, 4}), 0.9), 0.05);
  const Tensor angle = mul(sub(rand({16, 4}), 0.5), 2.0);
  const Tensor label = to_dtype(gt(rand({16, 4}), scalar_tensor(0.5)), kFloat32);
  return {positive, unit, angle, label};
}

}  // namespace

TEST_CASE("compile special: a likelihood training step, captured whole and fused, equals eager") {
  Likelihoods eager, compiled;
  auto train_step = ember::compile([&](const Tensor& positive, const Tensor& unit, const Tensor& angle,
                                       const Tensor& label) { return compiled.step(positive, unit, angle, label); },
                                   {.fullgraph = true, .fuse = true});
  for (int step = 0; step < 30; ++step) {
    INFO("step ", step);
    const std::vector<Tensor> inputs = batch(step);
    const Tensor compiled_loss = train_step(inputs[0], inputs[1], inputs[2], inputs[3]);
    const Tensor eager_loss = eager.step(inputs[0], inputs[1], inputs[2], inputs[3]);
    CHECK(std::isfinite(eager_loss.item()));
    CHECK(graph_test::max_relative_error(compiled_loss, eager_loss) <= 1e-5);
  }
  CHECK(train_step.state().replays() == 28);
  graph_test::check_same_values(compiled.optimizer->param_groups()[0].params,
                                eager.optimizer->param_groups()[0].params);
  // The special ops and their backward rules' ops (digamma for lgamma, polygamma for digamma,
  // i1e for i0e) sit in fused groups (lgamma of the [4] parameters stands alone: its input, exp,
  // is exported to several groups, and a group of one node is left as it is).
  const Graph& graph = *train_step.state().graph();
  std::string fused_steps;
  for (const FusedOpDef* fused : fused_ops(graph)) fused_steps += fused->group.summary() + " ";
  INFO(fused_steps);
  for (const char* op : {"digamma", "polygamma", "i0e", "i1e", "ndtri", "log_ndtr"})
    CHECK_MESSAGE(fused_steps.find(op) != std::string::npos, op);
}

}  // namespace test_compile_special
