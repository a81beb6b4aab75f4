// Autocast: the per-thread state, the guard, the table of op policies and the input casts the
// dispatcher applies before an op's shape rule.
#include "runtime/autocast.h"

#include "runtime/autocast_composites.h"
#include "runtime/dispatch.h"
#include "runtime/functional.h"
#include "runtime/ops/registry.h"

namespace ember {

namespace detail {
constinit thread_local AutocastState autocast_state;
}  // namespace detail

namespace {

// PyTorch's CUDA autocast lists (aten/src/ATen/autocast_mode.cpp), restricted to the ops ember
// has. cross_entropy is fused here; PyTorch's CUDA path runs its parts, log_softmax and nll_loss,
// in fp32. mean and var are not on PyTorch's lists (they run in the input dtype; ember's kernels
// accumulate 16-bit inputs in fp32 anyway), nor are cummax, cummin and logcumsumexp (logsumexp is).
struct PolicyEntry {
  const char* op;
  AutocastPolicy policy;
};
constexpr PolicyEntry kPolicies[] = {
    {"matmul", AutocastPolicy::LowerPrecision},
    {"mm", AutocastPolicy::LowerPrecision},
    {"bmm", AutocastPolicy::LowerPrecision},
    {"linear", AutocastPolicy::LowerPrecision},
    {"exp", AutocastPolicy::Float32},
    {"expm1", AutocastPolicy::Float32},
    {"log", AutocastPolicy::Float32},
    {"log1p", AutocastPolicy::Float32},
    {"log2", AutocastPolicy::Float32},
    {"log10", AutocastPolicy::Float32},
    {"tan", AutocastPolicy::Float32},
    {"asin", AutocastPolicy::Float32},
    {"acos", AutocastPolicy::Float32},
    {"sinh", AutocastPolicy::Float32},
    {"cosh", AutocastPolicy::Float32},
    {"erfinv", AutocastPolicy::Float32},
    {"softplus", AutocastPolicy::Float32},
    {"reciprocal", AutocastPolicy::Float32},
    {"rsqrt", AutocastPolicy::Float32},
    {"pow", AutocastPolicy::Float32},
    {"pow_scalar", AutocastPolicy::Float32},
    {"prod", AutocastPolicy::Float32},
    {"cumsum", AutocastPolicy::Float32},
    {"cumprod", AutocastPolicy::Float32},
    {"layer_norm", AutocastPolicy::Float32},
    {"nll_loss", AutocastPolicy::Float32},
    {"mse_loss", AutocastPolicy::Float32},
    {"cross_entropy", AutocastPolicy::Float32},
    {"softmax", AutocastPolicy::Float32},
    {"log_softmax", AutocastPolicy::Float32},
    {"sum", AutocastPolicy::Float32},
    {"scatter_add", AutocastPolicy::Promote},
    // Factorizations have no 16-bit kernels (as in PyTorch, whose autocast runs them in fp32).
    {"linalg_lu_factor", AutocastPolicy::Float32},
    {"linalg_lu_solve", AutocastPolicy::Float32},
    {"linalg_solve", AutocastPolicy::Float32},
    {"linalg_slogdet", AutocastPolicy::Float32},
    {"linalg_cholesky", AutocastPolicy::Float32},
    {"linalg_solve_triangular", AutocastPolicy::Float32},
    {"linalg_qr", AutocastPolicy::Float32},
    {"linalg_eigh", AutocastPolicy::Float32},
    {"linalg_svd", AutocastPolicy::Float32},
};

void register_autocast_policies(OpRegistry& registry) {
  for (const PolicyEntry& entry : kPolicies) registry.set_autocast(entry.op, entry.policy);
}

const OpRegistration registration(register_autocast_policies);

bool is_autocast_dtype(DType dtype) { return dtype == kBFloat16 || dtype == kFloat16; }

// Float64 is never cast (PyTorch's rule: it was asked for explicitly); other floats are.
bool castable(const Tensor& input) {
  return input.defined() && is_floating(input.dtype()) && input.dtype() != kFloat64;
}

// The dtype `call`'s castable inputs are cast to.
DType target_dtype(const OpCall& call, DType autocast) {
  switch (call.op.autocast) {
    case AutocastPolicy::LowerPrecision:
      return autocast;
    case AutocastPolicy::Float32:
      return kFloat32;
    case AutocastPolicy::Promote: {
      // As PyTorch: the widest of the autocast dtype and every floating input (bf16 with fp16
      // gives fp32; a float64 input makes it float64).
      DType widest = autocast;
      for (const Tensor& input : call.inputs)
        if (input.defined() && is_floating(input.dtype())) widest = promote_types(widest, input.dtype());
      return widest;
    }
    case AutocastPolicy::None:
      break;
  }
  return autocast;  // unreachable: dispatch() consults this only for ops with a policy
}

bool needs_cast(const Tensor& input, DType target) { return castable(input) && input.dtype() != target; }

}  // namespace

AutocastGuard::AutocastGuard(DType dtype, bool enabled, Where where)
    : previous_enabled_(detail::autocast_state.enabled), previous_dtype_(detail::autocast_state.dtype) {
  CallSiteScope site(where);
  check(is_autocast_dtype(dtype), "autocast: dtype must be bfloat16 or float16, got {}", dtype);
  detail::autocast_state = {enabled, dtype};
}

AutocastGuard::~AutocastGuard() { detail::autocast_state = {previous_enabled_, previous_dtype_}; }

bool autocast_enabled() { return detail::autocast_state.enabled; }
DType autocast_dtype() { return detail::autocast_state.dtype; }

namespace detail {

bool autocast_inputs(const OpCall& call, std::vector<Tensor>& cast) {
  const DType target = target_dtype(call, autocast_state.dtype);
  bool any = false;
  for (const Tensor& input : call.inputs) any = any || needs_cast(input, target);
  if (!any) return false;
  static const OpDef& to_dtype = lookup_op("to_dtype");
  cast.reserve(call.inputs.size());
  for (const Tensor& input : call.inputs) {
    // Dispatched like a user's call: autograd records it (gradients flow back in the input's
    // dtype) and a capture mode sees an ordinary to_dtype node.
    cast.push_back(needs_cast(input, target) ? dispatch_one(to_dtype, {input}, {{"dtype", target}}) : input);
  }
  return true;
}

Tensor autocast_to_float32(const Tensor& tensor) {
  const bool lower_precision = tensor.defined() && is_autocast_dtype(tensor.dtype());
  return autocast_state.enabled && lower_precision ? to_dtype(tensor, kFloat32) : tensor;
}

}  // namespace detail

}  // namespace ember
