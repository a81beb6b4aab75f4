// ember::compile of a training step whose loss is a Gaussian negative log-likelihood with a
// learned covariance factor: cholesky, solve_triangular, solve, logdet, inv and cholesky_solve run
// as library nodes of the captured graph (their backward rules' solves too), and the loss and the
// trained parameters equal eager's step by step.
#include <doctest/doctest.h>

#include <memory>

#include "fusion_test_util.h"
#include "graph/compile.h"
#include "runtime/linalg.h"
#include "runtime/optim/sgd.h"

namespace test_compile_linalg_solve {

using namespace ember;

namespace {

struct GaussianFit {
  Tensor mean;    // [d]
  Tensor factor;  // [d, d]: covariance = factor factor^T + 0.5 I
  std::unique_ptr<optim::SGD> optimizer;

  explicit GaussianFit(int64_t d) {
    manual_seed(17);
    mean = randn({d}, {.dtype = kFloat64}).requires_grad_();
    factor = add(mul(randn({d, d}, {.dtype = kFloat64}), 0.3), eye(d, {.dtype = kFloat64})).detach().requires_grad_();
    optimizer = std::make_unique<optim::SGD>(std::vector<Tensor>{mean, factor}, optim::SGDOptions{.lr = 0.02});
  }

  // Mean NLL over the samples x [N, d] (up to the constant): 0.5 logdet(S) + 0.5 r^T S^-1 r, the
  // quadratic term computed three ways (triangular solve, solve, cholesky_solve) and averaged.
  Tensor step(const Tensor& x) {
    optimizer->zero_grad();
    const int64_t d = factor.size(0);
    const Tensor covariance = add(matmul(factor, transpose(factor, 0, 1)), mul(eye(d, {.dtype = kFloat64}), 0.5));
    const Tensor l = linalg::cholesky(covariance);
    const Tensor residual = transpose(sub(x, mean), 0, 1);  // [d, N]
    const Tensor whitened = linalg::solve_triangular(l, residual, /*upper=*/false);
    const Tensor by_triangle = sum(mul(whitened, whitened));
    const Tensor by_solve = sum(mul(residual, linalg::solve(covariance, residual)));
    const Tensor by_factor = sum(mul(residual, cholesky_solve(residual, l)));
    const double samples = static_cast<double>(x.size(0));
    const Tensor quadratic = mul(add(add(by_triangle, by_solve), by_factor), 1.0 / (6.0 * samples));
    // The inverse enters through a small penalty on its trace, so inv's backward is in the graph.
    const Tensor penalty = mul(trace(linalg::inv(covariance)), 1e-3);
    const Tensor loss = add(add(mul(logdet(covariance), 0.5), quadratic), penalty);
    loss.backward();
    optimizer->step();
    return loss.detach();
  }
};

}  // namespace

TEST_CASE("compile: a Gaussian NLL step with cholesky, solves and logdet, captured whole, equals eager") {
  GaussianFit eager(3), compiled(3);
  auto train_step = ember::compile([&](const Tensor& x) { return compiled.step(x); }, {.fullgraph = true});
  for (int step = 0; step < 6; ++step) {
    INFO("step " << step);
    manual_seed(500 + static_cast<uint64_t>(step));
    const Tensor x = add(mul(randn({16, 3}, {.dtype = kFloat64}), 1.5), 0.5);
    const Tensor compiled_loss = train_step(x);
    const Tensor eager_loss = eager.step(x);
    CHECK(graph_test::max_relative_error(compiled_loss, eager_loss) <= 1e-12);
  }
  CHECK(train_step.state().replays() == 4);
  const auto* graph = train_step.state().graph();
  CHECK(graph->count_op("linalg_cholesky") == 1);
  CHECK(graph->count_op("linalg_slogdet") == 1);
  CHECK(graph->count_op("linalg_solve") >= 3);             // solve, inv and their backward solves
  CHECK(graph->count_op("linalg_solve_triangular") >= 3);  // forward solves and cholesky's backward
  graph_test::check_same_values({compiled.mean, compiled.factor}, {eager.mean, eager.factor});
}

}  // namespace test_compile_linalg_solve
