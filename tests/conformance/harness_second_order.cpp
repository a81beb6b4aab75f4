// The second-order check (PyTorch's gradgradcheck): autograd's derivatives of the op's gradient,
// taken with create_graph, against central differences of that gradient, in float64. The
// gradient is g = d<W, op(x)>/dx for random weights W; both x and W are perturbed, since g
// depends on W through the backward rule's grad input (a backward op's derivative in its grad).
// The comparison is along random directions (below), so the check costs a few backward passes
// per case whatever its size.
#include <cmath>

#include "harness_detail.h"

namespace conformance {

using ember::OpDef;
using namespace detail;

namespace {

constexpr double kStep = 1e-6;     // as the first-order check: eps 1e-6 in float64
constexpr uint64_t kDirections = 3;

// What the check differentiates: the op's differentiable inputs and the weights of its outputs.
struct SecondOrderProblem {
  const OpDef& op;
  const Case& c;
  Device device;
  Attrs attrs;
  std::vector<size_t> differentiable;          // indices into the case's inputs
  std::vector<int> weighted_outputs;           // outputs in the linear combination
  std::vector<std::vector<double>> directions;  // V_i, one per differentiable input

  // S = sum_i <V_i, dL/dx_i> with L = sum_k <W_k, output_k>, at the given values of the inputs and
  // weights. With create_graph the result keeps history; otherwise only its value matters.
  Tensor evaluate(const std::vector<Tensor>& inputs, const std::vector<Tensor>& weights, bool create_graph) const {
    ember::TensorList outputs = run_for_gradient(op, c, inputs, attrs);
    std::vector<Tensor> roots, leaves;
    for (int k : weighted_outputs) roots.push_back(outputs[k]);
    for (size_t i : differentiable) leaves.push_back(inputs[i]);
    const std::vector<Tensor> grads =
        ember::autograd::grad(roots, leaves, weights, std::nullopt, create_graph, /*allow_unused=*/true);
    Tensor total = ember::zeros({}, {.dtype = ember::kFloat64, .device = device});
    for (size_t j = 0; j < grads.size(); ++j) {
      if (!grads[j].defined()) continue;
      const Tensor direction =
          ember::from_vector<double>(directions[j], grads[j].sizes(), {.dtype = ember::kFloat64}).to(device);
      total = ember::add(total, ember::sum(ember::mul(grads[j], direction)));
    }
    return total;
  }
};

double value_of(const Tensor& scalar) { return to_reference(scalar).values.at(0); }

}  // namespace

std::vector<std::string> check_second_gradients(const OpDef& op, const Case& c, Device device) {
  Failures failures(describe(c, ember::kFloat64, device) + "second order: ");
  SecondOrderProblem problem{op, c, device, attrs_for(c, device), {}, {}, {}};
  std::vector<std::vector<double>> values;
  std::vector<Tensor> inputs = make_inputs(c, ember::kFloat64, device, &values);
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    if (!differentiable_input(op, c, i)) continue;
    problem.differentiable.push_back(i);
    problem.directions.push_back(random_values({c.inputs[i].sizes, real(-1.0, 1.0)}, case_seed(c) + 2000 + i));
    inputs[i].requires_grad_(true);
  }
  std::vector<Tensor> weights;
  std::vector<std::vector<double>> weight_values;
  {
    const ember::TensorList outputs = [&] {
      ember::NoGradGuard no_grad;
      return run_for_gradient(op, problem.c, inputs, problem.attrs);
    }();
    for (int k = 0; k < outputs.size(); ++k) {
      if (!(c.loss_outputs & (1u << k)) || !ember::is_floating(outputs[k].dtype())) continue;
      const InputSpec spec{outputs[k].sizes(), real(-1.0, 1.0)};
      weight_values.push_back(random_values(spec, case_seed(c) + 1000 + k));
      weights.push_back(build_input(spec, weight_values.back(), ember::kFloat64, device).requires_grad_(true));
      problem.weighted_outputs.push_back(k);
    }
  }
  if (weights.empty()) return failures.take();  // no floating output (a cast to int64): no gradient
  Tensor total;
  std::vector<Tensor> second;
  try {
    total = problem.evaluate(inputs, weights, /*create_graph=*/true);
    if (!total.requires_grad()) return failures.take();  // the gradient is constant: nothing to check
    std::vector<Tensor> variables;
    for (size_t i : problem.differentiable) variables.push_back(inputs[i]);
    variables.insert(variables.end(), weights.begin(), weights.end());
    second = ember::autograd::grad({total}, variables, {}, std::nullopt, false, /*allow_unused=*/true);
  } catch (const std::exception& error) {
    failures.add(fmt::format("threw: {}", error.what()));
    return failures.take();
  }
  // Directional derivatives along random directions through every input and weight at once:
  // a wrong second derivative anywhere changes them (with probability one), at two evaluations
  // of S per direction instead of two per element.
  for (uint64_t d = 0; d < kDirections; ++d) {
    double analytic = 0.0;
    std::vector<std::vector<double>> steps;
    for (size_t v = 0; v < second.size(); ++v) {
      const size_t inputs_count = problem.differentiable.size();
      const size_t count =
          v < inputs_count ? values[problem.differentiable[v]].size() : weight_values[v - inputs_count].size();
      const InputSpec spec{{static_cast<int64_t>(count)}, real(-1.0, 1.0)};
      steps.push_back(random_values(spec, case_seed(c) + 3000 + 50 * d + v));
      if (!second[v].defined()) continue;
      const std::vector<double> derivative = to_reference(second[v]).values;
      for (size_t e = 0; e < count; ++e) analytic += derivative[e] * steps[v][e];
    }
    const auto value_at = [&](double scale) {
      std::vector<Tensor> moved_inputs = inputs, moved_weights = weights;
      for (size_t v = 0; v < steps.size(); ++v) {
        const bool is_input = v < problem.differentiable.size();
        const size_t k = is_input ? v : v - problem.differentiable.size();
        std::vector<double> shifted = is_input ? values[problem.differentiable[v]] : weight_values[k];
        for (size_t e = 0; e < shifted.size(); ++e) shifted[e] += scale * steps[v][e];
        if (is_input) {
          const size_t i = problem.differentiable[v];
          moved_inputs[i] = build_input(c.inputs[i], shifted, ember::kFloat64, device).requires_grad_(true);
        } else {
          moved_weights[k] = build_input({weights[k].sizes()}, shifted, ember::kFloat64, device);
        }
      }
      return value_of(problem.evaluate(moved_inputs, moved_weights, false));
    };
    const double numeric = (value_at(kStep) - value_at(-kStep)) / (2 * kStep);
    const double allowed = c.gradient.atol + c.gradient.rtol * std::max(std::abs(numeric), std::abs(analytic));
    if (!(std::abs(analytic - numeric) <= allowed))
      failures.add(fmt::format("along random direction {}: autograd {:.10g}, finite difference {:.10g}", d,
                               analytic, numeric));
  }
  return failures.take();
}

}  // namespace conformance
