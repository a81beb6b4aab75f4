// F::embedding_bag on random bags against the float64 loop reference (embedding_bag_reference.h),
// values and gradients: random offsets (empty bags, empty trailing bags, include_last_offset ends
// before the input's end), 2-D input, negative padding_idx, per_sample_weights, int32 indices and
// tables with ties, so mode max's gradient must reach the first maximum of every bag and column.
#include <doctest/doctest.h>

#include <cmath>
#include <random>

#include "embedding_bag_reference.h"
#include "finite_difference.h"
#include "runtime/ember.h"

namespace test_embedding_bag_random {

using namespace ember;
using namespace ember::testing;
namespace F = ember::nn::functional;
using Mode = nn::EmbeddingBagMode;

namespace {

// d loss / d table and d loss / d weights for loss = sum(out * upstream), by PyTorch's rules: each
// index of a bag other than the padding gets the bag's gradient (over the count for the mean, times
// its weight for the sum); for max only the first index holding the maximum of a column does.
void reference_gradients(const BagReference& bags, Mode mode, const std::vector<double>& upstream,
                         std::vector<double>& table_grad, std::vector<double>& weights_grad) {
  const int64_t dim = bags.dim;
  table_grad.assign(bags.table.size(), 0.0);
  weights_grad.assign(bags.indices.size(), 0.0);
  const std::vector<double> maxima = bag_reference(bags, Mode::Max);
  for (size_t b = 0; b < bags.starts.size(); ++b) {
    int64_t count = 0;
    for (int64_t i = bags.starts[b]; i < bags.ends[b]; ++i)
      count += !(bags.padding && bags.indices[i] == *bags.padding);
    for (int64_t column = 0; column < dim; ++column) {
      const double gradient = upstream[b * dim + column];
      for (int64_t i = bags.starts[b]; i < bags.ends[b]; ++i) {
        const int64_t row = bags.indices[i];
        if (bags.padding && row == *bags.padding) continue;
        const double value = bags.table[row * dim + column];
        if (mode == Mode::Max) {
          if (value != maxima[b * dim + column]) continue;
          table_grad[row * dim + column] += gradient;
          break;
        }
        const double weight = bags.weights.empty() ? 1.0 : bags.weights[i];
        table_grad[row * dim + column] +=
            mode == Mode::Mean ? gradient / static_cast<double>(count) : gradient * weight;
        weights_grad[i] += gradient * value;
      }
    }
  }
}

void check_close(const std::vector<double>& actual, const std::vector<double>& expected, const char* what) {
  REQUIRE(actual.size() == expected.size());
  for (size_t i = 0; i < actual.size(); ++i) {
    INFO(what, " element ", i, ": ", actual[i], " vs ", expected[i]);
    CHECK(std::abs(actual[i] - expected[i]) <= 1e-12 * (1.0 + std::abs(expected[i])));
  }
}

}  // namespace

TEST_CASE("embedding_bag on random bags equals the loop reference in values and gradients") {
  std::mt19937 random(2024);
  const auto below = [&](int64_t bound) { return static_cast<int64_t>(random() % static_cast<uint32_t>(bound)); };
  for (int trial = 0; trial < 300; ++trial) {
    const int64_t rows = 1 + below(6), dim = 1 + below(3), length = below(9);
    const Mode mode = static_cast<Mode>(below(3));
    const bool two_dims = below(4) == 0, include_last_offset = !two_dims && below(2) == 1;
    const bool weighted = mode == Mode::Sum && below(2) == 1, int32 = below(3) == 0;
    BagReference bags{.table = small_values(rows * dim, 100 + trial), .dim = dim};
    if (below(2) == 0)  // whole numbers: ties inside bags
      for (double& value : bags.table) value = std::round(value * 2.0);
    if (below(2) == 0) bags.padding = below(rows);
    const std::optional<int64_t> padding_idx = bags.padding && below(2) ? *bags.padding - rows : bags.padding;
    const int64_t width = 1 + below(3);
    const int64_t count = two_dims ? width * below(4) : length;
    for (int64_t i = 0; i < count; ++i) bags.indices.push_back(below(rows));
    std::vector<int64_t> offsets;
    if (two_dims) {
      for (int64_t start = 0; start < count; start += width) offsets.push_back(start);
      set_bags(bags, offsets, count);
    } else {
      const int64_t entries = below(5) + (include_last_offset ? 1 : 0);
      for (int64_t b = 0; b < entries; ++b) offsets.push_back(b == 0 ? 0 : std::min(count, offsets.back() + below(4)));
      const std::vector<int64_t> starts(offsets.begin(), offsets.end() - (include_last_offset ? 1 : 0));
      set_bags(bags, starts, include_last_offset ? offsets.back() : count);
    }
    if (weighted) bags.weights = small_values(count, 500 + trial);
    INFO("trial ", trial, ": mode ", std::string(nn::embedding_bag_mode_name(mode)), ", rows ", rows, ", dim ", dim,
         ", indices ", count, two_dims ? " (2-D)" : "", include_last_offset ? ", include_last_offset" : "");

    const Tensor table = doubles(bags.table, {rows, dim}).requires_grad_();
    const Tensor weights = weighted ? doubles(bags.weights).requires_grad_() : Tensor{};
    Tensor input = from_vector<int64_t>(bags.indices);
    if (two_dims) input = input.view({count / width, width});
    Tensor offsets_tensor = two_dims ? Tensor{} : from_vector<int64_t>(offsets);
    if (int32) {
      input = input.to(kInt32);
      if (offsets_tensor.defined()) offsets_tensor = offsets_tensor.to(kInt32);
    }
    const Tensor out =
        F::embedding_bag(table, input,
                         {.offsets = offsets_tensor,
                          .mode = mode,
                          .per_sample_weights = two_dims && weighted ? weights.view(input.sizes()) : weights,
                          .include_last_offset = include_last_offset,
                          .padding_idx = padding_idx});
    const int64_t bag_count = static_cast<int64_t>(bags.starts.size());
    REQUIRE(out.sizes() == Dims{bag_count, dim});
    check_close(values_of(out), bag_reference(bags, mode), "value");
    if (bag_count == 0) continue;
    const std::vector<double> upstream = small_values(bag_count * dim, 900 + trial);
    sum(mul(out, doubles(upstream, {bag_count, dim}))).backward();
    std::vector<double> table_grad, weights_grad;
    reference_gradients(bags, mode, upstream, table_grad, weights_grad);
    check_close(table.grad().defined() ? values_of(table.grad()) : std::vector<double>(table_grad.size(), 0.0),
                table_grad, "table gradient");
    if (weighted) check_close(values_of(weights.grad()), weights_grad, "per_sample_weights gradient");
  }
}

}  // namespace test_embedding_bag_random
