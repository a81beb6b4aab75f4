// Registry-driven equivalence of generated code: every pointwise op with a functor, fused with a
// neighbour (mul of two inputs), run through the generated library on broadcast and on contiguous
// inputs, equals eager execution for float32, float64 and (where the op takes it) bfloat16; so does
// the group's generated CUDA kernel, run on the CPU through cuda_emulation.h. Ops the fuser
// rejects must come with a reason. New registry ops are covered without editing this file.
#include <doctest/doctest.h>

#include <map>
#include <sstream>

#include "graph/codegen_cpp.h"
#include "graph/fusion.h"
#include "cuda_emulation.h"
#include "fusion_test_util.h"

namespace test_codegen {

using namespace ember;
using namespace ember::graph;
using graph_test::GraphBuilder;

namespace {

struct Parameter {
  std::string type;  // "Tensor", "float", "float?", "bool", ...
  std::string name;
};

// "clamp(Tensor a, float? min, float? max) -> Tensor" -> its parameters.
std::vector<Parameter> parameters_of(const std::string& schema) {
  const size_t open = schema.find('('), close = schema.find(')');
  std::vector<Parameter> parameters;
  std::stringstream list(schema.substr(open + 1, close - open - 1));
  std::string item;
  while (std::getline(list, item, ',')) {
    std::stringstream words(item);
    Parameter parameter;
    words >> parameter.type >> parameter.name;
    parameter.name = parameter.name.substr(0, parameter.name.find('='));
    parameters.push_back(parameter);
  }
  return parameters;
}

// Attrs keeps only the name's pointer: the literal for each float attribute an op may have.
const char* attribute_name(const std::string& name) {
  for (const char* known :
       {"alpha", "value", "min", "max", "min_val", "max_val", "negative_slope", "beta", "threshold"})
    if (name == known) return known;
  return "unknown";
}

// Test values of scalar attributes: not 1 or 0, so alpha and scalar paths are exercised; softplus'
// threshold is low enough that some elements take the x branch and others the logarithm.
double attribute_value(const std::string& name) {
  if (name == "min" || name == "min_val") return -0.25;
  if (name == "max" || name == "max_val") return 0.6;
  if (name == "value") return 1.5;
  if (name == "negative_slope") return 0.2;
  if (name == "beta") return 1.5;
  if (name == "threshold") return 2.0;
  return 0.75;
}

struct Outcome {
  bool fused = false;
  std::string reason;      // why the fuser rejected the op
  double error = 0;        // worst relative error of fused against eager
  bool supported = true;   // false: eager refuses this dtype (nothing to compare)
  FusedGroup group;        // the fused group, for its CUDA kernel's emulated run
  std::vector<Tensor> inputs;
  Tensor expected;
};

// Graph: t = mul(x, y); r = op(t, <further tensors>); return r. x is [3, 5]; y and the further
// tensors are broadcast ([5], [3, 1]) or full [3, 5]; a tensor named "condition" is bool.
Outcome run_case(const OpDef& op, const std::vector<Parameter>& parameters, DType dtype, bool broadcast, bool flag) {
  Outcome outcome;
  manual_seed(7);
  auto make = [&](const Dims& sizes) { return to_dtype(mul(randn(sizes), 1.5), dtype); };
  GraphBuilder builder;
  Attrs attrs;
  std::vector<ValueId> operands;
  try {
    const ValueId x = builder.input(make({3, 5}));
    const ValueId y = builder.input(make(broadcast ? Dims{5} : Dims{3, 5}));
    const ValueId t = builder.node("mul", {x, y});
    int tensors = 0;
    for (const Parameter& parameter : parameters) {
      if (parameter.type == "Tensor") {
        if (parameter.name == "condition") {
          operands.push_back(builder.input(gt(make({3, 5}), scalar_tensor(0.0, {.dtype = dtype}))));
        } else if (tensors++ == 0) {
          operands.push_back(t);
        } else {
          operands.push_back(builder.input(make(broadcast ? (tensors % 2 ? Dims{3, 1} : Dims{5}) : Dims{3, 5})));
        }
      } else if (parameter.type == "float" || parameter.type == "float?") {
        attrs.set(attribute_name(parameter.name), attribute_value(parameter.name));
      } else if (parameter.type == "bool") {
        attrs.set("tanh", flag);
      } else if (parameter.type == "int") {
        attrs.set("n", int64_t{2});  // polygamma's order: 2 takes the zeta path, not digamma's
      }
    }
    builder.graph.outputs.push_back(builder.node(op.name, operands, attrs));
  } catch (const Error&) {
    outcome.supported = false;  // eager does not take this dtype
    return outcome;
  }
  const Tensor expected = builder.eager[builder.graph.outputs[0]];
  Graph fused = builder.graph;
  outcome.fused = fuse_pointwise(fused) == 1;
  if (!outcome.fused) {
    outcome.reason = unfusible_reason(builder.graph, builder.graph.nodes.back());
    return outcome;
  }
  verify(fused);
  REQUIRE(fused.nodes.size() == 1);
  outcome.error = graph_test::max_relative_error(builder.run(fused).at(0), expected);
  outcome.group = as_fused(*fused.nodes[0].op)->group;
  for (ValueId input : fused.nodes[0].inputs) outcome.inputs.push_back(builder.eager[input]);
  outcome.expected = expected;
  return outcome;
}

}  // namespace

TEST_CASE("codegen: every pointwise registry op, fused with a neighbour, equals eager on both targets") {
  std::map<std::string, std::string> rejected;
  int fused_ops = 0, bit_equal = 0, compared = 0;
  std::vector<Outcome> emulated;  // each fused case again, through its CUDA kernel (cuda_emulation.h)
  for (const OpDef* op : registry().all()) {
    if (op->kind != OpKind::Pointwise || op->functor.empty()) continue;
    const std::vector<Parameter> parameters = parameters_of(op->schema);
    // Only attributes this test knows how to fill; a new kind fails here, visibly.
    for (const Parameter& parameter : parameters) {
      INFO(op->name, " parameter ", parameter.type, " ", parameter.name);
      const bool known = parameter.type == "Tensor" || parameter.type == "bool" ||
                         (parameter.type == "int" && parameter.name == "n") ||
                         ((parameter.type == "float" || parameter.type == "float?") &&
                          std::string(attribute_name(parameter.name)) != "unknown");
      CHECK(known);
    }
    const bool has_flag = op->schema.find("bool tanh") != std::string::npos;
    for (DType dtype : {kFloat32, kFloat64, kBFloat16})
      for (bool broadcast : {true, false})
        for (bool flag : has_flag ? std::vector<bool>{false, true} : std::vector<bool>{false}) {
          INFO(op->name, " ", dtype, broadcast ? " broadcast" : " contiguous", flag ? " tanh" : "");
          const Outcome outcome = run_case(*op, parameters, dtype, broadcast, flag);
          if (!outcome.supported) {
            CHECK(dtype == kBFloat16);  // every pointwise op takes float32 and float64
            continue;
          }
          if (!outcome.fused) {
            // A rejection without a recorded reason is a fuser bug.
            CHECK_MESSAGE(!outcome.reason.empty(), op->name, " was not fused and no reason was given");
            rejected[op->name] = outcome.reason;
            continue;
          }
          ++compared;
          CHECK(std::isfinite(outcome.error));  // same shape, dtype and NaN positions
          // Float math is the same expression; bfloat16 rounds each step's result to bfloat16 as
          // eager stores it, so it is eager's bits.
          const double tolerance = dtype == kBFloat16 ? 0.0 : dtype == kFloat32 ? 1e-6 : 1e-14;
          CHECK(outcome.error <= tolerance);
          if (outcome.error == 0) ++bit_equal;
          if (dtype == kFloat32 && broadcast && !flag) ++fused_ops;
          emulated.push_back(outcome);
          emulated.back().group.name = fmt::format("case_{}", emulated.size());
          emulated.back().reason = fmt::format("{} {}{}{}", op->name, dtype, broadcast ? " broadcast" : " contiguous",
                                               flag ? " tanh" : "");
        }
  }
  // The same groups' generated CUDA kernels, one program, run on the CPU with the packed arguments.
  std::vector<const FusedGroup*> groups;
  for (const Outcome& outcome : emulated) groups.push_back(&outcome.group);
  const auto module = graph_test::compile_emulated(groups);
  // 2 blocks of 4 threads over 15 elements: each thread loops (test_fused_cuda_emulation.cpp runs
  // the backend's own launch shapes; 256 threads per block here would only cost thread starts).
  const FusedCudaLaunch launch{2, 4, 1};
  for (const Outcome& outcome : emulated) {
    INFO("CUDA kernel of ", outcome.reason);
    const double error = graph_test::max_relative_error(
        graph_test::run_emulated(*module, outcome.group, outcome.inputs, launch).at(0), outcome.expected);
    const DType dtype = outcome.group.dtype;
    CHECK(std::isfinite(error));
    CHECK(error <= (dtype == kBFloat16 ? 0.0 : dtype == kFloat32 ? 1e-6 : 1e-14));
  }
  MESSAGE(emulated.size(), " generated CUDA kernels run through the CPU emulation");
  for (const auto& [name, reason] : rejected) MESSAGE("not fusible: ", name, ": ", reason);
  MESSAGE(fused_ops, " ops fused; ", bit_equal, " of ", compared, " comparisons bit-equal");
  CHECK(fused_ops >= 60);
  // Bool values ride along in a group's floating dtype: comparisons, the value tests and the
  // logical ops (bool results) and where (a bool condition) fuse with their float neighbours.
  for (const char* op : {"eq", "where", "isnan", "isinf", "isfinite", "logical_not", "logical_and", "logical_xor"})
    CHECK_MESSAGE(rejected.count(op) == 0, op, " was not fused: ", rejected[op]);
}

}  // namespace test_codegen
