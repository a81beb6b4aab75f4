// The graph IR of the compile stage: typed values, nodes that call registry ops, graph inputs
// (the user's arguments), state inputs (tensors fn reads without receiving them, bound by the
// identity of their TensorImpl), constants (tensors the graph owns, made by constant folding),
// outputs and write-backs; plus the text dump, DOT export and verifier.
#pragma once

#include <memory>
#include <optional>
#include <source_location>
#include <string>
#include <vector>

#include "runtime/dispatch.h"

namespace ember::graph {

using ValueId = int;  // index into Graph::values; -1 stands for an absent optional input

enum class ValueSource : uint8_t { GraphInput, StateInput, NodeOutput, Constant };

struct Value {
  TensorMeta meta;
  ValueSource source = ValueSource::NodeOutput;
  int index = 0;   // which graph input, state input, node or constant produces it
  int output = 0;  // which output of that node
};

struct Node {
  const OpDef* op = nullptr;
  Attrs attrs;
  std::vector<ValueId> inputs;
  std::vector<ValueId> outputs;
  // Host scalars read per call (lr, step): recomputes attrs before each replay; empty when none.
  AttrRefresh refresh;
  // Host effects fn ran after the previous refreshed node and before this one (an LR scheduler's
  // step() between two optimizers' steps): replayed just before `refresh`, so every refresh reads
  // the host state eager execution would have read. Only refreshed nodes carry effects.
  std::vector<HostEffect> effects;
  // The user's line that called the op when it was captured (CallSite), for a replay's errors.
  std::optional<std::source_location> call_site;
  // The node's index when captured (passes move, fuse and remove nodes; -1 when a pass made it),
  // and per effect how many nodes were captured before fn ran it: after an error at this node a
  // replay still runs the effects that eager execution had run (replay_effects_before_error).
  int captured_at = -1;
  std::vector<int> effect_positions;
  // Captured while a checkpoint (utils::checkpoint) recomputed its function for the backward: a
  // twin of a forward node, which common-subexpression elimination must not merge into it, or the
  // forward's activation would stay live until the backward and the checkpoint would free nothing.
  bool recomputed = false;
};

// What a replay does for `node` before running it: its host effects, then its refresh.
inline void refresh_host_state(Node& node) {
  for (HostEffect& effect : node.effects) effect.replay();
  if (node.refresh) node.refresh(node.attrs);
}

struct Graph;

// After a replay's error at graph.nodes[failed]: runs the host effects fn ran before that op in
// the capture (an LR scheduler stepped before the loss), which the replay had attached to a later
// refreshed node or to the graph's end. Nothing when the node's capture position is unknown.
void replay_effects_before_error(Graph& graph, size_t failed);

// Called in a catch block around a replayed node: rethrows the ember::Error its kernel raised
// with the line that called the op when captured, which eager's message names and a replay (run
// outside any public call) would lose. Other exceptions, and errors that name a call site already
// (a replay inside a public call), are rethrown as they are.
[[noreturn]] void rethrow_at_call_site(const Node& node);

// A state tensor whose final value is produced in the graph: copied back after a replay.
struct WriteBack {
  int state = 0;
  ValueId value = 0;
};

// A leaf whose .grad a graph reads or sets: a state tensor (a parameter fn reaches itself) or one
// of the caller's arguments (an input requiring grad: a saliency map, an adversarial example, a
// weight passed in), which may be another tensor at every call.
struct GradLeaf {
  bool argument = false;
  int index = 0;  // into state_tensors, or into the caller's arguments (the first graph inputs)
};

// A graph input the caller does not pass: each call feeds it the current .grad of `leaf`.
// Gradients made outside fn (backward() before a compiled optimizer step) are new tensors each
// call; binding them through their leaf keeps one graph for all calls.
struct GradInput {
  int input = 0;
  GradLeaf leaf;
};

// The final .grad of `leaf`: set to `value`, or cleared when value is -1.
struct GradWriteBack {
  GradLeaf leaf;
  ValueId value = -1;
};

struct Graph {
  std::vector<Value> values;
  std::vector<Node> nodes;  // in execution order
  std::vector<ValueId> inputs;
  std::vector<ValueId> state_inputs;
  std::vector<std::shared_ptr<TensorImpl>> state_tensors;  // parallel to state_inputs
  std::vector<ValueId> outputs;
  std::vector<WriteBack> write_backs;
  std::vector<GradWriteBack> grad_write_backs;
  std::vector<GradInput> grad_inputs;  // the last graph inputs, after the caller's
  // Values computed once at compile time, held by the graph (never mutated, never returned).
  std::vector<ValueId> constants;
  std::vector<Tensor> constant_tensors;  // parallel to constants
  // Graph and state inputs whose tensors shared a buffer when captured, each paired with an
  // earlier one on that buffer (state pairs first); the guards make replays share the same way.
  // A write into one changes what the other holds (see eliminate_common_subexpressions).
  std::vector<std::pair<ValueId, ValueId>> shared_buffers;
  // Host effects fn ran after its last refreshed node: replayed once the graph has run.
  std::vector<HostEffect> final_effects;
  std::vector<int> final_effect_positions;  // as Node::effect_positions
  // OpDefs synthesized by passes (fused groups) that nodes point to; they live as long as the graph.
  std::vector<std::shared_ptr<const OpDef>> owned_ops;

  ValueId add_value(const TensorMeta& meta, ValueSource source, int index, int output = 0);
  ValueId add_input(const TensorMeta& meta);
  ValueId add_state(const std::shared_ptr<TensorImpl>& impl);
  ValueId add_constant(const Tensor& tensor);
  // Appends a node; its outputs become new values with `output_metas`.
  int add_node(const OpDef& op, const Attrs& attrs, std::vector<ValueId> inputs,
               std::span<const TensorMeta> output_metas);
  int count_op(const std::string& name) const;
};

TensorMeta meta_of(const Tensor& tensor);

// The tensor `leaf` names in a call given `inputs` (every graph input, the caller's first).
const std::shared_ptr<TensorImpl>& grad_leaf_tensor(const Graph& graph, const GradLeaf& leaf,
                                                    std::span<const Tensor> inputs);

// One node a line: `%7 = linear(%x0, %s0, %s1)  # [32, 256] float32`.
std::string to_text(const Graph& graph);
std::string to_dot(const Graph& graph);

// Throws ember::Error naming the node and the problem: a use before definition or of a missing
// value, a value defined twice, outputs whose type disagrees with the op's shape rule.
void verify(const Graph& graph);

}  // namespace ember::graph
