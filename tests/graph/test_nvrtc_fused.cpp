// The CUDA text the fusion pass emits for real training graphs compiles with NVRTC to an sm_90
// cubin and PTX: the generated-kernel path checked end to end on a machine without a GPU. The
// seed and wide MLP steps (multi-output relu_backward+sum groups) and a GELU MLP with a pointwise
// loss (longer chains). The kernels run in test_fused_cuda_emulation.cpp: on the CPU through an
// emulation, and on cuda:0 when a GPU is usable (tools/gpu_check.sh).
#ifdef EMBER_HAS_CUDA
#include <doctest/doctest.h>

#include "graph/codegen_cpp.h"
#include "graph/compile.h"
#include "graph/cuda/nvrtc_program.h"
#include "graph/fusion.h"
#include "runtime/ember.h"

namespace test_nvrtc_fused {

using namespace ember;

namespace {

std::vector<const graph::FusedGroup*> fused_groups(const graph::Graph& graph) {
  std::vector<const graph::FusedGroup*> groups;
  for (const graph::FusedOpDef* op : graph::fused_ops(graph)) groups.push_back(&op->group);
  return groups;
}

// Compiles every group of `graph` in one NVRTC program; checks the sm_90 cubin and each entry.
void check_compiles(const graph::Graph& graph, const char* name) {
  const std::vector<const graph::FusedGroup*> groups = fused_groups(graph);
  const std::string source = graph::emit_module_source(groups, graph::Target::Cuda);
  INFO(source);
  const graph::cuda::CudaBinary binary = graph::cuda::compile_cuda(source, {.sm = 90}, name);
  CHECK(graph::cuda::cubin_sm(binary.cubin) == 90);
  CHECK(binary.ptx.find(".target sm_90") != std::string::npos);
  for (const graph::FusedGroup* group : groups)
    CHECK(binary.ptx.find(".entry " + group->name) != std::string::npos);
}

// The benchmarks' training step (cross entropy, backward, Adam) over `model`, compiled.
auto compiled_training_step(nn::Sequential& model, optim::Adam& optimizer, CompileOptions options) {
  return ember::compile(
      [&model, &optimizer](const Tensor& x, const Tensor& y) {
        optimizer.zero_grad();
        Tensor loss = nn::functional::cross_entropy(model->forward(x), y);
        loss.backward();
        optimizer.step();
        return loss;
      },
      options);
}

}  // namespace

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
  REQUIRE(fused_groups(graph).size() >= 2);
  check_compiles(graph, "fused_gelu_mlp.cu");
}

TEST_CASE("nvrtc: the seed and wide MLP steps' multi-output groups compile to an sm_90 cubin and PTX") {
  // The benchmark's models (tools/ember-bench/models.cpp): ReLU MLPs, cross-entropy, Adam. Each
  // hidden layer's relu_backward is one group with its bias-gradient sum, exporting the masked
  // gradient to the two GEMMs.
  struct Model {
    std::vector<int64_t> widths;
    int64_t batch;
  };
  for (const Model& shape : {Model{{100, 256, 10}, 32}, Model{{784, 1024, 1024, 1024, 10}, 256}}) {
    INFO("widths ", shape.widths.size(), " layers, first ", shape.widths.front());
    manual_seed(5);
    nn::Sequential model;
    for (size_t i = 0; i + 1 < shape.widths.size(); ++i) {
      model->push_back(nn::Linear(shape.widths[i], shape.widths[i + 1]));
      if (i + 2 < shape.widths.size()) model->push_back(nn::ReLU());
    }
    optim::Adam optimizer(model->parameters(), {.lr = 1e-3});
    auto step = compiled_training_step(model, optimizer, {.fullgraph = true, .fuse = true});
    for (int call = 0; call < 2; ++call)
      (void)step(randn({shape.batch, shape.widths.front()}), randint(0, shape.widths.back(), {shape.batch}));
    REQUIRE(step.state().graph() != nullptr);
    const graph::Graph& graph = *step.state().graph();
    const std::vector<const graph::FusedGroup*> groups = fused_groups(graph);
    CHECK(groups.size() == shape.widths.size() - 2);
    for (const graph::FusedGroup* group : groups) {
      CHECK(group->summary() == "relu_backward+sum");
      CHECK(group->exports.size() == 1);
    }
    check_compiles(graph, "fused_mlp.cu");
  }
}

TEST_CASE("nvrtc: a training step with a dynamic batch dim compiles, its kernels reading the size from their arguments") {
  manual_seed(6);
  nn::Sequential model(nn::Linear(12, 24), nn::ReLU(), nn::Linear(24, 3));
  optim::Adam optimizer(model->parameters(), {.lr = 1e-3});
  auto step = compiled_training_step(model, optimizer, {.fullgraph = true, .warmup_calls = 0});
  Tensor x = randn({10, 12});
  mark_dynamic(x, 0);
  (void)step(x, randint(0, 3, {10}));
  REQUIRE(step.state().graph() != nullptr);
  const graph::Graph& graph = *step.state().graph();
  const std::vector<const graph::FusedGroup*> groups = fused_groups(graph);
  REQUIRE(!groups.empty());
  for (const graph::FusedGroup* group : groups) CHECK(group->dynamic_dims == 1u);
  CHECK(graph::emit_module_source(groups, graph::Target::Cuda).find("args.sizes[0]") != std::string::npos);
  check_compiles(graph, "fused_dynamic_mlp.cu");
}
#endif

}  // namespace test_nvrtc_fused
