// torch.diagonal (runtime/functional.h): values against a float64 reference built by loops
// (diagonal_reference.h), the view's geometry as PyTorch computes it, writes through the view
// reaching the base, and the errors. Gradients: test_diagonal_autograd.cpp.
#include <doctest/doctest.h>

#include <limits>
#include <string>
#include <vector>

#include "diagonal_reference.h"
#include "error_of.h"
#include "finite_difference.h"
#include "runtime/ember.h"

namespace test_diagonal {

using namespace ember;
using ember::testing::check_refusal;
using ember::testing::diagonal_positions;
using ember::testing::diagonal_reference;
using ember::testing::error_of;
using ember::testing::DiagonalExpected;
using ember::testing::small_tensor;
using ember::testing::values_of;

namespace {

void check_diagonal(const Tensor& input, int64_t offset, int64_t dim1, int64_t dim2) {
  INFO("input shape ", input.sizes(), " strides ", input.strides(), ", offset ", offset, ", dims ", dim1, ", ", dim2);
  const DiagonalExpected expected = diagonal_reference(input, offset, dim1, dim2);
  const Tensor result = diagonal(input, offset, dim1, dim2);
  CHECK(result.sizes() == expected.sizes);
  CHECK(values_of(result) == expected.values);  // a view moves no data: exact
  CHECK(values_of(input.diagonal(offset, dim1, dim2)) == expected.values);
  CHECK(result.impl()->storage == input.impl()->storage);  // shares the input's memory
}

}  // namespace

TEST_CASE("diagonal: values equal a float64 reference for offsets, dims and layouts") {
  const Tensor matrix = small_tensor({3, 4}, 1);
  for (int64_t offset : {0, 1, 2, 3, 4, 100, -1, -2, -3, -100}) check_diagonal(matrix, offset, 0, 1);
  for (int64_t offset : {0, 2, -1}) check_diagonal(matrix, offset, 1, 0);  // the plane read transposed
  check_diagonal(matrix, 1, -2, -1);
  check_diagonal(matrix, -1, -1, 0);

  const Tensor cube = small_tensor({2, 3, 4}, 2);
  for (int64_t offset : {0, 1, -1, 3, -2}) {
    check_diagonal(cube, offset, 0, 2);  // dims not adjacent
    check_diagonal(cube, offset, 2, 0);
    check_diagonal(cube, offset, -1, -3);
    check_diagonal(cube, offset, 1, -1);
    check_diagonal(cube, offset, 0, 1);
  }
  const Tensor four = small_tensor({2, 3, 2, 4}, 3);
  for (int64_t offset : {0, 1, -1}) {
    check_diagonal(four, offset, 0, 3);
    check_diagonal(four, offset, 3, 1);
    check_diagonal(four, offset, -2, 0);
  }

  // Non-contiguous inputs: transposed, sliced with steps and a storage offset, permuted, expanded.
  check_diagonal(small_tensor({4, 3}, 4).t(), 1, 0, 1);
  check_diagonal(small_tensor({4, 3}, 5).t(), -2, 0, 1);
  const Tensor sliced = small_tensor({7, 9}, 6).slice(0, 1, 7, 2).slice(1, 2, 9, 3);  // [3, 3], strides [18, 3]
  for (int64_t offset : {0, 1, -1, 2}) check_diagonal(sliced, offset, 0, 1);
  const Tensor permuted = small_tensor({3, 2, 4}, 7).permute({2, 0, 1});
  for (int64_t offset : {0, 1, -2}) check_diagonal(permuted, offset, 0, 1);
  check_diagonal(permuted, 1, 2, 0);
  check_diagonal(small_tensor({1, 4}, 8).expand({3, 4}), 1, 0, 1);
  check_diagonal(small_tensor({3, 4}, 9).diagonal(0, 0, 1).unsqueeze(0).expand({2, 3}), 0, 0, 1);

  // Size-0 planes and size-0 kept dims.
  check_diagonal(small_tensor({0, 4}, 10), 0, 0, 1);
  check_diagonal(small_tensor({3, 0}, 11), -1, 0, 1);
  check_diagonal(small_tensor({0, 3, 3}, 12), 0, 1, 2);
  // Integer and bool inputs are views too.
  const Tensor integers = from_vector<int64_t>({1, 2, 3, 4, 5, 6}, {2, 3});
  CHECK(diagonal(integers, 1).contiguous().to_vector<int64_t>() == std::vector<int64_t>{2, 6});
}

TEST_CASE("diagonal: the view's sizes, strides and storage offset are PyTorch's") {
  const Tensor matrix = zeros({3, 4});  // strides [4, 1]
  struct Geometry {
    int64_t offset;
    Dims sizes, strides;
    int64_t storage_offset;
  };
  // Hand-derived from TensorShape.cpp's diagonal: stride 4 + 1, start offset * 1 or -offset * 4,
  // and an empty diagonal keeps the input's start.
  const Geometry expected[] = {{0, {3}, {5}, 0},  {1, {3}, {5}, 1},  {3, {1}, {5}, 3},  {4, {0}, {5}, 0},
                               {-1, {2}, {5}, 4}, {-2, {1}, {5}, 8}, {-3, {0}, {5}, 0}, {9, {0}, {5}, 0}};
  // No overflow at the extremes of int64: an empty diagonal, as PyTorch's.
  constexpr int64_t kMost = std::numeric_limits<int64_t>::max(), kLeast = std::numeric_limits<int64_t>::min();
  const Geometry extremes[] = {{kMost, {0}, {5}, 0}, {kLeast, {0}, {5}, 0}};
  for (const Geometry& geometry : expected) {
    INFO("offset ", geometry.offset);
    const Tensor view = diagonal(matrix, geometry.offset);
    CHECK(view.sizes() == geometry.sizes);
    CHECK(view.strides() == geometry.strides);
    CHECK(view.storage_offset() == geometry.storage_offset);
  }
  for (const Geometry& geometry : extremes) {
    INFO("offset ", geometry.offset);
    const Tensor view = matrix.diagonal(geometry.offset);
    CHECK(view.sizes() == geometry.sizes);
    CHECK(view.storage_offset() == geometry.storage_offset);
  }
  // [2, 3, 4] (strides [12, 4, 1]), plane (0, 2) with offset 1: dim 1 stays, the diagonal joins
  // last with stride 12 + 1 and starts one column in.
  const Tensor cube = zeros({2, 3, 4});
  const Tensor view = diagonal(cube, 1, 0, 2);
  CHECK(view.sizes() == Dims{3, 2});
  CHECK(view.strides() == Dims{4, 13});
  CHECK(view.storage_offset() == 1);
  // Below the diagonal of a sliced input: its own storage offset moves on by -offset * stride(dim1).
  const Tensor sliced = zeros({6, 5}).slice(0, 1, 6);  // offset 5, strides [5, 1]
  const Tensor below = diagonal(sliced, -2);
  CHECK(below.sizes() == Dims{3});
  CHECK(below.storage_offset() == 5 + 2 * 5);
}

TEST_CASE("diagonal: writes through the view reach the base, and the view sees the base's updates") {
  // fill_ above the diagonal of a contiguous matrix: exactly (i, i + 1) change.
  Tensor matrix = small_tensor({3, 4}, 20);
  std::vector<double> expected = values_of(matrix);
  const uint64_t version = matrix.version();
  matrix.diagonal(1).fill_(7.0);
  for (int i = 0; i < 3; ++i) expected[i * 4 + i + 1] = 7.0;
  CHECK(values_of(matrix) == expected);
  CHECK(matrix.version() > version);

  // copy_ below the diagonal of a transposed base: element (i + 1, i) of the view is (i, i + 1)
  // of the base.
  Tensor base = small_tensor({4, 3}, 21);
  const Tensor transposed = base.t();  // [3, 4]
  std::vector<double> base_expected = values_of(base);
  const Tensor source = small_tensor({2}, 22);
  diagonal(transposed, -1).copy_(source);
  for (int i = 0; i < 2; ++i) base_expected[i * 3 + i + 1] = values_of(source)[i];
  CHECK(values_of(base) == base_expected);

  // add_ over the plane (0, 2) of a 3-D tensor: the positions come from the reference walk.
  Tensor cube = small_tensor({3, 2, 4}, 23);
  std::vector<double> cube_expected = values_of(cube);
  Dims sizes;
  const std::vector<int64_t> positions = diagonal_positions(cube.sizes(), -1, 2, 0, sizes);
  const Tensor increment = small_tensor(sizes, 24);
  const std::vector<double> increments = values_of(increment);
  cube.diagonal(-1, 2, 0).add_(increment);
  for (size_t k = 0; k < positions.size(); ++k) cube_expected[positions[k]] += increments[k];
  CHECK(values_of(cube) == cube_expected);

  // The view taken first shows a later in-place update of its base.
  Tensor updated = small_tensor({3, 3}, 25);
  const Tensor view = updated.diagonal();
  const std::vector<double> before = values_of(view);
  updated.mul_(2.0);
  const std::vector<double> after = values_of(view);
  for (size_t i = 0; i < before.size(); ++i) CHECK(after[i] == 2.0 * before[i]);
}

TEST_CASE("diagonal of an expanded tensor: fill_ writes the shared element, add_ is refused, as in PyTorch") {
  // [1, 1] expanded to [3, 3] has strides [0, 0], so its diagonal is 3 elements at one address.
  // PyTorch's fill_ skips the overlap check (Fill.cpp: fill is idempotent); add_ refuses it.
  Tensor base = small_tensor({1, 1}, 26);
  base.expand({3, 3}).diagonal().fill_(4.0);
  CHECK(values_of(base) == std::vector<double>{4.0});
  const std::string message = error_of([&] { base.expand({3, 3}).diagonal().add_(small_tensor({3}, 27)); });
  CHECK(message.find("add_: input 0 (shape [3], strides [0]) is written in place but several of its elements share "
                     "one address") != std::string::npos);
  CHECK(values_of(base) == std::vector<double>{4.0});
  // A diagonal of an expanded [1, 4] reads distinct elements (stride 0 + 1), so add_ is allowed.
  Tensor row = small_tensor({1, 4}, 28);
  std::vector<double> expected = values_of(row);
  const Tensor increment = small_tensor({3}, 29);
  row.expand({3, 4}).diagonal(1).add_(increment);
  for (int i = 0; i < 3; ++i) expected[i + 1] += values_of(increment)[i];
  CHECK(values_of(row) == expected);
}

TEST_CASE("diagonal: errors name the op, the values and the caller's line") {
  const Tensor matrix = small_tensor({3, 4}, 60);
  std::string message;
  int line = __LINE__ + 1;
  message = error_of([&] { diagonal(scalar_tensor(1.0)); });
  check_refusal(message, "diagonal: expected a tensor of at least 2 dims, got shape [] (offset 0, dim1 0, dim2 1)",
                line);
  line = __LINE__ + 1;
  message = error_of([&] { small_tensor({3}, 61).diagonal(2); });
  check_refusal(message, "diagonal: expected a tensor of at least 2 dims, got shape [3] (offset 2, dim1 0, dim2 1)",
                line);
  line = __LINE__ + 1;
  message = error_of([&] { diagonal(matrix, 0, 1, -1); });
  check_refusal(message, "diagonal: diagonal dimensions cannot be identical: dim1 1 and dim2 -1 (input shape [3, 4])",
                line);
  line = __LINE__ + 1;
  message = error_of([&] { matrix.diagonal(1, 0, 0); });
  check_refusal(message, "diagonal: diagonal dimensions cannot be identical: dim1 0 and dim2 0", line);
  line = __LINE__ + 1;
  message = error_of([&] { diagonal(matrix, 0, 0, 2); });
  check_refusal(message, "diagonal: dim 2 is out of range for a tensor of rank 2", line);
  line = __LINE__ + 1;
  message = error_of([&] { matrix.diagonal(0, -3, 1); });
  check_refusal(message, "diagonal: dim -3 is out of range for a tensor of rank 2", line);
}

}  // namespace test_diagonal
