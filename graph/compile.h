// ember::compile(fn, options): a callable that captures fn's whole step (forward, backward,
// optimizer update) into a graph on its first compiled call and replays the graph afterwards.
//
//   auto train_step = ember::compile([&](const Tensor& x, const Tensor& y) {...}, {.fullgraph = true});
//   Tensor loss = train_step(x, y);
#pragma once

#include <concepts>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "graph/compile_guards.h"
#include "graph/dynamic_shapes.h"
#include "graph/executor.h"

namespace ember {

struct CompileOptions {
  // A graph break throws GraphBreak; without fullgraph, fn then runs as compiled segments split
  // where it reads values on the host, each place between two reads compiled where that pays and
  // eager elsewhere (graph/segments.h). The capture runs fn's ops as it records them, so the
  // GraphBreak comes from inside that call, after what fn did before the break (an optimizer step
  // applied, then loss.item() breaks): like an eager call throwing there, not like torch.compile,
  // which traces before anything runs.
  bool fullgraph = false;
  // With a graph break, a segment on the CPU is compiled only where that saves more memory
  // traffic than deferring its calls costs; elsewhere that place in fn runs eagerly
  // (graph/segment_cost.h). true compiles every segment of two kernels or more, as on CUDA (tests,
  // and to measure the compiled form).
  bool compile_every_segment = false;
  // Compiled variants kept; past it, calls that miss run eagerly. A function with a graph break
  // compiles (or, on the CPU, finds not paying) up to 8 * cache_limit segments; new segments past
  // that run kernel by kernel.
  int cache_limit = 8;
  // Eager calls before the first capture: they create lazily built state (optimizer moments, a
  // momentum buffer), which the graph then reads as state bound by identity.
  int warmup_calls = 1;
  // Fuse chains of pointwise ops (and a sum/mean at their end) into generated kernels
  // (graph/fusion.h); off to compare with plain replay.
  bool fuse = true;
  // Replay through the lowered step list over a planned arena (graph/lowered_executor.h); false
  // keeps the dispatching executor, for comparison (EMBER_EXECUTOR=dispatch does the same).
  bool lowered = true;
  // "default", or "reduce_overhead": on CUDA, the lowered steps are captured once into CUDA graphs
  // and replayed each call (see LoweredExecutor); on the CPU it changes nothing.
  std::string mode = "default";
  // Dynamic shapes (graph/dynamic_shapes.h), as torch.compile's `dynamic`. Unset (auto): the first
  // capture is specialized to its sizes; an input dim whose size then changes becomes dynamic.
  // true: every dim of every input is dynamic from the first capture. false: every size is
  // specialized, and a new size is a recompile like any other. Dims marked with mark_dynamic are
  // dynamic from the first capture unless this is false. A call whose sizes differ from an entry
  // only in dynamic dims is captured again with kernels that read those sizes at run time (no
  // compiler run); such entries do not count against cache_limit (the newest
  // kMaxSizeSpecializations are kept).
  std::optional<bool> dynamic;
  // Each entry keeps its planned arena: the captures for new sizes may hold this many bytes of
  // arenas together (the newest is kept even when it alone is larger).
  int64_t size_specialization_bytes = int64_t{1} << 30;
};

// How many captures for new sizes of dynamic dims a compiled function keeps; past it (or past
// CompileOptions::size_specialization_bytes) the oldest goes, and comes back as a new capture.
constexpr int kMaxSizeSpecializations = 32;
// Compiled segments a function with a graph break keeps, per unit of cache_limit.
constexpr int kSegmentsPerVariant = 8;

namespace graph {

struct BackwardProgram;
class SegmentCache;

// The type-erased state of one compiled function.
class CompiledFunction {
 public:
  explicit CompiledFunction(CompileOptions options) : options_(options) {}

  // `run_eager` runs fn on `inputs` (the same tensors, as fn's parameters) and returns its
  // results as a list; a replay returns the graph's outputs in that order.
  using EagerRun = std::function<std::vector<Tensor>()>;
  std::vector<Tensor> call(const std::vector<Tensor>& inputs, const EagerRun& run_eager);

  int captures() const { return static_cast<int>(entries_.size()); }  // the entries held now
  int captures_made() const { return captures_made_; }  // every capture so far, graph breaks included
  // Captures made for new sizes of dynamic dims (each one also counts in captures() while held).
  int specializations() const { return specializations_; }
  // Per caller input, bit d: dim d is dynamic (CompileOptions::dynamic, mark_dynamic).
  const std::vector<uint32_t>& dynamic_dims() const { return dynamic_dims_; }
  int replays() const { return replays_; }
  bool fell_back_to_eager() const { return fell_back_; }
  const std::vector<std::string>& recompile_reasons() const { return recompile_reasons_; }
  // Each graph break met (with its call site). After one, calls that no captured graph serves run
  // fn itself with its kernels deferred and replayed as compiled segments (graph/segments.h).
  const std::vector<std::string>& graph_breaks() const { return graph_breaks_; }
  // The compiled segments since the first graph break; null before it.
  const SegmentCache* segments() const { return segments_.get(); }
  int segmented_calls() const { return segmented_calls_; }  // calls run as segments
  // A readable summary, as torch._dynamo.explain gives: calls, captures, replays, recompiles and
  // their reasons, graph breaks, dynamic dims, and per entry its graph, executor and guards.
  std::string explain() const;
  // The graph of the newest entry (after passes); null before the first capture.
  const Graph* graph() const { return entries_.empty() ? nullptr : &entries_.back().executor.graph(); }
  // The executor of the newest entry (its memory plan, or why it dispatches); null before capture.
  const Executor* executor() const { return entries_.empty() ? nullptr : &entries_.back().executor; }
  // The newest entry's backward of fn's differentiable results (graph/compiled_autograd.h); null
  // when it has none.
  const Executor* backward_executor() const;

 private:
  struct Entry {
    Guards guards;
    Executor executor;
    // The backward of fn's differentiable results (graph/compiled_autograd.h); null when none.
    std::shared_ptr<BackwardProgram> backward;
    // Captured for new sizes of dynamic dims of an earlier entry: not a variant of its own.
    bool size_specialization = false;
    std::vector<uint32_t> dynamic_dims;  // per caller input, the dims dynamic when it was captured
  };
  // A call that entry `entry` serves but for `arguments`, Unverified ones passed apart from the
  // tensors captured (CapturedArgument): it is traced to learn whether the entry read them also
  // as tensors fn reaches itself.
  struct Verification {
    int entry = -1;
    std::vector<int> arguments;
  };
  // Captures fn for `inputs`; `size_specialization` says it only gives new sizes to dynamic dims;
  // `reference` is the entry `inputs` match but for sizes, or -1 (its fused groups tell which
  // group dims follow the sizes: FusionOptions::reference_groups). With `verification`, the trace
  // settles those arguments and goes on as a capture only where one was read as state.
  std::vector<Tensor> capture(const std::vector<Tensor>& inputs, const EagerRun& run_eager, bool size_specialization,
                              int reference, const Verification* verification = nullptr);
  // Marks the verified arguments Free or Pinned from `traced`, the graph of the call that verified
  // them (and the .grad tensors it read per call); true when one is pinned and the trace is to be
  // kept as a new variant (a recompile).
  bool settle_arguments(const Verification& verification, const Graph& traced, const std::vector<Tensor>& grad_inputs);
  // Runs fn eagerly from now on, saying why (EMBER_LOGS=recompiles) and what to change (perf_hints).
  void fall_back(const std::string& reason, const std::string& hint);
  void graph_break(const std::string& reason);  // records and logs it; later misses run as segments
  std::vector<Tensor> run_segments(const EagerRun& run_eager);
  // The first entry that `inputs` match in everything but sizes, and the dims whose sizes differ.
  struct SizeChange {
    int entry = -1;  // -1: no entry
    std::vector<uint32_t> dims;
  };
  SizeChange size_change(const std::vector<Tensor>& inputs) const;
  // A call no entry serves: why, from the oldest entry's failed guard (EMBER_LOGS=guards logs each).
  std::string miss_reason(const std::vector<Tensor>& inputs) const;
  // Whether the miss is only new sizes of dims already dynamic (then `reference` is the entry it
  // matches but for them). In auto mode (`dynamic` unset) a change in other dims makes them
  // dynamic from now on, and `reason` says so.
  struct SizeMiss {
    bool new_sizes = false;
    int reference = -1;
  };
  SizeMiss size_miss(const std::vector<Tensor>& inputs, std::string& reason);
  // Adds the dims CompileOptions::dynamic and mark_dynamic make dynamic for `inputs`.
  void add_dynamic_dims(const std::vector<Tensor>& inputs);
  int variants() const;  // the entries that count against cache_limit
  // Drops the oldest captures for new sizes until one more, holding `bytes`, fits the limits.
  void make_room_for_size_specialization(int64_t bytes);

  CompileOptions options_;
  // Serializes calls (and explain()) from several threads: the entries, counters, executors (their
  // arenas and the input buffers they re-point per call) and the segment cache are shared by every
  // call. Recursive: fn may call its own compiled function.
  mutable std::recursive_mutex mutex_;
  std::vector<Entry> entries_;
  std::vector<std::string> recompile_reasons_;
  std::vector<std::string> graph_breaks_;
  std::shared_ptr<SegmentCache> segments_;  // made at the first graph break
  int segmented_calls_ = 0;
  std::vector<uint32_t> dynamic_dims_;
  int specializations_ = 0;
  int captures_made_ = 0;
  int calls_ = 0;
  int replays_ = 0;
  bool fell_back_ = false;
};

// The pass pipeline ember::compile runs on a captured graph, verify() after each pass: DCE,
// constant folding, algebraic simplification, DCE, unused constants, CSE, GEMM epilogues.
void run_passes(Graph& graph);

template <typename Result>
inline constexpr bool kUnsupportedResult = false;

// What a compiled function may return, as the list of tensors the graph outputs: one Tensor, a
// std::pair or std::tuple of Tensors (say the loss and the logits), or a std::vector<Tensor>.
template <typename Result>
struct CompiledResult {
  static_assert(kUnsupportedResult<Result>,
                "ember::compile: fn must return a Tensor, a std::pair or std::tuple of Tensors, a std::vector<Tensor> "
                "or void");
};

template <>
struct CompiledResult<Tensor> {
  static std::vector<Tensor> to_list(Tensor result) { return {std::move(result)}; }
  static Tensor from_list(std::vector<Tensor> list) { return std::move(list.at(0)); }
};

template <>
struct CompiledResult<std::vector<Tensor>> {
  static std::vector<Tensor> to_list(std::vector<Tensor> result) { return result; }
  static std::vector<Tensor> from_list(std::vector<Tensor> list) { return list; }
};

template <typename... Ts>
  requires(std::same_as<Ts, Tensor> && ...)
struct CompiledResult<std::tuple<Ts...>> {
  static std::vector<Tensor> to_list(std::tuple<Ts...> result) {
    return std::apply([](Ts&... tensors) { return std::vector<Tensor>{std::move(tensors)...}; }, result);
  }
  static std::tuple<Ts...> from_list(std::vector<Tensor> list) {
    return [&]<size_t... I>(std::index_sequence<I...>) { return std::tuple<Ts...>{std::move(list.at(I))...}; }(
        std::index_sequence_for<Ts...>{});
  }
};

template <>
struct CompiledResult<std::pair<Tensor, Tensor>> {
  static std::vector<Tensor> to_list(std::pair<Tensor, Tensor> result) {
    return {std::move(result.first), std::move(result.second)};
  }
  static std::pair<Tensor, Tensor> from_list(std::vector<Tensor> list) {
    return {std::move(list.at(0)), std::move(list.at(1))};
  }
};

}  // namespace graph

// The callable compile() returns. fn takes tensors and returns a Tensor, a pair or tuple of
// Tensors, a std::vector<Tensor>, or nothing; the compiled call returns the same type.
template <typename Fn>
class Compiled {
 public:
  Compiled(Fn fn, CompileOptions options)
      : fn_(std::move(fn)), state_(std::make_shared<graph::CompiledFunction>(options)) {}

  template <typename... Args>
  auto operator()(const Args&... args) {
    using Result = std::decay_t<std::invoke_result_t<Fn&, const Args&...>>;
    if constexpr (std::is_void_v<Result>) {
      // A step with effects only (an optimizer step compiled alone): a graph without outputs.
      state_->call({args...}, [&] {
        fn_(args...);
        return std::vector<Tensor>{};
      });
    } else {
      using Convert = graph::CompiledResult<Result>;
      return Convert::from_list(state_->call({args...}, [&] { return Convert::to_list(fn_(args...)); }));
    }
  }
  const graph::CompiledFunction& state() const { return *state_; }

 private:
  Fn fn_;
  std::shared_ptr<graph::CompiledFunction> state_;
};

template <typename Fn>
Compiled<Fn> compile(Fn fn, CompileOptions options = {}) {
  return Compiled<Fn>(std::move(fn), options);
}

}  // namespace ember
