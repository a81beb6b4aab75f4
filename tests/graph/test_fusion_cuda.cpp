// The fusion pass on graphs typed on a CUDA device: groups form there (one device per group),
// compile with NVRTC into one program at fusion time (no GPU needed), and the fused node gets the
// CUDA kernel. The graphs are built from types alone, so this runs on machines without a GPU;
// test_fused_cuda_emulation.cpp runs the generated kernels (on the CPU here, on cuda:0 when one
// is usable).
#ifdef EMBER_HAS_CUDA
#include <doctest/doctest.h>

#include "graph/cuda/fused_cuda_program.h"
#include "graph/fused_launch.h"
#include "graph/fusion.h"
#include "runtime/ember.h"
#include "typed_graph.h"

namespace test_fusion_cuda {

using namespace ember;
using namespace ember::graph;
using graph_test::kGpu;
using graph_test::TypedGraph;

TEST_CASE("fusion on CUDA: a relu_backward + bias-gradient group on cuda:0 compiles with NVRTC and gets the CUDA kernel") {
  TypedGraph typed;
  const TensorMeta full{{32, 256}, kFloat32, kGpu};
  const ValueId grad = typed.input({32, 256}, kGpu);
  const ValueId hidden = typed.input({32, 256}, kGpu);
  const ValueId masked = typed.node("relu_backward", {grad, hidden}, full);
  const ValueId scaled = typed.node("mul_scalar", {masked}, full, Attrs{{"value", 0.5}});
  const ValueId bias_grad =
      typed.node("sum", {scaled}, TensorMeta{{256}, kFloat32, kGpu}, Attrs{{"dims", Dims{0}}, {"keepdim", false}});
  typed.graph.outputs = {bias_grad};
  Graph graph = typed.graph;
  REQUIRE(fuse_pointwise(graph) == 1);
  verify(graph);
  const std::vector<const FusedOpDef*> ops = fused_ops(graph);
  REQUIRE(ops.size() == 1);
  const FusedOpDef& fused = *ops[0];
  CHECK(fused.group.device == kGpu);
  CHECK(fused.group.summary() == "relu_backward+mul_scalar+sum");
  CHECK((fused.kernel_for(kGpu) == &fused_cuda_kernel));
  CHECK((fused.kernel_for(kCPU) == nullptr));
  CHECK(fused.module == nullptr);  // no host compiler ran for it
  REQUIRE(fused.cuda != nullptr);
  CHECK(graph::cuda::cubin_sm(fused.cuda->binary.cubin) == 90);
  CHECK(fused.cuda->binary.ptx.find(".entry " + fused.group.name) != std::string::npos);
  CHECK(fused.cuda->source.find("struct " + fused.group.name + "_args") != std::string::npos);
}

TEST_CASE("fusion on CUDA: a graph with CPU and cuda:0 parts gets one group per device, the copy between stays") {
  TypedGraph typed;
  const ValueId x = typed.input({4, 8}, kCPU);
  const ValueId y = typed.input({4, 8}, kCPU);
  const TensorMeta on_cpu{{4, 8}, kFloat32, kCPU};
  const TensorMeta on_gpu{{4, 8}, kFloat32, kGpu};
  const ValueId product = typed.node("mul", {x, y}, on_cpu);
  const ValueId exponent = typed.node("exp", {product}, on_cpu);
  const ValueId moved =
      typed.node("to_device", {exponent}, on_gpu, Attrs{{"device", kGpu}, {"non_blocking", false}});
  const ValueId rectified = typed.node("relu", {moved}, on_gpu);
  typed.graph.outputs = {typed.node("neg", {rectified}, on_gpu)};
  Graph graph = typed.graph;
  REQUIRE(fuse_pointwise(graph) == 2);
  verify(graph);
  const std::vector<const FusedOpDef*> ops = fused_ops(graph);
  REQUIRE(ops.size() == 2);
  CHECK(ops[0]->group.device == kCPU);
  CHECK(ops[0]->group.summary() == "mul+exp");
  CHECK(ops[0]->function != nullptr);
  CHECK(ops[1]->group.device == kGpu);
  CHECK(ops[1]->group.summary() == "relu+neg");
  CHECK(ops[1]->cuda != nullptr);
  CHECK(graph.count_op("to_device") == 1);
  // A node whose inputs live on two devices is never a member.
  CHECK(unfusible_reason(typed.graph, typed.graph.nodes[2]).find("is not a pointwise op") != std::string::npos);
}
TEST_CASE("fusion on CUDA: a mean of 16 M elements into one is a fused root, as is a sum per row") {
  TypedGraph typed;
  const TensorMeta full{{4096, 4096}, kFloat32, kGpu};
  const ValueId a = typed.input({4096, 4096}, kGpu);
  const ValueId b = typed.input({4096, 4096}, kGpu);
  const ValueId difference = typed.node("sub", {a, b}, full, Attrs{{"alpha", 1.0}});
  const ValueId squared = typed.node("mul", {difference, difference}, full);
  const ValueId loss = typed.node("mean", {squared}, TensorMeta{{}, kFloat32, kGpu}, Attrs{{"dims", Dims{}}, {"keepdim", false}});
  // The same chain on other inputs, summed per row (4096 outputs).
  const ValueId c = typed.input({4096, 4096}, kGpu);
  const ValueId other = typed.node("sub", {c, b}, full, Attrs{{"alpha", 1.0}});
  const ValueId rows = typed.node("sum", {typed.node("mul", {other, other}, full)},
                                  TensorMeta{{4096}, kFloat32, kGpu}, Attrs{{"dims", Dims{1}}, {"keepdim", false}});
  typed.graph.outputs = {loss, rows};
  Graph graph = typed.graph;
  // The one output's 16 M elements are split over 1024 blocks (graph/fused_launch.h), so the
  // squared differences are never written out.
  REQUIRE(fuse_pointwise(graph) == 2);
  verify(graph);
  CHECK(graph.count_op("mean") == 0);
  CHECK(graph.count_op("sum") == 0);
  std::vector<std::string> summaries;
  for (const FusedOpDef* op : fused_ops(graph)) summaries.push_back(op->group.summary());
  CHECK(summaries == std::vector<std::string>{"sub+mul+mean", "sub+mul+sum"});
  CHECK(fused_cuda_launch(fused_ops(graph)[0]->group).pieces == 1024);
}
#endif  // EMBER_HAS_CUDA

}  // namespace test_fusion_cuda
