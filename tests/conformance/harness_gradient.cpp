// The gradient check: autograd's gradients of a random linear combination of an op's outputs
// against central finite differences, in float64.
#include <cmath>

#include "harness_detail.h"

namespace conformance {

using ember::OpDef;
using ember::OpKind;
using namespace detail;

ember::TensorList detail::run_for_gradient(const OpDef& op, const Case& c, const std::vector<Tensor>& inputs,
                                           const Attrs& attrs) {
  const std::vector<Tensor> mapped = c.gradient_inputs ? c.gradient_inputs(inputs) : inputs;
  if (op.kind != OpKind::InPlace) return run_op(op, mapped, attrs);
  std::vector<Tensor> targets = mapped;
  for (size_t i = 0; i < targets.size(); ++i)
    if ((op.mutated_inputs & (1u << i)) && targets[i].defined()) targets[i] = targets[i].clone();
  return run_op(op, targets, attrs);
}

namespace {

// Central differences with eps 1e-6 in float64: truncation error ~1e-12, rounding ~1e-10.
constexpr double kFiniteDifferenceStep = 1e-6;

// Compares autograd's gradient of input `i` with central differences of `loss`.
void compare_gradient(const Case& c, size_t i, const std::vector<Tensor>& inputs,
                      const std::vector<std::vector<double>>& values, Device device,
                      const std::function<double(const std::vector<Tensor>&)>& loss, Failures& failures) {
  const std::string where = fmt::format("input {} of shape {}: ", i, c.inputs[i].sizes);
  const Tensor grad = inputs[i].grad();
  std::vector<double> analytic(values[i].size(), 0.0);  // an undefined gradient means zeros
  if (grad.defined()) {
    if (grad.sizes() != inputs[i].sizes() || grad.dtype() != ember::kFloat64) {
      failures.add(where + fmt::format("gradient has shape {} and dtype {}", grad.sizes(), grad.dtype()));
      return;
    }
    analytic = to_reference(grad).values;
  }
  std::vector<Tensor> perturbed = inputs;
  int64_t mismatches = 0;
  std::string first;
  for (size_t e = 0; e < values[i].size(); ++e) {
    std::vector<double> shifted = values[i];
    shifted[e] += kFiniteDifferenceStep;
    perturbed[i] = build_input(c.inputs[i], shifted, ember::kFloat64, device);
    const double plus = loss(perturbed);
    shifted[e] -= 2 * kFiniteDifferenceStep;
    perturbed[i] = build_input(c.inputs[i], shifted, ember::kFloat64, device);
    const double minus = loss(perturbed);
    const double numeric = (plus - minus) / (2 * kFiniteDifferenceStep);
    const double allowed = c.gradient.atol + c.gradient.rtol * std::max(std::abs(numeric), std::abs(analytic[e]));
    if (!(std::abs(analytic[e] - numeric) <= allowed) && mismatches++ == 0)
      first = fmt::format("first at element {}: autograd {:.10g}, finite difference {:.10g}", e, analytic[e], numeric);
  }
  if (mismatches > 0)
    failures.add(where + fmt::format("{} of {} gradient elements differ; {}", mismatches, values[i].size(), first));
}

}  // namespace

bool differentiable_input(const OpDef& op, const Case& c, size_t i) {
  const InputSpec& spec = c.inputs[i];
  // Inputs pinned to another float dtype are not perturbed: eps 1e-6 is below float32 precision.
  return spec.defined && spec.layout != Layout::Expanded && !(op.nondifferentiable_inputs & (1u << i)) &&
         input_dtype(spec, ember::kFloat64) == ember::kFloat64;
}

bool gradient_checkable(const OpDef& op, const Case& c) {
  if (!c.gradcheck || op.backward == nullptr) return false;
  for (size_t i = 0; i < c.inputs.size(); ++i)
    if (differentiable_input(op, c, i)) return true;
  return false;
}

std::vector<std::string> check_gradients(const OpDef& op, const Case& c, Device device) {
  Failures failures(describe(c, ember::kFloat64, device) + "gradient: ");
  const Attrs attrs = attrs_for(c, device);
  std::vector<std::vector<double>> values;
  std::vector<Tensor> inputs = make_inputs(c, ember::kFloat64, device, &values);
  for (size_t i = 0; i < c.inputs.size(); ++i)
    if (differentiable_input(op, c, i)) inputs[i].requires_grad_(true);
  // Loss = sum over the chosen outputs k of <weight_k, output_k>, with random weights.
  std::vector<Tensor> roots, weights;
  std::vector<std::pair<int, RefTensor>> weight_values;
  try {
    ember::TensorList outputs = run_for_gradient(op, c, inputs, attrs);
    for (int k = 0; k < outputs.size(); ++k) {
      if (!(c.loss_outputs & (1u << k)) || !ember::is_floating(outputs[k].dtype())) continue;
      if (!outputs[k].requires_grad()) {
        failures.add(fmt::format("output {} has no grad_fn", k));
        return failures.take();
      }
      Tensor weight = make_input({outputs[k].sizes(), real(-1.0, 1.0)}, ember::kFloat64, device, case_seed(c) + 1000 + k);
      roots.push_back(outputs[k]);
      weights.push_back(weight);
      weight_values.emplace_back(k, to_reference(weight));
    }
    ember::backward(roots, weights);
  } catch (const std::exception& error) {
    failures.add(fmt::format("threw: {}", error.what()));
    return failures.take();
  }
  auto loss = [&](const std::vector<Tensor>& perturbed) {
    ember::NoGradGuard no_grad;
    ember::TensorList outputs = run_for_gradient(op, c, perturbed, attrs);
    double total = 0.0;
    for (const auto& [k, weight] : weight_values) {
      const RefTensor output = to_reference(outputs[k]);
      for (size_t e = 0; e < output.values.size(); ++e) total += weight.values[e] * output.values[e];
    }
    return total;
  };
  for (size_t i = 0; i < inputs.size(); ++i)
    if (differentiable_input(op, c, i)) compare_gradient(c, i, inputs, values, device, loss, failures);
  return failures.take();
}

}  // namespace conformance
