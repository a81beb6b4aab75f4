// torch.nn.utils.rnn's packing functions (runtime/nn/modules/rnn_packed.h) against host loops of
// PyTorch 2.3's documented layout: the packed data and batch_sizes of sorted and unsorted batches,
// sorted_indices and unsorted_indices, the pad/pack round trip with batch_first and total_length,
// pad_sequence and pack_sequence, gradients by finite differences, and the errors.
#include <doctest/doctest.h>

#include <algorithm>

#include "error_of.h"
#include "numeric_check.h"
#include "runtime/nn/nn.h"

namespace test_rnn_packing {

using namespace ember;
using namespace ember::testing;
using namespace ember::nn::utils::rnn;

namespace {

using Values = std::vector<double>;

std::vector<int64_t> integers(const Tensor& t) { return t.to_vector<int64_t>(); }

// The packed rows of x [T, B, F] by the definition: for each step t, the sequences longer than t
// in order of decreasing length (ties in batch order), each one's row x[t, b].
Values packed_reference(const Values& x, int64_t B, int64_t F, const std::vector<int64_t>& lengths) {
  std::vector<int64_t> order(lengths.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int64_t>(i);
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return lengths[a] > lengths[b]; });
  Values data;
  for (int64_t t = 0; t < lengths[order[0]]; ++t)
    for (const int64_t b : order)
      if (lengths[b] > t) data.insert(data.end(), x.begin() + (t * B + b) * F, x.begin() + (t * B + b + 1) * F);
  return data;
}

}  // namespace

TEST_CASE("pack_padded_sequence lays out the steps of unsorted and sorted batches as PyTorch") {
  const int64_t T = 5, B = 4, F = 2;
  const Tensor x = random_tensor({T, B, F}, 801);
  const std::vector<int64_t> lengths{2, 5, 1, 2};
  const PackedSequence packed = pack_padded_sequence(x, lengths, false, false);
  CHECK(integers(packed.batch_sizes) == std::vector<int64_t>{4, 3, 1, 1, 1});
  CHECK(packed.batch_sizes.device().is_cpu());
  CHECK(integers(packed.sorted_indices) == std::vector<int64_t>{1, 0, 3, 2});  // ties keep their order
  CHECK(integers(packed.unsorted_indices) == std::vector<int64_t>{1, 0, 3, 2});
  CHECK(packed.data.sizes() == Dims{10, F});
  check_close(packed.data, packed_reference(values_of(x), B, F, lengths), 0.0);

  // batch_first, a lengths tensor: the same packing of the transposed batch.
  const PackedSequence batch_first =
      pack_padded_sequence(x.transpose(0, 1).contiguous(), from_vector<int64_t>(lengths, {B}), true, false);
  check_close(batch_first.data, values_of(packed.data), 0.0);
  CHECK(integers(batch_first.batch_sizes) == integers(packed.batch_sizes));

  // Sorted lengths with enforce_sorted: no permutation kept.
  const std::vector<int64_t> sorted{5, 3, 3, 1};
  const PackedSequence kept = pack_padded_sequence(x, sorted);
  CHECK(!kept.sorted_indices.defined());
  CHECK(!kept.unsorted_indices.defined());
  CHECK(integers(kept.batch_sizes) == std::vector<int64_t>{4, 3, 3, 1, 1});
  check_close(kept.data, packed_reference(values_of(x), B, F, sorted), 0.0);
}

TEST_CASE("pad_packed_sequence undoes the packing: original order, padding_value, total_length, batch_first") {
  const int64_t T = 4, B = 3, F = 2;
  const Tensor x = random_tensor({B, T, F}, 811);
  const std::vector<int64_t> lengths{3, 1, 4};
  const Values values = values_of(x);
  for (const bool batch_first : {false, true})
    for (const int64_t total : {int64_t{4}, int64_t{6}}) {
      INFO("batch_first ", batch_first, ", total_length ", total);
      const Tensor input = batch_first ? x : x.transpose(0, 1);
      const PackedSequence packed = pack_padded_sequence(input, lengths, batch_first, false);
      const auto [padded, padded_lengths] = pad_packed_sequence(packed, batch_first, 7.5, total);
      CHECK(integers(padded_lengths) == lengths);
      CHECK(padded_lengths.device().is_cpu());
      const Tensor by_batch = batch_first ? padded : padded.transpose(0, 1);
      CHECK(by_batch.sizes() == Dims{B, total, F});
      Values expected;
      for (int64_t b = 0; b < B; ++b)
        for (int64_t t = 0; t < total; ++t)
          for (int64_t f = 0; f < F; ++f) expected.push_back(t < lengths[b] ? values[(b * T + t) * F + f] : 7.5);
      check_close(by_batch, expected, 0.0);
    }
  // Without total_length the longest sequence sets T; a sorted batch round-trips without indices.
  const PackedSequence sorted = pack_padded_sequence(x.transpose(0, 1), std::vector<int64_t>{4, 2, 2});
  const auto [padded, padded_lengths] = pad_packed_sequence(sorted);
  CHECK(padded.sizes() == Dims{T, B, F});
  CHECK(integers(padded_lengths) == std::vector<int64_t>{4, 2, 2});
  check_close(padded.narrow(0, 0, 2), values_of(x.transpose(0, 1).narrow(0, 0, 2)), 0.0);
  check_close(padded.narrow(0, 2, 2).narrow(1, 1, 2), Values(8, 0.0), 0.0);
}

TEST_CASE("pad_sequence and pack_sequence: PyTorch's layouts, empty sequences, gradients") {
  const Tensor a = random_tensor({3, 2}, 821), b = random_tensor({0, 2}, 822), c = random_tensor({2, 2}, 823);
  const Tensor padded = pad_sequence({a, b, c}, false, -1.0);
  CHECK(padded.sizes() == Dims{3, 3, 2});
  check_close(padded.select(1, 0), values_of(a), 0.0);
  check_close(padded.select(1, 1), Values(6, -1.0), 0.0);
  check_close(padded.select(1, 2).narrow(0, 0, 2), values_of(c), 0.0);
  check_close(padded.select(1, 2).select(0, 2), Values(2, -1.0), 0.0);
  check_close(pad_sequence({a, b, c}, true, -1.0), values_of(padded.transpose(0, 1)), 0.0);

  const PackedSequence packed = pack_sequence({c, a}, false);
  CHECK(integers(packed.batch_sizes) == std::vector<int64_t>{2, 2, 1});
  CHECK(integers(packed.sorted_indices) == std::vector<int64_t>{1, 0});
  const Values av = values_of(a), cv = values_of(c);
  check_close(packed.data, {av[0], av[1], cv[0], cv[1], av[2], av[3], cv[2], cv[3], av[4], av[5]}, 0.0);

  // Gradients flow from the packed data and the padded output back to every sequence.
  gradcheck(
      [](const std::vector<Tensor>& t) {
        return pack_sequence({t[0], t[1], t[2]}, false).data;
      },
      {random_tensor({2, 3}, 824), random_tensor({4, 3}, 825), random_tensor({1, 3}, 826)});
  gradcheck(
      [](const std::vector<Tensor>& t) {
        const PackedSequence p = pack_padded_sequence(t[0], std::vector<int64_t>{2, 4, 3}, true, false);
        return std::get<0>(pad_packed_sequence(p, true, 0.5, 5));
      },
      {random_tensor({3, 4, 2}, 827)});
}

TEST_CASE("the packing functions refuse bad lengths and shapes by name") {
  const Tensor x = randn({5, 3, 2});
  CHECK_THROWS_WITH_AS(pack_padded_sequence(x, std::vector<int64_t>{2, 5, 1}),
                       doctest::Contains("pack_padded_sequence: `lengths` array must be sorted in decreasing order "
                                         "when `enforce_sorted` is True (got lengths [2, 5, 1])"),
                       Error);
  CHECK_THROWS_WITH_AS(pack_padded_sequence(x, std::vector<int64_t>{5, 0, 0}, false, false),
                       doctest::Contains("Length of all samples has to be greater than 0, but found an element in "
                                         "'lengths' that is <= 0: lengths[1] = 0"),
                       Error);
  CHECK_THROWS_WITH_AS(
      pack_padded_sequence(x, std::vector<int64_t>{6, 2, 1}),
      doctest::Contains("lengths[0] = 6 is longer than the padded input's 5 steps (input of shape [5, 3, 2])"), Error);
  CHECK_THROWS_WITH_AS(pack_padded_sequence(x, std::vector<int64_t>{2, 1}),
                       doctest::Contains("Expected `len(lengths)` to be equal to batch_size, but got 2 (batch_size=3)"),
                       Error);
  CHECK_THROWS_WITH_AS(pack_padded_sequence(randn({0, 3, 2}), std::vector<int64_t>{1, 1, 1}),
                       doctest::Contains("Cannot pack empty tensors"), Error);
  CHECK_THROWS_WITH_AS(pack_padded_sequence(x, zeros({3, 1})),
                       doctest::Contains("expected lengths to be a 1-D tensor, got shape [3, 1]"), Error);
  const PackedSequence packed = pack_padded_sequence(x, std::vector<int64_t>{4, 3, 3});
  CHECK_THROWS_WITH_AS(pad_packed_sequence(packed, false, 0.0, 3),
                       doctest::Contains("Expected total_length to be at least the length of the longest sequence in "
                                         "input, but got total_length=3 and max sequence length being 4"),
                       Error);
  const PackedSequence rising{packed.data, from_vector<int64_t>({3, 3, 4, 0}, {4})};
  CHECK_THROWS_WITH_AS(pad_packed_sequence(rising),
                       doctest::Contains("batch_sizes must be positive and not increasing, got [3, 3, 4, 0]"), Error);
  CHECK_THROWS_WITH_AS(pad_sequence({}), doctest::Contains("pad_sequence: received an empty list of sequences"), Error);
  CHECK_THROWS_WITH_AS(pad_sequence({randn({2, 3}), randn({2, 4})}),
                       doctest::Contains("every sequence needs sequence 0's trailing sizes, dtype and device ([2, 3] "
                                         "float32 on cpu), but sequence 1 is [2, 4] float32 on cpu"),
                       Error);
  CHECK_THROWS_WITH_AS(pack_sequence({randn({2, 3}), randn({0, 3})}), doctest::Contains("lengths[1] = 0"), Error);
  const int line = __LINE__ + 1;
  const std::string message = error_of([&] { pack_padded_sequence(x, std::vector<int64_t>{1, 2, 3}); });
  CHECK(names_line(message, line));
}

}  // namespace test_rnn_packing
