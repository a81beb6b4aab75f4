// The fused optimizer steps sgd_step_ and adam_step_: OpDefs, argument checks and the functions
// of runtime/optim/fused_steps.h. Math: kernels/optim_functors.h; CPU loop: kernels/cpu/optim_kernels.cpp.
#include "kernels/cpu/optim_kernels.h"
#include "runtime/dispatch.h"
#include "runtime/ops/optim_step_checks.h"
#include "runtime/optim/fused_steps.h"

namespace ember {

namespace {

// Every defined tensor of the call matches the parameter (input 0) in shape and dtype; state
// inputs listed in `required` must be defined.
void check_step_inputs(const OpCall& call, std::initializer_list<int> required) {
  const char* op = call.op.name.c_str();
  const Tensor& param = call.input(0);
  check(param.defined() && param.is_floating_point(), "{}: the parameter must be a floating-point tensor{}", op,
        param.defined() ? fmt::format(", got {}", param.dtype()) : std::string(" (got undefined)"));
  for (int i : required) check(call.input(i).defined(), "{}: input {} must be defined", op, i);
  for (size_t i = 1; i < call.inputs.size(); ++i) {
    const Tensor& other = call.input(static_cast<int>(i));
    if (!other.defined()) continue;
    check(other.sizes() == param.sizes() && other.dtype() == param.dtype(),
          "{}: input {} has shape {} and dtype {}, the parameter has shape {} and dtype {}", op, i, other.sizes(),
          other.dtype(), param.sizes(), param.dtype());
  }
}

}  // namespace

void check_sgd_step(const OpCall& call) {
  check_step_inputs(call, {1});
  check(call.attrs.get<double>("momentum") == 0.0 || call.input(2).defined(),
        "sgd_step_: momentum {} needs a momentum buffer", call.attrs.get<double>("momentum"));
}

void check_adam_step(const OpCall& call) {
  check_step_inputs(call, {1, 2, 3});
  check(!call.attrs.get<bool>("amsgrad") || call.input(4).defined(), "adam_step_: amsgrad needs max_exp_avg_sq");
  check(call.attrs.get<int64_t>("step") >= 1, "adam_step_: step must be at least 1, got {}",
        call.attrs.get<int64_t>("step"));
}

namespace {

void sgd_step_cpu(const OpCall& call, TensorList& outputs) {
  check_sgd_step(call);
  cpu::sgd_step_kernel(call, outputs);
}

void adam_step_cpu(const OpCall& call, TensorList& outputs) {
  check_adam_step(call);
  cpu::adam_step_kernel(call, outputs);
}

OpDef step_op(const char* name, const char* schema, Kernel cpu_kernel, uint32_t mutated_inputs) {
  OpDef def = make_op(name, schema, OpKind::InPlace, nullptr, cpu_kernel);
  def.mutated_inputs = mutated_inputs;
  return def;
}

void register_optim_ops(OpRegistry& registry) {
  registry.add(step_op("sgd_step_",
                       "sgd_step_(Tensor(a!) param, Tensor grad, Tensor(b!)? momentum_buffer, float lr, "
                       "float momentum, float dampening, float weight_decay, bool nesterov, bool first_step, "
                       "bool maximize)",
                       sgd_step_cpu, 0b101));
  registry.add(step_op("adam_step_",
                       "adam_step_(Tensor(a!) param, Tensor grad, Tensor(b!) exp_avg, Tensor(c!) exp_avg_sq, "
                       "Tensor(d!)? max_exp_avg_sq, float lr, float beta1, float beta2, float eps, "
                       "float weight_decay, int step, bool amsgrad, bool decoupled, bool maximize)",
                       adam_step_cpu, 0b11101));
}

const OpRegistration registration(register_optim_ops);

}  // namespace

Attrs sgd_step_attrs(const optim::SgdStepArgs& args) {
  return {{"lr", args.lr},
          {"momentum", args.momentum},
          {"dampening", args.dampening},
          {"weight_decay", args.weight_decay},
          {"nesterov", args.nesterov},
          {"first_step", args.first_step},
          {"maximize", args.maximize}};
}

Attrs adam_step_attrs(const optim::AdamStepArgs& args) {
  return {{"lr", args.lr},
          {"beta1", args.beta1},
          {"beta2", args.beta2},
          {"eps", args.eps},
          {"weight_decay", args.weight_decay},
          {"step", args.step},
          {"amsgrad", args.amsgrad},
          {"decoupled", args.decoupled},
          {"maximize", args.maximize}};
}

namespace optim {

void sgd_step_(const Tensor& param, const Tensor& grad, const Tensor& momentum_buffer, const SgdStepArgs& args,
               Where where) {
  CallSiteScope site(where);
  static const OpDef& op = lookup_op("sgd_step_");
  const Attrs attrs = sgd_step_attrs(args);
  const Tensor inputs[] = {param, grad, momentum_buffer};
  dispatch(OpCall{op, inputs, attrs});
}

void adam_step_(const Tensor& param, const Tensor& grad, const Tensor& exp_avg, const Tensor& exp_avg_sq,
                const Tensor& max_exp_avg_sq, const AdamStepArgs& args, Where where) {
  CallSiteScope site(where);
  static const OpDef& op = lookup_op("adam_step_");
  const Attrs attrs = adam_step_attrs(args);
  const Tensor inputs[] = {param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq};
  dispatch(OpCall{op, inputs, attrs});
}

}  // namespace optim
}  // namespace ember
