// CompiledFunction: the variant cache with its recompile limit, capture plus passes, and the
// EMBER_LOGS events of each (graph/compile_log.h). The guards are compile_guards.cpp, the policy
// for dynamic dims dynamic_shapes.cpp, explain() compile_explain.cpp.
#include "graph/compile.h"

#include <algorithm>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "graph/capture.h"
#include "graph/codegen_cpp.h"
#include "graph/compile_internal.h"
#include "graph/compile_log.h"
#include "graph/compiled_autograd.h"
#include "graph/fusion.h"
#include "graph/passes.h"
#include "graph/segment_mode.h"
#include "runtime/autocast.h"
#include "runtime/autograd/node.h"
#include "runtime/cuda_settings.h"

namespace ember::graph {

namespace {

// Graph::shared_buffers from the captured tensors: state tensors that share memory with an
// earlier one (a parameter and a view of it, both read by fn), then the inputs' aliasing pattern.
// States are grouped by storage first: only those can share bytes, and a model's thousands of
// parameters and optimizer states must not cost a capture states x states comparisons.
void record_shared_buffers(Graph& graph, const std::vector<SharedMemory>& input_sharing) {
  std::vector<std::pair<const Storage*, size_t>> by_storage;  // sorted: a storage's states in order
  for (size_t k = 0; k < graph.state_tensors.size(); ++k)
    if (const Storage* storage = storage_of(*graph.state_tensors[k]); storage != nullptr)
      by_storage.emplace_back(storage, k);
  std::sort(by_storage.begin(), by_storage.end());
  std::vector<std::pair<size_t, size_t>> sharers;  // (state, the first earlier state it shares bytes with)
  for (size_t a = 0, group = 0; a < by_storage.size(); ++a) {
    if (by_storage[a].first != by_storage[group].first) group = a;
    const Tensor state(graph.state_tensors[by_storage[a].second]);
    for (size_t b = group; b < a; ++b)
      if (shares_memory(state, graph.state_tensors[by_storage[b].second])) {
        sharers.emplace_back(by_storage[a].second, by_storage[b].second);
        break;
      }
  }
  std::sort(sharers.begin(), sharers.end());
  for (const auto& [k, j] : sharers) graph.shared_buffers.push_back({graph.state_inputs[j], graph.state_inputs[k]});
  const int count = static_cast<int>(graph.inputs.size());
  for (const SharedMemory& pair : input_sharing) {
    const ValueId other = pair.other < count ? graph.inputs[pair.other] : graph.state_inputs[pair.other - count];
    graph.shared_buffers.push_back({other, graph.inputs[pair.input]});
  }
}

// The guards on the host state a capture depends on besides its tensors.
Guards guards_of_this_call() {
  Guards guards;
  guards.grad_mode = grad_mode_enabled();
  guards.autocast = autocast_enabled();
  guards.autocast_dtype = autocast_dtype();
  guards.allow_tf32 = get_allow_tf32();
  return guards;
}

// The passes, then fusion (unless CompileOptions::fuse is off), each checked by verify().
void optimize(Graph& graph, bool fuse, const FusionOptions& fusion) {
  verify(graph);
  run_passes(graph);
  if (!fuse) return;
  fuse_pointwise(graph, fusion);
  verify(graph);
}

// EMBER_LOGS=executor: how a captured graph will replay.
void log_executor(const Executor& executor) {
  if (!log::enabled("executor")) return;
  if (const MemoryPlan* plan = executor.memory_plan())
    fmt::print(stderr, "[ember compile] lowered executor: {} nodes, arena {} bytes ({} without reuse){}\n",
               executor.graph().nodes.size(), plan->arena_bytes, plan->unshared_bytes,
               executor.uses_cuda_graphs() ? ", replayed as CUDA graphs" : "");
  else
    fmt::print(stderr, "[ember compile] dispatching executor: {}\n", executor.why_not_lowered());
}

// EMBER_LOGS=perf_hints: what keeps a new capture from replaying as fast as it could.
void hint_at_slow_replays(const Executor& executor, bool lowered, bool size_specialization, int compiler_runs_made) {
  if (lowered && executor.memory_plan() == nullptr)
    log::event("perf_hints", fmt::format("replays dispatch every op instead of running the lowered step list: {}",
                                         executor.why_not_lowered()),
               {{"dispatching", executor.why_not_lowered()}});
  if (size_specialization && compiler_runs_made > 0)
    log::event("perf_hints",
               "the capture for new sizes compiled its kernels again: a fused group's shape holds a size derived "
               "from a dynamic one (a flattened [s * k]) or a scalar computed from it, which stays a constant",
               {{"compiler_runs", compiler_runs_made}});
}

}  // namespace

void run_passes(Graph& graph) {
  const bool logging = log::enabled("passes");
  std::vector<std::string> notes;
  std::vector<std::string>* sink = logging ? &notes : nullptr;
  // Each pass, then verify(); EMBER_LOGS=passes prints what it did. DCE runs again after the
  // rewrites, which leave the nodes they bypassed without readers.
  auto run = [&](const char* name, const char* what, auto pass) {
    const int count = pass();
    verify(graph);
    if (!logging) return;
    fmt::print(stderr, "[ember compile] pass {}: {} {}\n", name, count, what);
    for (const std::string& note : notes) fmt::print(stderr, "[ember compile]   {}\n", note);
    notes.clear();
  };
  run("dce", "nodes removed", [&] { return eliminate_dead_code(graph); });
  run("constant_folding", "nodes folded", [&] { return fold_constants(graph); });
  run("simplify", "rewrites", [&] { return simplify_algebra(graph, sink); });
  run("dce", "nodes removed", [&] { return eliminate_dead_code(graph); });
  run("drop_constants", "unused constants dropped", [&] { return drop_unused_constants(graph); });
  run("cse", "nodes removed", [&] { return eliminate_common_subexpressions(graph); });
  run("epilogue_fusion", "activations fused into GEMMs", [&] { return fuse_gemm_epilogues(graph, sink); });
  run("loss_fusion", "loss backwards fused into their forwards", [&] { return fuse_loss_backward(graph, sink); });
  if (logging)
    fmt::print(stderr, "[ember compile] after passes: {} nodes, {} constants\n", graph.nodes.size(),
               graph.constants.size());
}

const Executor* CompiledFunction::backward_executor() const {
  return entries_.empty() || !entries_.back().backward ? nullptr : &entries_.back().backward->executor;
}

void CompiledFunction::fall_back(const std::string& reason, const std::string& hint) {
  fell_back_ = true;
  log::event("recompiles", fmt::format("running eagerly from now on: {}", reason), {{"fall_back", reason}});
  log::event("perf_hints", hint, {{"fall_back", reason}});
}

void CompiledFunction::graph_break(const std::string& reason) {
  graph_breaks_.push_back(reason);
  if (!segments_) {
    segments_ =
        std::make_shared<SegmentCache>(kSegmentsPerVariant * options_.cache_limit, options_.compile_every_segment);
  }
  log::event("graph_breaks",
             fmt::format("graph break: {}; calls no captured graph serves now run fn with its kernels deferred, "
                         "as compiled segments split where it reads values on the host", reason),
             {{"reason", reason}, {"fullgraph", false}});
  log::event("perf_hints",
             "a graph break: each call runs fn's host code, shape rules and autograd recording eagerly, and only "
             "its kernels as compiled segments; read host values after the compiled call (return the tensor), or "
             "compile the part before the read on its own; fullgraph=true makes it an error",
             {{"graph_break", reason}});
}

std::vector<Tensor> CompiledFunction::run_segments(const EagerRun& run_eager) {
  // Called from its own fn, where that runs eagerly (a mode that does not record): inline.
  if (segments_->buffers().in_use) return run_eager();
  ++segmented_calls_;
  SegmentMode mode(*segments_);
  const DispatchModeGuard installed(mode);
  std::vector<Tensor> result;
  try {
    result = run_eager();
  } catch (...) {
    // The ops fn called before it threw happened, as in eager mode: their kernels run now. The
    // first error is the one the caller gets.
    try {
      mode.flush({"an exception"});
    } catch (...) {
    }
    throw;
  }
  mode.flush({"the function's return"});
  return result;
}

std::vector<Tensor> CompiledFunction::call(const std::vector<Tensor>& inputs, const EagerRun& run_eager) {
  // Called while another function is being captured: fn's ops go into that capture, inline.
  if (dispatch_mode_active()) return run_eager();
  const std::lock_guard<std::recursive_mutex> one_call_at_a_time(mutex_);
  ++calls_;
  if (fell_back_) return run_eager();
  if (calls_ <= options_.warmup_calls) {
    const uint64_t first_node = autograd::next_sequence_nr();
    std::vector<Tensor> result = run_eager();
    attach_eager_call_backward(inputs, result, first_node);  // refuses create_graph as a replay will
    return result;
  }
  std::optional<Verification> verification;
  thread_local std::vector<int> unverified;
  for (size_t e = 0; e < entries_.size(); ++e) {
    Entry& entry = entries_[e];
    const Graph& graph = entry.executor.graph();
    // A graph reading parameters' .grad tensors takes them as inputs after the caller's.
    std::vector<Tensor> extended;
    if (!graph.grad_inputs.empty()) extended = with_grad_inputs(graph, inputs);
    const std::vector<Tensor>& all = graph.grad_inputs.empty() ? inputs : extended;
    if (!guards_hold(entry.guards, graph, all)) continue;
    unverified_arguments(entry.guards, inputs, unverified);
    if (!unverified.empty()) {
      // Another entry may serve the call as it is; else the call is traced to settle these.
      if (!verification) verification = Verification{static_cast<int>(e), unverified};
      continue;
    }
    ++replays_;
    std::vector<Tensor> outputs = entry.executor.run(all);
    if (entry.backward) attach_compiled_backward(entry.backward, all, graph, outputs);
    return outputs;
  }
  if (verification) return capture(inputs, run_eager, false, -1, &*verification);
  if (segments_) return run_segments(run_eager);
  std::string reason = miss_reason(inputs);
  const SizeMiss miss = size_miss(inputs, reason);
  const bool new_sizes = miss.new_sizes;
  if (!entries_.empty() && !new_sizes) {
    recompile_reasons_.push_back(reason);
    log::event("recompiles", fmt::format("recompiling: {}", reason),
               {{"reason", reason}, {"recompiles", recompile_reasons_.size()}});
  }
  if (!new_sizes && variants() >= options_.cache_limit) {
    const bool sizes_keep_changing = options_.dynamic == false && size_change(inputs).entry >= 0;
    fall_back(fmt::format("the cache limit of {} compiled variants is reached ({})", options_.cache_limit, reason),
              sizes_keep_changing
                  ? "input sizes keep changing with dynamic=false: leave `dynamic` unset (a changed dim becomes "
                    "dynamic) or use mark_dynamic"
                  : "what the guards see keeps changing (recompile_reasons() lists it): keep it fixed between "
                    "calls, or raise cache_limit");
    return run_eager();
  }
  return capture(inputs, run_eager, new_sizes, miss.reference);
}

std::vector<Tensor> CompiledFunction::capture(const std::vector<Tensor>& inputs, const EagerRun& run_eager,
                                              bool size_specialization, int reference,
                                              const Verification* verification) {
  // A verification counts as a capture only where it becomes one (or breaks).
  if (verification == nullptr) ++captures_made_;
  const int compiler_runs_before = compiler_runs();
  add_dynamic_dims(inputs);
  FusionOptions fusion{.log = log::enabled("fusion"), .dynamic_sizes = dynamic_sizes(inputs, dynamic_dims_)};
  FusionOptions backward_fusion = fusion;
  if (reference >= 0) {
    fusion.reference_groups = reference_groups(entries_[reference].executor.graph());
    if (const std::shared_ptr<BackwardProgram>& backward = entries_[reference].backward)
      backward_fusion.reference_groups = reference_groups(backward->executor.graph());
  }
  Graph graph;
  CaptureMode mode(graph, options_.fullgraph);
  Guards guards = guards_of_this_call();
  for (const Tensor& input : inputs) {
    mode.add_input(input);
    guards.inputs.push_back(meta_of(input));
    guards.inputs_require_grad.push_back(input.requires_grad());
    guards.inputs_contiguous.push_back(input.is_contiguous());
    guards.inputs_strides.push_back(input.is_contiguous() ? Dims() : input.strides());
    guards.arguments.push_back(captured_argument(input));
  }
  const uint64_t first_node = autograd::next_sequence_nr();
  std::vector<Tensor> result;
  {
    DispatchModeGuard installed(mode);
    result = run_eager();
  }
  if (!mode.break_reason().empty()) {
    if (verification != nullptr) {
      // Unsettled, the arguments stay pinned: a later call passing others takes the segments.
      ++captures_made_;
      for (const int i : verification->arguments)
        entries_[verification->entry].guards.arguments[i].binding = CapturedArgument::Binding::Pinned;
    }
    graph_break(mode.break_reason());
    return result;
  }
  mode.finish(result);
  if (verification != nullptr) {
    if (!settle_arguments(*verification, graph, mode.grad_input_tensors())) {
      attach_eager_call_backward(inputs, result, first_node);  // the settled entry replays the next call
      return result;
    }
    ++captures_made_;
  }
  std::optional<CapturedBackward> backward;
  if (results_need_backward(result)) {
    backward = capture_backward(mode, graph, inputs, result, first_node);
    if (!mode.break_reason().empty()) {
      graph_break(mode.break_reason());
      return result;
    }
  }
  guards.host = mode.take_host_guards();
  guards.arguments_without_grad = mode.arguments_without_grad();
  std::vector<Tensor> all_inputs = inputs;  // the caller's, then the .grad tensors read as inputs
  for (const Tensor& grad : mode.grad_input_tensors()) {
    all_inputs.push_back(grad);
    guards.inputs.push_back(meta_of(grad));
    guards.inputs_require_grad.push_back(grad.requires_grad());
    guards.inputs_contiguous.push_back(grad.is_contiguous());
    guards.inputs_strides.push_back(grad.is_contiguous() ? Dims() : grad.strides());
  }
  memory_sharing(all_inputs, graph.state_tensors, guards.shared_memory);
  record_shared_buffers(graph, guards.shared_memory);
  optimize(graph, options_.fuse, fusion);
  for (const std::shared_ptr<TensorImpl>& impl : graph.state_tensors) {
    guards.states.push_back({impl->sizes, impl->dtype, impl->device});
    guards.states_require_grad.push_back(requires_grad(*impl));
    guards.states_hooks.push_back(hook_count(*impl));
  }
  if (log::enabled("graph")) fmt::print(stderr, "[ember compile] captured graph:\n{}", to_text(graph));
  check(options_.mode == "default" || options_.mode == "reduce_overhead",
        "compile: mode must be \"default\" or \"reduce_overhead\", got \"{}\"", options_.mode);
  const ExecutorOptions executor_options{.lowered = options_.lowered, .cuda_graphs = options_.mode == "reduce_overhead"};
  // The graph holds one reference to each state tensor; the executors built below add their own.
  std::vector<long> references_before;
  for (const std::shared_ptr<TensorImpl>& impl : graph.state_tensors) references_before.push_back(impl.use_count());
  Executor executor(std::move(graph), executor_options);
  log_executor(executor);
  std::shared_ptr<BackwardProgram> program;
  if (backward) {
    Graph& backward_graph = backward->graph;
    optimize(backward_graph, options_.fuse, backward_fusion);
    if (log::enabled("graph"))
      fmt::print(stderr, "[ember compile] captured backward graph:\n{}", to_text(backward_graph));
    program = std::make_shared<BackwardProgram>(Executor(std::move(backward_graph), executor_options),
                                                std::move(backward->interface));
  }
  for (size_t i = 0; i < references_before.size(); ++i)
    guards.states_entry_refs.push_back(1 + executor.graph().state_tensors[i].use_count() - references_before[i]);
  hint_at_slow_replays(executor, options_.lowered, size_specialization, compiler_runs() - compiler_runs_before);
  if (size_specialization) {
    ++specializations_;
    make_room_for_size_specialization(arena_bytes(executor) + (program ? arena_bytes(program->executor) : 0));
  }
  entries_.push_back({std::move(guards), std::move(executor), std::move(program), size_specialization, dynamic_dims_});
  if (log::enabled("guards")) {
    const std::string text = describe_guards(entries_.back().guards, dynamic_dims_);
    log::event("guards", fmt::format("entry {}: {}", entries_.size() - 1, text),
               {{"entry", entries_.size() - 1}, {"guards", text}});
  }
  attach_eager_call_backward(inputs, result, first_node);  // as the new entry's replays, after its backward capture
  return result;
}

}  // namespace ember::graph
