// Algebraic simplification: each rule fires on a minimal captured graph and the replay equals
// eager bit for bit; the cases where an identity would change a type, a shape or a buffer keep
// their node.
#include <doctest/doctest.h>

#include "capture_util.h"
#include "graph/passes.h"
#include "graph_test_util.h"

namespace test_simplify {

using namespace ember;
using namespace ember::graph;
using graph_test::capture_one;
using graph_test::replay_one;

namespace {

// [2, 3]: a mix of signs, no zeros.
Tensor sample() { return from_vector<float>({1.5f, -2.0f, 0.25f, 3.0f, -0.75f, 4.5f}, {2, 3}); }

struct Rule {
  const char* name;     // the rule's name in the pass notes
  const char* removed;  // the op the rewrite bypasses
  std::function<Tensor(const Tensor&)> fn;
};

// Folds constants and simplifies as compile() does; returns the notes of the simplification.
std::vector<std::string> fold_and_simplify(Graph& graph) {
  fold_constants(graph);
  verify(graph);
  std::vector<std::string> notes;
  simplify_algebra(graph, &notes);
  verify(graph);
  eliminate_dead_code(graph);
  drop_unused_constants(graph);
  verify(graph);
  return notes;
}

// Same type and the same values bit for bit (float64 holds every float32 exactly).
bool identical(const Tensor& a, const Tensor& b) {
  return a.sizes() == b.sizes() && a.dtype() == b.dtype() &&
         a.to(kFloat64).contiguous().to_vector<double>() == b.to(kFloat64).contiguous().to_vector<double>();
}

}  // namespace

TEST_CASE("simplify: every rule fires on a minimal graph and the replay equals eager") {
  // Each x is computed (exp) so it is a fresh contiguous buffer, and each result feeds a last
  // op (neg) so it is not itself the returned buffer.
  const std::vector<Rule> rules = {
      {"x*1", "mul", [](const Tensor& in) { return (in.exp() * ones({2, 3})).neg(); }},
      {"1*x", "mul", [](const Tensor& in) { return (ones({3}) * in.exp()).neg(); }},
      {"x/1", "div", [](const Tensor& in) { return (in.exp() / ones({1})).neg(); }},
      {"x+0", "add", [](const Tensor& in) { return add(in.exp(), zeros({3}), 2.5).neg(); }},
      {"0+x", "add", [](const Tensor& in) { return (zeros({2, 3}) + in.exp()).neg(); }},
      {"x-0", "sub", [](const Tensor& in) { return sub(in.exp(), zeros({}), -1.0).neg(); }},
      {"mul_scalar(x, 1)", "mul_scalar", [](const Tensor& in) { return (in.exp() * 1.0).neg(); }},
      {"div_scalar(x, 1)", "div_scalar", [](const Tensor& in) { return (in.exp() / 1.0).neg(); }},
      {"add_scalar(x, 0)", "add_scalar", [](const Tensor& in) { return (in.exp() + 0.0).neg(); }},
      {"neg(neg(x))", "neg", [](const Tensor& in) { return in.exp().neg().neg().exp(); }},
      {"to_dtype to its own dtype", "to_dtype", [](const Tensor& in) { return to_dtype(in.exp(), kFloat32).neg(); }},
      {"clone", "clone", [](const Tensor& in) { return in.exp().clone().neg(); }},
      {"transpose(transpose(x))", "transpose",
       [](const Tensor& in) { return in.exp().transpose(0, 1).transpose(-1, 0).neg(); }},
  };
  for (const Rule& rule : rules) {
    INFO("rule ", std::string(rule.name));
    const Tensor input = sample();
    Graph graph = capture_one(rule.fn, input);
    const int before = graph.count_op(rule.removed);
    REQUIRE(before >= 1);
    const std::vector<std::string> notes = fold_and_simplify(graph);
    REQUIRE(notes.size() == 1);
    CHECK(notes[0].rfind(rule.name, 0) == 0);
    CHECK(graph.count_op(rule.removed) < before);  // neg(neg(x)) and transposes lose both nodes
    CHECK(graph.constants.empty());  // the 1s and 0s went with the nodes that read them
    CHECK(identical(replay_one(graph, input), rule.fn(input)));
  }
}

TEST_CASE("simplify: identities that broadcast, promote, alias a returned or mutated buffer stay") {
  const std::vector<Rule> kept = {
      // x [2, 3] * ones [4, 2, 3] is [4, 2, 3]: not x.
      {"broadcast *1", "mul", [](const Tensor& in) { return (in.exp() * ones({4, 2, 3})).neg(); }},
      // float32 * float64 ones promotes: not x.
      {"promoting *1", "mul", [](const Tensor& in) { return (in.exp() * ones({3}, {.dtype = kFloat64})).neg(); }},
      {"to another dtype", "to_dtype", [](const Tensor& in) { return to_dtype(in.exp(), kFloat64).neg(); }},
      // The returned value must be its own buffer, not the caller's x.
      {"returned x*1", "mul", [](const Tensor& in) { return in.exp() * ones({3}); }},
      {"returned clone", "clone", [](const Tensor& in) { return in.exp().clone(); }},
      // The clone is read after x changed in place: it must keep the old values.
      {"clone of a mutated x", "clone",
       [](const Tensor& in) {
         Tensor x = in.exp();
         Tensor copy = x.clone();
         x.add_(in);
         return copy * x;
       }},
      // x is a graph input: its strides are not guarded, so x*1 (contiguous) is not x.
      {"input *1", "mul", [](const Tensor& in) { return (in * ones({3})).neg(); }},
      // Different dims: transpose(transpose(x, 0, 1), 1, 2) is a permutation, not x.
      {"other transpose", "transpose",
       [](const Tensor& in) { return in.view({1, 2, 3}).transpose(0, 1).transpose(1, 2).exp(); }},
  };
  for (const Rule& rule : kept) {
    INFO("case ", std::string(rule.name));
    const Tensor input = sample();
    Graph graph = capture_one(rule.fn, input);
    const int before = graph.count_op(rule.removed);
    const std::vector<std::string> notes = fold_and_simplify(graph);
    CHECK(notes.empty());
    CHECK(graph.count_op(rule.removed) == before);
    CHECK(identical(replay_one(graph, input), rule.fn(input)));
  }
}

TEST_CASE("simplify: a per-call host scalar is never assumed to stay 1") {
  double factor = 1.0;
  const Tensor input = sample();
  Graph graph;
  {
    // A node with a refresh reads its value per call: its captured 1 proves nothing.
    graph = capture_one([](const Tensor& in) { return (in.exp() * 1.0).neg(); }, input);
    Node& scale = graph.nodes[1];
    REQUIRE(scale.op->name == "mul_scalar");
    scale.refresh = [&factor](Attrs& attrs) { attrs.set("value", factor); };
  }
  CHECK(simplify_algebra(graph) == 0);
  factor = 3.0;
  CHECK(graph_test::bit_equal(replay_one(graph, input), (input.exp() * 3.0).neg()));
}

}  // namespace test_simplify
