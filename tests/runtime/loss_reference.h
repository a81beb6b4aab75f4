// Float64 loop references of softmax and cross_entropy, shared by the loss tests
// (test_losses.cpp, test_cross_entropy_rows.cpp).
#pragma once

#include <algorithm>
#include <cmath>
#include <vector>

#include "numeric_check.h"

namespace ember::testing {

// softmax (or log_softmax) of a [rows, cols] matrix along `dim` with loops.
inline std::vector<double> reference_softmax(const Tensor& x, int dim, bool log) {
  const int64_t rows = x.sizes()[0], cols = x.sizes()[1];
  const std::vector<double> v = values_of(x);
  std::vector<double> out(v.size());
  const int64_t outer = dim == 1 ? rows : cols, length = dim == 1 ? cols : rows;
  for (int64_t o = 0; o < outer; ++o) {
    auto at = [&](int64_t i) { return dim == 1 ? o * cols + i : i * cols + o; };
    double maximum = -INFINITY, total = 0;
    for (int64_t i = 0; i < length; ++i) maximum = std::max(maximum, v[at(i)]);
    for (int64_t i = 0; i < length; ++i) total += std::exp(v[at(i)] - maximum);
    for (int64_t i = 0; i < length; ++i)
      out[at(i)] = log ? v[at(i)] - maximum - std::log(total) : std::exp(v[at(i)] - maximum) / total;
  }
  return out;
}

// Per-row cross entropy with smoothing, 0 for ignored rows; mean over counted rows.
inline std::vector<double> reference_cross_entropy(const Tensor& logits, const std::vector<int64_t>& target,
                                            CrossEntropyOptions options) {
  const std::vector<double> log_probs = reference_softmax(logits, 1, true);
  const int64_t classes = logits.sizes()[1];
  std::vector<double> rows;
  double total = 0;
  int64_t counted = 0;
  for (size_t i = 0; i < target.size(); ++i) {
    if (target[i] == options.ignore_index) {
      rows.push_back(0.0);
      continue;
    }
    double smooth = 0;
    for (int64_t c = 0; c < classes; ++c) smooth -= log_probs[i * classes + c];
    const double nll = -log_probs[i * classes + target[i]];
    rows.push_back((1 - options.label_smoothing) * nll + options.label_smoothing / classes * smooth);
    total += rows.back();
    ++counted;
  }
  if (options.reduction == Reduction::None) return rows;
  return {options.reduction == Reduction::Mean ? total / counted : total};
}

inline Tensor targets(const std::vector<int64_t>& values) { return from_vector<int64_t>(values); }

}  // namespace ember::testing
