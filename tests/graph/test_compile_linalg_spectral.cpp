// ember::compile of a training step with spectral penalties on a layer's weight: a nuclear norm
// (svd), the largest eigenvalue of W^T W (eigh) and a sign-free orthogonality penalty on R's
// diagonal (qr). The decompositions run as library calls in the captured graph, their backward
// rules are captured too, and losses and trained parameters equal eager's step by step.
#include <doctest/doctest.h>

#include <memory>

#include "fusion_test_util.h"
#include "graph/compile.h"
#include "runtime/linalg_spectral.h"
#include "runtime/nn/nn.h"
#include "runtime/optim/sgd.h"

namespace test_compile_linalg_spectral {

using namespace ember;

namespace {

struct SpectralModel {
  nn::Linear layer{nullptr};
  std::unique_ptr<optim::SGD> optimizer;

  SpectralModel() {
    manual_seed(83);
    layer = nn::Linear(4, 6);
    optimizer = std::make_unique<optim::SGD>(layer->parameters(), optim::SGDOptions{.lr = 0.05});
  }

  Tensor step(const Tensor& x, const Tensor& target) {
    optimizer->zero_grad();
    const Tensor& weight = layer->weight;
    const Tensor fit = mse_loss(layer->forward(x), target);
    const Tensor nuclear = linalg::matrix_norm(weight, "nuc");
    const Tensor largest = amax(linalg::eigvalsh(matmul(weight.transpose(0, 1), weight)));
    const Tensor r = std::get<1>(linalg::qr(weight));
    const Tensor squared_diagonal = pow(diagonal(r, 0, -2, -1), 2.0);  // sign-free: R's signs are not fixed
    const Tensor orthogonality = sum(pow(sub(squared_diagonal, 1.0), 2.0));
    const Tensor loss = add(add(fit, mul(nuclear, 0.05)), add(mul(largest, 0.01), mul(orthogonality, 0.1)));
    loss.backward();
    optimizer->step();
    return loss.detach();
  }
};

}  // namespace

TEST_CASE("compile: a step with svd, eigh and qr penalties, captured whole, equals eager over several steps") {
  SpectralModel eager, compiled;
  auto train_step = ember::compile([&](const Tensor& x, const Tensor& target) { return compiled.step(x, target); },
                                   {.fullgraph = true});
  for (int step = 0; step < 5; ++step) {
    INFO("step " << step);
    manual_seed(700 + static_cast<uint64_t>(step));
    const Tensor x = randn({8, 4}), target = randn({8, 6});
    const Tensor compiled_loss = train_step(x, target);
    const Tensor eager_loss = eager.step(x, target);
    CHECK(graph_test::max_relative_error(compiled_loss, eager_loss) <= 1e-5);
  }
  CHECK(train_step.state().replays() == 3);
  CHECK(train_step.state().graph()->count_op("linalg_svd") >= 1);
  CHECK(train_step.state().graph()->count_op("linalg_eigh") >= 1);
  CHECK(train_step.state().graph()->count_op("linalg_qr") == 1);
  graph_test::check_same_values(compiled.optimizer->param_groups()[0].params,
                                eager.optimizer->param_groups()[0].params);
}

}  // namespace test_compile_linalg_spectral
