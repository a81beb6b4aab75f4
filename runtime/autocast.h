// Automatic mixed precision (torch.autocast): inside an AutocastGuard, GEMMs run in bf16 or fp16
// and numerically sensitive ops in fp32, on any device. The casts are ordinary to_dtype op calls
// made by the dispatcher, so autograd and the compile stage's capture record them like any op.
//
//   {
//     ember::AutocastGuard autocast(ember::kBFloat16);
//     Tensor logits = model->forward(x);           // linear layers run in bf16
//     Tensor loss = ember::cross_entropy(logits, y);  // fp32
//   }
//   loss.backward();  // fp32 parameters receive fp32 gradients through the recorded casts
//
// Which op does what (the OpDef field `autocast`, set from the table in autocast.cpp):
//   LowerPrecision  matmul, mm, bmm, linear: float32 and 16-bit inputs are cast to the autocast
//                   dtype; the result is in that dtype (CPU and CUDA GEMMs accumulate in fp32).
//   Float32         softmax, log_softmax, cross_entropy, nll_loss, mse_loss, layer_norm, sum,
//                   exp, log, log1p, rsqrt, reciprocal, pow: 16-bit inputs are cast to float32.
//   Promote         scatter_add: floating inputs are cast to the widest of them and the
//                   autocast dtype.
//   every other op  runs in its inputs' dtypes (binary ops promote as usual).
// Float64 inputs are never cast, as in PyTorch. Backward rules run with autocast off (each
// backward op sees the dtypes its forward chose), and so does the compiled graph's replay (the
// graph already holds the casts).
#pragma once

#include "runtime/dtype.h"
#include "runtime/tensor.h"

namespace ember {

struct OpCall;

// Enables (or, with enabled = false, disables) autocast on this thread for the guard's lifetime.
// Guards nest; each restores the previous state when destroyed. `dtype` must be kBFloat16 or
// kFloat16 (else ember::Error), also when the guard disables autocast.
class AutocastGuard {
 public:
  explicit AutocastGuard(DType dtype, bool enabled = true, Where where = Where::current());
  ~AutocastGuard();
  AutocastGuard(const AutocastGuard&) = delete;
  AutocastGuard& operator=(const AutocastGuard&) = delete;

 private:
  bool previous_enabled_;
  DType previous_dtype_;
};

// This thread's autocast state: whether it is on, and its dtype (kBFloat16 before any guard).
bool autocast_enabled();
DType autocast_dtype();

namespace detail {

struct AutocastState {
  bool enabled = false;
  DType dtype = DType::BFloat16;
};
// Read by dispatch() on every call; constinit lets other files reach it without a TLS wrapper.
extern constinit thread_local AutocastState autocast_state;

// The inputs of `call` cast as its op's autocast policy asks, each cast dispatched as a to_dtype
// op; false (and `cast` untouched) when no input needs a cast.
bool autocast_inputs(const OpCall& call, std::vector<Tensor>& cast);

}  // namespace detail

}  // namespace ember
