// ember::utils::checkpoint: runs the function under a CheckpointFrame whose nodes keep placeholders.
#include "runtime/autograd/checkpoint.h"

#include <memory>
#include <utility>

#include "runtime/dispatch.h"
#include "runtime/error.h"

namespace ember::utils {

std::vector<Tensor> checkpoint(const autograd::CheckpointFn& fn, const std::vector<Tensor>& inputs,
                               CheckpointOptions options, Where where) {
  CallSiteScope site(where);
  return detail::checkpoint_named("checkpoint", fn, inputs, options);
}

std::vector<Tensor> detail::checkpoint_named(std::string name, const autograd::CheckpointFn& fn,
                                             const std::vector<Tensor>& inputs, CheckpointOptions options) {
  check(fn != nullptr, "{}: the function is empty (a default-constructed std::function)", name);
  // Nothing is recorded without grad mode, so there is nothing to drop. Inside a capture
  // (ember::compile) the frame works as in eager mode: the backward's recomputation is captured
  // too, as nodes of their own (Node::recomputed), so the compiled step recomputes as well.
  if (!grad_mode_enabled()) return fn(inputs);
  auto frame = std::make_shared<autograd::CheckpointFrame>(std::move(name), fn, inputs, options.preserve_rng_state,
                                                           options.determinism_check);
  std::vector<Tensor> outputs;
  try {
    const autograd::ActiveCheckpointScope scope(frame, /*recomputing=*/false);
    outputs = fn(inputs);
  } catch (...) {
    frame->end_forward();
    throw;
  }
  frame->end_forward();
  return outputs;
}

Tensor checkpoint(const std::function<Tensor(const Tensor&)>& fn, const Tensor& input, CheckpointOptions options,
                  Where where) {
  CallSiteScope site(where);
  check(fn != nullptr, "checkpoint: the function is empty (a default-constructed std::function)");
  const autograd::CheckpointFn as_list = [fn](const std::vector<Tensor>& inputs) {
    return std::vector<Tensor>{fn(inputs[0])};
  };
  return checkpoint(as_list, {input}, options, where)[0];
}

}  // namespace ember::utils
