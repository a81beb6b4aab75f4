// Bool values in fused groups: the value tests (isnan, isinf, isfinite), the logical ops and
// where fuse with their floating neighbours, carrying bool as 0 and 1 of the group's dtype; a
// bool result or export is stored as bool. Fused equals eager bit for bit, on the CPU and through
// the generated CUDA kernel's emulation, and a compiled training step with isfinite, where, prod
// and cumsum equals eager in its values and gradients.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>

#include "cuda_emulation.h"
#include "fusion_test_util.h"
#include "graph/compile.h"
#include "graph/fusion.h"
#include "runtime/zero_grad.h"

namespace test_fusion_bool {

using namespace ember;
using graph_test::GraphBuilder;

namespace {

constexpr double kNan = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// [4, 3] with NaN, +-inf and zeros of both signs among ordinary values.
const std::vector<double> kValues{kNan, 1.0, -2.0, kInf, -0.0, 0.5, -1.0, -kInf, 0.0, 3.0, kNan, -0.25};

const graph::FusedOpDef& only_fused_node(const graph::Graph& graph) {
  const std::vector<const graph::FusedOpDef*> fused = graph::fused_ops(graph);
  REQUIRE(fused.size() == 1);
  return *fused[0];
}

}  // namespace

TEST_CASE("fusion: isfinite, mul and where form one group, equal to eager for every floating dtype") {
  for (DType dtype : {kFloat32, kFloat64, kBFloat16}) {
    INFO(dtype);
    GraphBuilder builder;
    const graph::ValueId x = builder.input(from_vector<double>(kValues, {4, 3}, {.dtype = dtype}));
    const graph::ValueId scale = builder.input(from_vector<double>({0.5, 2.0, -1.5}, {3}, {.dtype = dtype}));
    const graph::ValueId zero = builder.input(scalar_tensor(0.0, {.dtype = dtype}));
    const graph::ValueId finite = builder.node("isfinite", {x});
    const graph::ValueId scaled = builder.node("mul", {x, scale});
    const graph::ValueId safe = builder.node("where", {finite, scaled, zero});
    builder.graph.outputs = {safe};
    graph::Graph fused = builder.graph;
    REQUIRE(graph::fuse_pointwise(fused) == 1);
    CHECK(fused.count_op("isfinite") == 0);
    CHECK(fused.count_op("where") == 0);
    const graph::FusedGroup& group = only_fused_node(fused).group;
    CHECK(group.summary() == "isfinite+mul+where");
    CHECK(group.dtype == dtype);
    CHECK(group.steps[0].dtype == kBool);
    const Tensor result = builder.run(fused).at(0);
    CHECK(graph_test::max_relative_error(result, builder.eager[safe]) == 0.0);
    CHECK(std::isfinite(result.to(kFloat64).sum().item()));
  }
}

TEST_CASE("fusion: a bool root (logical ops of value tests) and a bool export are stored as bool") {
  GraphBuilder builder;
  const graph::ValueId x = builder.input(from_vector<double>(kValues, {4, 3}, {.dtype = kFloat32}));
  const graph::ValueId zero = builder.input(scalar_tensor(0.0));
  const graph::ValueId nan = builder.node("isnan", {x});
  const graph::ValueId positive = builder.node("gt", {x, zero});
  const graph::ValueId not_positive = builder.node("logical_not", {positive});
  const graph::ValueId either = builder.node("logical_or", {nan, not_positive});
  const graph::ValueId odd = builder.node("logical_xor", {either, positive});
  // `nan` is read outside the group too (a sum, not pointwise): the fused node exports it.
  const graph::ValueId nan_count = builder.node("sum", {nan}, {{"dims", Dims{}}, {"keepdim", false}});
  builder.graph.outputs = {odd, nan_count};
  graph::Graph fused = builder.graph;
  REQUIRE(graph::fuse_pointwise(fused) == 1);
  const graph::FusedGroup& group = only_fused_node(fused).group;
  CHECK(group.dtype == kFloat32);  // from the producers: the bool root has no floating value
  CHECK(group.output.dtype == kBool);
  REQUIRE(group.exports.size() == 1);
  CHECK(group.export_dtype(0) == kBool);
  const std::vector<Tensor> results = builder.run(fused);
  CHECK(results.at(0).dtype() == kBool);
  CHECK(results.at(0).to_vector<bool>() == builder.eager[odd].to_vector<bool>());
  CHECK(results.at(1).item<int64_t>() == 2);
  // The generated CUDA kernel, run on the CPU: the same bool result and export.
  const std::vector<const graph::FusedGroup*> groups{&group};
  const auto module = graph_test::compile_emulated(groups);
  std::vector<Tensor> inputs;
  for (graph::ValueId input : fused.nodes[0].inputs) inputs.push_back(builder.eager[input]);
  const std::vector<Tensor> emulated = graph_test::run_emulated(*module, group, inputs, {2, 4, 1});
  CHECK(emulated.at(0).to_vector<bool>() == builder.eager[odd].to_vector<bool>());
  CHECK(emulated.at(1).to_vector<bool>() == builder.eager[nan].to_vector<bool>());
}

TEST_CASE("fusion: a bool + bool step stores true, not 2, before a float step reads it") {
  GraphBuilder builder;
  const graph::ValueId x = builder.input(from_vector<double>({1.0, kNan, kInf, -kInf}, {4}));
  const graph::ValueId y = builder.input(from_vector<double>({2.0, 3.0, 4.0, 5.0}, {4}));
  const graph::ValueId nan = builder.node("isnan", {x});
  const graph::ValueId infinite = builder.node("isinf", {x});
  const graph::ValueId either = builder.node("add", {nan, infinite}, {{"alpha", 1.0}});  // bool add is or
  const graph::ValueId twice = builder.node("add", {either, either}, {{"alpha", 1.0}});
  const graph::ValueId scaled = builder.node("mul", {twice, y});
  builder.graph.outputs = {scaled};
  graph::Graph fused = builder.graph;
  REQUIRE(graph::fuse_pointwise(fused) == 1);
  const std::vector<double> expected{0.0, 3.0, 4.0, 5.0};  // (nan | inf) | itself = true, times y
  CHECK(builder.eager[scaled].to_vector<double>() == expected);
  CHECK(builder.run(fused).at(0).to_vector<double>() == expected);
}

TEST_CASE("fusion: a value test of another floating dtype stays out of the group, with the reason") {
  GraphBuilder builder;
  const graph::ValueId wide = builder.input(from_vector<double>(kValues, {4, 3}));
  const graph::ValueId x = builder.input(ones({4, 3}));
  const graph::ValueId zero = builder.input(scalar_tensor(0.0));
  const graph::ValueId nan = builder.node("isnan", {wide});  // computes in float64
  const graph::ValueId doubled = builder.node("mul", {x, x});
  const graph::ValueId kept = builder.node("where", {nan, zero, doubled});  // float32
  builder.graph.outputs = {kept};
  graph::Graph fused = builder.graph;
  REQUIRE(graph::fuse_pointwise(fused) == 1);
  CHECK(fused.count_op("isnan") == 1);
  CHECK(only_fused_node(fused).group.summary() == "mul+where");
  CHECK(graph_test::max_relative_error(builder.run(fused).at(0), builder.eager[kept]) == 0.0);
}

TEST_CASE("compile: a training step with isfinite, where, prod and cumsum equals eager, fused and unfused") {
  for (const bool fuse : {true, false}) {
    INFO("fuse ", fuse);
    Tensor weight = from_vector<double>({0.5, -1.0, 2.0, 1.5, 0.25, -0.75, 1.0, 2.0, -0.5, 0.8, 1.2, -2.0}, {4, 3})
                        .requires_grad_();
    auto step = [&](const Tensor& x) {
      zero_grads({weight}, true);
      // Non-finite inputs become 0: rows of the product then hold one or two zeros (prod's rule).
      const Tensor y = mul(where(isfinite(x), x, scalar_tensor(0.0, {.dtype = kFloat64})), weight);
      const Tensor loss = add(sum(prod(y, 1)), sum(mul(cumsum(y, 0), y)));
      loss.backward();
      return loss.detach();
    };
    auto compiled = ember::compile(step, {.fullgraph = true, .fuse = fuse});
    const Tensor with_specials = from_vector<double>(kValues, {4, 3});
    for (int call = 0; call < 4; ++call) {  // warm-up, capture, two replays
      INFO("call ", call);
      const Tensor x = call % 2 == 0 ? with_specials : mul(with_specials, -0.5);
      const Tensor expected_loss = step(x);
      const Tensor expected_grad = weight.grad().clone();
      const Tensor loss = compiled(x);
      CHECK(graph_test::max_relative_error(loss, expected_loss) <= 1e-15);
      CHECK(graph_test::max_relative_error(weight.grad(), expected_grad) <= 1e-15);
      CHECK(std::isfinite(weight.grad().sum().item()));
    }
    CHECK(compiled.state().replays() == 2);
    if (fuse) CHECK(compiled.state().graph()->count_op("isfinite") == 0);  // inside a fused kernel
  }
}

}  // namespace test_fusion_bool
