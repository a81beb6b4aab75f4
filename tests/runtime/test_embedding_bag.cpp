// F::embedding_bag's values against a float64 loop reference (embedding_bag_reference.h) in every
// mode, for 2-D input and 1-D input with offsets, include_last_offset, empty bags, padding_idx and
// per_sample_weights; its gradients against central differences; mode max's gradient on ties.
#include <doctest/doctest.h>

#include <cmath>

#include "embedding_bag_reference.h"
#include "finite_difference.h"
#include "runtime/ember.h"

namespace test_embedding_bag {

using namespace ember;
using namespace ember::testing;
namespace F = ember::nn::functional;
using Mode = nn::EmbeddingBagMode;

namespace {

constexpr Mode kModes[] = {Mode::Sum, Mode::Mean, Mode::Max};

// Checks values element by element (both float64 here, so only rounding of the sums' order differs).
void check_close(const std::vector<double>& actual, const std::vector<double>& expected, double tolerance = 1e-12) {
  REQUIRE(actual.size() == expected.size());
  for (size_t i = 0; i < actual.size(); ++i) {
    INFO("element ", i, ": ", actual[i], " vs ", expected[i]);
    CHECK(std::abs(actual[i] - expected[i]) <= tolerance * (1.0 + std::abs(expected[i])));
  }
}

// A table of 7 rows of 3 random values, and an input of 9 indices with repeats.
constexpr int64_t kRows = 7;
constexpr int64_t kDim = 3;
const std::vector<int64_t> kIndices{3, 0, 6, 3, 2, 5, 1, 1, 4};

BagReference reference_for(const std::vector<int64_t>& offsets, int64_t last_end) {
  BagReference reference{.table = small_values(kRows * kDim, 11), .dim = kDim, .indices = kIndices};
  set_bags(reference, offsets, last_end);
  return reference;
}

Tensor table_tensor(const BagReference& reference) { return doubles(reference.table, {kRows, kDim}); }

}  // namespace

TEST_CASE("embedding_bag of 1-D input with offsets, empty bags included, matches the loop reference in every mode") {
  // Bags [0, 2), [2, 2) empty, [2, 6), [6, 6) empty, [6, 9).
  const std::vector<int64_t> offsets{0, 2, 2, 6, 6};
  BagReference reference = reference_for(offsets, 9);
  for (Mode mode : kModes) {
    INFO("mode ", std::string(nn::embedding_bag_mode_name(mode)));
    const Tensor out = F::embedding_bag(table_tensor(reference), from_vector<int64_t>(kIndices),
                                        {.offsets = from_vector<int64_t>(offsets), .mode = mode});
    CHECK(out.sizes() == Dims{5, kDim});
    CHECK(out.dtype() == kFloat64);
    check_close(values_of(out), bag_reference(reference, mode));
  }
}

TEST_CASE("embedding_bag of 2-D input is bags of its rows, and include_last_offset changes nothing there") {
  BagReference reference = reference_for({0, 3, 6}, 9);
  const Tensor input = from_vector<int64_t>(kIndices, {3, 3});
  for (Mode mode : kModes) {
    INFO("mode ", std::string(nn::embedding_bag_mode_name(mode)));
    const std::vector<double> expected = bag_reference(reference, mode);
    check_close(values_of(F::embedding_bag(table_tensor(reference), input, {.mode = mode})), expected);
    check_close(
        values_of(F::embedding_bag(table_tensor(reference), input, {.mode = mode, .include_last_offset = true})),
        expected);
  }
}

TEST_CASE("embedding_bag with include_last_offset ends the last bag at the last offset") {
  // Offsets [0, 2, 2, 7] over 9 indices: bags [0, 2), [2, 2), [2, 7); indices 7 and 8 are in no bag.
  BagReference reference = reference_for({0, 2, 2}, 7);
  for (Mode mode : kModes) {
    INFO("mode ", std::string(nn::embedding_bag_mode_name(mode)));
    const Tensor out =
        F::embedding_bag(table_tensor(reference), from_vector<int64_t>(kIndices),
                         {.offsets = from_vector<int64_t>({0, 2, 2, 7}), .mode = mode, .include_last_offset = true});
    CHECK(out.sizes() == Dims{3, kDim});
    check_close(values_of(out), bag_reference(reference, mode));
  }
  // A last offset equal to the input's length is the same as no last offset.
  const Tensor table = table_tensor(reference);
  CHECK(values_of(F::embedding_bag(table, from_vector<int64_t>(kIndices),
                                   {.offsets = from_vector<int64_t>({0, 4, 9}), .include_last_offset = true})) ==
        values_of(F::embedding_bag(table, from_vector<int64_t>(kIndices), {.offsets = from_vector<int64_t>({0, 4})})));
}

TEST_CASE("embedding_bag leaves padding_idx out of its bag and out of the mean's count, a bag of padding is zeros") {
  // Row 3 is the padding (also given as -4): bag [0, 2) holds one 3, bag [3, 4) only a 3.
  BagReference reference = reference_for({0, 2, 3, 4}, 9);
  reference.padding = 3;
  for (Mode mode : kModes) {
    INFO("mode ", std::string(nn::embedding_bag_mode_name(mode)));
    const std::vector<double> expected = bag_reference(reference, mode);
    for (int64_t padding : {3, -4}) {
      const Tensor out =
          F::embedding_bag(table_tensor(reference), from_vector<int64_t>(kIndices),
                           {.offsets = from_vector<int64_t>({0, 2, 3, 4}), .mode = mode, .padding_idx = padding});
      check_close(values_of(out), expected);
    }
    CHECK(expected[2 * kDim] == 0.0);  // bag 2, of padding only
  }
}

TEST_CASE("embedding_bag with per_sample_weights scales each row before the sum") {
  BagReference reference = reference_for({0, 4, 4}, 9);
  reference.weights = small_values(9, 12);
  reference.padding = 1;
  const Tensor out = F::embedding_bag(table_tensor(reference), from_vector<int64_t>(kIndices),
                                      {.offsets = from_vector<int64_t>({0, 4, 4}),
                                       .mode = Mode::Sum,
                                       .per_sample_weights = doubles(reference.weights),
                                       .padding_idx = 1});
  check_close(values_of(out), bag_reference(reference, Mode::Sum));
  // 2-D input takes per_sample_weights of its shape.
  BagReference rows = reference_for({0, 3, 6}, 9);
  rows.weights = reference.weights;
  const Tensor by_rows = F::embedding_bag(table_tensor(rows), from_vector<int64_t>(kIndices, {3, 3}),
                                          {.mode = Mode::Sum, .per_sample_weights = doubles(rows.weights, {3, 3})});
  check_close(values_of(by_rows), bag_reference(rows, Mode::Sum));
}

TEST_CASE("embedding_bag takes int32 input and offsets, float32 tables, and sums 16-bit tables in float32") {
  BagReference reference = reference_for({0, 5}, 9);
  std::vector<int32_t> narrow_indices(kIndices.begin(), kIndices.end());
  for (Mode mode : kModes) {
    const Tensor out = F::embedding_bag(table_tensor(reference).to(kFloat32), from_vector<int32_t>(narrow_indices),
                                        {.offsets = from_vector<int32_t>({0, 5}), .mode = mode});
    CHECK(out.dtype() == kFloat32);
    check_close(values_of(out), bag_reference(reference, mode), 1e-6);
  }
  // 2048 + 1 + 1: float16 steps by 2 past 2048, so summing in float16 would stay at 2048.
  const Tensor half_table = from_vector<double>({2048.0, 1.0}, {2, 1}).to(kFloat16);
  const Tensor summed = F::embedding_bag(half_table, from_vector<int64_t>({0, 1, 1}, {1, 3}), {.mode = Mode::Sum});
  CHECK(summed.dtype() == kFloat16);
  CHECK(values_of(summed) == std::vector<double>{2050.0});
}

TEST_CASE("embedding_bag with no index, or no bag, gives zeros [bags, D] in every mode, and takes D = 0") {
  const Tensor table = small_tensor({4, 2}, 3);
  for (Mode mode : kModes) {
    INFO("mode ", std::string(nn::embedding_bag_mode_name(mode)));
    const Tensor empty_bags =
        F::embedding_bag(table, from_vector<int64_t>({}), {.offsets = from_vector<int64_t>({0, 0}), .mode = mode});
    CHECK(empty_bags.sizes() == Dims{2, 2});
    CHECK(values_of(empty_bags) == std::vector<double>(4, 0.0));
    const Tensor no_bags =
        F::embedding_bag(table, from_vector<int64_t>({1, 2}), {.offsets = from_vector<int64_t>({}), .mode = mode});
    CHECK(no_bags.sizes() == Dims{0, 2});
    const Tensor empty_rows = F::embedding_bag(table, from_vector<int64_t>({}, {3, 0}), {.mode = mode});
    CHECK(values_of(empty_rows) == std::vector<double>(6, 0.0));
    const Tensor no_columns = F::embedding_bag(zeros({4, 0}, {.dtype = kFloat64}), from_vector<int64_t>({1, 2}),
                                               {.offsets = from_vector<int64_t>({0}), .mode = mode});
    CHECK(no_columns.sizes() == Dims{1, 0});
  }
}

TEST_CASE("embedding_bag's gradients for weight and per_sample_weights match central differences") {
  const Tensor input = from_vector<int64_t>(kIndices);
  const Tensor offsets = from_vector<int64_t>({0, 2, 2, 6});
  for (Mode mode : kModes) {
    INFO("mode ", std::string(nn::embedding_bag_mode_name(mode)));
    for (std::optional<int64_t> padding : {std::optional<int64_t>{}, std::optional<int64_t>{3}}) {
      gradcheck_leaves(
          [&](const std::vector<Tensor>& in) {
            return F::embedding_bag(in[0], input, {.offsets = offsets, .mode = mode, .padding_idx = padding});
          },
          {leaf({kRows, kDim}, 21)});
    }
  }
  gradcheck_leaves(
      [&](const std::vector<Tensor>& in) {
        return F::embedding_bag(in[0], input,
                                {.offsets = offsets, .mode = Mode::Sum, .per_sample_weights = in[1], .padding_idx = 5});
      },
      {leaf({kRows, kDim}, 22), leaf({9}, 23)});
  gradcheck_leaves(
      [&](const std::vector<Tensor>& in) {
        return F::embedding_bag(in[0], input.view({3, 3}), {.mode = Mode::Mean});
      },
      {leaf({kRows, kDim}, 24)});
}

TEST_CASE("embedding_bag sends no gradient to padding_idx or to indices past the last bag") {
  const Tensor weight = small_tensor({kRows, kDim}, 31).requires_grad_();
  // Index 4 (the last) is past the last offset 8; row 3 is the padding.
  F::embedding_bag(
      weight, from_vector<int64_t>(kIndices),
      {.offsets = from_vector<int64_t>({0, 4, 8}), .mode = Mode::Mean, .include_last_offset = true, .padding_idx = 3})
      .sum()
      .backward();
  const std::vector<double> grad = values_of(weight.grad());
  for (int64_t column = 0; column < kDim; ++column) {
    CHECK(grad[3 * kDim + column] == 0.0);
    CHECK(grad[4 * kDim + column] == 0.0);
    // Bag [0, 4) holds 0 and 6 once the padding is left out: a mean over 2. Bag [4, 8) holds 1 twice of 4.
    CHECK(grad[0 * kDim + column] == 0.5);
    CHECK(grad[6 * kDim + column] == 0.5);
    CHECK(grad[1 * kDim + column] == 0.5);
  }
}

TEST_CASE("embedding_bag mode max sends the gradient to the first maximum of each bag and column") {
  // Rows 0 and 1 tie in column 0 (5) and differ in column 1; row 2 is below both.
  const Tensor weight = doubles({5, 1, 5, 2, 0, 0}, {3, 2}).requires_grad_();
  // Bag 0: [1, 0, 2] -> column 0 ties between rows 1 (first) and 0, column 1 is row 1's.
  // Bag 1: [0, 0]    -> the same row twice: its first occurrence, one gradient.
  const Tensor out = F::embedding_bag(weight, from_vector<int64_t>({1, 0, 2, 0, 0}),
                                      {.offsets = from_vector<int64_t>({0, 3}), .mode = Mode::Max});
  CHECK(values_of(out) == std::vector<double>{5, 2, 5, 1});
  out.backward(doubles({1, 10, 100, 1000}, {2, 2}));
  CHECK(values_of(weight.grad()) == std::vector<double>{100, 1000, 1, 10, 0, 0});
}

}  // namespace test_embedding_bag
