// The CUDA text the fusion pass emits for a real training graph compiles with NVRTC to an sm_90
// cubin and PTX: the generated-kernel path checked end to end on a machine without a GPU (the
// seed and wide MLP steps hold no fused group, see ARCHITECTURE "Fusion", so a GELU MLP with a
// pointwise loss stands in for them). Running the kernels needs a GPU (tools/gpu_check.sh).
#ifdef EMBER_HAS_CUDA
#include <doctest/doctest.h>

#include "graph/codegen_cpp.h"
#include "graph/compile.h"
#include "graph/cuda/nvrtc_program.h"
#include "graph/fusion.h"
#include "runtime/ember.h"

using namespace ember;

TEST_CASE("nvrtc: the fused groups of a captured training step compile to an sm_90 cubin and PTX") {
  // A training step whose graph holds fused groups: GELU(tanh) and x * sigmoid(x) activations and
  // a smooth-L1-like loss, sqrt(1 + d^2) - 1, ending in a mean.
  manual_seed(3);
  nn::Linear first(20, 32);
  nn::Linear second(32, 4);
  std::vector<Tensor> parameters = first->parameters();
  for (const Tensor& parameter : second->parameters()) parameters.push_back(parameter);
  optim::Adam optimizer(parameters, {.lr = 1e-3});
  auto step = ember::compile(
      [&](const Tensor& x, const Tensor& target) {
        optimizer.zero_grad();
        Tensor hidden = gelu(first->forward(x), /*tanh_approximation=*/true);
        Tensor out = second->forward(mul(hidden, sigmoid(hidden)));
        Tensor loss = mean(sub(sqrt(add(pow(sub(out, target), 2.0), 1.0)), 1.0));
        loss.backward();
        optimizer.step();
        return loss;
      },
      {.fullgraph = true, .fuse = true});
  for (int call = 0; call < 2; ++call) (void)step(randn({16, 20}), randn({16, 4}));  // warm-up, capture
  REQUIRE(step.state().graph() != nullptr);
  const graph::Graph& graph = *step.state().graph();
  std::vector<const graph::FusedGroup*> groups;
  for (const auto& op : graph.owned_ops)
    if (op->name.rfind("fused_", 0) == 0) groups.push_back(&static_cast<const graph::FusedOpDef&>(*op).group);
  REQUIRE(groups.size() >= 2);
  const std::string source = graph::emit_module_source(groups, graph::Target::Cuda);
  INFO(source);
  const graph::cuda::CudaBinary binary = graph::cuda::compile_cuda(source, {.sm = 90}, "fused_gelu_mlp.cu");
  CHECK(graph::cuda::cubin_sm(binary.cubin) == 90);
  CHECK(binary.ptx.find(".target sm_90") != std::string::npos);
  for (const graph::FusedGroup* group : groups)
    CHECK(binary.ptx.find(".entry " + group->name) != std::string::npos);
}
#endif
