// A float64 reference for F::embedding_bag written as plain loops over PyTorch's definition:
// each bag's rows (times per_sample_weights) summed, averaged over the indices other than
// padding_idx, or their per-column maximum (the first on ties); an empty bag is zeros.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "runtime/ember.h"

namespace ember::testing {

struct BagReference {
  std::vector<double> table;  // [rows, dim], row-major
  int64_t dim = 0;
  std::vector<int64_t> indices;
  std::vector<int64_t> starts;  // bag b is indices[starts[b], ends[b])
  std::vector<int64_t> ends;
  std::vector<double> weights;  // per index; empty for all ones
  std::optional<int64_t> padding;
};

// Bags of a 1-D input from offsets: each to the next start, the last to `last_end`.
inline void set_bags(BagReference& reference, const std::vector<int64_t>& offsets, int64_t last_end) {
  reference.starts = offsets;
  reference.ends.clear();
  for (size_t b = 0; b < offsets.size(); ++b)
    reference.ends.push_back(b + 1 < offsets.size() ? offsets[b + 1] : last_end);
}

// The result [bags, dim], row-major.
inline std::vector<double> bag_reference(const BagReference& reference, nn::EmbeddingBagMode mode) {
  const int64_t dim = reference.dim;
  std::vector<double> result(reference.starts.size() * dim, 0.0);
  for (size_t b = 0; b < reference.starts.size(); ++b) {
    for (int64_t column = 0; column < dim; ++column) {
      double total = 0.0;
      double best = 0.0;
      int64_t count = 0;
      for (int64_t i = reference.starts[b]; i < reference.ends[b]; ++i) {
        const int64_t row = reference.indices[i];
        if (reference.padding && row == *reference.padding) continue;
        const double value = reference.table[row * dim + column];
        const double weight = reference.weights.empty() ? 1.0 : reference.weights[i];
        total += value * weight;
        if (count == 0 || value > best) best = value;
        ++count;
      }
      double& out = result[b * dim + column];
      if (mode == nn::EmbeddingBagMode::Sum) out = total;
      if (mode == nn::EmbeddingBagMode::Mean) out = count == 0 ? 0.0 : total / static_cast<double>(count);
      if (mode == nn::EmbeddingBagMode::Max) out = best;
    }
  }
  return result;
}

}  // namespace ember::testing
