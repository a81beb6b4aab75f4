// An independent float64 reference for ctc_loss (tests only): every alignment of a tiny input
// enumerated, each path collapsed (repeats merged, then blanks dropped) and compared with the
// target, so it shares nothing with the alpha recursion it checks. C^T paths: keep T and C tiny.
#pragma once

#include <cmath>
#include <limits>
#include <vector>

namespace ember::testing {

struct CtcReference {
  double loss = 0.0;  // -log of the total probability of the target's alignments (inf for none)
  // d loss / d log_probs[t][c] over the first input_length steps: minus the posterior
  // probability that an alignment of the target emits c at t (0 where the loss is infinite).
  std::vector<std::vector<double>> gradient;
};

// log_probs[t][c] of one sequence, its first `input_length` steps used.
inline CtcReference ctc_brute_force(const std::vector<std::vector<double>>& log_probs, int64_t input_length,
                                    const std::vector<int64_t>& target, int64_t blank) {
  const size_t steps = static_cast<size_t>(input_length);
  const size_t classes = log_probs.empty() ? 0 : log_probs[0].size();
  CtcReference result;
  result.gradient.assign(steps, std::vector<double>(classes, 0.0));
  std::vector<size_t> path(steps, 0);
  double total = 0.0;
  std::vector<std::vector<double>> emitting(steps, std::vector<double>(classes, 0.0));
  while (true) {
    std::vector<int64_t> collapsed;
    for (size_t t = 0; t < steps; ++t) {
      const auto label = static_cast<int64_t>(path[t]);
      if (label != blank && (t == 0 || path[t - 1] != path[t])) collapsed.push_back(label);
    }
    if (collapsed == target) {
      double log_p = 0.0;
      for (size_t t = 0; t < steps; ++t) log_p += log_probs[t][path[t]];
      const double p = std::exp(log_p);
      total += p;
      for (size_t t = 0; t < steps; ++t) emitting[t][path[t]] += p;
    }
    size_t digit = 0;  // the next path, counting in base C
    while (digit < steps && ++path[digit] == classes) path[digit++] = 0;
    if (digit == steps) break;
  }
  result.loss = total > 0.0 ? -std::log(total) : std::numeric_limits<double>::infinity();
  if (total > 0.0)
    for (size_t t = 0; t < steps; ++t)
      for (size_t c = 0; c < classes; ++c) result.gradient[t][c] = -emitting[t][c] / total;
  return result;
}

}  // namespace ember::testing
