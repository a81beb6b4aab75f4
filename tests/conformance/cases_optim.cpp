// Conformance cases for the fused optimizer steps sgd_step_ and adam_step_ (in-place ops that
// write the parameter and its state), against PyTorch 1.13's single-tensor SGD and Adam(W)
// formulas evaluated in float64.
#include <doctest/doctest.h>

#include <cmath>

#include "reference.h"

namespace conformance::cases_optim {
namespace {

using enum Layout;

// Inputs param, grad, momentum_buffer (optional); outputs param, momentum_buffer.
std::vector<RefTensor> sgd_reference(const std::vector<RefTensor>& in, const Attrs& attrs) {
  const double lr = attrs.get<double>("lr"), momentum = attrs.get<double>("momentum");
  const double dampening = attrs.get<double>("dampening"), weight_decay = attrs.get<double>("weight_decay");
  const bool nesterov = attrs.get<bool>("nesterov"), first_step = attrs.get<bool>("first_step");
  const double sign = attrs.get<bool>("maximize") ? -1.0 : 1.0;  // maximize: the gradient negated first
  RefTensor param = in[0], buffer = in[2];
  for (int64_t i = 0; i < param.numel(); ++i) {
    double direction = sign * in[1].values[i] + weight_decay * param.values[i];
    if (momentum != 0.0) {
      double& b = buffer.values[i];
      b = first_step ? direction : momentum * b + (1.0 - dampening) * direction;
      direction = nesterov ? direction + momentum * b : b;
    }
    param.values[i] -= lr * direction;
  }
  param.dtype.reset();  // the dtype under test
  buffer.dtype.reset();
  return {param, buffer};
}

// Inputs param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq (optional); outputs the same minus grad.
std::vector<RefTensor> adam_reference(const std::vector<RefTensor>& in, const Attrs& attrs) {
  const double lr = attrs.get<double>("lr"), beta1 = attrs.get<double>("beta1"), beta2 = attrs.get<double>("beta2");
  const double eps = attrs.get<double>("eps"), weight_decay = attrs.get<double>("weight_decay");
  const auto step = static_cast<double>(attrs.get<int64_t>("step"));
  const bool amsgrad = attrs.get<bool>("amsgrad"), decoupled = attrs.get<bool>("decoupled");
  const double sign = attrs.get<bool>("maximize") ? -1.0 : 1.0;
  RefTensor param = in[0], exp_avg = in[2], exp_avg_sq = in[3], max_sq = in[4];
  const double correction1 = 1.0 - std::pow(beta1, step), correction2 = 1.0 - std::pow(beta2, step);
  for (int64_t i = 0; i < param.numel(); ++i) {
    double& p = param.values[i];
    double grad = sign * in[1].values[i];
    if (decoupled) p *= 1.0 - lr * weight_decay;
    else grad += weight_decay * p;
    exp_avg.values[i] = beta1 * exp_avg.values[i] + (1.0 - beta1) * grad;
    exp_avg_sq.values[i] = beta2 * exp_avg_sq.values[i] + (1.0 - beta2) * grad * grad;
    double second = exp_avg_sq.values[i];
    if (amsgrad) second = max_sq.values[i] = std::max(max_sq.values[i], second);
    p -= lr / correction1 * exp_avg.values[i] / (std::sqrt(second) / std::sqrt(correction2) + eps);
  }
  for (RefTensor* out : {&param, &exp_avg, &exp_avg_sq, &max_sq}) out->dtype.reset();
  return {param, exp_avg, exp_avg_sq, max_sq};
}

struct Layouts {
  const char* label;
  Dims sizes;
  Layout layout;
};
const Layouts kLayouts[] = {
    {"[3,4]", {3, 4}, Contiguous},
    {"transposed [4,5]", {4, 5}, Transposed},
    {"strided [2,3,4]", {2, 3, 4}, Strided},
    {"0-d", {}, Contiguous},
    {"size-0 [0,3]", {0, 3}, Contiguous},
    {"large [131,257] (parallel path)", {131, 257}, Contiguous},
};

Case step_case(const char* op, const std::string& label, std::vector<InputSpec> inputs, Attrs attrs, Reference reference) {
  // The kernels follow PyTorch's rounding order in the dtype under test; 16-bit states round.
  Case c{.op = op, .label = label, .inputs = std::move(inputs), .attrs = attrs, .reference = std::move(reference),
         .float32 = {2e-5, 1e-6}};
  return with_half(c, 2e-2);
}

std::vector<Case> optim_cases() {
  std::vector<Case> cases;
  struct SgdOptions {
    const char* label;
    double momentum, dampening, weight_decay;
    bool nesterov, first_step;
    bool maximize = false;
  };
  const SgdOptions sgd_options[] = {
      {"plain", 0.0, 0.0, 0.0, false, false},
      {"weight decay, no buffer", 0.0, 0.0, 0.01, false, false},
      {"momentum, first step", 0.9, 0.0, 0.0, false, true},
      {"momentum, dampening, weight decay", 0.9, 0.1, 0.05, false, false},
      {"nesterov", 0.8, 0.0, 0.01, true, false},
      {"maximize, momentum, weight decay", 0.9, 0.1, 0.05, false, false, true},
      {"maximize, nesterov, first step", 0.8, 0.0, 0.01, true, true, true},
  };
  for (const Layouts& shape : kLayouts) {
    for (const SgdOptions& options : sgd_options) {
      const InputSpec tensor{shape.sizes, real(), shape.layout};
      const InputSpec buffer = options.momentum != 0.0 ? tensor : undefined_input();
      cases.push_back(step_case("sgd_step_", fmt::format("{}, {}", shape.label, options.label), {tensor, tensor, buffer},
                                {{"lr", 0.1}, {"momentum", options.momentum}, {"dampening", options.dampening},
                                 {"weight_decay", options.weight_decay}, {"nesterov", options.nesterov},
                                 {"first_step", options.first_step}, {"maximize", options.maximize}},
                                sgd_reference));
    }
  }

  struct AdamOptions {
    const char* label;
    double weight_decay;
    int64_t step;
    bool amsgrad, decoupled;
    bool maximize = false;
  };
  const AdamOptions adam_options[] = {
      {"adam, step 1", 0.0, 1, false, false},
      {"adam, L2 decay, step 7", 0.01, 7, false, false},
      {"adamw, step 3", 0.1, 3, false, true},
      {"amsgrad, step 5", 0.0, 5, true, false},
      {"adamw amsgrad, step 2", 0.05, 2, true, true},
      {"adam maximize, L2 decay, step 4", 0.01, 4, false, false, true},
      {"adamw amsgrad maximize, step 3", 0.05, 3, true, true, true},
  };
  for (const Layouts& shape : kLayouts) {
    for (const AdamOptions& options : adam_options) {
      const InputSpec tensor{shape.sizes, real(), shape.layout};
      // Second moments are positive.
      const InputSpec moment{shape.sizes, positive(0.01, 1.0), shape.layout};
      const InputSpec max_moment = options.amsgrad ? moment : undefined_input();
      cases.push_back(step_case("adam_step_", fmt::format("{}, {}", shape.label, options.label),
                                {tensor, tensor, tensor, moment, max_moment},
                                {{"lr", 0.01}, {"beta1", 0.9}, {"beta2", 0.999}, {"eps", 1e-8},
                                 {"weight_decay", options.weight_decay}, {"step", options.step},
                                 {"amsgrad", options.amsgrad}, {"decoupled", options.decoupled},
                                 {"maximize", options.maximize}},
                                adam_reference));
    }
  }
  return cases;
}

const CaseRegistration registration("optim", optim_cases);

TEST_CASE("conformance: sgd_step_ and adam_step_ match PyTorch's update formulas in float64") {
  run_cases(optim_cases());
}

}  // namespace
}  // namespace conformance::cases_optim
