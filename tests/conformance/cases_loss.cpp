// Conformance cases for cross_entropy, nll_loss and mse_loss with every reduction, ignore_index
// and label smoothing.
#include <doctest/doctest.h>

#include <cmath>

#include "reference.h"

namespace conformance::cases_loss {
namespace {

using enum Layout;
constexpr int64_t kNone = 0, kMean = 1, kSum = 2;  // ember::Reduction values

// Applies a reduction to per-sample losses; `counted` is how many samples the mean divides by.
RefTensor reduced(const RefTensor& losses, int64_t reduction, double counted) {
  if (reduction == kNone) return losses;
  const double total = sum_of(losses.values);
  return filled({}, reduction == kSum ? total : total / counted);
}

// scores [N, C] with target [N], or [C] with a 0-d target: log-probabilities for nll_loss,
// logits for cross_entropy. reduction none gives the target's shape.
std::vector<RefTensor> class_loss(const std::vector<RefTensor>& in, const Attrs& attrs, bool from_logits) {
  const RefTensor& scores = in[0];
  const RefTensor& target = in[1];
  const bool batched = scores.sizes.size() == 2;
  const int64_t n = batched ? scores.sizes[0] : 1, classes = scores.sizes[batched ? 1 : 0];
  const int64_t ignore = attrs.get<int64_t>("ignore_index");
  const double smoothing = from_logits ? attrs.get<double>("label_smoothing") : 0.0;
  RefTensor losses = filled(target.sizes, 0.0);
  double counted = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    const auto t = static_cast<int64_t>(target.values[i]);
    if (t == ignore) continue;
    std::vector<double> row(scores.values.begin() + i * classes, scores.values.begin() + (i + 1) * classes);
    if (from_logits) {
      double peak = row[0], total = 0.0;
      for (double value : row) peak = std::max(peak, value);
      for (double value : row) total += std::exp(value - peak);
      for (double& value : row) value = value - peak - std::log(total);
    }
    // Label smoothing mixes the one-hot target with the uniform distribution over classes.
    losses.values[i] = -(1.0 - smoothing) * row[t] - smoothing / static_cast<double>(classes) * sum_of(row);
    counted += 1.0;
  }
  return {reduced(losses, attrs.get<int64_t>("reduction"), counted)};
}

std::vector<RefTensor> mse_reference(const std::vector<RefTensor>& in, const Attrs& attrs) {
  RefTensor squares = binary(in[0], in[1], [](double a, double b) { return (a - b) * (a - b); });
  return {reduced(squares, attrs.get<int64_t>("reduction"), static_cast<double>(squares.numel()))};
}

struct ClassShape {
  const char* label;
  InputSpec scores;
  int64_t classes;
  int64_t reduction;
  int64_t ignore_index = -100;
  double label_smoothing = 0.0;
  bool gradcheck = true;
};

std::vector<ClassShape> class_shapes(const Domain& scores) {
  return {
      {"[4,5] mean", {{4, 5}, scores}, 5, kMean},
      {"[4,5] sum", {{4, 5}, scores}, 5, kSum},
      {"[4,5] none", {{4, 5}, scores}, 5, kNone},
      {"[6,5] ignore_index 1, mean", {{6, 5}, scores}, 5, kMean, 1},
      {"[6,5] ignore_index 1, none", {{6, 5}, scores}, 5, kNone, 1},
      {"[4,5] label smoothing 0.1, mean", {{4, 5}, scores}, 5, kMean, -100, 0.1},
      {"[6,5] label smoothing 0.2, ignore_index 2, sum", {{6, 5}, scores}, 5, kSum, 2, 0.2},
      {"transposed [4,5] mean", {{4, 5}, scores, Transposed}, 5, kMean},
      {"strided [4,5] sum", {{4, 5}, scores, Strided}, 5, kSum},
      {"expanded [4,5] mean", {{4, 5}, scores, Expanded}, 5, kMean},
      {"size-0 batch [0,5] sum", {{0, 5}, scores}, 5, kSum},
      {"size-0 batch [0,5] none", {{0, 5}, scores}, 5, kNone},
      {"size-1 [1,1] mean", {{1, 1}, scores}, 1, kMean},
      {"1-D scores [5] with a 0-d target, none", {{5}, scores}, 5, kNone},
      {"1-D scores [5] with a 0-d target, mean", {{5}, scores}, 5, kMean},
      {"large [300,120] mean (parallel path)", {{300, 120}, scores}, 120, kMean, -100, 0.0, false},
  };
}

std::vector<Case> loss_cases() {
  std::vector<Case> cases;
  for (const char* op : {"cross_entropy", "nll_loss"}) {
    const bool from_logits = std::string(op) == "cross_entropy";
    // nll_loss takes log-probabilities: negative values (the op does not check they normalise).
    for (const ClassShape& shape : class_shapes(from_logits ? real(-3, 3) : real(-4, -0.05))) {
      if (!from_logits && shape.label_smoothing != 0.0) continue;
      Attrs attrs{{"reduction", shape.reduction}, {"ignore_index", shape.ignore_index}};
      if (from_logits) attrs.set("label_smoothing", shape.label_smoothing);
      const Dims target_sizes = shape.scores.sizes.size() == 2 ? Dims{shape.scores.sizes[0]} : Dims{};
      Case c{.op = op, .label = shape.label,
             .inputs = {shape.scores, {target_sizes, indices(0, shape.classes)}},
             .attrs = attrs,
             .reference = [from_logits](const std::vector<RefTensor>& in, const Attrs& attrs) {
               return class_loss(in, attrs, from_logits);
             },
             .float32 = {1e-5, 1e-5},
             .gradcheck = shape.gradcheck};
      cases.push_back(with_half(c, 2e-2));
    }
  }

  struct MseShape {
    const char* label;
    std::vector<InputSpec> inputs;
    int64_t reduction;
    bool gradcheck = true;
  };
  const Domain d = real();
  const std::vector<MseShape> mse_shapes = {
      {"[3,4] mean", {{{3, 4}, d}, {{3, 4}, d}}, kMean},
      {"[3,4] sum", {{{3, 4}, d}, {{3, 4}, d}}, kSum},
      {"[3,4] none", {{{3, 4}, d}, {{3, 4}, d}}, kNone},
      {"transposed with strided [4,5] mean", {{{4, 5}, d, Transposed}, {{4, 5}, d, Strided}}, kMean},
      {"expanded [3,4] none", {{{3, 4}, d, Expanded}, {{3, 4}, d}}, kNone},
      {"0-d mean", {{{}, d}, {{}, d}}, kMean},
      {"size-0 [0,3] sum", {{{0, 3}, d}, {{0, 3}, d}}, kSum},
      {"size-1 [1] mean", {{{1}, d}, {{1}, d}}, kMean},
      {"large [131,257] mean (parallel path)", {{{131, 257}, d}, {{131, 257}, d}}, kMean, false},
  };
  for (const MseShape& shape : mse_shapes) {
    Case c{.op = "mse_loss", .label = shape.label, .inputs = shape.inputs,
           .attrs = {{"reduction", shape.reduction}}, .reference = mse_reference,
           .float32 = {1e-4, 1e-5}, .gradcheck = shape.gradcheck};
    cases.push_back(with_half(c, 2e-2));
  }
  return cases;
}

const CaseRegistration registration("loss", loss_cases);

TEST_CASE("conformance: losses match float64 references and finite differences") {
  run_cases(loss_cases());
}

}  // namespace
}  // namespace conformance::cases_loss
