// flip, repeat and roll (runtime/functional_reorder.cpp): values against hand-computed tensors and
// float64 loop references, new tensors rather than views, dtypes, empty tensors, gradients by
// central differences, and errors naming the function, the values and the caller's line.
#include <doctest/doctest.h>

#include <source_location>
#include <string>
#include <string_view>
#include <vector>

#include "error_of.h"
#include "finite_difference.h"
#include "runtime/ember.h"

namespace test_flip_repeat_roll {

using namespace ember;
using ember::testing::error_of;
using ember::testing::gradcheck_leaves;
using ember::testing::leaf;
using ember::testing::names_line;
using ember::testing::small_tensor;
using ember::testing::values_of;

namespace {

// 0, 1, 2, ... in `sizes`, float64.
Tensor counting(const Dims& sizes) {
  return arange(static_cast<double>(sizes.product()), {.dtype = kFloat64}).reshape(sizes);
}

void check_refusal(const std::string& message, std::string_view expected, int line,
                   std::source_location caller = std::source_location::current()) {
  INFO(message);
  CHECK(message.find(expected) != std::string::npos);
  CHECK(names_line(message, line, caller));
}

// torch.Tensor.repeat by its definition: out[i_0, .., i_n] = a[i_k mod size_k, ..] over a's shape
// padded with leading 1s.
std::vector<double> reference_repeat(const Tensor& a, const Dims& repeats) {
  Dims padded = Dims::filled(repeats.size() - a.dim(), 1);
  for (const int64_t size : a.sizes()) padded.push_back(size);
  Dims out_sizes;
  for (int i = 0; i < repeats.size(); ++i) out_sizes.push_back(padded[i] * repeats[i]);
  const std::vector<double> values = values_of(a);
  std::vector<double> out(static_cast<size_t>(out_sizes.product()));
  for (int64_t flat = 0; flat < out_sizes.product(); ++flat) {
    int64_t rest = flat, source = 0, stride = 1;
    for (int d = out_sizes.size() - 1; d >= 0; --d) {
      source += (rest % out_sizes[d]) % padded[d] * stride;
      rest /= out_sizes[d];
      stride *= padded[d];
    }
    out[static_cast<size_t>(flat)] = values[static_cast<size_t>(source)];
  }
  return out;
}

}  // namespace

TEST_CASE("flip: reverses each named dim, negative dims counting from the end") {
  const Tensor t = counting({2, 3});
  CHECK(values_of(flip(t, {0})) == std::vector<double>{3, 4, 5, 0, 1, 2});
  CHECK(values_of(t.flip({1})) == std::vector<double>{2, 1, 0, 5, 4, 3});
  CHECK(values_of(flip(t, {0, -1})) == std::vector<double>{5, 4, 3, 2, 1, 0});
  const Tensor cube = counting({2, 2, 2});
  CHECK(values_of(flip(cube, {-1, 0})) == std::vector<double>{5, 4, 7, 6, 1, 0, 3, 2});
  CHECK(values_of(flip(cube.transpose(0, 2), {1})) == std::vector<double>{2, 6, 0, 4, 3, 7, 1, 5});
  // A new tensor, also with no dims to flip.
  const Tensor same = flip(t, {});
  CHECK(values_of(same) == values_of(t));
  CHECK(same.impl()->storage != t.impl()->storage);
  CHECK(flip(zeros({2, 0, 3}), {1, 2}).sizes() == Dims{2, 0, 3});
  CHECK(flip(scalar_tensor(4.0), {0}).item() == 4.0);
  const Tensor integers = from_vector<int64_t>({1, 2, 3}, {3});
  CHECK(flip(integers, {0}).to_vector<int64_t>() == std::vector<int64_t>{3, 2, 1});
  CHECK(flip(from_vector<bool>({true, false, false}, {3}), {0}).to_vector<bool>() ==
        std::vector<bool>{false, false, true});
}

TEST_CASE("repeat: tiles each dim, leading repeats adding dims (torch.Tensor.repeat)") {
  const Tensor t = counting({2, 3});
  CHECK(values_of(t.repeat({1, 2})) == std::vector<double>{0, 1, 2, 0, 1, 2, 3, 4, 5, 3, 4, 5});
  CHECK(values_of(repeat(t, {2, 1})) == std::vector<double>{0, 1, 2, 3, 4, 5, 0, 1, 2, 3, 4, 5});
  const Tensor lifted = repeat(counting({3}), {2, 2});
  CHECK(lifted.sizes() == Dims{2, 6});
  CHECK(values_of(lifted) == std::vector<double>{0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2});
  for (const Dims& repeats : {Dims{2, 1, 2}, Dims{3, 2, 2, 1}, Dims{1, 1}, Dims{1, 3}}) {
    INFO("repeats ", repeats);
    CHECK(values_of(repeat(t, repeats)) == reference_repeat(t, repeats));
    CHECK(values_of(repeat(t.t(), repeats)) == reference_repeat(t.t(), repeats));
  }
  CHECK(repeat(t, {0, 2}).sizes() == Dims{0, 6});
  CHECK(repeat(zeros({0, 2}), {3, 2}).sizes() == Dims{0, 4});
  CHECK(values_of(repeat(scalar_tensor(2.5, {.dtype = kFloat64}), {3})) == std::vector<double>{2.5, 2.5, 2.5});
  CHECK(repeat(scalar_tensor(1.0), {}).sizes() == Dims{});
  // More dims than the pairs of one expanded view have room for: one dim at a time.
  const Tensor five = small_tensor({1, 2, 1, 2, 3}, 3);
  CHECK(values_of(repeat(five, {2, 2, 3, 1, 2})) == reference_repeat(five, {2, 2, 3, 1, 2}));
  CHECK(values_of(repeat(counting({2}), {2, 1, 1, 2, 1, 1, 1, 2})) ==
        reference_repeat(counting({2}), {2, 1, 1, 2, 1, 1, 1, 2}));
  CHECK(repeat(from_vector<int64_t>({4, 5}, {2}), {2}).to_vector<int64_t>() == std::vector<int64_t>{4, 5, 4, 5});
  CHECK(repeat(from_vector<bool>({true}, {1}), {3}).to_vector<bool>() == std::vector<bool>{true, true, true});
}

TEST_CASE("repeat: the result is a new contiguous tensor, never a view of the input") {
  Tensor single = counting({1});
  Tensor tiled = repeat(single, {3});
  CHECK(tiled.is_contiguous());
  CHECK(tiled.impl()->storage != single.impl()->storage);
  tiled.fill_(9.0);  // an expanded view would refuse this write
  CHECK(single.item() == 0.0);
  CHECK(repeat(single, {1}).impl()->storage != single.impl()->storage);
}

TEST_CASE("roll: rotates along dims, or the flattened tensor without dims") {
  const Tensor t = counting({2, 3});
  CHECK(values_of(roll(t, {1}, {1})) == std::vector<double>{2, 0, 1, 5, 3, 4});
  CHECK(values_of(t.roll({-1}, {-1})) == std::vector<double>{1, 2, 0, 4, 5, 3});
  CHECK(values_of(roll(t, {1})) == std::vector<double>{5, 0, 1, 2, 3, 4});
  CHECK(roll(t, {1}).sizes() == Dims{2, 3});
  CHECK(values_of(roll(t, {1, 1}, {0, 1})) == std::vector<double>{5, 3, 4, 2, 0, 1});
  CHECK(values_of(roll(t, {4}, {1})) == values_of(roll(t, {1}, {1})));
  CHECK(values_of(roll(t, {-7}, {1})) == values_of(roll(t, {-1}, {1})));
  CHECK(values_of(roll(t, {1, 1}, {1, 1})) == values_of(roll(t, {2}, {1})));  // a dim may repeat
  const Tensor unchanged = roll(t, {3}, {1});
  CHECK(values_of(unchanged) == values_of(t));
  CHECK(unchanged.impl()->storage != t.impl()->storage);
  CHECK(values_of(roll(t.t(), {1}, {0})) == std::vector<double>{2, 5, 0, 3, 1, 4});
  CHECK(roll(zeros({0, 2}), {1}, {0}).sizes() == Dims{0, 2});
  CHECK(roll(from_vector<int64_t>({1, 2, 3}, {3}), {1}).to_vector<int64_t>() == std::vector<int64_t>{3, 1, 2});
}

TEST_CASE("flip, repeat, roll: gradients by central differences") {
  gradcheck_leaves([](const std::vector<Tensor>& in) { return flip(in[0], {0, 2}).mul(in[0]); }, {leaf({2, 3, 2}, 1)});
  gradcheck_leaves([](const std::vector<Tensor>& in) { return repeat(in[0], {2, 1, 3}).exp(); }, {leaf({2, 2}, 2)});
  gradcheck_leaves([](const std::vector<Tensor>& in) { return repeat(in[0], {2, 2, 1, 2, 2}); },
                   {leaf({1, 2, 2, 1}, 3)});
  gradcheck_leaves([](const std::vector<Tensor>& in) { return roll(in[0], {2, -1}, {1, 0}).mul(in[0]); },
            {leaf({3, 4}, 4)});
  gradcheck_leaves([](const std::vector<Tensor>& in) { return roll(in[0].t(), {5}).tanh(); }, {leaf({2, 3}, 5)});
}

TEST_CASE("flip, repeat, roll: errors name the function, the values and the caller's line") {
  const Tensor t = counting({2, 3});
  int line = __LINE__ + 1;
  std::string message = error_of([&] { flip(t, {1, -1}); });
  check_refusal(message, "flip: dim 1 appears more than once in dims [1, -1]", line);
  line = __LINE__ + 1;
  message = error_of([&] { t.flip({2}); });
  check_refusal(message, "flip: dim 2 is out of range for a tensor of rank 2", line);
  line = __LINE__ + 1;
  message = error_of([&] { repeat(t, {2}); });
  check_refusal(message, "repeat: 1 repeats [2] for a tensor of 2 dims (shape [2, 3]); give at least one per dim",
                line);
  line = __LINE__ + 1;
  message = error_of([&] { t.repeat({2, -1}); });
  check_refusal(message, "repeat: repeats must be non-negative, got [2, -1] (shape [2, 3])", line);
  line = __LINE__ + 1;
  message = error_of([&] { roll(t, {1, 2}, {0}); });
  check_refusal(message, "roll: shifts [1, 2] and dims [0] must have as many entries", line);
  line = __LINE__ + 1;
  message = error_of([&] { roll(t, {1, 2}); });
  check_refusal(message, "roll: without dims, shifts must have one entry (the flattened tensor's), got [1, 2]", line);
  line = __LINE__ + 1;
  message = error_of([&] { roll(t, {}, {}); });
  check_refusal(message, "roll: shifts must not be empty", line);
  line = __LINE__ + 1;
  message = error_of([&] { roll(t, {1}, {-3}); });
  check_refusal(message, "roll: dim -3 is out of range for a tensor of rank 2", line);
}

}  // namespace test_flip_repeat_roll
