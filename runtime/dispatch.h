// The dispatcher: every op call goes through dispatch(). It consults a per-thread stack of modes:
//   - no mode installed (the default): eager, run the kernel for the inputs' device now;
//   - a capture mode (the compile stage) records the call into a graph instead of running it;
//   - observers (profiler, NVTX, anomaly checks) see each call's name, shapes and timing.
// Before the modes, autocast (runtime/autocast.h) may cast an op's inputs. With no mode installed
// and autocast off, the eager path pays two thread-local loads for all of this.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "runtime/ops/registry.h"

namespace ember {

// A mode intercepts op calls. `next.run(call)` continues with the modes below it (and finally
// eager execution); a capture mode does not call it, an observer wraps it.
class DispatchMode;

class DispatchNext {
 public:
  TensorList run(const OpCall& call) const;

 private:
  friend TensorList dispatch(const OpCall& call);

  explicit DispatchNext(int level) : level_(level) {}
  int level_;  // index of the next mode to consult, -1: eager
};

class DispatchMode {
 public:
  virtual ~DispatchMode() = default;
  virtual TensorList handle(const OpCall& call, const DispatchNext& next) = 0;
  // Called when code reads a tensor's values on the host (item(), to_vector()); a capture mode
  // throws a graph break here, because the value would be baked into the trace.
  virtual void on_host_read(const char* what, const Tensor& tensor) {}
  // Called when `alias` was made from `source` outside the dispatcher with the same storage and
  // geometry (detach()); a capture mode treats it as holding the same value as `source`.
  virtual void on_alias(const Tensor& source, const Tensor& alias) {}
  // Called when code changes host state that replaying a captured graph would not change again
  // (an optimizer's learning rate set inside the compiled function); a capture mode breaks here.
  virtual void on_host_state_change(const std::string& what) {}
  // Called when code takes a branch on host state the dispatcher cannot see (a Dropout module's
  // training flag); a capture mode keeps `holds` as a guard, and a replay whose guard no longer
  // holds recompiles instead of replaying the other branch. `owner` (may be null) identifies the
  // state: a mode may keep one guard per owner and `what`.
  virtual void on_host_guard(const std::string& what, const std::function<bool()>& holds, const void* owner) {}
  // Called when code changes host state in a way it can repeat by itself (an LR scheduler's
  // step()); a capture mode keeps `replay` and calls it at the same point of every replay.
  virtual void on_host_effect(const std::string& what, const std::function<void()>& replay) {}
  // Called when code sets or clears `leaf`'s .grad directly (zero_grad, set_grad); a capture mode
  // replays that change, and leaves alone the .grad of leaves the code never touched.
  virtual void on_grad_set(const Tensor& leaf) {}
  // Called when code skips `leaf` because it has no .grad (an optimizer step, gradient clipping);
  // a capture mode guards that a replay finds none either (the code would not skip it then),
  // unless the code cleared that .grad itself.
  virtual void on_grad_absent(const Tensor& leaf) {}
  // Whether code runs as it does under a capture while this mode is installed
  // (dispatch_mode_active(): per-parameter optimizer ops, attr refreshes, host guards). A mode
  // that lets ops run eagerly for now and only watches for host reads (compiled segments where a
  // place in fn runs eagerly) says no, so that code runs as it would without a mode.
  virtual bool records() const { return true; }
};

// Tells the installed modes that `tensor`'s values are read on the host (no-op without modes).
void notify_host_read(const char* what, const Tensor& tensor);
// `tensor`'s values where the host can read them (dense when `dense`), for code about to read
// them (item, to_vector, printing): tells the modes of the read (notify_host_read), then copies
// outside them (DispatchModesHidden below), so no copy is deferred past the read.
Tensor host_values(const char* what, const Tensor& tensor, bool dense);
// Tells the installed modes that `alias` is `source` without its history (no-op without modes).
void notify_alias(const Tensor& source, const Tensor& alias);
// Tells the installed modes that the code's path depends on `what` staying true (no-op without modes).
// `owner`, when given, is the object whose state `holds` reads: code that reads one object many times
// in a step (a ModuleList indexed per layer) then adds one guard, not one per read.
void notify_host_guard(const std::string& what, const std::function<bool()>& holds, const void* owner = nullptr);
// One such condition, as a capture keeps it: a description and a check to run before replays.
struct HostGuard {
  std::string what;
  std::function<bool()> holds;
  const void* owner = nullptr;  // compared only, never dereferenced
};
// Tells the installed modes that `leaf`'s .grad was set or cleared (no-op without modes).
void notify_grad_set(const Tensor& leaf);
// Tells the installed modes that code skipped `leaf` for having no .grad (no-op without modes).
void notify_grad_absent(const Tensor& leaf);
// Tells the installed modes that `what` (e.g. "Adam.set_lr(0, 0.01)") changes host state.
void notify_host_state_change(const std::string& what);
// Tells the installed modes that `what` (e.g. "StepLR.step()") changes host state and that
// `replay` makes the same change again; ignored inside a HostEffectScope.
void notify_host_effect(const std::string& what, const std::function<void()>& replay);
// A host effect as a capture keeps it.
struct HostEffect {
  std::string what;
  std::function<void()> replay;
};
// While one is alive (around an effect's own code, when first run and when replayed), the host
// state changes and nested effects it makes are part of that effect: nothing is notified.
class HostEffectScope {
 public:
  static bool active();
  HostEffectScope();
  ~HostEffectScope();
  HostEffectScope(const HostEffectScope&) = delete;
  HostEffectScope& operator=(const HostEffectScope&) = delete;
};

// Host scalars that change from step to step (an optimizer's lr and step count) reach ops as
// attributes. While a mode is installed, the code computing them may hand over a function that
// recomputes them (and advances its own host state) for the next dispatched call; a capture mode
// keeps it so that a compiled replay re-reads the scalars instead of baking them in.
using AttrRefresh = std::function<void(Attrs& attrs)>;
bool dispatch_mode_active();  // an installed mode records (DispatchMode::records)
void set_next_attr_refresh(AttrRefresh refresh);
AttrRefresh take_attr_refresh();  // empty when none was set since the last take

// Installs a mode on this thread's stack for the guard's lifetime (modes nest).
class DispatchModeGuard {
 public:
  explicit DispatchModeGuard(DispatchMode& mode);
  ~DispatchModeGuard();
  DispatchModeGuard(const DispatchModeGuard&) = delete;
  DispatchModeGuard& operator=(const DispatchModeGuard&) = delete;
};

// Hides this thread's installed modes for the guard's lifetime, so ops run eagerly now: for the
// copy that brings values to the host after notify_host_read told the modes of the read (a mode
// that defers kernels would otherwise defer that copy too, and the host would read memory no
// kernel has written yet), and for state an optimizer makes on a parameter's first step (a
// capture then binds it as state instead of recording its making into the graph).
class DispatchModesHidden {
 public:
  DispatchModesHidden();
  ~DispatchModesHidden();
  DispatchModesHidden(const DispatchModesHidden&) = delete;
  DispatchModesHidden& operator=(const DispatchModesHidden&) = delete;

 private:
  std::vector<DispatchMode*> hidden_;
};

// Runs one op call through the mode stack.
TensorList dispatch(const OpCall& call);

// The eager path alone: shape rule, output allocation, kernel, autograd recording.
TensorList dispatch_eager(const OpCall& call);

// The dispatcher's rule for an in-place op's target, input `written` of `call`: it must hold each
// element once (not an expanded tensor) unless the op accepts_expanded_target, and no other input
// may partly overlap it. Exposed for ops that write inputs without the dispatcher's in-place path
// (the multi-tensor optimizer steps).
void check_no_overlap(const OpCall& call, size_t written);

// While one is alive on this thread, the eager path does everything but run kernels: shape rules,
// output allocation, autograd recording and version bumps happen now, and the caller (a compiled
// function's segment mode, graph/segment_mode.h) runs the kernels later, in the same order.
class KernelDeferral {
 public:
  KernelDeferral();
  ~KernelDeferral();
  KernelDeferral(const KernelDeferral&) = delete;
  KernelDeferral& operator=(const KernelDeferral&) = delete;
};

// Convenience for ops with one output.
Tensor dispatch_one(const OpDef& op, std::span<const Tensor> inputs, const Attrs& attrs);
inline Tensor dispatch_one(const OpDef& op, std::initializer_list<Tensor> inputs,
                           const Attrs& attrs = {}) {
  return dispatch_one(op, std::span<const Tensor>(inputs.begin(), inputs.size()), attrs);
}

// ---- grad mode ----
bool grad_mode_enabled();
void set_grad_mode(bool enabled);

// Disables gradient recording for its lifetime (libtorch's NoGradGuard).
class NoGradGuard {
 public:
  NoGradGuard() : previous_(grad_mode_enabled()) { set_grad_mode(false); }
  ~NoGradGuard() { set_grad_mode(previous_); }
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;

 private:
  bool previous_;
};

// Enables or disables gradient recording for its lifetime.
class AutoGradMode {
 public:
  explicit AutoGradMode(bool enabled) : previous_(grad_mode_enabled()) { set_grad_mode(enabled); }
  ~AutoGradMode() { set_grad_mode(previous_); }
  AutoGradMode(const AutoGradMode&) = delete;
  AutoGradMode& operator=(const AutoGradMode&) = delete;

 private:
  bool previous_;
};

}  // namespace ember
