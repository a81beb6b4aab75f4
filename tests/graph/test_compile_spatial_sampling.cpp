// ember::compile of a training step through affine_grid, grid_sample, cdist and gumbel_softmax
// (composites of registry ops that read nothing on the host): captured whole (fullgraph), its
// outputs and trained parameters equal eager's step by step, the Gumbel noise included, because
// each replay draws the generator range eager would.
#include <doctest/doctest.h>

#include <memory>
#include <vector>

#include "fusion_test_util.h"
#include "graph/compile.h"
#include "runtime/nn/nn.h"
#include "runtime/optim/sgd.h"
#include "runtime/random/generator.h"

namespace test_compile_spatial_sampling {

using namespace ember;
namespace F = ember::nn::functional;

namespace {

struct SamplerModel {
  Tensor theta;    // [2, 2, 3]
  Tensor image;    // [2, 3, 5, 6]
  Tensor anchors;  // [4, 3]: cdist targets for the sampled pixels
  std::unique_ptr<optim::SGD> optimizer;
  F::GridSampleFuncOptions options;

  explicit SamplerModel(const F::GridSampleFuncOptions& sample_options) : options(sample_options) {
    manual_seed(17);
    theta = add(mul(randn({2, 2, 3}), 0.3), from_vector<float>({1, 0, 0, 0, 1, 0}, {1, 2, 3})).detach();
    theta.requires_grad_();
    image = randn({2, 3, 5, 6}).requires_grad_();
    anchors = randn({4, 3}).requires_grad_();
    optimizer = std::make_unique<optim::SGD>(std::vector<Tensor>{theta, image, anchors}, optim::SGDOptions{.lr = 0.05});
  }

  Tensor step(const Tensor& scale) {
    optimizer->zero_grad();
    const Tensor grid = F::affine_grid(mul(theta, scale), {2, 3, 4, 4}, false);
    const Tensor sampled = F::grid_sample(image, grid, options);  // [2, 3, 4, 4]
    const Tensor pixels = permute(sampled, {0, 2, 3, 1}).reshape({2, 16, 3});
    const Tensor distances = cdist(pixels, anchors, 2.0);  // [2, 16, 4]
    const Tensor choice = F::gumbel_softmax(neg(distances), 0.5, true);
    const Tensor loss = add(sum(mul(choice, distances)), mean(mul(sampled, sampled)));
    loss.backward();
    optimizer->step();
    return loss.detach();
  }
};

}  // namespace

TEST_CASE("compile: a step through affine_grid, grid_sample, cdist and gumbel_softmax equals eager") {
  using F::GridSampleMode;
  using F::GridSamplePadding;
  const F::GridSampleFuncOptions cases[] = {
      {.mode = GridSampleMode::Bilinear, .padding_mode = GridSamplePadding::Zeros},
      {.mode = GridSampleMode::Bicubic, .padding_mode = GridSamplePadding::Reflection, .align_corners = true},
      {.mode = GridSampleMode::Nearest, .padding_mode = GridSamplePadding::Border}};
  for (const F::GridSampleFuncOptions& options : cases) {
    INFO("mode " << F::grid_sample_mode_name(options.mode) << ", padding "
                 << F::grid_sample_padding_name(options.padding_mode));
    SamplerModel eager(options), compiled(options);
    auto step = ember::compile([&](const Tensor& scale) { return compiled.step(scale); }, {.fullgraph = true});
    for (int call = 0; call < 5; ++call) {
      INFO("call " << call);
      const Tensor scale = scalar_tensor(1.0 + 0.1 * call);
      manual_seed(900 + static_cast<uint64_t>(call));
      const Tensor expected = eager.step(scale);
      manual_seed(900 + static_cast<uint64_t>(call));
      const Tensor actual = step(scale);
      CHECK(graph_test::max_relative_error(actual, expected) <= 1e-5);
    }
    CHECK(step.state().replays() >= 3);
    graph_test::check_same_values({compiled.theta, compiled.image, compiled.anchors},
                                  {eager.theta, eager.image, eager.anchors});
  }
}

}  // namespace test_compile_spatial_sampling
