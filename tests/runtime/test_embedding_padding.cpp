// padding_idx for nn::Embedding and nn::functional::embedding (a composite,
// runtime/functional_shape.cpp): the padding row starts as zeros, is looked up like any other and
// never receives a gradient, as in PyTorch; negative indices count from the end.
#include <doctest/doctest.h>

#include <sstream>

#include "composite_loss_checks.h"
#include "error_of.h"
#include "runtime/nn/nn.h"

namespace test_embedding_padding {

using namespace ember;
using namespace ember::testing;
namespace F = ember::nn::functional;

TEST_CASE("Embedding with padding_idx zeroes that row and gives it no gradient") {
  for (int64_t padding : {1, -2}) {
    INFO("padding_idx " << padding);
    nn::Embedding table(4, 3, {.dtype = kFloat64, .padding_idx = padding});
    CHECK(*table->padding_idx() == (padding < 0 ? padding + 4 : padding));
    const int64_t row = *table->padding_idx();
    CHECK(values_of(table->weight.select(0, row)) == std::vector<double>{0, 0, 0});
    CHECK(values_of(table->weight.select(0, 3 - row)) != std::vector<double>{0, 0, 0});
    const Tensor indices = from_vector<int64_t>({row, 0, row, 3, 0}, {5});
    const Tensor out = table(indices);
    check_exactly(out.select(0, 0), {0, 0, 0});
    mul(out, random_tensor({5, 3}, 80)).sum().backward();
    const Tensor grad = table->weight.grad();
    check_exactly(grad.select(0, row), {0, 0, 0});
    // Row 0 is looked up twice: its gradient is the sum of the two output rows' weights.
    const Tensor weights = random_tensor({5, 3}, 80);
    check_close(grad.select(0, 0), values_of(add(weights.select(0, 1), weights.select(0, 4))), 1e-15);
  }
}

TEST_CASE("functional embedding with padding_idx returns the row's values but passes no gradient to it") {
  // A padding row that is not zero (set by the user): looked up as it is, as in PyTorch.
  const Tensor weight = random_tensor({4, 2}, 81).requires_grad_();
  const Tensor indices = from_vector<int64_t>({3, 1, 3}, {3});
  const Tensor out = F::embedding(weight, indices, -1);
  check_exactly(out, values_of(F::embedding(weight, indices)));
  out.sum().backward();
  check_exactly(weight.grad(), {0, 0, 1, 1, 0, 0, 0, 0});
  // int32 indices, and no padding_idx: every looked-up row gets its gradient.
  const Tensor leaf = random_tensor({4, 2}, 82).requires_grad_();
  F::embedding(leaf, from_vector<int32_t>({3, 0}, {2}), std::nullopt).sum().backward();
  check_exactly(leaf.grad(), {1, 1, 0, 0, 0, 0, 1, 1});
  const Tensor leaf32 = random_tensor({4, 2}, 83).requires_grad_();
  F::embedding(leaf32, from_vector<int32_t>({3, 0}, {2}), 0).sum().backward();
  check_exactly(leaf32.grad(), {0, 0, 0, 0, 0, 0, 1, 1});
}

TEST_CASE("padding_idx outside the table is an error naming the caller's line, and the repr shows it") {
  int line = __LINE__ + 1;
  std::string message = testing::error_of([] { nn::Embedding(4, 3, {.padding_idx = 4}); });
  CHECK(message.find("Embedding: padding_idx must be within num_embeddings 4 (from -4 to 3), got 4") !=
        std::string::npos);
  CHECK(names_line(message, "test_embedding_padding.cpp", line));
  line = __LINE__ + 1;
  message = testing::error_of([] { F::embedding(zeros({4, 3}), from_vector<int64_t>({1}), -5); });
  CHECK(message.find("embedding: padding_idx must be within num_embeddings 4 (from -4 to 3), got -5") !=
        std::string::npos);
  CHECK(names_line(message, "test_embedding_padding.cpp", line));
  std::ostringstream printed;
  printed << *nn::Embedding(5, 2, {.padding_idx = -1}) << " " << *nn::Embedding(5, 2);
  CHECK(printed.str() == "Embedding(5, 2, padding_idx=4) Embedding(5, 2)");
}

}  // namespace test_embedding_padding
