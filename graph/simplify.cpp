// Algebraic simplification: identities (x*1, x+0, neg(neg(x)), clone(x), ...) whose result is
// exactly x are replaced by x. Each rule fires only when the result's type equals x's (no
// broadcast to a bigger shape, no dtype promotion) and x may stand in for a fresh buffer.
#include <cmath>

#include <fmt/format.h>

#include "graph/pass_util.h"
#include "graph/passes.h"

namespace ember::graph {

namespace {

bool same_type(const TensorMeta& a, const TensorMeta& b) {
  return a.sizes == b.sizes && a.dtype == b.dtype && a.device == b.device;
}

// Constants bigger than this are not scanned for all-ones / all-zeros.
constexpr int64_t kMaxScannedConstant = 4096;

class Simplifier {
 public:
  explicit Simplifier(Graph& graph) : graph_(graph), pinned_(pinned_values(graph)) {
    const size_t count = graph.values.size();
    for (const WriteBack& write : graph.write_backs) pinned_[write.value] = true;
    producer_.assign(count, -1);
    base_.resize(count);
    for (size_t v = 0; v < count; ++v) base_[v] = static_cast<ValueId>(v);
    mutated_.assign(count, false);
    // Each value's buffer family (the value its views and in-place results alias), and the
    // families some node writes into.
    for (size_t n = 0; n < graph.nodes.size(); ++n) {
      const Node& node = graph.nodes[n];
      for (ValueId output : node.outputs) producer_[output] = static_cast<int>(n);
      if (node.op->kind == OpKind::View && node.inputs[0] >= 0) base_[node.outputs[0]] = base_[node.inputs[0]];
      if (node.op->kind != OpKind::InPlace) continue;
      int output = 0;
      for (size_t i = 0; i < node.inputs.size(); ++i) {
        if (!is_mutated_input(*node.op, i)) continue;
        if (node.inputs[i] >= 0) {
          mutated_[base_[node.inputs[i]]] = true;
          base_[node.outputs[output]] = base_[node.inputs[i]];
        }
        ++output;
      }
    }
  }

  // The value `node`'s only output equals, or -1 when no rule applies.
  ValueId rewrite(const Node& node, std::string& rule) const {
    const std::string& name = node.op->name;
    const std::vector<ValueId>& in = node.inputs;
    if (node.refresh || node.outputs.size() != 1) return -1;
    const double alpha = node.attrs.get_or<double>("alpha", 1.0);
    auto scalar_is = [&](double target) { return node.attrs.get_or<double>("value", target + 1) == target; };
    if (name == "mul" && all_equal(in[1], 1.0)) return rule = "x*1", in[0];
    if (name == "mul" && all_equal(in[0], 1.0)) return rule = "1*x", in[1];
    if (name == "div" && all_equal(in[1], 1.0)) return rule = "x/1", in[0];
    if (name == "add" && std::isfinite(alpha) && all_equal(in[1], 0.0)) return rule = "x+0", in[0];
    if (name == "add" && alpha == 1.0 && all_equal(in[0], 0.0)) return rule = "0+x", in[1];
    if (name == "sub" && std::isfinite(alpha) && all_equal(in[1], 0.0)) return rule = "x-0", in[0];
    if (name == "mul_scalar" && scalar_is(1.0)) return rule = "mul_scalar(x, 1)", in[0];
    if (name == "div_scalar" && scalar_is(1.0)) return rule = "div_scalar(x, 1)", in[0];
    if (name == "add_scalar" && scalar_is(0.0)) return rule = "add_scalar(x, 0)", in[0];
    if (name == "to_dtype") return rule = "to_dtype to its own dtype", in[0];  // type check below
    if (name == "clone") return rule = "clone", in[0];
    if (name == "neg") {
      const Node* inner = producer(in[0]);
      if (inner != nullptr && inner->op->name == "neg") return rule = "neg(neg(x))", inner->inputs[0];
    }
    if (name == "transpose") {
      const Node* inner = producer(in[0]);
      if (inner != nullptr && inner->op->name == "transpose" && same_transpose(*inner, node))
        return rule = "transpose(transpose(x))", inner->inputs[0];
    }
    return -1;
  }

  // Whether `x` may replace the value `node` computes: the same type and a result nobody needs as
  // its own buffer. A result that is not a view is a fresh buffer: then x's buffer must never be
  // written in the graph (a reader after the write would see it), and x must be fresh and
  // contiguous too, since a strided x could send a downstream GEMM or reduction down another,
  // differently rounded path.
  bool replaceable(const Node& node, ValueId x) const {
    const ValueId result = node.outputs[0];
    if (x < 0 || pinned_[result]) return false;
    if (!same_type(graph_.values[result].meta, graph_.values[x].meta)) return false;
    // A view with exactly x's geometry is x, writes included.
    if (node.op->kind == OpKind::View) return true;
    return !mutated_[base_[x]] && fresh_contiguous(x);
  }

 private:
  const Node* producer(ValueId id) const {
    if (id < 0 || producer_[id] < 0) return nullptr;
    const Node* node = &graph_.nodes[producer_[id]];
    return node->refresh ? nullptr : node;
  }

  bool fresh_contiguous(ValueId x) const {
    const Value& value = graph_.values[x];
    if (value.source == ValueSource::Constant) return graph_.constant_tensors[value.index].is_contiguous();
    if (value.source != ValueSource::NodeOutput) return false;  // inputs and state: strides unknown
    const OpKind kind = graph_.nodes[value.index].op->kind;
    return kind != OpKind::View && kind != OpKind::InPlace;
  }

  // A small constant whose elements all equal `target`.
  bool all_equal(ValueId id, double target) const {
    if (id < 0 || graph_.values[id].source != ValueSource::Constant) return false;
    const Tensor& tensor = graph_.constant_tensors[graph_.values[id].index];
    if (tensor.numel() == 0 || tensor.numel() > kMaxScannedConstant) return false;
    NoGradGuard no_grad;
    const std::vector<double> values = tensor.to(kCPU).to(kFloat64).contiguous().to_vector<double>();
    for (double value : values)
      if (value != target) return false;
    return true;
  }

  bool same_transpose(const Node& inner, const Node& outer) const {
    const int rank = static_cast<int>(graph_.values[inner.outputs[0]].meta.sizes.size());
    auto wrap = [rank](int64_t dim) { return dim < 0 ? dim + rank : dim; };
    const int64_t a0 = wrap(inner.attrs.get<int64_t>("dim0")), a1 = wrap(inner.attrs.get<int64_t>("dim1"));
    const int64_t b0 = wrap(outer.attrs.get<int64_t>("dim0")), b1 = wrap(outer.attrs.get<int64_t>("dim1"));
    return (a0 == b0 && a1 == b1) || (a0 == b1 && a1 == b0);
  }

  Graph& graph_;
  std::vector<bool> pinned_;
  std::vector<int> producer_;
  std::vector<ValueId> base_;
  std::vector<bool> mutated_;
};

std::string value_text(const Graph& graph, ValueId id) {
  const Value& value = graph.values[id];
  switch (value.source) {
    case ValueSource::GraphInput: return fmt::format("%x{}", value.index);
    case ValueSource::StateInput: return fmt::format("%s{}", value.index);
    case ValueSource::Constant: return fmt::format("%c{}", value.index);
    case ValueSource::NodeOutput: break;
  }
  return fmt::format("%{}", id);
}

}  // namespace

int simplify_algebra(Graph& graph, std::vector<std::string>* notes) {
  const Simplifier simplifier(graph);
  std::vector<ValueId> replacement(graph.values.size());
  for (size_t v = 0; v < replacement.size(); ++v) replacement[v] = static_cast<ValueId>(v);
  auto resolve = [&](ValueId id) { return id < 0 ? id : replacement[id]; };
  int rewrites = 0;
  for (Node& node : graph.nodes) {
    for (ValueId& input : node.inputs) input = resolve(input);
    std::string rule;
    const ValueId x = simplifier.rewrite(node, rule);
    if (x < 0 || !simplifier.replaceable(node, x)) continue;
    replacement[node.outputs[0]] = x;
    ++rewrites;
    if (notes != nullptr)
      notes->push_back(fmt::format("{}: %{} = {}(...) is {}", rule, node.outputs[0], node.op->name, value_text(graph, x)));
  }
  for (WriteBack& write : graph.write_backs) write.value = resolve(write.value);
  return rewrites;
}

}  // namespace ember::graph
