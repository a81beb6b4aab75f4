// nn::EmbeddingBag (forward through F::embedding_bag, _weight, from_pretrained and freeze, torch's
// repr), embedding_bag's max_norm, which host reads it makes, and every refusal with its message
// and the caller's line.
#include <doctest/doctest.h>

#include <sstream>

#include "error_of.h"
#include "finite_difference.h"
#include "host_read_recorder.h"
#include "runtime/ember.h"

namespace test_embedding_bag_module {

using namespace ember;
using namespace ember::testing;
namespace F = ember::nn::functional;
using Mode = nn::EmbeddingBagMode;

TEST_CASE("nn::EmbeddingBag's forward is F::embedding_bag over its weight with its options") {
  nn::EmbeddingBag bag(6, 3, {.mode = Mode::Sum, .padding_idx = -2, .dtype = kFloat64});
  CHECK(bag->weight.sizes() == Dims{6, 3});
  CHECK(bag->weight.requires_grad());
  CHECK(bag->options().padding_idx == 4);
  CHECK(values_of(bag->weight.select(0, 4)) == std::vector<double>{0, 0, 0});  // the padding row starts as zeros
  const Tensor input = from_vector<int64_t>({1, 4, 2, 5, 0});
  const Tensor offsets = from_vector<int64_t>({0, 2});
  const Tensor weights = small_tensor({5}, 7);
  const Tensor expected = F::embedding_bag(
      bag->weight, input, {.offsets = offsets, .mode = Mode::Sum, .per_sample_weights = weights, .padding_idx = 4});
  CHECK(values_of(bag(input, offsets, weights)) == values_of(expected));
  CHECK(values_of(bag(input.view({1, 5}))) ==
        values_of(F::embedding_bag(bag->weight, input.view({1, 5}), {.mode = Mode::Sum, .padding_idx = 4})));
  bag(input, offsets).sum().backward();
  CHECK(values_of(bag->weight.grad().select(0, 4)) == std::vector<double>{0, 0, 0});
  CHECK(values_of(bag->weight.grad().select(0, 2)) == std::vector<double>{1, 1, 1});
}

TEST_CASE("nn::EmbeddingBag passes include_last_offset, max_norm, norm_type and the refused options to F") {
  // Norms above max_norm = 1.5 in both the 1-norm and the 2-norm, so the renorm's norm_type shows;
  // offsets [0, 2, 4] over 6 indices are 2 bags with include_last_offset (4 and 5 in none), 3 without.
  const Tensor input = from_vector<int64_t>({0, 3, 3, 1, 4, 2});
  const Tensor offsets = from_vector<int64_t>({0, 2, 4});
  Tensor table = small_tensor({5, 3}, 41).mul(4.0);
  nn::EmbeddingBag bag(5, 3,
                       {.max_norm = 1.5, .norm_type = 1.0, ._weight = table.clone(), .include_last_offset = true});
  const Tensor out = bag(input, offsets);
  const Tensor expected = F::embedding_bag(
      table, input, {.offsets = offsets, .max_norm = 1.5, .norm_type = 1.0, .include_last_offset = true});
  CHECK(out.sizes() == Dims{2, 3});
  CHECK(values_of(out) == values_of(expected));
  CHECK(values_of(bag->weight) == values_of(table));  // renormed in place alike, in the 1-norm
  // The options F refuses are refused through the module too, not dropped on the way.
  const Tensor pair = from_vector<int64_t>({0, 1});
  CHECK(error_of([&] { nn::EmbeddingBag(5, 3, {.scale_grad_by_freq = true})(pair, offsets.slice(0, 0, 1)); })
            .find("embedding_bag: scale_grad_by_freq is not supported") != std::string::npos);
  CHECK(error_of([&] { nn::EmbeddingBag(5, 3, {.sparse = true})(pair, offsets.slice(0, 0, 1)); })
            .find("embedding_bag: sparse=true needs sparse gradients") != std::string::npos);
}

TEST_CASE("nn::EmbeddingBag takes a given _weight without initialising it, and from_pretrained shares and freezes") {
  const Tensor table = small_tensor({4, 2}, 5);
  const std::vector<double> values = values_of(table);
  nn::EmbeddingBag given(4, 2, {._weight = table, .padding_idx = 1});
  CHECK(values_of(given->weight) == values);  // neither drawn nor the padding row zeroed, as PyTorch's
  CHECK(given->weight.requires_grad());
  CHECK(!table.requires_grad());  // the parameter is an alias; the caller's tensor keeps its state

  nn::EmbeddingBag frozen = nn::EmbeddingBag::from_pretrained(table, {.mode = Mode::Max});
  CHECK(!frozen->weight.requires_grad());
  CHECK(frozen->num_embeddings() == 4);
  CHECK(frozen->embedding_dim() == 2);
  CHECK(frozen->options().mode == Mode::Max);
  const Tensor input = from_vector<int64_t>({0, 3}, {1, 2});
  CHECK(values_of(frozen(input)) == values_of(F::embedding_bag(table, input, {.mode = Mode::Max})));
  // The memory is shared: a write to the table shows through the module.
  {
    NoGradGuard no_grad;
    Tensor writable = table;
    writable.mul_(2.0);
  }
  CHECK(values_of(frozen->weight) == values_of(table));

  nn::EmbeddingBag trained = nn::EmbeddingBag::from_pretrained(table, {.freeze = false});
  CHECK(trained->weight.requires_grad());
}

TEST_CASE("nn::EmbeddingBag prints as torch's repr") {
  // torch: repr(nn.EmbeddingBag(10, 3)), (10, 3, mode='sum', padding_idx=0),
  // (10, 3, max_norm=1.0, norm_type=1.0, scale_grad_by_freq=True, mode='max').
  CHECK(nn::EmbeddingBag(10, 3)->str() == "EmbeddingBag(10, 3, mode='mean')");
  CHECK(nn::EmbeddingBag(10, 3, {.mode = Mode::Sum, .padding_idx = 0})->str() ==
        "EmbeddingBag(10, 3, mode='sum', padding_idx=0)");
  CHECK(nn::EmbeddingBag(10, 3, {.max_norm = 1.0, .norm_type = 1.0, .scale_grad_by_freq = true, .mode = Mode::Max})
            ->str() == "EmbeddingBag(10, 3, max_norm=1.0, norm_type=1.0, scale_grad_by_freq=True, mode='max')");
  std::ostringstream printed;
  printed << nn::EmbeddingBag(5, 2, {.padding_idx = -1});
  CHECK(printed.str() == "EmbeddingBag(5, 2, mode='mean', padding_idx=4)");
}

TEST_CASE("embedding_bag with max_norm renorms the rows its input looks up in place first, as F::embedding") {
  const Tensor input = from_vector<int64_t>({0, 2, 3, 2});
  Tensor renormed = small_tensor({5, 3}, 9).mul(4.0);
  Tensor reference = renormed.clone();
  const Tensor out = F::embedding_bag(renormed, input,
                                      {.offsets = from_vector<int64_t>({0, 1}),
                                       .max_norm = 1.5,
                                       .norm_type = 1.0,
                                       .mode = Mode::Sum,
                                       .padding_idx = 3});
  F::embedding_renorm_(reference, input, 1.5, 1.0);  // padding included, as PyTorch renorms the whole input
  CHECK(values_of(renormed) == values_of(reference));
  CHECK(values_of(out) ==
        values_of(F::embedding_bag(reference, input,
                                   {.offsets = from_vector<int64_t>({0, 1}), .mode = Mode::Sum, .padding_idx = 3})));
  nn::EmbeddingBag bag(5, 3, {.max_norm = 1.0, .dtype = kFloat64});
  bag(input.view({2, 2}));
  CHECK(values_of(le(norm(index_select(bag->weight, 0, input), 2.0, {1}), full({4}, 1.0 + 1e-6, {.dtype = kFloat64}))
                      .to(kFloat64)) == std::vector<double>(4, 1.0));
}

TEST_CASE("embedding_bag reads values on the host only to check CPU tensors outside a capture") {
  const Tensor table = small_tensor({4, 2}, 13);
  HostReadRecorder recorder;
  {
    DispatchModeGuard guard(recorder);
    F::embedding_bag(table, from_vector<int64_t>({0, 3, 1}),
                     {.offsets = from_vector<int64_t>({0, 1}), .mode = Mode::Max});
    F::embedding_bag(table, from_vector<int64_t>({0, 3, 1, 2}, {2, 2}), {.mode = Mode::Mean});
  }
  CHECK(recorder.reads.empty());
}

TEST_CASE("embedding_bag's refusals name the op, the values and the caller's line") {
  const Tensor table = zeros({4, 2});
  const Tensor input = from_vector<int64_t>({0, 1, 2});
  const Tensor offsets = from_vector<int64_t>({0, 2});
  const Tensor empty_offsets = from_vector<int64_t>({});
  const F::EmbeddingBagFuncOptions float64_weights{
      .offsets = offsets, .mode = Mode::Sum, .per_sample_weights = zeros({3}, {.dtype = kFloat64})};
  const F::EmbeddingBagFuncOptions max_by_frequency{.offsets = offsets, .scale_grad_by_freq = true, .mode = Mode::Max};
  // clang-format off
  const int line = __LINE__ + 2;
  const std::vector<std::string> messages = {
      error_of([&] { F::embedding_bag(table, input.view({1, 3}), {.offsets = offsets}); }),
      error_of([&] { F::embedding_bag(table, input); }),
      error_of([&] { F::embedding_bag(table, input, {.offsets = offsets.view({1, 2})}); }),
      error_of([&] { F::embedding_bag(table, input.view({1, 1, 3}), {.offsets = offsets}); }),
      error_of([&] { F::embedding_bag(table, input, {.offsets = from_vector<int64_t>({1, 2})}); }),
      error_of([&] { F::embedding_bag(table, input, {.offsets = from_vector<int64_t>({0, 2, 1})}); }),
      error_of([&] { F::embedding_bag(table, input, {.offsets = from_vector<int64_t>({0, 4})}); }),
      error_of([&] { F::embedding_bag(table, from_vector<int64_t>({0, 4, 1}), {.offsets = offsets}); }),
      error_of([&] { F::embedding_bag(table, from_vector<int64_t>({0, -1, 1}), {.offsets = offsets}); }),
      error_of([&] { F::embedding_bag(table, input, {.offsets = offsets, .per_sample_weights = zeros({2})}); }),
      error_of([&] { F::embedding_bag(table, input, {.offsets = offsets, .per_sample_weights = zeros({3})}); }),
      error_of([&] { F::embedding_bag(table, input, float64_weights); }),
      error_of([&] { F::embedding_bag(table, input, max_by_frequency); }),
      error_of([&] { F::embedding_bag(table, input, {.offsets = offsets, .mode = Mode::Max, .sparse = true}); }),
      error_of([&] { F::embedding_bag(table, input, {.offsets = offsets, .scale_grad_by_freq = true}); }),
      error_of([&] { F::embedding_bag(table, input, {.offsets = offsets, .sparse = true}); }),
      error_of([&] { F::embedding_bag(table, input, {.offsets = offsets, .padding_idx = 4}); }),
      error_of([&] { F::embedding_bag(table, input, {.offsets = empty_offsets, .include_last_offset = true}); }),
      error_of([&] { F::embedding_bag(zeros({4}), input, {.offsets = offsets}); }),
      error_of([&] { F::embedding_bag(input, table, {.offsets = offsets}); }),
      error_of([&] { F::embedding_bag(table, input.to(kFloat32), {.offsets = offsets}); }),
      error_of([&] { F::embedding_bag(table, input, {.offsets = offsets.to(kFloat32)}); }),
      error_of([] { nn::EmbeddingBag(4, 2, {.padding_idx = -5}); }),
      error_of([] { nn::EmbeddingBag(4, 2, {._weight = zeros({2, 4})}); }),
      error_of([] { nn::EmbeddingBag::from_pretrained(zeros({4})); }),
  };
  // clang-format on
  const std::vector<std::string> expected = {
      "embedding_bag: if input is 2D, then offsets has to be undefined, as input is treated as a mini-batch of fixed "
      "length sequences; got offsets of shape [2] for input of shape [1, 3]",
      "embedding_bag: offsets has to be a 1D Tensor for 1D input, got offsets undefined",
      "embedding_bag: offsets has to be a 1D Tensor for 1D input, got offsets shape [1, 2]",
      "embedding_bag: input has to be a 1D or 2D Tensor, but got Tensor of dimension 3 (shape [1, 1, 3])",
      "embedding_bag: offsets[0] has to be 0, i.e., the first sequence in the mini-batch has to start from position 0. "
      "However, got 1 (offsets of shape [2])",
      "embedding_bag: offsets must be non-decreasing, got offsets[2] = 1 after 2",
      "embedding_bag: offsets[-1] can not be greater than input's length 3, but got offsets[-1] of 4",
      "embedding_bag: Expected idx >= 0 && idx < num_embeddings (4) but found idx to be 4 (input of shape [3])",
      "embedding_bag: Expected idx >= 0 && idx < num_embeddings (4) but found idx to be -1 (input of shape [3])",
      "embedding_bag: If per_sample_weights ([2]) is not null, then it must have the same shape as the input ([3])",
      "embedding_bag: per_sample_weights was not null. per_sample_weights is only supported for mode='sum' (got "
      "mode='mean')",
      "embedding_bag: per_sample_weights must have weight's dtype float32, got float64",
      "embedding_bag: max mode does not support scaling the gradient by the frequency",
      "embedding_bag: max mode does not support sparse weights",
      "embedding_bag: scale_grad_by_freq is not supported: ember's embedding has no gradient scaled by frequency",
      "embedding_bag: sparse=true needs sparse gradients, which ember does not have",
      "embedding_bag: padding_idx must be within num_embeddings 4 (from -4 to 3), got 4",
      "embedding_bag: include_last_offset: number of offset should be at least 1, got offsets of shape [0]",
      "embedding_bag: weight has to be a 2D Tensor [num_embeddings, embedding_dim], got shape [4]",
      "embedding_bag: weight must be floating-point, got int64 (ember's argument order is (weight, input), as "
      "embedding's)",
      "embedding_bag: input must be int64 or int32, got float32 (shape [3])",
      "embedding_bag: offsets must be int64 or int32, got float32",
      "EmbeddingBag: padding_idx must be within num_embeddings 4 (from -4 to 3), got -5",
      "EmbeddingBag: Shape of weight does not match num_embeddings and embedding_dim: _weight has shape [2, 4], "
      "expected [4, 2]",
      "EmbeddingBag::from_pretrained: Embeddings parameter is expected to be 2-dimensional, got shape [4]",
  };
  check_messages_name_lines(messages, expected, line);
}

TEST_CASE("a refused embedding_bag leaves the table as it was, max_norm included") {
  Tensor table = small_tensor({4, 2}, 17).mul(5.0);
  const std::vector<double> before = values_of(table);
  error_of([&] {
    F::embedding_bag(table, from_vector<int64_t>({0, 9}), {.offsets = from_vector<int64_t>({0}), .max_norm = 1.0});
  });
  error_of([&] {
    F::embedding_bag(table, from_vector<int64_t>({0, 1}), {.offsets = from_vector<int64_t>({0, 3}), .max_norm = 1.0});
  });
  CHECK(values_of(table) == before);
}

}  // namespace test_embedding_bag_module
